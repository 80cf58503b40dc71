//! The op lowerings: one TTIR op in, one or more TTNN ops out.
//!
//! Each lowering reads and checks everything it needs (attributes, operand shapes) before it
//! emits anything, so a lowering that gives up leaves no half-built ops behind; the caller then
//! keeps the TTIR op in generic form. The main op of a decomposition keeps the source op's
//! location name (that is what overrides target); helpers get a suffix (`_flatten`,
//! `_permute_lhs`, `_reshape_out`, ...).

use ir::{AttrValue, FuncBody, OpData, Ty, ValueRef};
use syntax::{Parse, ast};
use ttnn_types::{DataType, ElementType, PageLayout};

use crate::{
    dense::{self, DenseValue, Scalar},
    func::{Bcast, Form, FuncOut, OutTy, Slot, Val},
    ty::{TType, convert_tensor},
};

pub(crate) type Lowered = Result<Vec<Slot>, String>;

/// Where the input text lives, for reading constants from the syntax tree.
pub(crate) struct Src<'a> {
    pub(crate) text: &'a str,
    pub(crate) parse: &'a Parse,
}

/// Everything a lowering can see: the function being built and the input function.
pub(crate) struct Cx<'a, 'f> {
    pub(crate) f: &'f mut FuncOut,
    pub(crate) src: &'a Src<'a>,
    pub(crate) body: &'a FuncBody,
    /// The syntax of each input op, parallel to `body.ops`.
    pub(crate) ast_ops: &'a [Option<&'a ast::Op>],
}

/// One input op as a lowering sees it.
pub(crate) struct OpIn<'a> {
    /// The op's index in the input function body.
    pub(crate) index: usize,
    pub(crate) data: &'a OpData,
    /// The op's location name, sanitized; the base of every output op's name.
    pub(crate) base: String,
    /// The operands, destination-passing inits (`ttir.empty`) removed.
    pub(crate) operands: Vec<ValueRef>,
}

const UNARY: &[&str] = &[
    "abs",
    "acos",
    "asin",
    "atan",
    "bitwise_not",
    "cbrt",
    "ceil",
    "cos",
    "erf",
    "erfc",
    "exp",
    "expm1",
    "floor",
    "gelu",
    "global_avg_pool2d",
    "hardsigmoid",
    "isfinite",
    "log",
    "log1p",
    "logical_not",
    "mish",
    "neg",
    "reciprocal",
    "relu",
    "relu6",
    "rsqrt",
    "sigmoid",
    "sign",
    "silu",
    "sin",
    "sqrt",
    "tan",
    "tanh",
];

const BINARY: &[&str] = &[
    "add",
    "atan2",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "eq",
    "ge",
    "gt",
    "logical_and",
    "logical_left_shift",
    "logical_or",
    "logical_right_shift",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "ne",
    "remainder",
    "subtract",
];

/// Lowers one TTIR op. `Err` carries the reason the op stays in TTIR form.
pub(crate) fn lower(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let Some(kind) = op.data.name.strip_prefix("ttir.") else {
        return Err(format!("`{}` is not a TTIR op", op.data.name));
    };
    match kind {
        k if UNARY.contains(&k) => unary(cx, op, &format!("ttnn.{k}")),
        k if BINARY.contains(&k) => elementwise(cx, op, &format!("ttnn.{k}"), 2),
        // tt-mlir's TTIR canonicalization: `lt(a, b)` is `gt(b, a)`, `le(a, b)` is `ge(b, a)`.
        "lt" => comparison_swapped(cx, op, "ttnn.gt"),
        "le" => comparison_swapped(cx, op, "ttnn.ge"),
        "div" => elementwise(cx, op, "ttnn.divide", 2),
        "where" => elementwise(cx, op, "ttnn.where", 3),
        "pow" => pow(cx, op),
        "typecast" => typecast(cx, op),
        "reshape" | "squeeze" | "unsqueeze" => reshape(cx, op),
        "permute" => permute(cx, op),
        "transpose" => transpose(cx, op),
        "slice_static" => slice(cx, op),
        "index" => index(cx, op),
        "concat" => concat(cx, op),
        "sum" | "mean" | "max" | "min" => reduction(cx, op, &format!("ttnn.{kind}")),
        "reduce_and" => reduction(cx, op, "ttnn.min"),
        "prod" => prod(cx, op),
        "argmax" => argmax(cx, op),
        "reduce_or" => reduce_or(cx, op),
        "softmax" => softmax(cx, op),
        "rms_norm" | "layer_norm" => norm(cx, op, &format!("ttnn.{kind}")),
        "distributed_rms_norm" => distributed_rms_norm(cx, op),
        "embedding" => embedding(cx, op),
        "gather" => gather(cx, op),
        "matmul" | "linear" => matmul(cx, op, &format!("ttnn.{kind}")),
        "dot_general" => dot_general(cx, op),
        "broadcast" => broadcast(cx, op),
        "repeat" => repeat(cx, op),
        "constant" => constant(cx, op),
        "full" | "zeros" | "ones" => creation(cx, op, kind),
        "arange" => arange(cx, op),
        "conv2d" => conv2d(cx, op),
        "max_pool2d" | "avg_pool2d" => pool2d(cx, op, &format!("ttnn.{kind}")),
        "batch_norm_inference" => batch_norm(cx, op),
        "upsample2d" => upsample(cx, op),
        "pad" => pad(cx, op),
        "fill_cache" | "update_cache" => cache(cx, op, &format!("ttnn.{kind}")),
        "all_reduce" => passthrough(cx, op, "ttnn.all_reduce", &["cluster_axis", "reduce_type"]),
        "all_gather" => passthrough(cx, op, "ttnn.all_gather", &["all_gather_dim", "cluster_axis"]),
        "reduce_scatter" => passthrough(
            cx,
            op,
            "ttnn.reduce_scatter",
            &["cluster_axis", "reduce_type", "scatter_dim"],
        ),
        "mesh_partition" => passthrough(cx, op, "ttnn.mesh_partition", &["cluster_axis", "dim"]),
        "leaky_relu" => passthrough(cx, op, "ttnn.leaky_relu", &["parameter"]),
        "clamp_scalar" => passthrough(cx, op, "ttnn.clamp_scalar", &["max", "min"]),
        "clamp_tensor" => passthrough(cx, op, "ttnn.clamp_tensor", &[]),
        "repeat_interleave" => passthrough(cx, op, "ttnn.repeat_interleave", &["dim", "repeats"]),
        "sort" => passthrough(cx, op, "ttnn.sort", &[]),
        "cumsum" => cumsum(cx, op),
        _ => Err(format!("no lowering for `{}`", op.data.name)),
    }
}

// ---- context helpers ------------------------------------------------------------------------

impl Cx<'_, '_> {
    /// The output value of an input value; a pending broadcast is materialized here.
    pub(crate) fn val(&mut self, v: ValueRef) -> Result<Val, String> {
        match self.f.slot(v) {
            Some(Slot::Val(val)) => Ok(val.clone()),
            Some(Slot::Bcast(b)) => {
                if let Some(done) = &b.done {
                    return Ok(done.clone());
                }
                let b = (**b).clone();
                let props = vec![("repeat_dims".to_owned(), shape_attr(&b.repeat_dims))];
                let out = self.emit("ttnn.repeat", &[&b.input], props, b.ty.clone(), b.loc.clone());
                if let Some(Slot::Bcast(slot)) = self.f.slot_mut(v) {
                    slot.done = Some(out.clone());
                }
                Ok(out)
            }
            Some(Slot::Dropped) => {
                Err("the value comes from a destination-passing init or an op that did not parse"
                    .to_owned())
            }
            None => Err("an operand has no lowered value".to_owned()),
        }
    }

    /// Operand `i` as a tensor.
    fn operand(&mut self, op: &OpIn<'_>, i: usize) -> Result<(Val, TType), String> {
        let v = *op.operands.get(i).ok_or_else(|| format!("operand {i} is missing"))?;
        let val = self.val(v)?;
        let t = val.tensor().cloned().ok_or_else(|| format!("operand {i} is not a tensor"))?;
        Ok((val, t))
    }

