//! Hover: what the name under the cursor is, in words.
//!
//! - On an op (its name or a result): the op, its result types, the layout of each result as
//!   written, its per-core L1 footprint, its estimated device time as written and what bounds
//!   it, then the optimizer's lines from
//!   [`plan_hover::extra_lines`](crate::plan_hover::extra_lines).
//! - On a layout alias (definition or use): the decoded layout, field by field.
//! - On an SSA value use: where it is defined and its type.
//! - On a function symbol: its signature.

use std::fmt::Write as _;

use base_db::SourceFile;
use ir::{AttrValue, Decoded, Ty};
use syntax::{TextRange, TokenKind};
use ttnn_types::TtnnLayout;

use crate::{
    Analysis, Cancellable, RootDatabase,
    file_index::{AliasDef, AliasKind, FileIndex, Name, ValueDefKind, file_index, token_at},
    plan_hover, sites,
};

/// A hover answer: the range it is about and Markdown text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoverResult {
    pub range: TextRange,
    pub markdown: String,
}

impl Analysis {
    /// The hover at a byte offset of an IR file.
    pub fn hover(&self, file: SourceFile, offset: u32) -> Cancellable<Option<HoverResult>> {
        let (result, index) = self.with_db(|db| (hover(db, file, offset), file_index(db, file)))?;
        // The index is made again after each edit; the one it replaces is freed off the
        // next edit's path (see `Retained`).
        self.retain(index);
        Ok(result)
    }
}

fn hover(db: &RootDatabase, file: SourceFile, offset: u32) -> Option<HoverResult> {
    let _p = tracing::debug_span!("hover", offset).entered();
    let text = file.text(db).clone();
    let parse = ir::parse_file(db, file);
    let index = file_index(db, file);
    let tok = *token_at(parse.tokens(), offset)?;
    let at = |markdown: String| Some(HoverResult { range: tok.range, markdown });
    if index.is_op_name(tok.range) {
        let site = sites::op_by_name_range(db, file, tok.range)?;
        return at(op_hover(db, &text, &site));
    }
    match index.classify(&text, &tok)? {
        Name::Value { scope, name } => {
            let def = index.value_def(scope, &name)?;
            if def.name_range == tok.range
                && def.kind == ValueDefKind::Result
                && let Some((site, _)) = sites::op_by_result_name(db, file, def.name_range)
            {
                return at(op_hover(db, &text, &site));
            }
            // `%3#1` uses result 1 of `%3`.
            let i = parse.tokens().partition_point(|t| t.range.end <= tok.range.start);
            let result_idx = parse
                .tokens()
                .get(i + 1)
                .filter(|t| t.kind == TokenKind::HashId && t.range.start == tok.range.end)
                .and_then(|t| t.range.slice(&text)[1..].parse::<u32>().ok())
                .unwrap_or(0);
            at(value_hover(db, file, &text, &index, def, &name, result_idx)?)
        }
        Name::Alias { chunk, name } => {
            let def = index.alias(chunk, &name)?;
            at(alias_hover(&text, &parse, &index, chunk, def))
        }
        Name::Func { chunk, name } => {
            let def = index.func(chunk, &name)?;
            let (_, body, _) = sites::func_by_name_range(db, file, def.name_range)?;
            at(func_hover(&body))
        }
    }
}

fn op_hover(db: &RootDatabase, text: &str, site: &sites::OpSite) -> String {
    let data = site.data();
    let mut out = format!("**`{}`**", data.name);
    let results: Vec<&str> =
        site.sm.result_ranges[site.idx].iter().map(|r| r.slice(text)).collect();
    if !results.is_empty() {
        let _ = write!(out, " `{}`", results.join(", "));
    }
    let _ = write!(out, " in `@{}`", site.body.name);
    if let Some(name) = plan_hover::loc_name(db, site.op) {
        let _ = write!(out, ", loc `\"{name}\"`");
    }
    let line = sites::line_of(text, site.sm.op_ranges[site.idx].start);
    let _ = write!(out, " (line {line})");
    let mut lines = Vec::new();
    let many = data.results.len() > 1;
    for (i, ty) in data.results.iter().enumerate() {
        let label = if many { format!("result {i}") } else { "result".to_owned() };
        lines.push(format!("{label}: `{}`", sites::ty_short(ty)));
        lines.extend(layout_lines(ty));
    }
    if let Some(callee) = &data.callee {
        lines.push(format!("callee: `@{callee}`"));
    }
    lines.extend(time_line(db, site));
    lines.extend(bound_line(db, site));
    lines.extend(plan_hover::extra_lines(db, site.op));
    for l in lines {
        out.push_str("\n\n");
        out.push_str(&l);
    }
    out
}

