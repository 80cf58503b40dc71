//! `final_ir(file)`: the optimized IR, rewritten from each function's plan.
//!
//! For every optimizable function (public, with a body, a forward function), ops are emitted
//! in schedule order with result types rewritten to the planned layouts, op configs attached
//! (`conv2d_config` and `conv2d_slice_config`, `matmul_program_config`), and conversions
//! inserted:
//!
//! - a reshard (`ttnn.to_memory_config`, or `ttnn.to_layout` when the page layout changes)
//!   in front of an operand whose incoming value differs from the layout the op was
//!   validated with, or from the type an op with a fixed signature was written with;
//! - a spill right after a chain's last op, seen by all its uses (the seeds' DRAM spill at
//!   the return).
//!
//! Everything else (other functions, aliases, location aliases, resources) prints as the
//! syntax printer prints it, and attribute spellings are kept verbatim. Layouts get tt-mlir
//! style aliases; an existing alias with the same layout is reused.

use std::{fmt::Write as _, sync::Arc};

use base_db::{Policy, SourceFile};
use ir::{FuncBody, FuncId, OpForm, Ty, ValueRef};
use opmodel::OpConfig;
use rustc_hash::FxHashMap;
use syntax::{Parse, PrintHook, ast, escape_string, range_text};
use ttnn_types::{BufferType, ElementType, TensorType, TtnnLayout};

#[salsa::db]
pub trait Db: plan::Db {}

/// The optimized text of a file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FinalIr {
    pub text: String,
    /// Conversions inserted (reshards and spills).
    pub conversions: usize,
    /// Functions rewritten.
    pub functions: usize,
    /// Functions left as written, with why.
    pub skipped: Vec<(String, String)>,
}

/// The optimized text of a file under the policy in the options.
#[salsa::tracked(returns(clone))]
pub fn final_ir(db: &dyn Db, file: SourceFile) -> Arc<FinalIr> {
    final_ir_for(db, file, layout::effective_options(db).policy)
}

/// The optimized text of a file under a given policy.
#[salsa::tracked(returns(clone))]
pub fn final_ir_for(db: &dyn Db, file: SourceFile, policy: Policy) -> Arc<FinalIr> {
    let parse = ir::parse_file(db, file);
    let funcs = ir::file_funcs(db, file);
    let text = file.text(db);
    let _p = tracing::debug_span!("final_ir", file = %file.path(db)).entered();
    let mut hook = Rewriter {
        db,
        policy,
        text,
        parse: &parse,
        funcs: &funcs,
        seen: FxHashMap::default(),
        chunks: FxHashMap::default(),
        out: FinalIr::default(),
    };
    let printed = syntax::print_with(text, &parse, &mut hook);
    let mut out = hook.out;
    out.text = printed;
    Arc::new(out)
}

/// Whether the optimizer rewrites a function, and if not, why.
pub fn optimizable(body: &FuncBody) -> Result<(), String> {
    if !body.has_body {
        return Err("a declaration".to_owned());
    }
    if body.is_private {
        return Err("private (called from elsewhere, so its signature must not change)".to_owned());
    }
    if let Some(kind) = &body.function_type
        && kind != "forward_device"
    {
        return Err(format!("a `{kind}` function"));
    }
    if body.ops.iter().any(|o| matches!(o.form, OpForm::Opaque | OpForm::Other) || o.has_regions) {
        return Err("it contains ops of other dialects or with regions".to_owned());
    }
    Ok(())
}

/// Per chunk: the existing aliases and the ones the rewrite adds.
#[derive(Default)]
struct ChunkAliases {
    /// Normalized alias value text → alias name, for reuse.
    by_text: FxHashMap<String, String>,
    /// Layout → its alias name, so a layout used by thousands of values is printed once.
    by_layout: FxHashMap<TtnnLayout, String>,
    names: rustc_hash::FxHashSet<String>,
    new_buffers: Vec<(String, String)>,
    new_layouts: Vec<(String, String)>,
    next: u32,
}

