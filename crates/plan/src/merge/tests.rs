//! The merge walk on small functions, without a database: the ops lowered from text, the
//! base plan (what the chain solver hands over) written out by hand, the analytical op model
//! and the cost model, and a [`WalkSource`] that answers from those plain values.

use std::{fmt::Write as _, sync::Arc};

use expect_test::{Expect, expect};
use ir::{FuncBody, ValueRef};
use opmodel::{AnalyticalModel, CachedOpModel, OpConfig};
use smallvec::SmallVec;
use target::Target;
use ttnn_types::{DataType, TensorMemoryLayout, TtnnLayout};

use super::{Carry, ChunkInputs, Reservation, WalkSource, walk_chunk};
use crate::{
    chunks::{ChunkChains, ChunkLayout, ForeignChain},
    planning::{ChainOutcome, ChainPlan, ChainState, OpPlan, PartsChunk, SpillLocation},
    scheduling::{Schedule, TopoOp, Topology, Use},
};

/// A function lowered from text, its ops' signatures and its data flow, scheduled in body
/// order.
struct Func {
    body: Arc<FuncBody>,
    sigs: Vec<Option<Arc<layout::OpSignature>>>,
    topo: Topology,
    sched: Schedule,
}

fn lower(text: &str) -> Func {
    let parse = syntax::parse(text);
    let lowered = ir::lower_parse(text, &parse);
    assert!(lowered.diagnostics.is_empty(), "{:?}", lowered.diagnostics);
    let body = Arc::clone(&lowered.funcs[0].body);
    let sigs = layout::signatures_of(&body.ops).to_vec();
    let mut ops: Vec<TopoOp> = body
        .ops
        .iter()
        .map(|_| TopoOp {
            deps: SmallVec::new(),
            users: SmallVec::new(),
            num_uses: 0,
            returned: false,
            schedulable: true,
            to_layout: false,
        })
        .collect();
    for (i, data) in body.ops.iter().enumerate() {
        for (k, v) in data.operands.iter().enumerate() {
            let Some((op, _)) = body.result_of(*v) else { continue };
            ops[op as usize].users.push(Use { user: i as u32, operand: k as u32 });
            ops[op as usize].num_uses += 1;
            if !ops[i].deps.contains(&op) {
                ops[i].deps.push(op);
            }
        }
    }
    for v in &body.returns {
        if let Some((op, _)) = body.result_of(*v) {
            ops[op as usize].returned = true;
            ops[op as usize].num_uses += 1;
        }
    }
    let n = body.ops.len() as u32;
    let sched = Schedule { order: (0..n).collect(), position: (0..n).collect() };
    Func { body, sigs, topo: Topology { ops }, sched }
}

/// Chunks cut before the given positions (the schedule is body order).
fn chunks(n: u32, cuts: &[u32]) -> ChunkLayout {
    let bounds: Vec<u32> = std::iter::once(0).chain(cuts.iter().copied()).chain([n]).collect();
    let chunk_of = (0..n).map(|i| bounds.iter().filter(|&&b| b <= i).count() as u32 - 1).collect();
    ChunkLayout { order: (0..n).collect(), bounds, chunk_of, at: (0..n).collect(), scheduled: n }
}

fn shape(f: &Func, i: usize) -> Vec<u64> {
    f.body.ops[i].results[0].as_tensor().and_then(|t| t.static_shape()).unwrap_or_default()
}

fn dram(shape: &[u64]) -> TtnnLayout {
    TtnnLayout::dram_interleaved(shape, DataType::BF16, ttnn_types::PageLayout::Tile)
}

/// The block-sharded layout over the whole 8x8 grid, as the chain solver picks for these
/// shapes.
fn block_sharded(shape: &[u64]) -> TtnnLayout {
    let pool = layout::generate_tensor_layouts(shape, DataType::BF16, Target::n150().worker_grid());
    pool.sharded_tile
        .iter()
        .find(|l| {
            l.memory_layout == Some(TensorMemoryLayout::BlockSharded) && l.grid2d().volume() == 64
        })
        .cloned()
        .expect("a 64-core block sharding")
}

