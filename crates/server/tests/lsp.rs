//! The language server end to end over an in-memory connection: every feature, the text
//! sync, the overrides document, cancellation, protocol errors and panic containment.

mod common;

use common::{Client, compact, error_code, pos, show};
use expect_test::expect;
use serde_json::{Value, json};

const URI: &str = "file:///work/m.mlir";
const OVERRIDES_URI: &str = "file:///work/m.overrides";

const GRAPH: &str = r##"#dram = #ttnn.buffer_type<dram>
#l1 = #ttnn.buffer_type<l1>
#il = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#w = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#bs = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <2x8>, memref<1x1x!ttcore.tile<32x32, bf16>, #l1>, <block_sharded>, core_ranges = <[#ttnn.core_range<(0,0), (7,1)>]>>
func.func @main(%a: tensor<64x256xbf16, #il>, %b: tensor<256x256xbf16, #w>) -> tensor<64x256xbf16, #il> {
  %0 = "ttnn.matmul"(%a, %b) <{transpose_a = false, transpose_b = false}> : (tensor<64x256xbf16, #il>, tensor<256x256xbf16, #w>) -> tensor<64x256xbf16, #bs> loc("mm")
  %1 = "ttnn.relu"(%0) : (tensor<64x256xbf16, #bs>) -> tensor<64x256xbf16, #il> loc("act")
  return %1 : tensor<64x256xbf16, #il>
}
"##;

/// Settings for the tests: `df-sharding`, whose plan for `GRAPH` keeps its chain in L1 (the
/// merging policy's cost model declines a chain this small), so hovers and actions have an L1
/// plan to show.
fn settings() -> Value {
    json!({ "policy": "df-sharding" })
}

fn client() -> Client {
    Client::start(json!({}), settings())
}

fn at(needle: &str, nth: usize) -> Value {
    json!({ "textDocument": { "uri": URI }, "position": pos(GRAPH, needle, nth) })
}

/// The codes and messages of a `publishDiagnostics` params object, one per line.
fn summary(params: &Value) -> String {
    let mut out = String::new();
    for d in params["diagnostics"].as_array().expect("diagnostics array") {
        out.push_str(&format!(
            "{}:{}-{}:{} [{}] {}\n",
            d["range"]["start"]["line"],
            d["range"]["start"]["character"],
            d["range"]["end"]["line"],
            d["range"]["end"]["character"],
            d["code"].as_str().unwrap_or(""),
            d["message"].as_str().unwrap_or("")
        ));
    }
    out
}

#[test]
fn initialize_advertises_every_feature_and_shutdown_twice_is_fine() {
    let c = client();
    let caps = c.init_result.clone().expect("initialize succeeded");
    expect![[r#"
        {
          "codeActionProvider": true,
          "definitionProvider": true,
          "documentFormattingProvider": true,
          "documentSymbolProvider": true,
          "hoverProvider": true,
          "inlayHintProvider": true,
          "referencesProvider": true,
          "semanticTokensProvider": {
            "full": true,
            "legend": {
              "tokenModifiers": [],
              "tokenTypes": [
                "comment",
                "string",
                "number",
                "variable",
                "function",
                "method",
                "macro",
                "decorator",
                "type",
                "property",
                "keyword"
              ]
            }
          },
          "textDocumentSync": {
            "change": 2,
            "openClose": true
          }
        }"#]]
    .assert_eq(&show(&caps["capabilities"]));
    let (first, second, clean) = c.shutdown();
    assert!(first.response_result.is_ok() && second.response_result.is_ok());
    assert!(clean, "shutdown before exit is a clean end");
}

#[test]
fn opening_a_broken_file_publishes_diagnostics_and_an_incremental_fix_clears_them() {
    let mut c = client();
    let broken = GRAPH.replace("\"ttnn.relu\"(%0)", "\"ttnn.relu\"(%9)");
    c.open(URI, &broken);
    let d = c.diagnostics_at(URI, 1);
    expect![[r#"
        7:19-7:21 [undefined-value] use of undefined value `%9`
    "#]]
    .assert_eq(&summary(&d));
    let p = pos(&broken, "%9", 0);
    let end = json!({ "line": p["line"], "character": p["character"].as_u64().unwrap_or(0) + 2 });
    c.notify(
        "textDocument/didChange",
        json!({
            "textDocument": { "uri": URI, "version": 2 },
            "contentChanges": [{ "range": { "start": p, "end": end }, "text": "%0" }],
        }),
    );
    // The plan's findings (a spill here) are not problems: the fixed file has none.
    let d = c.diagnostics_at(URI, 2);
    expect![""].assert_eq(&summary(&d));
}

/// Every change publishes the document's diagnostics with its version, even when the list
/// is empty and unchanged, so a client knows they are fresh.
#[test]
fn every_change_publishes_its_version_even_when_nothing_changed() {
    let mut c = client();
    c.open(URI, GRAPH);
    let d = c.diagnostics_at(URI, 1);
    expect![""].assert_eq(&summary(&d));
    let p = pos(GRAPH, "loc(\"act\")", 0);
    for version in 2..=4 {
        // A space typed and removed in turn: the diagnostics stay the same, empty list.
        let (text, end) = if version % 2 == 0 {
            (" ", p.clone())
        } else {
            (
                "",
                json!({ "line": p["line"], "character": p["character"].as_u64().unwrap_or(0) + 1 }),
            )
        };
        c.notify(
            "textDocument/didChange",
            json!({
                "textDocument": { "uri": URI, "version": version },
                "contentChanges": [{ "range": { "start": p, "end": end }, "text": text }],
            }),
        );
        let d = c.diagnostics_at(URI, version);
        assert_eq!(d["diagnostics"], json!([]), "version {version}");
    }
}

/// The optimizer's findings are published only when `diagnostics.planFindings` asks, as
/// information; switching the setting republishes.
#[test]
fn the_plan_findings_setting_publishes_them_as_information() {
    let mut c = Client::start(
        json!({}),
        json!({ "policy": "df-sharding", "diagnostics": { "planFindings": true } }),
    );
    c.open(URI, GRAPH);
    let d = c.diagnostics_at(URI, 1);
    expect![[r#"
        7:2-7:4 [spill] output goes to DRAM interleaved, 2x8 tiles total (bf16): spill to DRAM: the chain's output is returned
    "#]].assert_eq(&summary(&d));
    let severities: Vec<&Value> =
        d["diagnostics"].as_array().expect("a list").iter().map(|d| &d["severity"]).collect();
    assert_eq!(severities, [&json!(3)]);
    c.notify(
        "workspace/didChangeConfiguration",
        json!({ "settings": { "ttnnAnalyzer": { "diagnostics.planFindings": false } } }),
    );
    let d = c.wait_diagnostics(URI, |p| p["diagnostics"] == json!([]));
    assert_eq!(d["version"], 1);
}

#[test]
fn hover_describes_the_op_under_the_cursor() {
    let mut c = client();
    c.open(URI, GRAPH);
    let h = c.ok("textDocument/hover", at("\"ttnn.matmul\"", 0));
    expect![[r#"
        {
          "contents": {
            "kind": "markdown",
            "value": "**`ttnn.matmul`** `%0` in `@main`, loc `\"mm\"` (line 7)\n\nresult: `tensor<64x256xbf16>`\n\nlayout: L1 block_sharded 2x8, 1x1 tiles per core (bf16)\n\nL1 per core: 2048 B on 16 core(s)\n\nestimated time as written: 4.9 µs device time, overhead-bound on 16 core(s)\n\nlower bound: 4.9 µs (its best placement, every free tensor local in L1)\n\nplanned layout (df-sharding): unchanged, L1 block_sharded 2x8, 1x1 tiles per core (bf16)\n\nop config: matmul 2D mcast per_core 1x1 in0_block_w 2\n\nL1 per core: cb 16384 B, tensor 2048 B, output 2048 B; live L1 before it: 0 B\n\nchain #0: op 1 of 2, completed\n\nwhy: L1 chain, op 1 of 2: the config with the highest accumulated core usage (32)\n\nlegal layouts: 1 interleaved, 17 sharded"
          },
          "range": {
            "end": {
              "character": 20,
              "line": 6
            },
            "start": {
              "character": 7,
              "line": 6
            }
          }
        }"#]].assert_eq(&show(&h));
}

#[test]
fn definition_and_references_follow_ssa_values() {
    let mut c = client();
    c.open(URI, GRAPH);
    let d = c.ok("textDocument/definition", at("%0)", 0));
    expect![[r#"
        [
          {
            "range": {
              "end": {
                "character": 4,
                "line": 6
              },
              "start": {
                "character": 2,
                "line": 6
              }
            },
            "uri": "file:///work/m.mlir"
          }
        ]"#]]
    .assert_eq(&show(&d));
    let mut params = at("#bs", 1);
    params["context"] = json!({ "includeDeclaration": true });
    let r = c.ok("textDocument/references", params);
    let lines: Vec<String> = r
        .as_array()
        .expect("locations")
        .iter()
        .map(|l| format!("{} {}", compact(&l["range"]["start"]), compact(&l["range"]["end"])))
        .collect();
    expect![[r#"
        {"character":0,"line":4} {"character":3,"line":4}
        {"character":152,"line":6} {"character":155,"line":6}
        {"character":46,"line":7} {"character":49,"line":7}"#]]
    .assert_eq(&lines.join("\n"));
}

#[test]
fn document_symbols_inlay_hints_and_semantic_tokens() {
    let mut c = client();
    c.open(URI, GRAPH);
    let s = c.ok("textDocument/documentSymbol", json!({ "textDocument": { "uri": URI } }));
    let names: Vec<String> = s
        .as_array()
        .expect("symbols")
        .iter()
        .map(|s| {
            let children: Vec<&str> = s["children"]
                .as_array()
                .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
                .unwrap_or_default();
            format!("{} (kind {}) {:?}", s["name"].as_str().unwrap_or(""), s["kind"], children)
        })
        .collect();
    expect![[r##"
        #dram (kind 14) []
        #l1 (kind 14) []
        #il (kind 14) []
        #w (kind 14) []
        #bs (kind 14) []
        @main (kind 12) ["%0 = ttnn.matmul", "%1 = ttnn.relu"]"##]]
    .assert_eq(&names.join("\n"));
    let hints = c.ok(
        "textDocument/inlayHint",
        json!({ "textDocument": { "uri": URI }, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 99, "character": 0 } } }),
    );
    expect![[r#"
        [
          {
            "kind": 1,
            "label": "→ L1 bs 2x8",
            "paddingLeft": true,
            "position": {
              "character": 4,
              "line": 6
            }
          },
          {
            "kind": 1,
            "label": "→ L1 bs 2x8",
            "paddingLeft": true,
            "position": {
              "character": 4,
              "line": 7
            }
          },
          {
            "label": "spill",
            "paddingLeft": true,
            "position": {
              "character": 4,
              "line": 7
            },
            "tooltip": "output goes to DRAM interleaved, 2x8 tiles total (bf16): spill to DRAM: the chain's output is returned"
          }
        ]"#]]
    .assert_eq(&show(&hints));
    let tokens =
        c.ok("textDocument/semanticTokens/full", json!({ "textDocument": { "uri": URI } }));
    let data = tokens["data"].as_array().expect("token data");
    assert_eq!(data.len() % 5, 0);
    // The first tokens: `#dram` (alias, 6), `#ttnn.buffer_type` (attribute, 7).
    expect!["84 tokens, first [Number(0), Number(0), Number(5), Number(6), Number(0), Number(0), Number(8), Number(17), Number(7), Number(0)]"].assert_eq(&format!("{} tokens, first {:?}", data.len() / 5, &data[..10]));
}

#[test]
fn the_pin_code_action_edits_the_sidecar_and_formatting_rewrites_the_document() {
    let mut c = Client::start(
        json!({ "workspace": { "workspaceEdit": { "documentChanges": true, "resourceOperations": ["create"] } } }),
        settings(),
    );
    c.open(URI, GRAPH);
    let p = pos(GRAPH, "\"ttnn.relu\"", 0);
    let actions = c.ok(
        "textDocument/codeAction",
        json!({ "textDocument": { "uri": URI }, "range": { "start": p, "end": p }, "context": { "diagnostics": [] } }),
    );
    expect![[r#"
        [
          {
            "edit": {
              "documentChanges": [
                {
                  "kind": "create",
                  "options": {
                    "ignoreIfExists": true,
                    "overwrite": false
                  },
                  "uri": "file:///work/m.overrides"
                },
                {
                  "edits": [
                    {
                      "newText": "override-output-layout=act=1x1:dram:interleaved:tile:bf16\n",
                      "range": {
                        "end": {
                          "character": 0,
                          "line": 0
                        },
                        "start": {
                          "character": 0,
                          "line": 0
                        }
                      }
                    }
                  ],
                  "textDocument": {
                    "uri": "file:///work/m.overrides",
                    "version": null
                  }
                }
              ]
            },
            "kind": "refactor",
            "title": "Pin the current layout (DRAM il) of `act` as an override"
          },
          {
            "edit": {
              "documentChanges": [
                {
                  "kind": "create",
                  "options": {
                    "ignoreIfExists": true,
                    "overwrite": false
                  },
                  "uri": "file:///work/m.overrides"
                },
                {
                  "edits": [
                    {
                      "newText": "override-output-layout=act=2x8:l1:block_sharded:tile:bf16\n",
                      "range": {
                        "end": {
                          "character": 0,
                          "line": 0
                        },
                        "start": {
                          "character": 0,
                          "line": 0
                        }
                      }
                    }
                  ],
                  "textDocument": {
                    "uri": "file:///work/m.overrides",
                    "version": null
                  }
                }
              ]
            },
            "kind": "refactor",
            "title": "Pin the planned layout (L1 bs 2x8) of `act` as an override"
          },
          {
            "edit": {
              "documentChanges": [
                {
                  "kind": "create",
                  "options": {
                    "ignoreIfExists": true,
                    "overwrite": false
                  },
                  "uri": "file:///work/m.overrides"
                },
                {
                  "edits": [
                    {
                      "newText": "insert-memreconfig=act=0\n",
                      "range": {
                        "end": {
                          "character": 0,
                          "line": 0
                        },
                        "start": {
                          "character": 0,
                          "line": 0
                        }
                      }
                    }
                  ],
                  "textDocument": {
                    "uri": "file:///work/m.overrides",
                    "version": null
                  }
                }
              ]
            },
            "kind": "refactor",
            "title": "Insert a reshard in front of operand 0 of `act`"
          }
        ]"#]]
    .assert_eq(&show(&actions));
    let messy = GRAPH.replace("  %1 = ", "      %1   =   ");
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 2 }, "contentChanges": [{ "text": messy }] }),
    );
    let f = c.ok("textDocument/formatting", json!({ "textDocument": { "uri": URI }, "options": { "tabSize": 2, "insertSpaces": true } }));
    let edits = f.as_array().expect("edits");
    assert_eq!(edits.len(), 1, "one whole-document edit");
    expect![[r#"
        {"end":{"character":0,"line":10},"start":{"character":0,"line":0}}
        func.func @main(%a: tensor<64x256xbf16, #il>, %b: tensor<256x256xbf16, #w>) -> tensor<64x256xbf16, #il> {"#]].assert_eq(&format!("{}\n{}", compact(&edits[0]["range"]), edits[0]["newText"].as_str().unwrap_or("").lines().nth(5).unwrap_or("")));
}

#[test]
fn formatting_refuses_a_file_with_syntax_errors() {
    let mut c = client();
    c.open(URI, "func.func @f( {\n");
    let r = c.request("textDocument/formatting", json!({ "textDocument": { "uri": URI }, "options": { "tabSize": 2, "insertSpaces": true } }));
    expect![[r#"Some((-32803, "the file has syntax errors; fix them before formatting"))"#]]
        .assert_eq(&format!("{:?}", r.response_result.err().map(|e| (e.code, e.message))));
}

#[test]
fn editing_the_overrides_document_reanalyzes_the_ir_file() {
    let mut c = client();
    c.open(URI, GRAPH);
    let _ = c.diagnostics_at(URI, 1);
    c.open(OVERRIDES_URI, "override-output-layout=mm=9x9:l1:block_sharded:tile\n");
    let ir =
        c.wait_diagnostics(URI, |p| p["diagnostics"].as_array().is_some_and(|d| !d.is_empty()));
    expect![[r#"
        6:7-6:20 [override-applied] override `override-output-layout=mm=9x9:l1:block_sharded:tile` applies (m.overrides:1)
    "#]].assert_eq(&summary(&ir));
    let ov = c.wait_diagnostics(OVERRIDES_URI, |p| p["version"] == 1);
    expect![[r#"
        0:23-0:51 [override-applied] applies to `ttnn.matmul` %0 in @main (m.mlir:7)
        0:23-0:51 [rejected-override] this layout cannot be built for `ttnn.matmul` %0 in @main (m.mlir:7): grid 9x9 does not fit the 8x8 worker grid; the override is ignored
    "#]].assert_eq(&summary(&ov));
    c.notify(
        "textDocument/didChange",
        json!({
            "textDocument": { "uri": OVERRIDES_URI, "version": 2 },
            "contentChanges": [{ "range": { "start": { "line": 0, "character": 23 }, "end": { "line": 0, "character": 25 } }, "text": "nosuchop" }],
        }),
    );
    let ov = c.wait_diagnostics(OVERRIDES_URI, |p| p["version"] == 2);
    expect![[r#"
        0:23-0:31 [unknown-override-target] no op in the open files has `loc("nosuchop")`; the override applies to nothing
    "#]].assert_eq(&summary(&ov));
    // The override note goes away.
    let ir = c.wait_diagnostics(URI, |p| {
        p["diagnostics"]
            .as_array()
            .is_some_and(|d| !d.iter().any(|x| x["code"] == "override-applied"))
    });
    expect![""].assert_eq(&summary(&ir));
}

#[test]
fn settings_change_the_analysis_and_bad_values_are_reported() {
    let mut c = Client::start(json!({}), json!({ "policy": "df-sharding", "maxLegalLayouts": 4 }));
    c.open(URI, GRAPH);
    let line = |h: &Value| {
        h["contents"]["value"]
            .as_str()
            .unwrap_or("")
            .lines()
            .filter(|l| l.starts_with("legal"))
            .collect::<Vec<_>>()
            .join("")
    };
    let h = c.ok("textDocument/hover", at("\"ttnn.relu\"", 0));
    expect!["legal layouts: 2 interleaved, 4 sharded"].assert_eq(&line(&h));
    c.notify(
        "workspace/didChangeConfiguration",
        json!({ "settings": { "ttnn-analyzer": { "maxLegalLayouts": 64, "policy": "annealing" } } }),
    );
    let h = c.ok("textDocument/hover", at("\"ttnn.relu\"", 0));
    expect!["legal layouts: 2 interleaved, 17 sharded"].assert_eq(&line(&h));
    let shown: Vec<String> = c
        .inbox
        .iter()
        .filter_map(|m| match m {
            lsp_server::Message::Notification(n) if n.method == "window/showMessage" => {
                n.params["message"].as_str().map(str::to_owned)
            }
            _ => None,
        })
        .collect();
    expect![[
        r#"`policy` must be `df-sharding`, `df-sharding-merge` or `greedy`, found "annealing""#
    ]]
    .assert_eq(&shown.join("\n"));
}

#[test]
fn an_edit_cancels_a_running_request_with_content_modified() {
    let mut c = client();
    c.open(URI, GRAPH);
    let id = c.send_request("ttnnAnalyzer/testWaitForCancel", Value::Null);
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 2 }, "contentChanges": [{ "text": GRAPH.replace("relu", "exp") }] }),
    );
    let r = c.wait_response(&id);
    assert_eq!(error_code(&r), Some(-32801), "ContentModified");
}

#[test]
fn cancel_request_cancels_only_that_request() {
    let mut c = client();
    c.open(URI, GRAPH);
    let id = c.send_request("ttnnAnalyzer/testWaitForCancel", Value::Null);
    let hover = c.send_request("textDocument/hover", at("%0)", 0));
    c.notify("$/cancelRequest", json!({ "id": id }));
    let r = c.wait_response(&id);
    assert_eq!(error_code(&r), Some(-32800), "RequestCanceled");
    let h = c.wait_response(&hover);
    assert!(h.response_result.is_ok_and(|v| v.is_object()), "the other request is answered");
}

#[test]
fn protocol_errors_get_error_responses() {
    let mut c = client();
    c.open(URI, GRAPH);
    let unknown = c.request("textDocument/frobnicate", json!({}));
    let malformed = c.request("textDocument/hover", json!({ "textDocument": 3 }));
    let not_open = c.request("textDocument/hover", json!({ "textDocument": { "uri": "file:///nope.mlir" }, "position": { "line": 0, "character": 0 } }));
    c.notify("textDocument/didChange", json!({ "garbage": true }));
    let out = format!(
        "{:?}\n{:?}\n{:?}",
        unknown.response_result.err().map(|e| (e.code, e.message)),
        malformed.response_result.err().map(|e| e.code),
        not_open.response_result.ok(),
    );
    expect![[r#"
        Some((-32601, "unknown method `textDocument/frobnicate`"))
        Some(-32602)
        Some(Null)"#]]
    .assert_eq(&out);
}

#[test]
fn a_panicking_handler_answers_internal_error_and_the_server_lives_on() {
    let mut c = client();
    c.open(URI, GRAPH);
    let r = c.request("ttnnAnalyzer/testPanic", Value::Null);
    expect![[r#"Some((-32603, "internal error in `ttnnAnalyzer/testPanic`: a test asked this handler to panic"))"#]].assert_eq(&format!("{:?}", r.response_result.err().map(|e| (e.code, e.message))));
    let h = c.ok("textDocument/hover", at("%0)", 0));
    assert!(h["contents"]["value"].as_str().is_some_and(|s| s.contains("ttnn.matmul")));
    let (_, _, clean) = c.shutdown();
    assert!(clean);
}

#[test]
fn a_pulling_client_gets_fresh_diagnostics_after_edits_in_one_op() {
    // For a client that pulls diagnostics, answering its pull is the quiet moment after which
    // the server settles the groups edited (a write, then a re-validation on a worker): the
    // pulls after each edit must still describe the text as it is.
    let caps = json!({ "textDocument": { "diagnostic": { "dynamicRegistration": false } } });
    let mut c = Client::start(caps, settings());
    c.open(URI, GRAPH);
    let pull = |c: &mut Client| {
        let report = c.ok("textDocument/diagnostic", json!({ "textDocument": { "uri": URI } }));
        summary(&json!({ "diagnostics": report["items"] }))
    };
    let opened = pull(&mut c);
    let p = pos(GRAPH, "%0) :", 0);
    let end = json!({ "line": p["line"], "character": p["character"].as_u64().unwrap_or(0) + 2 });
    let edit = |c: &mut Client, version: i64, new: &str| {
        c.notify(
            "textDocument/didChange",
            json!({
                "textDocument": { "uri": URI, "version": version },
                "contentChanges": [{ "range": { "start": p, "end": end }, "text": new }],
            }),
        );
        pull(c)
    };
    let broken = edit(&mut c, 2, "%9");
    let fixed = edit(&mut c, 3, "%0");
    expect![[r#"
        7:19-7:21 [undefined-value] use of undefined value `%9`
    "#]]
    .assert_eq(&broken);
    assert_eq!(fixed, opened, "undoing the edit gives the diagnostics of the file as opened");
}
