//! Attributes, types and locations.

use super::{PResult, Parser, Recovered};
use crate::{
    TextRange,
    ast::{
        Attr, AttrDict, AttrEntry, AttrKind, Body, Dim, FunctionType, Ident, LocKind, LocSpec,
        Location, Type, TypeKind,
    },
    dims::split_dims,
    lexer::{TokenKind, unescape_string},
};

/// Builtin type keywords that are not scalar integers (`i32`, `si8`, `ui16` are matched by
/// shape).
const BUILTIN_TYPE_KEYWORDS: &[&str] = &[
    "f16",
    "bf16",
    "f32",
    "f64",
    "f80",
    "f128",
    "tf32",
    "index",
    "none",
    "f8E4M3FN",
    "f8E5M2",
    "f8E4M3FNUZ",
    "f8E5M2FNUZ",
    "f8E4M3B11FNUZ",
    "f8E4M3",
    "f8E3M4",
    "f6E2M3FN",
    "f6E3M2FN",
    "f4E2M1FN",
    "f8E8M0FNU",
];

/// Whether a bare keyword names a builtin scalar type.
pub(crate) fn is_builtin_scalar(kw: &str) -> bool {
    if BUILTIN_TYPE_KEYWORDS.contains(&kw) {
        return true;
    }
    let digits =
        kw.strip_prefix("si").or_else(|| kw.strip_prefix("ui")).or_else(|| kw.strip_prefix('i'));
    digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

fn is_type_keyword(kw: &str) -> bool {
    matches!(kw, "tensor" | "memref" | "vector" | "tuple" | "complex") || is_builtin_scalar(kw)
}

impl Parser<'_> {
    // ---- attributes ---------------------------------------------------------------------

    pub(crate) fn attr(&mut self) -> PResult<Attr> {
        self.enter()?;
        let r = self.attr_inner();
        self.leave();
        r
    }

    fn attr_inner(&mut self) -> PResult<Attr> {
        let start = self.cur_start();
        let kind = match self.nth(0) {
            Some(TokenKind::HashId) => {
                let adjacent_angle = self.adjacent(0) && self.nth(1) == Some(TokenKind::Less);
                let t = self.bump();
                let name = &t.range.slice(self.text)[1..];
                if let Some((dialect, mnemonic)) = name.split_once('.') {
                    let body = if self.at(TokenKind::Less) { Some(self.body()?) } else { None };
                    AttrKind::Dialect {
                        dialect: dialect.to_owned(),
                        mnemonic: Some(mnemonic.to_owned()),
                        body,
                    }
                } else if adjacent_angle {
                    let body = self.body()?;
                    AttrKind::Dialect { dialect: name.to_owned(), mnemonic: None, body: Some(body) }
                } else {
                    AttrKind::Alias(name.to_owned())
                }
            }
            Some(TokenKind::BangId | TokenKind::LParen) => AttrKind::Type(Box::new(self.ty()?)),
            Some(TokenKind::SymbolId) => {
                let mut path = vec![self.symbol_name()];
                while self.at(TokenKind::Colon)
                    && self.nth(1) == Some(TokenKind::Colon)
                    && self.nth(2) == Some(TokenKind::SymbolId)
                {
                    self.bump();
                    self.bump();
                    path.push(self.symbol_name());
                }
                AttrKind::SymbolRef(path)
            }
            Some(TokenKind::Int | TokenKind::HexInt | TokenKind::Float | TokenKind::Minus) => {
                self.number_attr()?
            }
            Some(TokenKind::String) => {
                let t = self.bump();
                let value = match unescape_string(t.range.slice(self.text)) {
                    Some(v) => v,
                    None => {
                        self.error(
                            "invalid-escape",
                            "invalid escape sequence in string".to_owned(),
                            t.range,
                        );
                        String::new()
                    }
                };
                let ty = self.optional_type_suffix()?;
                AttrKind::Str { value, ty }
            }
            Some(TokenKind::LBracket) => {
                self.bump();
                let mut items = Vec::new();
                if !self.at(TokenKind::RBracket) {
                    loop {
                        items.push(self.attr()?);
                        if self.eat(TokenKind::Comma).is_none() {
                            break;
                        }
                    }
                }
                self.expect(TokenKind::RBracket)?;
                AttrKind::Array(items)
            }
            Some(TokenKind::LBrace) => AttrKind::Dict(self.attr_dict()?),
            Some(TokenKind::Less) => AttrKind::Stripped(self.body()?),
            Some(TokenKind::BareId) => self.keyword_attr()?,
            _ => return Err(self.error_expected("an attribute")),
        };
        Ok(Attr { kind, range: TextRange::new(start, self.prev_end()) })
    }

    fn symbol_name(&mut self) -> String {
        let t = self.bump();
        let text = &t.range.slice(self.text)[1..];
        if text.starts_with('"') {
            unescape_string(text).unwrap_or_default()
        } else {
            text.to_owned()
        }
    }

    fn number_attr(&mut self) -> PResult<AttrKind> {
        let negative = self.eat(TokenKind::Minus).is_some();
        let Some(kind) = self.nth(0) else {
            return Err(self.error_expected("a number"));
        };
        if !matches!(kind, TokenKind::Int | TokenKind::HexInt | TokenKind::Float) {
            return Err(self.error_expected("a number"));
        }
        let t = self.bump();
        let text = format!("{}{}", if negative { "-" } else { "" }, t.range.slice(self.text));
        let ty = self.optional_type_suffix()?;
        Ok(if kind == TokenKind::Float {
            AttrKind::Float { text, ty }
        } else {
            AttrKind::Int { text, ty }
        })
    }

    /// `: type` after a number or string, when a type follows the colon.
    fn optional_type_suffix(&mut self) -> PResult<Option<Box<Type>>> {
        if !self.at(TokenKind::Colon) {
            return Ok(None);
        }
        let starts_type = match self.nth(1) {
            Some(TokenKind::BangId) => true,
            Some(TokenKind::BareId) => is_type_keyword(self.nth_text(1)),
            _ => false,
        };
        if !starts_type {
            return Ok(None);
        }
        self.bump();
        Ok(Some(Box::new(self.ty()?)))
    }

    fn keyword_attr(&mut self) -> PResult<AttrKind> {
        let kw = self.nth_text(0);
        let next_is_angle = self.nth(1) == Some(TokenKind::Less);
        Ok(match kw {
            "true" => {
                self.bump();
                AttrKind::Bool(true)
            }
            "false" => {
                self.bump();
                AttrKind::Bool(false)
            }
            "unit" => {
                self.bump();
                AttrKind::Unit
            }
            "array" if next_is_angle => {
                self.bump();
                self.bump();
                let elem = Box::new(self.ty()?);
                let mut values = Vec::new();
                if self.eat(TokenKind::Colon).is_some() {
                    loop {
                        let vstart = self.cur_start();
                        self.eat(TokenKind::Minus);
                        let is_value = self.at_kw("true")
                            || self.at_kw("false")
                            || matches!(
                                self.nth(0),
                                Some(TokenKind::Int | TokenKind::HexInt | TokenKind::Float)
                            );
                        if is_value {
                            self.bump();
                        } else {
                            return Err(self.error_expected("an array element"));
                        }
                        values.push(
                            TextRange::new(vstart, self.prev_end()).slice(self.text).to_owned(),
                        );
                        if self.eat(TokenKind::Comma).is_none() {
                            break;
                        }
                    }
                }
                self.expect(TokenKind::Greater)?;
                AttrKind::DenseArray { elem, values }
            }
            "dense" | "dense_resource" | "sparse" | "opaque" if next_is_angle => {
                let kind = kw.to_owned();
                self.bump();
                let body = self.body()?;
                let ty = if self.eat(TokenKind::Colon).is_some() {
                    Some(Box::new(self.ty()?))
                } else {
                    None
                };
                AttrKind::Elements { kind, body, ty }
            }
            "affine_map" | "affine_set" if next_is_angle => {
                self.bump();
                AttrKind::Affine { body: self.body()? }
            }
            "loc" if self.nth(1) == Some(TokenKind::LParen) => {
                let spec = self.loc_spec()?;
                AttrKind::Loc(Box::new(spec.loc))
            }
            "distinct" | "strided" => {
                self.bump();
                if self.at(TokenKind::LBracket) {
                    self.skip_balanced();
                }
                if self.at(TokenKind::Less) {
                    self.skip_balanced();
                }
                AttrKind::Opaque
            }
            _ if is_type_keyword(kw) => AttrKind::Type(Box::new(self.ty()?)),
            _ => {
                self.bump();
                AttrKind::Keyword(kw.to_owned())
            }
        })
    }

    pub(crate) fn attr_dict(&mut self) -> PResult<AttrDict> {
        let start = self.cur_start();
        self.expect(TokenKind::LBrace)?;
        let mut entries = Vec::new();
        if !self.at(TokenKind::RBrace) {
            loop {
                let estart = self.cur_start();
                let key = match self.nth(0) {
                    Some(TokenKind::BareId) => self.ident(),
                    Some(TokenKind::String) => {
                        let t = self.bump();
                        Ident {
                            text: unescape_string(t.range.slice(self.text)).unwrap_or_default(),
                            range: t.range,
                        }
                    }
                    _ => return Err(self.error_expected("an attribute name")),
                };
                let value =
                    if self.eat(TokenKind::Equal).is_some() { Some(self.attr()?) } else { None };
                entries.push(AttrEntry {
                    key,
                    value,
                    range: TextRange::new(estart, self.prev_end()),
                });
                if self.eat(TokenKind::Comma).is_none() {
                    break;
                }
            }
        }
        self.expect(TokenKind::RBrace)?;
        Ok(AttrDict { entries, range: TextRange::new(start, self.prev_end()) })
    }

    /// A `<...>` group kept as tokens, balanced over `<>`, `()`, `[]` and `{}`.
    pub(crate) fn body(&mut self) -> PResult<Body> {
        let start = self.cur_start();
        let open = self.token_index();
        if !self.at(TokenKind::Less) {
            return Err(self.error_expected("`<`"));
        }
        let mut stack: Vec<TokenKind> = Vec::new();
        loop {
            let Some(kind) = self.nth(0) else {
                let range = TextRange::new(start, start + 1);
                self.error("unclosed-bracket", "`<` is never closed".to_owned(), range);
                return Err(Recovered);
            };
            match kind {
                TokenKind::Less => stack.push(TokenKind::Greater),
                TokenKind::LParen => stack.push(TokenKind::RParen),
                TokenKind::LBracket => stack.push(TokenKind::RBracket),
                TokenKind::LBrace => stack.push(TokenKind::RBrace),
                TokenKind::Greater
                | TokenKind::RParen
                | TokenKind::RBracket
                | TokenKind::RBrace => {
                    if stack.last() == Some(&kind) {
                        stack.pop();
                    } else {
                        let range = self.cur_range();
                        self.error(
                            "mismatched-bracket",
                            format!(
                                "mismatched {} in attribute body, expected {}",
                                kind.describe(),
                                stack.last().map_or("`>`", |k| k.describe())
                            ),
                            range,
                        );
                        return Err(Recovered);
                    }
                }
                TokenKind::FileMetaBegin | TokenKind::FileMetaEnd => {
                    return Err(self.error_expected("`>`"));
                }
                _ => {}
            }
            let close = self.token_index();
            self.bump();
            if stack.is_empty() {
                return Ok(Body { open, close, range: TextRange::new(start, self.prev_end()) });
            }
        }
    }

    // ---- types --------------------------------------------------------------------------

    pub(crate) fn ty(&mut self) -> PResult<Type> {
        self.enter()?;
        let r = self.ty_inner();
        self.leave();
        r
    }

    fn ty_inner(&mut self) -> PResult<Type> {
        let start = self.cur_start();
        match self.nth(0) {
            Some(TokenKind::BareId) => {
                let t = self.bump();
                let kw = t.range.slice(self.text);
                self.keyword_type(kw, t.range)
            }
            Some(TokenKind::BangId) => {
                let adjacent_angle = self.adjacent(0) && self.nth(1) == Some(TokenKind::Less);
                let t = self.bump();
                let name = &t.range.slice(self.text)[1..];
                let kind = if let Some((dialect, rest)) = name.split_once('.') {
                    let body = if self.at(TokenKind::Less) { Some(self.body()?) } else { None };
                    TypeKind::Dialect { dialect: dialect.to_owned(), name: rest.to_owned(), body }
                } else if adjacent_angle {
                    let body = self.body()?;
                    TypeKind::Dialect {
                        dialect: name.to_owned(),
                        name: String::new(),
                        body: Some(body),
                    }
                } else {
                    TypeKind::Alias(name.to_owned())
                };
                Ok(Type { kind, range: TextRange::new(start, self.prev_end()) })
            }
            Some(TokenKind::LParen) => {
                let f = self.function_type()?;
                let range = f.range;
                Ok(Type { kind: TypeKind::Function(f), range })
            }
            _ => Err(self.error_expected("a type")),
        }
    }

    /// A type that starts with the keyword `kw` spanning `range`, which may be the tail of a
    /// dimension-list token (`bf16` in `4x4xbf16`).
    fn keyword_type(&mut self, kw: &str, range: TextRange) -> PResult<Type> {
        let kind = match kw {
            "tensor" | "memref" | "vector" => {
                self.expect(TokenKind::Less)?;
                let (shape, elem) = self.dims_and_element()?;
                let kind = match kw {
                    "tensor" => {
                        let encoding = if self.eat(TokenKind::Comma).is_some() {
                            Some(Box::new(self.attr()?))
                        } else {
                            None
                        };
                        TypeKind::Tensor { shape, elem: Box::new(elem), encoding }
                    }
                    "memref" => {
                        let mut params = Vec::new();
                        while self.eat(TokenKind::Comma).is_some() {
                            params.push(self.attr()?);
                        }
                        TypeKind::MemRef { shape, elem: Box::new(elem), params }
                    }
                    _ => TypeKind::Vector { shape, elem: Box::new(elem) },
                };
                self.expect(TokenKind::Greater)?;
                kind
            }
            "tuple" => {
                self.expect(TokenKind::Less)?;
                let mut items = Vec::new();
                if !self.at(TokenKind::Greater) {
                    loop {
                        items.push(self.ty()?);
                        if self.eat(TokenKind::Comma).is_none() {
                            break;
                        }
                    }
                }
                self.expect(TokenKind::Greater)?;
                TypeKind::Tuple(items)
            }
            "complex" => {
                self.expect(TokenKind::Less)?;
                let inner = self.ty()?;
                self.expect(TokenKind::Greater)?;
                TypeKind::Complex(Box::new(inner))
            }
            _ if is_builtin_scalar(kw) => TypeKind::Builtin(kw.to_owned()),
            _ => {
                self.error("expected-token", format!("expected a type, found `{kw}`"), range);
                return Err(Recovered);
            }
        };
        Ok(Type { kind, range: TextRange::new(range.start, self.prev_end()) })
    }

    /// The body of a shaped type after `<`: an optional dimension list, then the element
    /// type. MLIR lexes `4x4xbf16` as `4` + `x4xbf16`, so adjacent tokens are reassembled
    /// into one text and split on `x`.
    fn dims_and_element(&mut self) -> PResult<(Vec<Dim>, Type)> {
        if !matches!(self.nth(0), Some(TokenKind::Int | TokenKind::HexInt | TokenKind::Question)) {
            return Ok((Vec::new(), self.ty()?));
        }
        let start = self.cur_start();
        let mut n = 0;
        while self.adjacent(n)
            && matches!(
                self.nth(n + 1),
                Some(TokenKind::Int | TokenKind::HexInt | TokenKind::BareId | TokenKind::Question)
            )
        {
            n += 1;
        }
        let end = self.nth_token(n).map_or(start, |t| t.range.end);
        for _ in 0..=n {
            self.bump();
        }
        let blob = TextRange::new(start, end).slice(self.text);
        let Some((dims, rest)) = split_dims(blob) else {
            self.error(
                "invalid-dimension-list",
                format!("invalid dimension list `{blob}`"),
                TextRange::new(start, end),
            );
            return Err(Recovered);
        };
        if rest.is_empty() {
            if !blob.ends_with('x') {
                self.error(
                    "invalid-dimension-list",
                    format!("expected `x` and an element type after `{blob}`"),
                    TextRange::new(start, end),
                );
                return Err(Recovered);
            }
            return Ok((dims, self.ty()?));
        }
        let rest_start = end - rest.len() as u32;
        let elem = self.keyword_type(rest, TextRange::new(rest_start, end))?;
        Ok((dims, elem))
    }

    pub(crate) fn function_type(&mut self) -> PResult<FunctionType> {
        let start = self.cur_start();
        self.expect(TokenKind::LParen)?;
        let mut inputs = Vec::new();
        if !self.at(TokenKind::RParen) {
            loop {
                inputs.push(self.ty()?);
                if self.eat(TokenKind::Comma).is_none() {
                    break;
                }
            }
        }
        self.expect(TokenKind::RParen)?;
        self.expect(TokenKind::Arrow)?;
        let mut results = Vec::new();
        let mut results_parenthesized = false;
        if self.at(TokenKind::LParen) && !self.paren_is_function_type_result() {
            results_parenthesized = true;
            self.bump();
            if !self.at(TokenKind::RParen) {
                loop {
                    results.push(self.ty()?);
                    if self.eat(TokenKind::Comma).is_none() {
                        break;
                    }
                }
            }
            self.expect(TokenKind::RParen)?;
        } else {
            results.push(self.ty()?);
        }
        Ok(FunctionType {
            inputs,
            results,
            results_parenthesized,
            range: TextRange::new(start, self.prev_end()),
        })
    }

    /// After `->`, `(` opens a parenthesized result list unless a matching `)` is followed
    /// by `->` (a function type as the one result).
    fn paren_is_function_type_result(&self) -> bool {
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

    // ---- locations ----------------------------------------------------------------------

    /// `loc(<location>)`.
    pub(crate) fn loc_spec(&mut self) -> PResult<LocSpec> {
        let start = self.cur_start();
        self.expect_kw("loc")?;
        self.expect(TokenKind::LParen)?;
        let loc = self.location()?;
        self.expect(TokenKind::RParen)?;
        Ok(LocSpec { loc, range: TextRange::new(start, self.prev_end()) })
    }

    fn location(&mut self) -> PResult<Location> {
        self.enter()?;
        let r = self.location_inner();
        self.leave();
        r
    }

    fn location_inner(&mut self) -> PResult<Location> {
        let start = self.cur_start();
        let kind = match self.nth(0) {
            Some(TokenKind::HashId) => {
                let t = self.bump();
                LocKind::Alias(t.range.slice(self.text)[1..].to_owned())
            }
            Some(TokenKind::BareId) if self.at_kw("unknown") => {
                self.bump();
                LocKind::Unknown
            }
            Some(TokenKind::BareId) if self.at_kw("callsite") => {
                self.bump();
                self.expect(TokenKind::LParen)?;
                let callee = self.location()?;
                self.expect_kw("at")?;
                let caller = self.location()?;
                self.expect(TokenKind::RParen)?;
                LocKind::CallSite { callee: Box::new(callee), caller: Box::new(caller) }
            }
            Some(TokenKind::BareId) if self.at_kw("fused") => {
                self.bump();
                let metadata = if self.eat(TokenKind::Less).is_some() {
                    let m = self.attr()?;
                    self.expect(TokenKind::Greater)?;
                    Some(Box::new(m))
                } else {
                    None
                };
                self.expect(TokenKind::LBracket)?;
                let mut locs = Vec::new();
                if !self.at(TokenKind::RBracket) {
                    loop {
                        locs.push(self.location()?);
                        if self.eat(TokenKind::Comma).is_none() {
                            break;
                        }
                    }
                }
                self.expect(TokenKind::RBracket)?;
                LocKind::Fused { metadata, locs }
            }
            Some(TokenKind::String) => {
                let t = self.bump();
                let name = unescape_string(t.range.slice(self.text)).unwrap_or_default();
                if self.at(TokenKind::Colon) && self.nth(1) == Some(TokenKind::Int) {
                    self.bump();
                    let line = self.bump().range.slice(self.text).parse().unwrap_or(0);
                    let mut col = 0;
                    if self.at(TokenKind::Colon) && self.nth(1) == Some(TokenKind::Int) {
                        self.bump();
                        col = self.bump().range.slice(self.text).parse().unwrap_or(0);
                    }
                    // `to :line:col` / `to line:col` ranges (newer MLIR) are skipped.
                    if self.eat_kw("to").is_some() {
                        while matches!(self.nth(0), Some(TokenKind::Colon | TokenKind::Int)) {
                            self.bump();
                        }
                    }
                    LocKind::FileLineCol { file: name, line, col }
                } else {
                    let child = if self.eat(TokenKind::LParen).is_some() {
                        let c = self.location()?;
                        self.expect(TokenKind::RParen)?;
                        Some(Box::new(c))
                    } else {
                        None
                    };
                    LocKind::Name { name, child }
                }
            }
            _ => return Err(self.error_expected("a location")),
        };
        Ok(Location { kind, range: TextRange::new(start, self.prev_end()) })
    }
}
