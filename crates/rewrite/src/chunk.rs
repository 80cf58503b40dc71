//! The rewritten lines of one chunk of a function's plan.
//!
//! `rewrite_chunk(f, policy, k, reads)` prints the ops of plan chunk `k` (with the conversions in
//! front of them and the spills after them) from that chunk's slice of the plan, the outputs
//! the carry into it hands on and the written pieces of the function (`crate::statics`). An
//! override re-runs only the chunks whose plans or incoming values it changed; `final_ir_for`
//! then splices the chunks together, which costs a copy of the text.
//!
//! Layout aliases are the one thing a chunk cannot name by itself: a new alias is numbered by
//! the first use of its layout in the whole file. A chunk's text therefore leaves a gap at
//! every layout reference and lists the layouts it refers to (`ChunkText::refs`); the splice
//! fills the gaps with alias names in file order.
//!
//! Names the rewrite makes up (conversion and spill results) carry the body index of the op
//! they belong to, `%<loc>_in<operand>_<op>` and `%<loc>_spill_<op>`, so that no chunk needs
//! a counter shared with the others, and an edit elsewhere in the function never renames
//! them.

use std::{fmt::Write as _, sync::Arc};

use base_db::Policy;
use ir::{FuncBody, FuncId, OpForm, Ty, ValueRef};
use opmodel::OpConfig;
use rustc_hash::FxHashMap;
use syntax::escape_string;
use ttnn_types::{TensorType, TtnnLayout};

use crate::{
    Db,
    statics::{FuncText, func_text},
};

/// The rewritten text of one plan chunk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChunkText {
    /// The lines, indented, each ending with a newline, with a gap at every layout
    /// reference.
    pub text: String,
    /// The gaps: a byte offset into `text` and the index in `layouts` of the layout whose
    /// alias goes there, in text order.
    pub refs: Vec<(u32, u32)>,
    /// The layouts referred to, in order of first reference.
    pub layouts: Vec<TtnnLayout>,
    /// Conversions inserted (reshards and spills).
    pub conversions: u32,
}

/// Where each unscheduled op (device handles, `ttnn.empty`) is printed: right before the
/// first scheduled op that needs it, as a depth-first walk over operands from each scheduled
/// op in schedule order meets it; ops no scheduled op needs come last, in body order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Unscheduled {
    /// Scheduled op (body index) → the unscheduled ops printed right before it, in order.
    pub before: FxHashMap<u32, Vec<u32>>,
    /// Unscheduled ops no scheduled op needs, in printing order.
    pub rest: Vec<u32>,
}

/// [`Unscheduled`] for a function; reads the topology only.
#[salsa::tracked(returns(clone))]
pub fn unscheduled(db: &dyn Db, func: FuncId) -> Arc<Unscheduled> {
    let Some(body) = ir::func_body(db, func) else { return Arc::default() };
    let sched = plan::schedule(db, func);
    let n = body.ops.len();
    let mut seen = vec![false; n];
    let mut out = Unscheduled::default();
    // The schedule is indexed by the body's indices; where the two disagree (a bug upstream)
    // an op either lacks is skipped, never indexed past the end.
    fn visit(i: u32, body: &FuncBody, pos: &[u32], seen: &mut [bool], into: &mut Vec<u32>) {
        let Some(op) = body.ops.get(i as usize) else { return };
        for v in &op.operands {
            if let Some((op, _)) = body.result_of(*v)
                && pos.get(op as usize) == Some(&u32::MAX)
                && let Some(slot) = seen.get_mut(op as usize)
                && !*slot
            {
                *slot = true;
                visit(op, body, pos, seen, into);
                into.push(op);
            }
        }
    }
    for &i in &sched.order {
        let mut list = Vec::new();
        visit(i, &body, &sched.position, &mut seen, &mut list);
        if !list.is_empty() {
            out.before.insert(i, list);
        }
    }
    for i in 0..n as u32 {
        if sched.position.get(i as usize) == Some(&u32::MAX) && !seen[i as usize] {
            seen[i as usize] = true;
            visit(i, &body, &sched.position, &mut seen, &mut out.rest);
            out.rest.push(i);
        }
    }
    Arc::new(out)
}