struct Rewriter<'a> {
    db: &'a dyn Db,
    policy: Policy,
    text: &'a str,
    parse: &'a Parse,
    funcs: &'a [FuncId],
    /// Same-named functions seen so far per chunk (the duplicate index).
    seen: FxHashMap<(usize, String), u32>,
    chunks: FxHashMap<usize, ChunkAliases>,
    out: FinalIr,
}

impl PrintHook for Rewriter<'_> {
    fn func(
        &mut self,
        chunk: usize,
        op: &ast::Op,
        f: &ast::FuncOp,
        indent: usize,
    ) -> Option<String> {
        let name = f.sym_name.text.trim_start_matches('@').to_owned();
        let dup = {
            let c = self.seen.entry((chunk, name.clone())).or_insert(0);
            *c += 1;
            *c - 1
        };
        let func = self.funcs.iter().copied().find(|fid| {
            fid.chunk(self.db) as usize == chunk
                && fid.name(self.db) == &name
                && fid.dup(self.db) == dup
        })?;
        let body = ir::func_body(self.db, func)?;
        if let Err(why) = optimizable(&body) {
            self.out.skipped.push((name, why));
            return None;
        }
        self.ensure_chunk(chunk);
        let text = self.function(chunk, func, &body, op, f, indent)?;
        self.out.functions += 1;
        Some(text)
    }

    fn extra_aliases(&mut self, chunk: usize) -> String {
        let Some(c) = self.chunks.get(&chunk) else { return String::new() };
        let mut out = String::new();
        for (name, value) in c.new_buffers.iter().chain(&c.new_layouts) {
            let _ = writeln!(out, "{name} = {value}");
        }
        out
    }
}

