//! A seeded storm of client messages: random incremental edits (positions past line ends,
//! inside surrogate pairs, reversed ranges), full replacements, requests at random places,
//! cancellations of random earlier requests, unknown methods and malformed params.
//!
//! Afterwards the server must have answered every request exactly once, still answer a
//! hover, and publish for the final text exactly the diagnostics a fresh `AnalysisHost`
//! computes for it. The test mirrors the text the way LSP defines edits (UTF-16 positions,
//! each change applied to the result of the previous one), independently of the server.

mod common;

use std::collections::BTreeSet;

use common::Client;
use ide::{AnalysisHost, Change, Options};
use lsp_server::{Message, RequestId};
use serde_json::{Value, json};
use syntax::{LineCol, LineIndex};

const URI: &str = "file:///storm/m.mlir";
const MESSAGES: usize = 3000;

const START: &str = r##"#dram = #ttnn.buffer_type<dram>
#il = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<2x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @main(%a: tensor<64x256xbf16, #il>) -> tensor<64x256xbf16, #il> {
  %0 = "ttnn.relu"(%a) : (tensor<64x256xbf16, #il>) -> tensor<64x256xbf16, #il> loc("r0")
  %1 = "ttnn.exp"(%0) : (tensor<64x256xbf16, #il>) -> tensor<64x256xbf16, #il> loc("e1")
  return %1 : tensor<64x256xbf16, #il>
}
"##;

/// Snippets edits insert: valid ops, broken syntax, and non-ASCII text (`é` is two UTF-8
/// bytes and one UTF-16 unit, `😀` four bytes and two units).
const SNIPPETS: &[&str] = &[
    "",
    " ",
    "\n",
    "%",
    "\"ttnn.add\"(%0, %a)",
    "  %9 = \"ttnn.neg\"(%a) : (tensor<64x256xbf16, #il>) -> tensor<64x256xbf16, #il>\n",
    "#il",
    "tensor<",
    "}",
    "{",
    "// é comment 😀\n",
    "😀",
    "é",
    "loc(\"x\")",
    "func.func @g() {\n  return\n}\n",
    "<{a = 1}>",
];

/// xorshift64*: small, seeded, good enough to vary a test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A position that is usually valid, sometimes past the end of its line or of the file.
fn random_position(rng: &mut Rng, text: &str) -> Value {
    let lines: Vec<&str> = text.split('\n').collect();
    let line = match rng.below(10) {
        0 => lines.len() as u64 + rng.below(5),
        _ => rng.below(lines.len() as u64),
    };
    let len = lines.get(line as usize).map_or(0, |l| l.encode_utf16().count() as u64);
    let character = match rng.below(10) {
        0 => len + rng.below(20),
        _ => rng.below(len + 1),
    };
    json!({ "line": line, "character": character })
}

/// Applies one LSP range edit to `text` the way the protocol defines it: positions are
/// clamped to the text, a reversed range is reordered.
fn apply(text: &mut String, range: &Value, new: &str) {
    let index = LineIndex::new(text);
    let off = |p: &Value| {
        let lc = LineCol {
            line: p["line"].as_u64().unwrap_or(0) as u32,
            col_utf16: p["character"].as_u64().unwrap_or(0) as u32,
        };
        index.offset(text, lc) as usize
    };
    let (a, b) = (off(&range["start"]), off(&range["end"]));
    text.replace_range(a.min(b)..a.max(b), new);
}

#[test]
fn a_seeded_message_storm_leaves_the_server_alive_and_consistent() {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mut c = Client::start(json!({}), json!({}));
    let mut text = START.to_owned();
    let mut version = 1;
    c.open(URI, &text);
    let mut sent: Vec<RequestId> = Vec::new();
    let methods = [
        "textDocument/hover",
        "textDocument/definition",
        "textDocument/references",
        "textDocument/inlayHint",
        "textDocument/documentSymbol",
        "textDocument/semanticTokens/full",
        "textDocument/codeAction",
        "textDocument/formatting",
    ];
    for _ in 0..MESSAGES {
        match rng.below(100) {
            // Incremental edits, one to three per notification.
            0..=39 => {
                let mut changes = Vec::new();
                for _ in 0..=rng.below(3) {
                    let start = random_position(&mut rng, &text);
                    let end = if rng.below(3) == 0 {
                        start.clone()
                    } else {
                        random_position(&mut rng, &text)
                    };
                    let range = json!({ "start": start, "end": end });
                    let new = SNIPPETS[rng.below(SNIPPETS.len() as u64) as usize];
                    apply(&mut text, &range, new);
                    changes.push(json!({ "range": range, "text": new }));
                }
                version += 1;
                c.notify(
                    "textDocument/didChange",
                    json!({ "textDocument": { "uri": URI, "version": version }, "contentChanges": changes }),
                );
            }
            // A full replacement, occasionally back to a valid file.
            40..=42 => {
                text = if rng.below(2) == 0 {
                    START.to_owned()
                } else {
                    format!("{text}\n{}", SNIPPETS[5])
                };
                version += 1;
                c.notify(
                    "textDocument/didChange",
                    json!({ "textDocument": { "uri": URI, "version": version }, "contentChanges": [{ "text": text }] }),
                );
            }
            // Requests at random positions.
            43..=79 => {
                let method = methods[rng.below(methods.len() as u64) as usize];
                let p = random_position(&mut rng, &text);
                let params = json!({
                    "textDocument": { "uri": URI },
                    "position": p,
                    "range": { "start": p, "end": random_position(&mut rng, &text) },
                    "context": { "includeDeclaration": true, "diagnostics": [] },
                    "options": { "tabSize": 2, "insertSpaces": true },
                });
                sent.push(c.send_request(method, params));
            }
            // Cancel a random earlier request (often already answered).
            80..=89 => {
                if !sent.is_empty() {
                    let id = sent[rng.below(sent.len() as u64) as usize].clone();
                    c.notify("$/cancelRequest", json!({ "id": id }));
                }
            }
            // Garbage: unknown methods, malformed params, bad notifications.
            90..=93 => {
                sent.push(c.send_request("textDocument/nonsense", json!({ "x": rng.next() })))
            }
            94..=96 => sent.push(
                c.send_request("textDocument/hover", json!({ "textDocument": rng.below(7) })),
            ),
            _ => c.notify(
                "textDocument/didChange",
                json!({ "textDocument": { "uri": 5 }, "contentChanges": "no" }),
            ),
        }
    }
    // Every request is answered exactly once.
    let mut answered = BTreeSet::new();
    let pending: BTreeSet<String> = sent.iter().map(ToString::to_string).collect();
    for m in std::mem::take(&mut c.inbox) {
        if let Message::Response(r) = m {
            assert!(answered.insert(r.id.to_string()), "{} answered twice", r.id);
        }
    }
    while answered.len() < pending.len() {
        match c.recv() {
            Message::Response(r) => {
                assert!(answered.insert(r.id.to_string()), "{} answered twice", r.id);
            }
            // Kept: the diagnostics of the final version may come before the last answers,
            // and are read below.
            other => c.inbox.push(other),
        }
    }
    assert_eq!(answered, pending);

    // Still alive: a hover on the final text is answered.
    let hover = c.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": URI }, "position": { "line": 0, "character": 1 } }),
    );
    assert!(hover.response_result.is_ok(), "hover after the storm");

    // The published diagnostics for the final version equal a fresh analysis of the text.
    let published = c.diagnostics_at(URI, version);
    let mut host = AnalysisHost::new(target::Target::n150(), Options::tt_mlir_defaults());
    host.apply_change(Change::new().set_file("/storm/m.mlir", text.clone()));
    let analysis = host.analysis();
    let file = host.file("/storm/m.mlir").expect("file is set");
    let index = LineIndex::new(&text);
    let fresh: Vec<String> = analysis
        .diagnostics(file)
        .expect("not cancelled")
        .iter()
        .map(|d| {
            let (s, e) = (index.line_col(&text, d.range.start), index.line_col(&text, d.range.end));
            format!(
                "{}:{}-{}:{} [{}] {}",
                s.line, s.col_utf16, e.line, e.col_utf16, d.code, d.message
            )
        })
        .collect();
    let got: Vec<String> = published["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| {
            format!(
                "{}:{}-{}:{} [{}] {}",
                d["range"]["start"]["line"],
                d["range"]["start"]["character"],
                d["range"]["end"]["line"],
                d["range"]["end"]["character"],
                d["code"].as_str().unwrap_or(""),
                d["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(got, fresh);
    assert!(version > 1000, "the storm edited the file ({version} versions)");
    let (_, _, clean) = c.shutdown();
    assert!(clean);
}
