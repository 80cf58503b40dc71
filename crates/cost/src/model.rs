//! [`CostModel`]: per-op, per-reshard, per-spill and per-plan time estimates, and the plan
//! lower bound.

use opmodel::{OpConfig, OpKind, TensorDesc};
use target::Target;
use ttnn_types::{
    BufferType, DataType, MatmulProgramConfig, PageLayout, TensorMemoryLayout, TtnnLayout, div_ceil,
};

use crate::{
    cost::{Bound, OpCost, PlanCost},
    figures::Figures,
    tensor::{
        Place, Shaped, active_shards, is_dram_like, is_l1_sharded, layout_bytes, place_of, shaped,
        shard_tiles,
    },
    work::{Analysis, MatmulDims, Read, analyze, combine_cycles, inverse_sigma_cycles},
};

/// Estimates device time from a target's [`Figures`]. Pure and deterministic.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CostModel {
    figures: Figures,
}

/// One step of a plan, in execution order.
#[derive(Debug, Clone, Copy)]
pub enum PlanStep<'a> {
    /// An op of the program with its operand and result layouts as the plan chose them.
    Op { kind: &'a OpKind, inputs: &'a [TensorDesc], output: &'a TensorDesc, config: &'a OpConfig },
    /// An inserted `to_memory_config` / `to_layout`.
    Reshard { from: &'a TensorDesc, to: &'a TtnnLayout },
    /// A tensor evicted from L1 to DRAM. The later read from DRAM is not part of this step:
    /// the consumer's `Op` step sees a DRAM operand and pays for it.
    Spill(&'a TensorDesc),
}

/// One tensor of an [`OpUnit`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnitTensor {
    pub shape: Vec<u64>,
    pub dtype: DataType,
    pub page: PageLayout,
    /// A layout no plan can change (a function argument, a weight kept in DRAM, a result
    /// the caller pins). `None` for an intermediate the plan may place anywhere.
    pub fixed: Option<TtnnLayout>,
}

impl UnitTensor {
    /// An intermediate the plan may place anywhere.
    #[must_use]
    pub fn free(shape: &[u64], dtype: DataType, page: PageLayout) -> UnitTensor {
        UnitTensor { shape: shape.to_vec(), dtype, page, fixed: None }
    }

    /// A tensor whose layout is given.
    #[must_use]
    pub fn fixed(shape: &[u64], layout: TtnnLayout) -> UnitTensor {
        let dtype = layout.data_type().unwrap_or(DataType::BF16);
        let page = layout.page_layout();
        UnitTensor { shape: shape.to_vec(), dtype, page, fixed: Some(layout) }
    }

    fn shaped(&self) -> Shaped<'_> {
        Shaped { shape: &self.shape, dtype: self.dtype, page: self.page }
    }
}

/// One op of a program for [`CostModel::lower_bound`]: its kind and config, and its
/// operands by shape with, optionally, a layout the plan cannot change.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OpUnit {
    pub kind: OpKind,
    pub inputs: Vec<UnitTensor>,
    pub output: UnitTensor,
    pub config: OpConfig,
}

/// How a matmul-shaped op splits its output over cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Blocking {
    /// Output block per core in tiles.
    pm: u64,
    pn: u64,
    /// Operand blocks shared by several cores are multicast (one read, NoC copies) rather
    /// than read again by each core.
    multicast: bool,
}

impl Blocking {
    fn new(pm: u64, pn: u64, multicast: bool) -> Blocking {
        Blocking { pm: pm.max(1), pn: pn.max(1), multicast }
    }

    fn blocks(&self, d: &MatmulDims) -> u64 {
        div_ceil(d.rows, self.pm).saturating_mul(div_ceil(d.cols, self.pn)).max(1)
    }
}

/// Where an op runs: the cores holding work, the shard grid (for locality), and how the
/// work splits.
#[derive(Debug, Clone, Copy)]
struct Placement {
    /// Cores that hold work; compute and per-core bandwidth divide over these.
    cores: u64,
    /// Cores of the shard grid the op runs on: a shard on exactly this many cores is local.
    grid_cores: u64,
    /// Tiles on the busiest core when a shard fixes it.
    tiles_per_core: Option<u64>,
    /// Matmul output blocks.
    blocking: Option<Blocking>,
    /// Cycles the cores wait on each other on the kernel's critical path (a sharded norm's
    /// cross-core reduction); 0 for ops whose cores work independently.
    sync_cycles: u64,
}

impl Placement {
    /// The op's natural split: whole chunks spread over at most the worker grid.
    fn natural(fig: &Figures, a: &Analysis) -> Placement {
        let cores = a.natural_cores(fig);
        Placement { cores, grid_cores: cores, tiles_per_core: None, blocking: None, sync_cycles: 0 }
    }

