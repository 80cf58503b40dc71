//! The cost model against public n150 measurements (`docs/cost-model.md`, "Validation"):
//! per point the model's device-time estimate, the measurement, the error, and tt-metal's
//! own performance model where the source gives it. `cargo xtask cost-validate` prints the
//! table and writes it into the doc; a test checks the doc holds the current table.
//!
//! The measurements are data from Tenstorrent's public sources, quoted with where they come
//! from; every estimate is device time (kernels and dispatch, no host).

use std::fmt::Write as _;

use opmodel::{MatmulAttrs, OpConfig, OpKind, TensorDesc};
use ttnn_types::{
    DataType, DeviceComputeKernelConfig, Grid, MathFidelity, PageLayout, TensorMemoryLayout,
    TtnnLayout,
};

use crate::CostModel;

/// One measured op.
struct Point {
    name: String,
    estimate_ns: u64,
    measured_ns: u64,
    /// tt-metal's `create_op_performance_model` on the same op, when known.
    tt_metal_ns: Option<u64>,
    /// A check on data no figure was fitted to or chosen by, reported apart.
    held_out: bool,
}

/// Decode matmuls inside tt-mlir-compiled graphs (tt-mlir `ds-perf/n150/device_matmuls.csv`):
/// model, role, K, N, the device kernel time in ns with the 1D-multicast program (weight
/// DRAM interleaved) and with the DRAM-sharded program, and the weight's data type. M = 32,
/// bf16 activations; the weights are bfp8 except `llama_3_1_8b`'s gate/up, which the file
/// gives as 33.03 MB for 4096 x 14336 values: bfp4's 576-byte tiles, not bfp8's 1088.
const DECODE: &[DecodeRow] = &[
    ("llama_3_2_1b", "o_proj", 2048, 2048, 23_450, 25_660, DataType::BfpBF8),
    ("llama_3_2_1b", "qkv", 2048, 3072, 36_600, 32_560, DataType::BfpBF8),
    ("llama_3_2_1b", "gate/up", 2048, 8192, 82_250, 82_520, DataType::BfpBF8),
    ("llama_3_2_1b", "down", 8192, 2048, 83_430, 87_660, DataType::BfpBF8),
    ("llama_3_2_1b", "lm_head", 2048, 128_256, 1_472_200, 1_493_400, DataType::BfpBF8),
    ("llama_3_2_3b", "o_proj", 3072, 3072, 53_530, 47_030, DataType::BfpBF8),
    ("llama_3_2_3b", "qkv", 3072, 5120, 80_670, 79_480, DataType::BfpBF8),
    ("llama_3_2_3b", "gate/up", 3072, 8192, 122_670, 121_840, DataType::BfpBF8),
    ("llama_3_2_3b", "down", 8192, 3072, 135_510, 114_190, DataType::BfpBF8),
    ("llama_3_2_3b", "lm_head", 3072, 128_256, 2_195_900, 2_233_000, DataType::BfpBF8),
    ("llama_3_1_8b", "o_proj", 4096, 4096, 88_210, 80_680, DataType::BfpBF8),
    ("llama_3_1_8b", "qkv", 4096, 6144, 124_750, 115_340, DataType::BfpBF8),
    ("llama_3_1_8b", "gate/up", 4096, 14_336, 160_270, 142_960, DataType::BfpBF4),
    ("llama_3_1_8b", "down", 14_336, 4096, 301_500, 252_720, DataType::BfpBF8),
    ("llama_3_1_8b", "lm_head", 4096, 128_256, 2_965_600, 2_977_000, DataType::BfpBF8),
    ("falcon3_1b", "o_proj", 2048, 2048, 22_850, 25_600, DataType::BfpBF8),
    ("falcon3_1b", "qkv", 2048, 4096, 45_150, 43_400, DataType::BfpBF8),
    ("falcon3_1b", "gate/up", 2048, 8192, 81_930, 82_590, DataType::BfpBF8),
    ("falcon3_1b", "down", 8192, 2048, 83_820, 87_670, DataType::BfpBF8),
    ("falcon3_1b", "lm_head", 2048, 131_072, 1_527_800, 1_519_800, DataType::BfpBF8),
    ("falcon3_3b", "o_proj", 3072, 3072, 53_400, 47_340, DataType::BfpBF8),
    ("falcon3_3b", "qkv", 3072, 5120, 80_580, 79_360, DataType::BfpBF8),
    ("falcon3_3b", "gate/up", 3072, 9216, 140_250, 132_200, DataType::BfpBF8),
    ("falcon3_3b", "down", 9216, 3072, 150_600, 128_730, DataType::BfpBF8),
    ("qwen_2_5_0_5b", "o_proj", 896, 896, 11_080, 11_070, DataType::BfpBF8),
    ("qwen_2_5_0_5b", "qkv", 896, 1152, 11_580, 11_560, DataType::BfpBF8),
    ("qwen_2_5_0_5b", "gate/up", 896, 4864, 23_540, 23_530, DataType::BfpBF8),
    ("qwen_2_5_0_5b", "down", 4864, 896, 31_770, 27_910, DataType::BfpBF8),
    ("qwen_2_5_0_5b", "lm_head", 896, 151_936, 788_100, 792_100, DataType::BfpBF8),
];

