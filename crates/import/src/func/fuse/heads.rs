//! tt-mlir's `ConcatenateHeadsUpdatePattern`: an attention's heads merged back in one op.
//!
//! After attention, frontends bring `[B, H, S, D]` back to `[B, S, H·D]` with a permute
//! `[0, 2, 1, 3]` and a reshape (or straight to the 2-D `[B·S, H·D]` the output projection
//! reads). tt-mlir's TTIR fusing (on by default) replaces the reshape with one
//! `concatenate_heads` (tt-metal's `ttnn.transformer.concatenate_heads`, one read and one
//! write of the tensor); for the 2-D form the op gives `[B, S, H·D]` and the reshape to
//! `[B·S, H·D]` stays after it, which keeps the last dim and folds rows that are whole tiles,
//! so tt-metal performs it as a view. Heads whose size is not a multiple of 32 are left as
//! written, as tt-mlir's workaround decomposes the op for them. The permute is left to any other reader and is otherwise
//! removed as dead. tt-mlir's TTNN decomposition splits the op back into the permute and the
//! reshape only when its op-model validation rejects it (or when it runs without the op
//! model); the importer keeps it, as it keeps the fused attention.

use super::Uses;
use crate::func::{Def, Form, FuncOut, OutOp, OutTy, ValueId};
use crate::ty::TType;

impl FuncOut {
    /// Replaces every `reshape(permute(x, [0, 2, 1, 3]))` that concatenates `x`'s heads (see
    /// the module doc) with `ttnn.concatenate_heads`, and a reshape after it for the 2-D form.
    pub(crate) fn fuse_concatenate_heads(&mut self) {
        let uses = self.uses();
        let mut found: Vec<(usize, ValueId, Vec<u64>)> = Vec::new();
        for (i, op) in self.ops.iter().enumerate() {
            if let Some((x, heads_shape)) = self.match_concatenate_heads(op, &uses) {
                found.push((i, x, heads_shape));
            }
        }
        if found.is_empty() {
            return;
        }
        let mut at: rustc_hash::FxHashMap<usize, Vec<OutOp>> = Default::default();
        for (i, x, heads_shape) in found {
            let reshape = self.ops[i].clone();
            let result = reshape.results[0];
            let Some(out_t) = self.tensor_ty(result).cloned() else { continue };
            let mut ops = Vec::new();
            let fused = OutOp {
                name: "ttnn.concatenate_heads".to_owned(),
                form: Form::Generic { raw_props: None, attrs: None },
                operands: vec![x],
                props: Vec::new(),
                results: vec![result],
                loc: reshape.loc.clone(),
                written: reshape.written,
                pure_op: true,
            };
            if out_t.shape == heads_shape {
                ops.push(fused);
            } else {
                // 2-D: the op gives `[B, S, H·D]`, the reshape (a view) the `[B·S, H·D]`.
                let id = self.values.len() as ValueId;
                self.values.push((OutTy::Tensor(TType { shape: heads_shape, ..out_t }), Def::Op));
                ops.push(OutOp {
                    results: vec![id],
                    loc: format!("{}_heads", reshape.loc),
                    written: false,
                    ..fused
                });
                ops.push(OutOp { operands: vec![id], ..reshape });
            }
            at.insert(i, ops);
        }
        let old = std::mem::take(&mut self.ops);
        for (i, op) in old.into_iter().enumerate() {
            match at.remove(&i) {
                Some(ops) => self.ops.extend(ops),
                None => self.ops.push(op),
            }
        }
    }

    /// For a reshape of a `[0, 2, 1, 3]` permute of a 4-D `[B, H, S, D]` tensor to
    /// `[B, S, H·D]` or `[B·S, H·D]`: the permute's input and `[B, S, H·D]`.
    fn match_concatenate_heads(&self, op: &OutOp, u: &Uses) -> Option<(ValueId, Vec<u64>)> {
        if op.name != "ttnn.reshape" {
            return None;
        }
        let [input] = op.operands.as_slice() else { return None };
        let permute = self.def(*input, "ttnn.permute", u)?;
        let perm = permute.props.iter().find(|(k, _)| k == "permutation")?;
        if perm.1.replace(' ', "") != "array<i64:0,2,1,3>" {
            return None;
        }
        let [x] = permute.operands.as_slice() else { return None };
        let xs = &self.tensor_ty(*x)?.shape;
        let [b, h, s, d] = xs.as_slice() else { return None };
        // tt-mlir's workaround splits the op back into the permute and the reshape when the
        // head size is not a whole number of tiles (`ConcatenateHeadsOpRewritePattern`).
        if d % 32 != 0 {
            return None;
        }
        let out = &self.tensor_ty(*op.results.first()?)?.shape;
        let heads = vec![*b, *s, h.checked_mul(*d)?];
        let flat = vec![b.checked_mul(*s)?, heads[2]];
        (*out == heads || *out == flat).then_some((*x, heads))
    }
}
