//! `cargo xtask gen`: synthetic TTNN graphs in tt-mlir's printed style, for benchmarks,
//! fuzz seeds and large-input tests.
//!
//! A graph is one `func.func @main` whose ops are shaped like real models: transformer
//! layers (RMS norm, Q/K/V projections, head reshapes and permutes, scaled scores, softmax,
//! an MLP with a SiLU gate, residual adds, the odd f32 typecast around softmax, KV-cache
//! concats), and ResNet-style conv blocks on flattened `1x1x(N*H*W)xC` activations (3x3
//! convs with the device operand, 1x1 stride-2 shortcuts, inception-like concat branches).
//! Values fork (one result feeding several consumers) the way they do in those models.
//!
//! Every tensor is DRAM interleaved and tiled, with its `#ttnn.ttnn_layout` computed by
//! `ttnn_types` (so layouts always agree with shapes), and every op carries a unique
//! `loc("name_N")` so overrides can target it. Output depends only on `(ops, seed, kind)`.
//!
//! ```text
//! %5 = "ttnn.matmul"(%4, %arg2) <{transpose_a = false, transpose_b = false}> : (...) -> ... loc("k_proj_5")
//! ```

use std::{fmt::Write as _, io::Write as _, path::Path};

use rustc_hash::FxHashMap;
use ttnn_types::{DataType, PageLayout, TtnnLayout};

use crate::util::{Flags, Rng};

/// The family of ops a generated graph is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GraphKind {
    Transformer,
    Conv,
    /// Both streams side by side, interleaved block by block; both are returned.
    Mixed,
}

impl GraphKind {
    pub(crate) const ALL: [GraphKind; 3] =
        [GraphKind::Transformer, GraphKind::Conv, GraphKind::Mixed];

    pub(crate) fn from_name(s: &str) -> Option<GraphKind> {
        match s {
            "transformer" => Some(GraphKind::Transformer),
            "conv" => Some(GraphKind::Conv),
            "mixed" => Some(GraphKind::Mixed),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            GraphKind::Transformer => "transformer",
            GraphKind::Conv => "conv",
            GraphKind::Mixed => "mixed",
        }
    }
}

/// A generated file: exactly `ops` ops after `ttnn.get_device`, then `return`.
pub(crate) fn generate(ops: usize, seed: u64, kind: GraphKind) -> String {
    let parts = generate_parts(ops, seed, kind);
    let mut out = String::with_capacity(parts.aliases.len() + parts.func.len() + 16);
    out.push_str(&parts.aliases);
    out.push_str("module {\n");
    out.push_str(&parts.func);
    out.push_str("}\n");
    out
}

/// A generated graph in the two pieces a caller needs to build bigger files: the alias
/// definitions (file level) and the function (module level, named `@main`).
pub(crate) struct GeneratedParts {
    pub(crate) aliases: String,
    pub(crate) func: String,
}

pub(crate) fn generate_parts(ops: usize, seed: u64, kind: GraphKind) -> GeneratedParts {
    let mut g = Gen {
        rng: Rng::new(seed),
        body: String::with_capacity(ops * 260),
        layouts: Vec::new(),
        layout_ids: FxHashMap::default(),
        args: Vec::new(),
        next_value: 1,
        budget: ops,
    };
    g.body.push_str(
        "    %0 = \"ttnn.get_device\"() <{mesh_offset = #ttnn<mesh_offset 0x0>, \
         mesh_shape = #ttnn<mesh_shape 1x1>}> : () -> !ttnn.device loc(\"get_device_0\")\n",
    );
    let mut transformer = matches!(kind, GraphKind::Transformer | GraphKind::Mixed)
        .then(|| TransformerStream::new(&mut g));
    let mut conv =
        matches!(kind, GraphKind::Conv | GraphKind::Mixed).then(|| ConvStream::new(&mut g));
    while g.budget > 0 {
        let conv_first = match (&transformer, &conv) {
            (Some(_), Some(_)) => g.rng.chance(50),
            (None, _) => true,
            (Some(_), None) => false,
        };
        // A block that does not fit the remaining budget declines; then the other stream
        // tries, and only when neither fits do shape-preserving unary ops fill the rest.
        let emitted = if conv_first {
            conv.as_mut().is_some_and(|c| c.block(&mut g))
                || transformer.as_mut().is_some_and(|t| t.layer(&mut g))
        } else {
            transformer.as_mut().is_some_and(|t| t.layer(&mut g))
                || conv.as_mut().is_some_and(|c| c.block(&mut g))
        };
        if !emitted {
            match (transformer.as_mut(), conv.as_mut()) {
                (Some(t), _) if !conv_first => {
                    let name = g.rng.pick(&["gelu", "silu", "relu"]);
                    t.x = g.unary(name, &t.x, name);
                }
                (_, Some(c)) => c.x = g.unary("relu", &c.x, "relu"),
                (Some(t), None) => t.x = g.unary("gelu", &t.x, "gelu"),
                (None, None) => break,
            }
        }
    }
    let results: Vec<Val> = transformer.map(|t| t.x).into_iter().chain(conv.map(|c| c.x)).collect();
    g.finish(&results)
}

