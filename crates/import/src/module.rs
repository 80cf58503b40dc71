//! The file-level driver: chunks, modules, function signatures and the per-op loop.
//!
//! Each `// -----` chunk of the input becomes one output module holding all of the chunk's
//! functions; `ttcore.device_module` and nested `builtin.module` wrappers are dropped. Layout
//! aliases are printed at the top of each chunk, once per distinct layout.

use std::fmt::Write as _;

use ir::{LoweredFunc, OpForm, Severity, Ty, ValueRef};
use rustc_hash::FxHashMap;
use syntax::{TextRange, ast};

use crate::{
    ImportDiagnostic, ImportOptions, ImportResult, ImportStats,
    func::{Bound, ConstEval, Form, FuncOut, OutTy, Slot, Val},
    lower::{self, Cx, OpIn, Src},
    names::{LocResolver, NameTable, sanitize},
    ty::{Layouts, convert_tensor},
};

pub(crate) fn import(text: &str, file_name: &str, options: ImportOptions) -> ImportResult {
    let parse = syntax::parse(text);
    let lowered = ir::lower_parse(text, &parse);
    let mut diagnostics: Vec<ImportDiagnostic> = lowered
        .diagnostics
        .iter()
        .map(|d| ImportDiagnostic {
            range: d.range,
            severity: d.severity,
            code: d.code,
            message: d.message.clone(),
        })
        .collect();
    let mut stats = ImportStats::default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// TTNN imported by ttnn-analyzer from {}",
        file_name.replace(['\n', '\r'], " ")
    );
    let src = Src { text, parse: &parse };
    // Location names are unique across the whole file.
    let mut names = NameTable::default();
    for (chunk_idx, chunk) in parse.file().chunks.iter().enumerate() {
        let funcs: Vec<&LoweredFunc> =
            lowered.funcs.iter().filter(|f| f.chunk == chunk_idx as u32).collect();
        if chunk_idx > 0 {
            out.push_str("// -----\n");
        }
        let mut cx = ChunkCx {
            src: &src,
            chunk,
            locs: LocResolver::new(chunk),
            layouts: Layouts::default(),
            names: &mut names,
            diagnostics: &mut diagnostics,
            stats: &mut stats,
            options,
        };
        out.push_str(&cx.import_chunk(&funcs));
    }
    diagnostics.sort_by_key(|d| (d.range.start, d.range.end));
    ImportResult { ttnn: out, diagnostics, stats }
}

struct ChunkCx<'a, 'r> {
    src: &'a Src<'a>,
    chunk: &'a ast::Chunk,
    locs: LocResolver<'a>,
    layouts: Layouts,
    names: &'r mut NameTable,
    diagnostics: &'r mut Vec<ImportDiagnostic>,
    stats: &'r mut ImportStats,
    options: ImportOptions,
}

/// The function ops of a chunk by range, found the way `ir` walks modules.
fn collect_funcs<'a>(ops: &'a [ast::Op], acc: &mut FxHashMap<TextRange, &'a ast::FuncOp>) {
    for op in ops {
        match &op.body {
            ast::OpBody::Func(f) => {
                acc.insert(op.range, f);
            }
            ast::OpBody::Module(m) => {
                for b in &m.body.blocks {
                    collect_funcs(&b.ops, acc);
                }
            }
            ast::OpBody::RegionOp(r) => {
                for b in &r.body.blocks {
                    collect_funcs(&b.ops, acc);
                }
            }
            ast::OpBody::Generic(g) => {
                for r in &g.regions {
                    for b in &r.blocks {
                        collect_funcs(&b.ops, acc);
                    }
                }
            }
            _ => {}
        }
    }
}

