//! tt-mlir's rotary-embedding fusion: `x * cos + rotate_half(x) * sin` in one op.
//!
//! tt-mlir's TTIR fusing (`RoPERotateHalfFusingPattern`) matches the rotate-half form of a
//! rotary embedding, `rotate_half(x) = concat(neg(x[.., D/2:]), x[.., :D/2])` on the last dim,
//! with `x` 4-D and the critical intermediates used once, and wraps it in a
//! `rotary_embedding` composite. Its TTNN pass `ttnn-resolve-composites` promotes the
//! composite to `ttnn.rotary_embedding(x, cos, sin)` when tt-metal's op accepts the operands,
//! and otherwise inlines the written-out form. tt-metal's `RotaryEmbedding::validate` asks for
//! tiled operands, a last dim that is a multiple of 64, cos and sin of one shape and type,
//! `[1, 1, S, D]` with `D` the input's and `S` (tile padded) covering the input's tile-padded
//! sequence dim. The importer fuses exactly when those hold: in the corpus the
//! `llama_3_2_1b_decoder` files, whose one position's cos and sin are `1x1x1x64`, fuse;
//! the decode blocks, which give every user its own position (`32x1x1x64`), stay written out.

use super::Uses;
use crate::func::{Form, FuncOut, ValueId};

/// A matched rotary embedding: the add it replaces and its three operands.
struct Rope {
    at: usize,
    x: ValueId,
    cos: ValueId,
    sin: ValueId,
}

/// `[a : i32, b : i32, ..]` as numbers.
fn i32_list(text: &str) -> Option<Vec<u64>> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    inner.split(',').map(|e| e.split(':').next().and_then(|n| n.trim().parse().ok())).collect()
}

fn tiles(n: u64) -> u64 {
    n.div_ceil(32)
}

impl FuncOut {
    /// Fuses every rotary embedding tt-mlir would fuse and promote (see the module doc).
    pub(crate) fn fuse_rotary_embeddings(&mut self) {
        let uses = self.uses();
        let found: Vec<Rope> =
            (0..self.ops.len()).filter_map(|i| self.match_rope(i, &uses)).collect();
        for r in found {
            let add = &mut self.ops[r.at];
            add.name = "ttnn.rotary_embedding".to_owned();
            add.form = Form::Generic { raw_props: None, attrs: None };
            add.operands = vec![r.x, r.cos, r.sin];
            add.props = Vec::new();
        }
    }

    fn used_once(&self, v: ValueId, u: &Uses) -> bool {
        u.count.get(&v) == Some(&1)
    }

    /// The value a `slice_static` of the last dim reads, and whether it takes the low or the
    /// high half (`[0, D/2)` or `[D/2, D)`, every other dim whole, unit steps).
    fn half_slice(&self, v: ValueId, u: &Uses) -> Option<(ValueId, bool)> {
        let op = self.def(v, "ttnn.slice_static", u)?;
        let [x] = op.operands.as_slice() else { return None };
        let shape = &self.tensor_ty(*x)?.shape;
        let prop = |k: &str| op.props.iter().find(|(n, _)| n == k).and_then(|(_, t)| i32_list(t));
        let (begins, ends, step) = (prop("begins")?, prop("ends")?, prop("step")?);
        let last = shape.len().checked_sub(1)?;
        if begins.len() != shape.len() || ends.len() != shape.len() || step.iter().any(|s| *s != 1)
        {
            return None;
        }
        for d in 0..last {
            if begins[d] != 0 || ends[d] != shape[d] {
                return None;
            }
        }
        let d = shape[last];
        match (begins[last], ends[last]) {
            (0, e) if 2 * e == d => Some((*x, false)),
            (b, e) if 2 * b == d && e == d => Some((*x, true)),
            _ => None,
        }
    }

    /// `x` when `v` is `concat(neg(x[.., D/2:]), x[.., :D/2])` on the last dim, each piece
    /// used once.
    fn rotate_half(&self, v: ValueId, u: &Uses) -> Option<ValueId> {
        let concat = self.def(v, "ttnn.concat", u)?;
        let [neg, lo] = concat.operands.as_slice() else { return None };
        let rank = self.tensor_ty(v)?.shape.len();
        let dim = concat.props.iter().find(|(k, _)| k == "dim")?.1.split(':').next()?.trim();
        if dim.parse::<usize>().ok()? + 1 != rank {
            return None;
        }
        let neg_op = self.def(*neg, "ttnn.neg", u)?;
        let [hi] = neg_op.operands.as_slice() else { return None };
        let (x_hi, true) = self.half_slice(*hi, u)? else { return None };
        let (x_lo, false) = self.half_slice(*lo, u)? else { return None };
        let once = [*neg, *lo, *hi].iter().all(|v| self.used_once(*v, u));
        (x_hi == x_lo && once).then_some(x_hi)
    }

    fn match_rope(&self, i: usize, u: &Uses) -> Option<Rope> {
        let add = self.ops.get(i)?;
        if add.name != "ttnn.add" || add.results.len() != 1 {
            return None;
        }
        let [a, b] = add.operands.as_slice() else { return None };
        let (a, b) = (*a, *b);
        for (cos_mul, sin_mul) in [(a, b), (b, a)] {
            let (Some(cm), Some(sm)) =
                (self.def(cos_mul, "ttnn.multiply", u), self.def(sin_mul, "ttnn.multiply", u))
            else {
                continue;
            };
            let ([c0, c1], [s0, s1]) = (cm.operands.as_slice(), sm.operands.as_slice()) else {
                continue;
            };
            let rotated = [(*s0, *s1), (*s1, *s0)]
                .into_iter()
                .find_map(|(r, sin)| self.rotate_half(r, u).map(|x| (x, sin, r)));
            let Some((x, sin, r)) = rotated else { continue };
            let cos = if *c0 == x {
                *c1
            } else if *c1 == x {
                *c0
            } else {
                continue;
            };
            let once = [cos_mul, sin_mul, r].iter().all(|v| self.used_once(*v, u));
            if once && self.rotary_accepts(x, cos, sin, add.results[0]) {
                return Some(Rope { at: i, x, cos, sin });
            }
        }
        None
    }

    /// tt-metal's `RotaryEmbedding::validate` on these operands (see the module doc), and a
    /// result of the input's shape and type.
    fn rotary_accepts(&self, x: ValueId, cos: ValueId, sin: ValueId, out: ValueId) -> bool {
        let (Some(xt), Some(ct), Some(st), Some(ot)) =
            (self.tensor_ty(x), self.tensor_ty(cos), self.tensor_ty(sin), self.tensor_ty(out))
        else {
            return false;
        };
        let [.., seq, d] = xt.shape.as_slice() else { return false };
        let [c0, c1, cs, cd] = ct.shape.as_slice() else { return false };
        xt.shape.len() == 4
            && d % 64 == 0
            && ct == st
            && (*c0, *c1, *cd) == (1, 1, *d)
            && tiles(*cs) >= tiles(*seq)
            && ot == xt
    }
}
