"""ttnn-analyzer's language server driven by a real LSP client (pytest-lsp, on pygls).

The server binary comes from TTNN_ANALYZER_BIN (run.sh sets it to target/debug/ttnn-analyzer).
The client presents the capabilities recorded from real editors (Neovim 0.7: push
diagnostics; Neovim 0.11: pull diagnostics), so the server is tested against what those
editors actually announce.
"""

import asyncio
import json
import os
import pathlib

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

BIN = os.environ.get("TTNN_ANALYZER_BIN", "ttnn-analyzer")
SAMPLE = (pathlib.Path(__file__).parent / "sample.mlir").read_text()
CONFIG = ClientServerConfig(server_command=[BIN, "lsp"])


def position(text: str, needle: str, nth: int = 0) -> types.Position:
    """The UTF-16 position of the nth occurrence of needle."""
    start = -1
    for _ in range(nth + 1):
        start = text.index(needle, start + 1)
    line = text.count("\n", 0, start)
    line_start = text.rfind("\n", 0, start) + 1
    character = len(text[line_start:start].encode("utf-16-le")) // 2
    return types.Position(line=line, character=character)


def open_doc(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="mlir", version=version, text=text
            )
        )
    )


async def initialize(client: LanguageClient, spec: str, options=None) -> None:
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(spec),
            initialization_options=options or {"target": "n150"},
        )
    )


@pytest_lsp.fixture(config=CONFIG)
async def nvim07(lsp_client: LanguageClient):
    await initialize(lsp_client, "neovim@v0.7.0")
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def nvim011(lsp_client: LanguageClient):
    await initialize(lsp_client, "neovim@v0.11.0")
    yield
    await lsp_client.shutdown_session()


def codes(diags) -> list:
    """The diagnostic codes."""
    return [d.code for d in diags]


async def wait_diagnostics(client: LanguageClient, uri: str, pred=lambda d: True):
    """Waits for published diagnostics of uri that satisfy pred."""
    for _ in range(50):
        if uri in client.diagnostics and pred(client.diagnostics[uri]):
            return client.diagnostics[uri]
        try:
            # A bounded wait: a test whose expectation is never met fails instead of hanging CI.
            await asyncio.wait_for(
                client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), timeout=30
            )
        except asyncio.TimeoutError:
            break
    raise AssertionError(f"no matching diagnostics for {uri}: {client.diagnostics.get(uri)}")


async def test_hover_shows_the_layout_and_legal_layouts(nvim07: LanguageClient, tmp_path):
    uri = (tmp_path / "ffn.mlir").as_uri()
    open_doc(nvim07, uri, SAMPLE)
    hover = await nvim07.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position(SAMPLE, '"ttnn.matmul"'),
        )
    )
    assert hover is not None
    print("HOVER", json.dumps(nvim07.protocol._converter.unstructure(hover), indent=2))
    value = hover.contents.value
    assert value.startswith("**`ttnn.matmul`** `%0` in `@forward`")
    assert "layout: DRAM interleaved" in value
    assert "legal layouts:" in value


async def test_diagnostics_are_pushed_and_follow_incremental_edits(nvim07: LanguageClient, tmp_path):
    uri = (tmp_path / "ffn.mlir").as_uri()
    broken = SAMPLE.replace('"ttnn.gelu"(%1)', '"ttnn.gelu"(%7)')
    open_doc(nvim07, uri, broken)
    diags = await wait_diagnostics(nvim07, uri, lambda d: len(d) > 0)
    print("DIAGNOSTICS", json.dumps(nvim07.protocol._converter.unstructure(list(diags)), indent=2))
    assert codes(diags) == ["undefined-value"]
    start = position(broken, "%7)")
    end = types.Position(line=start.line, character=start.character + 2)
    nvim07.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=start, end=end), text="%1"
                )
            ],
        )
    )
    # The fix publishes an empty list (the plan's findings are not problems), for version 2.
    diags = await wait_diagnostics(nvim07, uri, lambda d: codes(d) == [])
    assert list(diags) == []


