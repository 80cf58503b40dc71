//! Decoders for TTNN and TTCore dialect attributes.
//!
//! The parser keeps a dialect attribute's `<...>` body as tokens, the way MLIR keeps an
//! unregistered dialect attribute as text. Decoding reads those tokens with a small cursor.
//! Parameters of struct-like attributes may come in any order and be spelled stripped
//! (`<interleaved>`), qualified (`#ttnn.tensor_memory_layout<interleaved>`) or through an
//! alias (`#dram`); all three are accepted. Unknown keys are ignored, not rejected: tt-mlir
//! drops unknown keys too and old files still carry them.

use rustc_hash::FxHashMap;
use syntax::{Token, TokenKind, ast, split_dims, unescape_string};
use ttnn_types::{
    BufferType, Conv2dConfig, Conv2dSliceConfig, Conv2dSliceType, CoreCoord, CoreRange,
    CoreRangeSet, DataType, DeviceComputeKernelConfig, ElementType, Grid, LayoutData, MathFidelity,
    MatmulProgramConfig, PageLayout, ScalarType, TensorMemoryLayout, TtnnLayout, UnaryWithParam,
};

use crate::model::{ChipDesc, Decoded, DeviceDesc, MemoryConfig, ShardSpec, SystemDesc};

/// What decoders need: the text, the tokens (for bodies) and the chunk's aliases.
pub(crate) struct DecodeCtx<'a> {
    pub(crate) text: &'a str,
    pub(crate) tokens: &'a [Token],
    pub(crate) attr_aliases: &'a FxHashMap<&'a str, &'a ast::Attr>,
}

type DResult<T> = Result<T, String>;

/// A cursor over the significant tokens of a body.
#[derive(Clone, Copy)]
pub(crate) struct Cur<'a> {
    text: &'a str,
    toks: &'a [Token],
    pos: usize,
    end: usize,
}

fn significant(tokens: &[Token], body: &ast::Body) -> Vec<Token> {
    syntax::body_tokens(tokens, body).iter().copied().filter(|t| !t.kind.is_trivia()).collect()
}

