//! Code actions, as edits the client applies (never file writes).
//!
//! Each action is one handler in [`HANDLERS`]: a function that looks at the cursor and
//! pushes the actions it offers. Adding an action ("pin the planned layout", "insert a
//! reshard here") is adding one handler.
//!
//! - "Pin the current layout as an override": on an op with a `loc("name")`, adds (or
//!   replaces) `override-output-layout=name=GRID:buffer:memory_layout:page:dtype`.
//! - "Remove this override": on an entry of the overrides text, or on an op it applies to.

use base_db::{
    OutputLayoutOverride, OverrideEntry, OverrideFile, OverrideKind, OverridesInput, SourceFile,
};
use syntax::TextRange;

use crate::{Analysis, Cancellable, RootDatabase, TextEdit, plan_hover, sites};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodeActionKind {
    QuickFix,
    Refactor,
}

/// Edits to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdit {
    pub path: String,
    /// The file does not exist yet: create it (empty) before applying `edits`.
    pub create: bool,
    /// Non-overlapping edits, ranges in the file's current text.
    pub edits: Vec<TextEdit>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeAction {
    pub title: String,
    pub kind: CodeActionKind,
    pub edits: Vec<FileEdit>,
}

/// The document an action is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionDocument {
    Ir(SourceFile),
    /// The overrides text (`OverridesInput`); edits name it by its origin.
    Overrides,
}

/// Where a new override entry goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewOverrideTarget {
    /// Insert into the overrides text at this offset.
    InOverrides { offset: u32 },
    /// There is no overrides file for this IR file yet: create one at this path.
    NewFile { path: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeActionConfig {
    pub new_override: NewOverrideTarget,
}

impl Analysis {
    /// The actions available at `range` of a document.
    pub fn code_actions(
        &self,
        doc: ActionDocument,
        range: TextRange,
        config: &CodeActionConfig,
    ) -> Cancellable<Vec<CodeAction>> {
        let config = config.clone();
        self.with_db(move |db| {
            let input = OverridesInput::get(db);
            let ctx = Ctx {
                db,
                doc,
                range,
                config: &config,
                origin: input.origin(db),
                overrides_text: input.text(db),
                overrides: layout::override_file(db),
            };
            let mut acc = Vec::new();
            for handler in HANDLERS {
                handler(&ctx, &mut acc);
            }
            acc
        })
    }
}

struct Ctx<'a> {
    db: &'a RootDatabase,
    doc: ActionDocument,
    range: TextRange,
    config: &'a CodeActionConfig,
    origin: &'a str,
    overrides_text: &'a str,
    overrides: std::sync::Arc<OverrideFile>,
}

