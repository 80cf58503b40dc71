//! The test fixture mini-language: files, settings and cursor markers in one string.
//!
//! ```text
//! //- /m.mlir target:n300
//! func.func @f(%a<|>: ...) ...
//! //- /m.overrides
//! override-output-layout=mm=dram:interleaved
//! ```
//!
//! `//- /path key:value ...` starts a file (`target:` picks a builtin device, `policy:` the
//! optimizer policy); a file whose
//! path ends in `.overrides` becomes the overrides text. `<|>` marks the cursor (two mark a
//! range); `$0` is not used because `$` is legal in MLIR identifiers. Without a `//-` line the
//! whole text is `/m.mlir`.

use crate::{AnalysisHost, Change, Options};
use base_db::SourceFile;

pub(crate) struct Fixture {
    pub(crate) host: AnalysisHost,
    /// `(path, byte offset)` of each `<|>` in order.
    pub(crate) cursors: Vec<(String, u32)>,
}

impl Fixture {
    pub(crate) fn file(&self, path: &str) -> SourceFile {
        self.host.file(path).expect("fixture file exists")
    }

    /// The first cursor's file and offset.
    pub(crate) fn position(&self) -> (SourceFile, u32) {
        let (path, offset) = self.cursors.first().expect("fixture has a cursor").clone();
        (self.file(&path), offset)
    }
}

pub(crate) fn fixture(text: &str) -> Fixture {
    let text = text.strip_prefix('\n').unwrap_or(text);
    let mut files: Vec<(String, String)> = Vec::new();
    let mut target = target::Target::n150();
    let mut options = Options::tt_mlir_defaults();
    for line in text.split_inclusive('\n') {
        if let Some(header) = line.strip_prefix("//- ") {
            let mut parts = header.split_whitespace();
            let path = parts.next().expect("a path after `//-`").to_owned();
            for kv in parts {
                match kv.split_once(':') {
                    Some(("target", name)) => {
                        target = target::Target::builtin(name).expect("a builtin target");
                    }
                    Some(("policy", name)) => {
                        options.policy = base_db::Policy::from_name(name).expect("a policy name");
                    }
                    _ => panic!("unknown fixture key `{kv}`"),
                }
            }
            files.push((path, String::new()));
            continue;
        }
        if files.is_empty() {
            files.push(("/m.mlir".to_owned(), String::new()));
        }
        if let Some(last) = files.last_mut() {
            last.1.push_str(line);
        }
    }
    let mut host = AnalysisHost::new(target, options);
    let mut change = Change::new();
    let mut cursors = Vec::new();
    for (path, text) in files {
        let mut clean = String::new();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("<|>") {
            clean.push_str(&rest[..i]);
            cursors.push((path.clone(), clean.len() as u32));
            rest = &rest[i + 3..];
        }
        clean.push_str(rest);
        if path.ends_with(".overrides") {
            change = change.set_overrides(path, clean);
        } else {
            change = change.set_file(path, clean);
        }
    }
    host.apply_change(change);
    Fixture { host, cursors }
}
