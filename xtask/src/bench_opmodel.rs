//! `cargo xtask bench-opmodel`: op-model throughput in queries per second, cold (the bare
//! analytical model) and warm (the value-keyed cache after one filling pass), over a query mix
//! shaped like what layout search asks: matmuls, conv2ds and eltwise ops, each under many
//! operand layouts and output hints.
//!
//! It runs in whatever profile cargo builds xtask in; for representative numbers use
//! `cargo run --release -p xtask -- bench-opmodel`.

use std::{
    hint::black_box,
    io::Write as _,
    time::{Duration, Instant},
};

use opmodel::{
    AnalyticalModel, AttrLookup, CachedOpModel, OpConfig, OpModel, OpQuery, OutputHint, TensorDesc,
    op_kind,
};
use target::Target;
use ttnn_types::{Conv2dConfig, DataType, Grid, PageLayout, TensorMemoryLayout, TtnnLayout};

/// Conv attributes for the mix.
struct ConvAttrs {
    cin: i64,
    cout: i64,
    hw: i64,
    k: i64,
    stride: i64,
    pad: i64,
}

impl AttrLookup for ConvAttrs {
    fn int(&self, name: &str) -> Option<i64> {
        Some(match name {
            "in_channels" => self.cin,
            "out_channels" => self.cout,
            "batch_size" | "groups" => 1,
            "input_height" | "input_width" => self.hw,
            _ => return None,
        })
    }
    fn bool(&self, _: &str) -> Option<bool> {
        None
    }
    fn ints(&self, name: &str) -> Option<Vec<i64>> {
        Some(match name {
            "kernel_size" => vec![self.k, self.k],
            "stride" => vec![self.stride, self.stride],
            "padding" => vec![self.pad, self.pad],
            "dilation" => vec![1, 1],
            _ => return None,
        })
    }
    fn string(&self, _: &str) -> Option<String> {
        None
    }
    fn float(&self, _: &str) -> Option<f64> {
        None
    }
}

/// Every layout the optimizer would try for a tensor: DRAM, L1 interleaved, and a spread of
/// height, width and block sharded grids that fit the tile counts.
fn layouts(shape: &[u64], worker: Grid) -> Vec<TtnnLayout> {
    let dt = DataType::BF16;
    let mut out = vec![
        TtnnLayout::dram_interleaved(shape, dt, PageLayout::Tile),
        TtnnLayout::l1_interleaved(shape, dt, PageLayout::Tile, worker),
    ];
    for n in [1, 2, 4, 7, 8, 16, 28, 32, 49, 56, 64] {
        for (ml, grid) in [
            (TensorMemoryLayout::HeightSharded, Grid::new(n, 1)),
            (TensorMemoryLayout::WidthSharded, Grid::new(1, n)),
        ] {
            if let Ok(l) = TtnnLayout::sharded(shape, dt, PageLayout::Tile, ml, grid, worker) {
                out.push(l);
            }
        }
    }
    for r in [1, 2, 4, 7, 8] {
        for c in [1, 2, 4, 8] {
            let grid = Grid::new(r, c);
            if let Ok(l) = TtnnLayout::sharded(
                shape,
                dt,
                PageLayout::Tile,
                TensorMemoryLayout::BlockSharded,
                grid,
                worker,
            ) {
                out.push(l);
            }
        }
    }
    out
}

fn query(
    kind: opmodel::OpKind,
    inputs: Vec<TensorDesc>,
    out: &[u64],
    hint: OutputHint,
    config: OpConfig,
) -> OpQuery {
    OpQuery {
        kind,
        inputs,
        output_shape: out.to_vec(),
        output_dtype: DataType::BF16,
        output: hint,
        config,
        l1_in_use: 0,
    }
}

fn hints(shape: &[u64], worker: Grid) -> Vec<OutputHint> {
    let mut h = vec![OutputHint::Null];
    h.extend(layouts(shape, worker).into_iter().map(OutputHint::Layout));
    h
}