    /// Running on a shard grid of `grid_cores` cores whose shards are `shard` tiles of a
    /// `tiles` (rows, cols) tensor. Shards past the end of the tensor are empty, so the cores
    /// holding work may be fewer; the busiest core holds a whole shard when the work is over
    /// that tensor (otherwise, as for a reduction, the work is split evenly).
    fn shard(
        fig: &Figures,
        a: &Analysis,
        tiles: (u64, u64),
        shard: (u64, u64),
        grid_cores: u64,
    ) -> Placement {
        let (sh, sw) = (shard.0.max(1), shard.1.max(1));
        let grid_cores = clamp_cores(fig, grid_cores);
        let active =
            div_ceil(tiles.0, sh).saturating_mul(div_ceil(tiles.1, sw)).clamp(1, grid_cores);
        let per_core = if tiles.0.saturating_mul(tiles.1) == a.tiles {
            sh.saturating_mul(sw)
        } else {
            div_ceil(a.tiles, active)
        };
        Placement {
            cores: active,
            grid_cores,
            tiles_per_core: Some(per_core),
            blocking: None,
            sync_cycles: 0,
        }
    }

    /// [`Placement::shard`] for a laid-out tensor.
    fn of_layout(fig: &Figures, a: &Analysis, shape: &[u64], l: &TtnnLayout) -> Placement {
        Placement::shard(fig, a, shaped(shape, l).tiles_2d(), shard_tiles(l), l.num_cores())
    }

    /// A matmul split into output blocks, one per core; `grid_cores` is the shard grid when
    /// the output is sharded (otherwise the blocks' cores).
    fn blocked(fig: &Figures, d: &MatmulDims, b: Blocking, grid_cores: Option<u64>) -> Placement {
        let cores = clamp_cores(fig, b.blocks(d));
        Placement {
            cores,
            grid_cores: grid_cores.map_or(cores, |g| clamp_cores(fig, g)),
            tiles_per_core: None,
            blocking: Some(b),
            sync_cycles: 0,
        }
    }
}

/// Bytes by where they travel.
#[derive(Debug, Clone, Copy, Default)]
struct Traffic {
    dram: u64,
    noc: u64,
    l1: u64,
}

impl Traffic {
    /// A tensor read or written once: every byte passes through the running core's L1 (a
    /// DRAM operand is staged in a circular buffer), and non-local bytes also cross DRAM or
    /// the NoC.
    fn add(&mut self, bytes: u64, place: Place) {
        self.l1 = self.l1.saturating_add(bytes);
        match place {
            Place::Dram => self.dram = self.dram.saturating_add(bytes),
            Place::L1Remote => self.noc = self.noc.saturating_add(bytes),
            Place::L1Local => {}
        }
    }

    /// Copies one core forwards to others: NoC hops that land in the receivers' L1.
    fn forward(&mut self, bytes: u64) {
        self.noc = self.noc.saturating_add(bytes);
        self.l1 = self.l1.saturating_add(bytes);
    }
}

impl CostModel {
    #[must_use]
    pub fn new(figures: Figures) -> CostModel {
        CostModel { figures }
    }

    /// The model for a target: its architecture's figures with the target's own clock,
    /// DRAM bandwidth and worker grid.
    #[must_use]
    pub fn for_target(t: &Target) -> CostModel {
        CostModel::new(Figures::for_target(t))
    }

    /// Wormhole n150, the default target.
    #[must_use]
    pub fn wormhole_n150() -> CostModel {
        CostModel::for_target(&Target::n150())
    }

    #[must_use]
    pub fn figures(&self) -> &Figures {
        &self.figures
    }

    /// The device time of one op whose operands and result are in the given layouts.
    ///
    /// `output.layout` should be the layout the op really produces (for a partial or null
    /// hint, the op model's `OpConstraints::output_layout`). The op runs on the output's
    /// shard grid when it is sharded (input 0's for norms and softmax, and the program
    /// config's grid for matmul), otherwise on its natural parallelism.
    #[must_use]
    pub fn op_cost(
        &self,
        kind: &OpKind,
        inputs: &[TensorDesc],
        output: &TensorDesc,
        config: &OpConfig,
    ) -> OpCost {
        let fig = &self.figures;
        let in_shaped: Vec<Shaped<'_>> =
            inputs.iter().map(|t| shaped(&t.shape, &t.layout)).collect();
        let out_shaped = shaped(&output.shape, &output.layout);
        let a = analyze(kind, &in_shaped, &out_shaped, config);
        if a.free || is_view(kind, inputs, output) {
            return OpCost::free();
        }
        let program = matmul_program(config);
        let placements = match (a.matmul, program) {
            (Some(d), Some(p)) => vec![config_placement(fig, &d, p)],
            (Some(d), None) if is_l1_sharded(&output.layout) => {
                let (sh, sw) = shard_tiles(&output.layout);
                let b = Blocking::new(sh, sw, true);
                vec![Placement::blocked(fig, &d, b, Some(output.layout.num_cores()))]
            }
            (Some(d), None) => auto_placements(fig, config, &d, false),
            (None, _) => vec![match inputs.first() {
                Some(i) if a.rowwise && is_l1_sharded(&i.layout) => Placement {
                    sync_cycles: row_reduction_cycles(fig, &a, &i.shape, &i.layout),
                    ..Placement::of_layout(fig, &a, &i.shape, &i.layout)
                },
                _ if is_l1_sharded(&output.layout) => {
                    Placement::of_layout(fig, &a, &output.shape, &output.layout)
                }
                _ => Placement::natural(fig, &a),
            }],
        };
        let mut best: Option<OpCost> = None;
        for placement in placements {
            let operands: Vec<(u64, Place)> = inputs
                .iter()
                .map(|t| {
                    (layout_bytes(&t.shape, &t.layout), place_of(&t.layout, placement.grid_cores))
                })
                .collect();
            let out = (
                layout_bytes(&output.shape, &output.layout),
                place_of(&output.layout, placement.grid_cores),
            );
            keep_cheaper(&mut best, self.evaluate(&a, placement, &operands, out));
        }
        best.unwrap_or_default()
    }

