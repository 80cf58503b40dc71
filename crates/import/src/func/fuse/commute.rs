//! tt-mlir's inverse-op erasure around RMS norms: a reshape every use applies moves above.
//!
//! The norm's own fusion is in the parent module; this is the commute that runs after it in
//! tt-mlir's pipeline (`ttir-erase-inverse-ops`, on by default and forced on every function).

use crate::func::{Def, FuncOut, OutOp, OutTy, ValueId};
use crate::ty::TType;

impl FuncOut {
    /// Moves a reshape that every use of an RMS norm applies above the norm, as tt-mlir's
    /// inverse-op erasure does (`TTIRCommuteReshapeThroughRMSNorm`, upwards only): the norm
    /// normalizes the last dim, so a reshape that keeps it commutes, and when all the norm's
    /// users are the same reshape the norm runs on the reshaped input instead. tt-xla's
    /// decode graphs normalize a `32x1x2048` hidden state and reshape the result to the
    /// `32x2048` the projections read; as written every one of the 32 rows pads to a whole
    /// tile (32x the bytes), after the commute the norm reads 64 tiles and the reshape moves
    /// to its input, where it may fold with a reshape before it.
    pub(crate) fn commute_reshapes_above_norms(&mut self) {
        let uses = self.uses();
        let mut readers: rustc_hash::FxHashMap<ValueId, Vec<usize>> = Default::default();
        for (i, op) in self.ops.iter().enumerate() {
            for o in &op.operands {
                readers.entry(*o).or_default().push(i);
            }
        }
        // norm index -> (first reshape, the other identical reshapes)
        let mut commutes: Vec<(usize, Vec<usize>)> = Vec::new();
        for (i, op) in self.ops.iter().enumerate() {
            if op.name != "ttnn.rms_norm" {
                continue;
            }
            let (Some(x), [r]) = (op.operands.first(), op.results.as_slice()) else { continue };
            let Some(users) = readers.get(r) else { continue };
            // A returned norm has a use that is not a reshape.
            if uses.count.get(r) != Some(&users.len()) {
                continue;
            }
            let shape_of = |k: usize| {
                let u = &self.ops[k];
                (u.name == "ttnn.reshape" && u.operands.len() == 1)
                    .then(|| u.props.iter().find(|(k, _)| k == "shape").map(|p| &p.1))
                    .flatten()
            };
            let Some(first) = shape_of(users[0]) else { continue };
            if !users.iter().all(|k| shape_of(*k) == Some(first)) {
                continue;
            }
            let (Some(xt), Some(yt)) =
                (self.tensor_ty(*x), self.tensor_ty(self.ops[users[0]].results[0]))
            else {
                continue;
            };
            if xt.shape.last() != yt.shape.last() {
                continue;
            }
            commutes.push((i, users.clone()));
        }
        if commutes.is_empty() {
            return;
        }
        let mut before: rustc_hash::FxHashMap<usize, OutOp> = Default::default();
        let mut drop = rustc_hash::FxHashSet::default();
        let mut replace: rustc_hash::FxHashMap<ValueId, ValueId> = Default::default();
        for (i, users) in commutes {
            let reshape = self.ops[users[0]].clone();
            let out = reshape.results[0];
            let x = self.ops[i].operands[0];
            let (Some(xt), Some(yt)) = (self.tensor_ty(x), self.tensor_ty(out)) else { continue };
            let moved = TType { shape: yt.shape.clone(), ..xt.clone() };
            let id = self.values.len() as ValueId;
            self.values.push((OutTy::Tensor(moved), Def::Op));
            let norm = &mut self.ops[i];
            before.insert(
                i,
                OutOp {
                    operands: vec![x],
                    results: vec![id],
                    loc: format!("{}_input_reshape", norm.loc),
                    written: false,
                    ..reshape
                },
            );
            norm.operands[0] = id;
            norm.results = vec![out];
            for k in users {
                drop.insert(k);
                if let Some(r) = self.ops[k].results.first().filter(|r| **r != out) {
                    replace.insert(*r, out);
                }
            }
        }
        let old = std::mem::take(&mut self.ops);
        for (i, mut op) in old.into_iter().enumerate() {
            if drop.contains(&i) {
                continue;
            }
            for o in &mut op.operands {
                if let Some(r) = replace.get(o) {
                    *o = *r;
                }
            }
            self.ops.extend(before.remove(&i));
            self.ops.push(op);
        }
        for r in &mut self.returns {
            if let Some(s) = replace.get(&r.id) {
                r.id = *s;
            }
        }
    }
}

