//! tt-mlir's SDPA fusing pattern: a written-out attention (score matmul, mask, softmax,
//! value matmul) becomes one `ttnn.scaled_dot_product_attention` or, for a query of length
//! one, `ttnn.scaled_dot_product_attention_decode`.
//!
//! tt-xla writes attention op by op, in `f32`, over `[batch, heads, queries, kv_len]`
//! scores (in a decode step the unit query dim pads every row to a whole tile); tt-mlir's
//! `SDPAFusingPattern` (part of its default TTIR fusing) recognises it from the value matmul
//! back: an optional NaN guard `where(row fully masked, 0, softmax)`, a softmax over the last
//! dim, an optional additive mask, a score matmul whose key is transposed by a permute of the
//! last two dims, scale multiplies on the query and key sides, and the grouped-query expansion
//! of key and value (tt-xla's reshape, broadcast, reshape, which tt-mlir first turns into a
//! `repeat_interleave`). Its TTIR-to-TTNN conversion then lowers a query of sequence length
//! one to the decode op (query permuted to `[1, batch, heads, dim]`, mask to
//! `[batch, 1, heads, kv_len]` with its heads materialized, the result permuted back) and any
//! other to the prefill op (a mask broadcast over the queries repeated to their number), and
//! its workaround pass runs either op in `bf16`. The matcher declines whenever a piece is
//! missing or used elsewhere, as the pattern does.

use ttnn_types::DataType;

use super::{Uses, prop};
use crate::{
    dense,
    func::{Def, Form, FuncOut, OutOp, OutTy, ValueId},
    ty::TType,
};

/// A matched attention, replacing the value matmul at `at`.
struct Sdpa {
    at: usize,
    query: ValueId,
    key: ValueId,
    value: ValueId,
    mask: Option<ValueId>,
    scale: f64,
    /// The NaN guard's row predicate when it cannot be rebuilt from the mask.
    guard: Option<Guard>,
}

/// Whether the written attention zeroed fully masked rows, and from what.
enum Guard {
    /// Rebuilt from the mask: `max(mask) == -inf` per row.
    FromMask,
    /// The model's own `[B, H, 1, 1]` predicate.
    Written(ValueId),
}

/// `#ttnn.shape<AxBx..>`.
fn shape_attr(shape: &[u64]) -> String {
    format!("#ttnn.shape<{}>", shape.iter().map(u64::to_string).collect::<Vec<_>>().join("x"))
}

/// Data types tt-metal's SDPA kernels take; others are cast to `bf16` (tt-mlir's workaround).
fn sdpa_dtype(d: DataType) -> bool {
    matches!(d, DataType::BF16 | DataType::BfpBF8 | DataType::BfpBF4)
}

impl FuncOut {
    /// Fuses every attention tt-mlir's SDPA pattern would fuse (see the module doc).
    /// The fused op's chain takes the value matmul's place and result; the ops it absorbed
    /// are left without uses, for [`FuncOut::remove_dead_ops`].
    pub(crate) fn fuse_sdpa(&mut self) {
        let uses = self.uses();
        let found: Vec<Sdpa> =
            (0..self.ops.len()).filter_map(|i| self.match_sdpa(i, &uses)).collect();
        if found.is_empty() {
            return;
        }
        let mut before: rustc_hash::FxHashMap<usize, Vec<OutOp>> = Default::default();
        for s in &found {
            let ops = self.rewrite_sdpa(s);
            before.insert(s.at, ops);
        }
        let old = std::mem::take(&mut self.ops);
        for (i, op) in old.into_iter().enumerate() {
            match before.remove(&i) {
                // The last op of the fused chain produces the matmul's result.
                Some(ops) => self.ops.extend(ops),
                None => self.ops.push(op),
            }
        }
    }

    fn peel_cast(&self, v: ValueId, u: &Uses) -> ValueId {
        match self.def(v, "ttnn.typecast", u) {
            Some(c) => c.operands.first().copied().unwrap_or(v),
            None => v,
        }
    }