    /// The op's roofline in ns: the larger of its FLOPs at the chip's peak (every worker at
    /// the matrix engine's LoFi rate) and the bytes of its operands and result, without tile
    /// or shard padding (of an operand or output the op touches only part of, that part), at
    /// the sustained DRAM bandwidth. No dispatch: it is what the kernel could not beat on any
    /// layout. 0 for ops that run no kernel.
    #[must_use]
    pub fn roofline_ns(
        &self,
        kind: &OpKind,
        inputs: &[TensorDesc],
        output: &TensorDesc,
        config: &OpConfig,
    ) -> u64 {
        let fig = &self.figures;
        let in_shaped: Vec<Shaped<'_>> =
            inputs.iter().map(|t| shaped(&t.shape, &t.layout)).collect();
        let out_shaped = shaped(&output.shape, &output.layout);
        let a = analyze(kind, &in_shaped, &out_shaped, config);
        if a.free || is_view(kind, inputs, output) {
            return 0;
        }
        let logical =
            |s: &Shaped<'_>| crate::tensor::volume(s.shape).saturating_mul(s.dtype.elem_bytes());
        // Operands the op reads only part of (a conv's prepared weights, the cache tiles a
        // cache write touches) and a partly written output count those bytes at most.
        let read = in_shaped.iter().enumerate().map(|(i, s)| match a.reads.get(i) {
            Some(Read::Exactly(b)) => logical(s).min(*b),
            _ => logical(s),
        });
        let written = a
            .writes
            .map_or(logical(&out_shaped), |w| w.min(logical(&out_shaped)))
            .saturating_add(a.other_results);
        let bytes = read.chain([written]).fold(0u64, u64::saturating_add);
        let flops = a.tiles.saturating_mul(a.per_tile.flops(fig));
        let peak = u128::from(fig.matmul_flops_per_cycle.max(1))
            * u128::from(fig.worker_cores())
            * u128::from(fig.aiclk_mhz.max(1));
        let compute = crate::figures::ceil_ratio(u128::from(flops) * 1000, peak);
        compute.max(fig.dram_time(bytes, fig.worker_cores()).ceil())
    }

    /// The device time of moving a tensor into another layout (`to_memory_config`, or
    /// `to_layout` when the page layout or data type changes).
    ///
    /// Data movement only: DRAM reads or writes on a DRAM side, L1 reads or writes on an L1
    /// side, and NoC traffic when both sides are in L1. It runs on the larger of the two
    /// sides' core counts. Host-side conversions are not device time and cost nothing here.
    #[must_use]
    pub fn reshard_cost(&self, from: &TensorDesc, to: &TtnnLayout) -> OpCost {
        let fig = &self.figures;
        let src = &from.layout;
        let unchanged = src.buffer == to.buffer
            && src.memory_layout == to.memory_layout
            && src.grid2d() == to.grid2d()
            && src.memref_shape == to.memref_shape
            && src.memref_element == to.memref_element;
        let host = src.buffer == BufferType::SystemMemory || to.buffer == BufferType::SystemMemory;
        if unchanged || host {
            return OpCost::free();
        }
        let side_cores = |l: &TtnnLayout| {
            if is_l1_sharded(l) {
                clamp_cores(fig, active_shards(&from.shape, l))
            } else {
                shaped(&from.shape, l).tiles().clamp(1, fig.worker_cores())
            }
        };
        let cores = side_cores(src).max(side_cores(to));
        let (src_bytes, dst_bytes) =
            (layout_bytes(&from.shape, src), layout_bytes(&from.shape, to));
        let mut t = Traffic::default();
        for (l, bytes) in [(src, src_bytes), (to, dst_bytes)] {
            if is_dram_like(l) {
                t.dram = t.dram.saturating_add(bytes);
            } else {
                t.l1 = t.l1.saturating_add(bytes);
            }
        }
        if !is_dram_like(src) && !is_dram_like(to) {
            t.noc = t.noc.saturating_add(dst_bytes);
        }
        self.finish(t, 0, 0, cores, 0)
    }

