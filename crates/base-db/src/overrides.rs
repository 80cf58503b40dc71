//! tt-mlir's optimizer override syntax, parsed with positions for diagnostics.
//!
//! An overrides file holds options in tt-mlir's pipeline-option syntax, one or more per line
//! separated by spaces; `#` and `//` start comment lines:
//!
//! ```text
//! # pin the attention projection in L1
//! override-output-layout=attn_qkv=8x8:l1:block_sharded:tile,ffn_down=dram:interleaved
//! override-conv2d-config=conv1=act_block_h_override#32:deallocate_activation#true
//! insert-memreconfig=matmul_3=0:1
//! max-legal-layouts=32 row-major-enabled=false
//! ```
//!
//! Per-op values are split on every `,` and each entry on every `=`, as tt-mlir does, so an op
//! name can contain `:` and `.` but not `,`, `=` or spaces. Unlike tt-mlir, a later entry for the
//! same op is reported instead of silently replacing the earlier one.

use std::collections::BTreeMap;

use rustc_hash::FxHashSet;
use syntax::TextRange;
use ttnn_types::{
    BufferType, Conv2dConfig, DataType, Grid, PageLayout, TensorMemoryLayout, UnaryWithParam,
};

/// The parsed overrides with their ranges in the overrides text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OverrideFile {
    pub entries: Vec<OverrideEntry>,
    pub settings: Vec<OptionSetting>,
    pub errors: Vec<OverrideError>,
}

impl OverrideFile {
    /// What the entries say about each op, by op name, without positions. A later entry for
    /// the same op and option replaces the earlier one (the parser reports it).
    #[must_use]
    pub fn table(&self) -> BTreeMap<String, OpOverrides> {
        let mut table: BTreeMap<String, OpOverrides> = BTreeMap::new();
        for e in &self.entries {
            let entry = table.entry(e.op_name.clone()).or_default();
            match &e.kind {
                OverrideKind::OutputLayout(o) => entry.output_layout = Some(*o),
                OverrideKind::Conv2dConfig(c) => entry.conv2d = Some(c.clone()),
                OverrideKind::InsertMemReconfig(idx) => entry.reshard_operands = idx.clone(),
            }
        }
        table
    }

    /// The option settings, without positions; the last setting of an option wins.
    #[must_use]
    pub fn option_settings(&self) -> OverrideSettings {
        let mut out = OverrideSettings::default();
        let mut explicit_analysis = false;
        for s in &self.settings {
            match s {
                OptionSetting::MaxLegalLayouts { value, .. } => {
                    out.max_legal_layouts = Some(*value)
                }
                OptionSetting::RowMajorEnabled { value, .. } => {
                    out.row_major_enabled = Some(*value)
                }
                OptionSetting::L1InterleavedFallback { value, .. } => {
                    out.l1_interleaved_fallback = Some(*value)
                }
                OptionSetting::TensorL1UsageCap { value, .. } => {
                    out.tensor_l1_usage_cap = Some(*value)
                }
                OptionSetting::MemoryLayoutAnalysis { value, explicit: true, .. } => {
                    out.memory_layout_analysis = Some(*value);
                    explicit_analysis = true;
                }
                // `optimization-level` sets the analysis unless the option itself is given,
                // wherever it stands (tt-mlir's `resolveOptimizationLevelOptions`).
                OptionSetting::MemoryLayoutAnalysis { value, explicit: false, .. } => {
                    if !explicit_analysis {
                        out.memory_layout_analysis = Some(*value);
                    }
                }
            }
        }
        out
    }
}

/// Everything the overrides say about one op.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct OpOverrides {
    pub output_layout: Option<OutputLayoutOverride>,
    pub conv2d: Option<Conv2dOverride>,
    /// Operand indices to reshard in front of (`insert-memreconfig`).
    pub reshard_operands: Vec<u32>,
}

/// The analysis options an overrides text sets (`max-legal-layouts`, `row-major-enabled`,
/// `memory-layout-analysis-enabled` or the `optimization-level` that implies it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OverrideSettings {
    pub max_legal_layouts: Option<u32>,
    pub row_major_enabled: Option<bool>,
    pub memory_layout_analysis: Option<bool>,
    pub l1_interleaved_fallback: Option<bool>,
    /// The fraction of unreserved L1 tensors may use (`tensor-l1-usage-cap`), replacing the
    /// target's.
    pub tensor_l1_usage_cap: Option<target::UsageCap>,
}