/// The base plan of the given chunks: each chain in `chains` (body indices) completed in L1,
/// block sharded and spilling to DRAM after its last op, as `df-sharding` leaves it; every
/// other op in DRAM.
fn base(f: &Func, layout: &ChunkLayout, chains: &[&[u32]]) -> Vec<Arc<PartsChunk>> {
    (0..layout.len())
        .map(|k| {
            let ops = layout.ops(k);
            let here: Vec<&[u32]> =
                chains.iter().copied().filter(|c| ops.contains(&c[0])).collect();
            let plans = ops
                .iter()
                .map(|&i| {
                    let chain = here.iter().enumerate().find_map(|(c, members)| {
                        let pos = members.iter().position(|&m| m == i)?;
                        Some((c as u32, pos as u32))
                    });
                    let s = shape(f, i as usize);
                    OpPlan {
                        layout: Some(if chain.is_some() { block_sharded(&s) } else { dram(&s) }),
                        config: OpConfig::None,
                        chain,
                        expected_operands: vec![None; f.body.ops[i as usize].operands.len()],
                        spill: None,
                        reason: "".into(),
                        reserved: 0,
                    }
                })
                .collect();
            let chain_plans = here
                .iter()
                .map(|members| ChainPlan {
                    ops: members.to_vec(),
                    concat: false,
                    state: ChainState::Completed,
                    failure: None,
                    spill: SpillLocation::Dram,
                    spill_reason: "the chain ends".to_owned(),
                    core_usage: vec![64; members.len()],
                })
                .collect();
            let outcomes = vec![ChainOutcome::default(); here.len()];
            Arc::new(PartsChunk { ops: plans, chains: chain_plans, outcomes })
        })
        .collect()
}

/// The walk's reads, answered from plain values.
struct Plain<'a> {
    f: &'a Func,
    layout: &'a ChunkLayout,
    base: Vec<Arc<PartsChunk>>,
}

impl WalkSource for Plain<'_> {
    fn op(&self, i: u32) -> Option<&ir::OpData> {
        self.f.body.ops.get(i as usize).map(|o| &**o)
    }

    fn result_of(&self, v: ValueRef) -> Option<(u32, u32)> {
        self.f.body.result_of(v)
    }

    fn arg(&self, a: u32) -> Option<&ir::Ty> {
        self.f.body.args.get(a as usize)
    }

    fn sig(&self, i: u32) -> Option<Arc<layout::OpSignature>> {
        self.f.sigs.get(i as usize).cloned().flatten()
    }

    fn base(&self, k: u32) -> Arc<PartsChunk> {
        self.base.get(k as usize).cloned().unwrap_or_default()
    }

    fn foreign_plan(&self, i: u32) -> Option<Arc<OpPlan>> {
        let (k, at) = self.layout.locate(i)?;
        self.base(k).ops.get(at).cloned().map(Arc::new)
    }

    fn foreign_chain(&self, last: u32) -> Option<Arc<ForeignChain>> {
        let (k, _) = self.layout.locate(last)?;
        let parts = self.base(k);
        let c = parts.chains.iter().position(|ch| ch.ops.last() == Some(&last))?;
        Some(Arc::new((parts.chains[c].clone(), parts.outcomes[c].clone())))
    }

    fn chunk_chains(&self, k: u32) -> Arc<ChunkChains> {
        let parts = self.base(k);
        let of_op = parts
            .ops
            .iter()
            .map(|p| {
                let (c, pos) = p.chain?;
                Some((*parts.chains.get(c as usize)?.ops.last()?, pos))
            })
            .collect();
        Arc::new(ChunkChains { of_op, ids: Vec::new() })
    }

    fn legal_layouts(&self, _: u32) -> Option<Arc<layout::LegalOpLayouts>> {
        None
    }
}

fn short(l: Option<&TtnnLayout>) -> String {
    let Some(l) = l else { return "-".to_owned() };
    let buffer = if l.is_l1() { "L1" } else { "DRAM" };
    let mem = match l.memory_layout {
        Some(TensorMemoryLayout::HeightSharded) => "hs",
        Some(TensorMemoryLayout::WidthSharded) => "ws",
        Some(TensorMemoryLayout::BlockSharded) => "bs",
        _ => "il",
    };
    let g = l.grid2d();
    format!("{buffer} {mem} {}x{}", g.rows, g.cols)
}