    fn result(&self, op: &OpIn<'_>, i: usize) -> Result<TType, String> {
        match op.data.results.get(i) {
            Some(Ty::Tensor(t)) => {
                convert_tensor(t).ok_or_else(|| format!("result type `{t}` has no TTNN equivalent"))
            }
            Some(other) => Err(format!("result {i} is `{other}`, not a tensor")),
            None => Err(format!("result {i} is missing")),
        }
    }

    fn emit(
        &mut self,
        name: &str,
        operands: &[&Val],
        props: Vec<(String, String)>,
        result: TType,
        loc: String,
    ) -> Val {
        let form = Form::Generic { raw_props: None, attrs: None };
        let mut r =
            self.f.push_op(name, form, operands, props, vec![OutTy::Tensor(result)], loc, true);
        r.remove(0)
    }

    /// An op that writes in place and returns nothing; never removed as dead.
    fn emit_effect(
        &mut self,
        name: &str,
        operands: &[&Val],
        props: Vec<(String, String)>,
        loc: String,
    ) {
        let form = Form::Generic { raw_props: None, attrs: None };
        self.f.push_op(name, form, operands, props, Vec::new(), loc, false);
    }

    /// The ops tt-mlir runs to take `x` of type `from` to type `to`, as its layout
    /// decomposition writes a workaround's `to_layout` (`TTNNDecomposeLayouts`, device side):
    /// a page change alone is a `ttnn.to_layout`, a data type change alone a `ttnn.typecast`;
    /// both are one `to_layout` only from row-major to tiles within the float types, else a
    /// `to_layout` and a `typecast`, the (un)tilize on whichever data type tt-metal can
    /// (un)tilize on device (the input's when tilizing, the output's when untilizing, the
    /// other where that one cannot). `loc` names the `to_layout`; a separate cast is `loc`
    /// with `_typecast`.
    fn convert(&mut self, x: &Val, from: &TType, to: TType, loc: String) -> Val {
        let page = from.page != to.page;
        let dtype = from.dtype != to.dtype;
        let cast_loc = || format!("{loc}_typecast");
        if !page && !dtype {
            return x.clone();
        }
        // A tilize can convert between float types itself.
        let tilize_casts =
            from.page == PageLayout::RowMajor && from.dtype.is_float() && to.dtype.is_float();
        if !dtype || (page && tilize_casts) {
            return self.emit("ttnn.to_layout", &[x], Vec::new(), to, loc);
        }
        if !page {
            return self.emit("ttnn.typecast", &[x], Vec::new(), to, cast_loc());
        }
        // Which data type the (un)tilize runs on: the side tt-metal handles on device.
        let layout_on_input = if from.page == PageLayout::Tile {
            !device_layout_change(to.dtype)
        } else {
            device_layout_change(from.dtype)
        };
        if layout_on_input {
            let mid = TType { page: to.page, ..from.clone() };
            let y = self.emit("ttnn.to_layout", &[x], Vec::new(), mid, loc.clone());
            self.emit("ttnn.typecast", &[&y], Vec::new(), to, cast_loc())
        } else {
            let mid = TType { dtype: to.dtype, ..from.clone() };
            let y = self.emit("ttnn.typecast", &[x], Vec::new(), mid, cast_loc());
            self.emit("ttnn.to_layout", &[&y], Vec::new(), to, loc)
        }
    }

    /// `ttnn.reshape`, unless the shape already matches.
    fn reshape_to(&mut self, v: &Val, t: &TType, shape: &[u64], loc: String) -> (Val, TType) {
        if t.shape == shape {
            return (v.clone(), t.clone());
        }
        let out = t.reshaped(shape.to_vec());
        let props = vec![("shape".to_owned(), i32_array(shape.iter().map(|d| *d as i64)))];
        (self.emit("ttnn.reshape", &[v], props, out.clone(), loc), out)
    }

    /// `ttnn.permute`, unless the permutation is the identity.
    fn permute_by(&mut self, v: &Val, t: &TType, perm: &[usize], loc: String) -> (Val, TType) {
        if perm.iter().enumerate().all(|(i, p)| i == *p) {
            return (v.clone(), t.clone());
        }
        let out = t.reshaped(perm.iter().map(|p| t.shape[*p]).collect());
        let props =
            vec![("permutation".to_owned(), dense_array("i64", perm.iter().map(|p| *p as i64)))];
        (self.emit("ttnn.permute", &[v], props, out.clone(), loc), out)
    }

    /// The value of a splat constant feeding `v` through reshapes, typecasts and broadcasts.
    fn splat_of(&self, v: ValueRef, depth: u32) -> Option<Scalar> {
        let (op, _) = self.body.result_of(v)?;
        let data = self.body.ops.get(op as usize)?;
        match data.name.as_str() {
            "ttir.reshape" | "ttir.typecast" | "ttir.broadcast" if depth < 16 => {
                self.splat_of(*data.operands.first()?, depth + 1)
            }
            "ttir.constant" => match self.dense_of(op as usize).ok()? {
                DenseValue::Splat(s) => Some(s),
                DenseValue::Elements(_) => None,
            },
            "ttir.full" => match data.property("fill_value")? {
                AttrValue::Float { text, .. } => text.parse::<f64>().ok().map(Scalar::Float),
                AttrValue::Int { value, .. } => Some(Scalar::Int(*value)),
                _ => None,
            },
            _ => None,
        }
    }

    /// The converted value of the `ttir.constant` at `op_idx`.
    fn dense_of(&self, op_idx: usize) -> Result<DenseValue, String> {
        let data = &self.body.ops[op_idx];
        let Some(Ty::Tensor(t)) = data.results.first() else {
            return Err("a constant must produce a tensor".to_owned());
        };
        let dst = convert_tensor(t).ok_or_else(|| format!("`{t}` has no TTNN equivalent"))?;
        let ElementType::Scalar(src) = t.element else {
            return Err("tile-typed constants are not supported".to_owned());
        };
        let ast_op = self.ast_ops.get(op_idx).copied().flatten().ok_or("constant not found")?;
        let ast::OpBody::Generic(g) = &ast_op.body else {
            return Err("expected a generic `ttir.constant`".to_owned());
        };
        let entry = g
            .properties
            .as_ref()
            .and_then(|p| p.get("value"))
            .or_else(|| g.attrs.as_ref().and_then(|a| a.get("value")))
            .and_then(|e| e.value.as_ref())
            .ok_or("a constant needs a `value`")?;
        let ast::AttrKind::Elements { kind, body, .. } = &entry.kind else {
            return Err("the constant's value is not a dense literal".to_owned());
        };
        if kind != "dense" {
            return Err(format!("`{kind}<...>` constants are not supported"));
        }
        let inner = body.range.slice(self.src.text);
        let inner = inner.strip_prefix('<').and_then(|s| s.strip_suffix('>')).unwrap_or(inner);
        dense::convert(inner, src, &dst)
    }
}

fn one(v: Val) -> Lowered {
    Ok(vec![Slot::Val(v)])
}

/// Whether tt-metal tilizes and untilizes `d` on device (tt-mlir's
/// `isOnDeviceLayoutChangeSupportedForDataType`).
fn device_layout_change(d: DataType) -> bool {
    matches!(d, DataType::BF16 | DataType::F32 | DataType::U32 | DataType::U16 | DataType::SI32)
}

fn suffixed(op: &OpIn<'_>, suffix: &str) -> String {
    format!("{}{suffix}", op.base)
}

// ---- attributes -----------------------------------------------------------------------------

fn prop<'o>(op: &'o OpIn<'_>, key: &str) -> Option<&'o AttrValue> {
    op.data.property(key)
}

fn int(op: &OpIn<'_>, key: &str) -> Option<i64> {
    prop(op, key).and_then(AttrValue::as_int).and_then(|v| i64::try_from(v).ok())
}

fn ints(op: &OpIn<'_>, key: &str) -> Option<Vec<i64>> {
    prop(op, key).and_then(AttrValue::as_ints)
}

