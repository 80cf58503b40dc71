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

mod chunk;
mod statics;

pub use crate::{
    chunk::{ChunkText, Unscheduled, args_text, rewrite_chunk, unscheduled},
    statics::{FuncText, OpText, func_text},
};

use std::{fmt::Write as _, sync::Arc};

use base_db::{Policy, SourceFile};
use ir::{FuncBody, FuncId, OpForm, Ty, ValueRef};
use rustc_hash::FxHashMap;
use syntax::{Parse, PrintHook, ast, range_text};
use ttnn_types::{BufferType, TtnnLayout};

#[salsa::db]
pub trait Db: plan::Db {
    /// Chunk texts with their aliases filled in, kept from the last rewrite (see
    /// [`SpliceCache`]).
    fn splice_cache(&self) -> &SpliceCache;
}

/// The last rewrite's text of each plan chunk with its layout aliases filled in, by function,
/// policy and chunk: filling in the aliases of a 10k-op function walks about 100k gaps (a
/// tenth of a tuning candidate on a transformer graph), and after one override all but a
/// chunk or two are filled with the same names as before. A value the rewrite computes
/// anyway, reused only when the chunk's text is the same allocation (held here, so its
/// address is not reused) and every alias name is equal.
#[derive(Default)]
pub struct SpliceCache {
    map: std::sync::Mutex<FxHashMap<(FuncId, Policy, u32), Spliced>>,
}

impl std::fmt::Debug for SpliceCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpliceCache").finish_non_exhaustive()
    }
}

/// One chunk's text, the alias names filled into it, and the result.
struct Spliced {
    text: Arc<chunk::ChunkText>,
    names: Vec<String>,
    out: String,
}

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
///
/// `no_eq`, as [`final_ir_for`]: nothing downstream reads it, so comparing megabytes of text
/// with the last revision's would buy nothing.
#[salsa::tracked(returns(clone), no_eq)]
pub fn final_ir(db: &dyn Db, file: SourceFile) -> Arc<FinalIr> {
    final_ir_for(db, file, layout::effective_options(db).policy)
}

/// The optimized text of a file under a given policy.
///
/// `no_eq`: no query reads it (callers take the text), so comparing the new text with the
/// last revision's would cost a pass over megabytes for nothing.
#[salsa::tracked(returns(clone), no_eq)]
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