    /// The fill value of a `ttnn.full` reached through typecasts, reshapes and repeats
    /// (tt-mlir's scale extraction looks through casts, broadcasts and reshapes).
    fn constant_through_layout(&self, mut v: ValueId, u: &Uses) -> Option<f64> {
        loop {
            let op = self.ops.get(*u.producer.get(&v)?)?;
            match op.name.as_str() {
                "ttnn.typecast" | "ttnn.reshape" | "ttnn.repeat" => v = *op.operands.first()?,
                "ttnn.full" => return self.full_value(v, u),
                _ => return None,
            }
        }
    }

    /// `x * c`, `c * x` or `x / c` for a constant `c`: `x` and the factor; otherwise `v` itself.
    fn peel_scale(&self, v: ValueId, u: &Uses) -> (ValueId, Option<f64>) {
        if let Some(m) = self.def(v, "ttnn.multiply", u)
            && let [a, b] = m.operands.as_slice()
        {
            if let Some(c) = self.constant_through_layout(*b, u) {
                return (*a, Some(c));
            }
            if let Some(c) = self.constant_through_layout(*a, u) {
                return (*b, Some(c));
            }
        }
        if let Some(d) = self.def(v, "ttnn.divide", u)
            && let [a, b] = d.operands.as_slice()
            && let Some(c) = self.constant_through_layout(*b, u)
            && c != 0.0
        {
            return (*a, Some(1.0 / c));
        }
        (v, None)
    }

    /// The input of a rank-4 permute that swaps only the last two dims.
    fn last_two_transposed(&self, v: ValueId, u: &Uses) -> Option<ValueId> {
        let p = self.def(v, "ttnn.permute", u)?;
        let perm = prop(p, "permutation")?.strip_prefix("array<i64:")?.strip_suffix('>')?;
        let perm: Vec<&str> = perm.split(',').map(str::trim).collect();
        (perm == ["0", "1", "3", "2"]).then(|| p.operands.first().copied())?
    }

    /// A grouped-query expansion of `v` along dim 1 (the heads), under at most one typecast:
    /// the un-expanded tensor, the cast's data type if there is one, and the repeat count.
    /// tt-xla writes it as reshape (a unit dim inserted after the heads), repeat along that
    /// dim, reshape (heads times the count), which tt-mlir's
    /// `ReshapeBroadcastReshapeToRepeatPattern` turns into a `repeat_interleave` on dim 1.
    fn gqa_expansion(&self, v: ValueId, u: &Uses) -> Option<(ValueId, Option<DataType>, u64)> {
        let (inner, cast) = match self.def(v, "ttnn.typecast", u) {
            Some(c) => (*c.operands.first()?, Some(self.tensor_ty(v)?.dtype)),
            None => (v, None),
        };
        let last = self.def(inner, "ttnn.reshape", u)?;
        let rep_v = *last.operands.first()?;
        let rep = self.def(rep_v, "ttnn.repeat", u)?;
        let first_v = *rep.operands.first()?;
        let first = self.def(first_v, "ttnn.reshape", u)?;
        let x = *first.operands.first()?;
        let (input, mid, out) = (
            &self.tensor_ty(x)?.shape,
            &self.tensor_ty(first_v)?.shape,
            &self.tensor_ty(inner)?.shape,
        );
        let dims: Vec<u64> = prop(rep, "repeat_dims")?
            .strip_prefix("#ttnn.shape<")?
            .strip_suffix('>')?
            .split('x')
            .map(|d| d.parse().ok())
            .collect::<Option<_>>()?;
        let mut grown = dims.iter().enumerate().filter(|(_, d)| **d != 1);
        let (at, count) = grown.next().map(|(k, d)| (k, *d))?;
        if grown.next().is_some()
            || at != 2
            || mid.len() != input.len() + 1
            || mid.get(at) != Some(&1)
        {
            return None;
        }
        let mut expected_mid = input.clone();
        expected_mid.insert(at, 1);
        let mut expected_out = input.clone();
        expected_out[at - 1] = expected_out[at - 1].saturating_mul(count);
        (*mid == expected_mid && *out == expected_out).then_some((x, cast, count))
    }

