//! What the rewrite reads of a function's text, taken from the parse once per function.
//!
//! The rewritten lines of an op keep most of what was written (result names, the op name,
//! properties, attributes, location) and change only types, op configs and operands. These
//! written pieces depend on the text alone, so they are gathered here once, and the per-chunk
//! rewrite (`crate::chunk`), which re-runs after an override, reads them without walking the
//! syntax tree.

use std::sync::Arc;

use ir::FuncId;
use rustc_hash::FxHashSet;
use syntax::{Parse, ast, escape_string, range_text};

use crate::Db;

/// The written pieces of one op.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OpText {
    /// Result groups as written: name and count (`%0`, `%1:2`).
    pub results: Vec<(String, u32)>,
    /// The op name as the generic form prints it, quoted (`call` as `func.call`).
    pub name: String,
    /// Properties: key and normalized value text (empty for a unit entry).
    pub props: Vec<(String, String)>,
    /// The attribute dictionary, normalized.
    pub attrs: Option<String>,
    /// The location, normalized, with a leading space; empty when none is written.
    pub loc: String,
    /// How each operand is written (`%3`, `%4#1`), for an operand with no value to name.
    pub uses: Vec<Option<String>>,
}

/// The written pieces of a function's body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FuncText {
    /// The nesting depth of the `func.func` op: its body is indented one level deeper.
    pub indent: usize,
    /// Per op (body index): its pieces.
    pub ops: Vec<OpText>,
    /// Every value name written in the function (arguments and results): names the rewrite
    /// makes up must avoid them.
    pub names: FxHashSet<String>,
    /// Per argument: `%name: ` (empty for a declaration's unnamed argument), and what
    /// follows its type: ` {attrs}` and ` loc(...)`, normalized.
    pub args: Vec<(String, String)>,
}

/// The written pieces of a function, or `None` when its body does not line up with the
/// lowered one (several blocks, a missing body), which the rewrite leaves as written.
#[salsa::tracked(returns(clone))]
pub fn func_text(db: &dyn Db, func: FuncId) -> Option<Arc<FuncText>> {
    let file = func.file(db);
    let parse = ir::parse_file(db, file);
    let text = file.text(db);
    let body = ir::func_body(db, func)?;
    let _p = tracing::debug_span!("func_text", func = %func.name(db)).entered();
    let (_, f, indent) = find_func(&parse, func.chunk(db) as usize, func.name(db), func.dup(db))?;
    let region = f.body.as_ref()?;
    if region.blocks.len() != 1 {
        return None;
    }
    let ops: Vec<&ast::Op> =
        region.blocks[0].ops.iter().filter(|o| !matches!(o.body, ast::OpBody::Return(_))).collect();
    if ops.len() != body.ops.len() {
        return None;
    }
    let mut names: FxHashSet<String> = body.arg_names.iter().cloned().collect();
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        for r in &op.results {
            names.insert(r.name.text.clone());
        }
        out.push(op_text(text, &parse, op));
    }
    let args = f
        .args
        .iter()
        .map(|a| {
            let name = a.name.as_ref().map_or(String::new(), |n| format!("{}: ", n.text));
            let mut after = String::new();
            if let Some(attrs) = &a.attrs {
                after.push(' ');
                after.push_str(&range_text(text, &parse, attrs.range));
            }
            if let Some(l) = &a.loc {
                after.push(' ');
                after.push_str(&range_text(text, &parse, l.range));
            }
            (name, after)
        })
        .collect();
    Some(Arc::new(FuncText { indent, ops: out, names, args }))
}

/// The `func.func` named `name` (its `dup`-th definition) in chunk `chunk`, with its nesting
/// depth: found in the order the lowering and the printer visit functions.
pub(crate) fn find_func<'p>(
    parse: &'p Parse,
    chunk: usize,
    name: &str,
    dup: u32,
) -> Option<(&'p ast::Op, &'p ast::FuncOp, usize)> {
    fn walk<'p>(
        op: &'p ast::Op,
        level: usize,
        name: &str,
        seen: &mut u32,
        dup: u32,
    ) -> Option<(&'p ast::Op, &'p ast::FuncOp, usize)> {
        let regions: Vec<&ast::Region> = match &op.body {
            ast::OpBody::Func(f) => {
                if f.sym_name.text.trim_start_matches('@') == name {
                    if *seen == dup {
                        return Some((op, f, level));
                    }
                    *seen += 1;
                }
                return None;
            }
            ast::OpBody::Module(m) => vec![&m.body],
            ast::OpBody::RegionOp(r) => vec![&r.body],
            ast::OpBody::Generic(g) => g.regions.iter().collect(),
            _ => return None,
        };
        for r in regions {
            for b in &r.blocks {
                for o in &b.ops {
                    if let Some(found) = walk(o, level + 1, name, seen, dup) {
                        return Some(found);
                    }
                }
            }
        }
        None
    }
    let mut seen = 0;
    parse.file().chunks.get(chunk)?.items.iter().find_map(|item| match item {
        ast::Item::Op(op) => walk(op, 0, name, &mut seen, dup),
        _ => None,
    })
}

fn op_text(text: &str, parse: &Parse, op: &ast::Op) -> OpText {
    let results = op.results.iter().map(|r| (r.name.text.clone(), r.count)).collect();
    // Custom forms print generically; `call` needs its dialect prefix then.
    let name = match op.name.text.as_str() {
        "call" => "func.call",
        other => other,
    };
    let mut props: Vec<(String, String)> = Vec::new();
    let mut attrs = None;
    let mut uses: Vec<&ast::ValueUse> = Vec::new();
    match &op.body {
        ast::OpBody::Generic(g) => {
            if let Some(p) = &g.properties {
                for e in &p.entries {
                    let v = e.value.as_ref().map(|v| range_text(text, parse, v.range));
                    props.push((e.key.text.clone(), v.unwrap_or_default()));
                }
            }
            attrs = g.attrs.as_ref().map(|a| range_text(text, parse, a.range));
            uses.extend(&g.operands);
        }
        ast::OpBody::D2mSubgraph(d) => {
            props.push(("d2m_func".to_owned(), d.callee.text.clone()));
            props.push((
                "operandSegmentSizes".to_owned(),
                format!("array<i32: {}, {}>", d.ins.len(), d.outs.len()),
            ));
            attrs = d.attrs.as_ref().map(|a| range_text(text, parse, a.range));
            uses.extend(d.ins.iter().chain(&d.outs));
        }
        ast::OpBody::LoadCached(l) => props.push(("callee".to_owned(), l.callee.text.clone())),
        ast::OpBody::Call(c) => props.push(("callee".to_owned(), c.callee.text.clone())),
        ast::OpBody::TtLang(c) => {
            attrs = c.attrs.as_ref().map(|a| range_text(text, parse, a.range));
        }
        _ => {}
    }
    let uses = uses
        .iter()
        .map(|u| {
            Some(match u.index {
                Some(i) => format!("{}#{i}", u.name.text),
                None => u.name.text.clone(),
            })
        })
        .collect();
    let loc = op
        .loc
        .as_ref()
        .map(|l| format!(" {}", range_text(text, parse, l.range)))
        .unwrap_or_default();
    OpText { results, name: escape_string(name), props, attrs, loc, uses }
}