/// Whether the optimizer rewrites a function: [`optimizable`] of its body, as a memo, so that
/// the cost a tuning loop asks for after every override does not scan every op of every
/// function again (on a tuning host it reads the graph alone and stays valid in O(1)).
#[salsa::tracked(returns(copy))]
pub fn func_optimizable(db: &dyn Db, func: FuncId) -> bool {
    ir::func_body(db, func).is_some_and(|b| optimizable(&b).is_ok())
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
        out: &mut String,
    ) -> bool {
        self.rewrite_func(chunk, op, f, indent, out).is_some()
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
    /// Writes function `f`'s rewritten text to `out`; `None` (and nothing written) when the
    /// function is not rewritten.
    fn rewrite_func(
        &mut self,
        chunk: usize,
        op: &ast::Op,
        f: &ast::FuncOp,
        indent: usize,
        out: &mut String,
    ) -> Option<()> {
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
        self.function(chunk, func, &body, op, f, indent, out)?;
        self.out.functions += 1;
        Some(())
    }

    fn ensure_chunk(&mut self, chunk: usize) {
        if self.chunks.contains_key(&chunk) {
            return;
        }
        let mut aliases = ChunkAliases::default();
        if let Some(c) = self.parse.file().chunks.get(chunk) {
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

    /// A function's rewritten text: its chunks spliced together, with alias names in the
    /// gaps they leave, then the terminator and the signature.
    /// A function's rewritten text, written to `out`: its chunks spliced together with alias
    /// names in the gaps they leave, the terminator and the signature. Aliases are named in
    /// the order the text uses them (the ops, the terminator, then the signature), so they
    /// are all named before anything is written, and the chunks are copied once, into `out`.
    #[expect(clippy::too_many_arguments, reason = "the printer's hook arguments and the function")]
    fn function(
        &mut self,
        chunk: usize,
        func: FuncId,
        body: &FuncBody,
        op: &ast::Op,
        f: &ast::FuncOp,
        indent: usize,
        out: &mut String,
    ) -> Option<()> {
        let db = self.db;
        let region = f.body.as_ref()?;
        let statics = statics::func_text(db, func)?;
        let pad = "  ".repeat(indent + 1);
        let count = plan::chunk_count(db, func);
        // `greedy` has no reach (every chunk is its own walk): not asked.
        let reach = if self.policy == Policy::Greedy {
            Arc::default()
        } else {
            plan::override_reach(db, func, self.policy)
        };
        let last = count.saturating_sub(1);
        let moved = chunk::unscheduled_plans_moved(db, func, (&reach, self.policy), last);
        let pieces: Vec<(Arc<chunk::ChunkText>, Vec<String>)> = (0..count)
            .map(|k| {
                let reads = chunk::chunk_reads(db, func, (&reach, self.policy), k, moved);
                let c = chunk::rewrite_chunk(db, func, self.policy, k, reads);
                let names = c.layouts.iter().map(|l| self.layout_ref(chunk, l)).collect();
                (c, names)
            })
            .collect();
        let loc_names = ir::func_loc_names(db, func);
        let names = chunk::ValueNames { statics: &statics, body, loc_names: &loc_names };
        let plan = plan::PlanView::new(db, func, self.policy);
        let value = |v: &ValueRef| -> Option<(String, Ty)> {
            match *v {
                ValueRef::Result { .. } => {
                    let (op, index) = body.result_of(*v)?;
                    let p = plan.op(op as usize)?;
                    names.bound(op, index, p.layout.as_ref(), p.spill.as_ref().map(|c| &c.layout))
                }
                other => names.bound_value(other),
            }
        };
        // The terminator returns the values as they now are.
        let mut ret_types = Vec::new();
        let mut ret_names = Vec::new();
        for v in &body.returns {
            let (n, t) = value(v).unwrap_or_else(|| ("%undefined".to_owned(), Ty::Unknown));
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
        let term = format!("{pad}{term}{ret_loc}\n");
        // The signature: arguments as written, results as now returned.
        let outer = "  ".repeat(indent);
        let mut sig = format!("{outer}func.func ");
        if let Some(v) = &f.visibility {
            let _ = write!(sig, "{} ", v.text);
        }
        let _ = write!(sig, "{}(", f.sym_name.text);
        let args = chunk::args_text(db, func);
        let names: Vec<String> = args.layouts.iter().map(|l| self.layout_ref(chunk, l)).collect();
        splice(&mut sig, &args, &names);
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
        let spliced: usize = pieces.iter().map(|(c, n)| c.text.len() + n.len() * 16).sum();
        out.reserve(sig.len() + spliced + term.len() + loc.len() + outer.len() + 8);
        out.push_str(&sig);
        out.push_str(" {\n");
        {
            let mut cache =
                db.splice_cache().map.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for (k, (c, names)) in pieces.into_iter().enumerate() {
                self.out.conversions += c.conversions as usize;
                let key = (func, self.policy, k as u32);
                if let Some(hit) = cache.get(&key)
                    && Arc::ptr_eq(&hit.text, &c)
                    && hit.names == names
                {
                    out.push_str(&hit.out);
                    continue;
                }
                let start = out.len();
                splice(out, &c, &names);
                let spliced = out[start..].to_owned();
                cache.insert(key, Spliced { text: c, names, out: spliced });
            }
        }
        out.push_str(&term);
        let _ = writeln!(out, "{outer}}}{loc}");
        Some(())
    }
}

/// Appends `text` with its gaps filled by `names` (the alias of each of its layouts).
fn splice(out: &mut String, text: &chunk::ChunkText, names: &[String]) {
    let mut from = 0usize;
    for &(at, idx) in &text.refs {
        out.push_str(text.text.get(from..at as usize).unwrap_or_default());
        out.push_str(names.get(idx as usize).map_or("", String::as_str));
        from = at as usize;
    }
    out.push_str(text.text.get(from..).unwrap_or_default());
}