impl<'a> Cur<'a> {
    fn new(text: &'a str, toks: &'a [Token]) -> Cur<'a> {
        Cur { text, toks, pos: 0, end: toks.len() }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.end
    }

    fn kind(&self, n: usize) -> Option<TokenKind> {
        (self.pos + n < self.end).then(|| self.toks[self.pos + n].kind)
    }

    fn text_at(&self, n: usize) -> &'a str {
        if self.pos + n < self.end { self.toks[self.pos + n].range.slice(self.text) } else { "" }
    }

    fn bump(&mut self) -> Option<Token> {
        let t = (self.pos < self.end).then(|| self.toks[self.pos]);
        self.pos = (self.pos + 1).min(self.end);
        t
    }

    fn eat(&mut self, kind: TokenKind) -> bool {
        if self.kind(0) == Some(kind) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn at_kw(&self, kw: &str) -> bool {
        self.kind(0) == Some(TokenKind::BareId) && self.text_at(0) == kw
    }

    /// The index of the token closing the group opened at `self.pos`.
    fn matching_close(&self) -> Option<usize> {
        let mut depth = 0usize;
        for i in self.pos..self.end {
            match self.toks[i].kind {
                TokenKind::Less | TokenKind::LParen | TokenKind::LBracket | TokenKind::LBrace => {
                    depth += 1;
                }
                TokenKind::Greater
                | TokenKind::RParen
                | TokenKind::RBracket
                | TokenKind::RBrace => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// If the cursor is at an opening bracket, returns a cursor over the group's inside and
    /// moves past the closing bracket.
    fn group(&mut self) -> Option<Cur<'a>> {
        let close = self.matching_close()?;
        let inner = Cur { text: self.text, toks: self.toks, pos: self.pos + 1, end: close };
        self.pos = close + 1;
        Some(inner)
    }

    /// Splits at top-level commas. An empty cursor gives no items.
    fn items(&self) -> Vec<Cur<'a>> {
        let mut out = Vec::new();
        if self.at_end() {
            return out;
        }
        let mut depth = 0usize;
        let mut start = self.pos;
        for i in self.pos..self.end {
            match self.toks[i].kind {
                TokenKind::Less | TokenKind::LParen | TokenKind::LBracket | TokenKind::LBrace => {
                    depth += 1;
                }
                TokenKind::Greater
                | TokenKind::RParen
                | TokenKind::RBracket
                | TokenKind::RBrace => {
                    depth = depth.saturating_sub(1);
                }
                TokenKind::Comma if depth == 0 => {
                    out.push(Cur { text: self.text, toks: self.toks, pos: start, end: i });
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.push(Cur { text: self.text, toks: self.toks, pos: start, end: self.end });
        out
    }

    /// `key = value` → (key, cursor over value).
    fn key_value(&self) -> Option<(&'a str, Cur<'a>)> {
        if self.kind(0) == Some(TokenKind::BareId) && self.kind(1) == Some(TokenKind::Equal) {
            let key = self.text_at(0);
            Some((key, Cur { pos: self.pos + 2, ..*self }))
        } else {
            None
        }
    }

    /// A dimension list made of adjacent tokens (`8x8`, `0x0`, `1x12xbf16`).
    fn dims(&mut self) -> Option<(Vec<u64>, &'a str)> {
        if !matches!(self.kind(0), Some(TokenKind::Int | TokenKind::HexInt)) {
            return None;
        }
        let start = self.toks[self.pos].range.start;
        let mut end = self.toks[self.pos].range.end;
        let mut i = self.pos + 1;
        while i < self.end
            && self.toks[i].range.start == end
            && matches!(self.toks[i].kind, TokenKind::Int | TokenKind::HexInt | TokenKind::BareId)
        {
            end = self.toks[i].range.end;
            i += 1;
        }
        let blob = self.text.get(start as usize..end as usize)?;
        let (dims, rest) = split_dims(blob)?;
        let dims: Option<Vec<u64>> = dims.into_iter().collect();
        self.pos = i;
        Some((dims?, rest))
    }

    fn int(&mut self) -> Option<i64> {
        let neg = self.eat(TokenKind::Minus);
        let t = self.bump()?;
        let s = t.range.slice(self.text);
        let v = match t.kind {
            TokenKind::Int => s.parse::<i64>().ok()?,
            TokenKind::HexInt => i64::from_str_radix(s.trim_start_matches("0x"), 16).ok()?,
            _ => return None,
        };
        // An optional `: i32` suffix.
        if self.eat(TokenKind::Colon) {
            self.bump();
        }
        Some(if neg { -v } else { v })
    }

    fn uint(&mut self) -> Option<u64> {
        self.int().and_then(|v| u64::try_from(v).ok())
    }

    fn bool(&mut self) -> Option<bool> {
        let v = match self.text_at(0) {
            "true" => true,
            "false" => false,
            _ => return None,
        };
        self.bump();
        Some(v)
    }

    fn keyword(&mut self) -> Option<&'a str> {
        if self.kind(0) == Some(TokenKind::BareId) {
            let t = self.text_at(0);
            self.bump();
            Some(t)
        } else {
            None
        }
    }

    /// The remaining tokens as normalized text (a space wherever the source had one).
    fn norm_text(&self) -> String {
        let mut out = String::new();
        for i in self.pos..self.end {
            if i > self.pos && self.toks[i - 1].range.end != self.toks[i].range.start {
                out.push(' ');
            }
            out.push_str(self.toks[i].range.slice(self.text));
        }
        out
    }
}

impl DecodeCtx<'_> {
    /// Decodes a dialect attribute by its full name. `Ok(None)` for attributes we keep opaque.
    pub(crate) fn dialect(
        &self,
        dialect: &str,
        mnemonic: Option<&str>,
        body: Option<&ast::Body>,
    ) -> DResult<Option<Decoded>> {
        // The angle form `#ttnn<mesh_shape 1x1>` is not decoded.
        let Some(mnemonic) = mnemonic else { return Ok(None) };
        let toks = body.map(|b| significant(self.tokens, b)).unwrap_or_default();
        let cur = Cur::new(self.text, &toks);
        let decoded = match (dialect, mnemonic) {
            ("ttnn", "ttnn_layout") => Decoded::Layout(self.layout(cur)?),
            ("ttnn", "buffer_type") => Decoded::BufferType(buffer_keyword(cur)?),
            ("ttnn", "memory_config") => Decoded::MemoryConfig(self.memory_config(cur)?),
            ("ttnn", "shard_spec") => Decoded::ShardSpec(self.shard_spec(cur)?),
            ("ttnn", "conv2d_config") => Decoded::Conv2dConfig(self.conv2d_config(cur)?),
            ("ttnn", "conv2d_slice_config") => {
                Decoded::Conv2dSliceConfig(conv2d_slice_config(cur)?)
            }
            ("ttnn", "device_compute_kernel_config") => {
                Decoded::ComputeConfig(compute_config(cur)?)
            }
            ("ttnn", m) if m.starts_with("matmul_multi_core_reuse") => {
                Decoded::MatmulProgramConfig(self.matmul_config(m, cur)?)
            }
            ("ttcore", "device") => Decoded::Device(self.device(cur)?),
            ("ttcore", "system_desc") => Decoded::SystemDesc(system_desc(cur)?),
            ("ttnn", "shape") => {
                let mut c = cur;
                if c.at_end() {
                    Decoded::Shape(Vec::new())
                } else {
                    let (dims, _) = c.dims().ok_or("expected a shape such as `8x8`")?;
                    Decoded::Shape(dims)
                }
            }
            ("ttcore", "supportedDataTypes") => {
                let mut c = cur;
                let kw = c.keyword().ok_or("expected a data type")?;
                Decoded::DataType(
                    DataType::from_keyword(kw)
                        .ok_or_else(|| format!("unknown data type `{kw}`"))?,
                )
            }
            _ => return Ok(None),
        };
        Ok(Some(decoded))
    }

    /// Decodes the body of `ttcore.device @name = <...>`.
    pub(crate) fn device_body(&self, body: &ast::Body) -> DResult<DeviceDesc> {
        let toks = significant(self.tokens, body);
        self.device(Cur::new(self.text, &toks))
    }

    /// Resolves `#alias` to the attribute it names, following alias chains.
    fn resolve_alias(&self, name: &str) -> DResult<&ast::Attr> {
        let mut name = name;
        for _ in 0..16 {
            let attr = self
                .attr_aliases
                .get(name)
                .ok_or_else(|| format!("unknown attribute alias `#{name}`"))?;
            match &attr.kind {
                ast::AttrKind::Alias(next) => name = next,
                _ => return Ok(attr),
            }
        }
        Err(format!("attribute alias `#{name}` is defined in a cycle"))
    }

    /// A parameter written qualified (`#ttnn.x<...>`), through an alias (`#dram`) or stripped
    /// (`<...>`). Calls `f` with a cursor over the inside of its angle brackets.
    fn param<T>(
        &self,
        cur: &mut Cur<'_>,
        expected: &str,
        f: &dyn Fn(&Self, Cur<'_>) -> DResult<T>,
    ) -> DResult<T> {
        match cur.kind(0) {
            Some(TokenKind::Less) => {
                let inner = cur.group().ok_or_else(|| format!("unbalanced {expected}"))?;
                f(self, inner)
            }
            Some(TokenKind::HashId) => {
                let name = &cur.text_at(0)[1..];
                cur.bump();
                if name.contains('.') {
                    let inner =
                        cur.group().ok_or_else(|| format!("expected `<` after `#{name}`"))?;
                    f(self, inner)
                } else {
                    let attr = self.resolve_alias(name)?;
                    match &attr.kind {
                        ast::AttrKind::Dialect { body: Some(body), .. }
                        | ast::AttrKind::Stripped(body) => {
                            let toks = significant(self.tokens, body);
                            f(self, Cur::new(self.text, &toks))
                        }
                        _ => Err(format!("`#{name}` is not {expected}")),
                    }
                }
            }
            _ => Err(format!("expected {expected}, found `{}`", cur.text_at(0))),
        }
    }

    fn buffer_ref(&self, cur: &mut Cur<'_>) -> DResult<BufferType> {
        self.param(cur, "a buffer type", &|_, c| buffer_keyword(c))
    }

    fn memory_layout_ref(&self, cur: &mut Cur<'_>) -> DResult<TensorMemoryLayout> {
        self.param(cur, "a memory layout", &|_, mut c| {
            let kw = c.keyword().ok_or("expected a memory layout keyword")?;
            TensorMemoryLayout::from_keyword(kw)
                .ok_or_else(|| format!("unknown memory layout `{kw}`"))
        })
    }

    fn core_range_set(&self, cur: &mut Cur<'_>) -> DResult<CoreRangeSet> {
        self.param(cur, "a core range set", &|ctx, mut c| {
            if c.at_end() {
                return Ok(CoreRangeSet::default());
            }
            let list = c.group().ok_or("expected `[` in a core range set")?;
            let mut ranges = Vec::new();
            for mut item in list.items() {
                if item.at_end() {
                    continue;
                }
                let range = ctx.param(&mut item, "a core range", &|_, c| core_range(c))?;
                ranges.push(range);
            }
            let set = CoreRangeSet { ranges: ranges.into() };
            if let Some((a, b)) = set.first_overlap() {
                return Err(format!("core ranges {a} and {b} overlap"));
            }
            Ok(set)
        })
    }

    fn layout(&self, cur: Cur<'_>) -> DResult<TtnnLayout> {
        let items = cur.items();
        let mut it = items.into_iter();
        let map = it.next().ok_or("a layout needs an affine map")?;
        if map.kind(0) != Some(TokenKind::LParen) {
            return Err(format!("expected the layout's affine map, found `{}`", map.text_at(0)));
        }
        let linear_map = map.norm_text();
        let mut grid_item = it.next().ok_or("a layout needs a grid such as `<1x1>`")?;
        let mut grid_inner = grid_item.group().ok_or("expected a grid such as `<1x1>`")?;
        let grid = if grid_inner.at_end() {
            Vec::new()
        } else {
            grid_inner.dims().ok_or("expected a grid such as `<8x8>`")?.0
        };
        let mut layout = TtnnLayout::from(LayoutData {
            linear_map: linear_map.into(),
            grid: grid.into(),
            mesh: None,
            memref_shape: ttnn_types::Dims::new(),
            memref_element: ElementType::Scalar(ScalarType::BF16),
            buffer: BufferType::Dram,
            memory_layout: None,
            core_ranges: None,
            ignore_physical_layout: false,
        });
        let mut saw_memref = false;
        for mut item in it {
            if let Some((key, mut value)) = item.key_value() {
                match key {
                    "mesh" => {
                        let text = value.norm_text();
                        let name = value
                            .group()
                            .and_then(|g| unescape_string(g.text_at(0)))
                            .unwrap_or(text);
                        layout.mesh = Some(name.into());
                    }
                    "core_ranges" => {
                        layout.core_ranges = Some(self.core_range_set(&mut value)?.into());
                    }
                    "ignorePhysicalLayout" => {
                        layout.ignore_physical_layout = value.bool().unwrap_or(false);
                    }
                    // Removed in 2026-05; it only tuned grid inference.
                    "exactGrid" => {}
                    _ => {}
                }
                continue;
            }
            if item.at_kw("memref") {
                item.bump();
                let inner = item.group().ok_or("expected `<` after `memref`")?;
                self.memref(inner, &mut layout)?;
                saw_memref = true;
            } else if item.at_kw("true") {
                // The 2025 format wrote ignorePhysicalLayout as a bare trailing `true`.
                layout.ignore_physical_layout = true;
            } else if matches!(item.kind(0), Some(TokenKind::Less | TokenKind::HashId)) {
                layout.memory_layout = Some(self.memory_layout_ref(&mut item)?);
            } else if !item.at_end() {
                return Err(format!("unexpected `{}` in a layout", item.norm_text()));
            }
        }
        if !saw_memref {
            return Err("a layout needs a `memref<...>`".to_owned());
        }
        if layout.is_sharded() && layout.core_ranges.is_none() && !layout.ignore_physical_layout {
            // Older files carried no core ranges; canonical placement is implied.
        }
        if layout.buffer == BufferType::SystemMemory && layout.memory_layout.is_some() {
            return Err("a system memory layout must not have a memory layout".to_owned());
        }
        if layout.buffer == BufferType::Dram
            && layout.memory_layout == Some(TensorMemoryLayout::BlockSharded)
        {
            return Err("DRAM does not support block sharding".to_owned());
        }
        Ok(layout)
    }

    fn memref(&self, cur: Cur<'_>, layout: &mut TtnnLayout) -> DResult<()> {
        let mut items = cur.items().into_iter();
        let mut first = items.next().ok_or("empty memref")?;
        let (dims, rest) = if matches!(first.kind(0), Some(TokenKind::Int | TokenKind::HexInt)) {
            first.dims().ok_or("invalid memref dimension list")?
        } else {
            (Vec::new(), "")
        };
        layout.memref_shape = dims.into();
        layout.memref_element = if !rest.is_empty() {
            ElementType::Scalar(
                ScalarType::from_keyword(rest)
                    .ok_or_else(|| format!("unknown memref element type `{rest}`"))?,
            )
        } else if first.kind(0) == Some(TokenKind::BangId) && first.text_at(0) == "!ttcore.tile" {
            first.bump();
            let inner = first.group().ok_or("expected `<` after `!ttcore.tile`")?;
            tile_type(inner)?
        } else if first.kind(0) == Some(TokenKind::BareId) {
            let kw = first.keyword().unwrap_or("");
            ElementType::Scalar(
                ScalarType::from_keyword(kw)
                    .ok_or_else(|| format!("unknown memref element type `{kw}`"))?,
            )
        } else {
            return Err(format!("unexpected memref element `{}`", first.norm_text()));
        };
        let mut buffer = items.next().ok_or("a layout memref needs a buffer type")?;
        layout.buffer = self.buffer_ref(&mut buffer)?;
        Ok(())
    }

    fn memory_config(&self, cur: Cur<'_>) -> DResult<MemoryConfig> {
        let mut items = cur.items().into_iter();
        let mut first = items.next().ok_or("a memory config needs a buffer type")?;
        let buffer = self.buffer_ref(&mut first)?;
        let mut mc = MemoryConfig { buffer, memory_layout: None, shard_spec: None };
        for mut item in items {
            // `ndShardSpec = ...`: ND shard specs are kept opaque; the optimizer never
            // generates them.
            if item.key_value().is_some() {
                continue;
            }
            if item.kind(0) == Some(TokenKind::HashId) && item.text_at(0) == "#ttnn.shard_spec" {
                item.bump();
                let inner = item.group().ok_or("expected `<` after `#ttnn.shard_spec`")?;
                mc.shard_spec = Some(self.shard_spec(inner)?);
            } else {
                mc.memory_layout = Some(self.memory_layout_ref(&mut item)?);
            }
        }
        Ok(mc)
    }

    fn shard_spec(&self, cur: Cur<'_>) -> DResult<ShardSpec> {
        let mut items = cur.items().into_iter();
        let mut crs = items.next().ok_or("a shard spec needs core ranges")?;
        let core_ranges = self.core_range_set(&mut crs)?;
        let mut shape_item = items.next().ok_or("a shard spec needs a shape")?;
        let mut shape_inner =
            shape_item.group().ok_or("expected a shard shape such as `<32x32>`")?;
        let (shape, _) = shape_inner.dims().ok_or("expected a shard shape such as `<32x32>`")?;
        let mut orientation = true;
        if let Some(mut o) = items.next() {
            let mut inner =
                o.group().ok_or("expected a shard orientation such as `<row_major>`")?;
            orientation = inner.keyword() != Some("col_major");
        }
        Ok(ShardSpec { core_ranges, shape, row_major_orientation: orientation })
    }

    fn unary(&self, cur: &mut Cur<'_>) -> DResult<UnaryWithParam> {
        if cur.kind(0) == Some(TokenKind::String) {
            // Older files wrote the activation as a plain string.
            let s = unescape_string(cur.text_at(0)).unwrap_or_default();
            cur.bump();
            return Ok(UnaryWithParam { op_type: s, params: Vec::new() });
        }
        self.param(cur, "a unary op", &|_, c| {
            let mut u = UnaryWithParam { op_type: String::new(), params: Vec::new() };
            for item in c.items() {
                if let Some((key, mut value)) = item.key_value() {
                    match key {
                        "op_type" => u.op_type = value.keyword().unwrap_or("").to_owned(),
                        "params" => {
                            if let Some(list) = value.group() {
                                u.params = list.items().iter().map(Cur::norm_text).collect();
                            }
                        }
                        _ => {}
                    }
                }
            }
            if u.op_type.is_empty() {
                return Err("a unary op needs `op_type`".to_owned());
            }
            Ok(u)
        })
    }

    fn conv2d_config(&self, cur: Cur<'_>) -> DResult<Conv2dConfig> {
        let mut c = Conv2dConfig::default();
        for item in cur.items() {
            let Some((key, mut v)) = item.key_value() else {
                if item.at_end() {
                    continue;
                }
                return Err(format!(
                    "expected `key = value` in a conv2d config, found `{}`",
                    item.norm_text()
                ));
            };
            let bad = |what: &str| format!("`{key}` expects {what}");
            match key {
                "weights_dtype" => {
                    let kw = v.keyword().ok_or_else(|| bad("a data type"))?;
                    c.weights_dtype = Some(
                        DataType::from_keyword(kw)
                            .ok_or_else(|| format!("unknown data type `{kw}`"))?,
                    );
                }
                "activation" => c.activation = Some(self.unary(&mut v)?),
                "deallocate_activation" => {
                    c.deallocate_activation = Some(v.bool().ok_or_else(|| bad("a bool"))?)
                }
                "reallocate_halo_output" => {
                    c.reallocate_halo_output = Some(v.bool().ok_or_else(|| bad("a bool"))?)
                }
                "act_block_h_override" => {
                    c.act_block_h_override = Some(v.uint().ok_or_else(|| bad("an integer"))?)
                }
                "act_block_w_div" => {
                    c.act_block_w_div = Some(v.uint().ok_or_else(|| bad("an integer"))?)
                }
                "reshard_if_not_optimal" => {
                    c.reshard_if_not_optimal = Some(v.bool().ok_or_else(|| bad("a bool"))?)
                }
                "override_sharding_config" => {
                    c.override_sharding_config = Some(v.bool().ok_or_else(|| bad("a bool"))?)
                }
                "shard_layout" => {
                    c.shard_layout = Some(if v.kind(0) == Some(TokenKind::BareId) {
                        let kw = v.keyword().unwrap_or("");
                        TensorMemoryLayout::from_keyword(kw)
                            .ok_or_else(|| format!("unknown memory layout `{kw}`"))?
                    } else {
                        self.memory_layout_ref(&mut v)?
                    });
                }
                "core_grid" => c.core_grid = Some(self.core_range_set(&mut v)?),
                "transpose_shards" => {
                    c.transpose_shards = Some(v.bool().ok_or_else(|| bad("a bool"))?)
                }
                "output_layout" => {
                    let kw = v.keyword().ok_or_else(|| bad("`tile` or `row_major`"))?;
                    c.output_layout = Some(
                        PageLayout::from_keyword(kw).ok_or_else(|| bad("`tile` or `row_major`"))?,
                    );
                }
                "enable_act_double_buffer" => {
                    c.enable_act_double_buffer = Some(v.bool().ok_or_else(|| bad("a bool"))?)
                }
                "enable_weights_double_buffer" => {
                    c.enable_weights_double_buffer = Some(v.bool().ok_or_else(|| bad("a bool"))?);
                }
                "enable_kernel_stride_folding" => {
                    c.enable_kernel_stride_folding = Some(v.bool().ok_or_else(|| bad("a bool"))?);
                }
                "config_tensors_in_dram" => {
                    c.config_tensors_in_dram = Some(v.bool().ok_or_else(|| bad("a bool"))?)
                }
                _ => {}
            }
        }
        Ok(c)
    }

    fn core_coord(&self, cur: &mut Cur<'_>) -> DResult<CoreCoord> {
        self.param(cur, "a core coordinate", &|_, c| {
            let items = c.items();
            let &[mut x, mut y] = items.as_slice() else {
                return Err("a core coordinate has two numbers `<x, y>`".to_owned());
            };
            Ok(CoreCoord {
                x: x.uint().ok_or("invalid core x")?,
                y: y.uint().ok_or("invalid core y")?,
            })
        })
    }

    fn matmul_config(&self, mnemonic: &str, cur: Cur<'_>) -> DResult<MatmulProgramConfig> {
        let mut ints: FxHashMap<&str, u64> = FxHashMap::default();
        let mut bools: FxHashMap<&str, bool> = FxHashMap::default();
        let mut grid = None;
        let mut fused = None;
        for item in cur.items() {
            let Some((key, mut v)) = item.key_value() else { continue };
            match key {
                "compute_with_storage_grid_size" => grid = Some(self.core_coord(&mut v)?),
                "fused_activation" => fused = Some(self.unary(&mut v)?),
                _ => {
                    if let Some(b) = v.bool() {
                        bools.insert(key, b);
                    } else if let Some(i) = Cur::uint(&mut v.clone()) {
                        ints.insert(key, i);
                    }
                }
            }
        }
        let int = |k: &str| {
            ints.get(k).copied().ok_or_else(|| format!("a matmul program config needs `{k}`"))
        };
        let boolean = |k: &str| bools.get(k).copied().unwrap_or(false);
        let grid = || grid.ok_or("a matmul program config needs `compute_with_storage_grid_size`");
        Ok(match mnemonic {
            "matmul_multi_core_reuse_program_config" => MatmulProgramConfig::MultiCoreReuse {
                grid: grid()?,
                in0_block_w: int("in0_block_w")?,
                out_subblock_h: int("out_subblock_h")?,
                out_subblock_w: int("out_subblock_w")?,
                per_core_m: int("per_core_m")?,
                per_core_n: int("per_core_n")?,
            },
            "matmul_multi_core_reuse_multi_cast_program_config" => {
                MatmulProgramConfig::MultiCast2D {
                    grid: grid()?,
                    in0_block_w: int("in0_block_w")?,
                    out_subblock_h: int("out_subblock_h")?,
                    out_subblock_w: int("out_subblock_w")?,
                    out_block_h: int("out_block_h").or_else(|_| int("per_core_m"))?,
                    out_block_w: int("out_block_w").or_else(|_| int("per_core_n"))?,
                    per_core_m: int("per_core_m")?,
                    per_core_n: int("per_core_n")?,
                    transpose_mcast: boolean("transpose_mcast"),
                    fused_activation: fused,
                    fuse_batch: boolean("fuse_batch"),
                }
            }
            "matmul_multi_core_reuse_multi_cast_1d_program_config" => {
                MatmulProgramConfig::MultiCast1D {
                    grid: grid()?,
                    in0_block_w: int("in0_block_w")?,
                    out_subblock_h: int("out_subblock_h")?,
                    out_subblock_w: int("out_subblock_w")?,
                    out_block_h: int("out_block_h").or_else(|_| int("per_core_m"))?,
                    out_block_w: int("out_block_w").or_else(|_| int("per_core_n"))?,
                    per_core_m: int("per_core_m")?,
                    per_core_n: int("per_core_n")?,
                    fuse_batch: boolean("fuse_batch"),
                    fused_activation: fused,
                    mcast_in0: boolean("mcast_in0"),
                }
            }
            "matmul_multi_core_reuse_multi_cast_dram_sharded_program_config" => {
                MatmulProgramConfig::DramSharded {
                    in0_block_w: int("in0_block_w")?,
                    per_core_m: int("per_core_m")?,
                    per_core_n: int("per_core_n")?,
                    fused_activation: fused,
                }
            }
            other => return Err(format!("unknown matmul program config `{other}`")),
        })
    }

    fn device(&self, cur: Cur<'_>) -> DResult<DeviceDesc> {
        let mut d = DeviceDesc {
            worker_grid: None,
            dram_grid: None,
            mesh_shape: Vec::new(),
            chip_ids: Vec::new(),
        };
        let grid_of = |v: &mut Cur<'_>| -> Option<Grid> {
            if v.kind(0) == Some(TokenKind::HashId) {
                v.bump();
            }
            let mut inner = v.group()?;
            let (dims, _) = inner.dims()?;
            match dims.as_slice() {
                [r, c] => Some(Grid::new(*r, *c)),
                _ => None,
            }
        };
        for item in cur.items() {
            let Some((key, mut v)) = item.key_value() else { continue };
            match key {
                "workerGrid" => d.worker_grid = grid_of(&mut v),
                "dramGrid" => d.dram_grid = grid_of(&mut v),
                "meshShape" => d.mesh_shape = v.dims().map(|(d, _)| d).unwrap_or_default(),
                "chipIds" => {
                    if let Some(list) = v.group() {
                        d.chip_ids = list.items().iter_mut().filter_map(Cur::int).collect();
                    }
                }
                _ => {}
            }
        }
        Ok(d)
    }
}

fn buffer_keyword(mut cur: Cur<'_>) -> DResult<BufferType> {
    let kw = cur.keyword().ok_or("expected a buffer type keyword")?;
    BufferType::from_keyword(kw).ok_or_else(|| format!("unknown buffer type `{kw}`"))
}

fn tile_type(cur: Cur<'_>) -> DResult<ElementType> {
    let items = cur.items();
    let &[mut shape, mut dtype] = items.as_slice() else {
        return Err("a tile type is `!ttcore.tile<HxW, dtype>`".to_owned());
    };
    let (dims, _) = shape.dims().ok_or("expected a tile shape such as `32x32`")?;
    let [height, width] = dims.as_slice() else {
        return Err("a tile shape has two dims".to_owned());
    };
    let kw = dtype.keyword().ok_or("expected a tile data type")?;
    let dtype =
        DataType::from_keyword(kw).ok_or_else(|| format!("unknown tile data type `{kw}`"))?;
    Ok(ElementType::Tile { height: *height, width: *width, dtype })
}

fn core_range(cur: Cur<'_>) -> DResult<CoreRange> {
    let items = cur.items();
    let &[mut a, mut b] = items.as_slice() else {
        return Err("a core range is `<(x, y), (x, y)>`".to_owned());
    };
    let coord = |c: &mut Cur<'_>| -> DResult<CoreCoord> {
        let inner = c.group().ok_or("expected `(x, y)`")?;
        let parts = inner.items();
        let &[mut x, mut y] = parts.as_slice() else { return Err("expected `(x, y)`".to_owned()) };
        Ok(CoreCoord { x: x.uint().ok_or("invalid x")?, y: y.uint().ok_or("invalid y")? })
    };
    let start = coord(&mut a)?;
    let end = coord(&mut b)?;
    if end.x < start.x || end.y < start.y {
        return Err(format!(
            "core range ends at ({},{}) before it starts at ({},{})",
            end.x, end.y, start.x, start.y
        ));
    }
    Ok(CoreRange { start, end })
}

fn compute_config(cur: Cur<'_>) -> DResult<DeviceComputeKernelConfig> {
    let mut c = DeviceComputeKernelConfig::default();
    for item in cur.items() {
        let Some((key, mut v)) = item.key_value() else { continue };
        match key {
            "math_fidelity" => {
                let kw = v.keyword().unwrap_or("");
                c.math_fidelity = MathFidelity::from_keyword(kw);
            }
            "math_approx_mode" => c.math_approx_mode = v.bool(),
            "fp32_dest_acc_en" => c.fp32_dest_acc_en = v.bool(),
            "packer_l1_acc" => c.packer_l1_acc = v.bool(),
            "dst_full_sync_en" => c.dst_full_sync_en = v.bool(),
            _ => {}
        }
    }
    Ok(c)
}

fn system_desc(cur: Cur<'_>) -> DResult<SystemDesc> {
    let items = cur.items();
    let mut chips = Vec::new();
    if let Some(mut chip_list) = items.get(1).copied()
        && let Some(list) = chip_list.group()
    {
        {
            for mut chip in list.items() {
                let Some(dict) = chip.group() else { continue };
                let mut c = ChipDesc {
                    arch: None,
                    grid: None,
                    l1_size: None,
                    l1_unreserved_base: None,
                    num_dram_channels: None,
                    dram_channel_size: None,
                };
                for entry in dict.items() {
                    let Some((key, mut v)) = entry.key_value() else { continue };
                    match key {
                        "arch" => {
                            c.arch = v.group().and_then(|mut g| g.keyword().map(str::to_owned));
                        }
                        "grid" => {
                            c.grid = v.dims().and_then(|(d, _)| match d.as_slice() {
                                [r, c] => Some(Grid::new(*r, *c)),
                                _ => None,
                            });
                        }
                        "l1_size" => c.l1_size = v.uint(),
                        "l1_unreserved_base" => c.l1_unreserved_base = v.uint(),
                        "num_dram_channels" => c.num_dram_channels = v.uint(),
                        "dram_channel_size" => c.dram_channel_size = v.uint(),
                        _ => {}
                    }
                }
                chips.push(c);
            }
        }
    }
    Ok(SystemDesc { chips })
}

/// `#ttnn.conv2d_slice_config<dram_height, 4>`: a slice type keyword and a slice count, both
/// positional.
fn conv2d_slice_config(cur: Cur<'_>) -> DResult<Conv2dSliceConfig> {
    let items = cur.items();
    let [kind, count] = items.as_slice() else {
        return Err("a conv2d slice config is `<slice type, number of slices>`".to_owned());
    };
    let mut kind = *kind;
    let kw = kind.keyword().ok_or("expected `l1_full`, `dram_height` or `dram_width`")?;
    let slice_type = Conv2dSliceType::from_keyword(kw)
        .ok_or_else(|| format!("unknown conv2d slice type `{kw}`"))?;
    let mut count = *count;
    let num_slices = count.uint().ok_or("the number of slices must be a non-negative integer")?;
    Ok(Conv2dSliceConfig { slice_type, num_slices })
}