impl FuncOut {
    /// Replaces `permute(reshape(permute(x, p), s), q)` by one reshape of `x` when the three
    /// only move whole groups of consecutive axes back into their original order, as
    /// tt-mlir's `PermuteReshapePermuteFusionPattern` (part of its inverse-op erasure) does:
    /// the reshape keeps the rank, each of its output dims is one permuted input dim, a unit
    /// dim, or a product of consecutive ones, and `q` puts the groups back in `x`'s order.
    /// `resnet_hf` brings its last stage from NHWC to NCHW, flattens the spatial dims and
    /// transposes back for the mean: `8x7x7x2048` to `8x1x49x2048`, one reshape instead of
    /// two permutes and a reshape over a tensor whose `7x7` pads to a tile.
    pub(crate) fn fuse_permute_reshape_permute(&mut self) {
        let uses = self.uses();
        let mut rewrites: Vec<(usize, ValueId)> = Vec::new();
        for (i, op) in self.ops.iter().enumerate() {
            if let Some(x) = self.match_permute_reshape_permute(op, &uses) {
                rewrites.push((i, x));
            }
        }
        for (i, x) in rewrites {
            let Some(shape) = self.ops[i].results.first().and_then(|r| self.tensor_ty(*r)) else {
                continue;
            };
            let dims: Vec<String> = shape.shape.iter().map(|d| format!("{d} : i32")).collect();
            let op = &mut self.ops[i];
            op.name = "ttnn.reshape".to_owned();
            op.operands = vec![x];
            op.props = vec![("shape".to_owned(), format!("[{}]", dims.join(", ")))];
        }
    }

    fn match_permute_reshape_permute(&self, last: &OutOp, u: &super::Uses) -> Option<ValueId> {
        if last.name != "ttnn.permute" {
            return None;
        }
        let perm_of = |op: &OutOp| -> Option<Vec<usize>> {
            let text = op.props.iter().find(|(k, _)| k == "permutation")?.1.as_str();
            let inner = text.split(':').nth(1)?.trim().trim_end_matches('>');
            inner.split(',').map(|d| d.trim().parse().ok()).collect()
        };
        let [r] = last.operands.as_slice() else { return None };
        let reshape = self.def(*r, "ttnn.reshape", u)?;
        let [p] = reshape.operands.as_slice() else { return None };
        let first = self.def(*p, "ttnn.permute", u)?;
        let [x] = first.operands.as_slice() else { return None };
        let once = |v: &ValueId| u.count.get(v) == Some(&1);
        if !once(p) && !once(r) && !last.results.first().is_some_and(once) {
            return None;
        }
        let (inner, outer) = (perm_of(first)?, perm_of(last)?);
        let from = &self.tensor_ty(*p)?.shape;
        let to = &self.tensor_ty(*r)?.shape;
        let rank = from.len();
        if to.len() != rank || inner.len() != rank || outer.len() != rank {
            return None;
        }
        // Group the reshape's output dims into the permuted input axes they hold.
        let mut groups: Vec<Vec<usize>> = Vec::with_capacity(rank);
        let mut k = 0;
        for &out in to {
            if k < rank && from[k] == out {
                groups.push(vec![inner[k]]);
                k += 1;
            } else if out == 1 {
                groups.push(Vec::new());
            } else {
                let (mut group, mut consumed) = (Vec::new(), 1u64);
                while k < rank && from[k] != 0 && out % (consumed * from[k]) == 0 {
                    group.push(inner[k]);
                    consumed *= from[k];
                    k += 1;
                }
                if consumed != out {
                    return None;
                }
                groups.push(group);
            }
        }
        if k != rank {
            return None;
        }
        let order: Vec<usize> =
            outer.iter().filter_map(|g| groups.get(*g)).flatten().copied().collect();
        (order.len() == rank && order.iter().enumerate().all(|(i, a)| i == *a)).then_some(*x)
    }
}