/// One per-op override: `op_name=params` inside an option value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverrideEntry {
    pub op_name: String,
    pub name_range: TextRange,
    /// The whole `name=params` entry.
    pub range: TextRange,
    pub kind: OverrideKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OverrideKind {
    OutputLayout(OutputLayoutOverride),
    Conv2dConfig(Conv2dOverride),
    /// Operand indices to put a memory reconfiguration (reshard) in front of.
    InsertMemReconfig(Vec<u32>),
}

impl OverrideKind {
    #[must_use]
    pub fn option_name(&self) -> &'static str {
        match self {
            OverrideKind::OutputLayout(_) => "override-output-layout",
            OverrideKind::Conv2dConfig(_) => "override-conv2d-config",
            OverrideKind::InsertMemReconfig(_) => "insert-memreconfig",
        }
    }
}

/// `override-output-layout`: each field optional; all of grid, buffer type, memory layout and
/// page layout together make a full override that skips the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OutputLayoutOverride {
    pub grid: Option<Grid>,
    pub buffer: Option<BufferType>,
    pub memory_layout: Option<TensorMemoryLayout>,
    pub page: Option<PageLayout>,
    pub dtype: Option<DataType>,
}

impl OutputLayoutOverride {
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.grid.is_some()
            && self.buffer.is_some()
            && self.memory_layout.is_some()
            && self.page.is_some()
    }

    /// Renders the override back in tt-mlir syntax (`8x8:l1:block_sharded:tile:bf16`).
    #[must_use]
    pub fn to_params(&self) -> String {
        let mut parts = Vec::new();
        if let Some(g) = self.grid {
            parts.push(g.to_string());
        }
        if let Some(b) = self.buffer {
            parts.push(b.keyword().to_owned());
        }
        if let Some(m) = self.memory_layout {
            parts.push(m.keyword().to_owned());
        }
        if let Some(p) = self.page {
            parts.push(p.keyword().to_owned());
        }
        if let Some(d) = self.dtype {
            parts.push(d.keyword().to_owned());
        }
        parts.join(":")
    }
}

/// `override-conv2d-config`: the fields to pin; the rest are searched.
pub type Conv2dOverride = Conv2dConfig;

