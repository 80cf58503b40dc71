//! tt-mlir's TTIR fusing patterns that put a decomposed normalization back into one op.
//!
//! Frontends such as tt-xla write an RMS norm as `x * rsqrt(mean(x^2) + eps) * gamma` and a
//! softmax as `exp(x - max(x)) / sum(exp(x - max(x)))`, op by op. tt-mlir's `ttir-fusing`
//! pass (on by default in its TTIR-to-TTNN pipeline) recognises both and emits one
//! `rms_norm` or `softmax`, so the device runs one program that reads its input once instead
//! of ten elementwise ops and reductions that each read and write a whole tensor. The
//! matchers here follow tt-mlir's patterns (`RMSNormFusionPattern`, `SoftmaxFusionPattern`
//! and `NumericStableSoftmaxFusionPattern`, with `ScaledSumToMeanPattern` and
//! `ReductionWithReshapePattern`, which they rely on, folded into the match) on the lowered
//! TTNN ops, and decline whenever a piece of the pattern is missing or used elsewhere.

mod commute;
mod decode_heads;
mod decode_qkv;
mod heads;
mod rope;
mod sdpa;
mod shared_lhs;
mod split_qkv;

use rustc_hash::{FxHashMap, FxHashSet};

use super::{Def, Form, FuncOut, OutOp, OutTy, ValueId};
use crate::{dense, ty::TType};

/// Who produces each value and how many uses it has (the return counts as a use).
struct Uses {
    producer: FxHashMap<ValueId, usize>,
    count: FxHashMap<ValueId, usize>,
}

/// A matched RMS norm: the op it replaces, its input and weight, and its epsilon.
struct RmsNorm {
    at: usize,
    x: ValueId,
    gamma: ValueId,
    /// The weight's length when it must be reshaped from `1x..x1xN` to `[N]` first.
    gamma_reshape: Option<u64>,
    epsilon: f32,
}

/// A matched softmax: the op it replaces, its input, dimension and stability.
struct Softmax {
    at: usize,
    x: ValueId,
    dim: i64,
    stable: bool,
}

impl FuncOut {
    /// Fuses decomposed RMS norms and softmaxes into `ttnn.rms_norm` and `ttnn.softmax`, as
    /// tt-mlir's TTIR fusing does. The fused op takes the place and the result of the op that
    /// ends the pattern (the multiply by the weight, the divide by the sum); the ops it
    /// absorbed are left without uses, for [`FuncOut::remove_dead_ops`].
    pub(crate) fn fuse_norms(&mut self) {
        let uses = self.uses();
        let mut norms = Vec::new();
        let mut softmaxes = Vec::new();
        for i in 0..self.ops.len() {
            if let Some(n) = self.match_rms_norm(i, &uses) {
                norms.push(n);
            } else if let Some(s) = self.match_softmax(i, &uses) {
                softmaxes.push(s);
            }
        }
        if norms.is_empty() && softmaxes.is_empty() {
            return;
        }
        let mut before: FxHashMap<usize, Vec<OutOp>> = FxHashMap::default();
        let mut after: FxHashMap<usize, Vec<OutOp>> = FxHashMap::default();
        for n in norms {
            self.rewrite_rms_norm(&n, &mut before, &mut after);
        }
        for s in softmaxes {
            let op = &mut self.ops[s.at];
            op.name = "ttnn.softmax".to_owned();
            op.operands = vec![s.x];
            op.props = vec![("dimension".to_owned(), format!("{} : si32", s.dim))];
            if s.stable {
                op.props.push(("numericStable".to_owned(), "true".to_owned()));
            }
        }
        let old = std::mem::take(&mut self.ops);
        for (i, op) in old.into_iter().enumerate() {
            self.ops.extend(before.remove(&i).unwrap_or_default());
            self.ops.push(op);
            self.ops.extend(after.remove(&i).unwrap_or_default());
        }
    }

    fn uses(&self) -> Uses {
        let mut u = Uses { producer: FxHashMap::default(), count: FxHashMap::default() };
        for (i, op) in self.ops.iter().enumerate() {
            for o in &op.operands {
                *u.count.entry(*o).or_insert(0) += 1;
            }
            for r in &op.results {
                u.producer.insert(*r, i);
            }
        }
        for r in &self.returns {
            *u.count.entry(r.id).or_insert(0) += 1;
        }
        u
    }