    /// The device time of evicting an L1 tensor to DRAM interleaved (free if it already is
    /// in DRAM). Reading it back is charged to the consumer, whose operand is then in DRAM.
    #[must_use]
    pub fn spill_cost(&self, t: &TensorDesc) -> OpCost {
        if is_dram_like(&t.layout) {
            return OpCost::free();
        }
        let dtype = t.layout.data_type().unwrap_or(DataType::BF16);
        let dram = TtnnLayout::dram_interleaved(&t.shape, dtype, t.layout.page_layout());
        self.reshard_cost(t, &dram)
    }

    /// The device time of a plan: its steps run one after another, so their costs add.
    #[must_use]
    pub fn plan_cost(&self, steps: &[PlanStep<'_>]) -> PlanCost {
        let mut plan = PlanCost::default();
        for step in steps {
            let c = match step {
                PlanStep::Op { kind, inputs, output, config } => {
                    let c = self.op_cost(kind, inputs, output, config);
                    plan.op_ns = plan.op_ns.saturating_add(c.total_ns);
                    c
                }
                PlanStep::Reshard { from, to } => {
                    let c = self.reshard_cost(from, to);
                    plan.reshard_ns = plan.reshard_ns.saturating_add(c.total_ns);
                    c
                }
                PlanStep::Spill(t) => {
                    let c = self.spill_cost(t);
                    plan.spill_ns = plan.spill_ns.saturating_add(c.total_ns);
                    c
                }
            };
            plan.total_ns = plan.total_ns.saturating_add(c.total_ns);
            plan.flops = plan.flops.saturating_add(c.flops);
            plan.dram_bytes = plan.dram_bytes.saturating_add(c.dram_bytes);
            plan.noc_bytes = plan.noc_bytes.saturating_add(c.noc_bytes);
            plan.l1_bytes = plan.l1_bytes.saturating_add(c.l1_bytes);
            plan.steps.push(c);
        }
        plan
    }

    /// A lower bound on the device time of any plan for these ops, in ns.
    ///
    /// The sum over ops of [`CostModel::op_lower_bound`]. It relaxes a real plan in four ways,
    /// each of which can only lower the cost: every free tensor is in L1 in whatever layout
    /// suits the op reading or writing it (a producer and its consumer need not agree), no
    /// reshard is ever needed (`to_memory_config` ops are free), L1 capacity is unlimited
    /// (nothing spills), and each op gets the cheapest of its candidate placements.
    #[must_use]
    pub fn lower_bound(&self, ops: &[OpUnit]) -> u64 {
        ops.iter().map(|op| self.op_lower_bound(op).total_ns).fold(0u64, u64::saturating_add)
    }

    /// The cheapest cost of one op over its candidate placements, with every operand local
    /// to the cores it runs on:
    ///
    /// * its natural parallelism (matmul and convolutions: every 2D and 1D split of the
    ///   output into per-core blocks, or the program config's blocking when one is given);
    /// * for ops that can produce a sharded output, height, width and block sharding on the
    ///   largest grid the output's tiles allow (sharded elementwise work never gets slower on
    ///   a larger grid of the same family, so smaller grids need no candidate).
    ///
    /// Free operands are local shards, except an operand whose sharding the op rejects
    /// (matmul's B, a reduction's input), which is read over the NoC as L1 interleaved.
    /// Fixed operands in DRAM are read from DRAM; fixed operands in L1 count as local. A fixed
    /// output allows only its own placement. Ops that are views by shape (a view reshape, an
    /// identity permute, an all-zero pad, an all-ones repeat, a same-format `to_layout`) and
    /// every `to_memory_config` are free.
    #[must_use]
    pub fn op_lower_bound(&self, op: &OpUnit) -> OpCost {
        use TensorMemoryLayout::{BlockSharded, HeightSharded, WidthSharded};
        let fig = &self.figures;
        let in_shaped: Vec<Shaped<'_>> = op.inputs.iter().map(UnitTensor::shaped).collect();
        let out_shaped = op.output.shaped();
        let a = analyze(&op.kind, &in_shaped, &out_shaped, &op.config);
        if a.free || is_view_by_shape(&op.kind, &in_shaped, &out_shaped) {
            return OpCost::free();
        }
        let program = matmul_program(&op.config);
        let (th, tw) = out_shaped.tiles_2d();
        let natural = || match (a.matmul, program) {
            (Some(d), Some(p)) => vec![config_placement(fig, &d, p)],
            (Some(d), None) => auto_placements(fig, &op.config, &d, true),
            (None, _) => vec![Placement::natural(fig, &a)],
        };
        let sharded = |grid_cores: u64, shard: (u64, u64)| match (a.matmul, program) {
            (Some(d), Some(p)) => config_placement(fig, &d, p),
            (Some(d), None) => {
                let b = Blocking::new(shard.0, shard.1, true);
                Placement::blocked(fig, &d, b, Some(grid_cores))
            }
            (None, _) => Placement::shard(fig, &a, (th, tw), shard, grid_cores),
        };
        // Each candidate with the shard families its free operands may take.
        let any: &[TensorMemoryLayout] = &[HeightSharded, WidthSharded, BlockSharded];
        let mut candidates: Vec<(Placement, Vec<TensorMemoryLayout>)> = Vec::new();
        match &op.output.fixed {
            Some(l) if is_l1_sharded(l) => {
                let family = l.memory_layout.into_iter().collect();
                candidates.push((sharded(l.num_cores(), shard_tiles(l)), family));
            }
            Some(_) => candidates.extend(natural().into_iter().map(|p| (p, any.to_vec()))),
            None => {
                candidates.extend(natural().into_iter().map(|p| (p, any.to_vec())));
                if a.matmul.is_none() && can_shard_output(&op.kind) {
                    let g = fig.worker_grid;
                    let vol = fig.worker_cores();
                    let (hs, ws) = (th.clamp(1, vol), tw.clamp(1, vol));
                    let (by, bx) = (th.clamp(1, g.rows.max(1)), tw.clamp(1, g.cols.max(1)));
                    for (ml, cores, shard) in [
                        (HeightSharded, hs, (div_ceil(th, hs), tw)),
                        (WidthSharded, ws, (th, div_ceil(tw, ws))),
                        (BlockSharded, by * bx, (div_ceil(th, by), div_ceil(tw, bx))),
                    ] {
                        candidates.push((sharded(cores, shard), vec![ml]));
                    }
                }
            }
        }
        let mut best: Option<OpCost> = None;
        for (placement, families) in candidates {
            let place = |t: &UnitTensor, operand: Option<usize>| -> (u64, Place) {
                match &t.fixed {
                    Some(l) if is_dram_like(l) => (layout_bytes(&t.shape, l), Place::Dram),
                    Some(l) => (layout_bytes(&t.shape, l), Place::L1Local),
                    None => {
                        let rejected =
                            operand.map_or(&[][..], |i| op.kind.rejected_input_memory_layouts(i));
                        let local = families.iter().any(|ml| !rejected.contains(ml));
                        (t.shaped().bytes(), if local { Place::L1Local } else { Place::L1Remote })
                    }
                }
            };
            let operands: Vec<(u64, Place)> =
                op.inputs.iter().enumerate().map(|(i, t)| place(t, Some(i))).collect();
            let out = place(&op.output, None);
            keep_cheaper(&mut best, self.evaluate(&a, placement, &operands, out));
        }
        best.unwrap_or_default()
    }

    /// Cost of an analysed op placed on `p.cores` cores with these operand bytes and places.
    fn evaluate(
        &self,
        a: &Analysis,
        p: Placement,
        inputs: &[(u64, Place)],
        output: (u64, Place),
    ) -> OpCost {
        let fig = &self.figures;
        let cores = p.cores.max(1);
        let passes = Figures::passes(a.fidelity.unwrap_or(fig.default_fidelity));
        let tiles_per_core = match (p.blocking, a.matmul, p.tiles_per_core) {
            (Some(b), Some(d), _) => {
                b.pm.saturating_mul(b.pn).saturating_mul(div_ceil(b.blocks(&d), cores))
            }
            (_, _, Some(t)) => t,
            _ => a.tiles_per_core(cores),
        };
        let cycles = a.per_tile.cycles(tiles_per_core, passes, fig);
        let flops = a.tiles.saturating_mul(a.per_tile.flops(fig));
        let (out_bytes, out_place) = output;
        let out_bytes =
            a.writes.map_or(out_bytes, |w| w.min(out_bytes)).saturating_add(a.other_results);
        let mut t = Traffic::default();
        let reads: Vec<(u64, Place)> = inputs
            .iter()
            .enumerate()
            .map(|(i, &(bytes, place))| match a.reads.get(i) {
                Some(Read::AtMostOutput) => (bytes.min(out_bytes), place),
                Some(Read::Exactly(b)) => (*b, place),
                _ => (bytes, place),
            })
            .collect();
        for &(bytes, place) in &reads {
            t.add(bytes, place);
        }
        // Sliding windows re-read their input from L1 (im2col, pooling windows).
        if let Some(&(bytes, _)) = reads.first() {
            let (num, den) = a.window_reads;
            let total = u128::from(bytes).saturating_mul(u128::from(num)) / u128::from(den.max(1));
            let extra = u64::try_from(total).unwrap_or(u64::MAX).saturating_sub(bytes);
            t.l1 = t.l1.saturating_add(extra);
        }
        // Matmul operand blocks shared by several cores: A by each core column, B by each
        // core row. Multicast forwards the extra copies over the NoC; otherwise every core
        // reads its own copy from the operand's buffer.
        if let (Some(b), Some(d)) = (p.blocking, a.matmul) {
            let fanout_a = div_ceil(d.cols, b.pn).max(1);
            let fanout_b = div_ceil(d.rows_per_b, b.pm).max(1);
            for (operand, fanout) in [(0usize, fanout_a), (1, fanout_b)] {
                let Some((bytes, place)) = reads.get(operand) else { continue };
                let extra = bytes.saturating_mul(fanout - 1);
                if b.multicast {
                    t.forward(extra);
                } else {
                    t.add(extra, *place);
                }
            }
        }
        t.add(out_bytes, out_place);
        self.finish(t, cycles, flops, cores, p.sync_cycles)
    }

    /// Turns traffic and math into times: `dispatch + max(compute, dram + noc + l1) + sync`,
    /// where `sync_cycles` is the time the cores wait on each other (a sharded norm's
    /// cross-core reduction), which neither math nor streaming hides.
    fn finish(&self, t: Traffic, cycles: u64, flops: u64, cores: u64, sync_cycles: u64) -> OpCost {
        let fig = &self.figures;
        let compute_ns = fig.cycles_to_ns(cycles);
        let sync_ns = if sync_cycles == 0 { 0 } else { fig.cycles_to_ns(sync_cycles) };
        let dram = fig.dram_time(t.dram, cores);
        let noc = fig.per_core_time(t.noc, fig.noc_bytes_per_cycle, cores);
        let l1 = fig.per_core_time(t.l1, fig.l1_bytes_per_cycle, cores);
        let (dram_ns, noc_ns, l1_ns) = (dram.ceil(), noc.ceil(), l1.ceil());
        // Rounded once, so the same bytes cost the same however they split between terms.
        let memory = dram.add(noc).add(l1).ceil();
        let streaming = compute_ns.max(memory);
        let kernel = streaming.saturating_add(sync_ns);
        let bound = if fig.dispatch_ns >= kernel {
            Bound::Overhead
        } else if sync_ns > streaming {
            Bound::Sync
        } else if compute_ns >= memory {
            Bound::Compute
        } else if dram_ns >= noc_ns && dram_ns >= l1_ns {
            Bound::Dram
        } else if noc_ns >= l1_ns {
            Bound::Noc
        } else {
            Bound::L1
        };
        OpCost {
            compute_ns,
            dram_ns,
            l1_ns,
            noc_ns,
            memory_ns: memory,
            dispatch_ns: fig.dispatch_ns,
            sync_ns,
            total_ns: fig.dispatch_ns.saturating_add(kernel),
            flops,
            dram_bytes: t.dram,
            l1_bytes: t.l1,
            noc_bytes: t.noc,
            cores,
            bound,
        }
    }
}

/// How tt-metal's sharded layer-norm program combines a row's statistics when the row is
/// split over cores (width or block sharded input): every core reduces its own tiles to a
/// partial, the partials of a row are gathered and combined on "all-to-all" worker cores,
/// the result is gathered on one sender core and multicast back to every core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RowSplit {
    /// Cores one combine reads partials from (a row of the core grid in the two-stage form).
    first: u64,
    /// Cores the second stage combines (the grid's rows), or 0 for a one-stage reduction.
    second: u64,
    /// Tile rows each all-to-all worker combines.
    rows_per_worker: u64,
    /// All-to-all workers of the first stage, each reporting to the sender.
    workers: u64,
    /// Tile rows of a shard, gathered and multicast by the sender.
    block_rows: u64,
}