fn req_ints(op: &OpIn<'_>, key: &str) -> Result<Vec<i64>, String> {
    ints(op, key).ok_or_else(|| format!("missing integer list `{key}`"))
}

fn boolean(op: &OpIn<'_>, key: &str) -> Option<bool> {
    match prop(op, key)? {
        AttrValue::Bool(b) => Some(*b),
        AttrValue::Int { value, .. } => Some(*value != 0),
        AttrValue::Unit => Some(true),
        _ => None,
    }
}

/// A float attribute as `text : f32`.
fn f32_attr(op: &OpIn<'_>, key: &str) -> Option<String> {
    match prop(op, key)? {
        AttrValue::Float { text, .. } => Some(format!("{text} : f32")),
        AttrValue::Int { value, .. } => {
            Some(format!("{} : f32", dense::f32_literal(*value as f32)))
        }
        _ => None,
    }
}

/// An attribute printed back as MLIR text.
fn attr_text(v: &AttrValue) -> String {
    let typed = |s: String, ty: &Option<String>| match ty {
        Some(t) => format!("{s} : {t}"),
        None => s,
    };
    match v {
        AttrValue::Int { value, ty } => typed(value.to_string(), ty),
        AttrValue::Float { text, ty } => typed(text.clone(), ty),
        AttrValue::Bool(b) => b.to_string(),
        AttrValue::Str(s) => syntax::escape_string(s),
        AttrValue::Unit => "unit".to_owned(),
        AttrValue::Array(items) => {
            format!("[{}]", items.iter().map(attr_text).collect::<Vec<_>>().join(", "))
        }
        AttrValue::DenseArray { elem, values } if values.is_empty() => format!("array<{elem}>"),
        AttrValue::DenseArray { elem, values } => format!("array<{elem}: {}>", values.join(", ")),
        AttrValue::SymbolRef(path) => {
            path.iter().map(|p| format!("@{p}")).collect::<Vec<_>>().join("::")
        }
        AttrValue::Type(t) => t.to_string(),
        AttrValue::Dialect { text, .. } | AttrValue::Other(text) => text.clone(),
        AttrValue::Keyword(k) => k.clone(),
        AttrValue::Dict(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!("{k} = {}", attr_text(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn i32_array(values: impl Iterator<Item = i64>) -> String {
    format!("[{}]", values.map(|v| format!("{v} : i32")).collect::<Vec<_>>().join(", "))
}

fn dense_array(elem: &str, values: impl Iterator<Item = i64>) -> String {
    let vals: Vec<String> = values.map(|v| v.to_string()).collect();
    if vals.is_empty() {
        format!("array<{elem}>")
    } else {
        format!("array<{elem}: {}>", vals.join(", "))
    }
}

fn shape_attr(shape: &[u64]) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("#ttnn.shape<{}>", dims.join("x"))
}

fn p(key: &str, value: String) -> (String, String) {
    (key.to_owned(), value)
}

/// Normalizes a possibly negative dimension index.
fn dim_index(d: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    let n = if d < 0 { d + r } else { d };
    if (0..r).contains(&n) { Ok(n as usize) } else { Err(format!("dimension {d} is out of range")) }
}

/// A spatial pair (`stride = 2` or `array<i32: 2, 2>`).
fn pair(op: &OpIn<'_>, key: &str, default: i64) -> Result<[i64; 2], String> {
    match prop(op, key) {
        None => Ok([default, default]),
        Some(v) => match (v.as_int(), v.as_ints()) {
            (Some(x), _) => Ok([x as i64, x as i64]),
            (_, Some(xs)) if xs.len() == 2 => Ok([xs[0], xs[1]]),
            _ => Err(format!("`{key}` must be one or two integers")),
        },
    }
}

/// Padding as `[top, left, bottom, right]`.
fn quad(op: &OpIn<'_>, key: &str) -> Result<[i64; 4], String> {
    match prop(op, key) {
        None => Ok([0; 4]),
        Some(v) => match (v.as_int(), v.as_ints()) {
            (Some(x), _) => Ok([x as i64; 4]),
            (_, Some(xs)) if xs.len() == 2 => Ok([xs[0], xs[1], xs[0], xs[1]]),
            (_, Some(xs)) if xs.len() == 4 => Ok([xs[0], xs[1], xs[2], xs[3]]),
            _ => Err(format!("`{key}` must be one, two or four integers")),
        },
    }
}

/// The numpy-style broadcast of shapes, aligned at the last dimension.
fn broadcast_shapes(shapes: &[Vec<u64>]) -> Option<Vec<u64>> {
    let rank = shapes.iter().map(Vec::len).max()?;
    let mut out = vec![1u64; rank];
    for s in shapes {
        let off = rank - s.len();
        for (i, d) in s.iter().enumerate() {
            let o = &mut out[off + i];
            if *o == 1 {
                *o = *d;
            } else if *d != 1 && *d != *o {
                return None;
            }
        }
    }
    Some(out)
}

fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, p) in perm.iter().enumerate() {
        inv[*p] = i;
    }
    inv
}

fn is_permutation(perm: &[usize], rank: usize) -> bool {
    let mut seen = vec![false; rank];
    perm.len() == rank && perm.iter().all(|p| *p < rank && !std::mem::replace(&mut seen[*p], true))
}

fn volume(shape: &[u64]) -> u64 {
    shape.iter().product()
}

// ---- elementwise ----------------------------------------------------------------------------

fn unary(cx: &mut Cx<'_, '_>, op: &OpIn<'_>, name: &str) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, _) = cx.operand(op, 0)?;
    one(cx.emit(name, &[&x], Vec::new(), ty, op.base.clone()))
}

/// A binary or ternary op that broadcasts implicitly. A `ttir.broadcast` operand is folded
/// away (the op reads the broadcast's input) when the op's result shape stays the same, which
/// is tt-mlir's implicit-broadcast folding.
fn elementwise(cx: &mut Cx<'_, '_>, op: &OpIn<'_>, name: &str, arity: usize) -> Lowered {
    elementwise_in_order(cx, op, name, arity, false)
}

/// A two-operand comparison written the other way round: `lt(a, b)` as `gt(b, a)`.
fn comparison_swapped(cx: &mut Cx<'_, '_>, op: &OpIn<'_>, name: &str) -> Lowered {
    elementwise_in_order(cx, op, name, 2, true)
}

/// An elementwise op of `arity` operands, with broadcasts folded; `swap` reverses the two
/// operands.
fn elementwise_in_order(
    cx: &mut Cx<'_, '_>,
    op: &OpIn<'_>,
    name: &str,
    arity: usize,
    swap: bool,
) -> Lowered {
    let ty = cx.result(op, 0)?;
    if op.operands.len() != arity {
        return Err(format!("expected {arity} operands, found {}", op.operands.len()));
    }
    let mut shapes = Vec::with_capacity(arity);
    let mut folded: Vec<Option<Val>> = Vec::with_capacity(arity);
    for v in &op.operands {
        match cx.f.slot(*v) {
            Some(Slot::Bcast(b)) => {
                shapes.push(b.ty.shape.clone());
                folded.push(Some(b.input.clone()));
            }
            _ => {
                let val = cx.val(*v)?;
                shapes.push(val.tensor().ok_or("an operand is not a tensor")?.shape.clone());
                folded.push(None);
            }
        }
    }
    for i in 0..arity {
        let Some(input) = &folded[i] else { continue };
        let Some(it) = input.tensor() else { continue };
        let mut trial = shapes.clone();
        trial[i] = it.shape.clone();
        if broadcast_shapes(&trial).as_deref() == Some(ty.shape.as_slice()) {
            shapes = trial;
        } else {
            folded[i] = None;
        }
    }
    let mut operands = Vec::with_capacity(arity);
    for (v, f) in op.operands.iter().zip(folded) {
        operands.push(match f {
            Some(input) => input,
            None => cx.val(*v)?,
        });
    }
    if swap {
        operands.reverse();
    }
    let refs: Vec<&Val> = operands.iter().collect();
    one(cx.emit(name, &refs, Vec::new(), ty, op.base.clone()))
}

/// `pow` with a splat exponent becomes `ttnn.pow_scalar`, as tt-mlir does; otherwise
/// `ttnn.pow_tensor`.
fn pow(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let exponent = op.operands.get(1).and_then(|v| cx.splat_of(*v, 0));
    let Some(e) = exponent else { return elementwise(cx, op, "ttnn.pow_tensor", 2) };
    let (x, _) = cx.operand(op, 0)?;
    let rhs = if ty.dtype.is_float() {
        dense::fill_value(dense::to_target(e, DataType::F32))
    } else {
        dense::fill_value(dense::to_target(e, DataType::SI32))
    };
    one(cx.emit("ttnn.pow_scalar", &[&x], vec![p("rhs", rhs)], ty, op.base.clone()))
}

/// `ttnn.typecast`; a cast to the type the value already has (`i1` to `bf16` after
/// normalization) folds away, as tt-mlir's canonicalizer folds it.
fn typecast(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, xt) = cx.operand(op, 0)?;
    if xt == ty {
        return one(x);
    }
    one(cx.emit("ttnn.typecast", &[&x], Vec::new(), ty, op.base.clone()))
}

// ---- data movement --------------------------------------------------------------------------

/// `reshape`, `squeeze` and `unsqueeze`: all a `ttnn.reshape` to the result shape.
fn reshape(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, xt) = cx.operand(op, 0)?;
    if volume(&xt.shape) != volume(&ty.shape) {
        return Err("reshape changes the number of elements".to_owned());
    }
    one(cx.reshape_to(&x, &xt, &ty.shape, op.base.clone()).0)
}

