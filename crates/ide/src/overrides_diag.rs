//! Diagnostics of the overrides text, checked against the open IR files.
//!
//! On the overrides text: its syntax errors and warnings, entries naming no op
//! (`unknown-override-target`), full layouts the op model rejects or that cannot be built
//! (`rejected-override`), overrides on ops whose layout is fixed (`ineffective-override`),
//! and one note per op an entry applies to (`override-applied`). On the IR files: a note at
//! each op an override applies to, so the connection is visible from both sides.

use std::{collections::BTreeMap, fmt::Write as _, sync::Arc};

use base_db::{OverrideKind, OverridesInput, SourceFile};
use ir::Severity;
use layout::OverrideUse;

use crate::{Analysis, Cancellable, Diagnostic, RootDatabase, sites};

/// Diagnostics on both sides of the overrides.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OverrideDiagnostics {
    /// Where the overrides text came from (`OverridesInput::origin`).
    pub origin: String,
    /// Diagnostics on the overrides text; ranges are offsets into it.
    pub on_overrides: Vec<Diagnostic>,
    /// Diagnostics on IR files, by path; ranges are offsets into that file.
    pub on_files: Vec<(String, Diagnostic)>,
}

impl Analysis {
    /// Checks the overrides against `files`, the IR files that are open.
    pub fn override_diagnostics(&self, files: &[SourceFile]) -> Cancellable<OverrideDiagnostics> {
        let files = files.to_vec();
        self.with_db(move |db| override_diagnostics(db, &files))
    }
}

/// Every op of `files` with a `loc("name")` in `names`, or written with one (`loc("op_1"("op"))`),
/// by name, in file order.
pub(crate) fn ops_by_loc_name(
    db: &RootDatabase,
    files: &[SourceFile],
    wanted: impl Fn(&str) -> bool,
) -> BTreeMap<String, Vec<(SourceFile, sites::OpSite)>> {
    let mut out: BTreeMap<String, Vec<(SourceFile, sites::OpSite)>> = BTreeMap::new();
    for &file in files {
        for (func, body, sm) in sites::funcs(db, file) {
            // Sites only for the ops asked for: the server checks the overrides after every
            // edit, and making one for each of 10k ops cost 5 ms of it.
            let names = ir::func_loc_names(db, func);
            // In body order: the names come by key.
            // An op answers to its own name and, unless that name is wanted itself (its own
            // override wins, `layout::op_overrides`), to the name it was written with.
            let mut found: Vec<(usize, ir::Name)> = names
                .locs()
                .filter_map(|(key, loc)| {
                    if wanted(loc.name.as_str()) {
                        return Some((key, loc.name));
                    }
                    loc.written_as.filter(|w| wanted(w.as_str())).map(|w| (key, w))
                })
                .filter_map(|(key, name)| Some((body.index_of(key)? as usize, name)))
                .filter(|&(idx, _)| idx < body.ops.len() && idx < sm.op_ranges.len())
                .collect();
            found.sort_unstable_by_key(|&(idx, _)| idx);
            let mut ops = None;
            for (idx, name) in found {
                let ops = ops.get_or_insert_with(|| ir::func_ops(db, func));
                let Some(&op) = ops.get(idx) else { continue };
                let site = sites::OpSite { idx, op, body: Arc::clone(&body), sm: Arc::clone(&sm) };
                out.entry(name.as_str().to_owned()).or_default().push((file, site));
            }
        }
    }
    out
}

/// `ttnn.matmul %3 in @main (m.mlir:12)`.
pub(crate) fn describe_op(db: &RootDatabase, file: SourceFile, site: &sites::OpSite) -> String {
    let data = site.data();
    let mut s = format!("`{}`", data.name);
    if data.key.starts_with('%') {
        let _ = write!(s, " {}", data.key);
    }
    let line = sites::line_of(file.text(db), site.sm.op_ranges[site.idx].start);
    let _ = write!(s, " in @{} ({}:{line})", site.body.name, sites::file_name(file.path(db)));
    s
}