/// Which plan chunk `k`'s text reads: the plan without overrides where the overrides do not
/// reach the chunk (`plan::override_reach`: its walk, and the carry into it, are those of the
/// plan without them) and, if the chunk prints or reads unscheduled ops
/// ([`reads_unscheduled`]), do not move those (`unscheduled_moved`, see
/// [`unscheduled_plans_moved`]: they are planned in the last chunk); else the plan. So after
/// an override the text of a chunk it does not reach is the memo of the plan without
/// overrides, which reads the graph alone and stays valid in O(1) on a tuning host, rather
/// than a memo re-checked through the overrides' reach. `greedy` plans every chunk with its
/// own walk and always reads the plan.
pub(crate) fn chunk_reads(
    db: &dyn Db,
    func: FuncId,
    (reach, policy): (&plan::Reach, Policy),
    k: u32,
    unscheduled_moved: bool,
) -> plan::Reads {
    if policy == Policy::Greedy
        || reach.start_of(k).is_some()
        || (unscheduled_moved && reads_unscheduled(db, func, k))
    {
        plan::Reads::Overrides
    } else {
        plan::Reads::Base
    }
}

/// Whether the overrides change the plan of an unscheduled op (device handles, `ttnn.empty`:
/// the tail of the last chunk `last`), which every chunk reading one prints from. Asked once
/// per rewrite; compares those few plans when the overrides reach the last chunk.
pub(crate) fn unscheduled_plans_moved(
    db: &dyn Db,
    func: FuncId,
    (reach, policy): (&plan::Reach, Policy),
    last: u32,
) -> bool {
    if policy == Policy::Greedy || reach.start_of(last).is_none() {
        return false;
    }
    let sched = plan::schedule(db, func);
    let ops = plan::chunk_ops(db, func, last);
    let (base, now) =
        (plan::base_slice(db, func, policy, last), plan::plan_slice(db, func, policy, last));
    ops.iter().enumerate().any(|(at, &i)| {
        sched.position.get(i as usize) == Some(&u32::MAX) && base.plans.get(at) != now.plans.get(at)
    })
}

/// Whether chunk `k`'s text takes plans of unscheduled ops (device handles, `ttnn.empty`,
/// planned in the last chunk): it holds some, or one of its ops reads one. From the graph
/// alone.
#[salsa::tracked(returns(copy))]
pub fn reads_unscheduled(db: &dyn Db, func: FuncId, k: u32) -> bool {
    let Some(body) = ir::func_body(db, func) else { return false };
    let sched = plan::schedule(db, func);
    let unscheduled = |i: u32| sched.position.get(i as usize) == Some(&u32::MAX);
    plan::chunk_ops(db, func, k).iter().any(|&i| {
        unscheduled(i)
            || body.ops.get(i as usize).is_some_and(|data| {
                data.operands
                    .iter()
                    .any(|v| body.result_of(*v).is_some_and(|(op, _)| unscheduled(op)))
            })
    })
}