/// A generated tensor type: shape, data type and placement. Device tensors are DRAM
/// interleaved tile; `host` tensors are row-major in system memory, where tt-mlir keeps conv
/// weights until `prepare_conv2d_weights` (tiling a `Kx3x3` weight would pad 3 to 32).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Ty {
    shape: Vec<u64>,
    dtype: DataType,
    host: bool,
}

impl Ty {
    fn bf16(shape: &[u64]) -> Ty {
        Ty { shape: shape.to_vec(), dtype: DataType::BF16, host: false }
    }

    fn host_bf16(shape: &[u64]) -> Ty {
        Ty { shape: shape.to_vec(), dtype: DataType::BF16, host: true }
    }

    fn with_dtype(&self, dtype: DataType) -> Ty {
        Ty { dtype, ..self.clone() }
    }
}

/// An SSA value (`%12`, `%arg3`) and its type.
#[derive(Debug, Clone)]
struct Val {
    name: String,
    ty: Ty,
}

struct Gen {
    rng: Rng,
    body: String,
    /// Layout aliases in order of first use: `#ttnn_layout`, `#ttnn_layout1`, ...
    layouts: Vec<Ty>,
    layout_ids: FxHashMap<Ty, usize>,
    /// Function arguments: type and `ttcore.argument_type`.
    args: Vec<(Ty, &'static str)>,
    next_value: usize,
    /// Ops still to emit.
    budget: usize,
}

impl Gen {
    fn type_text(&mut self, ty: &Ty) -> String {
        let next = self.layouts.len();
        let id = *self.layout_ids.entry(ty.clone()).or_insert(next);
        if id == next {
            self.layouts.push(ty.clone());
        }
        let dims: String = ty.shape.iter().map(|d| format!("{d}x")).collect();
        let alias = if id == 0 { "ttnn_layout".to_owned() } else { format!("ttnn_layout{id}") };
        format!("tensor<{dims}{}, #{alias}>", ty.dtype.keyword())
    }

    fn arg(&mut self, ty: Ty, role: &'static str) -> Val {
        let name = format!("%arg{}", self.args.len());
        self.args.push((ty.clone(), role));
        Val { name, ty }
    }

    /// Emits one op with a single tensor result and takes it off the budget.
    ///
    /// `props` is the text inside `<{...}>` (empty for none), keys sorted the way tt-mlir
    /// prints them; `device` appends the `!ttnn.device` operand last, as conv2d takes it.
    fn op(
        &mut self,
        name: &str,
        operands: &[&Val],
        device: bool,
        props: &str,
        result: Ty,
        label: &str,
    ) -> Val {
        let id = self.next_value;
        self.next_value += 1;
        self.budget = self.budget.saturating_sub(1);
        let mut names: Vec<&str> = operands.iter().map(|v| v.name.as_str()).collect();
        let mut types: Vec<String> = operands.iter().map(|v| self.type_text(&v.ty)).collect();
        if device {
            names.push("%0");
            types.push("!ttnn.device".to_owned());
        }
        let result_text = self.type_text(&result);
        let props = if props.is_empty() { String::new() } else { format!(" <{{{props}}}>") };
        let _ = writeln!(
            self.body,
            "    %{id} = \"ttnn.{name}\"({}){props} : ({}) -> {result_text} loc(\"{label}_{id}\")",
            names.join(", "),
            types.join(", "),
        );
        Val { name: format!("%{id}"), ty: result }
    }

