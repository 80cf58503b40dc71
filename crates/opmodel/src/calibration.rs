//! The calibration table: every elementwise, simple and normalization point of our notes
//! (opmodel.md §6.1–6.2, tt-mlir's op-model unit tests before 081a2ae4b4, tt-metal of about
//! Nov 2025, n150 8x8) run through [`AnalyticalModel`], with relative errors.
//!
//! Each query is built the way the unit test built it (operand shapes, layouts and dtypes, the
//! output layout it passed), and a note names the test.
//!
//! Matmul, linear, conv2d and transformer points are held out on purpose (§6.3–6.4).
//! `cargo xtask calibrate` prints [`calibration_report`]; a snapshot test pins it.

use std::fmt::Write as _;

use target::Target;
use ttnn_types::{DataType, Grid, PageLayout, TensorMemoryLayout, TtnnLayout};

use crate::{
    AnalyticalModel, OpConfig, OpKind, OpModel, OpQuery, OutputHint, TensorDesc, kind::AttrLookup,
    op_kind,
};

/// Reference values: cb, tensor, peak, out (bytes per core); `None` where not asserted.
type Reference = [Option<u64>; 4];

/// One calibration point.
struct Point {
    op: &'static str,
    case: &'static str,
    /// `None` when the notes do not record enough to build the query.
    query: Option<OpQuery>,
    reference: Reference,
    note: &'static str,
}

const COLUMNS: [&str; 4] = ["cb", "tensor", "peak", "out"];
const TOLERANCE: f64 = 0.05;

const BF16: DataType = DataType::BF16;
const WORKER: Grid = Grid::new(8, 8);

fn dram(shape: &[u64], dt: DataType) -> TtnnLayout {
    TtnnLayout::dram_interleaved(shape, dt, PageLayout::Tile)
}

fn l1(shape: &[u64], dt: DataType) -> TtnnLayout {
    TtnnLayout::l1_interleaved(shape, dt, PageLayout::Tile, WORKER)
}

fn rm_dram(shape: &[u64], dt: DataType) -> TtnnLayout {
    TtnnLayout::dram_interleaved(shape, dt, PageLayout::RowMajor)
}

fn hs(shape: &[u64], dt: DataType, cores: u64) -> TtnnLayout {
    TtnnLayout::sharded(
        shape,
        dt,
        PageLayout::Tile,
        TensorMemoryLayout::HeightSharded,
        Grid::new(cores, 1),
        WORKER,
    )
    .unwrap_or_else(|_| dram(shape, dt))
}

fn t(shape: &[u64], layout: TtnnLayout) -> TensorDesc {
    TensorDesc::new(shape, layout)
}