/// Global options that may appear in an overrides file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionSetting {
    MaxLegalLayouts {
        value: u32,
        range: TextRange,
    },
    RowMajorEnabled {
        value: bool,
        range: TextRange,
    },
    /// `l1-interleaved-fallback-analysis-enabled=<bool>`.
    L1InterleavedFallback {
        value: bool,
        range: TextRange,
    },
    /// `tensor-l1-usage-cap=<fraction>`.
    TensorL1UsageCap {
        value: target::UsageCap,
        range: TextRange,
    },
    /// `memory-layout-analysis-enabled=<bool>` (`explicit`), or what `optimization-level=1|2`
    /// implies for it.
    MemoryLayoutAnalysis {
        value: bool,
        explicit: bool,
        range: TextRange,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverrideError {
    pub code: &'static str,
    pub message: String,
    pub range: TextRange,
    /// Warnings are accepted input with a caveat (an option with no effect, a replaced entry).
    pub is_warning: bool,
}

/// Options of tt-mlir's pipeline that do not change which layouts its optimizer picks (the
/// device description, traces, checks), and options whose listed value is what this analysis
/// always does (`enable-optimizer=true`: it always optimizes). Accepted with an
/// `ignored-option` warning, so an existing option string can be pasted as is.
const IGNORED_OPTIONS: &[(&str, Option<&[&str]>)] = &[
    ("system-desc-path", None),
    ("mock-system-desc-arch", None),
    ("check-unique-locs", None),
    ("max-fallback-attempts", None),
    ("enable-decision-trace", None),
    ("decision-trace-dir", None),
    ("enable-optimizer", Some(&["true", "1"])),
    ("memreconfig-enabled", Some(&["true", "1"])),
    ("enable-greedy-optimizer", Some(&["false", "0"])),
    ("memory-layout-analysis-policy", Some(&["DFSharding"])),
];

/// Options of tt-mlir's pipeline that change its plan in ways this analysis does not
/// reproduce: accepted with an `unsupported-option` warning naming them, so the plan is not
/// taken for tt-mlir's. (The options above with another value land here too.)
const UNSUPPORTED_OPTIONS: &[&str] = &[
    "optimization-level",
    "experimental-weight-dtype",
    "compute-cfg-math-fidelity",
    "experimental-kv-cache-dtype",
    "mesh-shape",
    "mesh-topology",
    "override-conv3d-config",
    "enable-const-eval",
    "disable-workarounds",
    "enable-create-d2m-subgraphs",
];

/// What this analysis does where an option asks for something else, for the warning.
fn unsupported_reason(name: &str, value: &str) -> String {
    match name {
        "enable-optimizer" => "this analysis always runs the optimizer".to_owned(),
        "optimization-level" => {
            "only levels 1 (no memory-layout analysis) and 2 (with it) are modelled".to_owned()
        }
        "memreconfig-enabled" => "reshards and conversions are always inserted".to_owned(),
        "enable-greedy-optimizer" | "memory-layout-analysis-policy" => {
            "the policy is `df-sharding` or `df-sharding-merge`, chosen by `--policy`".to_owned()
        }
        // Both rewrite the graph before tt-mlir's optimizer runs, which the import does when
        // it is asked to; an overrides text is read after the graph is made.
        "experimental-weight-dtype" => "the import does it, with `--weight-dtype`".to_owned(),
        "compute-cfg-math-fidelity" => "the import does it, with `--math-fidelity`".to_owned(),
        _ => format!("`{name}={value}` has no equivalent in this analysis"),
    }
}
/// Parses an overrides text. Never fails: problems are in `errors`.
#[must_use]
pub fn parse_overrides(text: &str) -> OverrideFile {
    let mut out = OverrideFile::default();
    // The (option, op) pairs in `out.entries`, so a new entry finds its duplicate without a
    // scan of every entry (20k distinct entries were quadratic).
    let mut present: FxHashSet<(String, String)> = FxHashSet::default();
    let mut offset = 0u32;
    for line in text.split_inclusive('\n') {
        let line_start = offset;
        offset += line.len() as u32;
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("//") {
            continue;
        }
        // Options on one line are separated by whitespace, as in a pipeline option string.
        let mut pos = 0usize;
        let bytes = line.as_bytes();
        while pos < bytes.len() {
            while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
                pos += 1;
            }
            let start = pos;
            while pos < bytes.len() && !bytes[pos].is_ascii_whitespace() {
                pos += 1;
            }
            if pos > start {
                parse_option(&mut out, &mut present, &line[start..pos], line_start + start as u32);
            }
        }
    }
    out
}

fn range_of(start: u32, s: &str) -> TextRange {
    TextRange::new(start, start + s.len() as u32)
}

/// The most errors and warnings one overrides text reports; past it one warning says so. A
/// generated file with millions of bad or duplicate entries would otherwise hold (and show)
/// millions of diagnostics.
pub const MAX_OVERRIDE_ERRORS: usize = 1000;

fn error(out: &mut OverrideFile, code: &'static str, message: String, range: TextRange) {
    push(out, OverrideError { code, message, range, is_warning: false });
}

/// Records a diagnostic unless [`MAX_OVERRIDE_ERRORS`] are already recorded.
fn push(out: &mut OverrideFile, e: OverrideError) {
    match out.errors.len().cmp(&MAX_OVERRIDE_ERRORS) {
        std::cmp::Ordering::Less => out.errors.push(e),
        std::cmp::Ordering::Equal => out.errors.push(OverrideError {
            code: "too-many-override-errors",
            message: format!(
                "more than {MAX_OVERRIDE_ERRORS} errors and warnings in the overrides; the rest \
                 are not reported"
            ),
            range: e.range,
            is_warning: true,
        }),
        std::cmp::Ordering::Greater => {}
    }
}

