//! `cargo xtask cost-validate [--write]`: the cost model against public n150 measurements
//! (`cost::validation_table`, and `cost::whole_model_table` over the `cargo xtask models`
//! snapshots in `test-data/models`). Prints the tables; `--write` also puts it into
//! `docs/cost-model.md` between its `cost-validate` markers, where a test of the cost crate
//! checks it is current.

use std::io::Write as _;

use crate::util::{Flags, read_text, workspace_root, write_file};

const BEGIN: &str = "<!-- cost-validate:begin -->\n";
const END: &str = "<!-- cost-validate:end -->";

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let flags = Flags::parse("cost-validate", args, &[], &["--write"])?;
    let models = workspace_root().join("test-data").join("models");
    let snapshot = |model: &str| read_text(&models.join(format!("{model}.txt"))).ok();
    let table = format!("{}\n{}", cost::validation_table(), cost::whole_model_table(&snapshot));
    std::io::stdout().lock().write_all(table.as_bytes())?;
    if flags.switch("--write") {
        let path = workspace_root().join("docs").join("cost-model.md");
        let doc = read_text(&path)?;
        let (Some(start), Some(end)) = (doc.find(BEGIN), doc.find(END)) else {
            anyhow::bail!("{} has no `cost-validate` markers", path.display());
        };
        if end < start {
            anyhow::bail!("{}: the `cost-validate` markers are out of order", path.display());
        }
        let updated = format!("{}{BEGIN}{table}{}", &doc[..start], &doc[end..]);
        write_file(&path, updated.as_bytes())?;
    }
    Ok(())
}