fn permute(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let (x, xt) = cx.operand(op, 0)?;
    let perm: Vec<usize> = req_ints(op, "permutation")?
        .into_iter()
        .map(|d| dim_index(d, xt.rank()))
        .collect::<Result<_, _>>()?;
    if !is_permutation(&perm, xt.rank()) {
        return Err("`permutation` is not a permutation of the input's dimensions".to_owned());
    }
    one(cx.permute_by(&x, &xt, &perm, op.base.clone()).0)
}

/// `transpose` is a permute swapping two dimensions.
fn transpose(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let (x, xt) = cx.operand(op, 0)?;
    let d0 = dim_index(int(op, "dim0").ok_or("missing `dim0`")?, xt.rank())?;
    let d1 = dim_index(int(op, "dim1").ok_or("missing `dim1`")?, xt.rank())?;
    let mut perm: Vec<usize> = (0..xt.rank()).collect();
    perm.swap(d0, d1);
    one(cx.permute_by(&x, &xt, &perm, op.base.clone()).0)
}

fn emit_slice(
    cx: &mut Cx<'_, '_>,
    op: &OpIn<'_>,
    begins: &[i64],
    ends: &[i64],
    step: &[i64],
) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, xt) = cx.operand(op, 0)?;
    if begins.len() != xt.rank() || ends.len() != xt.rank() || step.len() != xt.rank() {
        return Err("slice bounds must have one entry per dimension".to_owned());
    }
    let props = vec![
        p("begins", i32_array(begins.iter().copied())),
        p("ends", i32_array(ends.iter().copied())),
        p("step", i32_array(step.iter().copied())),
    ];
    one(cx.emit("ttnn.slice_static", &[&x], props, ty, op.base.clone()))
}

fn slice(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let begins = req_ints(op, "begins")?;
    let ends = req_ints(op, "ends")?;
    let step = ints(op, "step").unwrap_or_else(|| vec![1; begins.len()]);
    emit_slice(cx, op, &begins, &ends, &step)
}

/// `index` selects a range of one dimension: a `slice_static` with full ranges elsewhere, as
/// tt-mlir's decomposition writes it.
fn index(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let (_, xt) = cx.operand(op, 0)?;
    let dim = dim_index(int(op, "dim").ok_or("missing `dim`")?, xt.rank())?;
    let mut begins = vec![0; xt.rank()];
    let mut ends: Vec<i64> = xt.shape.iter().map(|d| *d as i64).collect();
    let mut step = vec![1; xt.rank()];
    // Negative bounds count from the end, as tt-mlir's index folding reads them.
    let size = xt.shape[dim] as i64;
    let bound = |v: i64| if v < 0 { v + size } else { v };
    begins[dim] = bound(int(op, "begin").ok_or("missing `begin`")?);
    ends[dim] = bound(int(op, "end").ok_or("missing `end`")?);
    step[dim] = int(op, "step").unwrap_or(1);
    emit_slice(cx, op, &begins, &ends, &step)
}

fn concat(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let dim = dim_index(int(op, "dim").ok_or("missing `dim`")?, ty.rank())?;
    let mut inputs = Vec::new();
    for i in 0..op.operands.len() {
        inputs.push(cx.operand(op, i)?.0);
    }
    if inputs.is_empty() {
        return Err("concat needs inputs".to_owned());
    }
    let refs: Vec<&Val> = inputs.iter().collect();
    one(cx.emit("ttnn.concat", &refs, vec![p("dim", format!("{dim} : si32"))], ty, op.base.clone()))
}

/// A `ttir.broadcast` is not emitted yet: elementwise consumers may fold it away; the first
/// consumer that cannot gets a `ttnn.repeat`.
fn broadcast(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, xt) = cx.operand(op, 0)?;
    let dims = req_ints(op, "broadcast_dimensions")?;
    let fits = dims.len() == xt.rank()
        && xt.rank() == ty.rank()
        && dims
            .iter()
            .zip(xt.shape.iter().zip(&ty.shape))
            .all(|(m, (i, o))| *m >= 1 && i * (*m as u64) == *o);
    if !fits {
        return Err("`broadcast_dimensions` does not map the input shape to the result".to_owned());
    }
    if dims.iter().all(|d| *d == 1) {
        return one(x);
    }
    Ok(vec![Slot::Bcast(Box::new(Bcast {
        input: x,
        ty,
        repeat_dims: dims.iter().map(|d| *d as u64).collect(),
        loc: op.base.clone(),
        done: None,
    }))])
}

fn repeat(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, _) = cx.operand(op, 0)?;
    let dims: Vec<u64> = req_ints(op, "repeat_dimensions")?.iter().map(|d| *d as u64).collect();
    one(cx.emit(
        "ttnn.repeat",
        &[&x],
        vec![p("repeat_dims", shape_attr(&dims))],
        ty,
        op.base.clone(),
    ))
}

fn pad(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, _) = cx.operand(op, 0)?;
    let padding = req_ints(op, "padding")?;
    let value = f32_attr(op, "value").unwrap_or_else(|| "0.000000e+00 : f32".to_owned());
    let props = vec![
        p("padding", dense_array("i32", padding.into_iter())),
        p("use_multicore", "true".to_owned()),
        p("value", value),
    ];
    one(cx.emit("ttnn.pad", &[&x], props, ty, op.base.clone()))
}

// ---- reductions and normalization -----------------------------------------------------------

fn reduction_props(op: &OpIn<'_>) -> Vec<(String, String)> {
    let mut props = vec![p("keep_dim", boolean(op, "keep_dim").unwrap_or(false).to_string())];
    if let Some(dims) = ints(op, "dim_arg") {
        props.push(p("dim_arg", i32_array(dims.into_iter())));
    }
    props
}

fn reduction(cx: &mut Cx<'_, '_>, op: &OpIn<'_>, name: &str) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, _) = cx.operand(op, 0)?;
    one(cx.emit(name, &[&x], reduction_props(op), ty, op.base.clone()))
}

/// `ttnn.prod` reduces one dimension or all of them.
fn prod(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, xt) = cx.operand(op, 0)?;
    let mut props = vec![p("keep_dim", boolean(op, "keep_dim").unwrap_or(false).to_string())];
    match ints(op, "dim_arg").as_deref() {
        None => {}
        Some(all) if all.len() == xt.rank() => {}
        Some([d]) => props.push(p("dim_arg", format!("{d} : si64"))),
        Some(_) => return Err("`ttnn.prod` reduces one dimension or all of them".to_owned()),
    }
    one(cx.emit("ttnn.prod", &[&x], props, ty, op.base.clone()))
}

