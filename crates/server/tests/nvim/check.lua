-- Headless Neovim 0.7 check of `ttnn-analyzer lsp`: starts the server with
-- vim.lsp.start_client, attaches it to a sample file that has one error and an overrides
-- sidecar, waits for the published diagnostics and a hover answer, prints both, and exits
-- non-zero if either is missing or wrong.

local bin = os.getenv("TTNN_ANALYZER_BIN")
local dir = os.getenv("CHECK_DIR")
local out = io.stdout

local function fail(msg)
  out:write("FAIL: " .. msg .. "\n")
  vim.cmd("cquit 1")
end

if not bin or not dir then
  fail("TTNN_ANALYZER_BIN and CHECK_DIR must be set")
  return
end

local diagnostics = nil
local client_id = vim.lsp.start_client({
  name = "ttnn-analyzer",
  cmd = { bin, "lsp" },
  root_dir = dir,
  init_options = { target = "n150", policy = "df-sharding-merge" },
  handlers = {
    ["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
      vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
      if result and result.uri:match("ffn%.mlir$") and #result.diagnostics > 0 then
        diagnostics = result.diagnostics
      end
    end,
  },
})
if not client_id then
  fail("the server did not start")
  return
end

vim.cmd("edit " .. dir .. "/ffn.mlir")
local bufnr = vim.api.nvim_get_current_buf()
vim.lsp.buf_attach_client(bufnr, client_id)

if not vim.wait(20000, function() return diagnostics ~= nil end, 50) then
  fail("no diagnostics within 20 s")
  return
end
table.sort(diagnostics, function(a, b) return a.range.start.line < b.range.start.line end)
out:write("DIAGNOSTICS\n")
for _, d in ipairs(diagnostics) do
  out:write(string.format("  %d:%d severity=%d [%s] %s\n", d.range.start.line, d.range.start.character,
    d.severity, d.code, d.message))
end

-- Hover on the first matmul's name (line 9, 0-based 8, after `    %0 = `).
local params = {
  textDocument = { uri = vim.uri_from_bufnr(bufnr) },
  position = { line = 8, character = 12 },
}
local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/hover", params, 20000)
local hover = nil
for _, r in pairs(responses or {}) do
  if r.result then hover = r.result end
end
if not hover then
  fail("no hover answer")
  return
end
out:write("HOVER\n" .. hover.contents.value .. "\n")

local codes = {}
for _, d in ipairs(diagnostics) do codes[#codes + 1] = d.code end
local joined = table.concat(codes, ",")
if joined ~= "override-applied,undefined-value" then
  fail("unexpected diagnostics: " .. joined)
  return
end
if not hover.contents.value:match("^%*%*`ttnn%.matmul`%*%*") then
  fail("unexpected hover")
  return
end
out:write("OK\n")
vim.cmd("qall!")