fn override_diagnostics(db: &RootDatabase, files: &[SourceFile]) -> OverrideDiagnostics {
    let _p = tracing::debug_span!("override_diagnostics").entered();
    let input = OverridesInput::get(db);
    let origin = input.origin(db).clone();
    let otext = input.text(db).clone();
    let parsed = layout::override_file(db);
    let mut out = OverrideDiagnostics { origin: origin.clone(), ..OverrideDiagnostics::default() };
    for e in &parsed.errors {
        let severity = if e.is_warning { Severity::Warning } else { Severity::Error };
        out.on_overrides.push(Diagnostic {
            range: e.range,
            severity,
            code: e.code,
            message: e.message.clone(),
        });
    }
    // A set, not a scan of the entries per op: 20k entries over 10k ops was quadratic.
    let names: std::collections::BTreeSet<&str> =
        parsed.entries.iter().map(|e| e.op_name.as_str()).collect();
    let by_name = ops_by_loc_name(db, files, |n| names.contains(n));
    for entry in &parsed.entries {
        let Some(targets) = by_name.get(&entry.op_name) else {
            out.on_overrides.push(Diagnostic {
                range: entry.name_range,
                severity: Severity::Error,
                code: "unknown-override-target",
                message: format!(
                    "no op in the open files has `loc(\"{}\")`; the override applies to nothing",
                    entry.op_name
                ),
            });
            continue;
        };
        let spelled = format!("{}={}", entry.kind.option_name(), entry.range.slice(&otext));
        let line = sites::line_of(&otext, entry.range.start);
        for (file, site) in targets {
            let what = describe_op(db, *file, site);
            out.on_overrides.push(Diagnostic {
                range: entry.range,
                severity: Severity::Info,
                code: "override-applied",
                message: format!("applies to {what}"),
            });
            out.on_files.push((
                file.path(db).clone(),
                Diagnostic {
                    range: site.sm.op_name_ranges[site.idx],
                    severity: Severity::Info,
                    code: "override-applied",
                    message: format!(
                        "override `{spelled}` applies ({}:{line})",
                        sites::file_name(&origin)
                    ),
                },
            ));
            if let OverrideKind::OutputLayout(_) = entry.kind {
                let legal = layout::legal_op_layouts(db, site.op);
                let problem = match &legal.override_use {
                    Some(OverrideUse::Full { rejection: Some(reason), .. }) => Some((
                        "rejected-override",
                        format!(
                            "the op model rejects this layout for {what}: {reason} (it is used anyway, as tt-mlir does)"
                        ),
                    )),
                    Some(OverrideUse::Invalid { reason }) => Some((
                        "rejected-override",
                        format!(
                            "this layout cannot be built for {what}: {reason}; the override is ignored"
                        ),
                    )),
                    Some(OverrideUse::NoEffect) => Some((
                        "ineffective-override",
                        format!("the output layout of {what} is fixed; the override has no effect"),
                    )),
                    _ => None,
                };
                if let Some((code, message)) = problem {
                    out.on_overrides.push(Diagnostic {
                        range: entry.range,
                        severity: Severity::Warning,
                        code,
                        message,
                    });
                }
            }
        }
    }
    cap(&mut out.on_overrides, |d| d.range);
    out.on_overrides.sort_by(|a, b| {
        (a.range.start, a.range.end, a.code, &a.message).cmp(&(
            b.range.start,
            b.range.end,
            b.code,
            &b.message,
        ))
    });
    out.on_files.sort_by(|(pa, a), (pb, b)| {
        (pa, a.range.start, a.code, &a.message).cmp(&(pb, b.range.start, b.code, &b.message))
    });
    // Each note on a file is the counterpart of one on the overrides; past the cap the
    // overrides side says how many were left out.
    out.on_files.truncate(NOTES_CAP);
    out
}

/// At most this many notes (`override-applied`) and this many errors and warnings on the
/// overrides text: a sidecar of millions of entries must not make millions of diagnostics
/// (the parser caps its own errors the same way, `base_db::MAX_OVERRIDE_ERRORS`).
const NOTES_CAP: usize = base_db::MAX_OVERRIDE_ERRORS;

/// Keeps the first [`NOTES_CAP`] notes and the first [`NOTES_CAP`] errors and warnings of
/// `diags` (in the order they were made), and says how many of each were left out.
fn cap(diags: &mut Vec<Diagnostic>, range: impl Fn(&Diagnostic) -> syntax::TextRange) {
    let (mut notes, mut problems) = (0usize, 0usize);
    let (mut dropped_notes, mut dropped_problems) = (0usize, 0usize);
    let mut last = None;
    diags.retain(|d| {
        let (count, dropped) = if d.severity == Severity::Info {
            (&mut notes, &mut dropped_notes)
        } else {
            (&mut problems, &mut dropped_problems)
        };
        *count += 1;
        let keep = *count <= NOTES_CAP;
        if !keep {
            *dropped += 1;
            last = Some(range(d));
        }
        keep
    });
    if let Some(range) = last {
        diags.push(Diagnostic {
            range,
            severity: Severity::Warning,
            code: "too-many-override-diagnostics",
            message: format!(
                "{dropped_problems} more errors and warnings and {dropped_notes} more notes on \
                 the overrides are not shown (the first {NOTES_CAP} of each are)"
            ),
        });
    }
}