/// Attributes given as a list of (name, value) pairs.
pub(crate) struct Attrs(pub(crate) Vec<(&'static str, AttrValue)>);

pub(crate) enum AttrValue {
    Int(i64),
    Bool(bool),
    Ints(Vec<i64>),
    #[cfg_attr(not(test), expect(dead_code, reason = "only unit tests spell string attributes"))]
    Str(&'static str),
}

impl AttrLookup for Attrs {
    fn int(&self, name: &str) -> Option<i64> {
        self.0.iter().find_map(|(k, v)| match v {
            AttrValue::Int(i) if *k == name => Some(*i),
            _ => None,
        })
    }
    fn bool(&self, name: &str) -> Option<bool> {
        self.0.iter().find_map(|(k, v)| match v {
            AttrValue::Bool(b) if *k == name => Some(*b),
            _ => None,
        })
    }
    fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.0.iter().find_map(|(k, v)| match v {
            AttrValue::Ints(i) if *k == name => Some(i.clone()),
            _ => None,
        })
    }
    fn string(&self, name: &str) -> Option<String> {
        self.0.iter().find_map(|(k, v)| match v {
            AttrValue::Str(s) if *k == name => Some((*s).to_owned()),
            _ => None,
        })
    }
    fn float(&self, _: &str) -> Option<f64> {
        None
    }
}

fn kind(name: &str, attrs: Vec<(&'static str, AttrValue)>) -> OpKind {
    op_kind(name, &Attrs(attrs))
}

fn query(
    kind: OpKind,
    inputs: Vec<TensorDesc>,
    out_shape: &[u64],
    dt: DataType,
    out: OutputHint,
) -> Option<OpQuery> {
    Some(OpQuery {
        kind,
        inputs,
        output_shape: out_shape.to_vec(),
        output_dtype: dt,
        output: out,
        config: OpConfig::None,
        l1_in_use: 0,
    })
}

fn out_l1(shape: &[u64], dt: DataType) -> OutputHint {
    OutputHint::Layout(l1(shape, dt))
}

fn out_dram(shape: &[u64], dt: DataType) -> OutputHint {
    OutputHint::Layout(dram(shape, dt))
}

fn r(cb: Option<u64>, tensor: Option<u64>, peak: Option<u64>, out: Option<u64>) -> Reference {
    [cb, tensor, peak, out]
}

#[expect(clippy::too_many_lines, reason = "one entry per calibration point, read as a table")]
fn points() -> Vec<Point> {
    use AttrValue::{Bool, Int, Ints};
    let s = [64, 1024];
    let unary = |name: &'static str| kind(name, vec![]);
    let mut p = Vec::new();
    let mut add = |op: &'static str,
                   case: &'static str,
                   query: Option<OpQuery>,
                   reference: Reference,
                   note: &'static str| {
        p.push(Point { op, case, query, reference, note });
    };

    add(
        "relu",
        "64x1024 DRAM -> DRAM",
        query(unary("ttnn.relu"), vec![t(&s, dram(&s, BF16))], &s, BF16, out_dram(&s, BF16)),
        r(Some(8192), Some(0), Some(8192), Some(0)),
        "",
    );
    add(
        "relu",
        "64x1024 DRAM -> L1 interleaved",
        query(unary("ttnn.relu"), vec![t(&s, dram(&s, BF16))], &s, BF16, out_l1(&s, BF16)),
        r(Some(8192), Some(2048), Some(10240), Some(2048)),
        "",
    );
    let hs_shape = [28672, 32];
    add(
        "relu",
        "28672x32 HS 64 cores -> HS",
        query(
            unary("ttnn.relu"),
            vec![t(&hs_shape, hs(&hs_shape, BF16, 64))],
            &hs_shape,
            BF16,
            OutputHint::Layout(hs(&hs_shape, BF16, 64)),
        ),
        r(Some(0), Some(28672), Some(28672), Some(28672)),
        "",
    );
    add(
        "add",
        "64x1024 DRAM + DRAM -> L1",
        query(
            unary("ttnn.add"),
            vec![t(&s, dram(&s, BF16)), t(&s, dram(&s, BF16))],
            &s,
            BF16,
            out_l1(&s, BF16),
        ),
        r(Some(12288), Some(2048), None, Some(2048)),
        "",
    );
    let hs8 = [32768, 32];
    add(
        "add",
        "32768x32 HS 8x1 (128 tiles/core)",
        query(
            unary("ttnn.add"),
            vec![t(&hs8, hs(&hs8, BF16, 8)), t(&hs8, hs(&hs8, BF16, 8))],
            &hs8,
            BF16,
            OutputHint::Layout(hs(&hs8, BF16, 8)),
        ),
        r(Some(12288), Some(262144), Some(274432), Some(262144)),
        "",
    );
    add(
        "bitwise_and",
        "64x1024 si32 DRAM -> L1",
        query(
            unary("ttnn.bitwise_and"),
            vec![t(&s, dram(&s, DataType::SI32)), t(&s, dram(&s, DataType::SI32))],
            &s,
            DataType::SI32,
            out_l1(&s, DataType::SI32),
        ),
        r(Some(24576), Some(4096), None, Some(4096)),
        "notes: x2 of the bf16 binary row",
    );
    add(
        "typecast",
        "64x1024 bf16 -> f32 L1",
        query(
            OpKind::Typecast,
            vec![t(&s, dram(&s, BF16))],
            &s,
            DataType::F32,
            out_l1(&s, DataType::F32),
        ),
        r(Some(12288), None, None, Some(4096)),
        "",
    );
    let red_out = [64, 1];
    for name in ["ttnn.sum", "ttnn.mean", "ttnn.max", "ttnn.min"] {
        let k = kind(name, vec![("dim_arg", Ints(vec![1])), ("keep_dim", Bool(true))]);
        add(
            &name[5..],
            "64x1024, dim 1 keep_dim -> DRAM",
            query(k, vec![t(&s, dram(&s, BF16))], &red_out, BF16, OutputHint::Null),
            r(Some(12288), None, None, None),
            "",
        );
    }
    let s64 = [64, 64];
    let prod = kind("ttnn.prod", vec![("dim_arg", Int(1)), ("keep_dim", Bool(true))]);
    add(
        "prod",
        "64x64 L1, dim 1 keep_dim -> L1",
        query(prod, vec![t(&s64, l1(&s64, BF16))], &red_out, BF16, out_l1(&red_out, BF16)),
        r(Some(12288), Some(8192), None, Some(2048)),
        "",
    );
    let softmax = || kind("ttnn.softmax", vec![("dimension", Int(-1))]);
    add(
        "softmax",
        "64x1024 DRAM -> L1",
        query(softmax(), vec![t(&s, dram(&s, BF16))], &s, BF16, out_l1(&s, BF16)),
        r(Some(137216), None, None, Some(2048)),
        "",
    );
    add(
        "softmax",
        "32768x32 HS 64 cores (16 tiles/core)",
        query(
            softmax(),
            vec![t(&hs8, hs(&hs8, BF16, 64))],
            &hs8,
            BF16,
            OutputHint::Layout(hs(&hs8, BF16, 64)),
        ),
        r(Some(24576), None, None, Some(32768)),
        "",
    );
    let s256 = [256, 256];
    add(
        "reshape",
        "64x1024 -> 256x256 L1",
        query(
            kind("ttnn.reshape", vec![]),
            vec![t(&s, dram(&s, BF16))],
            &s256,
            BF16,
            out_l1(&s256, BF16),
        ),
        r(Some(5120), None, None, Some(2048)),
        "",
    );
    add(
        "to_layout",
        "64x1024 tile -> row-major DRAM",
        query(
            OpKind::ToLayout,
            vec![t(&s, dram(&s, BF16))],
            &s,
            BF16,
            OutputHint::Layout(rm_dram(&s, BF16)),
        ),
        r(Some(131072), None, None, None),
        "",
    );
    let tmc = [1, 8, 64, 128];
    add(
        "to_memory_config",
        "1x8x64x128 L1 interleaved -> HS 8 cores",
        query(
            OpKind::ToMemoryConfig,
            vec![t(&tmc, l1(&tmc, BF16))],
            &tmc,
            BF16,
            OutputHint::Layout(hs(&tmc, BF16, 8)),
        ),
        r(Some(8192), None, None, Some(16384)),
        "",
    );
    let cat = [64, 2048];
    add(
        "concat",
        "2 x 64x1024 dim 1 -> DRAM",
        query(
            kind("ttnn.concat", vec![("dim", Int(1))]),
            vec![t(&s, dram(&s, BF16)), t(&s, dram(&s, BF16))],
            &cat,
            BF16,
            OutputHint::Null,
        ),
        r(Some(4096), Some(0), None, Some(0)),
        "",
    );
    let tr = [1024, 64];
    add(
        "transpose",
        "64x1024 -> 1024x64 L1",
        query(
            kind("ttnn.transpose", vec![("dim0", Int(0)), ("dim1", Int(1))]),
            vec![t(&s, dram(&s, BF16))],
            &tr,
            BF16,
            out_l1(&tr, BF16),
        ),
        r(Some(8192), None, None, Some(2048)),
        "",
    );
    add(
        "cumsum",
        "64x1024 (moreh) -> L1",
        query(
            kind("ttnn.cumsum", vec![("dim", Int(1))]),
            vec![t(&s, dram(&s, BF16))],
            &s,
            BF16,
            out_l1(&s, BF16),
        ),
        r(Some(32768), Some(67584), None, Some(2048)),
        "",
    );
    let rep = [128, 1024];
    add(
        "repeat",
        "64x1024 {2,1} -> L1",
        query(
            kind("ttnn.repeat", vec![("repeat_dims", Ints(vec![2, 1]))]),
            vec![t(&s, dram(&s, BF16))],
            &rep,
            BF16,
            out_l1(&rep, BF16),
        ),
        r(Some(131072), None, None, Some(4096)),
        "",
    );
    add(
        "repeat_interleave",
        "64x1024 repeats 2 dim 0 -> DRAM",
        query(
            kind("ttnn.repeat_interleave", vec![("repeats", Int(2)), ("dim", Int(0))]),
            vec![t(&s, dram(&s, BF16))],
            &rep,
            BF16,
            OutputHint::Null,
        ),
        r(Some(131072), None, None, None),
        "",
    );
    let s128 = [128, 128];
    let rep2 = [256, 128];
    add(
        "repeat",
        "128x128 {2,1} -> L1 (interface test)",
        query(
            kind("ttnn.repeat", vec![("repeat_dims", Ints(vec![2, 1]))]),
            vec![t(&s128, dram(&s128, BF16))],
            &rep2,
            BF16,
            out_l1(&rep2, BF16),
        ),
        r(Some(16384), None, None, Some(2048)),
        "repeat dims assumed {2,1}; an all-ones repeat is a view",
    );
    let p66 = [66, 66];
    add(
        "pad",
        "64x64 -> 66x66 L1",
        query(
            kind("ttnn.pad", vec![("padding", Ints(vec![0, 2, 0, 2]))]),
            vec![t(&s64, dram(&s64, BF16))],
            &p66,
            BF16,
            out_l1(&p66, BF16),
        ),
        r(Some(6144), None, None, Some(2048)),
        "",
    );
    let p1026 = [66, 1026];
    add(
        "pad",
        "64x1024 -> 66x1026 L1",
        query(
            kind("ttnn.pad", vec![("padding", Ints(vec![0, 2, 0, 2]))]),
            vec![t(&s, dram(&s, BF16))],
            &p1026,
            BF16,
            out_l1(&p1026, BF16),
        ),
        r(None, Some(4096), None, None),
        "padding assumed [0,2,0,2] as in the 64x64 row",
    );
    add(
        "sort",
        "64x64 DRAM",
        query(
            kind("ttnn.sort", vec![]),
            vec![t(&s64, dram(&s64, BF16))],
            &s64,
            BF16,
            OutputHint::Null,
        ),
        r(Some(33792), None, None, None),
        "",
    );
    let am = kind("ttnn.argmax", vec![("dim", Int(1)), ("keep_dim", Bool(false))]);
    add(
        "argmax",
        "row-major 64x64 dim 1",
        query(
            am,
            vec![t(&s64, rm_dram(&s64, BF16))],
            &[64],
            DataType::U32,
            OutputHint::Layout(rm_dram(&[64], DataType::U32)),
        ),
        r(Some(384), None, None, None),
        "",
    );
    let amk = kind("ttnn.argmax", vec![("dim", Int(1)), ("keep_dim", Bool(true))]);
    add(
        "argmax",
        "row-major 64x64 dim 1 keep_dim",
        query(
            amk,
            vec![t(&s64, rm_dram(&s64, BF16))],
            &red_out,
            DataType::U32,
            OutputHint::Layout(rm_dram(&red_out, DataType::U32)),
        ),
        r(Some(132), None, None, None),
        "",
    );
    let sd = [4, 32, 32];
    let sd_out = [4, 32, 16];
    let idx = [3];
    add(
        "slice_dynamic",
        "4x32x32 -> 4x32x16 DRAM",
        query(
            OpKind::SliceDynamic,
            vec![
                t(&sd, dram(&sd, BF16)),
                t(&idx, rm_dram(&idx, DataType::U32)),
                t(&idx, rm_dram(&idx, DataType::U32)),
            ],
            &sd_out,
            BF16,
            OutputHint::Null,
        ),
        r(Some(4096), None, None, None),
        "",
    );
    add(
        "where",
        "3 x 64x1024 -> L1",
        query(
            kind("ttnn.where", vec![]),
            vec![t(&s, dram(&s, BF16)), t(&s, dram(&s, BF16)), t(&s, dram(&s, BF16))],
            &s,
            BF16,
            out_l1(&s, BF16),
        ),
        r(Some(16384), None, None, Some(2048)),
        "",
    );
    // tt-mlir's embedding op model, in the versions these numbers come from, turned an explicit
    // output layout into a preallocated output tensor built from the *weight's* shape (its
    // `getEmbeddingOpArgs` hands `weightShape` to the output TensorSpec), and tt-metal's
    // embedding hands a preallocated output back unchanged for 2-D indices. So in the three
    // rows with an L1 hint the output tensor tt-metal saw had the weight's shape, and the
    // queries say so through `output_shape`; the model's rule (result shape, hint's memory
    // config) is untouched. A null hint allocates the true result (the 262144 row).
    let w = [256, 128];
    let emb_out = [64, 1024, 128];
    add(
        "embedding",
        "idx 64x1024 L1, weight 256x128 L1, L1 out",
        query(
            OpKind::Embedding,
            vec![t(&s, l1(&s, BF16)), t(&w, l1(&w, BF16))],
            &w,
            BF16,
            out_l1(&emb_out, BF16),
        ),
        r(Some(16384), None, None, Some(2048)),
        "TestOpModelInterface EmbeddingOpInterface: operands without encoding default to bf16 L1 interleaved, the hint is L1 interleaved; tt-mlir preallocated the output with the weight's shape",
    );
    add(
        "embedding",
        "idx 64x1024 L1, weight 256x128 L1, null out",
        query(
            OpKind::Embedding,
            vec![t(&s, l1(&s, BF16)), t(&w, l1(&w, BF16))],
            &emb_out,
            BF16,
            OutputHint::Null,
        ),
        r(Some(16384), None, None, Some(262144)),
        "TestOpModelInterface EmbeddingOpNullOutputLayout: no preallocated output, the true result",
    );
    let i1 = [1, 1024];
    add(
        "embedding",
        "idx 1x1024 DRAM, weight 256x128 DRAM, L1 out",
        query(
            OpKind::Embedding,
            vec![t(&i1, dram(&i1, BF16)), t(&w, dram(&w, BF16))],
            &w,
            BF16,
            out_l1(&[1, 1024, 128], BF16),
        ),
        r(Some(16384), Some(8192), None, Some(2048)),
        "TestOpModelLib EmbeddingTests #1: bf16 tiled operands, L1 interleaved hint; output preallocated with the weight's shape. The notes put the 8192 under peak; it is the test's second field (tensor), as a total peak below the CB is impossible",
    );
    let i2 = [2, 512];
    let w2 = [512, 256];
    add(
        "embedding",
        "idx 2x512 L1, weight 512x256 DRAM, L1 out",
        query(
            OpKind::Embedding,
            vec![t(&i2, l1(&i2, BF16)), t(&w2, dram(&w2, BF16))],
            &w2,
            BF16,
            out_l1(&[2, 512, 256], BF16),
        ),
        r(Some(32768), Some(16384), None, Some(4096)),
        "TestOpModelLib EmbeddingTests #2 (the notes' 2nd variant, bf16 not f32): output preallocated with the weight's shape; 16384 is the tensor field",
    );
    let bw_idx = [2, 1024];
    let bw_w = [3200, 4096];
    let bw_grad = [1, 1, 2048, 4096];
    add(
        "embedding_bw",
        "idx 2x1024 RM, weight 3200x4096 RM, grad L1",
        query(
            OpKind::EmbeddingBw,
            vec![
                t(&bw_idx, rm_dram(&bw_idx, BF16)),
                t(&bw_w, rm_dram(&bw_w, BF16)),
                t(&bw_grad, l1(&bw_grad, BF16)),
            ],
            &[1, 1, 3200, 4096],
            BF16,
            out_l1(&bw_grad, BF16),
        ),
        r(Some(12400), Some(409600), Some(422000), Some(409600)),
        "TestOpModelLib EmbeddingBackwardOp: the hint is built for the gradient's shape but only its memory config reaches tt-metal, which makes a 1x1x3200x4096 result",
    );
    let z = [1024, 256];
    add(
        "zeros",
        "1024x256 L1",
        query(OpKind::Creation(crate::CreationOp::Zeros), vec![], &z, BF16, out_l1(&z, BF16)),
        r(Some(0), None, None, Some(8192)),
        "",
    );
    add(
        "ones",
        "1024x256 L1",
        query(OpKind::Creation(crate::CreationOp::Ones), vec![], &z, BF16, out_l1(&z, BF16)),
        r(Some(0), None, None, Some(8192)),
        "",
    );
    add(
        "empty",
        "f32 64x1024 L1",
        query(
            OpKind::Creation(crate::CreationOp::Empty),
            vec![],
            &s,
            DataType::F32,
            out_l1(&s, DataType::F32),
        ),
        r(None, None, None, Some(4096)),
        "",
    );
    for (case, shape, dt, out) in [
        ("2x2 u32 L1", &[2u64, 2][..], DataType::U32, 4096),
        ("2x3x4 u16 L1", &[2, 3, 4][..], DataType::U16, 2048),
        ("4x4 u8 L1", &[4, 4][..], DataType::U8, 1024),
    ] {
        add(
            "constant",
            case,
            query(
                OpKind::Creation(crate::CreationOp::Constant),
                vec![],
                shape,
                dt,
                out_l1(shape, dt),
            ),
            r(None, None, None, Some(out)),
            "",
        );
    }
    add(
        "rand",
        "64x1024 L1",
        query(OpKind::Creation(crate::CreationOp::Rand), vec![], &s, BF16, out_l1(&s, BF16)),
        r(Some(12288), Some(6144), None, Some(2048)),
        "",
    );
    add(
        "assign",
        "64x64 f32 -> f32 L1",
        query(
            unary("ttnn.assign"),
            vec![t(&s64, dram(&s64, DataType::F32))],
            &s64,
            DataType::F32,
            out_l1(&s64, DataType::F32),
        ),
        r(Some(8192), None, None, None),
        "",
    );
    add(
        "assign",
        "64x64 f32 -> bf16 L1",
        query(
            unary("ttnn.assign"),
            vec![t(&s64, dram(&s64, DataType::F32))],
            &s64,
            BF16,
            out_l1(&s64, BF16),
        ),
        r(Some(12288), None, None, Some(2048)),
        "",
    );
    let qs = [32, 64];
    let scalar = [1];
    add(
        "quantize",
        "32x64 L1 -> si32 L1",
        query(
            kind("ttnn.quantize", vec![]),
            vec![
                t(&qs, l1(&qs, BF16)),
                t(&scalar, dram(&scalar, DataType::F32)),
                t(&scalar, dram(&scalar, DataType::SI32)),
            ],
            &qs,
            DataType::SI32,
            out_l1(&qs, DataType::SI32),
        ),
        r(Some(12288), Some(10240), Some(22528), Some(4096)),
        "",
    );
    let ps = [1, 1, 16384, 32];
    add(
        "pow_scalar",
        "1x1x16384x32 DRAM -> L1",
        query(
            unary("ttnn.pow_scalar"),
            vec![t(&ps, dram(&ps, BF16))],
            &ps,
            BF16,
            out_l1(&ps, BF16),
        ),
        r(Some(8192), Some(16384), Some(24576), Some(16384)),
        "",
    );

    // §6.2 normalization.
    let rms = || kind("ttnn.rms_norm", vec![]);
    let a = [1, 32, 128, 128];
    let wv = [128];
    add(
        "rms_norm",
        "1x32x128x128 + weight, bias -> L1",
        query(
            rms(),
            vec![t(&a, dram(&a, BF16)), t(&wv, dram(&wv, BF16)), t(&wv, dram(&wv, BF16))],
            &a,
            BF16,
            out_l1(&a, BF16),
        ),
        r(Some(94208), None, None, Some(16384)),
        "",
    );
    let b = [1, 64, 64, 64];
    add(
        "rms_norm",
        "1x64x64x64 -> L1",
        query(rms(), vec![t(&b, dram(&b, BF16))], &b, BF16, out_l1(&b, BF16)),
        r(Some(45056), None, None, Some(8192)),
        "",
    );
    let c = [1, 32, 32, 32];
    let w32 = [32];
    add(
        "rms_norm",
        "1x32x32x32 + weight, bias, all L1 -> L1",
        query(
            rms(),
            vec![t(&c, l1(&c, BF16)), t(&w32, l1(&w32, BF16)), t(&w32, l1(&w32, BF16))],
            &c,
            BF16,
            out_l1(&c, BF16),
        ),
        r(Some(45056), None, None, Some(2048)),
        "TestOpModelLib RMSNormTests #3 / TestOpModelInterface rmsNormOpL1Memory pass a weight and a bias of 32 in L1",
    );
    let d = [2, 16, 64, 64];
    let w64 = [64];
    add(
        "rms_norm",
        "2x16x64x64 + weight",
        query(
            rms(),
            vec![t(&d, dram(&d, BF16)), t(&w64, dram(&w64, BF16))],
            &d,
            BF16,
            OutputHint::Null,
        ),
        r(Some(57344), None, None, None),
        "",
    );
    let e = [1, 16, 32, 32];
    add(
        "rms_norm",
        "1x16x32x32",
        query(rms(), vec![t(&e, dram(&e, BF16))], &e, BF16, OutputHint::Null),
        r(Some(36864), None, None, None),
        "",
    );
    let stat = [1, 32, 1, 1];
    let bn_inputs = |shape: &[u64], st: &[u64]| {
        let mut v = vec![t(shape, dram(shape, BF16))];
        v.extend((0..4).map(|_| t(st, dram(st, BF16))));
        v
    };
    add(
        "batch_norm",
        "inference 1x32x128x128 -> L1",
        query(
            kind("ttnn.batch_norm_inference", vec![]),
            bn_inputs(&a, &stat),
            &a,
            BF16,
            out_l1(&a, BF16),
        ),
        r(Some(36864), None, None, Some(16384)),
        "",
    );
    let stat64 = [1, 64, 1, 1];
    add(
        "batch_norm",
        "training 1x64x64x64",
        query(
            kind("ttnn.batch_norm_training", vec![]),
            bn_inputs(&b, &stat64),
            &b,
            BF16,
            OutputHint::Null,
        ),
        r(Some(49152), None, None, None),
        "",
    );
    let bn_l1 = |shape: &[u64], st: &[u64]| {
        let mut v = vec![t(shape, l1(shape, BF16))];
        v.extend((0..4).map(|_| t(st, l1(st, BF16))));
        v
    };
    add(
        "batch_norm",
        "training 1x32x128x128 + stats, L1 interface",
        query(
            kind("ttnn.batch_norm_training", vec![]),
            bn_l1(&a, &stat),
            &a,
            BF16,
            out_l1(&a, BF16),
        ),
        r(Some(94208), None, None, Some(16384)),
        "TestOpModelInterface batchNormOpTraining: running mean/var, weight and bias of 1x32x1x1, all bf16 L1 interleaved. 46 CB tiles unexplained: the composite's largest program we found is running_statistics (24)",
    );
    p
}

/// Formats one value, its reference and the relative error; "-" where not asserted.
fn cell(reference: Option<u64>, model: Option<u64>) -> (String, Option<bool>) {
    let fmt = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    let Some(rv) = reference else {
        return (format!("-/{}", fmt(model)), None);
    };
    let Some(mv) = model else {
        return (format!("{rv}/-"), Some(false));
    };
    #[expect(clippy::cast_precision_loss, reason = "byte counts far below 2^52")]
    let err = if rv == 0 {
        if mv == 0 { 0.0 } else { f64::INFINITY }
    } else {
        (mv as f64 - rv as f64).abs() / rv as f64
    };
    let pct = if err.is_finite() { format!("{:.1}%", err * 100.0) } else { "inf".to_owned() };
    (format!("{rv}/{mv} ({pct})"), Some(err <= TOLERANCE))
}

/// The calibration table: `reference/model (relative error)` per column, a within-5% flag
/// per point, and the summary lines.
#[must_use]
pub fn calibration_report() -> String {
    let target = Target::n150();
    let model = AnalyticalModel;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "calibration: AnalyticalModel on {} (reference/model (relative error); '-' = not asserted)",
        target.name()
    );
    let (mut key_points, mut key_ok, mut key_values, mut key_values_ok) = (0, 0, 0, 0);
    let (mut all_points, mut all_ok) = (0, 0);
    for (i, point) in points().iter().enumerate() {
        let result = point.query.as_ref().map(|q| model.query(&target, q));
        let values: [Option<u64>; 4] = match &result {
            Some(Ok(c)) => {
                [Some(c.cb_peak), Some(c.tensor_peak), Some(c.peak), Some(c.output_bytes)]
            }
            _ => [None; 4],
        };
        let mut cells = Vec::new();
        let mut key_flags = Vec::new();
        let mut all_flags = Vec::new();
        for (col, name) in COLUMNS.iter().enumerate() {
            let (text, ok) = cell(point.reference[col], values[col]);
            cells.push(format!("{name} {text}"));
            if let Some(ok) = ok {
                all_flags.push(ok);
                if col == 0 || col == 3 {
                    key_flags.push(ok);
                }
            }
        }
        if !key_flags.is_empty() {
            key_points += 1;
            key_values += key_flags.len();
            key_values_ok += key_flags.iter().filter(|ok| **ok).count();
            if key_flags.iter().all(|ok| *ok) {
                key_ok += 1;
            }
        }
        if !all_flags.is_empty() {
            all_points += 1;
            if all_flags.iter().all(|ok| *ok) {
                all_ok += 1;
            }
        }
        let flag = if all_flags.iter().all(|ok| *ok) { "ok" } else { "MISS" };
        let _ = writeln!(
            out,
            "{:>2} {:<17} {:<44} {} | {flag}",
            i + 1,
            point.op,
            point.case,
            cells.join(" | ")
        );
        match &result {
            Some(Err(e)) => {
                let _ = writeln!(out, "   model error: {e}");
            }
            None => {
                let _ = writeln!(out, "   not run: {}", point.note);
            }
            Some(Ok(_)) if !point.note.is_empty() => {
                let _ = writeln!(out, "   note: {}", point.note);
            }
            Some(Ok(_)) => {}
        }
    }
    let pct = |a: usize, b: usize| if b == 0 { 0.0 } else { 100.0 * a as f64 / b as f64 };
    let _ = writeln!(
        out,
        "summary: cb and out within 5%: {key_ok} of {key_points} points ({:.1}%), {key_values_ok} of {key_values} values ({:.1}%)",
        pct(key_ok, key_points),
        pct(key_values_ok, key_values)
    );
    let _ = writeln!(
        out,
        "summary: every asserted column within 5%: {all_ok} of {all_points} points ({:.1}%)",
        pct(all_ok, all_points)
    );
    out
}
