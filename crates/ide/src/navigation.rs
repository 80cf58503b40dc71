//! Go to definition and find references for SSA values, attribute, type and location
//! aliases, and function symbols (`@f` in `func.call`, `ttnn.d2m_subgraph`,
//! `ttcore.load_cached` and symbol-reference attributes).
//!
//! Definitions are looked up in the scope MLIR gives the name: values in their function,
//! aliases and symbols in their `// -----` chunk.

use base_db::SourceFile;
use syntax::TextRange;

use crate::{
    Analysis, Cancellable, RootDatabase,
    file_index::{FileIndex, Name, file_index, token_at},
};

/// Where a definition is: the whole definition and the name inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NavTarget {
    pub file_path: String,
    /// The whole definition (the op, argument, alias or function).
    pub range: TextRange,
    /// The defining name.
    pub focus_range: TextRange,
}

/// One reference to a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub file_path: String,
    pub range: TextRange,
    /// True for the definition itself.
    pub is_definition: bool,
}

impl Analysis {
    /// The definitions of the name at `offset`.
    pub fn goto_definition(&self, file: SourceFile, offset: u32) -> Cancellable<Vec<NavTarget>> {
        self.with_db(|db| goto_definition(db, file, offset))
    }

    /// Every reference to the name at `offset`, in source order; the definition is included
    /// when `include_declaration` is set.
    pub fn references(
        &self,
        file: SourceFile,
        offset: u32,
        include_declaration: bool,
    ) -> Cancellable<Vec<Reference>> {
        self.with_db(|db| references(db, file, offset, include_declaration))
    }
}

fn name_at(db: &RootDatabase, file: SourceFile, offset: u32) -> Option<Name> {
    let parse = ir::parse_file(db, file);
    let index = file_index(db, file);
    let tok = token_at(parse.tokens(), offset)?;
    index.classify(file.text(db), tok)
}

/// The definition's (whole range, name range).
fn definition(index: &FileIndex, name: &Name) -> Option<(TextRange, TextRange)> {
    match name {
        Name::Value { scope, name } => {
            index.value_def(*scope, name).map(|d| (d.range, d.name_range))
        }
        Name::Alias { chunk, name } => index.alias(*chunk, name).map(|a| (a.range, a.name_range)),
        Name::Func { chunk, name } => index.func(*chunk, name).map(|f| (f.range, f.name_range)),
    }
}

fn goto_definition(db: &RootDatabase, file: SourceFile, offset: u32) -> Vec<NavTarget> {
    let _p = tracing::debug_span!("goto_definition", offset).entered();
    let Some(name) = name_at(db, file, offset) else { return Vec::new() };
    let index = file_index(db, file);
    definition(&index, &name)
        .map(|(range, focus_range)| NavTarget {
            file_path: file.path(db).clone(),
            range,
            focus_range,
        })
        .into_iter()
        .collect()
}

fn references(
    db: &RootDatabase,
    file: SourceFile,
    offset: u32,
    include_declaration: bool,
) -> Vec<Reference> {
    let _p = tracing::debug_span!("references", offset).entered();
    let Some(name) = name_at(db, file, offset) else { return Vec::new() };
    let index = file_index(db, file);
    let parse = ir::parse_file(db, file);
    let def = definition(&index, &name).map(|(_, focus)| focus);
    index
        .occurrences(file.text(db), parse.tokens(), &name)
        .into_iter()
        .map(|range| Reference {
            file_path: file.path(db).clone(),
            range,
            is_definition: Some(range) == def,
        })
        .filter(|r| include_declaration || !r.is_definition)
        .collect()
}
