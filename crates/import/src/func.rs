//! One function's output: values, emitted ops, dead-op removal and printing.
//!
//! Ops are recorded as data, not text, so that ops left without users by a lowering (the
//! splat constant a `ttnn.pow_scalar` absorbed, a `ttnn.get_device` nothing needed) can be
//! dropped the way tt-mlir's canonicalizer drops them, and so that SSA numbers and location
//! names are handed out only to the ops that survive.

mod compute_config;
mod fuse;

use std::fmt::Write as _;

use ir::ValueRef;
use rustc_hash::FxHashMap;

use crate::{names::NameTable, ty::Layouts, ty::TType};

pub(crate) type ValueId = u32;

/// The type of an output value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OutTy {
    Tensor(TType),
    Device,
    /// A type the importer does not convert, printed as written.
    Other(String),
}

/// An output value and its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Val {
    pub(crate) id: ValueId,
    pub(crate) ty: OutTy,
}

impl Val {
    pub(crate) fn tensor(&self) -> Option<&TType> {
        match &self.ty {
            OutTy::Tensor(t) => Some(t),
            _ => None,
        }
    }
}

/// What an input (TTIR) value became.
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    Val(Val),
    /// A `ttir.broadcast` not yet emitted: consumers that broadcast implicitly use `input`
    /// directly; the first one that cannot materializes the `ttnn.repeat`.
    Bcast(Box<Bcast>),
    /// A destination-passing init (`ttir.empty`): operands that use it are dropped.
    Dropped,
}

#[derive(Debug, Clone)]
pub(crate) struct Bcast {
    pub(crate) input: Val,
    pub(crate) ty: TType,
    pub(crate) repeat_dims: Vec<u64>,
    pub(crate) loc: String,
    pub(crate) done: Option<Val>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Def {
    Arg,
    Op,
}

/// How an output op is printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Form {
    /// `"name"(...) <{props}> {attrs} : (...) -> (...)`.
    Generic { raw_props: Option<String>, attrs: Option<String> },
    /// `call @callee(...) : (...) -> (...)`.
    Call { callee: String },
}

#[derive(Debug, Clone)]
struct OutOp {
    name: String,
    form: Form,
    operands: Vec<ValueId>,
    /// Properties as `(key, value text)`; printed sorted by key.
    props: Vec<(String, String)>,
    results: Vec<ValueId>,
    loc: String,
    /// `loc` is the name of the input op as written (its `NameLoc`), not one made up for it
    /// (a kind name, a helper suffix): a renamed op records it (`loc("op_1"("op"))`) so that
    /// an override of the written name still reaches it.
    written: bool,
    /// Removable when no result is used.
    pure_op: bool,
}

/// An input value by position: an argument, or (op index, result index) in the input body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Bound {
    Arg(u32),
    Result(u32, u32),
}

/// The body of one output function while it is being built.
pub(crate) struct FuncOut {
    values: Vec<(OutTy, Def)>,
    ops: Vec<OutOp>,
    /// The input body's op keys, resolving its values to the positions `slots` is keyed by
    /// (bound by position: where a key repeats, an error, each op keeps its own results).
    defs: ir::DefIndex,
    slots: FxHashMap<Bound, Slot>,
    device: Val,
    pub(crate) returns: Vec<Val>,
    /// The `NameLoc` name of the input op being lowered, if it has one: an op pushed for it
    /// under exactly that name carries the name as written.
    pub(crate) written_name: Option<String>,
}

impl FuncOut {
    /// A new body for the input function whose op keys `defs` indexes; `mesh_shape` is the
    /// device mesh (`1x1`) its `ttnn.get_device` opens.
    pub(crate) fn new(mesh_shape: &str, defs: ir::DefIndex) -> FuncOut {
        let mut f = FuncOut {
            values: Vec::new(),
            ops: Vec::new(),
            defs,
            slots: FxHashMap::default(),
            device: Val { id: 0, ty: OutTy::Device },
            returns: Vec::new(),
            written_name: None,
        };
        // The device handle is op 0; dead-op removal drops it when no op takes the device.
        let zeros = vec!["0"; mesh_shape.split('x').count()].join("x");
        f.device = f
            .push_op(
                "ttnn.get_device",
                Form::Generic { raw_props: None, attrs: None },
                &[],
                vec![
                    ("mesh_offset".to_owned(), format!("#ttnn<mesh_offset {zeros}>")),
                    ("mesh_shape".to_owned(), format!("#ttnn<mesh_shape {mesh_shape}>")),
                ],
                vec![OutTy::Device],
                "get_device".to_owned(),
                true,
            )
            .remove(0);
        f
    }

    pub(crate) fn device(&self) -> Val {
        self.device.clone()
    }

    pub(crate) fn add_arg(&mut self, ty: OutTy) -> Val {
        let id = self.values.len() as ValueId;
        self.values.push((ty.clone(), Def::Arg));
        Val { id, ty }
    }

    pub(crate) fn bind(&mut self, v: Bound, slot: Slot) {
        self.slots.insert(v, slot);
    }

    /// Where input value `v` is.
    fn bound(&self, v: ValueRef) -> Option<Bound> {
        match v {
            ValueRef::Arg(a) => Some(Bound::Arg(a)),
            ValueRef::Result { .. } => {
                self.defs.result_of(v).map(|(op, index)| Bound::Result(op, index))
            }
            ValueRef::Unknown => None,
        }
    }

    pub(crate) fn slot(&self, v: ValueRef) -> Option<&Slot> {
        self.slots.get(&self.bound(v)?)
    }

    pub(crate) fn slot_mut(&mut self, v: ValueRef) -> Option<&mut Slot> {
        let b = self.bound(v)?;
        self.slots.get_mut(&b)
    }

    /// A new generic, pure op with one tensor result of type `ty`, appended to `out` (a
    /// rewrite's replacement ops, spliced into the body later); returns the result.
    fn push_generic(
        &mut self,
        out: &mut Vec<OutOp>,
        name: &str,
        operands: Vec<ValueId>,
        props: Vec<(String, String)>,
        ty: TType,
        loc: String,
    ) -> ValueId {
        let id = self.values.len() as ValueId;
        self.values.push((OutTy::Tensor(ty), Def::Op));
        out.push(OutOp {
            name: name.to_owned(),
            form: Form::Generic { raw_props: None, attrs: None },
            operands,
            props,
            results: vec![id],
            loc,
            written: false,
            pure_op: true,
        });
        id
    }