/// Held out: the rows of the same file for models the given data does not list, whose
/// no-DRAM-sharding baseline is tt-mlir's own (`baseline` `clean`; `qwen_2_5_1_5b` and
/// `qwen_2_5_7b` fell back to a default program there and are left out, as the given data
/// leaves them out), and `falcon3_3b`'s lm_head. Same columns as [`DECODE`].
const DECODE_HELD_OUT: &[DecodeRow] = &[
    ("falcon3_3b", "lm_head", 3072, 131_072, 2_309_889, 2_299_148, DataType::BfpBF8),
    ("falcon3_7b", "o_proj", 3072, 3072, 53_626, 47_383, DataType::BfpBF8),
    ("falcon3_7b", "qkv", 3072, 5120, 80_940, 79_179, DataType::BfpBF8),
    ("falcon3_7b", "gate/up", 3072, 23_040, 377_795, 325_510, DataType::BfpBF8),
    ("falcon3_7b", "down", 23_040, 3072, 370_300, 295_258, DataType::BfpBF8),
    ("falcon3_7b", "lm_head", 3072, 131_072, 2_271_077, 2_297_384, DataType::BfpBF8),
    ("mistral_7b", "o_proj", 4096, 4096, 88_569, 80_704, DataType::BfpBF8),
    ("mistral_7b", "qkv", 4096, 6144, 125_028, 115_283, DataType::BfpBF8),
    ("mistral_7b", "gate/up", 4096, 14_336, 291_147, 258_887, DataType::BfpBF8),
    ("mistral_7b", "down", 14_336, 4096, 301_399, 252_645, DataType::BfpBF8),
    ("mistral_7b", "lm_head", 4096, 32_768, 685_248, 1_299_775, DataType::BfpBF8),
    ("qwen_2_5_3b", "o_proj", 2048, 2048, 22_925, 25_413, DataType::BfpBF8),
    ("qwen_2_5_3b", "qkv", 2048, 2560, 29_320, 29_644, DataType::BfpBF8),
    ("qwen_2_5_3b", "gate/up", 2048, 11_008, 114_234, 108_911, DataType::BfpBF8),
    ("qwen_2_5_3b", "down", 11_008, 2048, 111_492, 115_484, DataType::BfpBF8),
    ("qwen_2_5_3b", "lm_head", 2048, 151_936, 1_797_110, 1_789_737, DataType::BfpBF8),
    ("qwen_3_0_6b", "qkv", 1024, 4096, 23_111, 24_911, DataType::BfpBF8),
    ("qwen_3_0_6b", "o_proj", 2048, 1024, 16_319, 15_577, DataType::BfpBF8),
    ("qwen_3_0_6b", "gate/up", 1024, 3072, 18_919, 19_214, DataType::BfpBF8),
    ("qwen_3_0_6b", "down", 3072, 1024, 23_200, 19_790, DataType::BfpBF8),
    ("qwen_3_0_6b", "lm_head", 1024, 151_936, 886_310, 903_212, DataType::BfpBF8),
    ("qwen_3_1_7b", "o_proj", 2048, 2048, 23_219, 25_611, DataType::BfpBF8),
    ("qwen_3_1_7b", "qkv", 2048, 4096, 45_698, 43_422, DataType::BfpBF8),
    ("qwen_3_1_7b", "gate/up", 2048, 6144, 63_469, 60_625, DataType::BfpBF8),
    ("qwen_3_1_7b", "down", 6144, 2048, 63_671, 67_434, DataType::BfpBF8),
    ("qwen_3_1_7b", "lm_head", 2048, 151_936, 1_777_520, 1_784_016, DataType::BfpBF8),
    ("qwen_3_4b", "qkv", 2560, 6144, 79_325, 74_935, DataType::BfpBF8),
    ("qwen_3_4b", "o_proj", 4096, 2560, 56_156, 53_896, DataType::BfpBF8),
    ("qwen_3_4b", "gate/up", 2560, 9728, 126_326, 119_856, DataType::BfpBF8),
    ("qwen_3_4b", "down", 9728, 2560, 127_244, 119_476, DataType::BfpBF8),
    ("qwen_3_4b", "lm_head", 2560, 151_936, 2_239_645, 2_214_441, DataType::BfpBF8),
    ("qwen_3_8b", "o_proj", 4096, 4096, 88_397, 80_501, DataType::BfpBF8),
    ("qwen_3_8b", "qkv", 4096, 6144, 125_474, 115_207, DataType::BfpBF8),
    ("qwen_3_8b", "gate/up", 4096, 12_288, 252_661, 218_077, DataType::BfpBF8),
    ("qwen_3_8b", "down", 12_288, 4096, 258_202, 221_323, DataType::BfpBF8),
    ("qwen_3_8b", "lm_head", 4096, 151_936, 3_526_090, 3_548_037, DataType::BfpBF8),
];

