//! Arguments shared by the analysis commands: the target and the optimizer overrides.

use camino::{Utf8Path, Utf8PathBuf};
use clap::Args;

use crate::input;

/// `--target`: a builtin device name, else a target file (`.json` is JSON, anything else
/// TOML), read as any input is. Errors name the file and, when known, the line, the column
/// and the key.
pub(crate) fn load_target(arg: Option<&str>) -> anyhow::Result<target::Target> {
    target::Target::load(arg, |path| input::read_text(Utf8Path::new(path))).map_err(|e| {
        let headline = e.headline();
        match e {
            // The reader's error keeps its own chain under the headline.
            target::LoadError::Unreadable { error, .. } => error.context(headline),
            target::LoadError::Invalid { .. } => anyhow::format_err!("{headline}"),
        }
    })
}

/// The target file named by `--target`, if it is a file rather than a builtin name: an
/// output must not overwrite it either.
pub(crate) fn target_file(arg: Option<&str>) -> Option<&Utf8Path> {
    arg.filter(|a| target::Target::builtin(a).is_none()).map(Utf8Path::new)
}

/// The optimizer overrides, in tt-mlir's own option syntax.
#[derive(Args, Clone, Default)]
pub(crate) struct OverrideArgs {
    /// An overrides file: tt-mlir optimizer options, one or more per line.
    #[arg(long, value_name = "FILE")]
    pub(crate) overrides: Option<Utf8PathBuf>,
    /// `op_name=params,...` as tt-mlir's `override-output-layout`.
    #[arg(long = "override-output-layout", value_name = "ENTRIES")]
    pub(crate) output_layout: Vec<String>,
    /// `op_name=key#value:...,...` as tt-mlir's `override-conv2d-config`.
    #[arg(long = "override-conv2d-config", value_name = "ENTRIES")]
    pub(crate) conv2d_config: Vec<String>,
    /// `op_name=operand:...,...` as tt-mlir's `insert-memreconfig`.
    #[arg(long = "insert-memreconfig", value_name = "ENTRIES")]
    pub(crate) insert_memreconfig: Vec<String>,
    /// Cap on sharded candidate layouts per op (tt-mlir's default: 64).
    #[arg(long = "max-legal-layouts", value_name = "N")]
    pub(crate) max_legal_layouts: Option<u32>,
    /// Also consider row-major layouts.
    #[arg(long = "row-major-enabled")]
    pub(crate) row_major_enabled: bool,
    /// `false` plans as tt-mlir at optimization level 1: no L1 chains, every op takes its
    /// first legal layout (the one its output-layout override leaves).
    #[arg(long = "memory-layout-analysis-enabled", value_name = "BOOL")]
    pub(crate) memory_layout_analysis: Option<bool>,
    /// `true` moves single-use DRAM outputs whose user runs right after them to L1
    /// interleaved where both fit, as tt-mlir's L1-interleaved fallback analysis.
    #[arg(long = "l1-interleaved-fallback-analysis-enabled", value_name = "BOOL")]
    pub(crate) l1_interleaved_fallback: Option<bool>,
}

impl OverrideArgs {
    /// The overrides text and its origin: the file's lines, then the flags, one per line.
    /// With both, the origin says so: a diagnostic on a flag's line must not claim that line
    /// is in the file.
    pub(crate) fn text(&self) -> anyhow::Result<(String, String)> {
        let mut text = String::new();
        let mut origin = "<command line>".to_owned();
        if let Some(path) = &self.overrides {
            text = input::read_text(path)?;
            if !text.ends_with('\n') && !text.is_empty() {
                text.push('\n');
            }
            origin = path.to_string();
        }
        for (flag, values) in [
            ("override-output-layout", &self.output_layout),
            ("override-conv2d-config", &self.conv2d_config),
            ("insert-memreconfig", &self.insert_memreconfig),
        ] {
            for v in values {
                text.push_str(&format!("{flag}={v}\n"));
            }
        }
        if let Some(n) = self.max_legal_layouts {
            text.push_str(&format!("max-legal-layouts={n}\n"));
        }
        if self.row_major_enabled {
            text.push_str("row-major-enabled=true\n");
        }
        if let Some(v) = self.memory_layout_analysis {
            text.push_str(&format!("memory-layout-analysis-enabled={v}\n"));
        }
        if let Some(v) = self.l1_interleaved_fallback {
            text.push_str(&format!("l1-interleaved-fallback-analysis-enabled={v}\n"));
        }
        let has_flags = !self.output_layout.is_empty()
            || !self.conv2d_config.is_empty()
            || !self.insert_memreconfig.is_empty()
            || self.max_legal_layouts.is_some()
            || self.row_major_enabled
            || self.memory_layout_analysis.is_some()
            || self.l1_interleaved_fallback.is_some();
        if self.overrides.is_some() && has_flags {
            origin = format!("{origin} + command-line flags");
        }
        Ok((origin, text))
    }
}
