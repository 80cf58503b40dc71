//! Device target descriptors: the hardware numbers the op model and the planner budget against.
//!
//! A [`Target`] is a plain value (`Eq + Hash`, no floats inside) so it can become a salsa input.
//! Three presets are built in ([`Target::builtin`]): Wormhole n150 (the default), Wormhole n300
//! (described per chip) and Blackhole p150.
//! A user file in TOML or JSON can start from a preset with `base = "n150"` and override a few
//! fields; every value is validated and errors name the field (and, for TOML, where it is).
//!
//! The numbers come from tt-mlir's system descriptors and `getUsableL1PerCore`, summarised in
//! our research notes (`opmodel.md` §2.1–2.2).

mod file;
pub mod limits;

use std::{fmt, ops::Range};

use ttnn_types::{DataType, Grid};

pub use crate::file::TargetOverrides;

/// The chip architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arch {
    WormholeB0,
    Blackhole,
}

impl Arch {
    #[must_use]
    pub fn from_keyword(s: &str) -> Option<Arch> {
        match s {
            "wormhole_b0" | "wormhole" => Some(Arch::WormholeB0),
            "blackhole" => Some(Arch::Blackhole),
            _ => None,
        }
    }

    #[must_use]
    pub fn keyword(self) -> &'static str {
        match self {
            Arch::WormholeB0 => "wormhole_b0",
            Arch::Blackhole => "blackhole",
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// The fraction of unreserved L1 tensors may use (`ttnn.tensor_l1_usage_cap`).
///
/// Stored in parts per million so the target stays `Eq + Hash`; 1e-6 is far finer than any
/// cap anyone sets (upstream has used 0.8, 1.0 and 0.95).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UsageCap(u32);

impl UsageCap {
    const ONE: u32 = 1_000_000;

    /// The cap tt-mlir uses by default since Nov 2025.
    pub const DEFAULT: UsageCap = UsageCap(950_000);

    /// A cap in (0, 1]; `None` for anything else, NaN included.
    #[must_use]
    pub fn from_fraction(cap: f64) -> Option<UsageCap> {
        if !(cap > 0.0 && cap <= 1.0) {
            return None;
        }
        let ppm = (cap * f64::from(Self::ONE)).round();
        // The range check above bounds ppm to [0, 1e6], so the cast is exact.
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "bounded")]
        let ppm = ppm as u32;
        (ppm > 0).then_some(UsageCap(ppm))
    }

    #[must_use]
    pub fn parts_per_million(self) -> u32 {
        self.0
    }

    #[must_use]
    pub fn as_fraction(self) -> f64 {
        f64::from(self.0) / f64::from(Self::ONE)
    }

    /// `floor(cap * bytes)`, computed exactly in integers.
    #[must_use]
    pub fn apply(self, bytes: u64) -> u64 {
        let v = u128::from(bytes) * u128::from(self.0) / u128::from(Self::ONE);
        u64::try_from(v).unwrap_or(u64::MAX)
    }
}

impl fmt::Display for UsageCap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.as_fraction())
    }
}

/// One device (one chip) as the op model sees it. All sizes are bytes.
///
/// Fields are private because they carry invariants (checked by [`Target::with_overrides`]);
/// read them through the getters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    name: String,
    arch: Arch,
    chips: u64,
    l1_size: u64,
    l1_unreserved_base: u64,
    l1_usage_cap: UsageCap,
    l1_const_eval_reserved: u64,
    l1_small_size: u64,
    worker_grid: Grid,
    dram_channels: u64,
    dram_channel_size: u64,
    l1_alignment: u64,
    dram_alignment: u64,
    pcie_alignment: u64,
    dst_tiles: u64,
    num_cbs: u64,
    aiclk_mhz: u64,
    dram_bandwidth_gb_s: u64,
}

/// The names [`Target::builtin`] accepts, canonical name first in each group.
pub const BUILTIN_NAMES: &[&str] = &[
    "n150",
    "n150s",
    "wormhole",
    "wormhole_b0",
    "n300",
    "n300s",
    "p150",
    "p150a",
    "p150b",
    "blackhole",
];

impl Target {
    /// Wormhole n150: one chip, 8x8 worker grid.
    ///
    /// `l1_unreserved_base = 103712` is the most common value in real Wormhole system
    /// descriptors (they range 98304..104224; the mock descriptor's 1024 is not realistic).
    /// With the 0.95 cap this gives 1 325 652 usable bytes per core.
    /// The clock (1 GHz AI clock) and DRAM bandwidth (288 GB/s, 12 GB GDDR6) are Tenstorrent's
    /// published n150 product specifications; only a future cost model reads them.
    #[must_use]
    pub fn n150() -> Target {
        Target {
            name: "n150".to_owned(),
            arch: Arch::WormholeB0,
            chips: 1,
            l1_size: 1_499_136,
            l1_unreserved_base: 103_712,
            l1_usage_cap: UsageCap::DEFAULT,
            l1_const_eval_reserved: 0,
            l1_small_size: 64 * 1024,
            worker_grid: Grid::new(8, 8),
            dram_channels: 12,
            dram_channel_size: 1 << 30,
            l1_alignment: 16,
            dram_alignment: 32,
            pcie_alignment: 32,
            dst_tiles: 16,
            num_cbs: 32,
            aiclk_mhz: 1000,
            dram_bandwidth_gb_s: 288,
        }
    }