/// Model, role, K, N, ns with the 1D-multicast program, ns DRAM-sharded, weight data type.
type DecodeRow = (&'static str, &'static str, u64, u64, u64, u64, DataType);

/// tt-metal's GEMM_FLOPS report, n150, 8x8 grid, traced: m = k = n, data type, fidelity,
/// and ns with in0 L1 block sharded, in1 DRAM, out L1 block sharded (hand-tuned), and with
/// everything DRAM interleaved.
const GEMM: &[Gemm] = &[
    (1024, DataType::BF16, MathFidelity::HiFi2, Some(36_800), Some(70_400)),
    (2048, DataType::BF16, MathFidelity::HiFi2, Some(218_200), Some(303_000)),
    (2048, DataType::BfpBF8, MathFidelity::LoFi, Some(119_700), Some(159_400)),
    (4096, DataType::BF16, MathFidelity::HiFi2, None, Some(1_983_000)),
    (4096, DataType::BF16, MathFidelity::HiFi4, None, Some(2_720_000)),
    (4096, DataType::BfpBF8, MathFidelity::LoFi, None, Some(1_000_000)),
    (16_384, DataType::BF16, MathFidelity::HiFi4, Some(161_600_000), None),
];

/// m = k = n, data type, fidelity, ns hand-tuned (sharded), ns all DRAM interleaved.
type Gemm = (u64, DataType, MathFidelity, Option<u64>, Option<u64>);

const WORKER: Grid = Grid::new(8, 8);
const TILE: PageLayout = PageLayout::Tile;

/// tt-metal's ideal time for a matmul: `max(compute, bandwidth)` with compute
/// `2MKN / (64 cores x 4096) x fidelity` cycles at 1 GHz and the largest single tensor
/// (block floats at one byte per element) at 258 GB/s (`docs/cost-model.md` cites it).
fn tt_metal_matmul_ns(m: u64, k: u64, n: u64, fidelity: u64, bytes: [u64; 3]) -> u64 {
    let compute = (2 * m * k * n * fidelity).div_ceil(64 * 4096);
    let largest = bytes.into_iter().max().unwrap_or(0);
    let bandwidth = (largest * 1000).div_ceil(258_000);
    compute.max(bandwidth)
}

fn compute(f: MathFidelity) -> OpConfig {
    OpConfig::Matmul {
        program: None,
        compute: Some(DeviceComputeKernelConfig {
            math_fidelity: Some(f),
            ..DeviceComputeKernelConfig::default()
        }),
    }
}