/// tt-metal's argmax reads a row-major input (a tiled one falls back to a single core,
/// tt-metal#46340) and writes row-major `u32` indices. As tt-mlir's workaround pass does, the
/// input is converted to row-major first and the indices converted back to the result's
/// tiled type after, which is what the importer's other ops read: tiled, then cast to the
/// result's data type ([`Cx::convert`]).
fn argmax(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, xt) = cx.operand(op, 0)?;
    let mut props = vec![p("keep_dim", boolean(op, "keep_dim").unwrap_or(false).to_string())];
    match ints(op, "dim_arg").as_deref() {
        None | Some([]) => {}
        Some([d]) => props.push(p("dim", format!("{} : si32", dim_index(*d, xt.rank())?))),
        Some(_) => return Err("`ttnn.argmax` reduces a single dimension".to_owned()),
    }
    let rm = TType { page: PageLayout::RowMajor, ..xt.clone() };
    let x = cx.convert(&x, &xt, rm, suffixed(op, "_in_0_layout"));
    let indices =
        TType { shape: ty.shape.clone(), dtype: DataType::U32, page: PageLayout::RowMajor };
    let a = cx.emit("ttnn.argmax", &[&x], props, indices.clone(), op.base.clone());
    one(cx.convert(&a, &indices, ty, suffixed(op, "_out_layout")))
}

/// `reduce_or(x)` is `sum(x) != 0`: booleans are `bf16` zeros and ones after normalization.
fn reduce_or(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, _) = cx.operand(op, 0)?;
    let sum = cx.emit("ttnn.sum", &[&x], reduction_props(op), ty.clone(), suffixed(op, "_sum"));
    let dev = cx.f.device();
    let zero_props = vec![
        p("fill_value", dense::fill_value(dense::to_target(Scalar::Int(0), ty.dtype))),
        p("shape", shape_attr(&ty.shape)),
    ];
    let zero = cx.emit("ttnn.full", &[&dev], zero_props, ty.clone(), suffixed(op, "_zero"));
    one(cx.emit("ttnn.ne", &[&sum, &zero], Vec::new(), ty, op.base.clone()))
}

fn softmax(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, _) = cx.operand(op, 0)?;
    let dim = int(op, "dimension").ok_or("missing `dimension`")?;
    let mut props = vec![p("dimension", format!("{dim} : si32"))];
    if let Some(b) = boolean(op, "numericStable") {
        props.push(p("numericStable", b.to_string()));
    }
    one(cx.emit("ttnn.softmax", &[&x], props, ty, op.base.clone()))
}

/// How many operands each optional group holds, from `operandSegmentSizes` or, without it,
/// from the operand count.
fn segments(op: &OpIn<'_>, groups: usize) -> Vec<usize> {
    if let Some(seg) = ints(op, "operandSegmentSizes") {
        let mut s: Vec<usize> = seg.iter().take(groups).map(|v| (*v).max(0) as usize).collect();
        s.resize(groups, 0);
        if s.iter().sum::<usize>() == op.operands.len() {
            return s;
        }
    }
    (0..groups).map(|i| usize::from(i < op.operands.len())).collect()
}

/// `rms_norm` and `layer_norm` with optional weight and bias.
fn norm(cx: &mut Cx<'_, '_>, op: &OpIn<'_>, name: &str) -> Lowered {
    let ty = cx.result(op, 0)?;
    let seg = segments(op, 3);
    if seg[0] != 1 {
        return Err("a norm needs exactly one input".to_owned());
    }
    let mut operands = Vec::new();
    for i in 0..op.operands.len() {
        operands.push(cx.operand(op, i)?.0);
    }
    let mut props =
        vec![p("operandSegmentSizes", dense_array("i32", seg.iter().map(|s| *s as i64)))];
    if let Some(eps) = f32_attr(op, "epsilon") {
        props.push(p("epsilon", eps));
    }
    let refs: Vec<&Val> = operands.iter().collect();
    one(cx.emit(name, &refs, props, ty, op.base.clone()))
}

/// `distributed_rms_norm(input, weight?, residual?)` takes the device and has slots for
/// stats and a semaphore that TTIR does not fill.
fn distributed_rms_norm(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let seg = segments(op, 3);
    let mut operands = Vec::new();
    for i in 0..op.operands.len() {
        operands.push(cx.operand(op, i)?.0);
    }
    let cluster_axis = prop(op, "cluster_axis").map(attr_text).ok_or("missing `cluster_axis`")?;
    operands.push(cx.f.device());
    let seg6 = [seg[0], seg[1], seg[2], 0, 0, 1];
    let mut props = vec![
        p("cluster_axis", cluster_axis),
        p("operandSegmentSizes", dense_array("i32", seg6.iter().map(|s| *s as i64))),
    ];
    if let Some(eps) = f32_attr(op, "epsilon") {
        props.push(p("epsilon", eps));
    }
    let refs: Vec<&Val> = operands.iter().collect();
    one(cx.emit("ttnn.distributed_rms_norm", &refs, props, ty, op.base.clone()))
}

fn batch_norm(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, xt) = cx.operand(op, 0)?;
    if xt.rank() > 4 {
        return Err("batch norm of more than four dimensions".to_owned());
    }
    let dim = dim_index(int(op, "dimension").unwrap_or(1), xt.rank())?;
    let channels = xt.shape[dim];
    let mut params = Vec::new();
    for i in 1..5 {
        let (v, t) = cx.operand(op, i)?;
        if volume(&t.shape) != channels {
            return Err("batch norm parameters must hold one value per channel".to_owned());
        }
        params.push((v, t));
    }
    // TTNN normalizes over dimension 1 of a 4-D tensor: pad the rank with trailing ones and
    // move the channel dimension to position 1.
    let mut shape4 = xt.shape.clone();
    shape4.resize(4, 1);
    let (x4, t4) = cx.reshape_to(&x, &xt, &shape4, suffixed(op, "_reshape_in"));
    let others: Vec<usize> = (0..4).filter(|i| *i != dim).collect();
    let perm = [others[0], dim, others[1], others[2]];
    let (xp, tp) = cx.permute_by(&x4, &t4, &perm, suffixed(op, "_permute_in"));
    // TTIR order is (scale, offset, mean, variance); TTNN's is (mean, variance, weight, bias).
    let names = ["_reshape_weight", "_reshape_bias", "_reshape_mean", "_reshape_var"];
    let mut shaped = Vec::new();
    for ((v, t), suffix) in params.iter().zip(names) {
        shaped.push(cx.reshape_to(v, t, &[1, channels, 1, 1], suffixed(op, suffix)).0);
    }
    let mut props = vec![p("operandSegmentSizes", dense_array("i32", [1, 1, 1, 1, 1].into_iter()))];
    if let Some(eps) = f32_attr(op, "epsilon") {
        props.push(p("epsilon", eps));
    }
    let bn_ty = TType { dtype: ty.dtype, ..tp.clone() };
    let bn = cx.emit(
        "ttnn.batch_norm_inference",
        &[&xp, &shaped[2], &shaped[3], &shaped[0], &shaped[1]],
        props,
        bn_ty.clone(),
        op.base.clone(),
    );
    let (back, back_t) = cx.permute_by(&bn, &bn_ty, &inverse(&perm), suffixed(op, "_permute_out"));
    one(cx.reshape_to(&back, &back_t, &ty.shape, suffixed(op, "_reshape_out")).0)
}

// ---- indexing -------------------------------------------------------------------------------

