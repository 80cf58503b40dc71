//! Target files (TOML or JSON) and field overrides, with validation.
//!
//! Both formats are read key by key into [`TargetOverrides`] so every error can name its key;
//! TOML errors also carry the key's byte range and line/column.
//!
//! ```toml
//! base = "p150"
//! worker_grid = { rows = 10, cols = 11 }   # the op-model mock device
//! l1_usage_cap = 0.9
//! ```

use std::ops::Range;

use serde::{Deserialize, de::DeserializeOwned};
use ttnn_types::Grid;

use crate::{Arch, Target, TargetError, UsageCap, limits};

/// Fields a target file may set; `None` keeps the base target's value.
///
/// `base` names the preset to start from. Without it, every other field must be given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetOverrides {
    pub base: Option<String>,
    pub name: Option<String>,
    pub arch: Option<Arch>,
    pub chips: Option<u64>,
    pub l1_size: Option<u64>,
    pub l1_unreserved_base: Option<u64>,
    pub l1_usage_cap: Option<f64>,
    pub l1_const_eval_reserved: Option<u64>,
    pub l1_small_size: Option<u64>,
    pub worker_grid: Option<Grid>,
    pub dram_channels: Option<u64>,
    pub dram_channel_size: Option<u64>,
    pub l1_alignment: Option<u64>,
    pub dram_alignment: Option<u64>,
    pub pcie_alignment: Option<u64>,
    pub dst_tiles: Option<u64>,
    pub num_cbs: Option<u64>,
    pub aiclk_mhz: Option<u64>,
    pub dram_bandwidth_gb_s: Option<u64>,
}

/// Every key a file may use besides `base`, in declaration (and validation) order.
const KEYS: &[&str] = &[
    "name",
    "arch",
    "chips",
    "l1_size",
    "l1_unreserved_base",
    "l1_usage_cap",
    "l1_const_eval_reserved",
    "l1_small_size",
    "worker_grid",
    "dram_channels",
    "dram_channel_size",
    "l1_alignment",
    "dram_alignment",
    "pcie_alignment",
    "dst_tiles",
    "num_cbs",
    "aiclk_mhz",
    "dram_bandwidth_gb_s",
];

/// `worker_grid = { rows = 8, cols = 8 }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GridSpec {
    rows: u64,
    cols: u64,
}

/// One key of a parsed file: its value and, for TOML, where the key and the value are.
struct Entry<V> {
    key: String,
    value: V,
    key_span: Option<Range<usize>>,
    value_span: Option<Range<usize>>,
}

/// A format-specific value that can be deserialized into a field's type.
trait FieldValue {
    fn get<T: DeserializeOwned>(&self) -> Result<T, String>;
}

impl FieldValue for toml::Value {
    fn get<T: DeserializeOwned>(&self) -> Result<T, String> {
        self.clone().try_into::<T>().map_err(|e| e.message().to_owned())
    }
}

impl FieldValue for serde_json::Value {
    fn get<T: DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_value::<T>(self.clone()).map_err(|e| e.to_string())
    }
}

pub(crate) fn from_toml(text: &str) -> Result<Target, TargetError> {
    let table = toml::from_str::<toml::Table>(text).map_err(|e| {
        let span = e.span();
        TargetError {
            field: None,
            message: e.message().trim_end().to_owned(),
            line_col: span.as_ref().map(|s| line_col(text, s.start)),
            span,
        }
    })?;
    // A second, span-preserving parse of the same (already valid) text locates each key.
    let spans: Vec<(String, Range<usize>, Range<usize>)> = match toml::de::DeTable::parse(text) {
        Ok(doc) => doc
            .get_ref()
            .iter()
            .map(|(k, v)| (k.get_ref().to_string(), k.span(), v.span()))
            .collect(),
        Err(_) => Vec::new(),
    };
    let mut entries: Vec<Entry<toml::Value>> = table
        .into_iter()
        .map(|(key, value)| {
            let found = spans.iter().find(|(k, _, _)| *k == key);
            Entry {
                key_span: found.map(|(_, ks, _)| ks.clone()),
                value_span: found.map(|(_, _, vs)| vs.clone()),
                key,
                value,
            }
        })
        .collect();
    // Report the first problem in source order, whatever order the table iterates in.
    entries.sort_by_key(|e| e.key_span.as_ref().map_or(usize::MAX, |s| s.start));
    from_entries(entries, Some(text))
}

pub(crate) fn from_json(text: &str) -> Result<Target, TargetError> {
    let map =
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text).map_err(|e| {
            let msg = e.to_string();
            // serde_json appends " at line L column C"; we report the position separately.
            let message = msg.split(" at line ").next().unwrap_or(&msg).to_owned();
            TargetError { field: None, message, span: None, line_col: Some((e.line(), e.column())) }
        })?;
    let entries = map
        .into_iter()
        .map(|(key, value)| Entry { key, value, key_span: None, value_span: None })
        .collect();
    from_entries(entries, None)
}