impl<'a> ChunkCx<'a, '_> {
    fn norm(&self, range: TextRange) -> String {
        self.src.parse.normalized_text(self.src.text, range)
    }

    fn import_chunk(&mut self, funcs: &[&LoweredFunc]) -> String {
        let items: &'a [ast::Item] = &self.chunk.items;
        let mut ast_funcs = FxHashMap::default();
        for item in items {
            if let ast::Item::Op(op) = item {
                collect_funcs(std::slice::from_ref(op), &mut ast_funcs);
            }
        }
        // The outermost module names the output module and lends it its attributes.
        let module: Option<&'a ast::ModuleOp> = items.iter().find_map(|i| match i {
            ast::Item::Op(ast::Op { body: ast::OpBody::Module(m), .. }) => Some(m),
            _ => None,
        });
        let module_attrs = module.and_then(|m| m.attrs.as_ref());
        let mesh = module_attrs
            .and_then(|a| a.get("ttcore.meshes"))
            .and_then(|e| e.value.as_ref())
            .and_then(|v| mesh_shape(&self.norm(v.range)))
            .unwrap_or_else(|| "1x1".to_owned());
        let mut body = String::new();
        for f in funcs {
            let Some(ast_func) = ast_funcs.get(&f.source_map.range).copied() else { continue };
            self.import_func(&mut body, f, ast_func, &mesh);
        }
        let mut out = String::new();
        out.push_str(&self.layouts.header());
        // Aliases the input defines (other than the names the importer prints) may be used by
        // attributes copied through, so they are kept.
        for item in items {
            let (name, range) = match item {
                ast::Item::AttrAlias(a) => (&a.name.text, a.range),
                ast::Item::TypeAlias(a) => (&a.name.text, a.range),
                _ => continue,
            };
            let bare = name.trim_start_matches('#');
            let reserved = bare == "dram"
                || bare == "system_memory"
                || bare
                    .strip_prefix("ttnn_layout")
                    .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()));
            if !reserved {
                let _ = writeln!(out, "{}", self.norm(range));
            }
        }
        match module {
            Some(m) => {
                out.push_str("module");
                if let Some(name) = &m.sym_name {
                    let _ = write!(out, " {}", name.text);
                }
                if let Some(a) = &m.attrs {
                    let _ = write!(out, " attributes {}", self.norm(a.range));
                }
                out.push_str(" {\n");
            }
            None => out.push_str("module {\n"),
        }
        out.push_str(&body);
        out.push_str("}\n");
        for item in items {
            if let ast::Item::Resources(r) = item {
                let _ = writeln!(out, "{}", r.slice(self.src.text));
            }
        }
        out
    }

    fn arg_type(&self, ty: &Ty) -> OutTy {
        match ty {
            Ty::Tensor(t) => {
                convert_tensor(t).map_or_else(|| OutTy::Other(t.to_string()), OutTy::Tensor)
            }
            Ty::Device => OutTy::Device,
            Ty::Other(s) => OutTy::Other(s.clone()),
            Ty::Unknown => OutTy::Other("none".to_owned()),
        }
    }

    fn type_text(&mut self, ty: &OutTy) -> String {
        match ty {
            OutTy::Tensor(t) => self.layouts.type_text(t),
            OutTy::Device => "!ttnn.device".to_owned(),
            OutTy::Other(s) => s.clone(),
        }
    }

    fn import_func(
        &mut self,
        out: &mut String,
        f: &LoweredFunc,
        ast_func: &'a ast::FuncOp,
        mesh: &str,
    ) {
        let body = &f.body;
        let mut fo = FuncOut::new(mesh, body.defs.clone());
        let mut arg_texts = Vec::new();
        let mut arg_names = Vec::new();
        for (i, ty) in body.args.iter().enumerate() {
            let oty = self.arg_type(ty);
            let val = fo.add_arg(oty.clone());
            fo.bind(Bound::Arg(i as u32), Slot::Val(val));
            let name = format!("%arg{i}");
            let mut s = String::new();
            if body.has_body {
                let _ = write!(s, "{name}: ");
            }
            s.push_str(&self.type_text(&oty));
            if let Some(a) = ast_func.args.get(i) {
                if let Some(attrs) = &a.attrs {
                    let _ = write!(s, " {}", self.norm(attrs.range));
                }
                if body.has_body
                    && let Some(l) = a.loc.as_ref().and_then(|l| self.locs.print(&l.loc))
                {
                    let _ = write!(s, " {l}");
                }
            }
            arg_texts.push(s);
            arg_names.push(name);
        }
        let ast_ops = body_ast_ops(ast_func, body.ops.len());
        for (i, op) in body.ops.iter().enumerate() {
            self.stats.ops_in += 1;
            *self.stats.ops_in_by_kind.entry(op.name.clone()).or_insert(0) += 1;
            let ast_op = ast_ops.get(i).copied().flatten();
            let results = |slot: Slot| (0..op.results.len()).map(move |_| slot.clone());
            // Destination-passing inits are dropped with the operands that use them; ops that
            // failed to parse (already reported by the parser) and structural ops have nothing
            // to lower.
            if op.name == "ttir.empty" || op.name == "tensor.empty" || op.form == OpForm::Other {
                for (k, s) in results(Slot::Dropped).enumerate() {
                    fo.bind(Bound::Result(i as u32, k as u32), s);
                }
                continue;
            }
            let written = ast_op
                .and_then(|o| o.loc.as_ref())
                .and_then(|l| self.locs.name(&l.loc))
                .map(sanitize);
            let base = written
                .clone()
                .unwrap_or_else(|| sanitize(op.name.rsplit('.').next().unwrap_or("op")));
            fo.written_name = written;
            let operands: Vec<ValueRef> = op
                .operands
                .iter()
                .copied()
                .filter(|v| !matches!(fo.slot(*v), Some(Slot::Dropped)))
                .collect();
            let op_in = OpIn { index: i, data: op, base, operands };
            if op.form == OpForm::Call {
                let slots = self.call(&mut fo, &op_in, body, &ast_ops);
                for (k, s) in slots.into_iter().enumerate() {
                    fo.bind(Bound::Result(i as u32, k as u32), s);
                }
                continue;
            }
            let lowered = {
                let mut cx = Cx { f: &mut fo, src: self.src, body, ast_ops: &ast_ops };
                lower::lower(&mut cx, &op_in)
            };
            let slots = match lowered {
                Ok(slots) if slots.len() == op.results.len() => slots,
                other => {
                    let reason = match other {
                        Err(r) => r,
                        Ok(_) => "the lowering produced the wrong number of results".to_owned(),
                    };
                    let range = f.source_map.op_ranges.get(i).copied().unwrap_or_default();
                    self.diagnostics.push(ImportDiagnostic {
                        range,
                        severity: Severity::Error,
                        code: "unsupported-op",
                        message: format!(
                            "cannot lower `{}` at `{}`: {reason}",
                            op.name, op_in.base
                        ),
                    });
                    self.stats.unsupported += 1;
                    self.generic(&mut fo, &op_in, ast_op, body, &ast_ops)
                }
            };
            for (k, s) in slots.into_iter().enumerate() {
                fo.bind(Bound::Result(i as u32, k as u32), s);
            }
        }
        let mut returns = Vec::new();
        for r in &body.returns {
            let mut cx = Cx { f: &mut fo, src: self.src, body, ast_ops: &ast_ops };
            match cx.val(*r) {
                Ok(v) => returns.push(v),
                Err(reason) => {
                    self.diagnostics.push(ImportDiagnostic {
                        range: f.source_map.return_range.unwrap_or_default(),
                        severity: Severity::Error,
                        code: "unlowered-value",
                        message: format!("cannot return a value: {reason}"),
                    });
                }
            }
        }
        fo.returns = returns;
        // tt-mlir's canonicalizer writes cache updates in the paged form before anything else.
        fo.canonicalize_update_caches();
        // tt-mlir canonicalizes, fuses, then erases inverse ops: the norm patterns match the
        // graph with its reshape chains folded and nothing dead left to count as a use.
        fo.fold_reshape_chains();
        fo.fold_permute_chains();
        fo.remove_dead_ops();
        fo.fuse_norms();
        fo.remove_dead_ops();
        // tt-mlir's SDPA pattern reads the fused softmax.
        fo.fuse_sdpa();
        // Its workaround's casts back to the model's type meet the model's own casts.
        fo.fold_typecast_pairs();
        fo.fuse_concatenate_heads();
        fo.fuse_rotary_embeddings();
        fo.remove_dead_ops();
        fo.sink_unflatten_reshapes();
        fo.fold_permute_chains();
        fo.fuse_permute_reshape_permute();
        fo.fold_reshape_chains();
        // The fusions count uses: the reshapes sinking and folding left behind must go first.
        fo.remove_dead_ops();
        // A norm's reshape moves above it only once the pairs around it have folded (tt-mlir's
        // commute patterns run with its TM folding); the moved reshape may fold in turn.
        fo.commute_reshapes_above_norms();
        fo.fold_reshape_chains();
        fo.remove_dead_ops();
        fo.fuse_conv_epilogues();
        fo.fuse_linear();
        // The matmuls the linears absorbed must not count as users of the activation.
        fo.remove_dead_ops();
        fo.fuse_shared_lhs_matmuls();
        fo.remove_dead_ops();
        // tt-mlir canonicalizes after its TTIR fusing: the reshapes the linear fusion replayed
        // fold with the ones after them.
        fo.fold_reshape_chains();
        fo.remove_dead_ops();
        // tt-mlir's TTNN fusing runs on the lowered graph, after every TTIR pass: the decode
        // rotary first, then the head split it exposes (decode, then prefill), then the
        // heads' concatenation.
        fo.commute_decode_permutes_into_rotary();
        fo.remove_dead_ops();
        fo.fuse_nlp_create_qkv_heads_decode();
        fo.remove_dead_ops();
        fo.fuse_split_query_key_value_and_split_heads();
        fo.remove_dead_ops();
        fo.fuse_nlp_concat_heads_decode();
        fo.remove_dead_ops();
        let const_args = self.const_args(body, ast_func);
        fo.convert_weight_dtypes(
            &self.weight_dtypes(body, ast_func),
            &const_args,
            self.options.weight_dtype.map(crate::WeightDtype::data_type),
        );
        // tt-mlir sets compute configs after the weight casts and before const-eval, so ops
        // hoisted to load time carry the fidelity too.
        if let Some(fidelity) = self.options.math_fidelity {
            fo.set_math_fidelity(fidelity);
        }
        let const_eval = self.hoist_const_eval(&mut fo, body, ast_func, mesh);
        for name in fo.op_names().chain(const_eval.iter().flat_map(|(_, c)| c.body.op_names())) {
            self.stats.ops_out += 1;
            *self.stats.ops_out_by_kind.entry(name.to_owned()).or_insert(0) += 1;
        }
        // Signature: the results are typed by the values returned, so they always agree.
        let result_types: Vec<OutTy> = if body.has_body {
            fo.returns.iter().map(|v| v.ty.clone()).collect()
        } else {
            body.results.iter().map(|t| self.arg_type(t)).collect()
        };
        let mut results = Vec::new();
        for (i, t) in result_types.iter().enumerate() {
            let mut s = self.type_text(t);
            if let Some(a) = ast_func.results.get(i).and_then(|r| r.attrs.as_ref()) {
                let _ = write!(s, " {}", self.norm(a.range));
            }
            results.push(s);
        }
        out.push_str("  func.func ");
        if let Some(v) = &ast_func.visibility {
            let _ = write!(out, "{} ", v.text);
        }
        let _ = write!(out, "{}({})", ast_func.sym_name.text, arg_texts.join(", "));
        match results.as_slice() {
            [] => {}
            [one] if !one.contains(" {") => {
                let _ = write!(out, " -> {one}");
            }
            many => {
                let _ = write!(out, " -> ({})", many.join(", "));
            }
        }
        if let Some(a) = &ast_func.attrs {
            let _ = write!(out, " attributes {}", self.norm(a.range));
        }
        if !body.has_body {
            out.push('\n');
            return;
        }
        out.push_str(" {\n");
        fo.print_body(out, &arg_names, &mut self.layouts, self.names);
        out.push_str("  }\n");
        if let Some((callee, c)) = const_eval {
            let names: Vec<String> = (0..c.args.len()).map(|i| format!("%arg{i}")).collect();
            let args: Vec<String> = c
                .args
                .iter()
                .zip(&names)
                .map(|(k, n)| {
                    let ty = body
                        .args
                        .get(*k)
                        .map_or(OutTy::Other("none".to_owned()), |t| self.arg_type(t));
                    format!("{n}: {}", self.type_text(&ty))
                })
                .collect();
            let results: Vec<String> =
                c.body.returns.iter().map(|v| self.type_text(&v.ty)).collect();
            let _ = writeln!(
                out,
                "  func.func private @{callee}({}) -> ({}) attributes {{tt.function_type = \"const_eval\"}} {{",
                args.join(", "),
                results.join(", ")
            );
            c.body.print_body(out, &names, &mut self.layouts, self.names);
            out.push_str("  }\n");
        }
    }

    /// tt-mlir's const-eval hoisting for a forward function with a body: the ops that derive
    /// only from `parameter` and `constant` arguments move into `@<name>_const_eval_0`, which
    /// the runtime runs once at load (see [`FuncOut::hoist_const_eval`]). Functions that
    /// already say what they are (`tt.function_type` other than `forward_device`), and
    /// private ones (called from elsewhere), are left alone.
    fn hoist_const_eval(
        &self,
        fo: &mut FuncOut,
        body: &ir::FuncBody,
        ast_func: &ast::FuncOp,
        mesh: &str,
    ) -> Option<(String, ConstEval)> {
        if !body.has_body || body.is_private {
            return None;
        }
        if body.function_type.as_deref().is_some_and(|k| k != "forward_device") {
            return None;
        }
        let const_args = self.const_args(body, ast_func);
        let name = ast_func.sym_name.text.trim_start_matches('@');
        let callee = format!("{name}_const_eval_0");
        let c = fo.hoist_const_eval(&const_args, &callee, mesh)?;
        Some((callee, c))
    }

    /// Each argument's attribute dictionary as written (normalized), empty without one.
    fn arg_attrs(&self, body: &ir::FuncBody, ast_func: &ast::FuncOp) -> Vec<String> {
        (0..body.args.len())
            .map(|i| {
                let attrs = ast_func.args.get(i).and_then(|a| a.attrs.as_ref());
                attrs.map(|a| self.norm(a.range)).unwrap_or_default()
            })
            .collect()
    }

    /// Which arguments are `parameter`s or `constant`s (`ttcore.argument_type`): what
    /// const-eval may read.
    fn const_args(&self, body: &ir::FuncBody, ast_func: &ast::FuncOp) -> Vec<bool> {
        self.arg_attrs(body, ast_func)
            .iter()
            .map(|text| {
                text.contains("#ttcore.argument_type<parameter>")
                    || text.contains("#ttcore.argument_type<constant>")
            })
            .collect()
    }

    /// Each argument's `ttcore.weight_dtype = "..."` override, when it names a data type.
    fn weight_dtypes(
        &self,
        body: &ir::FuncBody,
        ast_func: &ast::FuncOp,
    ) -> Vec<Option<ttnn_types::DataType>> {
        self.arg_attrs(body, ast_func)
            .iter()
            .map(|text| {
                let rest = text.split_once("ttcore.weight_dtype")?.1.trim_start();
                let quoted = rest.strip_prefix('=')?.trim_start().strip_prefix('"')?;
                ttnn_types::DataType::from_keyword(quoted.split('"').next()?)
            })
            .collect()
    }

    /// `call @f(...)`: operands and results converted, nothing else changes.
    fn call(
        &mut self,
        fo: &mut FuncOut,
        op: &OpIn<'_>,
        body: &ir::FuncBody,
        ast_ops: &[Option<&ast::Op>],
    ) -> Vec<Slot> {
        let callee = op.data.callee.clone().unwrap_or_default();
        let operands = self.operand_vals(fo, op, body, ast_ops);
        let refs: Vec<&Val> = operands.iter().collect();
        let results: Vec<OutTy> = op.data.results.iter().map(|t| self.arg_type(t)).collect();
        let vals = fo.push_op(
            "func.call",
            Form::Call { callee },
            &refs,
            Vec::new(),
            results,
            op.base.clone(),
            false,
        );
        vals.into_iter().map(Slot::Val).collect()
    }

    fn operand_vals(
        &mut self,
        fo: &mut FuncOut,
        op: &OpIn<'_>,
        body: &ir::FuncBody,
        ast_ops: &[Option<&ast::Op>],
    ) -> Vec<Val> {
        let mut cx = Cx { f: fo, src: self.src, body, ast_ops };
        op.operands
            .iter()
            .map(|v| cx.val(*v).unwrap_or(Val { id: 0, ty: OutTy::Other("none".to_owned()) }))
            .collect()
    }

    /// The op kept in generic form under its own name, with converted types, so the rest of
    /// the graph still connects. Regions are not carried over.
    fn generic(
        &mut self,
        fo: &mut FuncOut,
        op: &OpIn<'_>,
        ast_op: Option<&ast::Op>,
        body: &ir::FuncBody,
        ast_ops: &[Option<&ast::Op>],
    ) -> Vec<Slot> {
        let operands = self.operand_vals(fo, op, body, ast_ops);
        let refs: Vec<&Val> = operands.iter().collect();
        let results: Vec<OutTy> = op.data.results.iter().map(|t| self.arg_type(t)).collect();
        let (raw_props, attrs) = match ast_op.map(|o| &o.body) {
            Some(ast::OpBody::Generic(g)) => (
                g.properties.as_ref().map(|p| self.norm(p.range)),
                g.attrs.as_ref().map(|a| self.norm(a.range)),
            ),
            _ => (None, None),
        };
        let form = Form::Generic { raw_props, attrs };
        let vals =
            fo.push_op(&op.data.name, form, &refs, Vec::new(), results, op.base.clone(), false);
        vals.into_iter().map(Slot::Val).collect()
    }
}

/// The syntax of a function's ops, parallel to the lowered body (all blocks, terminator
/// excluded, as `ir` lowers them).
fn body_ast_ops(f: &ast::FuncOp, n: usize) -> Vec<Option<&ast::Op>> {
    let Some(region) = &f.body else { return vec![None; n] };
    let ops: Vec<&ast::Op> = region
        .blocks
        .iter()
        .flat_map(|b| b.ops.iter())
        .filter(|o| !matches!(o.body, ast::OpBody::Return(_)))
        .collect();
    if ops.len() == n { ops.into_iter().map(Some).collect() } else { vec![None; n] }
}

/// The first mesh shape of `#ttcore.meshes<[<"mesh" = 1x8>]>`.
fn mesh_shape(text: &str) -> Option<String> {
    let after = &text[text.find('=')? + 1..];
    let dims: String =
        after.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == 'x').collect();
    (!dims.is_empty() && !dims.ends_with('x')).then_some(dims)
}