impl Rewriter<'_> {
    fn ensure_chunk(&mut self, chunk: usize) {
        if self.chunks.contains_key(&chunk) {
            return;
        }
        let mut aliases = ChunkAliases::default();
        if let Some(c) = self.parse.file.chunks.get(chunk) {
            for item in &c.items {
                let (name, range) = match item {
                    ast::Item::AttrAlias(a) => (&a.name.text, a.value.range),
                    ast::Item::TypeAlias(a) => (&a.name.text, a.value.range),
                    ast::Item::LocAlias(a) => (&a.name.text, a.range),
                    _ => continue,
                };
                aliases.names.insert(name.clone());
                if matches!(item, ast::Item::AttrAlias(_)) {
                    aliases
                        .by_text
                        .entry(range_text(self.text, self.parse, range))
                        .or_insert_with(|| name.clone());
                }
            }
        }
        self.chunks.insert(chunk, aliases);
    }

    /// The alias of a buffer type, creating `#dram`/`#l1_` style aliases when missing.
    fn buffer_ref(&mut self, chunk: usize, b: BufferType) -> String {
        let value = format!("#ttnn.buffer_type<{b}>");
        let aliases = self.chunks.entry(chunk).or_default();
        if let Some(name) = aliases.by_text.get(&value) {
            return name.clone();
        }
        // MLIR appends `_` to alias names ending in a digit: `#l1_`.
        let base = match b {
            BufferType::L1 => "l1_".to_owned(),
            other => other.keyword().to_owned(),
        };
        let mut name = format!("#{base}");
        let mut n = 1;
        while aliases.names.contains(&name) {
            name = format!("#{base}{n}");
            n += 1;
        }
        aliases.names.insert(name.clone());
        aliases.by_text.insert(value.clone(), name.clone());
        aliases.new_buffers.push((name.clone(), value));
        name
    }

    fn layout_ref(&mut self, chunk: usize, l: &TtnnLayout) -> String {
        if let Some(name) = self.chunks.get(&chunk).and_then(|a| a.by_layout.get(l)) {
            return name.clone();
        }
        let name = self.new_layout_ref(chunk, l);
        self.chunks.entry(chunk).or_default().by_layout.insert(l.clone(), name.clone());
        name
    }

    fn new_layout_ref(&mut self, chunk: usize, l: &TtnnLayout) -> String {
        let buffer = self.buffer_ref(chunk, l.buffer);
        let mut value = String::new();
        let _ = l.write_mlir(&mut value, &|_| buffer.clone());
        let aliases = self.chunks.entry(chunk).or_default();
        if let Some(name) = aliases.by_text.get(&value) {
            return name.clone();
        }
        let mut name;
        loop {
            name = if aliases.next == 0 {
                "#ttnn_layout".to_owned()
            } else {
                format!("#ttnn_layout{}", aliases.next)
            };
            aliases.next += 1;
            if !aliases.names.contains(&name) {
                break;
            }
        }
        aliases.names.insert(name.clone());
        aliases.by_text.insert(value.clone(), name.clone());
        aliases.new_layouts.push((name.clone(), value));
        name
    }

    fn ty_text(&mut self, chunk: usize, ty: &Ty) -> String {
        match ty {
            Ty::Tensor(t) => {
                let mut s = String::from("tensor<");
                for d in &t.shape {
                    match d {
                        Some(d) => {
                            let _ = write!(s, "{d}x");
                        }
                        None => s.push_str("?x"),
                    }
                }
                let _ = write!(s, "{}", t.element);
                if let Some(l) = &t.layout {
                    let r = self.layout_ref(chunk, l);
                    let _ = write!(s, ", {r}");
                } else if let Some(other) = &t.other_encoding {
                    let _ = write!(s, ", {other}");
                }
                s.push('>');
                s
            }
            other => other.to_string(),
        }
    }

    #[expect(clippy::too_many_lines, reason = "one pass over the function reads best in one place")]
    fn function(
        &mut self,
        chunk: usize,
        func: FuncId,
        body: &FuncBody,
        op: &ast::Op,
        f: &ast::FuncOp,
        indent: usize,
    ) -> Option<String> {
        let db = self.db;
        let region = f.body.as_ref()?;
        let ast_ops: Vec<&ast::Op> = region
            .blocks
            .iter()
            .flat_map(|b| &b.ops)
            .filter(|o| !matches!(o.body, ast::OpBody::Return(_)))
            .collect();
        if ast_ops.len() != body.ops.len() || region.blocks.len() != 1 {
            return None;
        }
        let plan = plan::plan_for(db, func, self.policy);
        let names = ir::func_loc_names(db, func);
        let mut used_names: rustc_hash::FxHashSet<String> =
            body.arg_names.iter().cloned().collect();
        for o in &ast_ops {
            for r in &o.results {
                used_names.insert(r.name.text.clone());
            }
        }
        // Current name and type of every value.
        let mut values: FxHashMap<ValueRef, (String, Ty)> = FxHashMap::default();
        for (i, (n, t)) in body.arg_names.iter().zip(&body.args).enumerate() {
            values.insert(ValueRef::Arg(i as u32), (n.clone(), t.clone()));
        }
        let pad = "  ".repeat(indent + 1);
        let mut ops_text = String::new();
        let mut conversions: FxHashMap<(ValueRef, TtnnLayout), (String, Ty)> = FxHashMap::default();
        let mut fresh = 0u32;
        let mut emitted = vec![false; body.ops.len()];
        let mut order: Vec<u32> = Vec::with_capacity(body.ops.len());
        // Unscheduled ops (device handles, empties) are emitted right before their first user.
        fn visit(
            i: u32,
            body: &FuncBody,
            emitted: &mut [bool],
            order: &mut Vec<u32>,
            sched: &[u32],
        ) {
            if emitted[i as usize] {
                return;
            }
            emitted[i as usize] = true;
            for v in &body.ops[i as usize].operands {
                if let ValueRef::Result { op, .. } = *v
                    && sched[op as usize] == u32::MAX
                {
                    visit(op, body, emitted, order, sched);
                }
            }
            order.push(i);
        }
        for &i in &plan.schedule.order {
            visit(i, body, &mut emitted, &mut order, &plan.schedule.position);
        }
        for i in 0..body.ops.len() as u32 {
            visit(i, body, &mut emitted, &mut order, &plan.schedule.position);
        }
        let loc_base = |i: usize| -> String {
            names
                .names
                .get(i)
                .cloned()
                .flatten()
                .unwrap_or_else(|| body.ops[i].key.trim_start_matches('%').replace(',', "_"))
        };
        let mut fresh_name = |base: &str| -> String {
            loop {
                fresh += 1;
                let cand = format!("%{}_{fresh}", sanitize(base));
                if used_names.insert(cand.clone()) {
                    return cand;
                }
            }
        };
        for &iu in &order {
            let i = iu as usize;
            let data = &body.ops[i];
            let ast_op = ast_ops[i];
            let p = plan.ops.get(i);
            // Operands, with conversions in front where the op needs another layout.
            let mut operand_names = Vec::with_capacity(data.operands.len());
            let mut operand_types = Vec::with_capacity(data.operands.len());
            for (k, v) in data.operands.iter().enumerate() {
                let Some((name, ty)) = values.get(v).cloned() else {
                    operand_names
                        .push(value_use_text(ast_op, k).unwrap_or_else(|| "%undefined".to_owned()));
                    operand_types.push(data.operand_types.get(k).cloned().unwrap_or(Ty::Unknown));
                    continue;
                };
                let required = p
                    .and_then(|p| p.expected_operands.get(k).cloned().flatten())
                    .map(|c| c.layout)
                    .or_else(|| {
                        // Ops whose operand types are pinned by another function's
                        // signature (d2m subgraphs, calls) get exactly what they were written
                        // with; every other op follows its producers.
                        let pinned = data.form != OpForm::Generic;
                        if pinned {
                            data.operand_types.get(k).and_then(|t| t.layout().cloned())
                        } else {
                            None
                        }
                    });
                match (required, ty.as_tensor()) {
                    (Some(req), Some(t)) if t.layout.as_ref() != Some(&req) => {
                        let key = (*v, req.clone());
                        let converted = if let Some(c) = conversions.get(&key) {
                            c.clone()
                        } else {
                            let new_ty = Ty::Tensor(retyped(t, &req));
                            let cname = fresh_name(&format!("{}_in{k}", loc_base(i)));
                            let loc = format!("{}_in_{k}_layout", loc_base(i));
                            let line = self.conversion(chunk, &cname, &name, &ty, &new_ty, &loc);
                            ops_text.push_str(&pad);
                            ops_text.push_str(&line);
                            self.out.conversions += 1;
                            conversions.insert(key, (cname.clone(), new_ty.clone()));
                            (cname, new_ty)
                        };
                        operand_names.push(converted.0);
                        operand_types.push(converted.1);
                    }
                    _ => {
                        operand_names.push(name);
                        operand_types.push(ty);
                    }
                }
            }
            // Results with their planned types.
            let mut result_types: Vec<Ty> = data.results.clone();
            if let (Some(p), [Ty::Tensor(t)]) = (p, data.results.as_slice())
                && let Some(l) = &p.layout
            {
                result_types = vec![Ty::Tensor(retyped(t, l))];
            }
            let line = self.op_line(
                chunk,
                ast_op,
                data,
                &operand_names,
                &operand_types,
                &result_types,
                p.map(|p| &p.config),
            );
            ops_text.push_str(&pad);
            ops_text.push_str(&line);
            // Bind the results, then the spill that all uses see.
            let mut idx = 0u32;
            for r in &ast_op.results {
                for j in 0..r.count {
                    let n = if r.count == 1 {
                        r.name.text.clone()
                    } else {
                        format!("{}#{j}", r.name.text)
                    };
                    let ty = result_types.get((idx + j) as usize).cloned().unwrap_or(Ty::Unknown);
                    values.insert(ValueRef::Result { op: iu, index: idx + j }, (n, ty));
                }
                idx += r.count;
            }
            if let Some(spill) = p.and_then(|p| p.spill.as_ref())
                && let Some((name, ty)) =
                    values.get(&ValueRef::Result { op: iu, index: 0 }).cloned()
                && let Some(t) = ty.as_tensor()
            {
                let new_ty = Ty::Tensor(retyped(t, &spill.layout));
                let cname = fresh_name(&format!("{}_spill", loc_base(i)));
                let loc = format!("{}_spill", loc_base(i));
                let line = self.conversion(chunk, &cname, &name, &ty, &new_ty, &loc);
                ops_text.push_str(&pad);
                ops_text.push_str(&line);
                self.out.conversions += 1;
                values.insert(ValueRef::Result { op: iu, index: 0 }, (cname, new_ty));
            }
        }
        // The terminator returns the values as they now are.
        let mut ret_types = Vec::new();
        let mut ret_names = Vec::new();
        for v in &body.returns {
            let (n, t) =
                values.get(v).cloned().unwrap_or_else(|| ("%undefined".to_owned(), Ty::Unknown));
            ret_names.push(n);
            ret_types.push(t);
        }
        let ret_loc = region.blocks[0]
            .ops
            .iter()
            .find(|o| matches!(o.body, ast::OpBody::Return(_)))
            .and_then(|o| o.loc.as_ref())
            .map(|l| format!(" {}", range_text(self.text, self.parse, l.range)))
            .unwrap_or_default();
        let term = if ret_names.is_empty() {
            "return".to_owned()
        } else {
            let tys: Vec<String> = ret_types.iter().map(|t| self.ty_text(chunk, t)).collect();
            format!("return {} : {}", ret_names.join(", "), tys.join(", "))
        };
        let _ = writeln!(ops_text, "{pad}{term}{ret_loc}");
        // The signature: arguments as written, results as now returned.
        let outer = "  ".repeat(indent);
        let mut sig = format!("{outer}func.func ");
        if let Some(v) = &f.visibility {
            let _ = write!(sig, "{} ", v.text);
        }
        let _ = write!(sig, "{}(", f.sym_name.text);
        for (i, a) in f.args.iter().enumerate() {
            if i > 0 {
                sig.push_str(", ");
            }
            let ty = body.args.get(i).cloned().unwrap_or(Ty::Unknown);
            let ty_text = self.ty_text(chunk, &ty);
            let name = a.name.as_ref().map_or(String::new(), |n| format!("{}: ", n.text));
            let _ = write!(sig, "{name}{ty_text}");
            if let Some(attrs) = &a.attrs {
                let _ = write!(sig, " {}", range_text(self.text, self.parse, attrs.range));
            }
            if let Some(l) = &a.loc {
                let _ = write!(sig, " {}", range_text(self.text, self.parse, l.range));
            }
        }
        sig.push(')');
        let result_types: Vec<Ty> =
            if ret_types.len() == f.results.len() { ret_types } else { body.results.clone() };
        if !f.results.is_empty() {
            sig.push_str(" -> ");
            let parens = f.results_parenthesized
                || f.results.len() != 1
                || f.results.iter().any(|r| r.attrs.is_some());
            if parens {
                sig.push('(');
            }
            for (i, (r, t)) in f.results.iter().zip(&result_types).enumerate() {
                if i > 0 {
                    sig.push_str(", ");
                }
                let t = self.ty_text(chunk, t);
                sig.push_str(&t);
                if let Some(attrs) = &r.attrs {
                    let _ = write!(sig, " {}", range_text(self.text, self.parse, attrs.range));
                }
            }
            if parens {
                sig.push(')');
            }
        }
        if let Some(attrs) = &f.attrs {
            let _ = write!(sig, " attributes {}", range_text(self.text, self.parse, attrs.range));
        }
        let loc = op
            .loc
            .as_ref()
            .map(|l| format!(" {}", range_text(self.text, self.parse, l.range)))
            .unwrap_or_default();
        Some(format!("{sig} {{\n{ops_text}{outer}}}{loc}\n"))
    }

    fn conversion(
        &mut self,
        chunk: usize,
        result: &str,
        input: &str,
        from: &Ty,
        to: &Ty,
        loc: &str,
    ) -> String {
        let page_changes = from.layout().map(TtnnLayout::page_layout)
            != to.layout().map(TtnnLayout::page_layout)
            || from.layout().and_then(TtnnLayout::data_type)
                != to.layout().and_then(TtnnLayout::data_type);
        let op = if page_changes { "ttnn.to_layout" } else { "ttnn.to_memory_config" };
        let (ft, tt) = (self.ty_text(chunk, from), self.ty_text(chunk, to));
        format!("{result} = \"{op}\"({input}) : ({ft}) -> {tt} loc({})\n", escape_string(loc))
    }

    #[expect(clippy::too_many_arguments, reason = "the pieces of one op line")]
    fn op_line(
        &mut self,
        chunk: usize,
        ast_op: &ast::Op,
        data: &ir::OpData,
        operands: &[String],
        operand_types: &[Ty],
        result_types: &[Ty],
        config: Option<&OpConfig>,
    ) -> String {
        let mut s = String::new();
        if !ast_op.results.is_empty() {
            let defs: Vec<String> = ast_op
                .results
                .iter()
                .map(|r| {
                    if r.count == 1 {
                        r.name.text.clone()
                    } else {
                        format!("{}:{}", r.name.text, r.count)
                    }
                })
                .collect();
            let _ = write!(s, "{} = ", defs.join(", "));
        }
        // Custom forms print generically; `call` needs its dialect prefix then.
        let name = match data.name.as_str() {
            "call" => "func.call",
            other => other,
        };
        let _ = write!(s, "{}({})", escape_string(name), operands.join(", "));
        // Properties: verbatim, with the planned op config swapped in.
        let mut props: Vec<(String, String)> = Vec::new();
        let mut attrs_text = None;
        match &ast_op.body {
            ast::OpBody::Generic(g) => {
                if let Some(p) = &g.properties {
                    for e in &p.entries {
                        let v =
                            e.value.as_ref().map(|v| range_text(self.text, self.parse, v.range));
                        props.push((e.key.text.clone(), v.unwrap_or_default()));
                    }
                }
                attrs_text = g.attrs.as_ref().map(|a| range_text(self.text, self.parse, a.range));
            }
            ast::OpBody::D2mSubgraph(d) => {
                props.push(("d2m_func".to_owned(), d.callee.text.clone()));
                props.push((
                    "operandSegmentSizes".to_owned(),
                    format!("array<i32: {}, {}>", d.ins.len(), d.outs.len()),
                ));
                attrs_text = d.attrs.as_ref().map(|a| range_text(self.text, self.parse, a.range));
            }
            ast::OpBody::LoadCached(l) => props.push(("callee".to_owned(), l.callee.text.clone())),
            ast::OpBody::Call(c) => props.push(("callee".to_owned(), c.callee.text.clone())),
            ast::OpBody::TtLang(c) => {
                attrs_text = c.attrs.as_ref().map(|a| range_text(self.text, self.parse, a.range));
            }
            _ => {}
        }
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
            let entries: Vec<String> = props
                .iter()
                .map(|(k, v)| if v.is_empty() { k.clone() } else { format!("{k} = {v}") })
                .collect();
            let _ = write!(s, " <{{{}}}>", entries.join(", "));
        }
        if let Some(a) = attrs_text {
            let _ = write!(s, " {a}");
        }
        let ins: Vec<String> = operand_types.iter().map(|t| self.ty_text(chunk, t)).collect();
        let outs: Vec<String> = result_types.iter().map(|t| self.ty_text(chunk, t)).collect();
        let results =
            if outs.len() == 1 { outs[0].clone() } else { format!("({})", outs.join(", ")) };
        let _ = write!(s, " : ({}) -> {results}", ins.join(", "));
        if let Some(l) = &ast_op.loc {
            let _ = write!(s, " {}", range_text(self.text, self.parse, l.range));
        }
        s.push('\n');
        s
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
fn retyped(t: &TensorType, l: &TtnnLayout) -> TensorType {
    let element = match (t.element, l.data_type()) {
        (e, Some(dt)) if e.data_type() == Some(dt) => e,
        (_, Some(dt)) => dt
            .scalar_type()
            .map_or(ElementType::Tile { height: 32, width: 32, dtype: dt }, ElementType::Scalar),
        (e, None) => e,
    };
    TensorType { shape: t.shape.clone(), element, layout: Some(l.clone()), other_encoding: None }
}

fn value_use_text(op: &ast::Op, k: usize) -> Option<String> {
    let uses: Vec<&ast::ValueUse> = match &op.body {
        ast::OpBody::Generic(g) => g.operands.iter().collect(),
        ast::OpBody::D2mSubgraph(d) => d.ins.iter().chain(&d.outs).collect(),
        _ => return None,
    };
    let u = uses.get(k)?;
    Some(match u.index {
        Some(i) => format!("{}#{i}", u.name.text),
        None => u.name.text.clone(),
    })
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