/// `ttnn.embedding` reads row-major `u32` indices of shape `[batch, seq]`: tt-mlir's
/// workaround converts them ([`Cx::convert`]); other index ranks are reshaped.
fn emit_embedding(
    cx: &mut Cx<'_, '_>,
    op: &OpIn<'_>,
    idx: (Val, TType),
    weight: (Val, TType),
    result: &TType,
) -> Result<Val, String> {
    let (iv, it) = idx;
    let (wv, wt) = weight;
    if wt.rank() != 2 {
        return Err("embedding weights must be 2-D".to_owned());
    }
    let (iv, it) = if it.rank() == 2 {
        (iv, it)
    } else {
        cx.reshape_to(&iv, &it, &[1, volume(&it.shape)], suffixed(op, "_reshape_indices"))
    };
    let rm = TType { shape: it.shape.clone(), dtype: DataType::U32, page: PageLayout::RowMajor };
    let (iv, it) = (cx.convert(&iv, &it, rm.clone(), suffixed(op, "_in_0_layout")), rm);
    let out_ty = result.reshaped(vec![it.shape[0], it.shape[1], wt.shape[1]]);
    if volume(&out_ty.shape) != volume(&result.shape) {
        return Err("embedding result does not match its indices and weights".to_owned());
    }
    let e = cx.emit("ttnn.embedding", &[&iv, &wv], Vec::new(), out_ty.clone(), op.base.clone());
    Ok(cx.reshape_to(&e, &out_ty, &result.shape, suffixed(op, "_reshape_out")).0)
}

fn embedding(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let idx = cx.operand(op, 0)?;
    let weight = cx.operand(op, 1)?;
    one(emit_embedding(cx, op, idx, weight, &ty)?)
}

/// Torch-style `gather(input, index) {dim}` maps to `ttnn.gather`. StableHLO-style gathers
/// that pick whole slices along one dimension become an embedding lookup, as tt-mlir's
/// gather-to-embedding decomposition does: the indexed dimension is moved first and the rest
/// flattened into the embedding width.
fn gather(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    if let Some(dim) = int(op, "dim") {
        let (x, xt) = cx.operand(op, 0)?;
        let (i, _) = cx.operand(op, 1)?;
        let d = dim_index(dim, xt.rank())?;
        return one(cx.emit(
            "ttnn.gather",
            &[&x, &i],
            vec![p("dim", format!("{d} : si32"))],
            ty,
            op.base.clone(),
        ));
    }
    let (x, xt) = cx.operand(op, 0)?;
    let (i, it) = cx.operand(op, 1)?;
    let start = req_ints(op, "start_index_map")?;
    let collapsed = req_ints(op, "collapsed_slice_dims")?;
    let sizes = req_ints(op, "slice_sizes")?;
    let offset = req_ints(op, "offset_dims")?;
    let batching = ints(op, "operand_batching_dims").unwrap_or_default();
    let [k] = start.as_slice() else {
        return Err("only gathers along one operand dimension lower to an embedding".to_owned());
    };
    let k = dim_index(*k, xt.rank())?;
    let whole = sizes.len() == xt.rank()
        && sizes
            .iter()
            .enumerate()
            .all(|(d, s)| if d == k { *s == 1 } else { *s as u64 == xt.shape[d] });
    if collapsed != [k as i64] || !batching.is_empty() || !whole {
        return Err("only whole-slice gathers along one dimension lower to an embedding".to_owned());
    }
    let ivd = int(op, "index_vector_dim").unwrap_or(it.rank() as i64);
    let mut batch = it.shape.clone();
    if (ivd as usize) < it.rank() {
        if it.shape[ivd as usize] != 1 {
            return Err("the index vector must hold one index".to_owned());
        }
        batch.remove(ivd as usize);
    }
    let rest: Vec<u64> = (0..xt.rank()).filter(|d| *d != k).map(|d| xt.shape[d]).collect();
    let out_rank = batch.len() + rest.len();
    if ty.rank() != out_rank || offset.len() != rest.len() {
        return Err("gather result rank does not match its slices".to_owned());
    }
    // Result dimension j reads the natural layout (batch..., rest...) at `perm[j]`.
    let mut perm = Vec::with_capacity(out_rank);
    let (mut b, mut r) = (0, batch.len());
    for j in 0..out_rank {
        if offset.contains(&(j as i64)) {
            perm.push(r);
            r += 1;
        } else {
            perm.push(b);
            b += 1;
        }
    }
    let natural: Vec<u64> = batch.iter().chain(&rest).copied().collect();
    if !is_permutation(&perm, out_rank)
        || perm.iter().map(|q| natural[*q]).ne(ty.shape.iter().copied())
    {
        return Err("gather result shape does not match its slices".to_owned());
    }
    let mut to_front: Vec<usize> = vec![k];
    to_front.extend((0..xt.rank()).filter(|d| *d != k));
    let (w, wt) = cx.permute_by(&x, &xt, &to_front, suffixed(op, "_permute_input"));
    let (w, wt) =
        cx.reshape_to(&w, &wt, &[xt.shape[k], volume(&rest)], suffixed(op, "_reshape_input"));
    let (iv, itt) = cx.reshape_to(&i, &it, &[1, volume(&batch)], suffixed(op, "_reshape_indices"));
    let nat_ty = ty.reshaped(natural.clone());
    let e = emit_embedding(cx, op, (iv, itt), (w, wt), &nat_ty)?;
    one(cx.permute_by(&e, &nat_ty, &perm, suffixed(op, "_permute_output")).0)
}

// ---- matmul ---------------------------------------------------------------------------------

fn matmul(cx: &mut Cx<'_, '_>, op: &OpIn<'_>, name: &str) -> Lowered {
    let ty = cx.result(op, 0)?;
    let mut operands = Vec::new();
    for i in 0..op.operands.len() {
        operands.push(cx.operand(op, i)?.0);
    }
    if operands.len() < 2 || operands.len() > 3 || (name == "ttnn.matmul" && operands.len() != 2) {
        return Err(format!("unexpected operand count {}", operands.len()));
    }
    let props = vec![
        p("transpose_a", boolean(op, "transpose_a").unwrap_or(false).to_string()),
        p("transpose_b", boolean(op, "transpose_b").unwrap_or(false).to_string()),
    ];
    let refs: Vec<&Val> = operands.iter().collect();
    one(cx.emit(name, &refs, props, ty, op.base.clone()))
}

/// `dot_general` as tt-mlir decomposes it: permute each side to (batch, free, contract) and
/// (batch, contract, free), collapse to `[batch..., M, K] x [batch..., K, N]`, one
/// `ttnn.matmul`, and a reshape back to the result shape. Permutes and reshapes that would
/// not change anything are left out.
fn dot_general(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (l, lt) = cx.operand(op, 0)?;
    let (r, rt) = cx.operand(op, 1)?;
    let dims = |key: &str, rank: usize| -> Result<Vec<usize>, String> {
        ints(op, key).unwrap_or_default().into_iter().map(|d| dim_index(d, rank)).collect()
    };
    let (bl, br) = (dims("batch_dims_lhs", lt.rank())?, dims("batch_dims_rhs", rt.rank())?);
    let (cl, cr) = (dims("contract_dims_lhs", lt.rank())?, dims("contract_dims_rhs", rt.rank())?);
    if bl.len() != br.len() || cl.len() != cr.len() {
        return Err("batch and contracting dimensions must pair up".to_owned());
    }
    let size = |t: &TType, ds: &[usize]| ds.iter().map(|d| t.shape[*d]).collect::<Vec<_>>();
    if size(&lt, &bl) != size(&rt, &br) || size(&lt, &cl) != size(&rt, &cr) {
        return Err("paired dimensions differ in size".to_owned());
    }
    let free = |rank: usize, b: &[usize], c: &[usize]| {
        (0..rank).filter(|d| !b.contains(d) && !c.contains(d)).collect::<Vec<_>>()
    };
    let (fl, fr) = (free(lt.rank(), &bl, &cl), free(rt.rank(), &br, &cr));
    let perm_l: Vec<usize> = bl.iter().chain(&fl).chain(&cl).copied().collect();
    let perm_r: Vec<usize> = br.iter().chain(&cr).chain(&fr).copied().collect();
    if !is_permutation(&perm_l, lt.rank()) || !is_permutation(&perm_r, rt.rank()) {
        return Err("a dimension is both batch and contracting".to_owned());
    }
    let batch = size(&lt, &bl);
    let (m, k, n) = (volume(&size(&lt, &fl)), volume(&size(&lt, &cl)), volume(&size(&rt, &fr)));
    let natural: Vec<u64> =
        batch.iter().chain(&size(&lt, &fl)).chain(&size(&rt, &fr)).copied().collect();
    if natural != ty.shape && !(natural.is_empty() && ty.shape == [1]) {
        return Err("dot_general result shape does not match its operands".to_owned());
    }
    let with = |tail: [u64; 2]| batch.iter().copied().chain(tail).collect::<Vec<_>>();
    let (l, lt) = cx.permute_by(&l, &lt, &perm_l, suffixed(op, "_permute_lhs"));
    let (r, rt) = cx.permute_by(&r, &rt, &perm_r, suffixed(op, "_permute_rhs"));
    let (l, _) = cx.reshape_to(&l, &lt, &with([m, k]), suffixed(op, "_reshape_lhs"));
    let (r, _) = cx.reshape_to(&r, &rt, &with([k, n]), suffixed(op, "_reshape_rhs"));
    let mm_ty = ty.reshaped(with([m, n]));
    let props = vec![p("transpose_a", "false".to_owned()), p("transpose_b", "false".to_owned())];
    let mm = cx.emit("ttnn.matmul", &[&l, &r], props, mm_ty.clone(), op.base.clone());
    one(cx.reshape_to(&mm, &mm_ty, &ty.shape, suffixed(op, "_reshape_out")).0)
}

