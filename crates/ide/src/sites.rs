//! Finding ops and functions of a file by position, through the source maps, and the short
//! spellings of types and layouts the IDE features share.

use std::sync::Arc;

use base_db::SourceFile;
use ir::{FuncBody, FuncId, FuncSourceMap, OpId, Ty};
use syntax::TextRange;
use ttnn_types::{BufferType, TensorMemoryLayout, TensorType, TtnnLayout};

use crate::RootDatabase;

/// A top-level op of a function body, with everything needed to describe it.
#[derive(Clone)]
pub(crate) struct OpSite {
    pub(crate) idx: usize,
    pub(crate) op: OpId,
    pub(crate) body: Arc<FuncBody>,
    pub(crate) sm: Arc<FuncSourceMap>,
}

impl OpSite {
    pub(crate) fn data(&self) -> &ir::OpData {
        &self.body.ops[self.idx]
    }
}

/// The functions of a file with their bodies and source maps.
pub(crate) fn funcs(
    db: &RootDatabase,
    file: SourceFile,
) -> Vec<(FuncId, Arc<FuncBody>, Arc<FuncSourceMap>)> {
    ir::file_funcs(db, file)
        .iter()
        .filter_map(|&f| Some((f, ir::func_body(db, f)?, ir::func_source_map(db, f)?)))
        .collect()
}

/// The function whose name is written at `name_range`.
pub(crate) fn func_by_name_range(
    db: &RootDatabase,
    file: SourceFile,
    name_range: TextRange,
) -> Option<(FuncId, Arc<FuncBody>, Arc<FuncSourceMap>)> {
    funcs(db, file).into_iter().find(|(_, _, sm)| sm.name_range == name_range)
}

/// The op `pred` picks among the top-level ops of the function containing `offset`.
fn find_op(
    db: &RootDatabase,
    file: SourceFile,
    offset: u32,
    pred: impl Fn(&FuncSourceMap, usize) -> bool,
) -> Option<OpSite> {
    for (func, body, sm) in funcs(db, file) {
        if !sm.range.contains_inclusive(offset) {
            continue;
        }
        let Some(idx) = (0..sm.op_ranges.len().min(body.ops.len())).find(|&i| pred(&sm, i)) else {
            continue;
        };
        let op = *ir::func_ops(db, func).get(idx)?;
        return Some(OpSite { idx, op, body, sm });
    }
    None
}

/// The top-level op whose name token is at `range`.
pub(crate) fn op_by_name_range(
    db: &RootDatabase,
    file: SourceFile,
    range: TextRange,
) -> Option<OpSite> {
    find_op(db, file, range.start, |sm, i| sm.op_name_ranges[i] == range)
}

/// The top-level op whose text contains `offset`.
pub(crate) fn op_containing(db: &RootDatabase, file: SourceFile, offset: u32) -> Option<OpSite> {
    find_op(db, file, offset, |sm, i| sm.op_ranges[i].contains(offset))
}

/// The top-level op defining the result written at `name_range`, and the index of that
/// name's first result (`%a, %b:2, %c` gives `%c` index 3).
pub(crate) fn op_by_result_name(
    db: &RootDatabase,
    file: SourceFile,
    name_range: TextRange,
) -> Option<(OpSite, u32)> {
    let text = file.text(db);
    let site = find_op(db, file, name_range.start, |sm, i| {
        sm.result_ranges.get(i).is_some_and(|rs| rs.iter().any(|r| r.start == name_range.start))
    })?;
    let mut first = 0u32;
    for r in site.sm.result_ranges.get(site.idx)? {
        if r.start == name_range.start {
            return Some((site, first));
        }
        first += result_count(r.slice(text));
    }
    None
}

/// How many results a result definition names: `%3:2` is 2, `%3` is 1.
fn result_count(spelling: &str) -> u32 {
    spelling.rsplit_once(':').and_then(|(_, n)| n.trim().parse().ok()).unwrap_or(1)
}

/// `tensor<256x1024xbf16>`: the type without its (long) layout encoding.
pub(crate) fn tensor_short(t: &TensorType) -> String {
    let mut s = String::from("tensor<");
    for d in &t.shape {
        match d {
            Some(d) => s.push_str(&format!("{d}x")),
            None => s.push_str("?x"),
        }
    }
    s.push_str(&t.element.to_string());
    s.push('>');
    s
}

pub(crate) fn ty_short(ty: &Ty) -> String {
    match ty {
        Ty::Tensor(t) => tensor_short(t),
        other => other.to_string(),
    }
}

/// The compact layout spelling of inlay hints: `DRAM il`, `L1 bs 2x8`, `host`.
pub(crate) fn layout_short(l: &TtnnLayout) -> String {
    let buffer = match l.buffer {
        BufferType::Dram => "DRAM",
        BufferType::L1 => "L1",
        BufferType::SystemMemory => return "host".to_owned(),
        BufferType::L1Small => "L1-small",
        BufferType::Trace => "trace",
    };
    let ml = match l.memory_layout {
        Some(TensorMemoryLayout::Interleaved) => "il",
        Some(TensorMemoryLayout::HeightSharded) => "hs",
        Some(TensorMemoryLayout::WidthSharded) => "ws",
        Some(TensorMemoryLayout::BlockSharded) => "bs",
        Some(TensorMemoryLayout::NdSharded) => "nd",
        None => return buffer.to_owned(),
    };
    if l.is_sharded() { format!("{buffer} {ml} {}", l.grid2d()) } else { format!("{buffer} {ml}") }
}

/// `1` based line of an offset, for messages.
pub(crate) fn line_of(text: &str, offset: u32) -> u32 {
    let end = (offset as usize).min(text.len());
    text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() as u32 + 1
}

/// The last path component, for short messages.
pub(crate) fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}