/// The cost model's device time for the op with its layouts as written, and what bounds it
/// (compute, DRAM, NoC, L1, or the fixed dispatch cost). Ops the op model does not know,
/// or with an operand or result of unknown shape or layout, get no line.
fn time_line(db: &RootDatabase, site: &sites::OpSite) -> Option<String> {
    let data = site.data();
    let sig = layout::op_signature(db, site.op)?;
    let desc = |t: &Ty| {
        let t = t.as_tensor()?;
        Some(opmodel::TensorDesc::new(&t.static_shape()?, t.layout.clone()?))
    };
    let inputs: Option<Vec<_>> = data.operand_types.iter().map(desc).collect();
    let output = desc(data.results.first()?)?;
    let target = base_db::TargetInput::get(db).target(db);
    let c = cost::CostModel::for_target(target).op_cost(&sig.kind, &inputs?, &output, &sig.config);
    Some(if c.bound == cost::Bound::Free {
        "estimated time as written: none (no kernel runs)".to_owned()
    } else {
        format!(
            "estimated time as written: {:.1} µs device time, {}-bound on {} core(s)",
            c.total_ns as f64 / 1e3,
            c.bound.keyword(),
            c.cores
        )
    })
}

/// The op's part of the cost model's lower bound: what no plan can beat for it (its best
/// placement, every free tensor local in L1, the weights no policy moves read where they
/// are). None for an op that costs nothing at its best (a view) or that the model does not
/// know.
fn bound_line(db: &RootDatabase, site: &sites::OpSite) -> Option<String> {
    let (_, idx) = ir::op_in_body(db, site.op)?;
    let ns = plan::op_lower_bound(db, site.op.func(db), idx).filter(|&ns| ns > 0)?;
    Some(format!(
        "lower bound: {:.1} µs (its best placement, every free tensor local in L1)",
        ns as f64 / 1e3
    ))
}

/// The layout of a value as written, in words, and its per-core L1 footprint.
fn layout_lines(ty: &Ty) -> Vec<String> {
    let Some(l) = ty.layout() else { return Vec::new() };
    vec![format!("layout: {}", l.describe()), l1_line(l)]
}

fn l1_line(l: &TtnnLayout) -> String {
    if l.is_l1() {
        format!("L1 per core: {} B on {} core(s)", l.l1_bytes_per_core(), l.num_cores())
    } else {
        format!("L1 per core: none ({})", sites::layout_short(l))
    }
}

fn value_hover(
    db: &RootDatabase,
    file: SourceFile,
    text: &str,
    index: &FileIndex,
    def: &crate::file_index::ValueDef,
    name: &str,
    result_idx: u32,
) -> Option<String> {
    let line = sites::line_of(text, def.name_range.start);
    let (head, ty) = match def.kind {
        ValueDefKind::Result => match sites::op_by_result_name(db, file, def.name_range) {
            Some((site, first)) => {
                let n = first + result_idx;
                let data = site.data();
                let head = format!(
                    "`{name}`: result {n} of `{}` in `@{}` (line {line})",
                    data.name, site.body.name
                );
                (head, data.results.get(n as usize).cloned())
            }
            // An op inside a region: lowering does not model it, so only its place is known.
            None => (format!("`{name}`: defined by a nested op (line {line})"), None),
        },
        ValueDefKind::Arg(i) => {
            let func = match def.scope {
                crate::file_index::Scope::Func(f) => index.funcs.get(f),
                crate::file_index::Scope::Chunk(_) => None,
            }?;
            let (_, body, _) = sites::func_by_name_range(db, file, func.name_range)?;
            let head = format!("`{name}`: argument {i} of `{}` (line {line})", func.name);
            (head, body.args.get(i as usize).cloned())
        }
        ValueDefKind::BlockArg => (format!("`{name}`: block argument (line {line})"), None),
    };
    let mut out = head;
    if let Some(ty) = ty {
        let _ = write!(out, "\n\ntype: `{}`", sites::ty_short(&ty));
        for l in layout_lines(&ty) {
            out.push_str("\n\n");
            out.push_str(&l);
        }
    }
    Some(out)
}

fn func_hover(body: &ir::FuncBody) -> String {
    let args: Vec<String> = body
        .arg_names
        .iter()
        .zip(body.args.iter())
        .map(|(n, t)| format!("{n}: {}", sites::ty_short(t)))
        .collect();
    let results: Vec<String> = body.results.iter().map(sites::ty_short).collect();
    let vis = if body.is_private { "private " } else { "" };
    let mut out = format!("```mlir\nfunc.func {vis}@{}({})", body.name, args.join(", "));
    match results.len() {
        0 => {}
        1 => {
            let _ = write!(out, " -> {}", results[0]);
        }
        _ => {
            let _ = write!(out, " -> ({})", results.join(", "));
        }
    }
    out.push_str("\n```");
    let mut facts = Vec::new();
    if let Some(ft) = &body.function_type {
        facts.push(format!("function type `{ft}`"));
    }
    if body.has_body {
        facts.push(format!("{} op(s)", body.ops.len()));
    } else {
        facts.push("declaration".to_owned());
    }
    let _ = write!(out, "\n\n{}", facts.join(", "));
    out
}

