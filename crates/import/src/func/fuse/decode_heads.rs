//! tt-mlir's `NLPConcatHeadsDecodeFusing` (its TTNN fusing, run by the TTIR-to-TTNN pipeline
//! whenever fusing is on): a decode attention's heads merged back in one op.
//!
//! In a decode step the attention works on `[S = 1, B, H, D]` (the layout
//! `scaled_dot_product_attention_decode` reads and writes). Frontends bring its result back
//! to `[B, H·D]` for the output projection with a permute `[1, 2, 0, 3]` to `[B, H, 1, D]`
//! and a reshape; written that way each user's heads sit in a tensor whose unit dim pads
//! every row to a whole tile, so the permute and the reshape each move 32x the bytes of the
//! data. tt-mlir replaces the collapsing reshape with tt-metal's `nlp_concat_heads_decode`
//! (`[S, B, H, D]` to `[S, 1, B, H·D]`, one gather of each user's head rows) and a reshape to
//! the collapse's shape, which keeps the last dim and the `B` rows, so tt-metal runs it as a
//! view. The pattern looks through typecasts, and through a NaN guard between the two
//! (`where(cond, 0, x)` zeroing whole heads of a user: `cond` is `[B, H | 1, 1, 1]`, the
//! replacement a one-element splat), which it re-applies on the op's `[S, B, H, D]` input
//! with the condition reshaped to `[S, B, H | 1, 1]`. The reorder is the permute, the reshape
//! to `[B, H, 1, D]` it canonicalizes to, or nothing when that reshape has folded into the
//! collapse. It declines for a sequence longer than one, for a head size or batch that is
//! not a whole number of tiles (tt-metal#38992: the op sizes its output from the padded
//! input) and for a batch larger than the worker grid (one user per core).
//!
//! tt-mlir also validates the fused op against the op model with the height-sharded input
//! its workaround (`NLPConcatHeadsDecodeInputRewritePattern`) gives it; like the other
//! fusions here, the importer does not reproduce that check, and it leaves the input's
//! placement to the optimizer (the imported IR is DRAM interleaved throughout).

use super::Uses;
use crate::{
    func::{FuncOut, OutOp, ValueId},
    ty::TType,
};

/// The worker grid of a Wormhole n150 (8x8), the device the imported IR is planned for: the
/// op places one user per core.
const WORKER_GRID_VOLUME: u64 = 64;

/// A matched head concatenation: the collapsing reshape it replaces, the op's `[S, B, H, D]`
/// input and the NaN guard to re-apply, if any.
struct ConcatHeadsDecode {
    at: usize,
    input: ValueId,
    /// The guard's condition, replacement and location name.
    guard: Option<(ValueId, ValueId, String)>,
}

impl FuncOut {
    /// Replaces every decode head concatenation tt-mlir fuses (see the module doc) with
    /// `ttnn.nlp_concat_heads_decode` and a view reshape; the permute and reshape it
    /// replaces are left without uses, for [`FuncOut::remove_dead_ops`].
    pub(crate) fn fuse_nlp_concat_heads_decode(&mut self) {
        let uses = self.uses();
        let found: Vec<ConcatHeadsDecode> =
            (0..self.ops.len()).filter_map(|i| self.match_concat_heads_decode(i, &uses)).collect();
        if found.is_empty() {
            return;
        }
        let mut at: rustc_hash::FxHashMap<usize, Vec<OutOp>> = Default::default();
        for m in found {
            if let Some(ops) = self.rewrite_concat_heads_decode(&m) {
                at.insert(m.at, ops);
            }
        }
        let old = std::mem::take(&mut self.ops);
        for (i, op) in old.into_iter().enumerate() {
            match at.remove(&i) {
                Some(ops) => self.ops.extend(ops),
                None => self.ops.push(op),
            }
        }
    }

    /// Follows typecasts back to their source (tt-mlir's `lookThrough<TypecastOp>`).
    fn through_typecasts(&self, mut v: ValueId, u: &Uses) -> ValueId {
        while let Some(c) = self.def(v, "ttnn.typecast", u) {
            match c.operands.first() {
                Some(src) => v = *src,
                None => break,
            }
        }
        v
    }