    /// True when `v` is computed (through any ops) from a tensor of shape `shape`.
    fn reads_shape(&self, v: ValueId, shape: &[u64], u: &Uses) -> bool {
        let mut seen = rustc_hash::FxHashSet::default();
        let mut stack = vec![v];
        while let Some(x) = stack.pop() {
            if !seen.insert(x) {
                continue;
            }
            if self.tensor_ty(x).is_some_and(|t| t.shape == shape) {
                return true;
            }
            if let Some(op) = u.producer.get(&x).and_then(|p| self.ops.get(*p)) {
                stack.extend(op.operands.iter().copied());
            }
        }
        false
    }

    /// tt-mlir's `SDPAFusingPattern` at the value matmul `i`.
    fn match_sdpa(&self, i: usize, u: &Uses) -> Option<Sdpa> {
        let pv = &self.ops[i];
        if pv.name != "ttnn.matmul"
            || pv.results.len() != 1
            || prop(pv, "transpose_a") != Some("false")
            || prop(pv, "transpose_b") != Some("false")
        {
            return None;
        }
        let [weights, value] = pv.operands.as_slice() else { return None };
        let mut probs = self.peel_cast(*weights, u);
        // The NaN guard: where(row predicate [B, H, Sq, 1], zeros, softmax).
        let mut guard_cond = None;
        if let Some(w) = self.def(probs, "ttnn.where", u)
            && let [cond, zeros, soft] = w.operands.as_slice()
        {
            let cond = match self.def(*cond, "ttnn.repeat", u) {
                Some(r) => *r.operands.first()?,
                None => *cond,
            };
            let row = self.tensor_ty(cond).is_some_and(|t| t.rank() == 4 && t.shape[3] == 1);
            if row && self.full_value(*zeros, u) == Some(0.0) {
                guard_cond = Some(cond);
                probs = self.peel_cast(*soft, u);
            }
        }
        let softmax = self.def(probs, "ttnn.softmax", u)?;
        let scores_in = *softmax.operands.first()?;
        let rank = self.tensor_ty(scores_in)?.rank();
        let dim: i64 = prop(softmax, "dimension")?.split(':').next()?.trim().parse().ok()?;
        if (if dim < 0 { dim + rank as i64 } else { dim }) != rank as i64 - 1
            || !self.single_use(&[probs], u)
        {
            return None;
        }
        let chain = self.peel_cast(scores_in, u);
        // The score matmul, plain or plus a mask, with an optional scale after it.
        let score_matmul = |v: ValueId| -> Option<(&OutOp, Option<f64>)> {
            let (stripped, post) = self.peel_scale(v, u);
            let m = self.def(stripped, "ttnn.matmul", u)?;
            (m.results[0] != pv.results[0] && prop(m, "transpose_a") == Some("false"))
                .then_some((m, post))
        };
        let (mm, post_scale, mask) = match self.def(chain, "ttnn.add", u) {
            Some(add) => {
                let [l, r] = add.operands.as_slice() else { return None };
                match score_matmul(*l) {
                    Some((m, s)) => (m, s, Some(*r)),
                    None => {
                        let (m, s) = score_matmul(*r)?;
                        (m, s, Some(*l))
                    }
                }
            }
            None => {
                let (m, s) = score_matmul(chain)?;
                (m, s, None)
            }
        };
        let [q_raw, k_raw] = mm.operands.as_slice() else { return None };
        let (query, q_scale) = self.peel_scale(*q_raw, u);
        let (k_outer, k_after) = self.peel_scale(*k_raw, u);
        let k_in = if prop(mm, "transpose_b") == Some("true") {
            k_outer
        } else {
            self.last_two_transposed(k_outer, u)?
        };
        let (mut key, k_before) = self.peel_scale(k_in, u);
        let k_scale = match (k_after, k_before) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(1.0) * b.unwrap_or(1.0)),
        };
        let pre = match (q_scale, k_scale) {
            (None, None) => None,
            (q, k) => Some(q.unwrap_or(1.0) * k.unwrap_or(1.0)),
        };
        let scale = match (post_scale, pre) {
            (Some(_), Some(_)) => return None,
            (s, p) => s.or(p).unwrap_or(1.0),
        };
        let mut value = *value;
        // tt-mlir's op verifier wants key and value of one type, and the query of the
        // result's; the matcher declines otherwise.
        let (kd, vd) = (self.tensor_ty(key)?.dtype, self.tensor_ty(value)?.dtype);
        if kd != vd || self.tensor_ty(query)?.dtype != self.tensor_ty(pv.results[0])?.dtype {
            return None;
        }
        if let (Some((kn, kc, kr)), Some((vn, vc, vr))) =
            (self.gqa_expansion(key, u), self.gqa_expansion(value, u))
            && kr == vr
            && kc == vc
        {
            // The cast outside the expansion is re-applied to the un-expanded tensor; the
            // workaround's cast back to `bf16` then cancels it, so the op reads the native
            // tensor when that is a type SDPA takes (see `rewrite_sdpa`).
            (key, value) = (kn, vn);
        }
        // Shapes: Q [B, Hq, 1, D], K and V [B, Hkv, S, D], Hq a multiple of Hkv.
        let (qt, kt, vt) = (self.tensor_ty(query)?, self.tensor_ty(key)?, self.tensor_ty(value)?);
        let out_t = self.tensor_ty(pv.results[0])?;
        if qt.rank() != 4 || kt.rank() != 4 || kt.shape != vt.shape {
            return None;
        }
        let (b, hq, sq, d) = (qt.shape[0], qt.shape[1], qt.shape[2], qt.shape[3]);
        let (hkv, s) = (kt.shape[1], kt.shape[2]);
        if kt.shape[0] != b
            || kt.shape[3] != d
            || hkv == 0
            || hq % hkv != 0
            || out_t.shape != qt.shape
        {
            return None;
        }
        if let Some(m) = mask {
            let mt = self.tensor_ty(m)?;
            let ok = mt.rank() == 4
                && (mt.shape[0] == 1 || mt.shape[0] == b)
                && (mt.shape[1] == 1 || mt.shape[1] == hq)
                // The query's length, or 1 where the import already folded the mask's
                // broadcast over the queries (tt-mlir's prefill lowering repeats it back).
                && (mt.shape[2] == sq || mt.shape[2] == 1)
                && mt.shape[3] == s;
            if !ok {
                return None;
            }
        }
        let guard = guard_cond.and_then(|cond| match mask {
            Some(_) => Some(Guard::FromMask),
            // Without a mask nothing is -inf: a predicate read from the scores is always
            // false and is dropped; one given by the caller stays.
            None => (!self.reads_shape(cond, &self.tensor_ty(scores_in)?.shape, u))
                .then_some(Guard::Written(cond)),
        });
        Some(Sdpa { at: i, query, key, value, mask, scale, guard })
    }

    /// The attention op and its adapters, in order, ending in an op that produces the value
    /// matmul's result.
    fn rewrite_sdpa(&mut self, s: &Sdpa) -> Vec<OutOp> {
        let u = self.uses();
        let pv = self.ops[s.at].clone();
        let result = pv.results[0];
        let loc = pv.loc.clone();
        let mut ops = Vec::new();
        let (Some(qt), Some(out_t)) =
            (self.tensor_ty(s.query).cloned(), self.tensor_ty(result).cloned())
        else {
            return vec![pv];
        };
        let (b, hq, sq, d) = (qt.shape[0], qt.shape[1], qt.shape[2], qt.shape[3]);
        let mut emit = |f: &mut FuncOut,
                        name: &str,
                        operands: Vec<ValueId>,
                        props: Vec<(String, String)>,
                        ty: Option<TType>,
                        suffix: &str|
         -> ValueId {
            let r = match ty {
                Some(t) => {
                    let id = f.values.len() as ValueId;
                    f.values.push((OutTy::Tensor(t), Def::Op));
                    id
                }
                None => result,
            };
            ops.push(OutOp {
                name: name.to_owned(),
                form: Form::Generic { raw_props: None, attrs: None },
                operands,
                props,
                results: vec![r],
                loc: format!("{loc}{suffix}"),
                written: false,
                pure_op: true,
            });
            r
        };
        let perm = |p: [u8; 4]| {
            vec![(
                "permutation".to_owned(),
                format!("array<i64: {}, {}, {}, {}>", p[0], p[1], p[2], p[3]),
            )]
        };
        let to_bf16 = |t: &TType| TType { dtype: DataType::BF16, ..t.clone() };
        // K and V: the native tensors when SDPA takes their type (the f32 casts tt-xla wrote
        // and the workaround's casts back to bf16 cancel), else cast to bf16.
        let mut kv = Vec::new();
        for (v, suffix) in [(s.key, "_key_typecast"), (s.value, "_value_typecast")] {
            let src = self.peel_cast(v, &u);
            let Some(t) = self.tensor_ty(src).cloned() else { return vec![pv] };
            kv.push(if sdpa_dtype(t.dtype) {
                src
            } else {
                emit(self, "ttnn.typecast", vec![src], Vec::new(), Some(to_bf16(&t)), suffix)
            });
        }
        // Q, in bf16; for decode permuted to [1, B, Hq, D].
        let decode = sq == 1;
        let q_src = self.peel_cast(s.query, &u);
        let q_src = if self.tensor_ty(q_src).is_some_and(|t| sdpa_dtype(t.dtype)) {
            q_src
        } else {
            s.query
        };
        let Some(q_src_t) = self.tensor_ty(q_src).cloned() else { return vec![pv] };
        let op_shape = if decode { vec![1, b, hq, d] } else { qt.shape.clone() };
        let mut q = q_src;
        if decode {
            let t = q_src_t.reshaped(op_shape.clone());
            q = emit(self, "ttnn.permute", vec![q], perm([2, 0, 1, 3]), Some(t), "_query_permute");
        }
        if !sdpa_dtype(q_src_t.dtype) {
            let t = TType::tile(op_shape.clone(), DataType::BF16);
            q = emit(self, "ttnn.typecast", vec![q], Vec::new(), Some(t), "_query_typecast");
        }
        // The mask, in bf16: for decode [B|1, Hq|1, 1, S] -> [B|1, 1, Hq, S] with the heads
        // materialized (tt-metal's decode kernel does not broadcast them); for prefill a
        // mask broadcast over the queries is repeated to their number.
        let mut operands = vec![q, kv[0], kv[1]];
        if let Some(m) = s.mask {
            let Some(mt) = self.tensor_ty(m).cloned() else { return vec![pv] };
            let (mb, mh, ms, sk) = (mt.shape[0], mt.shape[1], mt.shape[2], mt.shape[3]);
            let mut cur = m;
            let mut shape = mt.shape.clone();
            if decode {
                shape = vec![mb, 1, mh, sk];
                let t = mt.reshaped(shape.clone());
                cur = emit(
                    self,
                    "ttnn.permute",
                    vec![cur],
                    perm([0, 2, 1, 3]),
                    Some(t),
                    "_mask_permute",
                );
                if mh != hq {
                    shape = vec![mb, 1, hq, sk];
                    let dims = format!("#ttnn.shape<1x1x{hq}x1>");
                    let t = mt.reshaped(shape.clone());
                    let props = vec![("repeat_dims".to_owned(), dims)];
                    cur = emit(self, "ttnn.repeat", vec![cur], props, Some(t), "_mask_repeat");
                }
            } else if ms != sq {
                shape = vec![mb, mh, sq, sk];
                let dims = format!("#ttnn.shape<1x1x{sq}x1>");
                let t = mt.reshaped(shape.clone());
                let props = vec![("repeat_dims".to_owned(), dims)];
                cur = emit(self, "ttnn.repeat", vec![cur], props, Some(t), "_mask_repeat");
            }
            if !sdpa_dtype(mt.dtype) {
                let t = TType::tile(shape, DataType::BF16);
                cur = emit(self, "ttnn.typecast", vec![cur], Vec::new(), Some(t), "_mask_typecast");
            }
            operands.push(cur);
        }
        let masked = i32::from(s.mask.is_some());
        let (name, segments) = if decode {
            (
                "ttnn.scaled_dot_product_attention_decode",
                format!("array<i32: 1, 1, 1, {masked}, 0, 0>"),
            )
        } else {
            ("ttnn.scaled_dot_product_attention", format!("array<i32: 1, 1, 1, {masked}, 0>"))
        };
        let props = vec![
            ("is_causal".to_owned(), "false".to_owned()),
            ("operandSegmentSizes".to_owned(), segments),
            ("scale".to_owned(), format!("{} : f32", dense::f32_literal(s.scale as f32))),
        ];
        let op_t = TType::tile(op_shape.clone(), DataType::BF16);
        let mut attn = emit(self, name, operands, props, Some(op_t), "");
        if out_t.dtype != DataType::BF16 {
            let t = TType::tile(op_shape, out_t.dtype);
            attn = emit(self, "ttnn.typecast", vec![attn], Vec::new(), Some(t), "_typecast");
        }
        if decode {
            let t = out_t.clone();
            attn = emit(self, "ttnn.permute", vec![attn], perm([1, 2, 0, 3]), Some(t), "_permute");
        }
        // The NaN guard, if any, re-applied on the output rows.
        if let Some(guard) = &s.guard {
            let device = self.device.id;
            let cond = match (guard, s.mask) {
                (Guard::FromMask, Some(m)) => {
                    let Some(mt) = self.tensor_ty(m).cloned() else { return vec![pv] };
                    let mut rows = mt.shape.clone();
                    rows[3] = 1;
                    let row_t = mt.reshaped(rows.clone());
                    let props = vec![
                        ("dim_arg".to_owned(), "[3 : i32]".to_owned()),
                        ("keep_dim".to_owned(), "true".to_owned()),
                    ];
                    let max =
                        emit(self, "ttnn.max", vec![m], props, Some(row_t.clone()), "_mask_max");
                    // tt-mlir's `ttir-fold-full-to-scalar` (always in its pipeline) shrinks a
                    // creation op that only elementwise ops read to one element.
                    let one = vec![1; rows.len()];
                    let inf = dense::f32_literal(f32::NEG_INFINITY);
                    let props = vec![
                        ("fill_value".to_owned(), format!("{inf} : f32")),
                        ("shape".to_owned(), shape_attr(&one)),
                    ];
                    let inf = emit(
                        self,
                        "ttnn.full",
                        vec![device],
                        props,
                        Some(mt.reshaped(one)),
                        "_neg_inf",
                    );
                    emit(self, "ttnn.eq", vec![max, inf], Vec::new(), Some(row_t), "_fully_masked")
                }
                (Guard::Written(c), _) => *c,
                (Guard::FromMask, None) => return vec![pv],
            };
            // One element, as `ttir-fold-full-to-scalar` leaves it (the where is its only
            // reader and the other operands still give the result's shape).
            let one = vec![1; out_t.rank()];
            let props = vec![
                ("fill_value".to_owned(), format!("{} : f32", dense::f32_literal(0.0))),
                ("shape".to_owned(), shape_attr(&one)),
            ];
            let zeros =
                emit(self, "ttnn.full", vec![device], props, Some(out_t.reshaped(one)), "_zeros");
            attn = emit(
                self,
                "ttnn.where",
                vec![cond, zeros, attn],
                Vec::new(),
                Some(out_t),
                "_nan_guard",
            );
        }
        // The chain's last op takes over the value matmul's result.
        let _ = attn;
        match ops.last_mut() {
            Some(last) => last.results = vec![result],
            None => return vec![pv],
        }
        ops
    }
}