    fn tensor_ty(&self, v: ValueId) -> Option<&TType> {
        match &self.values.get(v as usize)?.0 {
            OutTy::Tensor(t) => Some(t),
            _ => None,
        }
    }

    /// The op producing `v` when it is named `name` and has one result.
    fn def<'a>(&'a self, v: ValueId, name: &str, u: &Uses) -> Option<&'a OutOp> {
        let op = self.ops.get(*u.producer.get(&v)?)?;
        (op.name == name && op.results.len() == 1).then_some(op)
    }

    /// Follows typecasts and reshapes that keep the last dim (up to unit dims moving past
    /// it) back to their source, as tt-mlir's RMS-norm matcher looks through layout ops.
    fn through_layout(&self, mut v: ValueId, u: &Uses) -> ValueId {
        loop {
            let Some(op) = u.producer.get(&v).and_then(|p| self.ops.get(*p)) else { return v };
            let [input] = op.operands.as_slice() else { return v };
            let passes = match op.name.as_str() {
                "ttnn.typecast" => true,
                "ttnn.reshape" => match (self.tensor_ty(*input), self.tensor_ty(v)) {
                    (Some(a), Some(b)) => last_dim_kept(&a.shape, &b.shape),
                    _ => false,
                },
                _ => false,
            };
            if !passes {
                return v;
            }
            v = *input;
        }
    }

    /// A reduction `name` that keeps its one reduced dim, as tt-mlir's
    /// `ReductionWithReshapePattern` leaves it: either written with `keep_dim = true`, or
    /// without it and followed by a reshape (its only use) that puts the reduced dim back.
    /// Returns the reduction's input and the reduced dim (normalized) and the values of the
    /// pattern that must have no other use.
    fn keep_dim_reduction(
        &self,
        v: ValueId,
        name: &str,
        u: &Uses,
    ) -> Option<(ValueId, usize, Vec<ValueId>)> {
        let direct = |r: &OutOp| {
            let input = *r.operands.first()?;
            let dim = single_dim(r, self.tensor_ty(input)?.rank())?;
            Some((input, dim, prop(r, "keep_dim") == Some("true")))
        };
        if let Some(r) = self.def(v, name, u) {
            let (input, dim, keep) = direct(r)?;
            return keep.then(|| (input, dim, vec![v]));
        }
        let reshape = self.def(v, "ttnn.reshape", u)?;
        let inner = *reshape.operands.first()?;
        let r = self.def(inner, name, u)?;
        let (input, dim, keep) = direct(r)?;
        let mut kept = self.tensor_ty(input)?.shape.clone();
        *kept.get_mut(dim)? = 1;
        (!keep && self.tensor_ty(v)?.shape == kept).then(|| (input, dim, vec![inner, v]))
    }

    /// The input of a mean over the last dim with the reduced dim kept: a `ttnn.mean`, or a
    /// `ttnn.sum` multiplied by `1 / N` (tt-mlir's `ScaledSumToMeanPattern`: the sum on the
    /// left, a `ttnn.full` of `1 / N` on the right, the sum used only there).
    fn mean_of(&self, v: ValueId, u: &Uses) -> Option<ValueId> {
        if let Some((input, dim, single)) = self.keep_dim_reduction(v, "ttnn.mean", u) {
            return (self.last_dim(input, dim) && self.single_use(&single, u)).then_some(input);
        }
        // The scaled sum, its result reshaped to keep the dim or kept by the sum itself.
        let (scaled, reshaped) = match self.def(v, "ttnn.reshape", u) {
            Some(r) => (*r.operands.first()?, Some(v)),
            None => (v, None),
        };
        let mul = self.def(scaled, "ttnn.multiply", u)?;
        let [sum_v, scale] = mul.operands.as_slice() else { return None };
        let sum = self.def(*sum_v, "ttnn.sum", u)?;
        let input = *sum.operands.first()?;
        let in_shape = &self.tensor_ty(input)?.shape;
        let dim = single_dim(sum, in_shape.len())?;
        let n = *in_shape.get(dim)?;
        let expected = 1.0 / n as f64;
        let value = self.full_value(*scale, u)?;
        if (value - expected).abs() > (expected.abs() * 1e-4).max(1e-4)
            || !self.last_dim(input, dim)
            || !self.single_use(&[*sum_v], u)
        {
            return None;
        }
        let mut kept = in_shape.clone();
        kept[dim] = 1;
        let keep = prop(sum, "keep_dim") == Some("true");
        match reshaped {
            Some(r) if !keep => {
                (self.single_use(&[scaled], u) && self.tensor_ty(r)?.shape == kept).then_some(input)
            }
            None if keep => Some(input),
            _ => None,
        }
    }

    fn last_dim(&self, v: ValueId, dim: usize) -> bool {
        self.tensor_ty(v).is_some_and(|t| t.rank() == dim + 1)
    }

    fn single_use(&self, vs: &[ValueId], u: &Uses) -> bool {
        vs.iter().all(|v| u.count.get(v) == Some(&1))
    }

    /// The fill value of a float `ttnn.full`.
    fn full_value(&self, v: ValueId, u: &Uses) -> Option<f64> {
        let full = self.def(v, "ttnn.full", u)?;
        let text = prop(full, "fill_value")?;
        let (number, ty) = text.split_once(" : ")?;
        (ty.trim() == "f32").then(|| number.trim().parse::<f64>().ok()).flatten()
    }

    /// tt-mlir's `RMSNormFusionPattern` at the multiply `i`: `(x * rsqrt(mean(x^2) + eps)) *
    /// gamma` over the last dim, where `x^2` is `pow(x, 2)` or `x * x`, `eps` a `full`,
    /// `gamma` a vector of the last dim's length (or `1x..x1xN`), and `x` the same value on
    /// both paths once typecasts and reshapes that keep the last dim are looked through. The
    /// norm runs on `x` as it is before those (in its own type); the weight's type must
    /// match it.
    fn match_rms_norm(&self, i: usize, u: &Uses) -> Option<RmsNorm> {
        let outer = &self.ops[i];
        if outer.name != "ttnn.multiply" || outer.results.len() != 1 {
            return None;
        }
        let [l, r] = outer.operands.as_slice() else { return None };
        let n = *self.tensor_ty(outer.results[0])?.shape.last()?;
        let through_casts = |mut v: ValueId| loop {
            match self.def(v, "ttnn.typecast", u) {
                Some(c) => v = *c.operands.first()?,
                None => return self.def(v, "ttnn.multiply", u),
            }
        };
        let (inner, gamma_raw) = match through_casts(*l) {
            Some(m) => (m, *r),
            None => (through_casts(*r)?, *l),
        };
        let [a, b] = inner.operands.as_slice() else { return None };
        let rsqrt_of = |v: ValueId| self.def(self.through_layout(v, u), "ttnn.rsqrt", u);
        let (rsqrt, x_raw) = match rsqrt_of(*a) {
            Some(s) => (s, *b),
            None => (rsqrt_of(*b)?, *a),
        };
        let add = self.def(self.through_layout(*rsqrt.operands.first()?, u), "ttnn.add", u)?;
        let [p, q] = add.operands.as_slice() else { return None };
        let (mean_input, eps) = match self.mean_of(*p, u) {
            Some(m) => (m, *q),
            None => (self.mean_of(*q, u)?, *p),
        };
        let square_input = match u.producer.get(&mean_input).and_then(|k| self.ops.get(*k)) {
            Some(sq) if sq.name == "ttnn.pow_scalar" => {
                let rhs = prop(sq, "rhs")?.split_once(" : ")?.0.trim().parse::<f64>().ok()?;
                (rhs == 2.0).then_some(*sq.operands.first()?)?
            }
            Some(sq) if sq.name == "ttnn.multiply" => match sq.operands.as_slice() {
                [s, t] if s == t => *s,
                _ => return None,
            },
            _ => return None,
        };
        let x = self.through_layout(x_raw, u);
        if self.through_layout(square_input, u) != x {
            return None;
        }
        let epsilon = self.full_value(eps, u)? as f32;
        let gamma = self.through_layout(gamma_raw, u);
        let (gt, xt) = (self.tensor_ty(gamma)?, self.tensor_ty(x)?);
        let (last, rest) = gt.shape.split_last()?;
        if *last != n || rest.iter().any(|d| *d != 1) || xt.dtype != gt.dtype {
            return None;
        }
        if xt.shape.last() != Some(&n) {
            return None;
        }
        let gamma_reshape = (gt.shape.len() != 1).then_some(n);
        Some(RmsNorm { at: i, x, gamma, gamma_reshape, epsilon })
    }

    /// tt-mlir's `SoftmaxFusionPattern` and `NumericStableSoftmaxFusionPattern` at the
    /// divide `i`: `exp(s) / sum(exp(s))` with the sum over one dim keeping it, `exp` used
    /// by exactly those two ops and the sum only by the divide; and when `s` is `x - max(x)`
    /// over the same dim (the subtract and the max used only there) the stable softmax of
    /// `x`.
    fn match_softmax(&self, i: usize, u: &Uses) -> Option<Softmax> {
        let div = &self.ops[i];
        if div.name != "ttnn.divide" || div.results.len() != 1 {
            return None;
        }
        let [num, den] = div.operands.as_slice() else { return None };
        let exp = self.def(*num, "ttnn.exp", u)?;
        let s = *exp.operands.first()?;
        let (sum_input, dim, single) = self.keep_dim_reduction(*den, "ttnn.sum", u)?;
        if sum_input != *num || u.count.get(num) != Some(&2) || !self.single_use(&single, u) {
            return None;
        }
        if self.tensor_ty(s)?.shape != self.tensor_ty(div.results[0])?.shape {
            return None;
        }
        let stable = self.def(s, "ttnn.subtract", u).and_then(|sub| {
            let [x, m] = sub.operands.as_slice() else { return None };
            let (max_input, max_dim, single) = self.keep_dim_reduction(*m, "ttnn.max", u)?;
            (max_input == *x && max_dim == dim && self.single_use(&single, u))
                .then_some(*x)
                .filter(|_| self.single_use(&[s], u))
        });
        let dim = dim as i64;
        Some(match stable {
            Some(x) => Softmax { at: i, x, dim, stable: true },
            None => Softmax { at: i, x: s, dim, stable: false },
        })
    }

    /// Replaces the multiply at `n.at` by the norm, with the weight reshape before it and,
    /// when the multiply's result has another shape or type than `x`, a reshape and a
    /// typecast after it (tt-mlir's `reshapeAndCastToType`).
    fn rewrite_rms_norm(
        &mut self,
        n: &RmsNorm,
        before: &mut FxHashMap<usize, Vec<OutOp>>,
        after: &mut FxHashMap<usize, Vec<OutOp>>,
    ) {
        let (Some(xt), Some(gt)) = (self.tensor_ty(n.x).cloned(), self.tensor_ty(n.gamma).cloned())
        else {
            return;
        };
        let outer = &self.ops[n.at];
        let (result, loc) = (outer.results[0], outer.loc.clone());
        let Some(out_t) = self.tensor_ty(result).cloned() else { return };
        let generic = || Form::Generic { raw_props: None, attrs: None };
        let fresh = |f: &mut FuncOut, ty: TType| {
            let id = f.values.len() as ValueId;
            f.values.push((OutTy::Tensor(ty), Def::Op));
            id
        };
        let mut gamma = n.gamma;
        if let Some(len) = n.gamma_reshape {
            let g = fresh(self, gt.reshaped(vec![len]));
            before.entry(n.at).or_default().push(OutOp {
                name: "ttnn.reshape".to_owned(),
                form: generic(),
                operands: vec![n.gamma],
                props: vec![("shape".to_owned(), format!("[{len} : i32]"))],
                results: vec![g],
                loc: format!("{loc}_weight_reshape"),
                written: false,
                pure_op: true,
            });
            gamma = g;
        }
        let mut steps = Vec::new();
        let mut cur_t = xt.clone();
        if cur_t.shape != out_t.shape {
            steps.push((
                "ttnn.reshape",
                vec![(
                    "shape".to_owned(),
                    format!(
                        "[{}]",
                        out_t
                            .shape
                            .iter()
                            .map(|d| format!("{d} : i32"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )],
                cur_t.reshaped(out_t.shape.clone()),
                "_reshape",
            ));
            cur_t = cur_t.reshaped(out_t.shape.clone());
        }
        if cur_t.dtype != out_t.dtype {
            steps.push(("ttnn.typecast", vec![], out_t.clone(), "_typecast"));
        }
        // The norm's own result, then each adapting step's; the last one is `result`.
        let norm_result = if steps.is_empty() { result } else { fresh(self, xt) };
        let mut cur = norm_result;
        let count = steps.len();
        for (k, (name, props, ty, suffix)) in steps.into_iter().enumerate() {
            let r = if k + 1 == count { result } else { fresh(self, ty) };
            after.entry(n.at).or_default().push(OutOp {
                name: name.to_owned(),
                form: generic(),
                operands: vec![cur],
                props,
                results: vec![r],
                loc: format!("{loc}{suffix}"),
                written: false,
                pure_op: true,
            });
            cur = r;
        }
        let op = &mut self.ops[n.at];
        op.name = "ttnn.rms_norm".to_owned();
        op.operands = vec![n.x, gamma];
        op.props = vec![
            ("epsilon".to_owned(), format!("{} : f32", dense::f32_literal(n.epsilon))),
            ("operandSegmentSizes".to_owned(), "array<i32: 1, 1, 0>".to_owned()),
        ];
        op.results = vec![norm_result];
    }
}

/// A property's text.
fn prop<'a>(op: &'a OutOp, key: &str) -> Option<&'a str> {
    op.props.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// The one dim a reduction reduces (`dim_arg = [d : i32]`), normalized against `rank`.
fn single_dim(op: &OutOp, rank: usize) -> Option<usize> {
    let text = prop(op, "dim_arg")?.trim().strip_prefix('[')?.strip_suffix(']')?;
    let mut dims = text.split(',').map(|d| d.split(':').next().map(str::trim));
    let d: i64 = dims.next()??.parse().ok()?;
    if dims.next().is_some() {
        return None;
    }
    let d = if d < 0 { d + rank as i64 } else { d };
    usize::try_from(d).ok().filter(|d| *d < rank)
}

/// Whether a reshape from `from` to `to` keeps the last dim: once trailing unit dims are
/// dropped from both, the last dims left are equal (or nothing is left of either), so the
/// last dim's elements stay contiguous and in order.
fn last_dim_kept(from: &[u64], to: &[u64]) -> bool {
    let trim = |s: &[u64]| s.iter().rposition(|d| *d != 1).map(|k| s[k]);
    trim(from) == trim(to)
}

/// Ops a weight passes through unchanged in identity on its way from an argument to a
/// matmul, as tt-mlir's weight-dtype propagation walks back through tensor manipulations
/// and typecasts.
const WEIGHT_PATH: &[&str] = &[
    "ttnn.permute",
    "ttnn.repeat",
    "ttnn.repeat_interleave",
    "ttnn.reshape",
    "ttnn.slice_static",
    "ttnn.typecast",
];

impl FuncOut {
    /// tt-mlir's per-weight data type override (`ttcore.weight_dtype = "bfp_bf8"` on a
    /// function argument, which tt-xla writes for the weights it wants in a block float):
    /// the B operand of every `ttnn.matmul` and `ttnn.linear` that traces back to such an
    /// argument through `WEIGHT_PATH` ops, the argument a parameter or constant
    /// (`const_args`), gets a `ttnn.typecast` to that type in front of the op, as tt-mlir's
    /// `ttir-propagate-weight-dtype` and `ttnn-weight-dtype-conversion` passes insert it.
    /// Only `bf16` and `f32` weights are converted. The typecast reads only the weight, so
    /// const-eval hoisting moves it to load time; per inference the matmul then reads a
    /// bfp8 weight, about half the bytes (decode matmuls are bound by those bytes).
    /// `arg_dtypes` holds each argument's override, by argument index.
    ///
    /// `global` is tt-mlir's `experimental-weight-dtype` pipeline option: a matmul whose
    /// weight has no override gets it when everything the weight is computed from is a
    /// parameter or constant argument (tt-mlir's `valueTracesToConstantArgs`: at least one
    /// argument, all of them parameters or constants, through any ops).
    pub(crate) fn convert_weight_dtypes(
        &mut self,
        arg_dtypes: &[Option<ttnn_types::DataType>],
        const_args: &[bool],
        global: Option<ttnn_types::DataType>,
    ) {
        if global.is_none() && arg_dtypes.iter().all(Option::is_none) {
            return;
        }
        let arg_index: FxHashMap<ValueId, usize> = self
            .values
            .iter()
            .enumerate()
            .filter(|(_, (_, def))| *def == Def::Arg)
            .enumerate()
            .map(|(k, (v, _))| (v as ValueId, k))
            .collect();
        let u = self.uses();
        let mut before: FxHashMap<usize, Vec<OutOp>> = FxHashMap::default();
        for i in 0..self.ops.len() {
            let op = &self.ops[i];
            if !matches!(op.name.as_str(), "ttnn.matmul" | "ttnn.linear") {
                continue;
            }
            let Some(&weight) = op.operands.get(1) else { continue };
            let marked = self.marked_weight_dtype(weight, &u, &arg_index, arg_dtypes, const_args);
            let dtype = match (marked, global) {
                (Some(d), _) => d,
                (None, Some(d))
                    if self.traces_to_const_args(&u, &arg_index, const_args, weight) =>
                {
                    d
                }
                _ => continue,
            };
            let dtype = &dtype;
            let Some(wt) = self.tensor_ty(weight).cloned() else { continue };
            if wt.dtype == *dtype
                || !matches!(wt.dtype, ttnn_types::DataType::BF16 | ttnn_types::DataType::F32)
            {
                continue;
            }
            let loc = format!("{}_weight_dtype", op.loc);
            let cast = self.values.len() as ValueId;
            self.values.push((OutTy::Tensor(TType { dtype: *dtype, ..wt }), Def::Op));
            before.entry(i).or_default().push(OutOp {
                name: "ttnn.typecast".to_owned(),
                form: Form::Generic { raw_props: None, attrs: None },
                operands: vec![weight],
                props: Vec::new(),
                results: vec![cast],
                loc,
                written: false,
                pure_op: true,
            });
            self.ops[i].operands[1] = cast;
        }
        let old = std::mem::take(&mut self.ops);
        for (i, op) in old.into_iter().enumerate() {
            self.ops.extend(before.remove(&i).unwrap_or_default());
            self.ops.push(op);
        }
    }
}

impl FuncOut {
    /// The data type override of the argument a weight comes from through `WEIGHT_PATH` ops
    /// (the argument a parameter or constant). A `concat` of weights (the shared-LHS fusion's
    /// QKV weight) resolves each branch and keeps the most precise of their overrides, as
    /// tt-mlir's `resolveWeightDtype` does, so the fused weight loses no precision against
    /// any of its parts; branches without one do not count.
    fn marked_weight_dtype(
        &self,
        weight: ValueId,
        u: &Uses,
        arg_index: &FxHashMap<ValueId, usize>,
        arg_dtypes: &[Option<ttnn_types::DataType>],
        const_args: &[bool],
    ) -> Option<ttnn_types::DataType> {
        let mut source = weight;
        while let Some(p) = u.producer.get(&source).map(|p| &self.ops[*p]) {
            if p.name == "ttnn.concat" {
                return p
                    .operands
                    .iter()
                    .filter_map(|b| {
                        self.marked_weight_dtype(*b, u, arg_index, arg_dtypes, const_args)
                    })
                    .max_by_key(|d| precision_bits(*d));
            }
            match p.operands.first() {
                Some(input) if WEIGHT_PATH.contains(&p.name.as_str()) => source = *input,
                _ => break,
            }
        }
        let arg = *arg_index.get(&source)?;
        match (arg_dtypes.get(arg), const_args.get(arg)) {
            (Some(Some(dtype)), Some(true)) => Some(*dtype),
            _ => None,
        }
    }

    /// True when `v` is computed only from function arguments that are parameters or
    /// constants, and from at least one: tt-mlir's `valueTracesToConstantArgs`, which walks
    /// the whole use-def chain (a weight made only by creation ops does not count).
    fn traces_to_const_args(
        &self,
        u: &Uses,
        arg_index: &FxHashMap<ValueId, usize>,
        const_args: &[bool],
        v: ValueId,
    ) -> bool {
        let mut seen: FxHashSet<ValueId> = FxHashSet::default();
        let mut stack = vec![v];
        let mut any_arg = false;
        while let Some(x) = stack.pop() {
            if !seen.insert(x) {
                continue;
            }
            if let Some(&arg) = arg_index.get(&x) {
                if !const_args.get(arg).copied().unwrap_or(false) {
                    return false;
                }
                any_arg = true;
            } else if let Some(&p) = u.producer.get(&x) {
                stack.extend(self.ops[p].operands.iter().copied());
            }
        }
        any_arg
    }
}

/// Bits per element of a weight data type, to keep the most precise of several overrides.
fn precision_bits(d: ttnn_types::DataType) -> u32 {
    use ttnn_types::DataType as D;
    match d {
        D::BfpBF4 => 4,
        D::BfpBF8 => 8,
        D::F32 => 32,
        _ => 16,
    }
}