/// The rewritten text of chunk `k` of `func`'s plan under `policy`, from the plan with the
/// overrides or, with [`plan::Reads::Base`], without them ([`chunk_reads`] says which one a
/// chunk's text needs).
#[salsa::tracked(returns(clone))]
pub fn rewrite_chunk(
    db: &dyn Db,
    func: FuncId,
    policy: Policy,
    k: u32,
    reads: plan::Reads,
) -> Arc<ChunkText> {
    let (Some(body), Some(statics)) = (ir::func_body(db, func), func_text(db, func)) else {
        return Arc::default();
    };
    let here = plan::chunk_ops(db, func, k);
    let plans = plan::ChunkValues::new(db, func, policy, k, reads);
    let sched = plan::schedule(db, func);
    let unscheduled = unscheduled(db, func);
    let loc_names = ir::func_loc_names(db, func);
    let _p = tracing::debug_span!("rewrite_chunk", func = %func.name(db), k).entered();
    let plan_of = |i: u32| plans.plan(i);
    // The print order: each scheduled op after the unscheduled ops printed before it; the
    // chunk of unscheduled ops prints those no scheduled op needs.
    let mut order: Vec<u32> = Vec::with_capacity(here.len());
    for &i in here.iter() {
        if sched.position.get(i as usize) == Some(&u32::MAX) {
            continue;
        }
        if let Some(before) = unscheduled.before.get(&i) {
            order.extend(before);
        }
        order.push(i);
    }
    if here.iter().any(|&i| sched.position.get(i as usize) == Some(&u32::MAX)) {
        order.extend(&unscheduled.rest);
    }
    let mut p = Printer {
        names: ValueNames { statics: &statics, body: &body, loc_names: &loc_names },
        pad: "  ".repeat(statics.indent + 1),
        out: ChunkText::default(),
        by_layout: FxHashMap::default(),
    };
    // Results printed in this chunk, by (op index, result index); the others are named from
    // their producer's plan. By index rather than by value: where a key repeats (an error)
    // the values name the last op of that key, not any op printed with it.
    let mut values: FxHashMap<(u32, u32), (String, Ty)> = FxHashMap::default();
    for iu in order {
        let i = iu as usize;
        let Some(data) = body.ops.get(i) else { continue };
        let plan = plan_of(iu);
        let mut operand_names = Vec::with_capacity(data.operands.len());
        let mut operand_types = Vec::with_capacity(data.operands.len());
        for (k, v) in data.operands.iter().enumerate() {
            let value = match body.result_of(*v) {
                Some((op, index)) => values.get(&(op, index)).cloned().or_else(|| {
                    let (layout, spill) = plans.output(op).unwrap_or_default();
                    p.names.bound(op, index, layout.as_ref(), spill.as_ref())
                }),
                None => p.names.bound_value(*v),
            };
            let Some((name, ty)) = value else {
                let written = statics.ops.get(i).and_then(|o| o.uses.get(k).cloned().flatten());
                operand_names.push(written.unwrap_or_else(|| "%undefined".to_owned()));
                operand_types.push(data.operand_types.get(k).cloned().unwrap_or(Ty::Unknown));
                continue;
            };
            let required = plan
                .and_then(|p| p.expected_operands.get(k).cloned().flatten())
                .map(|c| c.layout)
                .or_else(|| {
                    // Ops whose operand types are pinned by another function's signature
                    // (d2m subgraphs, calls) get exactly what they were written with; every
                    // other op follows its producers.
                    (data.form != OpForm::Generic)
                        .then(|| data.operand_types.get(k).and_then(|t| t.layout().cloned()))
                        .flatten()
                });
            match (required, ty.as_tensor()) {
                (Some(req), Some(t)) if t.layout.as_ref() != Some(&req) => {
                    // One conversion per use, right before its op, as tt-mlir inserts one
                    // per edge (and as the cost model charges them): a conversion shared
                    // between uses would make the text depend on which uses a chunk holds.
                    let new_ty = Ty::Tensor(retyped(t, &req));
                    let base = format!("{}_in{k}", p.names.loc_base(i));
                    let cname = p.names.fresh_name(&base, iu);
                    let loc = format!("{}_in_{k}_layout", p.names.loc_base(i));
                    p.conversion(&cname, &name, &ty, &new_ty, &loc);
                    operand_names.push(cname);
                    operand_types.push(new_ty);
                }
                _ => {
                    operand_names.push(name);
                    operand_types.push(ty);
                }
            }
        }
        let result_types = result_types(data, plan.and_then(|p| p.layout.as_ref()));
        p.op_line(i, &operand_names, &operand_types, &result_types, plan.map(|p| &p.config));
        // Bind the results, then the spill that all uses see.
        let spill = plan.and_then(|p| p.spill.as_ref()).map(|c| &c.layout);
        let mut idx = 0u32;
        for (name, count) in statics.ops.get(i).map_or(&[][..], |o| &o.results[..]) {
            for j in 0..*count {
                let n = if *count == 1 { name.clone() } else { format!("{name}#{j}") };
                let ty = result_types.get((idx + j) as usize).cloned().unwrap_or(Ty::Unknown);
                values.insert((iu, idx + j), (n, ty));
            }
            idx += count;
        }
        let first = (iu, 0);
        if let Some(spill) = spill
            && let Some((name, ty)) = values.get(&first).cloned()
            && let Some(t) = ty.as_tensor()
        {
            let new_ty = Ty::Tensor(retyped(t, spill));
            let cname = p.names.spill_name(iu);
            let loc = format!("{}_spill", p.names.loc_base(i));
            p.conversion(&cname, &name, &ty, &new_ty, &loc);
            values.insert(first, (cname, new_ty));
        }
    }
    Arc::new(p.out)
}

