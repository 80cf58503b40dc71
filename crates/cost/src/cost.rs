//! The result types: one op's cost, what bounds it, and a whole plan's cost.

use std::fmt;

/// What dominates an op's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Bound {
    /// The math units: compute time is at least the memory time and the dispatch cost.
    Compute,
    /// DRAM traffic is the largest memory term and memory beats compute and dispatch.
    Dram,
    /// Core-to-core NoC traffic is the largest memory term.
    Noc,
    /// Reading and writing the cores' own L1 is the largest memory term.
    L1,
    /// Cores waiting on each other: the latency of a cross-core reduction (a sharded norm
    /// gathering and broadcasting its row statistics) exceeds the kernel's compute and memory
    /// time.
    Sync,
    /// The fixed dispatch cost is larger than the kernel's own time.
    Overhead,
    /// No device kernel runs at all: a view, an allocation, host plumbing.
    #[default]
    Free,
}

impl Bound {
    #[must_use]
    pub fn keyword(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Dram => "dram",
            Bound::Noc => "noc",
            Bound::L1 => "l1",
            Bound::Sync => "sync",
            Bound::Overhead => "overhead",
            Bound::Free => "free",
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// The estimated device time of one op (or reshard, or spill) and how it breaks down.
///
/// `total_ns = dispatch_ns + max(compute_ns, memory_ns) + sync_ns`, where `memory_ns` is the sum of the
/// DRAM, NoC and L1 terms computed exactly and rounded up once (each term is also rounded up
/// on its own for reporting, so they may add up to one or two ns more than `memory_ns`).
/// All zero when `bound == Bound::Free`. Byte counts are totals over all cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OpCost {
    /// Math time of the busiest core.
    pub compute_ns: u64,
    /// DRAM traffic time: the chip's sustained DRAM bandwidth, or the running cores' NoC
    /// ports when they are fewer than DRAM can feed.
    pub dram_ns: u64,
    /// L1 read and write time, every core streaming its share.
    pub l1_ns: u64,
    /// Core-to-core NoC time (remote L1 reads and writes, multicasts, reshards).
    pub noc_ns: u64,
    /// DRAM, NoC and L1 time together.
    pub memory_ns: u64,
    /// The fixed per-op dispatch cost.
    pub dispatch_ns: u64,
    /// Time the cores spend waiting on each other on the kernel's critical path: NoC
    /// latencies, semaphore handshakes and the one core's combine of a sharded norm's
    /// cross-core reduction. 0 for every other op.
    pub sync_ns: u64,
    pub total_ns: u64,
    /// Operations executed, on tile-padded shapes (a transcendental SFPU function counts
    /// its arithmetic instructions).
    pub flops: u64,
    pub dram_bytes: u64,
    /// Bytes read from or written to the cores' L1, staging of DRAM operands included.
    pub l1_bytes: u64,
    pub noc_bytes: u64,
    /// Cores the op runs on (0 when nothing runs).
    pub cores: u64,
    pub bound: Bound,
}

impl OpCost {
    /// The cost of something that launches no kernel.
    #[must_use]
    pub fn free() -> OpCost {
        OpCost::default()
    }
}

impl fmt::Display for OpCost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.bound == Bound::Free {
            return f.write_str("free: no device kernel runs");
        }
        write!(
            f,
            "{} ns = dispatch {} + max(compute {}, memory {} ~ dram {} + noc {} + l1 {})",
            self.total_ns,
            self.dispatch_ns,
            self.compute_ns,
            self.memory_ns,
            self.dram_ns,
            self.noc_ns,
            self.l1_ns,
        )?;
        if self.sync_ns > 0 {
            write!(f, " + sync {}", self.sync_ns)?;
        }
        writeln!(f, ", {}-bound", self.bound)?;
        write!(
            f,
            "{} flops on {} cores; bytes dram {}, noc {}, l1 {}",
            self.flops, self.cores, self.dram_bytes, self.noc_bytes, self.l1_bytes
        )
    }
}

/// The cost of a whole plan: its ops, the reshards it inserts and the spills it makes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PlanCost {
    pub total_ns: u64,
    /// Time in the plan's own ops.
    pub op_ns: u64,
    /// Time in inserted reshards (`to_memory_config` / `to_layout`).
    pub reshard_ns: u64,
    /// Time in spills to DRAM.
    pub spill_ns: u64,
    pub flops: u64,
    pub dram_bytes: u64,
    pub noc_bytes: u64,
    pub l1_bytes: u64,
    /// One cost per step, in step order.
    pub steps: Vec<OpCost>,
}

impl fmt::Display for PlanCost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ns = ops {} + reshards {} + spills {} over {} steps; {} flops; bytes dram {}, noc {}, l1 {}",
            self.total_ns,
            self.op_ns,
            self.reshard_ns,
            self.spill_ns,
            self.steps.len(),
            self.flops,
            self.dram_bytes,
            self.noc_bytes,
            self.l1_bytes
        )
    }
}