    /// A shape-preserving unary op; fills the budget when no whole block fits.
    fn unary(&mut self, name: &str, x: &Val, label: &str) -> Val {
        self.op(name, &[x], false, "", x.ty.clone(), label)
    }

    fn reshape(&mut self, x: &Val, shape: &[u64], label: &str) -> Val {
        let dims: Vec<String> = shape.iter().map(|d| format!("{d} : i32")).collect();
        let props = format!("shape = [{}]", dims.join(", "));
        let ty = Ty { shape: shape.to_vec(), ..x.ty.clone() };
        self.op("reshape", &[x], false, &props, ty, label)
    }

    fn permute(&mut self, x: &Val, perm: [usize; 4], label: &str) -> Val {
        let shape: Vec<u64> = perm.iter().map(|&p| x.ty.shape[p]).collect();
        let list: Vec<String> = perm.iter().map(usize::to_string).collect();
        let props = format!("permutation = array<i64: {}>", list.join(", "));
        let ty = Ty { shape, ..x.ty.clone() };
        self.op("permute", &[x], false, &props, ty, label)
    }

    /// `a @ b` over the last two dims, batch dims taken from `a`.
    fn matmul(&mut self, a: &Val, b: &Val, label: &str) -> Val {
        let mut shape = a.ty.shape.clone();
        let n = b.ty.shape[b.ty.shape.len() - 1];
        *shape.last_mut().unwrap_or(&mut 0) = n;
        let ty = Ty { shape, ..a.ty.clone() };
        self.op("matmul", &[a, b], false, "transpose_a = false, transpose_b = false", ty, label)
    }

    fn binary(&mut self, name: &str, a: &Val, b: &Val, label: &str) -> Val {
        self.op(name, &[a, b], false, "", a.ty.clone(), label)
    }

    fn rms_norm(&mut self, x: &Val, label: &str) -> Val {
        let hidden = x.ty.shape[x.ty.shape.len() - 1];
        let gamma = self.arg(Ty::bf16(&[hidden]), "parameter");
        let props = "epsilon = 9.99999974E-6 : f32, operandSegmentSizes = array<i32: 1, 1, 0>";
        self.op("rms_norm", &[x, &gamma], false, props, x.ty.clone(), label)
    }

    fn finish(mut self, results: &[Val]) -> GeneratedParts {
        let result_types: Vec<String> = results.iter().map(|v| self.type_text(&v.ty)).collect();
        let names: Vec<&str> = results.iter().map(|v| v.name.as_str()).collect();
        let _ =
            writeln!(self.body, "    return {} : {}", names.join(", "), result_types.join(", "));

        let args = std::mem::take(&mut self.args);
        let mut func = String::with_capacity(self.body.len() + args.len() * 120 + 256);
        func.push_str("  func.func @main(");
        for (i, (ty, role)) in args.iter().enumerate() {
            if i > 0 {
                func.push_str(", ");
            }
            let text = self.type_text(ty);
            let _ = write!(
                func,
                "%arg{i}: {text} {{ttcore.argument_type = #ttcore.argument_type<{role}>}}"
            );
        }
        func.push_str(") -> ");
        if result_types.len() == 1 {
            func.push_str(&result_types[0]);
        } else {
            let _ = write!(func, "({})", result_types.join(", "));
        }
        func.push_str(" attributes {tt.function_type = \"forward_device\"} {\n");
        func.push_str(&self.body);
        func.push_str("  }\n");

        let mut aliases = String::from("#dram = #ttnn.buffer_type<dram>\n");
        if self.layouts.iter().any(|ty| ty.host) {
            aliases.push_str("#system_memory = #ttnn.buffer_type<system_memory>\n");
        }
        for (id, ty) in self.layouts.iter().enumerate() {
            let layout = match ty.dtype.scalar_type() {
                Some(scalar) if ty.host => TtnnLayout::system_memory(&ty.shape, scalar),
                _ => TtnnLayout::dram_interleaved(&ty.shape, ty.dtype, PageLayout::Tile),
            };
            if id == 0 {
                aliases.push_str("#ttnn_layout = ");
            } else {
                let _ = write!(aliases, "#ttnn_layout{id} = ");
            }
            let _ = layout.write_mlir(&mut aliases, &|b| format!("#{b}"));
            aliases.push('\n');
        }
        GeneratedParts { aliases, func }
    }
}

/// The running activation of a decoder stack and the dimensions all its layers share.
struct TransformerStream {
    x: Val,
    seq: u64,
    hidden: u64,
    ffn: u64,
    heads: u64,
    head_dim: u64,
    layer: usize,
}

impl TransformerStream {
    /// Ops in one layer: attention and MLP, plus 2 for a KV-cache concat pair and 2 for an
    /// f32 typecast pair around softmax.
    const BASE_OPS: usize = 26;