impl RowSplit {
    /// The split of a norm's input 0, or `None` when every core holds whole rows.
    ///
    /// Width sharded: all cores of the shard grid share the rows (`mcast_1d`), laid out
    /// row-major on the worker grid; on a full rectangle of more than one grid row and column the reduction runs in
    /// two stages, each grid row's partials combined first and the grid rows' results then.
    /// Block sharded: the cores of a grid row share its rows, one stage (tt-metal's
    /// `num_blocks` is the grid's width).
    fn of(fig: &Figures, shape: &[u64], l: &TtnnLayout) -> Option<RowSplit> {
        let (th, tw) = shaped(shape, l).tiles_2d();
        let (sh, sw) = shard_tiles(l);
        let across = div_ceil(tw, sw.max(1));
        if across <= 1 {
            return None;
        }
        let block_rows = sh.min(th).max(1);
        let one_stage = |n: u64| {
            let rows_per_worker = div_ceil(block_rows, n);
            RowSplit {
                first: n,
                second: 0,
                rows_per_worker,
                workers: div_ceil(block_rows, rows_per_worker),
                block_rows,
            }
        };
        match l.memory_layout {
            Some(TensorMemoryLayout::WidthSharded) => {
                // Every core of the shard grid takes part, empty shards included.
                let n = clamp_cores(fig, l.num_cores());
                let cols = fig.worker_grid.cols.max(1);
                let (gx, gy) = (n.min(cols), div_ceil(n, cols));
                if gx > 1 && gy > 1 && gx.saturating_mul(gy) == n {
                    let rows_per_worker = div_ceil(block_rows, gx);
                    Some(RowSplit {
                        first: gx,
                        second: gy,
                        rows_per_worker,
                        workers: div_ceil(block_rows, rows_per_worker),
                        block_rows,
                    })
                } else {
                    Some(one_stage(n))
                }
            }
            Some(TensorMemoryLayout::BlockSharded) => Some(one_stage(l.grid2d().cols.max(across))),
            _ => None,
        }
    }
}