/// A function's argument list as the signature prints it (`%a: tensor<...> loc(...), ...`),
/// with gaps for layout aliases as a chunk has. The arguments keep their written types, so
/// this re-runs only when the text does; a 10k-op model can have thousands of arguments.
#[salsa::tracked(returns(clone))]
pub fn args_text(db: &dyn Db, func: FuncId) -> Arc<ChunkText> {
    let (Some(body), Some(statics)) = (ir::func_body(db, func), func_text(db, func)) else {
        return Arc::default();
    };
    let loc_names = ir::func_loc_names(db, func);
    let mut p = Printer {
        names: ValueNames { statics: &statics, body: &body, loc_names: &loc_names },
        pad: String::new(),
        out: ChunkText::default(),
        by_layout: FxHashMap::default(),
    };
    for (i, (name, after)) in statics.args.iter().enumerate() {
        if i > 0 {
            p.push(", ");
        }
        p.push(name);
        p.ty(body.args.get(i).unwrap_or(&Ty::Unknown));
        p.push(after);
    }
    Arc::new(p.out)
}

/// The name and type of every value of a function as the rewritten IR has them: results
/// retyped to their planned layout, a spilled result renamed to its spill.
pub(crate) struct ValueNames<'a> {
    pub statics: &'a FuncText,
    pub body: &'a FuncBody,
    pub loc_names: &'a ir::LocNames,
}

impl ValueNames<'_> {
    /// A function argument's name and type.
    pub(crate) fn bound_value(&self, v: ValueRef) -> Option<(String, Ty)> {
        match v {
            ValueRef::Arg(a) => Some((
                self.body.arg_names.get(a as usize)?.clone(),
                self.body.args.get(a as usize)?.clone(),
            )),
            _ => None,
        }
    }

    /// Result `index` of op `op`, given the op's planned layout and spill.
    pub(crate) fn bound(
        &self,
        op: u32,
        index: u32,
        layout: Option<&TtnnLayout>,
        spill: Option<&TtnnLayout>,
    ) -> Option<(String, Ty)> {
        let data = self.body.ops.get(op as usize)?;
        let types = result_types(data, layout);
        let mut idx = 0u32;
        let mut name = None;
        for (n, count) in &self.statics.ops.get(op as usize)?.results {
            if index < idx + count {
                name = Some(if *count == 1 { n.clone() } else { format!("{n}#{}", index - idx) });
                break;
            }
            idx += count;
        }
        let (name, ty) = (name?, types.get(index as usize)?.clone());
        if index == 0
            && let Some(spill) = spill
            && let Some(t) = ty.as_tensor()
        {
            return Some((self.spill_name(op), Ty::Tensor(retyped(t, spill))));
        }
        Some((name, ty))
    }

    /// The name an op's location gives the values made up for it.
    pub(crate) fn loc_base(&self, i: usize) -> String {
        let key = &self.body.ops[i].key;
        self.loc_names
            .of_key(key)
            .map_or_else(|| key.trim_start_matches('%').replace(',', "_"), str::to_owned)
    }

    /// `%<base>_<op>`, made unique against the names written in the function. Names made up
    /// this way cannot meet each other: each ends in its op's index, and reads back
    /// unambiguously from the end.
    pub(crate) fn fresh_name(&self, base: &str, op: u32) -> String {
        let mut name = format!("%{}_{op}", sanitize(base));
        while self.statics.names.contains(&name) {
            name.push('_');
        }
        name
    }

    pub(crate) fn spill_name(&self, op: u32) -> String {
        self.fresh_name(&format!("{}_spill", self.loc_base(op as usize)), op)
    }
}