// ---- creation -------------------------------------------------------------------------------

/// A splat constant becomes `ttnn.full`; any other constant `ttnn.constant`, with its value
/// converted to the normalized element type. Both take the device.
fn constant(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let value = cx.dense_of(op.index)?;
    let dev = cx.f.device();
    match value {
        DenseValue::Splat(s) => {
            let props =
                vec![p("fill_value", dense::fill_value(s)), p("shape", shape_attr(&ty.shape))];
            one(cx.emit("ttnn.full", &[&dev], props, ty, op.base.clone()))
        }
        DenseValue::Elements(text) => {
            one(cx.emit("ttnn.constant", &[&dev], vec![p("value", text)], ty, op.base.clone()))
        }
    }
}

fn creation(cx: &mut Cx<'_, '_>, op: &OpIn<'_>, kind: &str) -> Lowered {
    let ty = cx.result(op, 0)?;
    let dev = cx.f.device();
    let mut props = vec![p("shape", shape_attr(&ty.shape))];
    if kind == "full" {
        let fill = match prop(op, "fill_value") {
            Some(AttrValue::Float { text, .. }) => {
                Scalar::Float(text.parse::<f64>().map_err(|_| "unreadable `fill_value`")?)
            }
            Some(AttrValue::Int { value, .. }) => Scalar::Int(*value),
            _ => return Err("missing `fill_value`".to_owned()),
        };
        props.push(p("fill_value", dense::fill_value(dense::to_target(fill, ty.dtype))));
    }
    one(cx.emit(&format!("ttnn.{kind}"), &[&dev], props, ty, op.base.clone()))
}

/// `ttnn.arange` counts along one dimension, row-major; its result is tiled, and a
/// multi-dimensional TTIR arange is that 1-D arange reshaped into place and repeated over the
/// other dimensions, as tt-mlir's arange-last-dimension rewrite does.
fn arange(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let d = dim_index(int(op, "arange_dimension").unwrap_or(0), ty.rank())?;
    let (start, end, step) =
        (int(op, "start").unwrap_or(0), int(op, "end"), int(op, "step").unwrap_or(1));
    let end = end.ok_or("missing `end`")?;
    let n = ty.shape[d];
    // The count is ceil((end - start) / step), for either sign of step.
    let (span, step_w) = (i128::from(end) - i128::from(start), i128::from(step));
    let count = if step_w == 0 { -1 } else { (span + step_w - step_w.signum()) / step_w };
    if count != i128::from(n) {
        return Err(format!("arange from {start} to {end} by {step} does not give {n} values"));
    }
    let dev = cx.f.device();
    let line = ty.reshaped(vec![n]);
    let props = vec![
        p("end", format!("{end} : si64")),
        p("start", format!("{start} : si64")),
        p("step", format!("{step} : si64")),
    ];
    // TTNN's arange always produces row-major pages; tt-mlir tiles its result with a
    // `to_layout`, which is what its tiled consumers read.
    let rm = TType { page: PageLayout::RowMajor, ..line.clone() };
    let a = cx.emit("ttnn.arange", &[&dev], props, rm, op.base.clone());
    let a = cx.emit("ttnn.to_layout", &[&a], Vec::new(), line.clone(), suffixed(op, "_to_layout"));
    let mut placed = vec![1u64; ty.rank()];
    placed[d] = n;
    let (a, at) = cx.reshape_to(&a, &line, &placed, suffixed(op, "_reshape"));
    if at.shape == ty.shape {
        return one(a);
    }
    let mut reps = ty.shape.clone();
    reps[d] = 1;
    let props = vec![p("repeat_dims", shape_attr(&reps))];
    one(cx.emit("ttnn.repeat", &[&a], props, ty, suffixed(op, "_repeat")))
}

// ---- convolution and pooling ----------------------------------------------------------------

/// The permutation that brings a 4-D activation to NHWC: from `batch_dim`..`channel_dim`
/// when given, NCHW when `channel_last` is false, else NHWC already.
fn nhwc_perm(op: &OpIn<'_>) -> Result<[usize; 4], String> {
    let dim = |k: &str, d: i64| -> Result<usize, String> { dim_index(int(op, k).unwrap_or(d), 4) };
    if prop(op, "batch_dim").is_some() || prop(op, "channel_dim").is_some() {
        let perm = [
            dim("batch_dim", 0)?,
            dim("height_dim", 1)?,
            dim("width_dim", 2)?,
            dim("channel_dim", 3)?,
        ];
        if !is_permutation(&perm, 4) {
            return Err("batch, height, width and channel dimensions must differ".to_owned());
        }
        return Ok(perm);
    }
    if boolean(op, "channel_last") == Some(false) { Ok([0, 2, 3, 1]) } else { Ok([0, 1, 2, 3]) }
}

/// Flattened sliding-window op: `[N, H, W, C]` becomes `[1, 1, N*H*W, C]` (tt-mlir's
/// FlattenSlidingWindow), the op runs, and its `[1, 1, N*OH*OW, OC]` result is unflattened and
/// permuted back to the source layout.
struct Window {
    perm: [usize; 4],
    n: u64,
    h: u64,
    w: u64,
    c: u64,
    out_nhwc: Vec<u64>,
}

fn window(op: &OpIn<'_>, xt: &TType, ty: &TType) -> Result<Window, String> {
    if xt.rank() != 4 || ty.rank() != 4 {
        return Err("sliding-window ops take 4-D tensors".to_owned());
    }
    let perm = nhwc_perm(op)?;
    let [n, h, w, c] = perm.map(|d| xt.shape[d]);
    Ok(Window { perm, n, h, w, c, out_nhwc: perm.iter().map(|d| ty.shape[*d]).collect() })
}

fn flatten_in(cx: &mut Cx<'_, '_>, op: &OpIn<'_>, x: &Val, xt: &TType, win: &Window) -> Val {
    let (xp, pt) = cx.permute_by(x, xt, &win.perm, suffixed(op, "_permute_in"));
    let (flat, _) =
        cx.reshape_to(&xp, &pt, &[1, 1, win.n * win.h * win.w, win.c], suffixed(op, "_flatten"));
    flat
}

fn unflatten_out(cx: &mut Cx<'_, '_>, op: &OpIn<'_>, y: &Val, yt: &TType, win: &Window) -> Val {
    let (u, ut) = cx.reshape_to(y, yt, &win.out_nhwc, suffixed(op, "_unflatten"));
    cx.permute_by(&u, &ut, &inverse(&win.perm), suffixed(op, "_permute_out")).0
}

