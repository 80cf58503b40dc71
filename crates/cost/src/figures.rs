//! The hardware figures one cost model runs on, and the integer unit conversions built on them.
//!
//! Every number the model multiplies by lives in [`Figures`], so a target gets its own set
//! (Wormhole n150/n300, Blackhole p150) and a tuning run can change any one of them.
//! `docs/cost-model.md` gives the public source of each figure and marks the estimates.

use std::fmt;

use target::{Arch, Target};
use ttnn_types::{Grid, MathFidelity};

/// Per-target figures: clock, per-core math throughput, bandwidths and fixed costs.
///
/// Throughputs are per core per AI-clock cycle; bandwidths are per core per cycle except DRAM,
/// which the whole chip shares.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Figures {
    /// A label for reports (`wormhole n150`).
    pub name: String,
    /// AI (Tensix) clock in MHz.
    pub aiclk_mhz: u64,
    /// Worker grid the ops spread over.
    pub worker_grid: Grid,
    /// Matrix-engine FLOPs per core per cycle at LoFi (one fidelity pass).
    /// Each further pass (HiFi2/3/4) divides it.
    pub matmul_flops_per_cycle: u64,
    /// The share of that peak a matmul kernel sustains, in percent, by fidelity (LoFi, HiFi2,
    /// HiFi3, HiFi4): unpacking, packing and the math thread's loop overheads do not hide
    /// behind fewer fidelity passes. Fitted to tt-metal's GEMM report; see the doc.
    pub matmul_efficiency_pct: [u64; 4],
    /// Matrix-engine elementwise add/sub ops per core per cycle (mul divides by the passes).
    pub fpu_eltwise_ops_per_cycle: u64,
    /// Matrix-engine reduction FLOPs per core per cycle (sum/mean divide by the passes).
    pub fpu_reduce_flops_per_cycle: u64,
    /// Vector-unit (SFPU) lanes: elements one SFPU instruction processes per cycle.
    pub sfpu_lanes: u64,
    /// SFPU instructions per element beyond the arithmetic: the load from and store to Dst.
    pub sfpu_load_store_instructions: u64,
    /// SFPU arithmetic instructions per element for a transcendental or iterative function
    /// (exp, log, sigmoid, gelu, reciprocal, ...). An estimate; see the doc.
    pub sfpu_transcendental_ops: u64,
    /// Cycles a data-movement RISC-V core spends per element of a scalar loop (argmax's
    /// compare, with no floating-point hardware on those cores). Fitted; see the doc.
    pub riscv_cycles_per_element: u64,
    /// Peak DRAM bandwidth of the chip in GB/s (= bytes per ns).
    pub dram_peak_gb_s: u64,
    /// The share of the DRAM peak a streaming kernel reaches, in percent.
    pub dram_efficiency_pct: u64,
    /// NoC bytes per cycle one core can send or receive (one link).
    pub noc_bytes_per_cycle: u64,
    /// L1 bytes per cycle a core's unpackers read (and its packers write).
    pub l1_bytes_per_cycle: u64,
    /// Cycles from issuing a NoC read of another core's L1 to the first data back (tt-metal's
    /// measured initial latency of an L1 read). Charged where a kernel waits on a read before
    /// it can go on: the cross-core reduction of a sharded norm.
    pub noc_read_latency_cycles: u64,
    /// Cycles for a NoC write (a semaphore increment, a multicast) to land in another core's
    /// L1 (tt-metal's measured initial latency of an L1 write).
    pub noc_write_latency_cycles: u64,
    /// Fixed cost of launching one device op (dispatch, kernel start, completion), in ns.
    pub dispatch_ns: u64,
    /// The fidelity an op runs at when its config names none.
    pub default_fidelity: MathFidelity,
}

