//! tt-mlir's `SharedLHSMatmulFusion` (part of its default TTIR fusing): three or more
//! matmuls (or linears) that multiply the same activation become one matmul over their
//! weights concatenated along the output features, and each original result a slice of it.
//!
//! A transformer's Q, K and V projections read the same normalized hidden state; tt-xla
//! writes them as three matmuls. tt-mlir concatenates the weights (one `concat` that reads
//! only parameters, so const-eval runs it once at load) and runs one matmul, the fused QKV
//! projection tt-metal's hand-written models use too: in a decode step each projection is
//! bound by reading its weight, and the fused one reads them in one program, with one
//! dispatch and the activation read once. Candidates are the users of one value that are the
//! same op as the root (the first in program order), with the same `transpose_a`, weights of
//! the same rank and batch dims, and for linears either all or none with a bias (the biases
//! are concatenated too). When their `transpose_b` differ, the transposed weights are permuted
//! to the untransposed form first. The fused output may have at most 262 144 features (tt-mlir's
//! cap, which keeps a row-major bias page in L1). Weights computed after the first candidate
//! are moved before it when each op on the way is a one-operand op (tt-mlir moves the same
//! chains); otherwise the group is left as written. Two users (an MLP's gate and up) are not
//! enough.

use rustc_hash::FxHashMap;

use super::{Uses, prop};
use crate::{
    func::{Form, FuncOut, OutOp, ValueId},
    ty::TType,
};

/// tt-mlir's `kMaxFusedOutputDim`.
const MAX_FUSED_OUTPUT: u64 = 262_144;

/// A group of matmuls or linears sharing their A operand, in program order.
struct Group {
    ops: Vec<usize>,
    /// The ops defining later candidates' weights (and biases) that must move before the
    /// first candidate, in program order.
    moved: Vec<usize>,
    transpose_b: bool,
    mixed: bool,
    total: u64,
}

impl FuncOut {
    /// Fuses every group of three or more matmuls (or linears) that share their A operand
    /// (see the module doc). The fused chain takes the first candidate's place; the
    /// candidates' results become slices of the fused result.
    pub(crate) fn fuse_shared_lhs_matmuls(&mut self) {
        let uses = self.uses();
        let mut taken = vec![false; self.ops.len()];
        let mut groups = Vec::new();
        for i in 0..self.ops.len() {
            if taken[i] {
                continue;
            }
            if let Some(g) = self.shared_lhs_group(i, &uses, &taken) {
                for k in g.ops.iter().chain(&g.moved) {
                    taken[*k] = true;
                }
                groups.push(g);
            }
        }
        if groups.is_empty() {
            return;
        }
        let mut at: FxHashMap<usize, Vec<OutOp>> = FxHashMap::default();
        let mut drop = vec![false; self.ops.len()];
        for g in &groups {
            // Every operand of a candidate but the shared one is defined before the first or
            // moved, so the group as written is also valid at the first candidate's place.
            let ops = self.rewrite_shared_lhs(g).unwrap_or_else(|| {
                let mut keep: Vec<usize> = g.ops.iter().chain(&g.moved).copied().collect();
                keep.sort_unstable();
                keep.iter().map(|k| self.ops[*k].clone()).collect()
            });
            for k in g.ops.iter().chain(&g.moved) {
                drop[*k] = true;
            }
            at.insert(g.ops[0], ops);
        }
        let old = std::mem::take(&mut self.ops);
        for (i, op) in old.into_iter().enumerate() {
            if let Some(ops) = at.remove(&i) {
                self.ops.extend(ops);
            }
            if !drop[i] {
                self.ops.push(op);
            }
        }
    }

    fn shared_lhs_group(&self, root_at: usize, u: &Uses, taken: &[bool]) -> Option<Group> {
        let root = self.ops.get(root_at)?;
        if !matches!(root.name.as_str(), "ttnn.matmul" | "ttnn.linear") || root.results.len() != 1 {
            return None;
        }
        let lhs = *root.operands.first()?;
        let flag = |op: &OutOp, key: &str| prop(op, key) == Some("true");
        let b_shape = |op: &OutOp| Some(self.tensor_ty(*op.operands.get(1)?)?.shape.clone());
        let root_b = b_shape(root)?;
        let rank = root_b.len();
        let batch = |s: &[u64]| s[..s.len().saturating_sub(2)].to_vec();
        let mut ops = Vec::new();
        let mut total: u64 = 0;
        for (k, op) in self.ops.iter().enumerate().skip(root_at) {
            if taken[k]
                || op.name != root.name
                || op.results.len() != 1
                || op.operands.first() != Some(&lhs)
                || flag(op, "transpose_a") != flag(root, "transpose_a")
            {
                continue;
            }
            let Some(b) = b_shape(op) else { continue };
            if b.len() != rank || (rank > 2 && batch(&b) != batch(&root_b)) {
                continue;
            }
            let out = self.tensor_ty(op.results[0])?;
            total = total.checked_add(*out.shape.last()?)?;
            ops.push(k);
        }
        if ops.len() < 3 || total > MAX_FUSED_OUTPUT {
            return None;
        }

        // Linears: all with a bias or none.
        let biases = ops.iter().filter(|k| self.ops[**k].operands.len() > 2).count();
        if biases != 0 && biases != ops.len() {
            return None;
        }
        let transpose_b = flag(root, "transpose_b");
        let mixed = ops.iter().any(|k| flag(&self.ops[*k], "transpose_b") != transpose_b);
        // Weight and bias chains defined after the first candidate move before it.
        let mut moved = Vec::new();
        for k in &ops {
            for v in self.ops[*k].operands.iter().skip(1) {
                let mut cur = *v;
                while let Some(&p) = u.producer.get(&cur) {
                    if p < root_at || moved.contains(&p) {
                        break;
                    }
                    let def = &self.ops[p];
                    if ops.contains(&p) || taken[p] {
                        return None;
                    }
                    let [input] = def.operands.as_slice() else { return None };
                    moved.push(p);
                    cur = *input;
                }
            }
        }
        moved.sort_unstable();
        Some(Group { ops, moved, transpose_b: !mixed && transpose_b, mixed, total })
    }