/// A decode matmul's two points (one per program), both with the model's one estimate: the
/// activation L1 interleaved, the weight DRAM interleaved, the output width sharded a tile
/// column per core.
fn decode_points(model: &CostModel, row: &DecodeRow, held_out: bool) -> [Point; 2] {
    let &(net, role, k, n, one_d, ds, weight) = row;
    let matmul = OpKind::Matmul(MatmulAttrs::default());
    let a = TensorDesc::new(
        &[32, k],
        TtnnLayout::l1_interleaved(&[32, k], DataType::BF16, TILE, WORKER),
    );
    let w = TensorDesc::new(&[k, n], TtnnLayout::dram_interleaved(&[k, n], weight, TILE));
    let cores = (n / 32).clamp(1, 64);
    let ws = TensorMemoryLayout::WidthSharded;
    let out_layout =
        TtnnLayout::sharded(&[32, n], DataType::BF16, TILE, ws, Grid::new(1, cores), WORKER)
            .unwrap_or_else(|_| TtnnLayout::l1_interleaved(&[32, n], DataType::BF16, TILE, WORKER));
    let y = TensorDesc::new(&[32, n], out_layout);
    let c = model.op_cost(&matmul, &[a, w], &y, &OpConfig::None);
    // Block floats at one byte per element, activations and output bf16.
    let tt = tt_metal_matmul_ns(32, k, n, 4, [32 * k * 2, k * n, 32 * n * 2]);
    let weight_name = if weight == DataType::BfpBF4 { ", bfp4 weight" } else { "" };
    let held = if held_out { " (held out)" } else { "" };
    [("1d", one_d), ("dram-sharded", ds)].map(|(program, measured)| Point {
        name: format!("{net} {role} 32x{k}x{n} ({program}{weight_name}){held}"),
        estimate_ns: c.total_ns,
        measured_ns: measured,
        tt_metal_ns: Some(tt),
        held_out,
    })
}

fn points(model: &CostModel) -> Vec<Point> {
    let matmul = OpKind::Matmul(MatmulAttrs::default());
    let mut out = Vec::new();
    for row in DECODE {
        out.extend(decode_points(model, row, false));
    }
    for &(s, dtype, fidelity, sharded, interleaved) in GEMM {
        let shape = [s, s];
        let dram = TensorDesc::new(&shape, TtnnLayout::dram_interleaved(&shape, dtype, TILE));
        let bs = TensorMemoryLayout::BlockSharded;
        let l1 = TtnnLayout::sharded(&shape, dtype, TILE, bs, WORKER, WORKER)
            .map(|l| TensorDesc::new(&shape, l));
        let elem = if dtype == DataType::BF16 { 2 } else { 1 };
        let tt = tt_metal_matmul_ns(s, s, s, crate::Figures::passes(fidelity), [s * s * elem; 3]);
        let label = format!("{s}^3 {} {}", dtype_name(dtype), fidelity_name(fidelity));
        if let (Some(measured), Ok(l1)) = (sharded, &l1) {
            let c = model.op_cost(&matmul, &[l1.clone(), dram.clone()], l1, &compute(fidelity));
            out.push(Point {
                name: format!("matmul {label} (in0 L1 sharded)"),
                estimate_ns: c.total_ns,
                measured_ns: measured,
                tt_metal_ns: Some(tt),
                held_out: false,
            });
        }
        if let Some(measured) = interleaved {
            let c =
                model.op_cost(&matmul, &[dram.clone(), dram.clone()], &dram, &compute(fidelity));
            out.push(Point {
                name: format!("matmul {label} (DRAM interleaved)"),
                estimate_ns: c.total_ns,
                measured_ns: measured,
                tt_metal_ns: Some(tt),
                held_out: false,
            });
        }
    }
    out
}