    /// Wormhole n300, described per chip (the op model works per device).
    ///
    /// The worker grid is 8x8 since tt-mlir 7214507b85 (Jan 2025, ETH dispatch); older
    /// descriptors used 8x7. Per chip the board's 576 GB/s is 288 GB/s.
    #[must_use]
    pub fn n300() -> Target {
        Target { name: "n300".to_owned(), chips: 2, ..Target::n150() }
    }

    /// Blackhole p150 with the default system descriptor's 10x13 worker grid.
    ///
    /// The op-model mock device harvests two more columns (10x11); a user file can say
    /// `base = "p150"` and `worker_grid = { rows = 10, cols = 11 }` to match it.
    /// `l1_unreserved_base = 98304` is the default descriptor's value: 1 400 832 usable bytes.
    /// Clock (1.35 GHz AI clock) and DRAM bandwidth (512 GB/s, 32 GB GDDR6) are Tenstorrent's
    /// published p150 specifications.
    #[must_use]
    pub fn p150() -> Target {
        Target {
            name: "p150".to_owned(),
            arch: Arch::Blackhole,
            chips: 1,
            l1_size: 1_572_864,
            l1_unreserved_base: 98_304,
            l1_usage_cap: UsageCap::DEFAULT,
            l1_const_eval_reserved: 0,
            l1_small_size: 64 * 1024,
            worker_grid: Grid::new(10, 13),
            dram_channels: 8,
            dram_channel_size: 4_278_190_080,
            l1_alignment: 16,
            dram_alignment: 64,
            pcie_alignment: 64,
            dst_tiles: 16,
            num_cbs: 32,
            aiclk_mhz: 1350,
            dram_bandwidth_gb_s: 512,
        }
    }

    /// A preset by name or alias (`n150`, `wormhole_b0`, `n300`, `p150`, `blackhole`, ...).
    #[must_use]
    pub fn builtin(name: &str) -> Option<Target> {
        match name.trim().to_ascii_lowercase().as_str() {
            "n150" | "n150s" | "wormhole" | "wormhole_b0" => Some(Target::n150()),
            "n300" | "n300s" => Some(Target::n300()),
            "p150" | "p150a" | "p150b" | "blackhole" => Some(Target::p150()),
            _ => None,
        }
    }

    /// The target a `--target`-style argument names: n150 without one, a builtin by name or
    /// alias, else a target file (JSON when it ends in `.json`, else TOML) whose text `read`
    /// gives. Reading is the caller's, so each front end keeps its own file checks.
    pub fn load<E>(
        arg: Option<&str>,
        read: impl FnOnce(&str) -> Result<String, E>,
    ) -> Result<Target, LoadError<E>> {
        let Some(arg) = arg else { return Ok(Target::n150()) };
        if let Some(t) = Target::builtin(arg) {
            return Ok(t);
        }
        let text =
            read(arg).map_err(|error| LoadError::Unreadable { arg: arg.to_owned(), error })?;
        let parsed = if arg.ends_with(".json") {
            Target::from_json_str(&text)
        } else {
            Target::from_toml_str(&text)
        };
        parsed.map_err(|error| LoadError::Invalid { path: arg.to_owned(), error })
    }

    /// Parses a TOML target file. See [`TargetOverrides`] for the keys.
    pub fn from_toml_str(text: &str) -> Result<Target, TargetError> {
        file::from_toml(text)
    }

    /// Parses a JSON target file (an object with the same keys as the TOML form).
    pub fn from_json_str(text: &str) -> Result<Target, TargetError> {
        file::from_json(text)
    }