fn mix(worker: Grid) -> Vec<OpQuery> {
    let mut qs = Vec::new();
    // Matmul / linear: LLM-ish and MLP-ish problem sizes, A under every layout, B in DRAM,
    // outputs null, partial and explicit.
    for (m, k, n) in [
        (32, 2048, 2048),
        (128, 1024, 4096),
        (1024, 1024, 1024),
        (2048, 512, 256),
        (256, 4096, 1024),
    ] {
        let (a, b, o) = ([m, k], [k, n], [m, n]);
        let dram_b = TtnnLayout::dram_interleaved(&b, DataType::BF16, PageLayout::Tile);
        for name in ["ttnn.matmul", "ttnn.linear"] {
            let kind = op_kind(name, &());
            for la in layouts(&a, worker) {
                let inputs = vec![TensorDesc::new(&a, la), TensorDesc::new(&b, dram_b.clone())];
                let mut outs = vec![OutputHint::Null];
                for l in layouts(&o, worker) {
                    outs.push(OutputHint::Partial(l.partial()));
                    outs.push(OutputHint::Layout(l));
                }
                for hint in outs {
                    qs.push(query(kind.clone(), inputs.clone(), &o, hint, OpConfig::None));
                }
            }
        }
    }
    // Conv2d: ResNet-50 stages, DRAM or sharded inputs, the act_block_h search space.
    let convs = [
        ConvAttrs { cin: 3, cout: 64, hw: 224, k: 7, stride: 2, pad: 3 },
        ConvAttrs { cin: 64, cout: 64, hw: 56, k: 3, stride: 1, pad: 1 },
        ConvAttrs { cin: 128, cout: 128, hw: 28, k: 3, stride: 1, pad: 1 },
        ConvAttrs { cin: 256, cout: 256, hw: 14, k: 3, stride: 1, pad: 1 },
        ConvAttrs { cin: 512, cout: 512, hw: 7, k: 3, stride: 1, pad: 1 },
        ConvAttrs { cin: 256, cout: 1024, hw: 14, k: 1, stride: 1, pad: 0 },
    ];
    for c in &convs {
        let ho = (c.hw + 2 * c.pad - c.k) / c.stride + 1;
        let cast = |v: i64| u64::try_from(v).unwrap_or(0);
        let i = [1, 1, cast(c.hw * c.hw), cast(c.cin)];
        let o = [1, 1, cast(ho * ho), cast(c.cout)];
        let w = [cast(c.cout), cast(c.cin), cast(c.k), cast(c.k)];
        let kind = op_kind("ttnn.conv2d", c);
        let weight = TensorDesc::new(
            &w,
            TtnnLayout::dram_interleaved(&w, DataType::BF16, PageLayout::RowMajor),
        );
        for li in layouts(&i, worker).into_iter().take(12) {
            for hint in hints(&o, worker).into_iter().take(16) {
                for abh in [0, 64, 32] {
                    let conv = Conv2dConfig {
                        act_block_h_override: Some(abh),
                        deallocate_activation: Some(true),
                        ..Default::default()
                    };
                    let inputs = vec![TensorDesc::new(&i, li.clone()), weight.clone()];
                    qs.push(query(
                        kind.clone(),
                        inputs,
                        &o,
                        hint.clone(),
                        OpConfig::Conv2d { conv: Box::new(conv), compute: None, slice: None },
                    ));
                }
            }
        }
    }
    // Eltwise: unary and binary over transformer and CNN activation shapes.
    for s in [[1, 1, 12544, 64], [1, 1, 3136, 256], [1, 1, 2048, 4096], [1, 1, 128, 8192]] {
        for name in ["ttnn.relu", "ttnn.silu", "ttnn.add", "ttnn.multiply"] {
            let kind = op_kind(name, &());
            let binary = name == "ttnn.add" || name == "ttnn.multiply";
            for l in layouts(&s, worker) {
                let mut inputs = vec![TensorDesc::new(&s, l.clone())];
                if binary {
                    inputs.push(TensorDesc::new(&s, l));
                }
                for hint in hints(&s, worker) {
                    qs.push(query(kind.clone(), inputs.clone(), &s, hint, OpConfig::None));
                }
            }
        }
    }
    qs
}

/// Runs `passes` passes over `qs` and returns (queries per second, valid answers per pass).
fn measure(
    model: &dyn OpModel,
    target: &Target,
    qs: &[OpQuery],
    passes: usize,
) -> (f64, usize, Duration) {
    let start = Instant::now();
    let mut valid = 0;
    for _ in 0..passes {
        valid = 0;
        for q in qs {
            if black_box(model.query(target, black_box(q))).is_ok() {
                valid += 1;
            }
        }
    }
    let elapsed = start.elapsed();
    let n = (qs.len() * passes) as f64;
    (n / elapsed.as_secs_f64().max(1e-9), valid, elapsed)
}

pub(crate) fn run() -> anyhow::Result<()> {
    let target = Target::n150();
    let qs = mix(target.worker_grid());
    let mut out = std::io::stdout().lock();
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    writeln!(
        out,
        "op model throughput ({profile} build, {} distinct queries, target {})",
        qs.len(),
        target.name()
    )?;

    let (cold, valid, t) = measure(&AnalyticalModel, &target, &qs, 5);
    writeln!(
        out,
        "cold   AnalyticalModel, all          {cold:>10.0} queries/s  ({valid} valid of {} per pass, {t:.2?} for 5 passes)",
        qs.len()
    )?;
    // The search mostly asks about combinations that turn out invalid, which are answered
    // early; the valid ones run a family's whole formula, so measure them on their own too.
    let valid_qs: Vec<OpQuery> =
        qs.iter().filter(|q| AnalyticalModel.query(&target, q).is_ok()).cloned().collect();
    let (cold_valid, _, t) = measure(&AnalyticalModel, &target, &valid_qs, 20);
    writeln!(
        out,
        "cold   AnalyticalModel, valid only   {cold_valid:>10.0} queries/s  ({} queries, {t:.2?} for 20 passes)",
        valid_qs.len()
    )?;
    for family in [
        "ttnn.matmul",
        "ttnn.linear",
        "ttnn.conv2d",
        "ttnn.relu",
        "ttnn.silu",
        "ttnn.add",
        "ttnn.multiply",
    ] {
        let subset: Vec<OpQuery> = qs.iter().filter(|q| q.kind.name() == family).cloned().collect();
        let (qps, valid, _) = measure(&AnalyticalModel, &target, &subset, 5);
        writeln!(
            out,
            "cold   {family:<30} {qps:>10.0} queries/s  ({valid} valid of {})",
            subset.len()
        )?;
    }

    let cached = CachedOpModel::new(AnalyticalModel);
    let (fill, _, t) = measure(&cached, &target, &qs, 1);
    writeln!(out, "fill   CachedOpModel (all misses)    {fill:>10.0} queries/s  ({t:.2?})")?;
    let (warm, _, t) = measure(&cached, &target, &qs, 20);
    writeln!(
        out,
        "warm   CachedOpModel (all hits)      {warm:>10.0} queries/s  ({t:.2?} for 20 passes)"
    )?;
    let stats = cached.stats();
    writeln!(out, "cache  hits {} misses {} entries {}", stats.hits, stats.misses, stats.entries)?;
    Ok(())
}