/// Held-out points: other ops of the Llama-3.2-1B decode step tt-mlir profiled per op
/// (`ds-perf/n150/fleet/llama_3_2_1b__nods.percore.csv`, the traced step's rows, median over
/// its layers). Batch 32, 8 KV heads of 64, hidden 2048, bf16.
fn held_out(model: &CostModel) -> Vec<Point> {
    let mut out = Vec::new();
    for row in DECODE_HELD_OUT {
        out.extend(decode_points(model, row, true));
    }
    let dram = |shape: &[u64]| {
        TensorDesc::new(shape, TtnnLayout::dram_interleaved(shape, DataType::BF16, TILE))
    };
    // `PagedUpdateCache` (32 of them, 12.7-15.8 µs): one new row per user and KV head. The
    // rows touched do not depend on the cache's length or paging.
    let cache = dram(&[32, 8, 128, 64]);
    let index = TensorDesc::new(&[1], TtnnLayout::dram_interleaved(&[1], DataType::U32, TILE));
    let update = opmodel::op_kind("ttnn.update_cache", &());
    let c = model.op_cost(
        &update,
        &[cache.clone(), dram(&[1, 8, 32, 64]), index],
        &cache,
        &OpConfig::None,
    );
    out.push(Point {
        name: "llama_3_2_1b paged_update_cache, 32 users x 8 KV heads x 64 (held out)".to_owned(),
        estimate_ns: c.total_ns,
        measured_ns: 13_733,
        tt_metal_ns: None,
        held_out: true,
    });
    // The decode layer's attention ops, with the shapes of the corpus graph of that layer
    // (`llama_3_2_1b_decoder`: a `32x8x128x64` cache per K and V), every tensor in DRAM as
    // the plans leave them. `SdpaDecodeDeviceOperation` (16 rows, 38.2-41.5 µs),
    // `NLPCreateQKVHeadsDecodeDeviceOperation` (16 rows, 15.6-15.9 µs; costed with Q as
    // its output and K's and V's bytes added) and `NLPConcatHeadsDecodeDeviceOperation` (16
    // rows, 3.4-4.5 µs).
    let q = dram(&[1, 32, 32, 64]);
    let kv = dram(&[32, 8, 128, 64]);
    let sdpa = opmodel::op_kind("ttnn.scaled_dot_product_attention_decode", &());
    let c = model.op_cost(
        &sdpa,
        &[q.clone(), kv.clone(), kv, dram(&[32, 1, 32, 128])],
        &q,
        &OpConfig::None,
    );
    out.push(Point {
        name: "llama_3_2_1b scaled_dot_product_attention_decode, 32 users x 32 heads x 64 over a 128-position cache (held out)".to_owned(),
        estimate_ns: c.total_ns,
        measured_ns: 39_857,
        tt_metal_ns: None,
        held_out: true,
    });
    let create = opmodel::op_kind("ttnn.nlp_create_qkv_heads_decode", &());
    let c = model.op_cost(&create, &[dram(&[1, 1, 32, 3072])], &q, &OpConfig::None);
    out.push(Point {
        name:
            "llama_3_2_1b nlp_create_qkv_heads_decode 1x1x32x3072 into 32 + 8 + 8 heads (held out)"
                .to_owned(),
        estimate_ns: c.total_ns,
        measured_ns: 15_667,
        tt_metal_ns: None,
        held_out: true,
    });
    let concat = opmodel::op_kind("ttnn.nlp_concat_heads_decode", &());
    let c = model.op_cost(&concat, &[q], &dram(&[1, 1, 32, 2048]), &OpConfig::None);
    out.push(Point {
        name: "llama_3_2_1b nlp_concat_heads_decode 1x32x32x64 (held out)".to_owned(),
        estimate_ns: c.total_ns,
        measured_ns: 3_479,
        tt_metal_ns: None,
        held_out: true,
    });
    // `LayerNormDeviceOperation` on 64 cores (33 of them, 11.5-13.1 µs): the RMS norms of
    // the hidden state, one tile row of 64 tiles width sharded a tile per core.
    let x = [1, 1, 32, 2048];
    let ws = TensorMemoryLayout::WidthSharded;
    if let Ok(l) = TtnnLayout::sharded(&x, DataType::BF16, TILE, ws, Grid::new(1, 64), WORKER) {
        let x = TensorDesc::new(&x, l);
        let norm = opmodel::op_kind("ttnn.rms_norm", &());
        let c = model.op_cost(&norm, &[x.clone(), dram(&[2048])], &x, &OpConfig::None);
        out.push(Point {
            name: "llama_3_2_1b rms_norm 1x1x32x2048, width sharded on 64 cores (held out)"
                .to_owned(),
            estimate_ns: c.total_ns,
            measured_ns: 11_614,
            tt_metal_ns: None,
            held_out: true,
        });
    }
    out
}

fn dtype_name(d: DataType) -> &'static str {
    if d == DataType::BF16 { "bf16" } else { "bfp8" }
}

fn fidelity_name(f: MathFidelity) -> &'static str {
    match f {
        MathFidelity::LoFi => "LoFi",
        MathFidelity::HiFi2 => "HiFi2",
        MathFidelity::HiFi3 => "HiFi3",
        MathFidelity::HiFi4 => "HiFi4",
    }
}