fn from_entries<V: FieldValue>(
    entries: Vec<Entry<V>>,
    text: Option<&str>,
) -> Result<Target, TargetError> {
    let err_at = |field: &str, span: Option<Range<usize>>, message: String| TargetError {
        field: Some(field.to_owned()),
        line_col: match (text, &span) {
            (Some(t), Some(s)) => Some(line_col(t, s.start)),
            _ => None,
        },
        span,
        message,
    };
    let mut o = TargetOverrides::default();
    for e in &entries {
        let bad = |m: String| err_at(&e.key, e.value_span.clone(), m);
        let int = || e.value.get::<u64>().map(Some).map_err(bad);
        match e.key.as_str() {
            "base" => o.base = Some(e.value.get::<String>().map_err(bad)?),
            "name" => o.name = Some(e.value.get::<String>().map_err(bad)?),
            "arch" => {
                let s = e.value.get::<String>().map_err(bad)?;
                let arch = Arch::from_keyword(&s).ok_or_else(|| {
                    bad(format!("unknown arch `{s}`, expected `wormhole_b0` or `blackhole`"))
                })?;
                o.arch = Some(arch);
            }
            "l1_usage_cap" => o.l1_usage_cap = Some(e.value.get::<f64>().map_err(bad)?),
            "worker_grid" => {
                let g = e.value.get::<GridSpec>().map_err(bad)?;
                o.worker_grid = Some(Grid::new(g.rows, g.cols));
            }
            "chips" => o.chips = int()?,
            "l1_size" => o.l1_size = int()?,
            "l1_unreserved_base" => o.l1_unreserved_base = int()?,
            "l1_const_eval_reserved" => o.l1_const_eval_reserved = int()?,
            "l1_small_size" => o.l1_small_size = int()?,
            "dram_channels" => o.dram_channels = int()?,
            "dram_channel_size" => o.dram_channel_size = int()?,
            "l1_alignment" => o.l1_alignment = int()?,
            "dram_alignment" => o.dram_alignment = int()?,
            "pcie_alignment" => o.pcie_alignment = int()?,
            "dst_tiles" => o.dst_tiles = int()?,
            "num_cbs" => o.num_cbs = int()?,
            "aiclk_mhz" => o.aiclk_mhz = int()?,
            "dram_bandwidth_gb_s" => o.dram_bandwidth_gb_s = int()?,
            other => {
                return Err(err_at(
                    other,
                    e.key_span.clone(),
                    format!("unknown key, expected `base` or one of: {}", KEYS.join(", ")),
                ));
            }
        }
    }
    let span_of = |field: &str| -> Option<Range<usize>> {
        entries.iter().find(|e| e.key == field).and_then(|e| e.value_span.clone())
    };
    let base = match &o.base {
        Some(name) => Target::builtin(name).ok_or_else(|| {
            err_at(
                "base",
                span_of("base"),
                format!("unknown base target `{name}`, expected one of: n150, n300, p150"),
            )
        })?,
        None => {
            let missing = missing_without_base(&o);
            if !missing.is_empty() {
                return Err(TargetError {
                    field: None,
                    message: format!(
                        "no `base` target, so every key is required; missing: {}",
                        missing.join(", ")
                    ),
                    span: None,
                    line_col: None,
                });
            }
            Target::n150()
        }
    };
    let locate = |field: &str| {
        let span = span_of(field);
        let line_col = match (text, &span) {
            (Some(t), Some(s)) => Some(line_col(t, s.start)),
            _ => None,
        };
        (span, line_col)
    };
    apply(base, &o, &locate)
}

fn missing_without_base(o: &TargetOverrides) -> Vec<&'static str> {
    let present = [
        o.name.is_some(),
        o.arch.is_some(),
        o.chips.is_some(),
        o.l1_size.is_some(),
        o.l1_unreserved_base.is_some(),
        o.l1_usage_cap.is_some(),
        o.l1_const_eval_reserved.is_some(),
        o.l1_small_size.is_some(),
        o.worker_grid.is_some(),
        o.dram_channels.is_some(),
        o.dram_channel_size.is_some(),
        o.l1_alignment.is_some(),
        o.dram_alignment.is_some(),
        o.pcie_alignment.is_some(),
        o.dst_tiles.is_some(),
        o.num_cbs.is_some(),
        o.aiclk_mhz.is_some(),
        o.dram_bandwidth_gb_s.is_some(),
    ];
    KEYS.iter().zip(present).filter(|(_, p)| !p).map(|(k, _)| *k).collect()
}

type Locate<'a> = dyn Fn(&str) -> (Option<Range<usize>>, Option<(usize, usize)>) + 'a;