/// Cycles a sharded norm's cores wait on one another for its row statistics, following tt-metal's
/// sharded layer-norm program (its sender and receiver reader kernels), per statistic:
///
/// 1. every core signals the sender that its partial is ready (a semaphore increment: one NoC
///    write) and the sender multicasts the go-ahead (another);
/// 2. each all-to-all worker reads the partial of each core of its stage (one NoC read latency,
///    then the tiles through its NoC port) and combines them;
/// 3. in two stages, the first-stage workers signal the second-stage reader (a write), which
///    reads their results (a read and the tiles) and combines them;
/// 4. the workers signal the sender when there are several (a write); the sender gathers their
///    results (a read and the tiles) and multicasts them with a semaphore (two writes and the
///    tiles).
///
/// The last statistic is also turned into `1 / sigma` (epsilon and a reciprocal square root)
/// before it is sent. The partials are `bf16` tiles (tt-metal's intermediate format without
/// fp32 accumulation). The cores do nothing else meanwhile, so the cycles add to the kernel's.
fn row_reduction_cycles(fig: &Figures, a: &Analysis, shape: &[u64], l: &TtnnLayout) -> u64 {
    if a.row_statistics == 0 {
        return 0;
    }
    let Some(split) = RowSplit::of(fig, shape, l) else { return 0 };
    let passes = Figures::passes(a.fidelity.unwrap_or(fig.default_fidelity));
    let (read, write) = (fig.noc_read_latency_cycles, fig.noc_write_latency_cycles);
    let tile = DataType::BF16.tile_bytes();
    let stream = |tiles: u64| div_ceil(tiles.saturating_mul(tile), fig.noc_bytes_per_cycle.max(1));
    let gather = |tiles: u64| {
        read.saturating_add(stream(tiles)).saturating_add(combine_cycles(tiles, passes, fig))
    };
    let r = split.rows_per_worker;
    let mut round = write.saturating_mul(2).saturating_add(gather(r.saturating_mul(split.first)));
    if split.second > 1 {
        round =
            round.saturating_add(write).saturating_add(gather(r.saturating_mul(split.second - 1)));
    }
    if split.workers > 1 {
        round = round.saturating_add(write);
    }
    let broadcast = read
        .saturating_add(stream(split.block_rows))
        .saturating_add(write.saturating_mul(2))
        .saturating_add(stream(split.block_rows));
    round
        .saturating_add(broadcast)
        .saturating_mul(a.row_statistics)
        .saturating_add(inverse_sigma_cycles(r, fig))
}

