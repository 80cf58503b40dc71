//! One function's output: values, emitted ops, dead-op removal and printing.
//!
//! Ops are recorded as data, not text, so that ops left without users by a lowering (the
//! splat constant a `ttnn.pow_scalar` absorbed, a `ttnn.get_device` nothing needed) can be
//! dropped the way tt-mlir's canonicalizer drops them, and so that SSA numbers and location
//! names are handed out only to the ops that survive.

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
            let _ = writeln!(out, " loc({})", syntax::escape_string(&loc));
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