impl Figures {
    /// Wormhole n150: one chip, 8x8 workers at 1 GHz, 288 GB/s of GDDR6.
    #[must_use]
    pub fn wormhole_n150() -> Figures {
        Figures {
            name: "wormhole n150".to_owned(),
            aiclk_mhz: 1000,
            worker_grid: Grid::new(8, 8),
            matmul_flops_per_cycle: 4096,
            matmul_efficiency_pct: [53, 53, 65, 77],
            fpu_eltwise_ops_per_cycle: 128,
            fpu_reduce_flops_per_cycle: 512,
            sfpu_lanes: 32,
            sfpu_load_store_instructions: 2,
            sfpu_transcendental_ops: 10,
            riscv_cycles_per_element: 36,
            dram_peak_gb_s: 288,
            dram_efficiency_pct: 92,
            noc_bytes_per_cycle: 32,
            l1_bytes_per_cycle: 64,
            noc_read_latency_cycles: 259,
            noc_write_latency_cycles: 256,
            dispatch_ns: 3000,
            default_fidelity: MathFidelity::HiFi4,
        }
    }

    /// Wormhole n300, per chip: the same Tensix cores, clock and per-chip DRAM as n150.
    #[must_use]
    pub fn wormhole_n300() -> Figures {
        Figures { name: "wormhole n300 (per chip)".to_owned(), ..Figures::wormhole_n150() }
    }

    /// Blackhole p150: 10x13 workers at 1.35 GHz, 512 GB/s of GDDR6, a 64-byte NoC.
    #[must_use]
    pub fn blackhole_p150() -> Figures {
        Figures {
            name: "blackhole p150".to_owned(),
            aiclk_mhz: 1350,
            worker_grid: Grid::new(10, 13),
            dram_peak_gb_s: 512,
            dram_efficiency_pct: 98,
            noc_bytes_per_cycle: 64,
            noc_read_latency_cycles: 403,
            noc_write_latency_cycles: 404,
            ..Figures::wormhole_n150()
        }
    }

    /// The preset for the target's architecture, with the clock, DRAM bandwidth and worker
    /// grid the target itself states (a target file may override them).
    #[must_use]
    pub fn for_target(t: &Target) -> Figures {
        let base = match t.arch() {
            Arch::WormholeB0 if t.chips() > 1 => Figures::wormhole_n300(),
            Arch::WormholeB0 => Figures::wormhole_n150(),
            Arch::Blackhole => Figures::blackhole_p150(),
        };
        Figures {
            name: format!("{} ({})", t.name(), base.name),
            aiclk_mhz: t.aiclk_mhz(),
            worker_grid: t.worker_grid(),
            dram_peak_gb_s: t.dram_bandwidth_gb_s(),
            ..base
        }
    }

    /// Passes through the matrix engine for a fidelity: LoFi 1 ... HiFi4 4.
    #[must_use]
    pub fn passes(fidelity: MathFidelity) -> u64 {
        match fidelity {
            MathFidelity::LoFi => 1,
            MathFidelity::HiFi2 => 2,
            MathFidelity::HiFi3 => 3,
            MathFidelity::HiFi4 => 4,
        }
    }

    /// Worker cores in the grid, at least one.
    pub(crate) fn worker_cores(&self) -> u64 {
        self.worker_grid.volume().max(1)
    }

    /// Cycles to nanoseconds, rounded up.
    pub(crate) fn cycles_to_ns(&self, cycles: u64) -> u64 {
        ceil_ratio(u128::from(cycles) * 1000, u128::from(self.aiclk_mhz.max(1)))
    }

    /// Exact time for `bytes` through a per-core port of `bytes_per_cycle` on each of
    /// `cores` cores.
    pub(crate) fn per_core_time(&self, bytes: u64, bytes_per_cycle: u64, cores: u64) -> Ns {
        let per_us = u128::from(bytes_per_cycle.max(1))
            * u128::from(cores.max(1))
            * u128::from(self.aiclk_mhz.max(1));
        Ns::new(u128::from(bytes) * 1000, per_us)
    }

