//! Operations: the generic form, the custom forms of the ops a TTNN file relies on (module,
//! func, return, call, `ttnn.d2m_subgraph`, `ttnn.tt_lang_op`, ttcore wrappers), regions,
//! blocks, and a skipping fallback for other dialects' custom syntax.

use super::{PResult, Parser, Recovered};
use crate::{
    TextRange,
    ast::{
        Block, BlockArg, BlockLabel, CallOp, CustomCallLike, D2mSubgraphOp, DeviceDecl, FuncArg,
        FuncOp, FuncResult, GenericOp, Ident, LoadCachedOp, ModuleOp, Op, OpBody, OpaqueOp, Region,
        RegionOp, ResultDef, ReturnOp, ValueUse,
    },
    lexer::TokenKind,
};

impl Parser<'_> {
    /// Parses one operation; on error, records it and skips to the next statement.
    pub(crate) fn op(&mut self) -> Op {
        let start = self.cur_start();
        let outer = std::mem::replace(&mut self.stmt, start);
        let op = self.op_inner();
        self.stmt = outer;
        op
    }

    fn op_inner(&mut self) -> Op {
        let start = self.cur_start();
        let start_pos = self.save();
        let results = match self.op_results() {
            Ok(r) => r,
            Err(Recovered) => {
                let name_range = self.cur_range();
                self.recover_statement(start_pos);
                return Op {
                    range: TextRange::new(start, self.prev_end()),
                    results: Vec::new(),
                    name: Ident { text: String::new(), range: name_range },
                    body: OpBody::Error,
                    loc: None,
                };
            }
        };
        let name_range = self.cur_range();
        let parsed = if results.is_empty() && !self.at_op_name() {
            Err(self.error_expected("an operation"))
        } else {
            self.op_after_results()
        };
        match parsed {
            Ok((name, body, loc)) => {
                Op { range: TextRange::new(start, self.prev_end()), results, name, body, loc }
            }
            Err(Recovered) => {
                self.recover_statement(start_pos);
                Op {
                    range: TextRange::new(start, self.prev_end()),
                    results,
                    name: Ident { text: String::new(), range: name_range },
                    body: OpBody::Error,
                    loc: None,
                }
            }
        }
    }

    fn at_op_name(&self) -> bool {
        self.at(TokenKind::String) || self.at_custom_op_name()
    }

    /// A custom-form op name: `dialect.op`, or one of the short names MLIR resolves through a
    /// default dialect (`return` and `call` inside functions, `module`). The same rule decides
    /// where recovery restarts (`at_statement_start`).
    ///
    /// Any other bare word used to be taken for another dialect's custom op and skipped
    /// opaquely, so stray words parsed without errors: `func.func @f() -> T attributes` put
    /// `attributes` on its own line as an "op", and a stray `loc("x")` became an op named `loc`.
    /// The printer then gave such words their own lines, where they parse differently (as the
    /// previous function's `attributes` clause, or the previous op's location), so the printed
    /// text no longer parsed.
    fn at_custom_op_name(&self) -> bool {
        self.at(TokenKind::BareId) && {
            let t = self.nth_text(0);
            t.contains('.') || matches!(t, "module" | "return" | "call")
        }
    }

    /// `%a, %b:2 =`; empty when the op has no results.
    fn op_results(&mut self) -> PResult<Vec<ResultDef>> {
        let mut results = Vec::new();
        if !self.at(TokenKind::ValueId) {
            return Ok(results);
        }
        loop {
            let start = self.cur_start();
            let name = self.ident();
            let mut count = 1;
            if self.eat(TokenKind::Colon).is_some() {
                let t = self.expect(TokenKind::Int)?;
                count = t.range.slice(self.text).parse().unwrap_or(1);
            }
            results.push(ResultDef { name, count, range: TextRange::new(start, self.prev_end()) });
            if self.eat(TokenKind::Comma).is_none() {
                break;
            }
            if !self.at(TokenKind::ValueId) {
                return Err(self.error_expected("a result name"));
            }
        }
        self.expect(TokenKind::Equal)?;
        Ok(results)
    }

    fn op_after_results(&mut self) -> PResult<(Ident, OpBody, Option<crate::ast::LocSpec>)> {
        let (name, body) = if self.at(TokenKind::String) {
            let t = self.bump();
            let text = crate::lexer::unescape_string(t.range.slice(self.text)).unwrap_or_default();
            (Ident { text, range: t.range }, OpBody::Generic(self.generic_op()?))
        } else if self.at_custom_op_name() {
            let name = self.ident();
            let body = match name.text.as_str() {
                "module" | "builtin.module" => OpBody::Module(self.module_op()?),
                "func.func" => OpBody::Func(self.func_op()?),
                "return" | "func.return" => OpBody::Return(self.return_op()?),
                "call" | "func.call" => OpBody::Call(self.call_op()?),
                "ttnn.d2m_subgraph" => OpBody::D2mSubgraph(self.d2m_subgraph_op()?),
                "ttnn.tt_lang_op" => OpBody::TtLang(self.custom_call_like()?),
                "ttcore.load_cached" => OpBody::LoadCached(self.load_cached_op()?),
                "ttcore.device_module" | "ttcore.cpu_module" => OpBody::RegionOp(self.region_op()?),
                "ttcore.device" if self.at(TokenKind::SymbolId) => {
                    OpBody::DeviceDecl(self.device_decl()?)
                }
                _ => OpBody::Opaque(self.opaque_op()),
            };
            (name, body)
        } else {
            return Err(self.error_expected("an operation name"));
        };
        let loc = self.trailing_loc()?;
        Ok((name, body, loc))
    }

    pub(crate) fn trailing_loc(&mut self) -> PResult<Option<crate::ast::LocSpec>> {
        if self.at_kw("loc") && self.nth(1) == Some(TokenKind::LParen) {
            Ok(Some(self.loc_spec()?))
        } else {
            Ok(None)
        }
    }

    fn value_use(&mut self) -> PResult<ValueUse> {
        if !self.at(TokenKind::ValueId) {
            return Err(self.error_expected("an SSA value"));
        }
        let start = self.cur_start();
        let adjacent_hash = self.adjacent(0) && self.nth(1) == Some(TokenKind::HashId);
        let name = self.ident();
        let mut index = None;
        if adjacent_hash {
            let digits = &self.nth_text(0)[1..];
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                let t = self.bump();
                match digits.parse() {
                    Ok(i) => index = Some(i),
                    Err(_) => self.error(
                        "invalid-result-number",
                        "result number is too large".to_owned(),
                        t.range,
                    ),
                }
            }
        }
        Ok(ValueUse { name, index, range: TextRange::new(start, self.prev_end()) })
    }

    /// A comma-separated list of value uses, possibly empty, stopping before `stop`.
    fn value_uses_until(&mut self, stop: TokenKind) -> PResult<Vec<ValueUse>> {
        let mut uses = Vec::new();
        if self.at(stop) {
            return Ok(uses);
        }
        loop {
            uses.push(self.value_use()?);
            if self.eat(TokenKind::Comma).is_none() {
                break;
            }
        }
        Ok(uses)
    }

    fn generic_op(&mut self) -> PResult<GenericOp> {
        self.expect(TokenKind::LParen)?;
        let operands = self.value_uses_until(TokenKind::RParen)?;
        self.expect(TokenKind::RParen)?;
        let mut successors = Vec::new();
        if self.eat(TokenKind::LBracket).is_some() {
            loop {
                if !self.at(TokenKind::CaretId) {
                    return Err(self.error_expected("a successor block"));
                }
                successors.push(self.ident());
                if self.eat(TokenKind::Comma).is_none() {
                    break;
                }
            }
            self.expect(TokenKind::RBracket)?;
        }
        let mut properties = None;
        if self.at(TokenKind::Less) && self.nth(1) == Some(TokenKind::LBrace) {
            self.bump();
            properties = Some(self.attr_dict()?);
            self.expect(TokenKind::Greater)?;
        }
        let mut regions = Vec::new();
        if self.at(TokenKind::LParen) && self.nth(1) == Some(TokenKind::LBrace) {
            self.bump();
            loop {
                regions.push(self.region()?);
                if self.eat(TokenKind::Comma).is_none() {
                    break;
                }
            }
            self.expect(TokenKind::RParen)?;
        }
        let attrs = if self.at(TokenKind::LBrace) { Some(self.attr_dict()?) } else { None };
        self.expect(TokenKind::Colon)?;
        let fn_type = Some(self.function_type()?);
        Ok(GenericOp { operands, successors, properties, regions, attrs, fn_type })
    }

    pub(crate) fn region(&mut self) -> PResult<Region> {
        self.enter_region()?;
        let r = self.region_inner();
        self.leave_region();
        r
    }

    fn region_inner(&mut self) -> PResult<Region> {
        let start = self.cur_start();
        self.expect(TokenKind::LBrace)?;
        let mut blocks = Vec::new();
        let mut block = Block { label: None, ops: Vec::new(), range: TextRange::empty(start) };
        let mut block_start = self.cur_start();
        loop {
            match self.nth(0) {
                None => {
                    let range = TextRange::new(start, start + 1);
                    self.error(
                        "unclosed-region",
                        "region is not closed with `}`".to_owned(),
                        range,
                    );
                    break;
                }
                Some(TokenKind::RBrace) => break,
                Some(TokenKind::CaretId) => {
                    if block.label.is_some() || !block.ops.is_empty() {
                        block.range = TextRange::new(block_start, self.prev_end());
                        blocks.push(std::mem::replace(
                            &mut block,
                            Block { label: None, ops: Vec::new(), range: TextRange::empty(0) },
                        ));
                    }
                    block_start = self.cur_start();
                    let label_pos = self.save();
                    match self.block_label() {
                        Ok(label) => block.label = Some(label),
                        Err(Recovered) => self.recover_statement(label_pos),
                    }
                }
                Some(_) => {
                    let before = self.pos;
                    let op = self.op();
                    block.ops.push(op);
                    if self.pos == before {
                        self.bump();
                    }
                }
            }
        }
        let end_before_brace = self.prev_end();
        if block.label.is_some() || !block.ops.is_empty() || blocks.is_empty() {
            block.range = TextRange::new(block_start, end_before_brace.max(block_start));
            blocks.push(block);
        }
        self.eat(TokenKind::RBrace);
        Ok(Region { blocks, range: TextRange::new(start, self.prev_end()) })
    }

    fn block_label(&mut self) -> PResult<BlockLabel> {
        let start = self.cur_start();
        let name = self.ident();
        let mut args = Vec::new();
        if self.eat(TokenKind::LParen).is_some() {
            if !self.at(TokenKind::RParen) {
                loop {
                    let arg_start = self.cur_start();
                    if !self.at(TokenKind::ValueId) {
                        return Err(self.error_expected("a block argument"));
                    }
                    let name = self.ident();
                    self.expect(TokenKind::Colon)?;
                    let ty = self.ty()?;
                    let loc = self.trailing_loc()?;
                    args.push(BlockArg {
                        name,
                        ty,
                        loc,
                        range: TextRange::new(arg_start, self.prev_end()),
                    });
                    if self.eat(TokenKind::Comma).is_none() {
                        break;
                    }
                }
            }
            self.expect(TokenKind::RParen)?;
        }
        self.expect(TokenKind::Colon)?;
        Ok(BlockLabel { name, args, range: TextRange::new(start, self.prev_end()) })
    }

    fn module_op(&mut self) -> PResult<ModuleOp> {
        let sym_name = if self.at(TokenKind::SymbolId) { Some(self.ident()) } else { None };
        let attrs =
            if self.eat_kw("attributes").is_some() { Some(self.attr_dict()?) } else { None };
        let body = self.region()?;
        Ok(ModuleOp { sym_name, attrs, body })
    }

    fn func_op(&mut self) -> PResult<FuncOp> {
        let visibility = if self.at(TokenKind::BareId)
            && matches!(self.nth_text(0), "private" | "public" | "nested")
        {
            Some(self.ident())
        } else {
            None
        };
        if !self.at(TokenKind::SymbolId) {
            return Err(self.error_expected("a function name"));
        }
        let sym_name = self.ident();
        self.expect(TokenKind::LParen)?;
        let mut args = Vec::new();
        if !self.at(TokenKind::RParen) {
            loop {
                let start = self.cur_start();
                let name = if self.at(TokenKind::ValueId) {
                    let n = self.ident();
                    self.expect(TokenKind::Colon)?;
                    Some(n)
                } else {
                    None
                };
                let ty = self.ty()?;
                let attrs = if self.at(TokenKind::LBrace) { Some(self.attr_dict()?) } else { None };
                let loc = self.trailing_loc()?;
                args.push(FuncArg {
                    name,
                    ty,
                    attrs,
                    loc,
                    range: TextRange::new(start, self.prev_end()),
                });
                if self.eat(TokenKind::Comma).is_none() {
                    break;
                }
            }
        }
        self.expect(TokenKind::RParen)?;
        let mut results = Vec::new();
        let mut results_parenthesized = false;
        if self.eat(TokenKind::Arrow).is_some() {
            if self.at(TokenKind::LParen) && !self.paren_starts_function_type() {
                results_parenthesized = true;
                self.bump();
                if !self.at(TokenKind::RParen) {
                    loop {
                        let start = self.cur_start();
                        let ty = self.ty()?;
                        let attrs =
                            if self.at(TokenKind::LBrace) { Some(self.attr_dict()?) } else { None };
                        results.push(FuncResult {
                            ty,
                            attrs,
                            range: TextRange::new(start, self.prev_end()),
                        });
                        if self.eat(TokenKind::Comma).is_none() {
                            break;
                        }
                    }
                }
                self.expect(TokenKind::RParen)?;
            } else {
                let start = self.cur_start();
                let ty = self.ty()?;
                results.push(FuncResult {
                    ty,
                    attrs: None,
                    range: TextRange::new(start, self.prev_end()),
                });
            }
        }
        let attrs =
            if self.eat_kw("attributes").is_some() { Some(self.attr_dict()?) } else { None };
        let body = if self.at(TokenKind::LBrace) { Some(self.region()?) } else { None };
        Ok(FuncOp { visibility, sym_name, args, results, results_parenthesized, attrs, body })
    }

    /// After `->`, a `(` may open a result list or a function type used as the single result
    /// (`-> (i32) -> i32`). The latter is followed by `->` after the matching `)`.
    fn paren_starts_function_type(&self) -> bool {
        let mut depth = 0usize;
        let mut n = 0;
        while let Some(kind) = self.nth(n) {
            match kind {
                TokenKind::LParen => depth += 1,
                TokenKind::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        return self.nth(n + 1) == Some(TokenKind::Arrow);
                    }
                }
                _ => {}
            }
            n += 1;
        }
        false
    }

    fn return_op(&mut self) -> PResult<ReturnOp> {
        let mut operands = Vec::new();
        let mut types = Vec::new();
        if self.at(TokenKind::ValueId) {
            operands = self.value_uses_until(TokenKind::Colon)?;
            self.expect(TokenKind::Colon)?;
            loop {
                types.push(self.ty()?);
                if self.eat(TokenKind::Comma).is_none() {
                    break;
                }
            }
        }
        Ok(ReturnOp { operands, types })
    }

    fn call_op(&mut self) -> PResult<CallOp> {
        if !self.at(TokenKind::SymbolId) {
            return Err(self.error_expected("a callee symbol"));
        }
        let callee = self.ident();
        self.expect(TokenKind::LParen)?;
        let operands = self.value_uses_until(TokenKind::RParen)?;
        self.expect(TokenKind::RParen)?;
        if self.at(TokenKind::LBrace) {
            self.attr_dict()?;
        }
        self.expect(TokenKind::Colon)?;
        let fn_type = Some(self.function_type()?);
        Ok(CallOp { callee, operands, fn_type })
    }

    fn d2m_subgraph_op(&mut self) -> PResult<D2mSubgraphOp> {
        if !self.at(TokenKind::SymbolId) {
            return Err(self.error_expected("the subgraph function symbol"));
        }
        let callee = self.ident();
        let attrs = if self.at(TokenKind::LBrace) { Some(self.attr_dict()?) } else { None };
        self.expect_kw("ins")?;
        let (ins, in_types) = self.uses_with_types()?;
        self.expect_kw("outs")?;
        let (outs, out_types) = self.uses_with_types()?;
        let mut result_types = Vec::new();
        if self.eat(TokenKind::Colon).is_some() {
            loop {
                result_types.push(self.ty()?);
                if self.eat(TokenKind::Comma).is_none() {
                    break;
                }
            }
        }
        Ok(D2mSubgraphOp { callee, attrs, ins, in_types, outs, out_types, result_types })
    }

    /// `(%a, %b : T, T)` or `()`.
    fn uses_with_types(&mut self) -> PResult<(Vec<ValueUse>, Vec<crate::ast::Type>)> {
        self.expect(TokenKind::LParen)?;
        let mut types = Vec::new();
        let uses = self.value_uses_until(TokenKind::RParen)?;
        if !uses.is_empty() {
            self.expect(TokenKind::Colon)?;
            loop {
                types.push(self.ty()?);
                if self.eat(TokenKind::Comma).is_none() {
                    break;
                }
            }
        }
        self.expect(TokenKind::RParen)?;
        Ok((uses, types))
    }

    fn custom_call_like(&mut self) -> PResult<CustomCallLike> {
        self.expect(TokenKind::LParen)?;
        let operands = self.value_uses_until(TokenKind::RParen)?;
        self.expect(TokenKind::RParen)?;
        let attrs = if self.at(TokenKind::LBrace) { Some(self.attr_dict()?) } else { None };
        self.expect(TokenKind::Colon)?;
        let fn_type = Some(self.function_type()?);
        Ok(CustomCallLike { operands, attrs, fn_type })
    }

    fn load_cached_op(&mut self) -> PResult<LoadCachedOp> {
        self.expect(TokenKind::LParen)?;
        if !self.at(TokenKind::SymbolId) {
            return Err(self.error_expected("the const-eval function symbol"));
        }
        let callee = self.ident();
        self.expect(TokenKind::Comma)?;
        self.expect(TokenKind::LBracket)?;
        let operands = self.value_uses_until(TokenKind::RBracket)?;
        self.expect(TokenKind::RBracket)?;
        self.expect(TokenKind::RParen)?;
        self.expect(TokenKind::Colon)?;
        let fn_type = Some(self.function_type()?);
        Ok(LoadCachedOp { callee, operands, fn_type })
    }

    fn region_op(&mut self) -> PResult<RegionOp> {
        let attrs =
            if self.eat_kw("attributes").is_some() { Some(self.attr_dict()?) } else { None };
        let body = self.region()?;
        Ok(RegionOp { attrs, body })
    }

    fn device_decl(&mut self) -> PResult<DeviceDecl> {
        let sym_name = self.ident();
        self.expect(TokenKind::Equal)?;
        let value = self.attr()?;
        Ok(DeviceDecl { sym_name, value })
    }

    /// Skips another dialect's custom syntax by balanced tokens up to the next statement,
    /// collecting the values it uses. A trailing `loc(...)` at depth 0 is left for the caller.
    fn opaque_op(&mut self) -> OpaqueOp {
        let start = self.cur_start();
        let mut end = self.prev_end();
        let mut uses = Vec::new();
        let mut depth = 0u32;
        // Values inside the op's own regions are defined and used there; only values outside
        // braces are uses of the enclosing scope.
        let mut braces = 0u32;
        while let Some(kind) = self.nth(0) {
            if depth == 0 {
                if self.newline_before() && self.at_statement_start() {
                    break;
                }
                if kind == TokenKind::RBrace {
                    break;
                }
                if self.at_kw("loc")
                    && self.nth(1) == Some(TokenKind::LParen)
                    && self.loc_ends_statement()
                {
                    break;
                }
            }
            match kind {
                TokenKind::LParen | TokenKind::LBracket => depth += 1,
                TokenKind::LBrace => {
                    depth += 1;
                    braces += 1;
                }
                TokenKind::RParen | TokenKind::RBracket => depth = depth.saturating_sub(1),
                TokenKind::RBrace => {
                    depth = depth.saturating_sub(1);
                    braces = braces.saturating_sub(1);
                }
                TokenKind::ValueId if braces == 0 => {
                    if let Ok(u) = self.value_use() {
                        end = u.range.end;
                        uses.push(u);
                        continue;
                    }
                }
                _ => {}
            }
            end = self.bump().range.end;
        }
        OpaqueOp { rest: TextRange::new(start, end.max(start)), uses }
    }

    /// True if the `loc(` at the cursor closes on this line (it is the op's trailing loc).
    fn loc_ends_statement(&self) -> bool {
        let mut depth = 0usize;
        let mut n = 1;
        while let Some(kind) = self.nth(n) {
            match kind {
                TokenKind::LParen => depth += 1,
                TokenKind::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        let Some(next) = self.nth_token(n + 1) else { return true };
                        let Some(close) = self.nth_token(n) else { return true };
                        let between =
                            self.text.get(close.range.end as usize..next.range.start as usize);
                        return between.is_some_and(|s| s.contains('\n'))
                            || next.kind == TokenKind::RBrace;
                    }
                }
                _ => {}
            }
            n += 1;
        }
        true
    }
}