    fn new(g: &mut Gen) -> TransformerStream {
        let hidden = g.rng.pick(&[1024u64, 2048, 3072, 4096]);
        let seq = g.rng.pick(&[32u64, 64, 128, 256, 512, 1024, 2048]);
        let head_dim = g.rng.pick(&[64u64, 128]);
        // Llama-style MLPs use 8/3 of the hidden size rounded to 256; others use 4x.
        let ffn = if g.rng.chance(50) { (hidden * 8 / 3).div_ceil(256) * 256 } else { hidden * 4 };
        let x = g.arg(Ty::bf16(&[1, seq, hidden]), "input");
        TransformerStream { x, seq, hidden, ffn, heads: hidden / head_dim, head_dim, layer: 0 }
    }

    /// Emits one decoder layer, or returns false if it does not fit the op budget.
    fn layer(&mut self, g: &mut Gen) -> bool {
        let kv_cache = g.rng.chance(25);
        let f32_softmax = g.rng.chance(20);
        let size = Self::BASE_OPS + 2 * usize::from(kv_cache) + 2 * usize::from(f32_softmax);
        if g.budget < size {
            return false;
        }
        let (s, h, nh, hd) = (self.seq, self.hidden, self.heads, self.head_dim);
        let l = self.layer;
        self.layer += 1;
        let x = self.x.clone();

        // Attention. `n1` forks into the three projections, `x` into the norm and residual.
        let n1 = g.rms_norm(&x, &format!("l{l}_attn_norm"));
        let wq = g.arg(Ty::bf16(&[h, h]), "parameter");
        let bq = g.arg(Ty::bf16(&[h]), "parameter");
        let q = g.op(
            "linear",
            &[&n1, &wq, &bq],
            false,
            "transpose_a = false, transpose_b = false",
            Ty::bf16(&[1, s, h]),
            &format!("l{l}_q_proj"),
        );
        let wk = g.arg(Ty::bf16(&[h, h]), "parameter");
        let k = g.matmul(&n1, &wk, &format!("l{l}_k_proj"));
        let wv = g.arg(Ty::bf16(&[h, h]), "parameter");
        let v = g.matmul(&n1, &wv, &format!("l{l}_v_proj"));

        let q = g.reshape(&q, &[1, s, nh, hd], &format!("l{l}_q_heads"));
        let q = g.permute(&q, [0, 2, 1, 3], &format!("l{l}_q_permute"));
        let k = g.reshape(&k, &[1, s, nh, hd], &format!("l{l}_k_heads"));
        let mut k = g.permute(&k, [0, 2, 1, 3], &format!("l{l}_k_permute"));
        let v = g.reshape(&v, &[1, s, nh, hd], &format!("l{l}_v_heads"));
        let mut v = g.permute(&v, [0, 2, 1, 3], &format!("l{l}_v_permute"));
        let mut keys = s;
        if kv_cache {
            let past = g.rng.pick(&[32u64, 64, 128, 256, 512, 1024]);
            let past_k = g.arg(Ty::bf16(&[1, nh, past, hd]), "input");
            let past_v = g.arg(Ty::bf16(&[1, nh, past, hd]), "input");
            keys = past + s;
            let cat = Ty::bf16(&[1, nh, keys, hd]);
            k = g.op(
                "concat",
                &[&past_k, &k],
                false,
                "dim = 2 : si32",
                cat.clone(),
                &format!("l{l}_k_cache"),
            );
            v = g.op(
                "concat",
                &[&past_v, &v],
                false,
                "dim = 2 : si32",
                cat,
                &format!("l{l}_v_cache"),
            );
        }
        let kt = g.permute(&k, [0, 1, 3, 2], &format!("l{l}_k_transpose"));
        let scores = g.matmul(&q, &kt, &format!("l{l}_scores"));
        let scale = g.arg(Ty::bf16(&[1, 1, 1, 1]), "constant");
        let mut scores = g.binary("multiply", &scores, &scale, &format!("l{l}_scale"));
        if f32_softmax {
            let ty = scores.ty.with_dtype(DataType::F32);
            scores = g.op("typecast", &[&scores], false, "", ty, &format!("l{l}_scores_f32"));
        }
        let mut probs = g.op(
            "softmax",
            &[&scores],
            false,
            "dimension = -1 : si32, numericStable = true",
            scores.ty.clone(),
            &format!("l{l}_softmax"),
        );
        if f32_softmax {
            let ty = probs.ty.with_dtype(DataType::BF16);
            probs = g.op("typecast", &[&probs], false, "", ty, &format!("l{l}_probs_bf16"));
        }
        debug_assert_eq!(probs.ty.shape, [1, nh, s, keys]);
        let ctx = g.matmul(&probs, &v, &format!("l{l}_context"));
        let ctx = g.permute(&ctx, [0, 2, 1, 3], &format!("l{l}_context_permute"));
        let ctx = g.reshape(&ctx, &[1, s, h], &format!("l{l}_context_merge"));
        let wo = g.arg(Ty::bf16(&[h, h]), "parameter");
        let attn = g.matmul(&ctx, &wo, &format!("l{l}_o_proj"));
        let r1 = g.binary("add", &x, &attn, &format!("l{l}_attn_residual"));

        // MLP with a SiLU gate; `n2` forks into gate and up, `r1` into norm and residual.
        let n2 = g.rms_norm(&r1, &format!("l{l}_mlp_norm"));
        let wg = g.arg(Ty::bf16(&[h, self.ffn]), "parameter");
        let gate = g.matmul(&n2, &wg, &format!("l{l}_gate_proj"));
        let wu = g.arg(Ty::bf16(&[h, self.ffn]), "parameter");
        let up = g.matmul(&n2, &wu, &format!("l{l}_up_proj"));
        let gate = g.unary("silu", &gate, &format!("l{l}_gate_act"));
        let act = g.binary("multiply", &gate, &up, &format!("l{l}_gate_mul"));
        let wd = g.arg(Ty::bf16(&[self.ffn, h]), "parameter");
        let down = g.matmul(&act, &wd, &format!("l{l}_down_proj"));
        self.x = g.binary("add", &r1, &down, &format!("l{l}_mlp_residual"));
        true
    }
}

/// The running activation of a ResNet-style conv stack: `1x1x(H*W)xC`, batch 1.
struct ConvStream {
    x: Val,
    height: u64,
    width: u64,
    channels: u64,
    block: usize,
}

impl ConvStream {
    fn new(g: &mut Gen) -> ConvStream {
        let (side, channels) = g.rng.pick(&[(56u64, 64u64), (56, 64), (28, 128), (14, 256)]);
        let x = g.arg(Ty::bf16(&[1, 1, side * side, channels]), "input");
        ConvStream { x, height: side, width: side, channels, block: 0 }
    }