/// Walks every chunk of `text`'s function in order under `df-sharding-merge`, the first
/// starting from `carry`, and prints each op's planned output, spill and the layouts it
/// expects on its operands, then the merges made.
fn check(text: &str, chains: &[&[u32]], cuts: &[u32], carry: Carry, expect: Expect) {
    let f = lower(text);
    let n = f.body.ops.len() as u32;
    let layout = chunks(n, cuts);
    let src = Plain { f: &f, layout: &layout, base: base(&f, &layout, chains) };
    let target = Target::n150();
    let model = CachedOpModel::new(AnalyticalModel);
    let costs = cost::CostCache::new();
    let mut carry = carry;
    let mut out = String::new();
    let mut merges = Vec::new();
    for k in 0..layout.len() as u32 {
        let (slice, next) = walk_chunk(&ChunkInputs {
            src: &src,
            k,
            merging: true,
            l1_interleaved_fallback: false,
            layout: &layout,
            topo: &f.topo,
            sched: &f.sched,
            carry: &carry,
            target: &target,
            model: &model,
            costs: &costs,
        });
        for (&i, p) in slice.ops.iter().zip(&slice.plans) {
            let _ = write!(out, "{:<3} {}", f.body.ops[i as usize].key, short(p.layout.as_ref()));
            if let Some(s) = &p.spill {
                let _ = write!(out, " | spill to {}", short(Some(&s.layout)));
            }
            for (k, e) in p.expected_operands.iter().enumerate() {
                if let Some(e) = e {
                    let _ = write!(out, " | operand {k} read as {}", short(Some(&e.layout)));
                }
            }
            out.push('\n');
        }
        merges.extend(slice.merges.iter().map(|m| m.description.clone()));
        carry = next;
    }
    for m in merges {
        let _ = writeln!(out, "merge: {m}");
    }
    expect.assert_eq(&out);
}

/// A relu whose result two later ops read: a fork.
const FORK: &str = r#"
#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @main(%a: tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> {
  %0 = "ttnn.relu"(%a) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l>
  %1 = "ttnn.exp"(%0) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l>
  %2 = "ttnn.add"(%0, %1) : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l>
  return %2 : tensor<256x256xbf16, #l>
}
"#;

#[test]
fn a_fork_keeps_its_sharded_output_in_l1_for_both_users() {
    check(
        FORK,
        &[&[0]],
        &[],
        Carry::default(),
        expect![[r#"
            %0  L1 bs 8x8
            %1  DRAM il 1x1
            %2  DRAM il 1x1
            merge: `%0`: fork: the sharded output stays in L1 for all users
        "#]],
    );
}

#[test]
fn a_fork_decided_in_one_chunk_reads_its_users_in_the_next() {
    check(
        FORK,
        &[&[0]],
        &[1],
        Carry::default(),
        expect![[r#"
            %0  L1 bs 8x8
            %1  DRAM il 1x1
            %2  DRAM il 1x1
            merge: `%0`: fork: the sharded output stays in L1 for all users
        "#]],
    );
}

#[test]
fn a_fork_whose_window_is_full_of_held_l1_spills_to_dram() {
    // An earlier decision holds almost all of L1 over the fork's users.
    let held = Target::n150().usable_l1_per_core() - 1024;
    let carry = Carry {
        open: vec![Reservation { op: 0, start: 0, end: 2, bytes: held }],
        ..Carry::default()
    };
    check(
        FORK,
        &[&[0]],
        &[],
        carry,
        expect![[r#"
        %0  L1 bs 8x8 | spill to DRAM il 1x1
        %1  DRAM il 1x1
        %2  DRAM il 1x1
    "#]],
    );
}

#[test]
fn a_chain_feeding_the_second_operand_of_another_chain_stays_in_l1_for_it() {
    check(
        r#"
#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @main(%a: tensor<256x256xbf16, #l>, %b: tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> {
  %0 = "ttnn.relu"(%a) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l>
  %1 = "ttnn.add"(%b, %0) : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l>
  %2 = "ttnn.exp"(%1) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l>
  return %2 : tensor<256x256xbf16, #l>
}
"#,
        &[&[0], &[1, 2]],
        &[],
        Carry::default(),
        expect![[r#"
            %0  L1 bs 8x8
            %1  L1 bs 8x8
            %2  L1 bs 8x8 | spill to DRAM il 1x1
            merge: `%0` stays in L1 for operand 1 of `%1`
        "#]],
    );
}

#[test]
fn a_chain_ending_right_before_a_reshape_spills_to_l1_interleaved_for_it() {
    check(
        r#"
#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
#r = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<16x4x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @main(%a: tensor<256x256xbf16, #l>) -> tensor<512x128xbf16, #r> {
  %0 = "ttnn.relu"(%a) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l>
  %1 = "ttnn.reshape"(%0) <{shape = [512 : i32, 128 : i32]}> : (tensor<256x256xbf16, #l>) -> tensor<512x128xbf16, #r>
  %2 = "ttnn.exp"(%1) : (tensor<512x128xbf16, #r>) -> tensor<512x128xbf16, #r>
  return %2 : tensor<512x128xbf16, #r>
}
"#,
        &[&[0]],
        &[],
        Carry::default(),
        expect![[r#"
            %0  L1 bs 8x8 | spill to L1 il 8x8
            %1  L1 il 8x8
            %2  DRAM il 1x1
            merge: `%1` output in L1 interleaved
        "#]],
    );
}