    /// Exact time for `bytes` of DRAM traffic read or written by `cores` cores: the chip's
    /// sustained DRAM bandwidth, unless the cores' own NoC ports are the narrower pipe.
    pub(crate) fn dram_time(&self, bytes: u64, cores: u64) -> Ns {
        // GB/s is bytes per ns, so ns = bytes / (peak * efficiency / 100).
        let dram = Ns::new(
            u128::from(bytes) * 100,
            u128::from(self.dram_peak_gb_s.max(1)) * u128::from(self.dram_efficiency_pct.max(1)),
        );
        dram.max(self.per_core_time(bytes, self.noc_bytes_per_cycle, cores))
    }
}

/// A duration in ns as an exact fraction, so terms add up before the single rounding and
/// equal workloads compare equal however they are split.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ns {
    num: u128,
    den: u128,
}

impl Ns {
    pub(crate) fn new(num: u128, den: u128) -> Ns {
        Ns { num, den: den.max(1) }
    }

    /// Rounded up to whole ns.
    pub(crate) fn ceil(self) -> u64 {
        ceil_ratio(self.num, self.den)
    }

    pub(crate) fn max(self, o: Ns) -> Ns {
        match (self.num.checked_mul(o.den), o.num.checked_mul(self.den)) {
            (Some(a), Some(b)) => {
                if a >= b {
                    self
                } else {
                    o
                }
            }
            _ => {
                if self.ceil() >= o.ceil() {
                    self
                } else {
                    o
                }
            }
        }
    }

    /// The exact sum; if the fractions are too large to add exactly, the sum of the
    /// rounded-up parts (still an upper bound, never a panic).
    pub(crate) fn add(self, o: Ns) -> Ns {
        let exact = (|| {
            let num = self.num.checked_mul(o.den)?.checked_add(o.num.checked_mul(self.den)?)?;
            let den = self.den.checked_mul(o.den)?;
            let g = gcd(num, den);
            Some(Ns::new(num / g, den / g))
        })();
        exact.unwrap_or_else(|| {
            Ns::new(u128::from(self.ceil()).saturating_add(u128::from(o.ceil())), 1)
        })
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.name)?;
        writeln!(
            f,
            "  clock                  {} MHz, {} workers",
            self.aiclk_mhz, self.worker_grid
        )?;
        writeln!(
            f,
            "  matmul                 {} FLOP/cycle/core (LoFi), sustained {:?}% (LoFi..HiFi4)",
            self.matmul_flops_per_cycle, self.matmul_efficiency_pct
        )?;
        writeln!(f, "  fpu eltwise            {} op/cycle/core", self.fpu_eltwise_ops_per_cycle)?;
        writeln!(
            f,
            "  fpu reduce             {} FLOP/cycle/core",
            self.fpu_reduce_flops_per_cycle
        )?;
        writeln!(
            f,
            "  sfpu                   {} lanes, +{} load/store, transcendental {} ops",
            self.sfpu_lanes, self.sfpu_load_store_instructions, self.sfpu_transcendental_ops
        )?;
        writeln!(f, "  riscv scalar loop      {} cycles/element", self.riscv_cycles_per_element)?;
        writeln!(
            f,
            "  dram                   {} GB/s peak, {}% sustained",
            self.dram_peak_gb_s, self.dram_efficiency_pct
        )?;
        writeln!(f, "  noc                    {} B/cycle/core", self.noc_bytes_per_cycle)?;
        writeln!(f, "  l1                     {} B/cycle/core", self.l1_bytes_per_cycle)?;
        writeln!(
            f,
            "  noc latency            read {} cycles, write {} cycles",
            self.noc_read_latency_cycles, self.noc_write_latency_cycles
        )?;
        writeln!(f, "  dispatch               {} ns/op", self.dispatch_ns)?;
        write!(f, "  default fidelity       {}", self.default_fidelity.keyword())
    }
}

/// `ceil(num / den)` clamped to `u64`; a zero denominator yields `u64::MAX`, never a panic.
pub(crate) fn ceil_ratio(num: u128, den: u128) -> u64 {
    if den == 0 {
        return u64::MAX;
    }
    u64::try_from(num.div_ceil(den)).unwrap_or(u64::MAX)
}
