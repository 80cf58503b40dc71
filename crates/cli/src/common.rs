//! Arguments shared by the analysis commands: the target and the optimizer overrides.

use anyhow::Context as _;
use camino::{Utf8Path, Utf8PathBuf};
use clap::Args;

/// `--target`: a builtin device name or a target description file.
pub(crate) fn load_target(arg: Option<&str>) -> anyhow::Result<target::Target> {
    let Some(arg) = arg else { return Ok(target::Target::n150()) };
    if let Some(t) = target::Target::builtin(arg) {
        return Ok(t);
    }
    let path = Utf8Path::new(arg);
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "`{arg}` is neither a builtin target ({}) nor a readable file",
            target::BUILTIN_NAMES.join(", ")
        )
    })?;
    let parsed = if path.extension() == Some("json") {
        target::Target::from_json_str(&text)
    } else {
        target::Target::from_toml_str(&text)
    };
    parsed.map_err(|e| match e.line_col {
        Some((line, col)) => anyhow::format_err!("{path}:{line}:{col}: {}", e.message),
        None => anyhow::format_err!("{path}: {}", e.message),
    })
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
}

impl OverrideArgs {
    /// The overrides text and its origin: the file's lines, then the flags, one per line.
    /// With both, the origin says so: a diagnostic on a flag's line must not claim that line
    /// is in the file.
    pub(crate) fn text(&self) -> anyhow::Result<(String, String)> {
        let mut text = String::new();
        let mut origin = "<command line>".to_owned();
        if let Some(path) = &self.overrides {
            text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read `{path}`"))?;
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
        let has_flags = !self.output_layout.is_empty()
            || !self.conv2d_config.is_empty()
            || !self.insert_memreconfig.is_empty()
            || self.max_legal_layouts.is_some()
            || self.row_major_enabled;
        if self.overrides.is_some() && has_flags {
            origin = format!("{origin} + command-line flags");
        }
        Ok((origin, text))
    }
}

/// True when both paths name the same file: equal as written, or (when both exist) after
/// resolving links and `..`, so `./a.mlir` and `a.mlir` are caught too.
pub(crate) fn same_file(a: &Utf8Path, b: &Utf8Path) -> bool {
    if a == b {
        return true;
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
