//! Document symbols: the outline of a file.
//!
//! Modules (and region ops such as `ttcore.device_module`) contain functions, functions
//! contain their ops, and aliases sit at the top of their chunk. A split file gets one
//! `chunk N` module per `// -----` chunk, as mlir-lsp-server does.

use base_db::SourceFile;
use syntax::{TextRange, ast};

use crate::{Analysis, Cancellable, RootDatabase};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    Module,
    Function,
    Op,
    Alias,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub kind: SymbolKind,
    /// The whole construct.
    pub range: TextRange,
    /// The name to select when the symbol is picked.
    pub selection_range: TextRange,
    pub children: Vec<Symbol>,
}

impl Analysis {
    /// The outline of an IR file.
    pub fn document_symbols(&self, file: SourceFile) -> Cancellable<Vec<Symbol>> {
        self.with_db(|db| document_symbols(db, file))
    }
}

fn document_symbols(db: &RootDatabase, file: SourceFile) -> Vec<Symbol> {
    let _p = tracing::debug_span!("document_symbols").entered();
    let parse = ir::parse_file(db, file);
    let text = file.text(db);
    let chunks = &parse.file().chunks;
    let per_chunk: Vec<Vec<Symbol>> = chunks.iter().map(|c| chunk_symbols(text, c)).collect();
    if chunks.len() == 1 {
        return per_chunk.into_iter().next().unwrap_or_default();
    }
    chunks
        .iter()
        .zip(per_chunk)
        .enumerate()
        .map(|(i, (c, children))| Symbol {
            name: format!("chunk {i}"),
            kind: SymbolKind::Module,
            range: c.range,
            selection_range: TextRange::empty(c.range.start),
            children,
        })
        .collect()
}

fn chunk_symbols(text: &str, chunk: &ast::Chunk) -> Vec<Symbol> {
    let mut out = Vec::new();
    for item in &chunk.items {
        let (name, range) = match item {
            ast::Item::AttrAlias(a) => (&a.name, a.range),
            ast::Item::TypeAlias(a) => (&a.name, a.range),
            ast::Item::LocAlias(a) => (&a.name, a.range),
            ast::Item::Op(op) => {
                out.extend(op_symbol(text, op));
                continue;
            }
            _ => continue,
        };
        out.push(Symbol {
            name: name.text.clone(),
            kind: SymbolKind::Alias,
            range,
            selection_range: name.range,
            children: Vec::new(),
        });
    }
    out
}

fn op_symbol(text: &str, op: &ast::Op) -> Option<Symbol> {
    let nested = |regions: &[&ast::Region]| -> Vec<Symbol> {
        regions
            .iter()
            .flat_map(|r| &r.blocks)
            .flat_map(|b| &b.ops)
            .filter_map(|o| op_symbol(text, o))
            .collect()
    };
    let (name, kind, selection_range, children) = match &op.body {
        ast::OpBody::Return(_) => return None,
        ast::OpBody::Module(m) => {
            let name = m.sym_name.as_ref().map_or("module", |s| s.text.as_str());
            let sel = m.sym_name.as_ref().map_or(op.name.range, |s| s.range);
            (name.to_owned(), SymbolKind::Module, sel, nested(&[&m.body]))
        }
        ast::OpBody::RegionOp(r) => {
            (op.name.text.clone(), SymbolKind::Module, op.name.range, nested(&[&r.body]))
        }
        ast::OpBody::Func(f) => {
            let body: Vec<&ast::Region> = f.body.iter().collect();
            (f.sym_name.text.clone(), SymbolKind::Function, f.sym_name.range, nested(&body))
        }
        ast::OpBody::Generic(g) => {
            let regions: Vec<&ast::Region> = g.regions.iter().collect();
            (op_label(text, op), SymbolKind::Op, op.name.range, nested(&regions))
        }
        _ => (op_label(text, op), SymbolKind::Op, op.name.range, Vec::new()),
    };
    Some(Symbol { name, kind, range: op.range, selection_range, children })
}

/// `%0 = ttnn.matmul`, or the bare op name for ops without results.
fn op_label(text: &str, op: &ast::Op) -> String {
    let results: Vec<&str> = op.results.iter().map(|r| r.range.slice(text)).collect();
    if results.is_empty() {
        op.name.text.clone()
    } else {
        format!("{} = {}", results.join(", "), op.name.text)
    }
}
