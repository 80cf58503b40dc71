//! The greedy core on small problems built by hand, with the analytical op model and the
//! layouts the layout generator gives: no database.

use std::{fmt::Write as _, sync::Arc};

use expect_test::{Expect, expect};
use opmodel::{AnalyticalModel, BinaryOp, Candidate, OpConfig, OpKind, Target, UnaryOp};
use target::UsageCap;
use ttnn_types::{DataType, PageLayout, TtnnLayout};

use super::core::{self, How, Op, Operand, Problem};

/// A problem under construction: elementwise ops over bf16 tensors of one shape.
struct Graph {
    shape: Vec<u64>,
    ops: Vec<Op>,
}

impl Graph {
    fn new(shape: &[u64]) -> Graph {
        Graph { shape: shape.to_vec(), ops: Vec::new() }
    }

    fn dram(&self) -> TtnnLayout {
        TtnnLayout::dram_interleaved(&self.shape, DataType::BF16, PageLayout::Tile)
    }

    /// The op's legal candidates as `legal_op_layouts` orders them: DRAM, L1 interleaved,
    /// then the sharded layouts, largest grid first.
    fn candidates(&self) -> Arc<[Candidate]> {
        let pool = layout::generate_tensor_layouts(
            &self.shape,
            DataType::BF16,
            Target::n150().worker_grid(),
        );
        pool.interleaved_tile
            .iter()
            .chain(&pool.sharded_tile)
            .map(|l| Candidate { layout: l.clone(), config: OpConfig::None })
            .collect()
    }

    /// Adds an op reading `inputs` (`None`: a function argument in DRAM); its index.
    fn op(&mut self, name: &str, kind: OpKind, inputs: &[Option<usize>]) -> usize {
        let pool = layout::generate_tensor_layouts(
            &self.shape,
            DataType::BF16,
            Target::n150().worker_grid(),
        );
        let operands = inputs
            .iter()
            .map(|p| Some(Operand { shape: self.shape.clone(), producer: *p, layout: self.dram() }))
            .collect();
        let reshard_targets = inputs
            .iter()
            .map(|p| if p.is_some() { Arc::clone(&pool.reshard_targets) } else { Arc::default() })
            .collect();
        self.ops.push(Op {
            name: name.to_owned(),
            kind,
            operands,
            output_shape: self.shape.clone(),
            output_dtype: DataType::BF16,
            candidates: self.candidates(),
            reshard_targets,
            fallback: Some(Candidate { layout: self.dram(), config: OpConfig::None }),
            optimize: true,
            current: None,
            returned: false,
        });
        self.ops.len() - 1
    }

    fn returns(&mut self, op: usize) {
        self.ops[op].returned = true;
    }
}

fn short(l: &TtnnLayout) -> String {
    let buffer = if l.is_l1() { "L1" } else { "DRAM" };
    let mem = match l.memory_layout {
        Some(ttnn_types::TensorMemoryLayout::HeightSharded) => "hs",
        Some(ttnn_types::TensorMemoryLayout::WidthSharded) => "ws",
        Some(ttnn_types::TensorMemoryLayout::BlockSharded) => "bs",
        _ => "il",
    };
    let g = l.grid2d();
    format!("{buffer} {mem} {}x{}", g.rows, g.cols)
}

/// Optimizes the graph on `target` and prints each op's output, the layouts it reads that
/// differ from what arrives, its spill and how it was decided.
fn check(graph: &Graph, target: &Target, expect: Expect) {
    let problem = Problem { ops: graph.ops.clone() };
    let outcome = core::optimize(&problem, &AnalyticalModel, target);
    let mut s = String::new();
    for (op, d) in problem.ops.iter().zip(&outcome.decisions) {
        let out = d.output.as_ref().map_or_else(|| "kept".to_owned(), |c| short(&c.layout));
        let _ = write!(s, "{:<6} {out}", op.name);
        for (k, (o, want)) in op.operands.iter().zip(&d.inputs).enumerate() {
            let (Some(o), Some(want)) = (o, want) else { continue };
            let arrives = match o.producer {
                Some(q) => {
                    let dq = &outcome.decisions[q];
                    dq.spill.clone().or_else(|| dq.output.as_ref().map(|c| c.layout.clone()))
                }
                None => Some(o.layout.clone()),
            };
            if arrives.as_ref() != Some(want) {
                let _ = write!(s, " | operand {k} converted to {}", short(want));
            }
        }
        if let Some(spill) = &d.spill {
            let _ = write!(s, " | spill to {}", short(spill));
        }
        let how = match &d.how {
            How::Kept => "kept".to_owned(),
            How::Beam { rank, fork: None } => format!("beam {rank}"),
            How::Beam { rank, fork: Some((a, n)) } => format!("beam {rank}, {a} of {n} users"),
            How::NoValid(why) => why.clone(),
        };
        let _ = write!(s, " | {how}");
        if !d.spill_note.is_empty() {
            let _ = write!(s, " | {}", d.spill_note);
        }
        s.push('\n');
    }
    expect.assert_eq(&s);
}