/// Signed relative error in percent, `(estimate - measured) / measured`.
fn error_pct(estimate: u64, measured: u64) -> f64 {
    (estimate as f64 - measured as f64) / measured.max(1) as f64 * 100.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The validation table in markdown, with its summary line, for the Wormhole n150 model.
#[must_use]
pub fn validation_table() -> String {
    let model = CostModel::wormhole_n150();
    let mut points = points(&model);
    points.extend(held_out(&model));
    let mut out = String::new();
    out.push_str(
        "| point | estimate (device) µs | measured µs | error | tt-metal model µs | its error |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    for p in &points {
        let tt = p.tt_metal_ns.map_or(("-".to_owned(), "-".to_owned()), |t| {
            (us(t), format!("{:+.0}%", error_pct(t, p.measured_ns)))
        });
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:+.0}% | {} | {} |",
            p.name,
            us(p.estimate_ns),
            us(p.measured_ns),
            error_pct(p.estimate_ns, p.measured_ns),
            tt.0,
            tt.1
        );
    }
    // The Done-when figures are over the given measurements; held-out points get a line of
    // their own.
    let given: Vec<&Point> = points.iter().filter(|p| !p.held_out).collect();
    let ours: Vec<f64> =
        given.iter().map(|p| error_pct(p.estimate_ns, p.measured_ns).abs()).collect();
    let theirs: Vec<f64> = given
        .iter()
        .filter_map(|p| p.tt_metal_ns.map(|t| error_pct(t, p.measured_ns).abs()))
        .collect();
    let within = ours.iter().filter(|e| **e <= 25.0).count();
    let _ = writeln!(
        out,
        "\n{} points: {within} ({:.0}%) within 25%; median absolute error {:.1}% (tt-metal's model: {:.1}% on the same points).",
        given.len(),
        within as f64 * 100.0 / given.len().max(1) as f64,
        median(ours),
        median(theirs)
    );
    let held: Vec<f64> = points
        .iter()
        .filter(|p| p.held_out)
        .map(|p| error_pct(p.estimate_ns, p.measured_ns).abs())
        .collect();
    let _ = writeln!(
        out,
        "Held out: {} points, {} within 25%; median absolute error {:.1}%.",
        held.len(),
        held.iter().filter(|e| **e <= 25.0).count(),
        median(held.clone())
    );
    out
}

/// A whole model measured on an n150, estimated as a sum of corpus models: each part's
/// per-inference estimate under `df-sharding-merge`, as `cargo xtask models` pins it in
/// `test-data/models/<part>.txt`, times how often the part runs.
struct Whole {
    name: &'static str,
    parts: &'static [(&'static str, u64)],
    measured_ns: u64,
    /// What the measurement is, and whether it includes host time (then the estimate, which
    /// is device time, must stay below it).
    what: &'static str,
    host_included: bool,
}

const WHOLE: &[Whole] = &[
    Whole {
        name: "Llama-3.2-1B decode step, batch 32: 16 layers, lm_head, argmax",
        // As the measured run compiled them: tt-xla's LLM benchmark converts every matmul
        // weight to bfp8 (`experimental-weight-dtype=bfp_bf8`). The 15 other layers are
        // `llama_3_2_1b_decoder`, one layer with its KV cache as the measured step runs it
        // (cache update and decode attention), not `llama_3_2_1b_decode_block`, which has no
        // cache and attends to the current token only, written out op by op.
        parts: &[
            ("llama_3_2_1b_decode_layer.weight_dtype_bfp_bf8", 1),
            ("llama_3_2_1b_decoder.weight_dtype_bfp_bf8", 15),
        ],
        measured_ns: 10_360_000,
        what: "tt-mlir compiled, end to end per step (tt-mlir `ds-perf/n150/model_summary.csv`), host included",
        host_included: true,
    },
    Whole {
        name: "Sentence-BERT (bert-base-turkish), batch 8, sequence 384: embeddings, 12 layers, pooler",
        parts: &[("bert_encoder_layer", 1), ("bert_encoder_block", 11)],
        measured_ns: 14_640_000,
        what: "hand-written tt-metal, device time (546.5 sentences/s)",
        host_included: false,
    },
    Whole {
        name: "ResNet-50, batch 8",
        parts: &[("resnet_hf", 1)],
        measured_ns: 12_000_000,
        what: "tt-forge compiled, host included",
        host_included: true,
    },
    Whole {
        name: "ResNet-50, batch 8",
        parts: &[("resnet_hf", 1)],
        measured_ns: 1_250_000,
        what: "hand-written tt-metal, device time: 2.5 ms per batch of 16, halved",
        host_included: false,
    },
    Whole {
        name: "ResNet-50, batch 8",
        // The nearest tt-mlir's own pipeline options come to the hand-written model: every
        // compute config at LoFi (`compute-cfg-math-fidelity=lofi`, which reaches the convs)
        // and `bfp_bf8` matmul weights (`experimental-weight-dtype=bfp_bf8`, which reaches
        // the final linear only: tt-mlir casts no conv weight with it). Still different: the
        // conv weights and every activation stay `bf16` (tt-mlir has per-op overrides for
        // those, no global option), activations start in DRAM, and the batch is 8, not 16.
        parts: &[("resnet_hf.weight_dtype_bfp_bf8.math_fidelity_lofi", 1)],
        measured_ns: 1_250_000,
        what: "hand-written tt-metal, device time: 2.5 ms per batch of 16, halved (it runs conv weights and activations in `bfp_bf8`, every activation in L1; here they are `bf16`)",
        host_included: false,
    },
];