fn conv2d(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, xt) = cx.operand(op, 0)?;
    let (w, wt) = cx.operand(op, 1)?;
    let bias = if op.operands.len() > 2 { Some(cx.operand(op, 2)?) } else { None };
    let win = window(op, &xt, &ty)?;
    if wt.rank() != 4 {
        return Err("conv2d weights must be 4-D (OIHW)".to_owned());
    }
    let [oh, ow, oc] = [win.out_nhwc[1], win.out_nhwc[2], win.out_nhwc[3]];
    let stride = pair(op, "stride", 1)?;
    let dilation = pair(op, "dilation", 1)?;
    let [pt, pl, pb, pr] = quad(op, "padding")?;
    let groups = int(op, "groups").unwrap_or(1);
    let flat = flatten_in(cx, op, &x, &xt, &win);
    let bias =
        bias.map(|(b, bt)| cx.reshape_to(&b, &bt, &[1, 1, 1, oc], suffixed(op, "_reshape_bias")).0);
    let dev = cx.f.device();
    let props = vec![
        p("batch_size", format!("{} : i32", win.n)),
        p("dilation", dense_array("i32", dilation.into_iter())),
        p("groups", format!("{groups} : i32")),
        p("in_channels", format!("{} : i32", win.c)),
        p("input_height", format!("{} : i32", win.h)),
        p("input_width", format!("{} : i32", win.w)),
        p("kernel_size", dense_array("i32", [wt.shape[2] as i64, wt.shape[3] as i64].into_iter())),
        p("out_channels", format!("{oc} : i32")),
        // TTIR pads (top, left, bottom, right); TTNN wants (top, bottom, left, right).
        p("padding", dense_array("i32", [pt, pb, pl, pr].into_iter())),
        p("stride", dense_array("i32", stride.into_iter())),
    ];
    let yt = ty.reshaped(vec![1, 1, win.n * oh * ow, oc]);
    let mut operands = vec![&flat, &w];
    if let Some(b) = &bias {
        operands.push(b);
    }
    operands.push(&dev);
    let y = cx.emit("ttnn.conv2d", &operands, props, yt.clone(), op.base.clone());
    one(unflatten_out(cx, op, &y, &yt, &win))
}

fn pool2d(cx: &mut Cx<'_, '_>, op: &OpIn<'_>, name: &str) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, xt) = cx.operand(op, 0)?;
    let win = window(op, &xt, &ty)?;
    let kernel = if prop(op, "kernel").is_some() {
        pair(op, "kernel", 1)?
    } else {
        pair(op, "kernel_size", 1)?
    };
    let stride = pair(op, "stride", 1)?;
    let dilation = pair(op, "dilation", 1)?;
    let [pt, pl, pb, pr] = quad(op, "padding")?;
    // Symmetric padding is written as (height, width), else (top, left, bottom, right).
    let padding: Vec<i64> = if pt == pb && pl == pr { vec![pt, pl] } else { vec![pt, pl, pb, pr] };
    let flat = flatten_in(cx, op, &x, &xt, &win);
    let (oh, ow) = (win.out_nhwc[1], win.out_nhwc[2]);
    let mut props = vec![
        p("batch_size", format!("{} : si32", win.n)),
        p("ceil_mode", boolean(op, "ceil_mode").unwrap_or(false).to_string()),
        p("channels", format!("{} : si32", win.c)),
        p("dilation", dense_array("i32", dilation.into_iter())),
        p("input_height", format!("{} : si32", win.h)),
        p("input_width", format!("{} : si32", win.w)),
        p("kernel_size", dense_array("i32", kernel.into_iter())),
        p("padding", dense_array("i32", padding.into_iter())),
        p("reallocate_halo_output", "true".to_owned()),
        p("stride", dense_array("i32", stride.into_iter())),
    ];
    if name == "ttnn.avg_pool2d" {
        props.push(p(
            "count_include_pad",
            boolean(op, "count_include_pad").unwrap_or(true).to_string(),
        ));
    }
    let yt = ty.reshaped(vec![1, 1, win.n * oh * ow, win.c]);
    let y = cx.emit(name, &[&flat], props, yt.clone(), op.base.clone());
    one(unflatten_out(cx, op, &y, &yt, &win))
}

/// `ttnn.upsample` works on NHWC; channel-first inputs are permuted around it.
fn upsample(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, xt) = cx.operand(op, 0)?;
    let win = window(op, &xt, &ty)?;
    let scale = match prop(op, "scale_factor") {
        Some(v) => match (v.as_int(), v.as_ints()) {
            (Some(s), _) => format!("{s} : si32"),
            (_, Some(s)) => dense_array("i32", s.into_iter()),
            _ => return Err("unreadable `scale_factor`".to_owned()),
        },
        None => return Err("missing `scale_factor`".to_owned()),
    };
    let mode = match prop(op, "mode") {
        Some(AttrValue::Str(m)) => m.clone(),
        _ => "nearest".to_owned(),
    };
    let (xp, _) = cx.permute_by(&x, &xt, &win.perm, suffixed(op, "_permute_in"));
    let yt = ty.reshaped(win.out_nhwc.clone());
    let props = vec![p("mode", syntax::escape_string(&mode)), p("scale_factor", scale)];
    let y = cx.emit("ttnn.upsample", &[&xp], props, yt.clone(), op.base.clone());
    one(cx.permute_by(&y, &yt, &inverse(&win.perm), suffixed(op, "_permute_out")).0)
}

// ---- caches and collectives -----------------------------------------------------------------

/// `fill_cache` and `update_cache` write the cache in place. A TTIR form that still returns
/// the updated cache maps that result to the cache operand.
fn cache(cx: &mut Cx<'_, '_>, op: &OpIn<'_>, name: &str) -> Lowered {
    let arity = if name == "ttnn.fill_cache" { 2 } else { 3 };
    if op.operands.len() != arity {
        return Err(format!("expected {arity} operands, found {}", op.operands.len()));
    }
    let mut operands = Vec::new();
    for i in 0..arity {
        operands.push(cx.operand(op, i)?.0);
    }
    let offset = int(op, "batch_offset").unwrap_or(0);
    let refs: Vec<&Val> = operands.iter().collect();
    cx.emit_effect(
        name,
        &refs,
        vec![p("batch_offset", format!("{offset} : i32"))],
        op.base.clone(),
    );
    Ok(op.data.results.iter().map(|_| Slot::Val(operands[0].clone())).collect())
}

/// A 1:1 rename whose listed properties are copied as written.
fn passthrough(cx: &mut Cx<'_, '_>, op: &OpIn<'_>, name: &str, keys: &[&str]) -> Lowered {
    let mut results = Vec::new();
    for i in 0..op.data.results.len() {
        results.push(OutTy::Tensor(cx.result(op, i)?));
    }
    let mut props = Vec::new();
    for k in keys {
        let v = prop(op, k).ok_or_else(|| format!("missing `{k}`"))?;
        props.push(p(k, attr_text(v)));
    }
    // Optional properties TTNN shares with TTIR.
    for k in ["descending", "dim", "num_links", "stable", "topology"] {
        if !keys.contains(&k)
            && let Some(v) = prop(op, k)
        {
            props.push(p(k, attr_text(v)));
        }
    }
    let mut operands = Vec::new();
    for i in 0..op.operands.len() {
        operands.push(cx.operand(op, i)?.0);
    }
    let refs: Vec<&Val> = operands.iter().collect();
    let form = Form::Generic { raw_props: None, attrs: None };
    let vals = cx.f.push_op(name, form, &refs, props, results, op.base.clone(), true);
    Ok(vals.into_iter().map(Slot::Val).collect())
}

fn cumsum(cx: &mut Cx<'_, '_>, op: &OpIn<'_>) -> Lowered {
    let ty = cx.result(op, 0)?;
    let (x, xt) = cx.operand(op, 0)?;
    let d = dim_index(int(op, "dim").ok_or("missing `dim`")?, xt.rank())?;
    one(cx.emit("ttnn.cumsum", &[&x], vec![p("dim", format!("{d} : si32"))], ty, op.base.clone()))
}
