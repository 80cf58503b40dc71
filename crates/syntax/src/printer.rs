//! Prints a parse in tt-mlir's style.
//!
//! Layout: attribute and type aliases first, then the ops, then location aliases, then any
//! resource section. Ops print in MLIR's generic form, except `module`, `func.func`,
//! `return` and `call`, which tt-mlir prints in their custom forms (MLIR registers those
//! dialects). Other dialects' custom syntax that the parser skipped is reproduced verbatim.
//!
//! Attribute, type and location spellings are written token by token from the source with
//! whitespace normalized. MLIR keeps unregistered dialect attributes as raw text, so changing
//! any of their tokens would change the program; copying them guarantees it does not.

use std::fmt::Write as _;

use crate::{
    Parse, TextRange,
    ast::{
        AttrDict, Block, Chunk, FuncOp, FunctionType, Item, LocSpec, Op, OpBody, Region, Type,
        ValueUse,
    },
    lexer::{Token, escape_string},
};

/// Prints the whole file; chunks are separated by `// -----` lines.
#[must_use]
pub fn print(text: &str, parse: &Parse) -> String {
    print_with(text, parse, &mut NoHook)
}

/// Lets a caller replace how functions print (the optimizer's rewriter does).
pub trait PrintHook {
    /// Called for every `func.func`; returning `true` means the hook wrote the op instead
    /// (the whole op, already indented, ending with a newline) to `out`. A hook that returns
    /// `false` must leave `out` as it was.
    fn func(
        &mut self,
        chunk: usize,
        op: &Op,
        func: &FuncOp,
        indent: usize,
        out: &mut String,
    ) -> bool;
    /// Alias definitions to add at the top of a chunk, after its own (each line ending with a
    /// newline). Called after the chunk's ops were printed, so it sees what they used.
    fn extra_aliases(&mut self, chunk: usize) -> String;
}

struct NoHook;

impl PrintHook for NoHook {
    fn func(&mut self, _: usize, _: &Op, _: &FuncOp, _: usize, _: &mut String) -> bool {
        false
    }

    fn extra_aliases(&mut self, _: usize) -> String {
        String::new()
    }
}

/// Prints the whole file, letting `hook` replace functions.
pub fn print_with(text: &str, parse: &Parse, hook: &mut dyn PrintHook) -> String {
    let mut p = Printer {
        text,
        tokens: parse.tokens(),
        out: String::with_capacity(text.len()),
        hook,
        chunk: 0,
    };
    for (i, chunk) in parse.file().chunks.iter().enumerate() {
        if i > 0 {
            p.out.push_str("\n// -----\n");
        }
        p.chunk = i;
        p.chunk(chunk);
    }
    p.out
}

/// The normalized text of one type, attribute or location range: tokens with whitespace and
/// comments collapsed to one space.
#[must_use]
pub fn range_text(text: &str, parse: &Parse, range: TextRange) -> String {
    let mut out = String::new();
    write_range(&mut out, text, parse.tokens(), range);
    out
}

/// Writes the tokens of `range` with whitespace runs and comments collapsed to one space.
pub(crate) fn write_range(out: &mut String, text: &str, tokens: &[Token], range: TextRange) {
    let mut i = tokens.partition_point(|t| t.range.end <= range.start);
    let mut pending_space = false;
    let mut emitted = false;
    while let Some(t) = tokens.get(i) {
        if t.range.start >= range.end {
            break;
        }
        if t.kind.is_trivia() {
            pending_space = emitted;
        } else {
            if pending_space {
                out.push(' ');
            }
            let start = t.range.start.max(range.start);
            let end = t.range.end.min(range.end);
            out.push_str(TextRange::new(start, end).slice(text));
            pending_space = false;
            emitted = true;
        }
        i += 1;
    }
}

struct Printer<'a> {
    text: &'a str,
    tokens: &'a [Token],
    out: String,
    hook: &'a mut dyn PrintHook,
    chunk: usize,
}