    /// Records an op; returns its results.
    #[expect(clippy::too_many_arguments, reason = "one call site per form, all fields needed")]
    pub(crate) fn push_op(
        &mut self,
        name: &str,
        form: Form,
        operands: &[&Val],
        props: Vec<(String, String)>,
        results: Vec<OutTy>,
        loc: String,
        pure_op: bool,
    ) -> Vec<Val> {
        let mut vals = Vec::with_capacity(results.len());
        for ty in results {
            let id = self.values.len() as ValueId;
            self.values.push((ty.clone(), Def::Op));
            vals.push(Val { id, ty });
        }
        self.ops.push(OutOp {
            name: name.to_owned(),
            form,
            operands: operands.iter().map(|v| v.id).collect(),
            props,
            results: vals.iter().map(|v| v.id).collect(),
            written: self.written_name.as_ref() == Some(&loc),
            loc,
            pure_op,
        });
        vals
    }

    /// Drops ops whose results nobody uses, last to first, so chains die together.
    pub(crate) fn remove_dead_ops(&mut self) {
        let mut live = vec![false; self.values.len()];
        for r in &self.returns {
            live[r.id as usize] = true;
        }
        let mut keep = vec![false; self.ops.len()];
        for (i, op) in self.ops.iter().enumerate().rev() {
            if !op.pure_op || op.results.iter().any(|r| live[*r as usize]) {
                keep[i] = true;
                for o in &op.operands {
                    live[*o as usize] = true;
                }
            }
        }
        let mut i = 0;
        self.ops.retain(|_| {
            i += 1;
            keep[i - 1]
        });
    }

    /// Op names of the body, for statistics.
    pub(crate) fn op_names(&self) -> impl Iterator<Item = &str> {
        self.ops.iter().map(|o| o.name.as_str())
    }

    /// Prints the body's ops and terminator, four spaces in, one per line.
    pub(crate) fn print_body(
        &self,
        out: &mut String,
        arg_names: &[String],
        layouts: &mut Layouts,
        names: &mut NameTable,
    ) {
        let mut value_names: Vec<String> = vec![String::new(); self.values.len()];
        let mut arg_i = 0;
        for (i, (_, def)) in self.values.iter().enumerate() {
            if *def == Def::Arg {
                value_names[i] = arg_names.get(arg_i).cloned().unwrap_or_else(|| format!("%a{i}"));
                arg_i += 1;
            }
        }
        let mut next = 0u32;
        for op in &self.ops {
            match op.results.len() {
                0 => {}
                1 => {
                    value_names[op.results[0] as usize] = format!("%{next}");
                    next += 1;
                }
                n => {
                    for (k, r) in op.results.iter().enumerate() {
                        value_names[*r as usize] = format!("%{next}#{k}");
                    }
                    let _ = n;
                    next += 1;
                }
            }
        }
        let ty_text = |layouts: &mut Layouts, ty: &OutTy| match ty {
            OutTy::Tensor(t) => layouts.type_text(t),
            OutTy::Device => "!ttnn.device".to_owned(),
            OutTy::Other(s) => s.clone(),
        };
        for op in &self.ops {
            out.push_str("    ");
            match op.results.len() {
                0 => {}
                1 => {
                    let _ = write!(out, "{} = ", value_names[op.results[0] as usize]);
                }
                n => {
                    let first = &value_names[op.results[0] as usize];
                    let base = first.split('#').next().unwrap_or(first);
                    let _ = write!(out, "{base}:{n} = ");
                }
            }
            let operand_names: Vec<&str> =
                op.operands.iter().map(|o| value_names[*o as usize].as_str()).collect();
            let operand_types: Vec<String> =
                op.operands.iter().map(|o| ty_text(layouts, &self.values[*o as usize].0)).collect();
            let result_types: Vec<String> =
                op.results.iter().map(|r| ty_text(layouts, &self.values[*r as usize].0)).collect();
            match &op.form {
                Form::Generic { raw_props, attrs } => {
                    let _ = write!(out, "\"{}\"({})", op.name, operand_names.join(", "));
                    if let Some(p) = raw_props {
                        let _ = write!(out, " <{p}>");
                    } else if !op.props.is_empty() {
                        let mut props: Vec<&(String, String)> = op.props.iter().collect();
                        props.sort_by(|a, b| a.0.cmp(&b.0));
                        let items: Vec<String> =
                            props.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                        let _ = write!(out, " <{{{}}}>", items.join(", "));
                    }
                    if let Some(a) = attrs {
                        let _ = write!(out, " {a}");
                    }
                }
                Form::Call { callee } => {
                    let _ = write!(out, "call @{callee}({})", operand_names.join(", "));
                }
            }
            let _ = write!(out, " : ({}) -> ", operand_types.join(", "));
            if result_types.len() == 1 {
                out.push_str(&result_types[0]);
            } else {
                let _ = write!(out, "({})", result_types.join(", "));
            }
            let loc = names.unique(&op.loc);
            if op.written && loc != op.loc {
                // Renamed to keep names unique: the written name wraps as a child location,
                // which the analysis reads as a second name an override may use.
                let _ = writeln!(
                    out,
                    " loc({}({}))",
                    syntax::escape_string(&loc),
                    syntax::escape_string(&op.loc)
                );
            } else {
                let _ = writeln!(out, " loc({})", syntax::escape_string(&loc));
            }
        }
        let ret_names: Vec<&str> =
            self.returns.iter().map(|r| value_names[r.id as usize].as_str()).collect();
        if ret_names.is_empty() {
            out.push_str("    return\n");
        } else {
            let types: Vec<String> = self.returns.iter().map(|r| ty_text(layouts, &r.ty)).collect();
            let _ = writeln!(out, "    return {} : {}", ret_names.join(", "), types.join(", "));
        }
    }
}

/// What [`FuncOut::hoist_const_eval`] moved out of a function.
pub(crate) struct ConstEval {
    /// The const-eval function's body; its arguments are `args`, in order.
    pub(crate) body: FuncOut,
    /// Indices of the outer function's arguments the const-eval function takes.
    pub(crate) args: Vec<usize>,
}