#[test]
fn a_small_chain_with_l1_headroom_stays_sharded_and_only_the_returned_value_goes_to_dram() {
    // tt-mlir's `no_spill_headroom.mlir`: no spill but the return's.
    let mut g = Graph::new(&[64, 128]);
    let add = g.op("add", OpKind::Binary(BinaryOp::Add), &[None, None]);
    let relu = g.op("relu", OpKind::Unary(UnaryOp::Relu), &[Some(add)]);
    g.returns(relu);
    check(
        &g,
        &Target::n150(),
        expect![[r#"
            add    L1 bs 2x4 | beam 0
            relu   L1 bs 2x4 | spill to DRAM il 1x1 | beam 0 | returned: copied to DRAM right after the op
        "#]],
    );
}

#[test]
fn under_a_one_percent_l1_cap_every_op_stays_in_dram() {
    // tt-mlir's `l1_dram_demotion.mlir`: 512x512 bf16 values, `tensor-l1-usage-cap=0.01`.
    let mut g = Graph::new(&[512, 512]);
    let a = g.op("add", OpKind::Binary(BinaryOp::Add), &[None, None]);
    let m = g.op("mul", OpKind::Binary(BinaryOp::Multiply), &[None, None]);
    let b = g.op("add2", OpKind::Binary(BinaryOp::Add), &[Some(a), Some(m)]);
    let r = g.op("relu", OpKind::Unary(UnaryOp::Relu), &[Some(b)]);
    g.returns(r);
    let target = Target::n150().with_l1_usage_cap(UsageCap::from_fraction(0.01).expect("a cap"));
    check(
        &g,
        &target,
        expect![[r#"
        add    DRAM il 1x1 | beam 0
        mul    DRAM il 1x1 | beam 0
        add2   DRAM il 1x1 | beam 0
        relu   DRAM il 1x1 | beam 0
    "#]],
    );
}

#[test]
fn a_fork_takes_the_candidate_most_of_its_users_assumed() {
    let mut g = Graph::new(&[256, 256]);
    let a = g.op("a", OpKind::Unary(UnaryOp::Relu), &[None]);
    let b = g.op("b", OpKind::Unary(UnaryOp::Exp), &[Some(a)]);
    let c = g.op("c", OpKind::Unary(UnaryOp::Neg), &[Some(a)]);
    let d = g.op("d", OpKind::Binary(BinaryOp::Add), &[Some(b), Some(c)]);
    g.returns(d);
    check(
        &g,
        &Target::n150(),
        expect![[r#"
        a      L1 bs 8x8 | beam 0, 2 of 2 users
        b      L1 bs 8x8 | beam 0
        c      L1 bs 8x8 | beam 0
        d      L1 bs 8x8 | spill to DRAM il 1x1 | beam 0 | returned: copied to DRAM right after the op
    "#]],
    );
}

#[test]
fn a_value_used_far_ahead_is_evicted_to_dram_when_a_later_op_does_not_fit() {
    // `a` is read again at the end; the ops between need the L1 it holds.
    let mut g = Graph::new(&[1024, 1024]);
    let a = g.op("a", OpKind::Unary(UnaryOp::Relu), &[None]);
    let b = g.op("b", OpKind::Unary(UnaryOp::Exp), &[Some(a)]);
    let c = g.op("c", OpKind::Unary(UnaryOp::Neg), &[Some(b)]);
    let d = g.op("d", OpKind::Unary(UnaryOp::Abs), &[Some(c)]);
    let e = g.op("e", OpKind::Binary(BinaryOp::Add), &[Some(d), Some(a)]);
    g.returns(e);
    let target = Target::n150().with_l1_usage_cap(UsageCap::from_fraction(0.06).expect("a cap"));
    check(
        &g,
        &target,
        expect![[r#"
        a      L1 bs 8x8 | spill to DRAM il 1x1 | beam 0, 2 of 2 users | evicted to DRAM when c did not fit L1 (the live value used farthest ahead)
        b      L1 bs 8x8 | operand 0 converted to L1 bs 8x8 | beam 0
        c      L1 bs 8x8 | beam 0
        d      L1 bs 8x8 | beam 0
        e      DRAM il 1x1 | no input and output combination validates
    "#]],
    );
}
