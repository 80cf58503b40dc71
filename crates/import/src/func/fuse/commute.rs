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