    fn rewrite_shared_lhs(&mut self, g: &Group) -> Option<Vec<OutOp>> {
        let mut out: Vec<OutOp> = g.moved.iter().map(|k| self.ops[*k].clone()).collect();
        let root = self.ops[g.ops[0]].clone();
        let mut emit = |f: &mut FuncOut, name: &str, operands, props, ty: TType, loc: String| {
            f.push_generic(&mut out, name, operands, props, ty, loc)
        };
        let mut weights = Vec::new();
        for k in &g.ops {
            let op = self.ops[*k].clone();
            let w = op.operands[1];
            let wt = self.tensor_ty(w)?.clone();
            if g.mixed && prop(&op, "transpose_b") == Some("true") {
                let r = wt.rank();
                let mut perm: Vec<usize> = (0..r).collect();
                perm.swap(r - 2, r - 1);
                let mut shape = wt.shape.clone();
                shape.swap(r - 2, r - 1);
                let text = perm.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
                let props = vec![("permutation".to_owned(), format!("array<i64: {text}>"))];
                let loc = format!("{}_transpose_b", op.loc);
                weights.push(emit(self, "ttnn.permute", vec![w], props, wt.reshaped(shape), loc));
            } else {
                weights.push(w);
            }
        }
        let w0 = self.tensor_ty(*weights.first()?)?.clone();
        let r = w0.rank();
        let dim = if g.transpose_b { r - 2 } else { r - 1 };
        let mut shape = w0.shape.clone();
        shape[dim] = g.total;
        let props = vec![("dim".to_owned(), format!("{dim} : si32"))];
        let concat_loc = format!("{}_concat_weights", root.loc);
        let weight = emit(self, "ttnn.concat", weights, props, w0.reshaped(shape), concat_loc);
        let mut operands = vec![root.operands[0], weight];
        if root.operands.len() > 2 {
            let biases: Vec<ValueId> = g.ops.iter().map(|k| self.ops[*k].operands[2]).collect();
            let b0 = self.tensor_ty(*biases.first()?)?.clone();
            let mut shape = b0.shape.clone();
            let last = shape.len() - 1;
            shape[last] = g.total;
            let props = vec![("dim".to_owned(), format!("{last} : si32"))];
            let loc = format!("{}_concat_bias", root.loc);
            operands.push(emit(self, "ttnn.concat", biases, props, b0.reshaped(shape), loc));
        }
        let rt = self.tensor_ty(*root.results.first()?)?.clone();
        let mut fused_shape = rt.shape.clone();
        let last = fused_shape.len() - 1;
        fused_shape[last] = g.total;
        let tb = if g.transpose_b { "true" } else { "false" };
        let props = vec![
            ("transpose_a".to_owned(), prop(&root, "transpose_a").unwrap_or("false").to_owned()),
            ("transpose_b".to_owned(), tb.to_owned()),
        ];
        let fused_t = TType { shape: fused_shape.clone(), ..rt };
        let fused = emit(self, &root.name, operands, props, fused_t, format!("{}_fused", root.loc));
        // Each candidate becomes its slice of the fused result, under its own name.
        let mut offset = 0;
        for k in &g.ops {
            let op = &self.ops[*k];
            let t = self.tensor_ty(*op.results.first()?)?;
            let n = t.shape[last];
            let list = |v: Vec<u64>| {
                format!(
                    "[{}]",
                    v.iter().map(|d| format!("{d} : i32")).collect::<Vec<_>>().join(", ")
                )
            };
            let mut begins = vec![0; fused_shape.len()];
            begins[last] = offset;
            let mut ends = t.shape.clone();
            ends[last] = offset + n;
            out.push(OutOp {
                name: "ttnn.slice_static".to_owned(),
                form: Form::Generic { raw_props: None, attrs: None },
                operands: vec![fused],
                props: vec![
                    ("begins".to_owned(), list(begins)),
                    ("ends".to_owned(), list(ends)),
                    ("step".to_owned(), list(vec![1; fused_shape.len()])),
                ],
                results: op.results.clone(),
                loc: op.loc.clone(),
                written: op.written,
                pure_op: true,
            });
            offset += n;
        }
        Some(out)
    }
}