fn parse_option(
    out: &mut OverrideFile,
    present: &mut FxHashSet<(String, String)>,
    opt: &str,
    at: u32,
) {
    let Some((name, value)) = opt.split_once('=') else {
        error(
            out,
            "invalid-option",
            format!("expected `name=value`, found `{opt}`"),
            range_of(at, opt),
        );
        return;
    };
    let value_at = at + name.len() as u32 + 1;
    let name_range = range_of(at, name);
    match name {
        "override-output-layout" | "override-conv2d-config" | "insert-memreconfig" => {
            if value.is_empty() {
                error(out, "empty-override", format!("`{name}` has no entries"), name_range);
                return;
            }
            let mut entry_at = value_at;
            for entry in value.split(',') {
                parse_entry(out, present, name, entry, entry_at);
                entry_at += entry.len() as u32 + 1;
            }
        }
        "max-legal-layouts" => match value.parse::<u32>() {
            Ok(v) => out
                .settings
                .push(OptionSetting::MaxLegalLayouts { value: v, range: range_of(at, opt) }),
            Err(_) => error(
                out,
                "invalid-option-value",
                format!("`max-legal-layouts` expects a non-negative integer, found `{value}`"),
                range_of(value_at, value),
            ),
        },
        "row-major-enabled" => match parse_bool(value) {
            Some(v) => out
                .settings
                .push(OptionSetting::RowMajorEnabled { value: v, range: range_of(at, opt) }),
            None => error(
                out,
                "invalid-option-value",
                format!("`row-major-enabled` expects `true` or `false`, found `{value}`"),
                range_of(value_at, value),
            ),
        },
        "tensor-l1-usage-cap" => {
            match value.parse::<f64>().ok().and_then(target::UsageCap::from_fraction) {
                Some(v) => out
                    .settings
                    .push(OptionSetting::TensorL1UsageCap { value: v, range: range_of(at, opt) }),
                None => error(
                    out,
                    "invalid-option-value",
                    format!("`tensor-l1-usage-cap` expects a fraction in (0, 1], found `{value}`"),
                    range_of(value_at, value),
                ),
            }
        }
        "l1-interleaved-fallback-analysis-enabled" => match parse_bool(value) {
            Some(v) => out
                .settings
                .push(OptionSetting::L1InterleavedFallback { value: v, range: range_of(at, opt) }),
            None => error(
                out,
                "invalid-option-value",
                format!(
                    "`l1-interleaved-fallback-analysis-enabled` expects `true` or `false`, found `{value}`"
                ),
                range_of(value_at, value),
            ),
        },
        "memory-layout-analysis-enabled" => match parse_bool(value) {
            Some(v) => out.settings.push(OptionSetting::MemoryLayoutAnalysis {
                value: v,
                explicit: true,
                range: range_of(at, opt),
            }),
            None => error(
                out,
                "invalid-option-value",
                format!(
                    "`memory-layout-analysis-enabled` expects `true` or `false`, found `{value}`"
                ),
                range_of(value_at, value),
            ),
        },
        "optimization-level" if value == "1" || value == "2" => {
            out.settings.push(OptionSetting::MemoryLayoutAnalysis {
                value: value == "2",
                explicit: false,
                range: range_of(at, opt),
            });
        }
        _ if IGNORED_OPTIONS
            .iter()
            .any(|(n, values)| *n == name && values.is_none_or(|v| v.contains(&value))) =>
        {
            push(
                out,
                OverrideError {
                    code: "ignored-option",
                    message: format!(
                        "`{name}` is a tt-mlir pipeline option with no effect on this analysis"
                    ),
                    range: name_range,
                    is_warning: true,
                },
            );
        }
        _ if IGNORED_OPTIONS.iter().any(|(n, _)| *n == name)
            || UNSUPPORTED_OPTIONS.contains(&name) =>
        {
            push(
                out,
                OverrideError {
                    code: "unsupported-option",
                    message: format!(
                        "`{name}={value}` changes tt-mlir's plan and is not supported here: {}",
                        unsupported_reason(name, value)
                    ),
                    range: range_of(at, opt),
                    is_warning: true,
                },
            );
        }
        _ => error(out, "unknown-option", format!("unknown option `{name}`"), name_range),
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

fn parse_entry(
    out: &mut OverrideFile,
    present: &mut FxHashSet<(String, String)>,
    option: &str,
    entry: &str,
    at: u32,
) {
    let parts: Vec<&str> = entry.split('=').collect();
    let range = range_of(at, entry);
    if parts.len() != 2 || parts[0].is_empty() {
        error(
            out,
            "invalid-override-entry",
            format!("expected `op_name=params` in `{option}`, found `{entry}`"),
            range,
        );
        return;
    }
    let (op_name, params) = (parts[0], parts[1]);
    let name_range = range_of(at, op_name);
    let params_at = at + op_name.len() as u32 + 1;
    let kind = match option {
        "override-output-layout" => {
            parse_layout_params(out, params, params_at).map(OverrideKind::OutputLayout)
        }
        "override-conv2d-config" => {
            parse_conv2d_params(out, params, params_at).map(OverrideKind::Conv2dConfig)
        }
        _ => parse_reconfig_params(out, params, params_at).map(OverrideKind::InsertMemReconfig),
    };
    let Some(kind) = kind else { return };
    let key = (option.to_owned(), op_name.to_owned());
    if present.contains(&key)
        && let Some(prev) = out.entries.iter().find(|e| {
            e.op_name == op_name && std::mem::discriminant(&e.kind) == std::mem::discriminant(&kind)
        })
    {
        let prev_line = prev.range;
        push(
            out,
            OverrideError {
                code: "duplicate-override",
                message: format!(
                    "a second `{option}` entry for `{op_name}` replaces the one at offset {}",
                    prev_line.start
                ),
                range: name_range,
                is_warning: true,
            },
        );
        out.entries.retain(|e| {
            !(e.op_name == op_name
                && std::mem::discriminant(&e.kind) == std::mem::discriminant(&kind))
        });
    }
    present.insert(key);
    out.entries.push(OverrideEntry { op_name: op_name.to_owned(), name_range, range, kind });
}

fn parse_layout_params(
    out: &mut OverrideFile,
    params: &str,
    at: u32,
) -> Option<OutputLayoutOverride> {
    let mut o = OutputLayoutOverride::default();
    let mut ok = true;
    let mut tok_at = at;
    for tok in params.split(':') {
        let range = range_of(tok_at, tok);
        tok_at += tok.len() as u32 + 1;
        let dup = |out: &mut OverrideFile, what: &str| {
            error(out, "duplicate-layout-parameter", format!("{what} is given twice"), range);
        };
        if let Some(grid) = parse_grid(tok) {
            if o.grid.replace(grid).is_some() {
                dup(out, "the grid");
                ok = false;
            }
        } else if let Some(b) = BufferType::from_keyword(tok) {
            if o.buffer.replace(b).is_some() {
                dup(out, "the buffer type");
                ok = false;
            }
        } else if let Some(m) = TensorMemoryLayout::from_keyword(tok) {
            if o.memory_layout.replace(m).is_some() {
                dup(out, "the memory layout");
                ok = false;
            }
        } else if let Some(p) = PageLayout::from_keyword(tok) {
            if o.page.replace(p).is_some() {
                dup(out, "the page layout");
                ok = false;
            }
        } else if let Some(d) = DataType::from_keyword(tok) {
            if o.dtype.replace(d).is_some() {
                dup(out, "the data type");
                ok = false;
            }
        } else {
            let hint = if tok.is_empty() {
                "an empty layout parameter".to_owned()
            } else {
                format!("invalid layout parameter `{tok}`")
            };
            error(
                out,
                "invalid-layout-parameter",
                format!(
                    "{hint}: expected a grid (`8x8`), a buffer type (`dram`, `l1`), a memory layout (`interleaved`, `height_sharded`, `width_sharded`, `block_sharded`), a page layout (`tile`, `row_major`) or a data type (`bf16`, `f32`, `bfp_bf8`, ...)"
                ),
                range,
            );
            ok = false;
        }
    }
    ok.then_some(o)
}

/// `<rows>x<cols>`: exactly two positive numbers.
fn parse_grid(s: &str) -> Option<Grid> {
    let (r, c) = s.split_once('x')?;
    let rows: u64 = r.parse().ok()?;
    let cols: u64 = c.parse().ok()?;
    (rows > 0 && cols > 0).then_some(Grid::new(rows, cols))
}

fn parse_conv2d_params(out: &mut OverrideFile, params: &str, at: u32) -> Option<Conv2dOverride> {
    let mut c = Conv2dConfig::default();
    if params.is_empty() {
        return Some(c);
    }
    let mut ok = true;
    let mut seen: Vec<&str> = Vec::new();
    let mut tok_at = at;
    for tok in params.split(':') {
        let range = range_of(tok_at, tok);
        tok_at += tok.len() as u32 + 1;
        let Some((key, value)) = tok.split_once('#') else {
            error(
                out,
                "invalid-conv2d-parameter",
                format!("expected `key#value`, found `{tok}`"),
                range,
            );
            ok = false;
            continue;
        };
        if seen.contains(&key) {
            error(out, "duplicate-conv2d-parameter", format!("`{key}` is given twice"), range);
            ok = false;
            continue;
        }
        seen.push(key);
        let bad_value = |out: &mut OverrideFile, expected: &str| {
            error(
                out,
                "invalid-conv2d-parameter",
                format!("`{key}` expects {expected}, found `{value}`"),
                range,
            );
        };
        let applied = match key {
            "weights_dtype" => DataType::from_keyword(value).map(|v| c.weights_dtype = Some(v)),
            "activation" => {
                // tt-mlir accepts the key case-insensitively but only `relu` maps to an op type.
                if value.eq_ignore_ascii_case("relu") {
                    c.activation =
                        Some(UnaryWithParam { op_type: "relu".to_owned(), params: Vec::new() });
                    Some(())
                } else {
                    None
                }
            }
            "deallocate_activation" => parse_bool(value).map(|v| c.deallocate_activation = Some(v)),
            "reallocate_halo_output" => {
                parse_bool(value).map(|v| c.reallocate_halo_output = Some(v))
            }
            "act_block_h_override" => value.parse().ok().map(|v| c.act_block_h_override = Some(v)),
            "act_block_w_div" => value.parse().ok().map(|v| c.act_block_w_div = Some(v)),
            "reshard_if_not_optimal" => {
                parse_bool(value).map(|v| c.reshard_if_not_optimal = Some(v))
            }
            "override_sharding_config" => {
                parse_bool(value).map(|v| c.override_sharding_config = Some(v))
            }
            "shard_layout" => {
                TensorMemoryLayout::from_keyword(value).map(|v| c.shard_layout = Some(v))
            }
            "transpose_shards" => parse_bool(value).map(|v| c.transpose_shards = Some(v)),
            "output_layout" => PageLayout::from_keyword(value).map(|v| c.output_layout = Some(v)),
            "enable_act_double_buffer" => {
                parse_bool(value).map(|v| c.enable_act_double_buffer = Some(v))
            }
            "enable_weights_double_buffer" => {
                parse_bool(value).map(|v| c.enable_weights_double_buffer = Some(v))
            }
            "core_grid" => {
                error(
                    out,
                    "unsupported-conv2d-parameter",
                    "`core_grid` cannot be overridden (tt-mlir asserts on it)".to_owned(),
                    range,
                );
                ok = false;
                continue;
            }
            _ => {
                error(
                    out,
                    "invalid-conv2d-parameter",
                    format!("unknown conv2d parameter `{key}`"),
                    range,
                );
                ok = false;
                continue;
            }
        };
        if applied.is_none() {
            let expected = match key {
                "weights_dtype" => "a data type",
                "activation" => "`relu` (omit the key for no activation)",
                "act_block_h_override" | "act_block_w_div" => "an unsigned integer",
                "shard_layout" => "a memory layout",
                "output_layout" => "`tile` or `row_major`",
                _ => "`true` or `false`",
            };
            bad_value(out, expected);
            ok = false;
        }
    }
    ok.then_some(c)
}

fn parse_reconfig_params(out: &mut OverrideFile, params: &str, at: u32) -> Option<Vec<u32>> {
    let mut idx = Vec::new();
    let mut tok_at = at;
    for tok in params.split(':') {
        let range = range_of(tok_at, tok);
        tok_at += tok.len() as u32 + 1;
        match tok.parse::<u32>() {
            Ok(i) => idx.push(i),
            Err(_) => {
                error(
                    out,
                    "invalid-operand-index",
                    format!("expected an operand index, found `{tok}`"),
                    range,
                );
                return None;
            }
        }
    }
    Some(idx)
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use expect_test::{Expect, expect};

    use super::*;

    #[track_caller]
    fn check(text: &str, expect: Expect) {
        let f = parse_overrides(text);
        let mut out = String::new();
        for e in &f.entries {
            let _ = writeln!(out, "{} {:?}: {:?}", e.op_name, e.name_range, e.kind);
        }
        for s in &f.settings {
            let _ = writeln!(out, "{s:?}");
        }
        for e in &f.errors {
            let sev = if e.is_warning { "warning" } else { "error" };
            let _ = writeln!(
                out,
                "{sev}[{}] {:?} {:?}: {}",
                e.code,
                e.range,
                e.range.slice(text),
                e.message
            );
        }
        expect.assert_eq(&out);
    }

    #[test]
    fn output_layout_overrides_accept_parameters_in_any_order() {
        check(
            "override-output-layout=mm_1=8x8:l1:block_sharded:tile,p0.3=bf16:dram:interleaved\n",
            expect![[r#"
                mm_1 23..27: OutputLayout(OutputLayoutOverride { grid: Some(Grid { rows: 8, cols: 8 }), buffer: Some(L1), memory_layout: Some(BlockSharded), page: Some(Tile), dtype: None })
                p0.3 54..58: OutputLayout(OutputLayoutOverride { grid: None, buffer: Some(Dram), memory_layout: Some(Interleaved), page: None, dtype: Some(BF16) })
            "#]],
        );
    }

    #[test]
    fn bad_overrides_point_at_the_offending_token() {
        check(
            "# comment\noverride-output-layout=a=2x2x2:l1,b=\noverride-conv2d-config=c=dtype#bf16:activation#none\nfrobnicate=1 enable-optimizer=true\n",
            expect![[r#"
                error[invalid-layout-parameter] 35..40 "2x2x2": invalid layout parameter `2x2x2`: expected a grid (`8x8`), a buffer type (`dram`, `l1`), a memory layout (`interleaved`, `height_sharded`, `width_sharded`, `block_sharded`), a page layout (`tile`, `row_major`) or a data type (`bf16`, `f32`, `bfp_bf8`, ...)
                error[invalid-layout-parameter] 46..46 "": an empty layout parameter: expected a grid (`8x8`), a buffer type (`dram`, `l1`), a memory layout (`interleaved`, `height_sharded`, `width_sharded`, `block_sharded`), a page layout (`tile`, `row_major`) or a data type (`bf16`, `f32`, `bfp_bf8`, ...)
                error[invalid-conv2d-parameter] 72..82 "dtype#bf16": unknown conv2d parameter `dtype`
                error[invalid-conv2d-parameter] 83..98 "activation#none": `activation` expects `relu` (omit the key for no activation), found `none`
                error[unknown-option] 99..109 "frobnicate": unknown option `frobnicate`
                warning[ignored-option] 112..128 "enable-optimizer": `enable-optimizer` is a tt-mlir pipeline option with no effect on this analysis
            "#]],
        );
    }

    #[test]
    fn options_that_change_tt_mlirs_plan_are_reported_as_unsupported() {
        check(
            "enable-optimizer=true optimization-level=0 l1-interleaved-fallback-analysis-enabled=true\nenable-greedy-optimizer=true tensor-l1-usage-cap=0.5 system-desc-path=x.ttsys\n",
            expect![[r#"
                L1InterleavedFallback { value: true, range: 43..88 }
                TensorL1UsageCap { value: UsageCap(500000), range: 118..141 }
                warning[ignored-option] 0..16 "enable-optimizer": `enable-optimizer` is a tt-mlir pipeline option with no effect on this analysis
                warning[unsupported-option] 22..42 "optimization-level=0": `optimization-level=0` changes tt-mlir's plan and is not supported here: only levels 1 (no memory-layout analysis) and 2 (with it) are modelled
                warning[unsupported-option] 89..117 "enable-greedy-optimizer=true": `enable-greedy-optimizer=true` changes tt-mlir's plan and is not supported here: the policy is `df-sharding` or `df-sharding-merge`, chosen by `--policy`
                warning[ignored-option] 142..158 "system-desc-path": `system-desc-path` is a tt-mlir pipeline option with no effect on this analysis
            "#]],
        );
    }

    #[test]
    fn options_the_import_takes_point_to_its_flags() {
        check(
            "experimental-weight-dtype=bfp_bf8 compute-cfg-math-fidelity=lofi\n",
            expect![[r#"
                warning[unsupported-option] 0..33 "experimental-weight-dtype=bfp_bf8": `experimental-weight-dtype=bfp_bf8` changes tt-mlir's plan and is not supported here: the import does it, with `--weight-dtype`
                warning[unsupported-option] 34..64 "compute-cfg-math-fidelity=lofi": `compute-cfg-math-fidelity=lofi` changes tt-mlir's plan and is not supported here: the import does it, with `--math-fidelity`
            "#]],
        );
    }

    #[test]
    fn conv2d_and_reshard_overrides_and_global_settings() {
        check(
            "override-conv2d-config=conv1=act_block_h_override#32:deallocate_activation#TRUE insert-memreconfig=mm=0:1\nmax-legal-layouts=8\nrow-major-enabled=true\n",
            expect![[r#"
                conv1 23..28: Conv2dConfig(Conv2dConfig { weights_dtype: None, activation: None, deallocate_activation: Some(true), reallocate_halo_output: None, act_block_h_override: Some(32), act_block_w_div: None, reshard_if_not_optimal: None, override_sharding_config: None, shard_layout: None, core_grid: None, transpose_shards: None, output_layout: None, enable_act_double_buffer: None, enable_weights_double_buffer: None, enable_kernel_stride_folding: None, config_tensors_in_dram: None })
                mm 99..101: InsertMemReconfig([0, 1])
                MaxLegalLayouts { value: 8, range: 106..125 }
                RowMajorEnabled { value: true, range: 126..148 }
            "#]],
        );
    }

    #[test]
    fn a_tensor_l1_usage_cap_is_a_setting_and_a_cap_outside_zero_to_one_an_error() {
        let parsed = parse_overrides("tensor-l1-usage-cap=0.6\n");
        assert_eq!(
            parsed.option_settings().tensor_l1_usage_cap,
            target::UsageCap::from_fraction(0.6)
        );
        check(
            "tensor-l1-usage-cap=1.5\n",
            expect![[r#"
                error[invalid-option-value] 20..23 "1.5": `tensor-l1-usage-cap` expects a fraction in (0, 1], found `1.5`
            "#]],
        );
    }

    #[test]
    fn the_memory_layout_analysis_option_wins_over_the_optimization_level_wherever_it_stands() {
        let settings = |text: &str| parse_overrides(text).option_settings().memory_layout_analysis;
        assert_eq!(settings("optimization-level=1"), Some(false));
        assert_eq!(settings("optimization-level=2"), Some(true));
        assert_eq!(
            settings("memory-layout-analysis-enabled=true optimization-level=1"),
            Some(true)
        );
        assert_eq!(settings("optimization-level=2 memory-layout-analysis-enabled=0"), Some(false));
        assert_eq!(settings("max-legal-layouts=8"), None);
        check(
            "memory-layout-analysis-enabled=maybe\n",
            expect![[r#"
                error[invalid-option-value] 31..36 "maybe": `memory-layout-analysis-enabled` expects `true` or `false`, found `maybe`
            "#]],
        );
    }

    #[test]
    fn a_repeated_entry_replaces_the_earlier_one_with_a_warning() {
        check(
            "override-output-layout=x=l1,x=dram\n",
            expect![[r#"
                x 28..29: OutputLayout(OutputLayoutOverride { grid: None, buffer: Some(Dram), memory_layout: None, page: None, dtype: None })
                warning[duplicate-override] 28..29 "x": a second `override-output-layout` entry for `x` replaces the one at offset 23
            "#]],
        );
    }

    #[test]
    fn a_file_of_duplicates_reports_at_most_the_cap_and_says_so() {
        let text = "override-output-layout=x=l1\n".repeat(MAX_OVERRIDE_ERRORS + 500);
        let parsed = parse_overrides(&text);
        assert_eq!(parsed.entries.len(), 1, "the last entry for `x` is the one in force");
        assert_eq!(parsed.errors.len(), MAX_OVERRIDE_ERRORS + 1);
        let last = parsed.errors.last().expect("there are errors");
        expect!["too-many-override-errors true: more than 1000 errors and warnings in the overrides; the rest are not reported"].assert_eq(&format!("{} {}: {}", last.code, last.is_warning, last.message));
    }
}