    fn match_concat_heads_decode(&self, i: usize, u: &Uses) -> Option<ConcatHeadsDecode> {
        let op = self.ops.get(i)?;
        if op.name != "ttnn.reshape" {
            return None;
        }
        let [collapse_in] = op.operands.as_slice() else { return None };
        let before = self.through_typecasts(*collapse_in, u);
        let scrub = self.def(before, "ttnn.where", u);
        let reorder = match scrub.map(|w| w.operands.as_slice()) {
            Some([_, _, data]) => self.through_typecasts(*data, u),
            Some(_) => return None,
            None => before,
        };
        let shape = |v: ValueId| self.tensor_ty(v).map(|t| t.shape.as_slice());
        let input = if let Some(p) = self.def(reorder, "ttnn.permute", u) {
            let perm = super::prop(p, "permutation")?;
            if perm.replace(' ', "") != "array<i64:1,2,0,3>" {
                return None;
            }
            *p.operands.first()?
        } else if let Some(r) = self.def(reorder, "ttnn.reshape", u) {
            // The permute canonicalized to a reshape, which only moves the unit sequence dim.
            let src = *r.operands.first()?;
            let ([s, b, h, d], [ob, oh, os, od]) = (shape(src)?, shape(reorder)?) else {
                return None;
            };
            if *s != 1 || (ob, oh, os, od) != (b, h, s, d) {
                return None;
            }
            src
        } else {
            // Folded into the collapse: `[1, B, H, D]` straight to `[B, H·D]`.
            let ([s, b, h, d], [ob, ohd]) = (shape(reorder)?, shape(*op.results.first()?)?) else {
                return None;
            };
            if *s != 1 || ob != b || *ohd != h.checked_mul(*d)? {
                return None;
            }
            reorder
        };
        let [s, b, h, d] = shape(input)? else { return None };
        if *s != 1 || d % 32 != 0 || b % 32 != 0 || *b > WORKER_GRID_VOLUME {
            return None;
        }
        let guard = match scrub {
            None => None,
            Some(w) => {
                let [cond, replacement, _] = w.operands.as_slice() else { return None };
                // Per user (and per head or all heads), broadcast over the rest, with a
                // splat replacement: zeroing whole heads commutes with the reorder and the
                // concatenation.
                let [cb, ch, 1, 1] = shape(*cond)? else { return None };
                if cb != b || (ch != h && *ch != 1) || shape(*replacement)?.iter().any(|d| *d != 1)
                {
                    return None;
                }
                Some((*cond, *replacement, w.loc.clone()))
            }
        };
        Some(ConcatHeadsDecode { at: i, input, guard })
    }

    fn rewrite_concat_heads_decode(&mut self, m: &ConcatHeadsDecode) -> Option<Vec<OutOp>> {
        let collapse = self.ops.get(m.at)?.clone();
        let collapse_t = self.tensor_ty(*collapse.results.first()?)?.clone();
        let input_t = self.tensor_ty(m.input)?.clone();
        let [s, b, h, d] = input_t.shape[..] else { return None };
        let mut ops = Vec::new();
        let mut emit = |f: &mut FuncOut, name: &str, operands, props, ty: TType, loc: String| {
            f.push_generic(&mut ops, name, operands, props, ty, loc)
        };
        let mut x = m.input;
        if let Some((cond, replacement, guard_loc)) = &m.guard {
            let (cond, replacement) = (*cond, *replacement);
            let cond_t = self.tensor_ty(cond)?.clone();
            let heads = cond_t.shape[1];
            let shape = vec![s, b, heads, 1];
            let props = vec![("shape".to_owned(), i32_list(&shape))];
            let cond = emit(
                self,
                "ttnn.reshape",
                vec![cond],
                props,
                cond_t.reshaped(shape),
                format!("{guard_loc}_heads_condition"),
            );
            x = emit(
                self,
                "ttnn.where",
                vec![cond, replacement, x],
                Vec::new(),
                input_t.clone(),
                format!("{guard_loc}_heads"),
            );
        }
        // The op runs in the collapse's data type.
        if input_t.dtype != collapse_t.dtype {
            let t = TType { dtype: collapse_t.dtype, ..input_t.clone() };
            x = emit(
                self,
                "ttnn.typecast",
                vec![x],
                Vec::new(),
                t,
                format!("{}_heads_typecast", collapse.loc),
            );
        }
        let heads_t = TType::tile(vec![s, 1, b, h * d], collapse_t.dtype);
        let props = vec![("num_heads".to_owned(), format!("{h} : ui32"))];
        let fused = emit(
            self,
            "ttnn.nlp_concat_heads_decode",
            vec![x],
            props,
            heads_t,
            format!("{}_heads", collapse.loc),
        );
        // The collapse keeps its place, name and result and now reads `[S, 1, B, H·D]`: it
        // keeps the last dim and the `B` rows, a view.
        ops.push(OutOp { operands: vec![fused], ..collapse });
        Some(ops)
    }
}

/// `[a : i32, b : i32, ..]`, the reshape's `shape` property.
fn i32_list(shape: &[u64]) -> String {
    let items: Vec<String> = shape.iter().map(|d| format!("{d} : i32")).collect();
    format!("[{}]", items.join(", "))
}