    /// This target with some fields replaced; the result is validated as a whole.
    pub fn with_overrides(&self, o: &TargetOverrides) -> Result<Target, TargetError> {
        file::apply(self.clone(), o, &|_| (None, None))
    }

    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
    #[must_use]
    pub fn arch(&self) -> Arch {
        self.arch
    }
    /// Chips on the board; everything else describes one chip.
    #[must_use]
    pub fn chips(&self) -> u64 {
        self.chips
    }
    #[must_use]
    pub fn l1_size(&self) -> u64 {
        self.l1_size
    }
    /// The first L1 address not reserved for firmware; circular buffers grow up from here.
    #[must_use]
    pub fn l1_unreserved_base(&self) -> u64 {
        self.l1_unreserved_base
    }
    #[must_use]
    pub fn l1_usage_cap(&self) -> UsageCap {
        self.l1_usage_cap
    }
    /// This target with tensors allowed `cap` of the unreserved L1 (tt-mlir's
    /// `tensor-l1-usage-cap`).
    #[must_use]
    pub fn with_l1_usage_cap(&self, cap: UsageCap) -> Target {
        Target { l1_usage_cap: cap, ..self.clone() }
    }
    /// L1 per core kept for const-eval tensors (`ttnn.l1_const_eval_usage`), default 0.
    #[must_use]
    pub fn l1_const_eval_reserved(&self) -> u64 {
        self.l1_const_eval_reserved
    }
    /// The L1_SMALL region (64 KiB upstream); informational, already inside the cap headroom.
    #[must_use]
    pub fn l1_small_size(&self) -> u64 {
        self.l1_small_size
    }
    /// Worker (compute-with-storage) grid, rows x cols.
    #[must_use]
    pub fn worker_grid(&self) -> Grid {
        self.worker_grid
    }
    #[must_use]
    pub fn num_worker_cores(&self) -> u64 {
        self.worker_grid.volume()
    }
    #[must_use]
    pub fn dram_channels(&self) -> u64 {
        self.dram_channels
    }
    #[must_use]
    pub fn dram_channel_size(&self) -> u64 {
        self.dram_channel_size
    }
    #[must_use]
    pub fn dram_size(&self) -> u64 {
        self.dram_channels.saturating_mul(self.dram_channel_size)
    }
    #[must_use]
    pub fn l1_alignment(&self) -> u64 {
        self.l1_alignment
    }
    #[must_use]
    pub fn dram_alignment(&self) -> u64 {
        self.dram_alignment
    }
    #[must_use]
    pub fn pcie_alignment(&self) -> u64 {
        self.pcie_alignment
    }
    /// DST register capacity in tiles (full sync).
    #[must_use]
    pub fn dst_tiles(&self) -> u64 {
        self.dst_tiles
    }
    /// DST tiles usable per half in the default half-sync mode.
    #[must_use]
    pub fn dst_tiles_half_sync(&self) -> u64 {
        self.dst_tiles / 2
    }
    /// Circular buffers per core.
    #[must_use]
    pub fn num_cbs(&self) -> u64 {
        self.num_cbs
    }
    /// AI (Tensix) clock in MHz, a published figure; not read by the op model.
    #[must_use]
    pub fn aiclk_mhz(&self) -> u64 {
        self.aiclk_mhz
    }
    /// Peak DRAM bandwidth per chip in GB/s, a published figure; not read by the op model.
    #[must_use]
    pub fn dram_bandwidth_gb_s(&self) -> u64 {
        self.dram_bandwidth_gb_s
    }

    /// Bytes of one 32x32 tile of `dtype`.
    #[must_use]
    pub fn tile_bytes(&self, dtype: DataType) -> u64 {
        dtype.tile_bytes()
    }

    /// The per-core L1 budget for one op: circular buffers plus tensors must fit in it.
    ///
    /// `floor(cap * (l1_size - l1_unreserved_base)) - l1_const_eval_reserved`, as tt-mlir's
    /// `getUsableL1PerCore` computes it.
    #[must_use]
    pub fn usable_l1_per_core(&self) -> u64 {
        self.l1_usage_cap
            .apply(self.l1_size.saturating_sub(self.l1_unreserved_base))
            .saturating_sub(self.l1_const_eval_reserved)
    }
}

impl Default for Target {
    /// The embedded default: Wormhole n150.
    fn default() -> Target {
        Target::n150()
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}, worker grid {}, {} usable L1 bytes per core)",
            self.name,
            self.arch,
            self.worker_grid,
            self.usable_l1_per_core()
        )
    }
}

/// Why a target file or override was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetError {
    /// The offending key, when the error is about one.
    pub field: Option<String>,
    pub message: String,
    /// Byte range in the source text (TOML only).
    pub span: Option<Range<usize>>,
    /// 1-based line and column of the error in the source text.
    pub line_col: Option<(usize, usize)>,
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((line, col)) = self.line_col {
            write!(f, "{line}:{col}: ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "`{field}`: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for TargetError {}

/// Why [`Target::load`] gave no target; `E` is the reader's error.
#[derive(Debug)]
pub enum LoadError<E> {
    /// The argument is no builtin name, and no file could be read under it.
    Unreadable { arg: String, error: E },
    /// The target file was read but does not describe a valid target.
    Invalid { path: String, error: TargetError },
}

impl<E> LoadError<E> {
    /// What went wrong, without the reader's error (the caller adds it in its own form):
    /// `` `x` is neither a builtin target (...) nor a readable target file `` or
    /// `path:line:col: message` (`path: message` when the position is unknown).
    #[must_use]
    pub fn headline(&self) -> String {
        match self {
            LoadError::Unreadable { arg, .. } => format!(
                "`{arg}` is neither a builtin target ({}) nor a readable target file",
                BUILTIN_NAMES.join(", ")
            ),
            LoadError::Invalid { path, error } if error.line_col.is_some() => {
                format!("{path}:{error}")
            }
            LoadError::Invalid { path, error } => format!("{path}: {error}"),
        }
    }
}

impl<E: fmt::Display> fmt::Display for LoadError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.headline())?;
        match self {
            LoadError::Unreadable { error, .. } => write!(f, ": {error}"),
            LoadError::Invalid { .. } => Ok(()),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for LoadError<E> {}

#[cfg(test)]
mod tests;