impl Printer<'_> {
    fn range(&mut self, range: TextRange) {
        write_range(&mut self.out, self.text, self.tokens, range);
    }

    fn indent(&mut self, level: usize) {
        for _ in 0..level {
            self.out.push_str("  ");
        }
    }

    fn chunk(&mut self, chunk: &Chunk) {
        // Ops print first: a hook may add aliases for what they use, and aliases go first, so
        // they are inserted in front of the ops afterwards (one move of the ops' text).
        let start = self.out.len();
        for item in &chunk.items {
            match item {
                Item::Op(op) => self.op(op, 0),
                Item::Error(range) => {
                    self.range(*range);
                    self.out.push('\n');
                }
                _ => {}
            }
        }
        let ops_end = self.out.len();
        for item in &chunk.items {
            match item {
                Item::AttrAlias(a) => {
                    self.out.push_str(&a.name.text);
                    self.out.push_str(" = ");
                    self.range(a.value.range);
                    self.out.push('\n');
                }
                Item::TypeAlias(a) => {
                    self.out.push_str(&a.name.text);
                    self.out.push_str(" = ");
                    self.range(a.value.range);
                    self.out.push('\n');
                }
                _ => {}
            }
        }
        let extra = self.hook.extra_aliases(self.chunk);
        self.out.push_str(&extra);
        let aliases = self.out.split_off(ops_end);
        self.out.insert_str(start, &aliases);
        for item in &chunk.items {
            if let Item::LocAlias(a) = item {
                self.range(a.range);
                self.out.push('\n');
            }
        }
        for item in &chunk.items {
            if let Item::Resources(range) = item {
                self.range(*range);
                self.out.push('\n');
            }
        }
    }

    fn uses(&mut self, uses: &[ValueUse]) {
        for (i, u) in uses.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.out.push_str(&u.name.text);
            if let Some(idx) = u.index {
                let _ = write!(self.out, "#{idx}");
            }
        }
    }

    fn types(&mut self, types: &[Type]) {
        for (i, t) in types.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.range(t.range);
        }
    }

    fn fn_type(&mut self, f: &FunctionType) {
        self.out.push('(');
        self.types(&f.inputs);
        self.out.push_str(") -> ");
        self.result_types(&f.results, f.results_parenthesized);
    }

    fn result_types(&mut self, results: &[Type], parenthesized: bool) {
        let single_plain = results.len() == 1
            && !parenthesized
            && !matches!(results[0].kind, crate::ast::TypeKind::Function(_));
        if single_plain {
            self.range(results[0].range);
        } else {
            self.out.push('(');
            self.types(results);
            self.out.push(')');
        }
    }

    fn dict(&mut self, d: &AttrDict) {
        self.out.push('{');
        for (i, e) in d.entries.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.key(&e.key.text);
            if let Some(v) = &e.value {
                self.out.push_str(" = ");
                self.range(v.range);
            }
        }
        self.out.push('}');
    }

    /// Writes a dictionary key, quoting it when it is not a bare identifier.
    fn key(&mut self, key: &str) {
        let bare = key.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.'));
        if bare {
            self.out.push_str(key);
        } else {
            self.out.push_str(&escape_string(key));
        }
    }

    fn loc(&mut self, loc: Option<&LocSpec>) {
        if let Some(loc) = loc {
            self.out.push(' ');
            self.range(loc.range);
        }
    }

    fn op(&mut self, op: &Op, level: usize) {
        if let OpBody::Func(f) = &op.body
            && self.hook.func(self.chunk, op, f, level, &mut self.out)
        {
            return;
        }
        self.indent(level);
        if !op.results.is_empty() {
            for (i, r) in op.results.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.out.push_str(&r.name.text);
                if r.count != 1 {
                    let _ = write!(self.out, ":{}", r.count);
                }
            }
            self.out.push_str(" = ");
        }
        match &op.body {
            OpBody::Generic(g) => {
                self.out.push_str(&escape_string(&op.name.text));
                self.out.push('(');
                self.uses(&g.operands);
                self.out.push(')');
                if !g.successors.is_empty() {
                    self.out.push('[');
                    for (i, s) in g.successors.iter().enumerate() {
                        if i > 0 {
                            self.out.push_str(", ");
                        }
                        self.out.push_str(&s.text);
                    }
                    self.out.push(']');
                }
                if let Some(props) = &g.properties {
                    self.out.push_str(" <");
                    self.dict(props);
                    self.out.push('>');
                }
                if !g.regions.is_empty() {
                    self.out.push_str(" (");
                    for (i, r) in g.regions.iter().enumerate() {
                        if i > 0 {
                            self.out.push_str(", ");
                        }
                        self.region(r, level);
                    }
                    self.out.push(')');
                }
                if let Some(attrs) = &g.attrs {
                    self.out.push(' ');
                    self.dict(attrs);
                }
                if let Some(f) = &g.fn_type {
                    self.out.push_str(" : ");
                    self.fn_type(f);
                }
            }
            OpBody::Module(m) => {
                self.out.push_str(&op.name.text);
                if let Some(name) = &m.sym_name {
                    self.out.push(' ');
                    self.out.push_str(&name.text);
                }
                if let Some(attrs) = &m.attrs {
                    self.out.push_str(" attributes ");
                    self.dict(attrs);
                }
                self.out.push(' ');
                self.region(&m.body, level);
            }
            OpBody::Func(f) => self.func(&op.name.text, f, level),
            OpBody::Return(r) => {
                self.out.push_str(&op.name.text);
                if !r.operands.is_empty() {
                    self.out.push(' ');
                    self.uses(&r.operands);
                    self.out.push_str(" : ");
                    self.types(&r.types);
                }
            }
            OpBody::Call(c) => {
                self.out.push_str(&op.name.text);
                self.out.push(' ');
                self.out.push_str(&c.callee.text);
                self.out.push('(');
                self.uses(&c.operands);
                self.out.push(')');
                if let Some(f) = &c.fn_type {
                    self.out.push_str(" : ");
                    self.fn_type(f);
                }
            }
            OpBody::D2mSubgraph(d) => {
                // Generic form: inputs then outputs as one operand list, told apart by
                // `operandSegmentSizes`, with the callee as the `d2m_func` property.
                self.out.push_str("\"ttnn.d2m_subgraph\"(");
                let all: Vec<ValueUse> = d.ins.iter().chain(&d.outs).cloned().collect();
                self.uses(&all);
                let _ = write!(
                    self.out,
                    ") <{{d2m_func = {}, operandSegmentSizes = array<i32: {}, {}>}}>",
                    d.callee.text,
                    d.ins.len(),
                    d.outs.len()
                );
                if let Some(attrs) = &d.attrs {
                    self.out.push(' ');
                    self.dict(attrs);
                }
                self.out.push_str(" : (");
                let all: Vec<Type> = d.in_types.iter().chain(&d.out_types).cloned().collect();
                self.types(&all);
                self.out.push_str(") -> ");
                self.result_types(&d.result_types, d.result_types.len() != 1);
            }
            OpBody::TtLang(c) => {
                self.out.push_str(&escape_string(&op.name.text));
                self.out.push('(');
                self.uses(&c.operands);
                self.out.push(')');
                if let Some(attrs) = &c.attrs {
                    self.out.push(' ');
                    self.dict(attrs);
                }
                if let Some(f) = &c.fn_type {
                    self.out.push_str(" : ");
                    self.fn_type(f);
                }
            }
            OpBody::LoadCached(l) => {
                self.out.push_str("\"ttcore.load_cached\"(");
                self.uses(&l.operands);
                let _ = write!(self.out, ") <{{callee = {}}}>", l.callee.text);
                if let Some(f) = &l.fn_type {
                    self.out.push_str(" : ");
                    self.fn_type(f);
                }
            }
            OpBody::RegionOp(r) => {
                self.out.push_str(&escape_string(&op.name.text));
                self.out.push_str("() (");
                self.region(&r.body, level);
                self.out.push(')');
                if let Some(attrs) = &r.attrs {
                    self.out.push(' ');
                    self.dict(attrs);
                }
                self.out.push_str(" : () -> ()");
            }
            OpBody::DeviceDecl(d) => {
                self.out.push_str("\"ttcore.device\"() <{device = ");
                if matches!(d.value.kind, crate::ast::AttrKind::Stripped(_)) {
                    self.out.push_str("#ttcore.device");
                }
                self.range(d.value.range);
                let sym = d.sym_name.text.trim_start_matches('@');
                let sym = crate::lexer::unescape_string(sym).unwrap_or_else(|| sym.to_owned());
                let _ = write!(self.out, ", sym_name = {}}}> : () -> ()", escape_string(&sym));
            }
            OpBody::Opaque(o) => {
                self.out.push_str(&op.name.text);
                if !o.rest.is_empty() {
                    self.out.push(' ');
                    self.opaque_rest(o.rest, level);
                }
            }
            OpBody::Error => {
                self.range(op.range);
                self.out.push('\n');
                return;
            }
        }
        self.loc(op.loc.as_ref());
        self.out.push('\n');
    }

    /// Verbatim custom syntax. Multi-line bodies (regions of other dialects) keep their line
    /// structure so the result stays readable; each line is re-indented.
    fn opaque_rest(&mut self, range: TextRange, level: usize) {
        let raw = range.slice(self.text);
        if !raw.contains('\n') {
            self.range(range);
            return;
        }
        let mut first = true;
        let mut offset = range.start;
        for line in raw.split('\n') {
            let line_range = TextRange::new(offset, offset + line.len() as u32);
            offset += line.len() as u32 + 1;
            let mut normalized = String::new();
            write_range(&mut normalized, self.text, self.tokens, line_range);
            if normalized.is_empty() {
                continue;
            }
            if !first {
                self.out.push('\n');
                let extra = usize::from(!normalized.starts_with('}'));
                self.indent(level + extra);
            }
            self.out.push_str(&normalized);
            first = false;
        }
    }

    fn func(&mut self, keyword: &str, f: &FuncOp, level: usize) {
        self.out.push_str(keyword);
        if let Some(v) = &f.visibility {
            self.out.push(' ');
            self.out.push_str(&v.text);
        }
        self.out.push(' ');
        self.out.push_str(&f.sym_name.text);
        self.out.push('(');
        for (i, a) in f.args.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            if let Some(name) = &a.name {
                self.out.push_str(&name.text);
                self.out.push_str(": ");
            }
            self.range(a.ty.range);
            if let Some(attrs) = &a.attrs {
                self.out.push(' ');
                self.dict(attrs);
            }
            self.loc(a.loc.as_ref());
        }
        self.out.push(')');
        if !f.results.is_empty() || f.results_parenthesized {
            self.out.push_str(" -> ");
            let needs_parens = f.results_parenthesized
                || f.results.len() != 1
                || f.results.iter().any(|r| r.attrs.is_some());
            if needs_parens {
                self.out.push('(');
            }
            for (i, r) in f.results.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.range(r.ty.range);
                if let Some(attrs) = &r.attrs {
                    self.out.push(' ');
                    self.dict(attrs);
                }
            }
            if needs_parens {
                self.out.push(')');
            }
        }
        if let Some(attrs) = &f.attrs {
            self.out.push_str(" attributes ");
            self.dict(attrs);
        }
        if let Some(body) = &f.body {
            self.out.push(' ');
            self.region(body, level);
        }
    }

    fn region(&mut self, r: &Region, level: usize) {
        self.out.push_str("{\n");
        for block in &r.blocks {
            self.block(block, level + 1);
        }
        self.indent(level);
        self.out.push('}');
    }

    fn block(&mut self, b: &Block, level: usize) {
        if let Some(label) = &b.label {
            self.indent(level.saturating_sub(1));
            self.out.push_str(&label.name.text);
            if !label.args.is_empty() {
                self.out.push('(');
                for (i, a) in label.args.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.out.push_str(&a.name.text);
                    self.out.push_str(": ");
                    self.range(a.ty.range);
                    self.loc(a.loc.as_ref());
                }
                self.out.push(')');
            }
            self.out.push_str(":\n");
        }
        for op in &b.ops {
            self.op(op, level);
        }
    }
}