impl FuncOut {
    /// The ops the device runs once, at load, moved into a const-eval function, as tt-mlir's
    /// `const-eval-hoist-transform` does: every op whose operands all derive from arguments
    /// marked `parameter` or `constant` (`const_args`, by argument index), from creation ops
    /// (ops taking at most the device) or from other such ops, and every creation op itself.
    /// The function is replaced by one `ttcore.load_cached` of `callee` at the first hoisted
    /// op, producing the hoisted values the rest of the function (or its return) uses.
    /// `None` when nothing can be hoisted.
    ///
    /// Call after [`FuncOut::remove_dead_ops`], so that only live ops move.
    pub(crate) fn hoist_const_eval(
        &mut self,
        const_args: &[bool],
        callee: &str,
        mesh_shape: &str,
    ) -> Option<ConstEval> {
        let device = self.device.id as usize;
        let mut constant = vec![false; self.values.len()];
        let mut arg_index: FxHashMap<usize, usize> = FxHashMap::default();
        for (i, (_, def)) in self.values.iter().enumerate() {
            if *def == Def::Arg {
                let k = arg_index.len();
                arg_index.insert(i, k);
                constant[i] = const_args.get(k).copied().unwrap_or(false);
            }
        }
        constant[device] = true;
        let creation = |op: &OutOp| {
            op.pure_op
                && op.name != "ttnn.get_device"
                && op.operands.iter().all(|o| *o as usize == device)
        };
        let mut hoisted = vec![false; self.ops.len()];
        for (i, op) in self.ops.iter().enumerate() {
            let all_const = op.operands.iter().all(|o| constant[*o as usize]);
            if creation(op) {
                // tt-mlir hoists standalone creation ops too (its const-eval caches a
                // `full` or `constant` even when only per-inference ops read it), so they
                // run once, at load.
                hoisted[i] = true;
                for r in &op.results {
                    constant[*r as usize] = true;
                }
            } else if op.pure_op && !op.results.is_empty() && all_const && !op.operands.is_empty() {
                hoisted[i] = true;
                for r in &op.results {
                    constant[*r as usize] = true;
                }
            }
        }
        let first = hoisted.iter().position(|h| *h)?;
        // Values the outer function keeps using: the load_cached results.
        let mut produced = vec![false; self.values.len()];
        for (op, _) in self.ops.iter().zip(&hoisted).filter(|(_, h)| **h) {
            for r in &op.results {
                produced[*r as usize] = true;
            }
        }
        let mut exported = vec![false; self.values.len()];
        for (op, _) in self.ops.iter().zip(&hoisted).filter(|(_, h)| !**h) {
            for o in &op.operands {
                exported[*o as usize] |= produced[*o as usize];
            }
        }
        for r in &self.returns {
            exported[r.id as usize] |= produced[r.id as usize];
        }
        // The arguments the hoisted ops read become the const-eval function's.
        let mut read_by_hoisted = vec![false; self.values.len()];
        for (op, _) in self.ops.iter().zip(&hoisted).filter(|(_, h)| **h) {
            for o in &op.operands {
                read_by_hoisted[*o as usize] = true;
            }
        }
        let mut body = FuncOut::new(mesh_shape, self.defs.clone());
        let mut map: FxHashMap<ValueId, Val> = FxHashMap::default();
        map.insert(self.device.id, body.device());
        let mut args = Vec::new();
        for (i, (ty, def)) in self.values.iter().enumerate() {
            if *def == Def::Arg && read_by_hoisted[i] {
                args.push(arg_index.get(&i).copied().unwrap_or(0));
                map.insert(i as ValueId, body.add_arg(ty.clone()));
            }
        }
        for (i, op) in self.ops.iter().enumerate() {
            if !hoisted[i] {
                continue;
            }
            let operands: Vec<Val> =
                op.operands.iter().filter_map(|o| map.get(o).cloned()).collect();
            let operand_refs: Vec<&Val> = operands.iter().collect();
            let tys = op.results.iter().map(|r| self.values[*r as usize].0.clone()).collect();
            // A moved op keeps whether its name is the one written.
            body.written_name = op.written.then(|| op.loc.clone());
            let vals = body.push_op(
                &op.name,
                op.form.clone(),
                &operand_refs,
                op.props.clone(),
                tys,
                op.loc.clone(),
                op.pure_op,
            );
            for (r, v) in op.results.iter().zip(vals) {
                map.insert(*r, v);
            }
        }
        let exports: Vec<ValueId> =
            (0..self.values.len()).filter(|v| exported[*v]).map(|v| v as ValueId).collect();
        body.returns = exports.iter().filter_map(|v| map.get(v).cloned()).collect();
        body.remove_dead_ops();
        // The outer function: one load_cached in place of the hoisted ops.
        let operands: Vec<ValueId> = (0..self.values.len())
            .filter(|v| self.values[*v].1 == Def::Arg && read_by_hoisted[*v])
            .map(|v| v as ValueId)
            .collect();
        let load = OutOp {
            name: "ttcore.load_cached".to_owned(),
            form: Form::Generic { raw_props: None, attrs: None },
            operands,
            props: vec![("callee".to_owned(), format!("@{callee}"))],
            results: exports,
            loc: callee.to_owned(),
            written: false,
            pure_op: true,
        };
        let mut ops = Vec::with_capacity(self.ops.len());
        for (i, op) in std::mem::take(&mut self.ops).into_iter().enumerate() {
            if i == first {
                ops.push(load.clone());
            }
            if !hoisted[i] {
                ops.push(op);
            }
        }
        self.ops = ops;
        self.remove_dead_ops();
        Some(ConstEval { body, args })
    }
}

impl FuncOut {
    /// Merges reshape chains as tt-mlir's canonicalizer does: a reshape of a reshape reads
    /// the first one's input instead, and when that input already has the result's type the
    /// pair disappears (uses read the input). Run before [`FuncOut::remove_dead_ops`], which
    /// then drops the reshapes nobody reads any more. A 32x128256 tensor reshaped to
    /// 32x1x128256 and back would otherwise pay twice for a layout that pads every row to a
    /// whole tile.
    pub(crate) fn fold_reshape_chains(&mut self) {
        // The outer reshape gives the shape; the pair is the identity when it gives the
        // input's.
        self.fold_chains("ttnn.reshape", |_, _| Some((true, None)));
    }