/// Replaces the given fields of `t` and validates the result, in field order.
pub(crate) fn apply(
    mut t: Target,
    o: &TargetOverrides,
    locate: &Locate<'_>,
) -> Result<Target, TargetError> {
    let fail = |field: &str, message: String| {
        let (span, line_col) = locate(field);
        Err(TargetError { field: Some(field.to_owned()), message, span, line_col })
    };
    if let Some(v) = &o.name {
        t.name.clone_from(v);
    }
    macro_rules! set {
        ($($f:ident),*) => { $( if let Some(v) = o.$f { t.$f = v; } )* };
    }
    set!(
        arch,
        chips,
        l1_size,
        l1_unreserved_base,
        l1_const_eval_reserved,
        l1_small_size,
        worker_grid,
        dram_channels,
        dram_channel_size,
        l1_alignment,
        dram_alignment,
        pcie_alignment,
        dst_tiles,
        num_cbs,
        aiclk_mhz,
        dram_bandwidth_gb_s
    );
    if let Some(cap) = o.l1_usage_cap {
        match UsageCap::from_fraction(cap) {
            Some(c) => t.l1_usage_cap = c,
            None => return fail("l1_usage_cap", format!("must be in (0, 1], got {cap}")),
        }
    }

    if t.name.trim().is_empty() {
        return fail("name", "must not be empty".to_owned());
    }
    // Physical bounds first: a value past them is a typo or hostile, and would make the
    // planner enumerate grids or multiply sizes beyond what any device has (a 100000x100000
    // grid takes tens of GB to plan for; `rows = 2^64 - 1` overflows capacity arithmetic).
    for (field, value, max) in [
        ("chips", t.chips, limits::MAX_CHIPS),
        ("l1_size", t.l1_size, limits::MAX_L1_SIZE),
        ("l1_small_size", t.l1_small_size, limits::MAX_L1_SIZE),
        ("dram_channels", t.dram_channels, limits::MAX_DRAM_CHANNELS),
        ("dram_channel_size", t.dram_channel_size, limits::MAX_DRAM_CHANNEL_SIZE),
        ("l1_alignment", t.l1_alignment, limits::MAX_ALIGNMENT),
        ("dram_alignment", t.dram_alignment, limits::MAX_ALIGNMENT),
        ("pcie_alignment", t.pcie_alignment, limits::MAX_ALIGNMENT),
        ("dst_tiles", t.dst_tiles, limits::MAX_DST_TILES),
        ("num_cbs", t.num_cbs, limits::MAX_CBS),
        ("aiclk_mhz", t.aiclk_mhz, limits::MAX_AICLK_MHZ),
        ("dram_bandwidth_gb_s", t.dram_bandwidth_gb_s, limits::MAX_DRAM_BANDWIDTH_GB_S),
    ] {
        if value > max {
            return fail(field, format!("must be at most {max}, got {value}"));
        }
    }
    let g = t.worker_grid;
    if g.rows > limits::MAX_GRID_SIDE || g.cols > limits::MAX_GRID_SIDE {
        return fail(
            "worker_grid",
            format!(
                "rows and cols must each be at most {} (no Tenstorrent chip has a larger Tensix \
                 grid), got {} rows x {} cols",
                limits::MAX_GRID_SIDE,
                g.rows,
                g.cols
            ),
        );
    }
    if t.chips == 0 {
        return fail("chips", "must be at least 1".to_owned());
    }
    if t.l1_size == 0 {
        return fail("l1_size", "must be positive".to_owned());
    }
    if t.l1_unreserved_base >= t.l1_size {
        return fail(
            "l1_unreserved_base",
            format!("must be below l1_size ({}), got {}", t.l1_size, t.l1_unreserved_base),
        );
    }
    let capped = t.l1_usage_cap.apply(t.l1_size - t.l1_unreserved_base);
    if t.l1_const_eval_reserved >= capped {
        return fail(
            "l1_const_eval_reserved",
            format!(
                "must be below the capped unreserved L1 ({capped} bytes), got {}",
                t.l1_const_eval_reserved
            ),
        );
    }
    if t.l1_small_size >= t.l1_size {
        return fail("l1_small_size", format!("must be below l1_size ({})", t.l1_size));
    }
    if t.worker_grid.rows == 0 || t.worker_grid.cols == 0 {
        return fail("worker_grid", format!("must have at least one core, got {}", t.worker_grid));
    }
    if t.dram_channels == 0 {
        return fail("dram_channels", "must be at least 1".to_owned());
    }
    if t.dram_channel_size == 0 {
        return fail("dram_channel_size", "must be positive".to_owned());
    }
    for (field, v) in [
        ("l1_alignment", t.l1_alignment),
        ("dram_alignment", t.dram_alignment),
        ("pcie_alignment", t.pcie_alignment),
    ] {
        if !v.is_power_of_two() {
            return fail(field, format!("must be a power of two, got {v}"));
        }
    }
    if t.dst_tiles < 2 || !t.dst_tiles.is_multiple_of(2) {
        return fail("dst_tiles", format!("must be even and at least 2, got {}", t.dst_tiles));
    }
    if t.num_cbs == 0 {
        return fail("num_cbs", "must be at least 1".to_owned());
    }
    if t.aiclk_mhz == 0 {
        return fail("aiclk_mhz", "must be positive".to_owned());
    }
    if t.dram_bandwidth_gb_s == 0 {
        return fail("dram_bandwidth_gb_s", "must be positive".to_owned());
    }
    Ok(t)
}

/// 1-based line and column (in chars) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