async def test_every_change_publishes_the_diagnostics_of_its_version(nvim07: LanguageClient, tmp_path):
    uri = (tmp_path / "ffn.mlir").as_uri()
    open_doc(nvim07, uri, SAMPLE)
    await wait_diagnostics(nvim07, uri)
    at = position(SAMPLE, "loc(#loc2)")
    for version in (2, 3, 4):
        # A space typed, removed, typed again: nothing to report each time, and still published.
        end = types.Position(line=at.line, character=at.character + (1 if version == 3 else 0))
        waiting = nvim07.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        nvim07.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(start=at, end=end), text="" if version == 3 else " "
                    )
                ],
            )
        )
        params = await asyncio.wait_for(waiting, timeout=30)
        assert (params.uri, params.version, list(params.diagnostics)) == (uri, version, [])


async def test_inlay_hints_show_the_plan_findings_of_the_range(nvim07: LanguageClient, tmp_path):
    uri = (tmp_path / "ffn.mlir").as_uri()
    open_doc(nvim07, uri, SAMPLE)
    hints = await nvim07.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=30, character=0)),
        )
    )
    assert hints
    findings = [h for h in hints if h.kind is None]
    print("FINDINGS", [(h.position.line, h.label, h.tooltip) for h in findings])
    assert findings, "the plan of the sample has findings"
    assert all(isinstance(h.tooltip, str) and h.tooltip for h in findings)
    assert {h.label for h in findings} <= {"spill", "reshard", "chain declined", "chain failed"}


@pytest_lsp.fixture(config=CONFIG)
async def with_plan_findings(lsp_client: LanguageClient):
    await initialize(
        lsp_client, "neovim@v0.7.0", {"target": "n150", "diagnostics": {"planFindings": True}}
    )
    yield
    await lsp_client.shutdown_session()


async def test_the_plan_findings_setting_publishes_them_as_information(with_plan_findings: LanguageClient, tmp_path):
    uri = (tmp_path / "ffn.mlir").as_uri()
    open_doc(with_plan_findings, uri, SAMPLE)
    diags = await wait_diagnostics(with_plan_findings, uri, lambda d: len(d) > 0)
    assert set(codes(diags)) <= {"spill", "reshard", "chain-declined", "chain-failed"}
    assert all(d.severity == types.DiagnosticSeverity.Information for d in diags)


async def test_definition_goes_to_the_defining_result(nvim07: LanguageClient, tmp_path):
    uri = (tmp_path / "ffn.mlir").as_uri()
    open_doc(nvim07, uri, SAMPLE)
    result = await nvim07.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=position(SAMPLE, "%2, %arg3"),
        )
    )
    assert isinstance(result, list) and len(result) == 1
    assert result[0].range.start == position(SAMPLE, "%2 = ")


async def test_formatting_returns_one_whole_document_edit(nvim07: LanguageClient, tmp_path):
    uri = (tmp_path / "ffn.mlir").as_uri()
    messy = SAMPLE.replace("    %1 = ", "        %1    =  ")
    open_doc(nvim07, uri, messy)
    edits = await nvim07.text_document_formatting_async(
        types.DocumentFormattingParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            options=types.FormattingOptions(tab_size=2, insert_spaces=True),
        )
    )
    assert edits is not None and len(edits) == 1
    assert edits[0].range.start == types.Position(line=0, character=0)
    assert "    %1 = \"ttnn.add\"" in edits[0].new_text


async def test_the_sidecar_overrides_file_is_read_at_open(nvim07: LanguageClient, tmp_path):
    (tmp_path / "ffn.overrides").write_text("override-output-layout=ffn.up=1x1:dram:interleaved:tile:bf16\n")
    ir = tmp_path / "ffn.mlir"
    ir.write_text(SAMPLE)
    open_doc(nvim07, ir.as_uri(), SAMPLE)
    diags = await wait_diagnostics(nvim07, ir.as_uri(), lambda d: len(codes(d)) > 0)
    assert codes(diags) == ["override-applied"]
    sidecar = await wait_diagnostics(nvim07, (tmp_path / "ffn.overrides").as_uri())
    assert [d.code for d in sidecar] == ["override-applied"]


async def test_pull_diagnostics_for_clients_that_ask(nvim011: LanguageClient, tmp_path):
    uri = (tmp_path / "ffn.mlir").as_uri()
    open_doc(nvim011, uri, SAMPLE.replace("%arg3)", "%arg9)"))
    report = await nvim011.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert codes(report.items) == ["undefined-value"]