type Handler = fn(&Ctx<'_>, &mut Vec<CodeAction>);

/// Every action, in the order they are offered.
const HANDLERS: &[Handler] =
    &[pin_current_layout, pin_planned_layout, insert_reshard, remove_override];

/// The op at the cursor of an IR document and its `loc` name.
fn op_at_cursor(ctx: &Ctx<'_>) -> Option<(sites::OpSite, String)> {
    let ActionDocument::Ir(file) = ctx.doc else { return None };
    let site = sites::op_containing(ctx.db, file, ctx.range.start)?;
    let name = plan_hover::loc_name(ctx.db, site.op)?;
    Some((site, name))
}

fn pin_current_layout(ctx: &Ctx<'_>, acc: &mut Vec<CodeAction>) {
    let Some((site, name)) = op_at_cursor(ctx) else { return };
    let Some(layout) = site.data().results.iter().find_map(|t| t.layout()).cloned() else { return };
    pin_layout(ctx, acc, &name, &layout, "current");
}

/// "Pin the planned layout": the layout the optimizer chose for the op becomes an override,
/// so later edits elsewhere cannot move it.
fn pin_planned_layout(ctx: &Ctx<'_>, acc: &mut Vec<CodeAction>) {
    let Some((site, name)) = op_at_cursor(ctx) else { return };
    let Some(planned) = crate::plan_hover::planned_layout(ctx.db, site.op) else { return };
    if site.data().results.iter().find_map(|t| t.layout()) == Some(&planned) {
        // Already what is written; "pin the current layout" covers it.
        return;
    }
    pin_layout(ctx, acc, &name, &planned, "planned");
}

/// "Insert a reshard here": `insert-memreconfig` on operand 0 of the op at the cursor.
fn insert_reshard(ctx: &Ctx<'_>, acc: &mut Vec<CodeAction>) {
    let Some((site, name)) = op_at_cursor(ctx) else { return };
    if name.contains([',', '=', ' ', '\t', '\n']) || site.data().operands.is_empty() {
        return;
    }
    let already = ctx
        .overrides
        .entries
        .iter()
        .any(|e| e.op_name == name && matches!(e.kind, OverrideKind::InsertMemReconfig(_)));
    if already {
        return;
    }
    let line = format!("insert-memreconfig={name}=0\n");
    let edit = match &ctx.config.new_override {
        NewOverrideTarget::InOverrides { offset } => {
            let offset = (*offset).min(ctx.overrides_text.len() as u32);
            let before = &ctx.overrides_text[..offset as usize];
            let sep = if before.is_empty() || before.ends_with('\n') { "" } else { "\n" };
            FileEdit {
                path: ctx.origin.to_owned(),
                create: false,
                edits: vec![TextEdit {
                    range: TextRange::empty(offset),
                    text: format!("{sep}{line}"),
                }],
            }
        }
        NewOverrideTarget::NewFile { path } => FileEdit {
            path: path.clone(),
            create: true,
            edits: vec![TextEdit { range: TextRange::empty(0), text: line }],
        },
    };
    acc.push(CodeAction {
        title: format!("Insert a reshard in front of operand 0 of `{name}`"),
        kind: CodeActionKind::Refactor,
        edits: vec![edit],
    });
}

fn pin_layout(
    ctx: &Ctx<'_>,
    acc: &mut Vec<CodeAction>,
    name: &str,
    layout: &ttnn_types::TtnnLayout,
    which: &str,
) {
    // tt-mlir splits override values on `,`, `=` and spaces, so such a name cannot be keyed.
    if name.contains([',', '=', ' ', '\t', '\n']) {
        return;
    }
    let Some(memory_layout) = layout.memory_layout else { return };
    let pinned = OutputLayoutOverride {
        grid: Some(layout.grid2d()),
        buffer: Some(layout.buffer),
        memory_layout: Some(memory_layout),
        page: Some(layout.page_layout()),
        dtype: layout.data_type(),
    };
    let entry_text = format!("{name}={}", pinned.to_params());
    let title = format!(
        "Pin the {which} layout ({}) of `{name}` as an override",
        sites::layout_short(layout)
    );
    let existing = ctx
        .overrides
        .entries
        .iter()
        .find(|e| e.op_name == name && matches!(e.kind, OverrideKind::OutputLayout(_)));
    let edit = match existing {
        Some(e) if e.range.slice(ctx.overrides_text) == entry_text => return,
        Some(e) => FileEdit {
            path: ctx.origin.to_owned(),
            create: false,
            edits: vec![TextEdit { range: e.range, text: entry_text }],
        },
        None => match &ctx.config.new_override {
            NewOverrideTarget::InOverrides { offset } => {
                let offset = (*offset).min(ctx.overrides_text.len() as u32);
                let before = &ctx.overrides_text[..offset as usize];
                let sep = if before.is_empty() || before.ends_with('\n') { "" } else { "\n" };
                FileEdit {
                    path: ctx.origin.to_owned(),
                    create: false,
                    edits: vec![TextEdit {
                        range: TextRange::empty(offset),
                        text: format!("{sep}override-output-layout={entry_text}\n"),
                    }],
                }
            }
            NewOverrideTarget::NewFile { path } => FileEdit {
                path: path.clone(),
                create: true,
                edits: vec![TextEdit {
                    range: TextRange::empty(0),
                    text: format!("override-output-layout={entry_text}\n"),
                }],
            },
        },
    };
    acc.push(CodeAction { title, kind: CodeActionKind::Refactor, edits: vec![edit] });
}

fn remove_override(ctx: &Ctx<'_>, acc: &mut Vec<CodeAction>) {
    let entries: Vec<&OverrideEntry> = match ctx.doc {
        ActionDocument::Overrides => ctx
            .overrides
            .entries
            .iter()
            .filter(|e| e.range.contains_inclusive(ctx.range.start))
            .collect(),
        ActionDocument::Ir(_) => {
            let Some((_, name)) = op_at_cursor(ctx) else { return };
            ctx.overrides.entries.iter().filter(|e| e.op_name == name).collect()
        }
    };
    for e in entries {
        let spelled = format!("{}={}", e.kind.option_name(), e.range.slice(ctx.overrides_text));
        acc.push(CodeAction {
            title: format!("Remove the override `{spelled}`"),
            kind: CodeActionKind::QuickFix,
            edits: vec![FileEdit {
                path: ctx.origin.to_owned(),
                create: false,
                edits: vec![removal(ctx.overrides_text, e.range)],
            }],
        });
    }
}

/// The edit deleting one `name=params` entry, keeping the option's other entries and the
/// file's other lines intact: `a=x,b=y` loses `b=y` and its comma; an option with only this
/// entry is deleted whole, and so is its line if nothing else is on it.
fn removal(text: &str, entry: TextRange) -> TextEdit {
    let bytes = text.as_bytes();
    let (s, e) = (entry.start as usize, (entry.end as usize).min(bytes.len()));
    let delete = |start: usize, end: usize| TextEdit {
        range: TextRange::new(start as u32, end as u32),
        text: String::new(),
    };
    if bytes.get(e) == Some(&b',') {
        return delete(s, e + 1);
    }
    if s > 0 && bytes[s - 1] == b',' {
        return delete(s - 1, e);
    }
    // The whole whitespace-delimited option `name=entry`.
    let mut ts = s;
    while ts > 0 && !bytes[ts - 1].is_ascii_whitespace() {
        ts -= 1;
    }
    let mut te = e;
    while te < bytes.len() && !bytes[te].is_ascii_whitespace() {
        te += 1;
    }
    let line_start = text[..ts].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[te..].find('\n').map_or(bytes.len(), |i| te + i);
    let rest_blank = text[line_start..ts].trim().is_empty() && text[te..line_end].trim().is_empty();
    if rest_blank {
        let end = if line_end < bytes.len() { line_end + 1 } else { line_end };
        return delete(line_start, end);
    }
    // Other options share the line: take one separating space with this one.
    if te < line_end {
        delete(ts, te + 1)
    } else {
        delete(ts.saturating_sub(1).max(line_start), te)
    }
}