    /// Emits one residual, downsampling or branch block, or returns false if it does not fit
    /// the op budget.
    fn block(&mut self, g: &mut Gen) -> bool {
        let downsample = self.height > 7 && g.rng.chance(25);
        let branch = !downsample && g.rng.chance(20);
        let size = if downsample {
            6
        } else if branch {
            4
        } else {
            5
        };
        if g.budget < size {
            return false;
        }
        let b = self.block;
        self.block += 1;
        let x = self.x.clone();
        let c = self.channels;
        let input = (self.height, self.width, c);
        if downsample {
            // conv3x3/2 -> relu -> conv3x3, plus a conv1x1/2 shortcut on the forked input.
            let a = conv(g, &x, input, 2 * c, 3, 2, &format!("b{b}_conv_a"));
            let a = g.unary("relu", &a, &format!("b{b}_relu_a"));
            let halved = (self.height.div_ceil(2), self.width.div_ceil(2), 2 * c);
            let a = conv(g, &a, halved, 2 * c, 3, 1, &format!("b{b}_conv_b"));
            let sc = conv(g, &x, input, 2 * c, 1, 2, &format!("b{b}_shortcut"));
            let sum = g.binary("add", &a, &sc, &format!("b{b}_residual"));
            self.x = g.unary("relu", &sum, &format!("b{b}_relu_out"));
            (self.height, self.width, self.channels) = halved;
        } else if branch {
            // Inception-like: two branches of half the channels each, concatenated on C.
            let a = conv(g, &x, input, c / 2, 1, 1, &format!("b{b}_branch_1x1"));
            let bb = conv(g, &x, input, c / 2, 3, 1, &format!("b{b}_branch_3x3"));
            let cat = g.op(
                "concat",
                &[&a, &bb],
                false,
                "dim = 3 : si32",
                x.ty.clone(),
                &format!("b{b}_concat"),
            );
            self.x = g.unary("relu", &cat, &format!("b{b}_relu_out"));
        } else {
            let a = conv(g, &x, input, c, 3, 1, &format!("b{b}_conv_a"));
            let a = g.unary("relu", &a, &format!("b{b}_relu_a"));
            let a = conv(g, &a, input, c, 3, 1, &format!("b{b}_conv_b"));
            let sum = g.binary("add", &a, &x, &format!("b{b}_residual"));
            self.x = g.unary("relu", &sum, &format!("b{b}_relu_out"));
        }
        true
    }
}

/// A conv2d on a `(height, width, channels)` input. `kernel` is 3 (padding 1) or 1 (padding
/// 0); the output keeps the flattened `1x1x(OH*OW)xC` form tt-mlir uses.
fn conv(
    g: &mut Gen,
    x: &Val,
    (height, width, in_c): (u64, u64, u64),
    out_c: u64,
    kernel: u64,
    stride: u64,
    label: &str,
) -> Val {
    let pad = kernel / 2;
    let out_h = (height + 2 * pad - kernel) / stride + 1;
    let out_w = (width + 2 * pad - kernel) / stride + 1;
    let w = g.arg(Ty::host_bf16(&[out_c, in_c, kernel, kernel]), "parameter");
    let bias = g.arg(Ty::host_bf16(&[1, 1, 1, out_c]), "parameter");
    let props = format!(
        "batch_size = 1 : i32, dilation = array<i32: 1, 1>, groups = 1 : i32, \
         in_channels = {in_c} : i32, input_height = {height} : i32, \
         input_width = {width} : i32, kernel_size = array<i32: {kernel}, {kernel}>, \
         out_channels = {out_c} : i32, padding = array<i32: {pad}, {pad}, {pad}, {pad}>, \
         stride = array<i32: {stride}, {stride}>",
    );
    let ty = Ty::bf16(&[1, 1, out_h * out_w, out_c]);
    g.op("conv2d", &[x, &w, &bias], true, &props, ty, label)
}

/// `cargo xtask gen --ops N [--seed S] [--kind transformer|conv|mixed] [-o FILE]`.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let flags = Flags::parse("gen", args, &["--ops", "--seed", "--kind", "-o"], &[])?;
    let ops: usize = flags
        .value("--ops")
        .ok_or_else(|| anyhow::format_err!("`gen` needs `--ops N`"))?
        .parse()
        .map_err(|e| anyhow::format_err!("invalid `--ops` value: {e}"))?;
    let seed: u64 = flags.parsed("--seed", 0)?;
    let kind_name = flags.value("--kind").unwrap_or("mixed");
    let kind = GraphKind::from_name(kind_name).ok_or_else(|| {
        let names: Vec<&str> = GraphKind::ALL.iter().map(|k| k.name()).collect();
        anyhow::format_err!("unknown `--kind` `{kind_name}`, expected one of: {}", names.join(", "))
    })?;
    let text = generate(ops, seed, kind);
    match flags.value("-o") {
        Some(path) => crate::util::write_file(Path::new(path), text.as_bytes()),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Generates, parses and lowers; asserts zero diagnostics, the exact op count, and that
    /// printing and re-parsing yields the same semantic model.
    fn check_clean(ops: usize, seed: u64, kind: GraphKind) {
        let text = generate(ops, seed, kind);
        let parse = syntax::parse(&text);
        let lowered = ir::lower_parse(&text, &parse);
        let diags: Vec<String> = lowered
            .diagnostics
            .iter()
            .take(5)
            .map(|d| format!("{}: {} at {:?}", d.code, d.message, d.range))
            .collect();
        assert!(diags.is_empty(), "{} ops, seed {seed}, {}: {diags:#?}", ops, kind.name());
        assert_eq!(lowered.funcs.len(), 1);
        let body = &lowered.funcs[0].body;
        assert_eq!(body.ops.len(), ops + 1, "get_device plus the requested ops");

        let printed = syntax::print(&text, &parse);
        let reparsed = syntax::parse(&printed);
        assert!(reparsed.errors.is_empty(), "{:?}", reparsed.errors.first());
        let relowered = ir::lower_parse(&printed, &reparsed);
        assert!(relowered.diagnostics.is_empty());
        assert_eq!(relowered.funcs[0].body, lowered.funcs[0].body);
    }

    #[test]
    fn generated_graphs_lower_without_diagnostics_and_round_trip() {
        for kind in GraphKind::ALL {
            for seed in [0, 1, 2, 0xDEAD_BEEF] {
                check_clean(200, seed, kind);
            }
            check_clean(2000, 7, kind);
        }
    }

    #[test]
    fn tiny_budgets_still_give_valid_graphs() {
        for kind in GraphKind::ALL {
            for ops in [0, 1, 3, 5, 27] {
                check_clean(ops, 3, kind);
            }
        }
    }

    #[test]
    fn generation_is_deterministic_per_seed() {
        for kind in GraphKind::ALL {
            assert_eq!(generate(300, 11, kind), generate(300, 11, kind));
            assert_ne!(generate(300, 11, kind), generate(300, 12, kind));
        }
    }

    #[test]
    fn graphs_contain_forks_concats_convs_and_unique_locations() {
        let text = generate(2000, 5, GraphKind::Mixed);
        let parse = syntax::parse(&text);
        let lowered = ir::lower_parse(&text, &parse);
        let func = &lowered.funcs[0];
        let names: Vec<&str> = func.body.ops.iter().map(|o| o.name.as_str()).collect();
        for expected in [
            "ttnn.conv2d",
            "ttnn.concat",
            "ttnn.rms_norm",
            "ttnn.linear",
            "ttnn.matmul",
            "ttnn.softmax",
            "ttnn.permute",
            "ttnn.reshape",
            "ttnn.typecast",
            "ttnn.multiply",
            "ttnn.add",
            "ttnn.relu",
        ] {
            assert!(names.contains(&expected), "no {expected} in a 2000-op mixed graph");
        }

        let mut uses: FxHashMap<ir::ValueRef, usize> = FxHashMap::default();
        for op in &func.body.ops {
            for v in &op.operands {
                *uses.entry(*v).or_default() += 1;
            }
        }
        let forks =
            uses.iter().filter(|(v, n)| matches!(v, ir::ValueRef::Result { .. }) && **n >= 2);
        assert!(forks.count() > 100, "values with several consumers");

        let locs: Vec<&str> =
            func.body.ops.iter().map(|o| func.loc_names.of_key(&o.key).unwrap_or("")).collect();
        assert!(locs.iter().all(|l| !l.is_empty()), "every op has a name location");
        let mut sorted = locs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), locs.len(), "location names are unique");
    }
}
