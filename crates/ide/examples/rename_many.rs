//! A value renamed at every use in one change, as an editor's rename sends it (one edit per
//! occurrence, last first), timed from `apply_change` to the file's diagnostics. With `%0`,
//! the device handle every op of a generated graph reads, it is a change of hundreds (10k
//! ops) to thousands (100k ops) of edits all over the file.
//!
//! ```text
//! cargo run --release -p ide --example rename_many -- FILE [NAME] [MAX_USES]
//! ```

#![expect(clippy::disallowed_methods, reason = "an example program: it reads the file it is given")]

use std::{io::Write as _, process::ExitCode, time::Instant};

use ide::{AnalysisHost, Change, Options, TextEdit};
use syntax::TextRange;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        let _ = writeln!(std::io::stderr(), "usage: rename_many FILE [NAME] [MAX_USES]");
        return ExitCode::from(2);
    };
    let name = args.next().unwrap_or_else(|| "%0".to_owned());
    let limit = args.next().and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
    match run(&path, &name, limit) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(path: &str, name: &str, limit: usize) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read `{path}`: {e}"))?;
    let mut host = AnalysisHost::new(target::Target::n150(), Options::tt_mlir_defaults());
    host.apply_change(Change::new().set_file(path, text.clone()));
    let file = host.file(path).ok_or("the file was not loaded")?;
    host.analysis().diagnostics(file).map_err(|_| "cancelled")?;
    // Whole value ids only: `%0` is not a use of `%01`.
    let whole = |o: usize| {
        let after = text.as_bytes().get(o + name.len()).copied().unwrap_or(b' ');
        !(after.is_ascii_alphanumeric() || after == b'_')
    };
    let at: Vec<usize> =
        text.match_indices(name).map(|(o, _)| o).filter(|&o| whole(o)).take(limit).collect();
    let edits: Vec<TextEdit> = at
        .iter()
        .rev()
        .map(|&o| TextEdit {
            range: TextRange::new(o as u32, (o + name.len()) as u32),
            text: "%renamed".to_owned(),
        })
        .collect();
    let started = Instant::now();
    host.apply_change(Change::new().edit_file(path, edits));
    let applied = started.elapsed();
    let diagnostics = host.analysis().diagnostics(file).map_err(|_| "cancelled")?;
    let _ = writeln!(
        std::io::stdout(),
        "{} edits: applied in {:.1} ms, diagnostics after {:.1} ms ({} diagnostics)",
        at.len(),
        applied.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3,
        diagnostics.len()
    );
    Ok(())
}