/// Keeps the cheaper of two costs; on a tie the earlier one, so candidate order decides.
fn keep_cheaper(best: &mut Option<OpCost>, c: OpCost) {
    if best.as_ref().is_none_or(|b| c.total_ns < b.total_ns) {
        *best = Some(c);
    }
}

fn clamp_cores(fig: &Figures, cores: u64) -> u64 {
    cores.clamp(1, fig.worker_cores())
}

fn matmul_program(config: &OpConfig) -> Option<&MatmulProgramConfig> {
    match config {
        OpConfig::Matmul { program, .. } => program.as_deref(),
        _ => None,
    }
}

/// The program config fixes the per-core block; `multi_core_reuse` is the one program
/// without multicast.
fn config_placement(fig: &Figures, d: &MatmulDims, p: &MatmulProgramConfig) -> Placement {
    let (pm, pn) = p.per_core();
    let multicast = !matches!(p, MatmulProgramConfig::MultiCoreReuse { .. });
    Placement::blocked(fig, d, Blocking::new(pm, pn, multicast), None)
}

/// With no config and no sharded output, tt-metal picks the program. The model assumes it
/// picks well: every 2D split of the worker grid and every 1D split is a candidate, and the
/// caller keeps the cheapest. Convolutions pick among height (output pixel rows), width
/// (output channels) and block sharding the same way (tt-metal's conv chooses its sharding
/// from the shape), unless their config names one (`shard_layout`) and `all_splits` is off.
/// A larger grid's candidates include a smaller grid's, so a larger grid is never slower.
fn auto_placements(
    fig: &Figures,
    config: &OpConfig,
    d: &MatmulDims,
    all_splits: bool,
) -> Vec<Placement> {
    use TensorMemoryLayout::{BlockSharded, HeightSharded, WidthSharded};
    let vol = fig.worker_cores();
    let g = fig.worker_grid;
    let named = match config {
        OpConfig::Conv2d { conv, .. } if !all_splits => conv.shard_layout,
        _ => None,
    };
    let allow = |ml: TensorMemoryLayout| named.is_none_or(|n| n == ml);
    let mut blockings = Vec::new();
    if allow(HeightSharded) {
        for n in 1..=d.rows.clamp(1, vol) {
            blockings.push(Blocking::new(div_ceil(d.rows, n), d.cols, true));
        }
    }
    if allow(WidthSharded) {
        for n in 1..=d.cols.clamp(1, vol) {
            blockings.push(Blocking::new(d.rows, div_ceil(d.cols, n), true));
        }
    }
    if allow(BlockSharded) {
        for gy in 1..=d.rows.clamp(1, g.rows.max(1)) {
            for gx in 1..=d.cols.clamp(1, g.cols.max(1)) {
                blockings.push(Blocking::new(div_ceil(d.rows, gy), div_ceil(d.cols, gx), true));
            }
        }
    }
    blockings.sort_by_key(|b| (b.pm, b.pn));
    blockings.dedup();
    blockings.into_iter().map(|b| Placement::blocked(fig, d, b, None)).collect()
}