    /// Merges chains of single-operand ops of kind `kind`: an op whose operand is another's
    /// result reads that one's input instead, with the property `combine(inner, outer)`
    /// gives (none: its own), and when `combine` says the pair is the identity and the
    /// input already has the result's type the pair disappears (uses read the input).
    /// `None` from `combine` leaves the pair alone.
    fn fold_chains(
        &mut self,
        kind: &str,
        combine: impl Fn(&OutOp, &OutOp) -> Option<(bool, Option<(&'static str, String)>)>,
    ) {
        let mut producer: FxHashMap<ValueId, usize> = FxHashMap::default();
        let mut replace: FxHashMap<ValueId, ValueId> = FxHashMap::default();
        for i in 0..self.ops.len() {
            for o in &mut self.ops[i].operands {
                if let Some(r) = replace.get(o) {
                    *o = *r;
                }
            }
            let op = &self.ops[i];
            if op.name != kind {
                continue;
            }
            let ([input], [result]) = (op.operands.as_slice(), op.results.as_slice()) else {
                continue;
            };
            let (input, result) = (*input, *result);
            producer.insert(result, i);
            let Some(inner) = producer
                .get(&input)
                .and_then(|p| self.ops.get(*p))
                .filter(|p| p.name == kind && p.operands.len() == 1)
            else {
                continue;
            };
            let source = inner.operands[0];
            let Some((identity, prop)) = combine(inner, op) else { continue };
            if identity && self.values[source as usize].0 == self.values[result as usize].0 {
                replace.insert(result, source);
                continue;
            }
            let op = &mut self.ops[i];
            op.operands[0] = source;
            if let Some((key, value)) = prop {
                for (k, v) in &mut op.props {
                    if k == key {
                        v.clone_from(&value);
                    }
                }
            }
        }
        for r in &mut self.returns {
            if let Some(s) = replace.get(&r.id) {
                r.id = *s;
            }
        }
    }
}

impl FuncOut {
    /// Merges typecast pairs as tt-mlir's TTNN canonicalizer does after its workarounds
    /// (`foldConsecutiveDataCastOps`): a typecast of a typecast whose result nothing else
    /// reads casts the first one's input straight to its own type, and when that input
    /// already has it the pair disappears (uses read the input). The `bf16` attention op's
    /// result cast back to the model's `f32` and then to `bf16` by the model is such a pair:
    /// two passes over the attention's output that tt-mlir does not run.
    pub(crate) fn fold_typecast_pairs(&mut self) {
        let mut uses: FxHashMap<ValueId, usize> = FxHashMap::default();
        for o in
            self.ops.iter().flat_map(|op| &op.operands).chain(self.returns.iter().map(|r| &r.id))
        {
            *uses.entry(*o).or_insert(0) += 1;
        }
        // Only where the first cast's result is read by the second alone.
        self.fold_chains("ttnn.typecast", |inner, _| {
            let [result] = inner.results.as_slice() else { return None };
            (uses.get(result) == Some(&1)).then_some((true, None))
        });
    }
}

impl FuncOut {
    /// Merges permute chains as tt-mlir's permute folder does: a permute of a permute reads
    /// the first one's input with the two permutations composed, and when the composition
    /// is the identity the pair disappears (uses read the input). tt-xla writes NHWC to NCHW
    /// as two transposes; merged, they are one permute that inverse-op erasure can cancel
    /// against the one back ([`FuncOut::sink_nchw`]).
    pub(crate) fn fold_permute_chains(&mut self) {
        let perm_of = |op: &OutOp| {
            let text = op.props.iter().find(|(k, _)| k == "permutation")?.1.as_str();
            parse_i64_array(text)
        };
        self.fold_chains("ttnn.permute", |inner, outer| {
            let (inner, outer) = (perm_of(inner)?, perm_of(outer)?);
            // `permute(permute(x, a), b)` is `permute(x, c)` with `c[i] = a[b[i]]`.
            let composed: Option<Vec<i64>> = outer
                .iter()
                .map(|b| usize::try_from(*b).ok().and_then(|b| inner.get(b).copied()))
                .collect();
            let composed = composed.filter(|c| c.len() == outer.len())?;
            let identity =
                composed.iter().enumerate().all(|(k, d)| usize::try_from(*d).ok() == Some(k));
            let dims: Vec<String> = composed.iter().map(i64::to_string).collect();
            Some((identity, Some(("permutation", format!("array<i64: {}>", dims.join(", "))))))
        });
    }
}

impl FuncOut {
    /// Fuses a matmul whose only use is an `add` of a bias into one `ttnn.linear`, as
    /// tt-mlir's TTIR fusing does (`MatmulWithBiasFusionPattern`: `matmul` + `add` ->
    /// `linear`): the bias must broadcast along the output's last dim only (`[N]`, `1x..x1xN`,
    /// a single-use reshape that only adds leading ones looked through) and the add must keep
    /// the matmul's element type. The product may reach the add through one single-use reshape
    /// that keeps the last dim (tt-xla writes a projection as a 2-D matmul reshaped back to
    /// `[B, S, N]`); the linear then takes the matmul's shape and the reshape follows it. The
    /// linear takes the add's place (its bias may be computed after the matmul) and the
    /// matmul's name; [`FuncOut::remove_dead_ops`] then drops the matmul (and the reshape it
    /// replays). One op instead of two saves a dispatch and a round trip of the product.
    pub(crate) fn fuse_linear(&mut self) {
        let mut uses: FxHashMap<ValueId, usize> = FxHashMap::default();
        for o in self.ops.iter().flat_map(|op| &op.operands) {
            *uses.entry(*o).or_insert(0) += 1;
        }
        for r in &self.returns {
            *uses.entry(r.id).or_insert(0) += 1;
        }
        let mut producer: FxHashMap<ValueId, usize> = FxHashMap::default();
        let mut after: FxHashMap<usize, OutOp> = FxHashMap::default();
        for i in 0..self.ops.len() {
            if let Some(f) = self.linear_for(i, &producer, &uses) {
                let mm = &self.ops[f.matmul];
                let (operands, props, loc, written) = (
                    [mm.operands[0], mm.operands[1], f.bias],
                    mm.props.clone(),
                    mm.loc.clone(),
                    mm.written,
                );
                let product = mm.results[0];
                if let Some(r) = f.reshape {
                    // The linear yields the matmul's product; the reshape, replayed after it,
                    // yields the add's result.
                    let ty = self.values[product as usize].0.clone();
                    let id = self.values.len() as ValueId;
                    self.values.push((ty, Def::Op));
                    let rs = &self.ops[r];
                    after.insert(
                        i,
                        OutOp {
                            operands: vec![id],
                            results: self.ops[i].results.clone(),
                            ..rs.clone()
                        },
                    );
                    self.ops[i].results = vec![id];
                }
                let add = &mut self.ops[i];
                add.name = "ttnn.linear".to_owned();
                add.operands = operands.to_vec();
                add.props = props;
                add.loc = loc;
                add.written = written;
                for o in &operands {
                    *uses.entry(*o).or_insert(0) += 1;
                }
            }
            for r in &self.ops[i].results {
                producer.insert(*r, i);
            }
        }
        if after.is_empty() {
            return;
        }
        // The reshapes replayed after their linears leave the originals dead, and
        // `remove_dead_ops` drops them (and the matmuls) before anything is printed.
        let mut ops = Vec::with_capacity(self.ops.len() + after.len());
        for (i, op) in std::mem::take(&mut self.ops).into_iter().enumerate() {
            ops.push(op);
            if let Some(next) = after.remove(&i) {
                ops.push(next);
            }
        }
        self.ops = ops;
    }

    /// For an `add` at `i` that can absorb a matmul: the matmul, the reshape between them if
    /// any, and the bias.
    fn linear_for(
        &self,
        i: usize,
        producer: &FxHashMap<ValueId, usize>,
        uses: &FxHashMap<ValueId, usize>,
    ) -> Option<LinearFusion> {
        let add = &self.ops[i];
        if add.name != "ttnn.add" || add.operands.len() != 2 || add.results.len() != 1 {
            return None;
        }
        let ty = |v: ValueId| match &self.values[v as usize].0 {
            OutTy::Tensor(t) => Some(t),
            _ => None,
        };
        let single = |v: ValueId| uses.get(&v) == Some(&1);
        let out = ty(add.results[0])?;
        let n = *out.shape.last()?;
        for (x, bias) in [(add.operands[0], add.operands[1]), (add.operands[1], add.operands[0])] {
            let Some(&p) = producer.get(&x) else { continue };
            if !single(x) {
                continue;
            }
            // One single-use reshape between the matmul and the add, keeping the last dim.
            let (m, reshape) = match self.ops[p].name.as_str() {
                "ttnn.reshape" => {
                    let r = &self.ops[p];
                    let Some(&inner) = r.operands.first() else { continue };
                    let Some(&m) = producer.get(&inner) else { continue };
                    let keeps_n = ty(inner).and_then(|t| t.shape.last()) == Some(&n);
                    if !single(inner) || !keeps_n {
                        continue;
                    }
                    (m, Some(p))
                }
                _ => (p, None),
            };
            let mm = &self.ops[m];
            let Some(product) = mm.results.first().and_then(|r| ty(*r)) else { continue };
            // A bias reshape that only adds leading ones is redundant for the linear.
            let bias = match producer.get(&bias).map(|b| &self.ops[*b]) {
                Some(r) if r.name == "ttnn.reshape" && single(bias) => {
                    let inner = r.operands.first().copied();
                    match (inner.and_then(ty), ty(bias)) {
                        (Some(t), Some(b))
                            if b.shape.ends_with(&t.shape)
                                && b.shape[..b.shape.len() - t.shape.len()]
                                    .iter()
                                    .all(|d| *d == 1) =>
                        {
                            inner.unwrap_or(bias)
                        }
                        _ => bias,
                    }
                }
                _ => bias,
            };
            let b = ty(bias)?;
            let (last, rest) = b.shape.split_last()?;
            let bias_ok =
                *last == n && rest.iter().all(|d| *d == 1) && b.shape.len() <= product.shape.len();
            let shape_ok = match reshape {
                Some(_) => product.dtype == out.dtype && product.shape.last() == Some(&n),
                None => product == out,
            };
            if mm.name == "ttnn.matmul" && mm.operands.len() == 2 && shape_ok && bias_ok {
                return Some(LinearFusion { matmul: m, reshape, bias });
            }
        }
        None
    }
}

/// A matmul and bias add that fuse into a linear (see [`FuncOut::fuse_linear`]).
struct LinearFusion {
    matmul: usize,
    /// The single-use reshape between the matmul and the add, replayed after the linear.
    reshape: Option<usize>,
    bias: ValueId,
}

/// A conv whose single-use epilogue folds into it (see [`FuncOut::fuse_conv_epilogues`]).
struct Epilogue {
    conv: usize,
    /// Per-channel scale and shift values, and whether a relu follows.
    scale: Option<ValueId>,
    shift: Option<ValueId>,
    relu: bool,
    /// The ops absorbed, in order; the fused conv takes the last one's place and result.
    absorbed: Vec<usize>,
}

impl FuncOut {
    /// Folds the per-channel epilogue of a conv into the conv, as tt-mlir's fusing does for
    /// ResNet-style nets (its conv2d-with-multiply, conv2d-with-bias and conv2d-with-relu
    /// patterns): a `multiply` by a per-channel scale becomes a scaled weight (`weight x
    /// scale`, reshaped to `Cx1x1x1`), an `add` of a per-channel shift becomes the conv's
    /// bias, and a `relu` becomes `conv2d_config` activation. Each step needs the previous
    /// value to have that op as its only use; a conv with a bias already takes no scale or
    /// shift. The weight scaling reads only weights and constants, so const-eval hoisting
    /// moves it to load time. Run after the conv nets are flattened, so the epilogue reads
    /// the conv's result directly.
    pub(crate) fn fuse_conv_epilogues(&mut self) {
        let mut uses: FxHashMap<ValueId, Vec<usize>> = FxHashMap::default();
        for (i, op) in self.ops.iter().enumerate() {
            for o in &op.operands {
                uses.entry(*o).or_default().push(i);
            }
        }
        for r in &self.returns {
            uses.entry(r.id).or_default().push(usize::MAX);
        }
        let mut plans: Vec<Epilogue> = Vec::new();
        for (c, op) in self.ops.iter().enumerate() {
            if let Some(e) = self.epilogue(c, op, &uses) {
                plans.push(e);
            }
        }
        if plans.is_empty() {
            return;
        }
        let mut at: FxHashMap<usize, usize> = FxHashMap::default();
        let mut gone: Vec<bool> = vec![false; self.ops.len()];
        for (k, e) in plans.iter().enumerate() {
            gone[e.conv] = true;
            for a in &e.absorbed {
                gone[*a] = true;
            }
            if let Some(last) = e.absorbed.last() {
                at.insert(*last, k);
            }
        }
        let old = std::mem::take(&mut self.ops);
        for (i, op) in old.iter().enumerate() {
            if let Some(&k) = at.get(&i) {
                self.emit_fused_conv(&old, &plans[k]);
            } else if !gone[i] {
                self.ops.push(op.clone());
            }
        }
    }

    /// The epilogue of the conv at `c`, if it has one to fold.
    fn epilogue(
        &self,
        c: usize,
        op: &OutOp,
        uses: &FxHashMap<ValueId, Vec<usize>>,
    ) -> Option<Epilogue> {
        if op.name != "ttnn.conv2d" || op.results.len() != 1 {
            return None;
        }
        let tensor = |v: ValueId| match &self.values[v as usize].0 {
            OutTy::Tensor(t) => Some(t),
            _ => None,
        };
        let y = op.results[0];
        let yt = tensor(y)?;
        let channels = *yt.shape.last()?;
        let has_bias = op.operands.iter().filter(|o| tensor(**o).is_some()).count() > 2;
        let per_channel = |v: ValueId| {
            tensor(v).is_some_and(|t| {
                t.shape.len() <= 4
                    && t.shape.last() == Some(&channels)
                    && t.shape[..t.shape.len() - 1].iter().all(|d| *d == 1)
            })
        };
        let only_user = |v: ValueId| match uses.get(&v).map(Vec::as_slice) {
            Some([u]) if *u != usize::MAX => Some(*u),
            _ => None,
        };
        let mut e = Epilogue { conv: c, scale: None, shift: None, relu: false, absorbed: vec![] };
        let mut cur = y;
        // The other operand of a binary user of `cur` that keeps its type.
        let other = |u: &OutOp, cur: ValueId| -> Option<ValueId> {
            let [a, b] = u.operands.as_slice() else { return None };
            let o = if *a == cur { *b } else { *a };
            (u.results.len() == 1 && tensor(u.results[0]) == Some(yt)).then_some(o)
        };
        if let Some(u) = only_user(cur)
            && !has_bias
            && self.ops[u].name == "ttnn.multiply"
            && let Some(s) = other(&self.ops[u], cur)
            && per_channel(s)
        {
            e.scale = Some(s);
            e.absorbed.push(u);
            cur = self.ops[u].results[0];
        }
        if let Some(u) = only_user(cur)
            && !has_bias
            && self.ops[u].name == "ttnn.add"
            && let Some(t) = other(&self.ops[u], cur)
            && per_channel(t)
        {
            e.shift = Some(t);
            e.absorbed.push(u);
            cur = self.ops[u].results[0];
        }
        if let Some(u) = only_user(cur)
            && self.ops[u].name == "ttnn.relu"
            && self.ops[u].results.len() == 1
            && tensor(self.ops[u].results[0]) == Some(yt)
        {
            e.relu = true;
            e.absorbed.push(u);
        }
        (!e.absorbed.is_empty()).then_some(e)
    }

    /// Emits the weight scaling, the bias reshape and the fused conv of `e`, the conv
    /// producing the last absorbed op's result.
    fn emit_fused_conv(&mut self, old: &[OutOp], e: &Epilogue) {
        let conv = &old[e.conv];
        let result = old[e.absorbed.last().copied().unwrap_or(e.conv)].results[0];
        let tensor = |f: &FuncOut, v: ValueId| match &f.values[v as usize].0 {
            OutTy::Tensor(t) => Some(t.clone()),
            _ => None,
        };
        let mut operands = conv.operands.clone();
        let generic = || Form::Generic { raw_props: None, attrs: None };
        let shape_prop = |shape: &[u64]| {
            let dims: Vec<String> = shape.iter().map(|d| format!("{d} : i32")).collect();
            ("shape".to_owned(), format!("[{}]", dims.join(", ")))
        };
        let fresh =
            |f: &mut FuncOut, name: &str, ops: &[ValueId], props, ty: TType, loc: String| {
                let id = f.values.len() as ValueId;
                f.values.push((OutTy::Tensor(ty), Def::Op));
                f.ops.push(OutOp {
                    name: name.to_owned(),
                    form: generic(),
                    operands: ops.to_vec(),
                    props,
                    results: vec![id],
                    loc,
                    written: false,
                    pure_op: true,
                });
                id
            };
        if let (Some(s), Some(w)) = (e.scale, operands.get(1).copied())
            && let (Some(st), Some(wt)) = (tensor(self, s), tensor(self, w))
        {
            let oc = wt.shape.first().copied().unwrap_or(1);
            let column = [oc, 1, 1, 1];
            let s2 = fresh(
                self,
                "ttnn.reshape",
                &[s],
                vec![shape_prop(&column)],
                st.reshaped(column.to_vec()),
                format!("{}_scale_reshape", conv.loc),
            );
            operands[1] = fresh(
                self,
                "ttnn.multiply",
                &[w, s2],
                vec![],
                wt,
                format!("{}_scale_weights", conv.loc),
            );
        }
        if let Some(t) = e.shift
            && let Some(tt) = tensor(self, t)
        {
            let c = tt.shape.last().copied().unwrap_or(1);
            let bias = if tt.shape == [1, 1, 1, c] {
                t
            } else {
                let row = [1, 1, 1, c];
                fresh(
                    self,
                    "ttnn.reshape",
                    &[t],
                    vec![shape_prop(&row)],
                    tt.reshaped(row.to_vec()),
                    format!("{}_reshape_bias", conv.loc),
                )
            };
            // The bias goes after the input and the weight, before the device.
            operands.insert(2, bias);
        }
        let mut props = conv.props.clone();
        if e.relu {
            props.push((
                "conv2d_config".to_owned(),
                "#ttnn.conv2d_config<activation = <op_type = relu>>".to_owned(),
            ));
        }
        self.ops.push(OutOp {
            name: conv.name.clone(),
            form: conv.form.clone(),
            operands,
            props,
            results: vec![result],
            loc: conv.loc.clone(),
            written: conv.written,
            pure_op: conv.pure_op,
        });
    }
}

/// Elementwise ops a reshape commutes with: one result, each element from the same position
/// of the (broadcast) operands.
const ELEMENTWISE: &[&str] = &[
    "ttnn.abs",
    "ttnn.add",
    "ttnn.clamp_scalar",
    "ttnn.divide",
    "ttnn.exp",
    "ttnn.gelu",
    "ttnn.hardsigmoid",
    "ttnn.leaky_relu",
    "ttnn.maximum",
    "ttnn.minimum",
    "ttnn.multiply",
    "ttnn.neg",
    "ttnn.pow_scalar",
    "ttnn.reciprocal",
    "ttnn.relu",
    "ttnn.relu6",
    "ttnn.rsqrt",
    "ttnn.sigmoid",
    "ttnn.silu",
    "ttnn.sqrt",
    "ttnn.subtract",
    "ttnn.tanh",
    "ttnn.typecast",
];

impl FuncOut {
    /// Keeps convolution nets in the flattened `1x1x(N·H·W)xC` form between convs, as
    /// tt-mlir's inverse-op erasure does: an elementwise op whose operands come from
    /// reshapes out of that form (`_unflatten`) runs on the flattened tensor instead, and the
    /// reshape moves after it, where it meets the next conv's `_flatten` (folded by
    /// [`FuncOut::fold_reshape_chains`]) or sinks further. Other operands must be per-channel
    /// vectors (`1x..x1xC` or scalars), which broadcast the same in both forms. Without this
    /// every elementwise op between convs pays the 4-D form's tile padding (7x7 spatial dims
    /// pad to 32x32: 4.6x the bytes).
    pub(crate) fn sink_unflatten_reshapes(&mut self) {
        let mut producer: FxHashMap<ValueId, usize> = FxHashMap::default();
        let mut replace: FxHashMap<ValueId, ValueId> = FxHashMap::default();
        let mut ops = Vec::with_capacity(self.ops.len());
        for mut op in std::mem::take(&mut self.ops) {
            for o in &mut op.operands {
                if let Some(r) = replace.get(o) {
                    *o = *r;
                }
            }
            let sunk = self.sink_nchw(&op, &ops, &producer).or_else(|| {
                self.sink_through(&op, &ops, &producer).map(|(operands, reshape_at)| Sink {
                    operands: operands.into_iter().map(SinkOperand::Flat).collect(),
                    reshape_at,
                    permute_at: None,
                })
            });
            let result = op.results.first().copied();
            let (Some(sink), Some(result)) = (sunk, result) else {
                keep(&mut ops, op, &mut producer);
                continue;
            };
            let OutTy::Tensor(t) = self.values[result as usize].0.clone() else {
                keep(&mut ops, op, &mut producer);
                continue;
            };
            let reshape = ops[sink.reshape_at].clone();
            let flat_shape = match &self.values[reshape.operands[0] as usize].0 {
                OutTy::Tensor(s) => s.shape.clone(),
                // The sinks only accept tensor sources.
                _ => t.shape.clone(),
            };
            // Per-channel operands of the channel-first form become `1x1x1xC` rows.
            let mut operands = Vec::with_capacity(sink.operands.len());
            for o in sink.operands {
                match o {
                    SinkOperand::Flat(v) => operands.push(v),
                    SinkOperand::Channels(v) => {
                        let OutTy::Tensor(ct) = self.values[v as usize].0.clone() else {
                            operands.push(v);
                            continue;
                        };
                        let c = ct.shape.iter().product::<u64>();
                        let row = self.values.len() as ValueId;
                        self.values.push((OutTy::Tensor(ct.reshaped(vec![1, 1, 1, c])), Def::Op));
                        keep(
                            &mut ops,
                            OutOp {
                                name: "ttnn.reshape".to_owned(),
                                form: Form::Generic { raw_props: None, attrs: None },
                                operands: vec![v],
                                props: vec![(
                                    "shape".to_owned(),
                                    format!("[1 : i32, 1 : i32, 1 : i32, {c} : i32]"),
                                )],
                                results: vec![row],
                                loc: format!("{}_channels", op.loc),
                                written: false,
                                pure_op: true,
                            },
                            &mut producer,
                        );
                        operands.push(row);
                    }
                }
            }
            self.values[result as usize].0 = OutTy::Tensor(t.reshaped(flat_shape));
            op.operands = operands;
            ops.push(op);
            // Back to the op's own form: the reshape out of the flat form, then for the
            // channel-first form the permute to it.
            let mut restore = vec![reshape];
            if let Some(p) = sink.permute_at {
                restore.push(ops[p].clone());
            }
            let mut cur = result;
            let count = restore.len();
            for (k, template) in restore.into_iter().enumerate() {
                let ty = if k + 1 == count {
                    t.clone()
                } else {
                    match &self.values[template.results[0] as usize].0 {
                        OutTy::Tensor(r) => r.clone(),
                        _ => t.clone(),
                    }
                };
                let out = self.values.len() as ValueId;
                self.values.push((OutTy::Tensor(ty), Def::Op));
                producer.insert(out, ops.len());
                ops.push(OutOp { operands: vec![cur], results: vec![out], ..template });
                cur = out;
            }
            replace.insert(result, cur);
        }
        self.ops = ops;
        for r in &mut self.returns {
            if let Some(s) = replace.get(&r.id) {
                r.id = *s;
            }
        }
    }

    /// The channel-first variant of [`FuncOut::sink_through`]: tt-xla writes the stages of
    /// some conv nets in NCHW, with a permute to NCHW after each conv's `_unflatten` (once
    /// [`FuncOut::fold_permute_chains`] has merged tt-xla's two transposes, one
    /// `permute [0, 3, 1, 2]`) and one back before the next conv. tt-mlir's inverse-op
    /// erasure commutes those permutes through the elementwise ops between the convs and
    /// cancels them, so the ops run on the flat `1x1x(N·H·W)xC` form. Here an elementwise op
    /// with such an operand of its result's shape runs on the flat form when every other
    /// operand is another one of the same flat shape, a per-channel `1xCx1x1` (brought to
    /// `1x1x1xC`) or all ones.
    fn sink_nchw(
        &self,
        op: &OutOp,
        ops: &[OutOp],
        producer: &FxHashMap<ValueId, usize>,
    ) -> Option<Sink> {
        if !ELEMENTWISE.contains(&op.name.as_str()) || op.results.len() != 1 {
            return None;
        }
        let shape = |v: ValueId| match &self.values[v as usize].0 {
            OutTy::Tensor(t) => Some(t.shape.clone()),
            _ => None,
        };
        let result_shape = shape(op.results[0])?;
        let [_, c, _, _] = result_shape.as_slice() else { return None };
        let c = *c;
        let made_by = |v: ValueId, name: &str| {
            producer
                .get(&v)
                .and_then(|p| ops.get(*p).map(|r| (*p, r)))
                .filter(|(_, r)| r.name == name && r.operands.len() == 1)
        };
        // (reshape index, permute index, flat source) of a conv result brought to NCHW.
        let nchw_of = |v: ValueId| {
            let (q, perm) = made_by(v, "ttnn.permute")?;
            let p_text = perm.props.iter().find(|(k, _)| k == "permutation")?.1.as_str();
            if parse_i64_array(p_text)? != [0, 3, 1, 2] {
                return None;
            }
            let (p, reshape) = made_by(perm.operands[0], "ttnn.reshape")?;
            let src = reshape.operands[0];
            let fs = shape(src)?;
            (matches!(fs.as_slice(), [1, 1, _, last] if *last == c) && shape(v)? == result_shape)
                .then_some((p, q, src, fs))
        };
        let (p, q, _, flat) = op.operands.iter().find_map(|o| nchw_of(*o))?;
        let mut operands = Vec::with_capacity(op.operands.len());
        for &o in &op.operands {
            if let Some((_, _, src, fs)) = nchw_of(o) {
                if fs != flat {
                    return None;
                }
                operands.push(SinkOperand::Flat(src));
                continue;
            }
            let s = shape(o)?;
            if s.len() <= 4 && s.iter().all(|d| *d == 1) {
                operands.push(SinkOperand::Flat(o));
            } else if matches!(s.as_slice(), [1, k, 1, 1] if *k == c) {
                operands.push(SinkOperand::Channels(o));
            } else {
                return None;
            }
        }
        Some(Sink { operands, reshape_at: p, permute_at: Some(q) })
    }

    /// For an elementwise `op` that can run on the flattened form: its operands in that form
    /// and the index (in `ops`) of one of the reshapes it reads.
    ///
    /// Two kinds of reshape sink: a conv's `_unflatten` (out of `1x1x(N·H·W)xC`), and a
    /// reshape that only inserts unit dims where they add tile padding (a decode graph's
    /// `32x2048 -> 32x1x2048` pads every row to a whole tile: 32x the bytes). Operands that
    /// do not come from such a reshape must broadcast the same way in both forms.
    fn sink_through(
        &self,
        op: &OutOp,
        ops: &[OutOp],
        producer: &FxHashMap<ValueId, usize>,
    ) -> Option<(Vec<ValueId>, usize)> {
        if !ELEMENTWISE.contains(&op.name.as_str()) || op.results.len() != 1 {
            return None;
        }
        let shape = |v: ValueId| match &self.values[v as usize].0 {
            OutTy::Tensor(t) => Some(t.shape.clone()),
            _ => None,
        };
        let result_shape = shape(op.results[0])?;
        let channels = *result_shape.last()?;
        let reshape_of = |o: ValueId| {
            producer
                .get(&o)
                .and_then(|p| ops.get(*p).map(|r| (*p, r)))
                .filter(|(_, r)| r.name == "ttnn.reshape")
                .and_then(|(p, r)| Some((p, *r.operands.first()?)))
        };
        // The form the op runs in, and for the unit-dim kind the positions of the inserted
        // unit dims in the result's shape.
        let mut flat: Option<(Vec<u64>, Option<Vec<usize>>)> = None;
        for &o in &op.operands {
            let Some((_, src)) = reshape_of(o) else { continue };
            let (Some(s), Some(t)) = (shape(src), shape(o)) else { continue };
            if t != result_shape {
                continue;
            }
            let kind = if s.len() == 4 && s[0] == 1 && s[1] == 1 && s.last() == Some(&channels) {
                Some((s, None))
            } else {
                inserted_units(&s, &t)
                    .filter(|_| padded_volume(&s) < padded_volume(&t))
                    .map(|units| (s, Some(units)))
            };
            if let Some(k) = kind {
                if flat.as_ref().is_some_and(|f| *f != k) {
                    return None;
                }
                flat = Some(k);
            }
        }
        let (flat_shape, units) = flat?;
        let mut at = None;
        let mut operands = Vec::with_capacity(op.operands.len());
        for &o in &op.operands {
            let s = shape(o)?;
            let source = reshape_of(o).and_then(|(p, src)| Some((p, shape(src)?, src)));
            if s == result_shape
                && let Some((p, src_shape, src)) = &source
                && *src_shape == flat_shape
            {
                at = Some(*p);
                operands.push(*src);
                continue;
            }
            // The same operand with the inserted unit dims dropped, when it has the result's
            // rank: a per-row `32x1x1` is the flat form's `32x1`.
            if let Some(units) = &units
                && s.len() == result_shape.len()
            {
                let dropped: Vec<u64> = s
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !units.contains(i))
                    .map(|(_, d)| *d)
                    .collect();
                if let Some((_, src_shape, src)) = &source
                    && *src_shape == dropped
                {
                    operands.push(*src);
                    continue;
                }
            }
            // Scalars and per-channel vectors broadcast the same in both forms as long as
            // they do not raise the rank.
            let (last, rest) = s.split_last().unwrap_or((&1, &[]));
            let per_channel = (*last == 1 || *last == channels) && rest.iter().all(|d| *d == 1);
            if !per_channel || s.len() > flat_shape.len() {
                return None;
            }
            operands.push(o);
        }
        Some((operands, at?))
    }
}

/// How an elementwise op runs on the flat form of a conv net's activations: its operands
/// there, and the ops (by index) whose copies bring its result back to its own form.
struct Sink {
    operands: Vec<SinkOperand>,
    reshape_at: usize,
    permute_at: Option<usize>,
}

enum SinkOperand {
    /// Read as it is.
    Flat(ValueId),
    /// A per-channel `1xCx1x1`, reshaped to `1x1x1xC` first.
    Channels(ValueId),
}

/// The values of an `array<i64: ...>` property.
fn parse_i64_array(text: &str) -> Option<Vec<i64>> {
    let inner = text.trim().strip_prefix("array<i64:")?.strip_suffix('>')?;
    inner.split(',').map(|d| d.trim().parse().ok()).collect()
}

/// The positions in `to` of unit dims a reshape from `from` inserts, when that is all it
/// does (`32x2048 -> 32x1x2048`: `[1]`); `None` for any other reshape.
fn inserted_units(from: &[u64], to: &[u64]) -> Option<Vec<usize>> {
    if to.len() <= from.len() {
        return None;
    }
    let mut units = Vec::new();
    let mut j = 0;
    for (i, d) in to.iter().enumerate() {
        if j < from.len() && from[j] == *d {
            j += 1;
        } else if *d == 1 {
            units.push(i);
        } else {
            return None;
        }
    }
    (j == from.len()).then_some(units)
}

/// Elements of a shape once its last two dims are padded to whole tiles.
fn padded_volume(shape: &[u64]) -> u128 {
    let pad = |d: u64| u128::from(d.div_ceil(32) * 32);
    match shape {
        [] => 1024,
        [w] => 32 * pad(*w),
        [rest @ .., h, w] => {
            rest.iter().map(|d| u128::from(*d)).product::<u128>() * pad(*h) * pad(*w)
        }
    }
}

/// Keeps an op as it is, noting what produces its results.
fn keep(ops: &mut Vec<OutOp>, op: OutOp, producer: &mut FxHashMap<ValueId, usize>) {
    for r in &op.results {
        producer.insert(*r, ops.len());
    }
    ops.push(op);
}