fn alias_hover(
    text: &str,
    parse: &syntax::Parse,
    index: &FileIndex,
    chunk: usize,
    def: &AliasDef,
) -> String {
    let value = parse.normalized_text(text, def.value_range);
    let kind = match def.kind {
        AliasKind::Attr => "attribute alias",
        AliasKind::Type => "type alias",
        AliasKind::Loc => "location alias",
    };
    let mut out = format!("**`{}`**: {kind}", def.name);
    let decoded = match def.kind {
        AliasKind::Attr => decode_attr_alias(text, index, chunk, def),
        AliasKind::Type | AliasKind::Loc => None,
    };
    match decoded.as_ref().and_then(AttrValue::decoded) {
        Some(Decoded::Layout(l)) => {
            let _ = write!(out, "\n\n{}", l.describe());
            for line in layout_fields(l) {
                let _ = write!(out, "\n- {line}");
            }
        }
        Some(Decoded::BufferType(b)) => {
            let _ = write!(out, "\n\nbuffer type: {}", b.keyword());
        }
        Some(Decoded::MemoryConfig(m)) => {
            let _ = write!(out, "\n\nmemory config: buffer {}", m.buffer.keyword());
            if let Some(ml) = m.memory_layout {
                let _ = write!(out, ", {}", ml.keyword());
            }
            if let Some(s) = &m.shard_spec {
                let shape: Vec<String> = s.shape.iter().map(u64::to_string).collect();
                let _ = write!(
                    out,
                    ", shard {} on {} core(s)",
                    shape.join("x"),
                    s.core_ranges.num_cores()
                );
            }
        }
        _ => {
            let _ = write!(out, "\n\n```mlir\n{value}\n```");
        }
    }
    out
}

/// The fields of a layout, one line each.
fn layout_fields(l: &TtnnLayout) -> Vec<String> {
    let mut lines = vec![format!("buffer: {}", l.buffer.keyword())];
    match l.memory_layout {
        Some(ml) => lines.push(format!("memory layout: {}", ml.keyword())),
        None => lines.push("memory layout: none".to_owned()),
    }
    lines.push(format!("grid: {}", l.grid2d()));
    let shard: Vec<String> = l.memref_shape.iter().map(u64::to_string).collect();
    let unit = if l.memref_element.is_tile() { "tiles" } else { "elements" };
    let what = if l.is_l1() { "per core" } else { "total" };
    lines.push(format!("shard shape: {} {unit} {what}", shard.join("x")));
    match &l.core_ranges {
        Some(crs) if !crs.ranges.is_empty() => {
            let ranges: Vec<String> = crs
                .ranges
                .iter()
                .map(|r| format!("({},{})-({},{})", r.start.x, r.start.y, r.end.x, r.end.y))
                .collect();
            lines.push(format!("core ranges: {} ({} cores)", ranges.join(", "), crs.num_cores()));
        }
        _ => {}
    }
    if let Some(dt) = l.data_type() {
        lines.push(format!("dtype: {dt}, {} pages", l.page_layout().keyword()));
    }
    lines.push(l1_line(l));
    if l.ignore_physical_layout {
        lines.push("partial: the backend picks the grid and shard".to_owned());
    }
    lines
}

/// Decodes an attribute alias exactly as lowering does, by lowering a tiny module that holds
/// the chunk's aliases and one op using this one.
///
/// Lowering decodes aliases only where they are used and keeps no per-alias table (its
/// results are position-free and per function), so this asks the same decoder the question
/// directly. It runs only on hover, over the chunk's alias definitions.
fn decode_attr_alias(
    text: &str,
    index: &FileIndex,
    chunk: usize,
    def: &AliasDef,
) -> Option<AttrValue> {
    let mut module = String::new();
    for a in index.aliases.get(chunk)? {
        if a.kind != AliasKind::Loc {
            module.push_str(a.range.slice(text));
            module.push('\n');
        }
    }
    let _ = write!(
        module,
        "func.func @hover() {{\n  \"hover.alias\"() {{value = {}}} : () -> ()\n  return\n}}\n",
        def.name
    );
    let parse = syntax::parse(&module);
    let lowered = ir::lower_parse(&module, &parse);
    let op = lowered.funcs.first()?.body.ops.first()?;
    op.attrs.iter().find(|(k, _)| k == "value").map(|(_, v)| v.clone())
}