/// Ops that may produce a sharded output (tt-mlir's rule book: slices, pads, embeddings,
/// head concatenation, attention, collectives and the like only produce interleaved ones).
fn can_shard_output(kind: &OpKind) -> bool {
    !matches!(
        kind,
        OpKind::SliceStatic
            | OpKind::SliceDynamic
            | OpKind::Pad { .. }
            | OpKind::Reshape
            | OpKind::Embedding
            | OpKind::EmbeddingBw
            | OpKind::Gather { .. }
            | OpKind::Scatter { .. }
            | OpKind::Sort { .. }
            | OpKind::Topk { .. }
            | OpKind::Argmax { .. }
            | OpKind::Sampling
            | OpKind::Cumulative { .. }
            | OpKind::Heads(_)
            | OpKind::Sdpa(_)
            | OpKind::Collective(_)
            | OpKind::Fixed(_)
            | OpKind::Creation(_)
            | OpKind::Unknown(_)
    )
}

/// A reshape tt-metal performs as a view: the last dim stays, and the second-last dim is
/// equal or tile aligned on both sides, so no tile moves (the op model's rule).
fn is_view_reshape(from: &[u64], to: &[u64], page: PageLayout) -> bool {
    let last = |s: &[u64]| s.last().copied().unwrap_or(1);
    let second = |s: &[u64]| if s.len() >= 2 { s[s.len() - 2] } else { 1 };
    last(from) == last(to)
        && (page == PageLayout::RowMajor
            || second(from) == second(to)
            || (second(from).is_multiple_of(32) && second(to).is_multiple_of(32)))
}

/// Ops that alias their input when the shapes allow it and the placement does not change.
fn is_view_by_shape(kind: &OpKind, inputs: &[Shaped<'_>], output: &Shaped<'_>) -> bool {
    let Some(input) = inputs.first() else { return false };
    let same_shape = input.shape == output.shape;
    match kind {
        OpKind::Reshape => is_view_reshape(input.shape, output.shape, input.page),
        OpKind::Permute { permutation } => {
            permutation.iter().enumerate().all(|(i, p)| usize::try_from(*p).ok() == Some(i))
        }
        OpKind::Transpose { dim0, dim1 } => dim0 == dim1,
        OpKind::Pad { padding } => same_shape && padding.iter().all(|p| *p == 0),
        OpKind::Repeat { repeat_dims } => same_shape && repeat_dims.iter().all(|d| *d == 1),
        OpKind::ToLayout => same_shape && input.page == output.page && input.dtype == output.dtype,
        // In a lower bound every reshard is unnecessary; a real plan's to_memory_config with
        // an unchanged layout is caught by `is_view`.
        OpKind::ToMemoryConfig => true,
        _ => false,
    }
}

/// [`is_view_by_shape`] for laid-out operands: also the placement must stay, and a sharded
/// input is not reshaped in place.
fn is_view(kind: &OpKind, inputs: &[TensorDesc], output: &TensorDesc) -> bool {
    let Some(input) = inputs.first() else { return false };
    let (i, o) = (&input.layout, &output.layout);
    let same_memory = i.buffer == o.buffer
        && i.memory_layout == o.memory_layout
        && i.page_layout() == o.page_layout();
    let same_placement = same_memory
        && i.grid2d() == o.grid2d()
        && i.memref_shape == o.memref_shape
        && i.memref_element == o.memref_element;
    let in_shaped = [shaped(&input.shape, i)];
    let out_shaped = shaped(&output.shape, o);
    match kind {
        OpKind::Reshape => {
            same_memory
                && !i.is_sharded()
                && is_view_reshape(&input.shape, &output.shape, i.page_layout())
        }
        OpKind::ToMemoryConfig => same_placement && input.shape == output.shape,
        _ => same_placement && is_view_by_shape(kind, &in_shaped, &out_shaped),
    }
}
