//! `cargo xtask calibrate`: prints the op model's calibration table (reference vs model per
//! calibration point of our notes, with relative errors and the within-5% summary).

use std::io::Write as _;

pub(crate) fn run() -> anyhow::Result<()> {
    let report = opmodel::calibration::calibration_report();
    let mut out = std::io::stdout().lock();
    out.write_all(report.as_bytes())?;
    out.flush()?;
    Ok(())
}
