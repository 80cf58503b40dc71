//! Location names: reading the source op's `loc(...)` and making every output name unique.
//!
//! The optimizer's override syntax keys ops by the top-level `loc("name")`, and splits option
//! strings at `,` and `=`; so output names never contain those characters or whitespace, and
//! no two ops of a file share a name.

use rustc_hash::{FxHashMap, FxHashSet};
use syntax::ast;

/// Resolves location aliases (`#loc3`) of one chunk; aliases may be used before they are
/// defined, so all of them are collected first.
pub(crate) struct LocResolver<'a> {
    aliases: FxHashMap<&'a str, &'a ast::Location>,
}

impl<'a> LocResolver<'a> {
    pub(crate) fn new(chunk: &'a ast::Chunk) -> LocResolver<'a> {
        let mut aliases = FxHashMap::default();
        for item in &chunk.items {
            if let ast::Item::LocAlias(a) = item {
                aliases.insert(a.name.text.trim_start_matches('#'), &a.loc);
            }
        }
        LocResolver { aliases }
    }

    /// The name an op is known by: its top-level `NameLoc`, or for a fused location the first
    /// name inside it, or for a call site the callee's name.
    pub(crate) fn name(&self, loc: &'a ast::Location) -> Option<&'a str> {
        self.name_at_depth(loc, 0)
    }

    fn name_at_depth(&self, loc: &'a ast::Location, depth: u32) -> Option<&'a str> {
        if depth > 32 {
            return None;
        }
        match &loc.kind {
            ast::LocKind::Name { name, .. } => Some(name.as_str()),
            ast::LocKind::Alias(a) => {
                let target = self.aliases.get(a.trim_start_matches('#'))?;
                self.name_at_depth(target, depth + 1)
            }
            ast::LocKind::Fused { locs, .. } => {
                locs.iter().find_map(|l| self.name_at_depth(l, depth + 1))
            }
            ast::LocKind::CallSite { callee, .. } => self.name_at_depth(callee, depth + 1),
            ast::LocKind::Unknown | ast::LocKind::FileLineCol { .. } => None,
        }
    }

    /// A location printed without aliases, for function arguments: the name, or
    /// `"file":line:col`. `None` for unknown locations.
    pub(crate) fn print(&self, loc: &'a ast::Location) -> Option<String> {
        let mut l = loc;
        for _ in 0..32 {
            match &l.kind {
                ast::LocKind::Alias(a) => l = self.aliases.get(a.trim_start_matches('#'))?,
                ast::LocKind::FileLineCol { file, line, col } => {
                    return Some(format!("loc({}:{line}:{col})", syntax::escape_string(file)));
                }
                ast::LocKind::Unknown => return None,
                _ => {
                    return self.name(l).map(|n| format!("loc({})", syntax::escape_string(n)));
                }
            }
        }
        None
    }
}

/// Replaces the characters the override syntax cannot carry (`,`, `=`, whitespace), and
/// quotes and backslashes, with `_`.
pub(crate) fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| match c {
            ',' | '=' | '"' | '\\' => '_',
            c if c.is_whitespace() || c.is_control() => '_',
            c => c,
        })
        .collect();
    if s.is_empty() { "op".to_owned() } else { s }
}

/// Hands out names unique within a file: the first use of `x` is `x`, later ones `x_1`,
/// `x_2`, ... (skipping any that were taken literally).
#[derive(Default)]
pub(crate) struct NameTable {
    used: FxHashSet<String>,
    next_suffix: FxHashMap<String, u32>,
}

impl NameTable {
    pub(crate) fn unique(&mut self, base: &str) -> String {
        if self.used.insert(base.to_owned()) {
            return base.to_owned();
        }
        let n = self.next_suffix.entry(base.to_owned()).or_insert(1);
        loop {
            let candidate = format!("{base}_{n}");
            *n += 1;
            if self.used.insert(candidate.clone()) {
                return candidate;
            }
        }
    }
}
