//! `cargo xtask`: repository automation (corpus checks, benchmarks, calibration, tidy).

fn main() -> anyhow::Result<()> {
    Ok(())
}