/// The types of an op's results under its planned layout: a single tensor result takes the
/// layout; any other result list stays as written.
fn result_types(data: &ir::OpData, layout: Option<&TtnnLayout>) -> Vec<Ty> {
    match (data.results.as_slice(), layout) {
        ([Ty::Tensor(t)], Some(l)) => vec![Ty::Tensor(retyped(t, l))],
        _ => data.results.clone(),
    }
}

/// Writes a chunk's lines, leaving a gap at each layout reference.
struct Printer<'a> {
    names: ValueNames<'a>,
    pad: String,
    out: ChunkText,
    by_layout: FxHashMap<TtnnLayout, u32>,
}

impl Printer<'_> {
    fn push(&mut self, s: &str) {
        self.out.text.push_str(s);
    }

    /// A gap for `l`'s alias.
    fn layout_ref(&mut self, l: &TtnnLayout) {
        let next = self.out.layouts.len() as u32;
        let idx = *self.by_layout.entry(l.clone()).or_insert(next);
        if idx == next {
            self.out.layouts.push(l.clone());
        }
        self.out.refs.push((self.out.text.len() as u32, idx));
    }

    fn ty(&mut self, ty: &Ty) {
        match ty {
            Ty::Tensor(t) => {
                self.push("tensor<");
                for d in &t.shape {
                    match d {
                        Some(d) => {
                            // Without `fmt`: a chunk prints thousands of dimensions.
                            self.push(syntax::decimal(*d, &mut [0; 20]));
                            self.push("x");
                        }
                        None => self.push("?x"),
                    }
                }
                let _ = write!(self.out.text, "{}", t.element);
                if let Some(l) = &t.layout {
                    self.push(", ");
                    self.layout_ref(l);
                } else if let Some(other) = &t.other_encoding {
                    let _ = write!(self.out.text, ", {other}");
                }
                self.push(">");
            }
            other => {
                let _ = write!(self.out.text, "{other}");
            }
        }
    }

    fn tys(&mut self, tys: &[Ty]) {
        for (i, t) in tys.iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.ty(t);
        }
    }

    /// A `to_memory_config` (or `to_layout`, when the page layout or data type changes) line.
    fn conversion(&mut self, result: &str, input: &str, from: &Ty, to: &Ty, loc: &str) {
        let page_changes = from.layout().map(TtnnLayout::page_layout)
            != to.layout().map(TtnnLayout::page_layout)
            || from.layout().and_then(TtnnLayout::data_type)
                != to.layout().and_then(TtnnLayout::data_type);
        let op = if page_changes { "ttnn.to_layout" } else { "ttnn.to_memory_config" };
        let pad = std::mem::take(&mut self.pad);
        let _ = write!(self.out.text, "{pad}{result} = \"{op}\"({input}) : (");
        self.pad = pad;
        self.ty(from);
        self.push(") -> ");
        self.ty(to);
        let _ = writeln!(self.out.text, " loc({})", escape_string(loc));
        self.out.conversions += 1;
    }

    /// Op `i`'s line: as written, with its operands, types and op config replaced.
    fn op_line(
        &mut self,
        i: usize,
        operands: &[String],
        operand_types: &[Ty],
        result_types: &[Ty],
        config: Option<&OpConfig>,
    ) {
        let statics = self.names.statics;
        let Some(op) = statics.ops.get(i) else { return };
        let pad = std::mem::take(&mut self.pad);
        self.push(&pad);
        self.pad = pad;
        if !op.results.is_empty() {
            for (k, (name, count)) in op.results.iter().enumerate() {
                if k > 0 {
                    self.push(", ");
                }
                self.push(name);
                if *count != 1 {
                    let _ = write!(self.out.text, ":{count}");
                }
            }
            self.push(" = ");
        }
        let _ = write!(self.out.text, "{}({})", op.name, operands.join(", "));
        // Properties: verbatim, with the planned op config swapped in.
        let mut props = op.props.clone();
        match config {
            Some(OpConfig::Conv2d { conv, slice, .. }) => {
                set_prop(&mut props, "conv2d_config", Some(conv.to_string()));
                // A conv planned whole in L1 loses a DRAM slice config it was written with.
                set_prop(&mut props, "conv2d_slice_config", slice.map(|s| s.to_string()));
            }
            Some(OpConfig::Matmul { program, .. }) => {
                let fused = matches!(
                    program.as_deref(),
                    Some(
                        ttnn_types::MatmulProgramConfig::MultiCast2D {
                            fused_activation: Some(_),
                            ..
                        } | ttnn_types::MatmulProgramConfig::MultiCast1D {
                            fused_activation: Some(_),
                            ..
                        }
                    )
                );
                set_prop(
                    &mut props,
                    "matmul_program_config",
                    program.as_ref().map(ToString::to_string),
                );
                if fused {
                    // tt-metal#35060: the activation would be applied twice.
                    set_prop(&mut props, "activation", None);
                }
            }
            _ => {}
        }
        if !props.is_empty() {
            self.push(" <{");
            for (k, (key, v)) in props.iter().enumerate() {
                if k > 0 {
                    self.push(", ");
                }
                self.push(key);
                if !v.is_empty() {
                    self.push(" = ");
                    self.push(v);
                }
            }
            self.push("}>");
        }
        if let Some(a) = &op.attrs {
            self.push(" ");
            self.push(a);
        }
        self.push(" : (");
        self.tys(operand_types);
        self.push(") -> ");
        if result_types.len() == 1 {
            self.ty(&result_types[0]);
        } else {
            self.push("(");
            self.tys(result_types);
            self.push(")");
        }
        self.push(&op.loc);
        self.push("\n");
    }
}

fn set_prop(props: &mut Vec<(String, String)>, key: &str, value: Option<String>) {
    let at = props.iter().position(|(k, _)| k == key);
    match (at, value) {
        (Some(i), Some(v)) => props[i].1 = v,
        (Some(i), None) => {
            props.remove(i);
        }
        (None, Some(v)) => props.push((key.to_owned(), v)),
        (None, None) => {}
    }
}

/// The tensor type with a new layout; the element type follows the layout's data type.
pub(crate) fn retyped(t: &TensorType, l: &TtnnLayout) -> TensorType {
    use ttnn_types::ElementType;
    let element = match (t.element, l.data_type()) {
        (e, Some(dt)) if e.data_type() == Some(dt) => e,
        (_, Some(dt)) => dt
            .scalar_type()
            .map_or(ElementType::Tile { height: 32, width: 32, dtype: dt }, ElementType::Scalar),
        (e, None) => e,
    };
    TensorType { shape: t.shape.clone(), element, layout: Some(l.clone()), other_encoding: None }
}

/// A location name usable inside an SSA name.
fn sanitize(s: &str) -> String {
    let mut out: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if out.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        out.insert(0, 'v');
    }
    out
}