/// The `df-sharding-merge` row's per-inference time of a `cargo xtask models` snapshot, in ns.
fn merged_ns(snapshot: &str) -> Option<u64> {
    let line = snapshot.lines().find(|l| l.starts_with("df-sharding-merge "))?;
    let us: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some((us * 1e3).round() as u64)
}

/// Whole-model estimates against measured whole-model times, in markdown. `snapshot` gives
/// the text of `test-data/models/<model>.txt`; a model without one makes its row say so.
#[must_use]
pub fn whole_model_table(snapshot: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::from(
        "| model | estimate (device, `df-sharding-merge`) ms | measured ms | measurement | estimate / measured |\n\
         |---|---:|---:|---|---:|\n",
    );
    let ms = |ns: u64| format!("{:.2}", ns as f64 / 1e6);
    for w in WHOLE {
        let estimate = w.parts.iter().try_fold(0u64, |sum, (part, times)| {
            let ns = merged_ns(&snapshot(part)?)?;
            Some(sum.saturating_add(ns.saturating_mul(*times)))
        });
        let parts: Vec<String> = w
            .parts
            .iter()
            .map(|(p, n)| {
                // A variant's snapshot is `<model>.<suffix>`, the suffix one `.`-separated
                // part per import option: `weight_dtype_<dtype>` is the model imported with
                // `--weight-dtype <dtype>`, `math_fidelity_<f>` with `--math-fidelity <f>`.
                let part = match p.split_once('.') {
                    Some((model, suffix)) => {
                        let options: Option<Vec<String>> = suffix
                            .split('.')
                            .map(|o| {
                                let (flag, value) = [
                                    ("weight_dtype_", "--weight-dtype"),
                                    ("math_fidelity_", "--math-fidelity"),
                                ]
                                .iter()
                                .find_map(|(prefix, flag)| {
                                    Some((*flag, o.strip_prefix(prefix)?))
                                })?;
                                Some(format!("{flag} {value}"))
                            })
                            .collect();
                        match options {
                            Some(o) => format!("`{model}` with `{}`", o.join(" ")),
                            None => format!("`{model}` ({suffix})"),
                        }
                    }
                    None => format!("`{p}`"),
                };
                if *n == 1 { part } else { format!("{n} x {part}") }
            })
            .collect();
        let (est, ratio) = match estimate {
            Some(e) => {
                let r = e as f64 / w.measured_ns.max(1) as f64;
                let verdict = if w.host_included {
                    if e < w.measured_ns { "below, as it must be" } else { "above: too high" }
                } else if (1.0 / 1.5..=1.5).contains(&r) {
                    "within 1.5x"
                } else {
                    "outside 1.5x"
                };
                (ms(e), format!("{r:.2}x ({verdict})"))
            }
            None => ("no snapshot".to_owned(), "-".to_owned()),
        };
        let _ = writeln!(
            out,
            "| {} ({}) | {est} | {} | {} | {ratio} |",
            w.name,
            parts.join(" + "),
            ms(w.measured_ns),
            w.what
        );
    }
    out
}
