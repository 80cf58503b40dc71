//! Evaluating one function: value lifetimes, the live L1 before and after each op, and each
//! op's op-model verdict. The rules are in the crate documentation.

use ir::{Diagnostic, FuncBody, LoweredFunc, OpData, Severity, Ty, ValueRef};
use opmodel::{OpConstraints, OpError, OpModel, OpQuery, OutputHint, TensorDesc};
use rustc_hash::FxHashMap;
use syntax::TextRange;
use target::Target;
use ttnn_types::{PageLayout, TtnnLayout};

use crate::{L1Use, OpReport, Report, attrs, short_layout};

/// "Until the end of the function": after every op index.
const END: usize = usize::MAX;

/// One L1 allocation. Values that alias each other (a view and its source) share one.
struct Buffer {
    bytes: u64,
    /// The index of the last op that uses any value in the buffer, or [`END`].
    end: usize,
}

/// Where each value's L1 buffer is, if it has one.
struct Buffers {
    bufs: Vec<Buffer>,
    args: Vec<Option<usize>>,
    results: Vec<Vec<Option<usize>>>,
}

impl Buffers {
    fn of(&self, body: &FuncBody, v: ValueRef) -> Option<usize> {
        match v {
            ValueRef::Arg(a) => self.args.get(a as usize).copied().flatten(),
            ValueRef::Result { .. } => {
                let (op, index) = body.result_of(v)?;
                self.results.get(op as usize)?.get(index as usize).copied().flatten()
            }
            ValueRef::Unknown => None,
        }
    }

    fn new_buffer(&mut self, bytes: u64, end: usize) -> usize {
        self.bufs.push(Buffer { bytes, end });
        self.bufs.len() - 1
    }
}

/// When each value dies: its last use in program order, or a deallocation.
struct Lifetimes {
    args: Vec<usize>,
    results: Vec<Vec<usize>>,
    /// The first `ttnn.deallocate` of each value.
    deallocated_at: FxHashMap<ValueRef, usize>,
}

fn lifetimes(f: &LoweredFunc) -> Lifetimes {
    let body = &f.body;
    // The caller owns the arguments: they stay allocated for the whole function.
    let mut args = vec![END; body.args.len()];
    let mut results: Vec<Vec<usize>> =
        body.ops.iter().enumerate().map(|(i, op)| vec![i; op.results.len()]).collect();
    let mut deallocated_at = FxHashMap::default();
    for (i, op) in body.ops.iter().enumerate() {
        for &v in &op.operands {
            // A use above the definition is a lowering error; it must not stretch a lifetime
            // backwards.
            if let Some((p, index)) = body.result_of(v)
                && (p as usize) < i
                && let Some(end) =
                    results.get_mut(p as usize).and_then(|r| r.get_mut(index as usize))
            {
                *end = (*end).max(i);
            }
            // Undefined values all look alike; lowering reports them already.
            if op.name == "ttnn.deallocate" && v != ValueRef::Unknown {
                deallocated_at.entry(v).or_insert(i);
            }
        }
    }
    for &v in &body.returns {
        if let Some((op, index)) = body.result_of(v)
            && let Some(end) = results.get_mut(op as usize).and_then(|r| r.get_mut(index as usize))
        {
            *end = END;
        }
    }
    // The deallocation frees the buffer whatever comes after it; a later use is reported as
    // a violation, it does not bring the buffer back. (Each value is set once, so the map's
    // order does not matter.)
    for (&v, &i) in &deallocated_at {
        let end = match v {
            ValueRef::Arg(a) => args.get_mut(a as usize),
            ValueRef::Result { .. } => body
                .result_of(v)
                .and_then(|(op, index)| results.get_mut(op as usize)?.get_mut(index as usize)),
            ValueRef::Unknown => None,
        };
        if let Some(end) = end {
            *end = i;
        }
    }
    Lifetimes { args, results, deallocated_at }
}

/// Per-core L1 bytes of a value of this type; zero for anything not in L1.
fn l1_bytes(ty: &Ty) -> u64 {
    ty.layout().map_or(0, TtnnLayout::l1_bytes_per_core)
}

/// Evaluates every op of `f` and appends the results to `report`.
pub(crate) fn func(target: &Target, model: &dyn OpModel, f: &LoweredFunc, report: &mut Report) {
    let body = &f.body;
    let life = lifetimes(f);
    let mut buffers = Buffers {
        bufs: Vec::new(),
        args: vec![None; body.args.len()],
        results: body.ops.iter().map(|op| vec![None; op.results.len()]).collect(),
    };
    let mut live: Vec<usize> = Vec::new();
    for (a, ty) in body.args.iter().enumerate() {
        let bytes = l1_bytes(ty);
        if bytes > 0 {
            let b = buffers.new_buffer(bytes, life.args[a]);
            buffers.args[a] = Some(b);
            live.push(b);
        }
    }
    let sum = |live: &[usize], bufs: &[Buffer], after: Option<usize>| -> u64 {
        live.iter()
            .map(|&b| &bufs[b])
            .filter(|b| after.is_none_or(|i| b.end > i))
            .fold(0u64, |acc, b| acc.saturating_add(b.bytes))
    };
    report.peak_live_l1 = report.peak_live_l1.max(sum(&live, &buffers.bufs, None));

    for (i, op) in body.ops.iter().enumerate() {
        // A buffer past its last use can never come back: a later use would have been its
        // last use.
        live.retain(|&b| buffers.bufs[b].end >= i);
        let live_before = sum(&live, &buffers.bufs, None);
        let range = f.source_map.op_ranges.get(i).copied().unwrap_or_default();
        let mut ctx = OpCtx { range, errors: Vec::new(), report: &mut *report };
        let verdict = check_op(target, model, f, i, op, live_before, &life, &mut ctx);
        let errors = ctx.errors;

        let mut transient = 0u64;
        for (r, ty) in op.results.iter().enumerate() {
            let bytes = l1_bytes(ty);
            if bytes == 0 {
                continue;
            }
            let end = life.results[i][r];
            if r == 0
                && let Some(b) = verdict.alias_of.and_then(|v| buffers.of(body, v))
            {
                let buf = &mut buffers.bufs[b];
                buf.end = buf.end.max(end);
                buf.bytes = buf.bytes.max(bytes);
                buffers.results[i][r] = Some(b);
                continue;
            }
            transient = transient.saturating_add(bytes);
            let b = buffers.new_buffer(bytes, end);
            buffers.results[i][r] = Some(b);
            live.push(b);
        }
        // The op model's peak covers the first output; without a verdict, the fresh results
        // are all the op is known to allocate.
        let op_peak = verdict.op_peak.unwrap_or(transient);
        let live_after = sum(&live, &buffers.bufs, Some(i));
        report.peak_live_l1 =
            report.peak_live_l1.max(live_before.saturating_add(op_peak)).max(live_after);

        report.ops.push(OpReport {
            func: f.name.clone(),
            op_index: i,
            op: f.loc_names.of_key(&op.key).map_or_else(|| op.key.clone(), str::to_owned),
            kind: op.name.clone(),
            range,
            result_layout: op.results.first().and_then(Ty::layout).cloned(),
            valid: errors.is_empty(),
            error: (!errors.is_empty()).then(|| errors.join("; ")),
            l1: verdict.l1,
            live_l1_before: live_before,
            live_l1_after: live_after,
            known_op: verdict.known,
            cost: verdict.cost.map(|c| c.0),
            roofline_ns: verdict.cost.map(|c| c.1),
        });
    }

    for (k, v) in body.returns.iter().enumerate() {
        if let Some(&d) = life.deallocated_at.get(v) {
            let range = f.source_map.return_operand_ranges.get(k).copied().unwrap_or_default();
            report.violations += 1;
            report.diagnostics.push(Diagnostic {
                range,
                severity: Severity::Error,
                code: "use-after-deallocate",
                message: format!("`return` uses a value that op {d} deallocated"),
            });
        }
    }
}

/// Collects one op's violations: each is an error string on the op and, unless lowering
/// already reported it, a diagnostic at the op.
struct OpCtx<'a> {
    range: TextRange,
    errors: Vec<String>,
    report: &'a mut Report,
}

impl OpCtx<'_> {
    fn violation(&mut self, code: Option<&'static str>, message: String) {
        self.report.violations += 1;
        if let Some(code) = code {
            self.report.diagnostics.push(Diagnostic {
                range: self.range,
                severity: Severity::Error,
                code,
                message: message.clone(),
            });
        }
        self.errors.push(message);
    }

    fn note(&mut self, severity: Severity, code: &'static str, message: String) {
        self.report.diagnostics.push(Diagnostic { range: self.range, severity, code, message });
    }
}

/// What checking an op found besides its violations.
struct Verdict {
    known: bool,
    l1: Option<L1Use>,
    /// What the op itself needs at its peak, when the op model evaluated it.
    op_peak: Option<u64>,
    /// The value whose buffer the op's first result aliases.
    alias_of: Option<ValueRef>,
    /// The cost model's device time for the op in its layouts as written, and its roofline.
    cost: Option<(cost::OpCost, u64)>,
}

#[expect(clippy::too_many_arguments, reason = "one call site; the pieces are all different")]
fn check_op(
    target: &Target,
    model: &dyn OpModel,
    f: &LoweredFunc,
    i: usize,
    op: &OpData,
    live_before: u64,
    life: &Lifetimes,
    ctx: &mut OpCtx<'_>,
) -> Verdict {
    let body = &f.body;
    let kind = opmodel::op_kind(&op.name, &attrs::OpAttrs(op));
    let mut verdict =
        Verdict { known: kind.is_known(), l1: None, op_peak: None, alias_of: None, cost: None };

    for (j, &v) in op.operands.iter().enumerate() {
        let declared = op.operand_types.get(j).unwrap_or(&Ty::Unknown);
        if let Some(actual) = body.value_type(v)
            && *declared != Ty::Unknown
            && *actual != Ty::Unknown
            && declared != actual
        {
            // Lowering already reported this as `type-mismatch` at the operand.
            ctx.violation(
                None,
                format!(
                    "invalid: operand {j} is declared as {} but its value is {}",
                    short_ty(declared),
                    short_ty(actual)
                ),
            );
        }
        if let Some(&d) = life.deallocated_at.get(&v)
            && d < i
        {
            ctx.violation(
                Some("use-after-deallocate"),
                format!("invalid: operand {j} was deallocated by op {d}"),
            );
        }
    }

    if !kind.is_known() {
        // Ops in foreign custom syntax that the parser could not name still get a readable
        // message.
        let name = if op.name.is_empty() { "this op" } else { op.name.as_str() };
        let in_l1 = op
            .operand_types
            .iter()
            .chain(&op.results)
            .any(|t| t.layout().is_some_and(TtnnLayout::is_l1));
        if in_l1 {
            ctx.violation(
                Some("unknown-op"),
                format!(
                    "unknown op `{name}`: the op model does not know it, so it is only assumed \
                     valid in DRAM, but it has L1 operands or results"
                ),
            );
        } else {
            ctx.note(
                Severity::Warning,
                "unknown-op",
                format!("the op model does not know `{name}`; assumed valid in DRAM only"),
            );
        }
        return verdict;
    }
    // Ops without a tensor result (deallocate, get_device, ...) have nothing to query. A
    // cache write has none either but runs a kernel: it is costed with its cache as output.
    let Some(Ty::Tensor(out)) = op.results.first() else {
        verdict.cost = in_place_cost(op, &kind, target);
        return verdict;
    };

    let mut inputs = Vec::new();
    let mut first_tensor = None;
    let mut no_layout = Vec::new();
    for (j, ty) in op.operand_types.iter().enumerate() {
        let t = match ty {
            Ty::Tensor(t) => t,
            Ty::Unknown => {
                ctx.note(
                    Severity::Info,
                    "not-evaluated",
                    format!("`{}` is not evaluated: operand {j} has an unknown type", op.name),
                );
                return verdict;
            }
            // Devices, scalars and semaphores are not tensor operands of the query.
            _ => continue,
        };
        first_tensor.get_or_insert(j);
        let (Some(shape), Some(dtype)) = (t.static_shape(), t.data_type()) else {
            ctx.note(
                Severity::Info,
                "not-evaluated",
                format!(
                    "`{}` is not evaluated: operand {j} has a dynamic shape or no device data type",
                    op.name
                ),
            );
            return verdict;
        };
        let layout = t.layout.clone().unwrap_or_else(|| {
            no_layout.push(j.to_string());
            TtnnLayout::dram_interleaved(&shape, dtype, PageLayout::Tile)
        });
        inputs.push(TensorDesc { shape, layout });
    }
    let (Some(output_shape), Some(output_dtype)) = (out.static_shape(), out.data_type()) else {
        ctx.note(
            Severity::Info,
            "not-evaluated",
            format!(
                "`{}` is not evaluated: its result has a dynamic shape or no device data type",
                op.name
            ),
        );
        return verdict;
    };
    if !no_layout.is_empty() {
        ctx.note(
            Severity::Info,
            "missing-layout",
            format!(
                "operand{} {} of `{}` {} no layout; taken as DRAM interleaved tile",
                if no_layout.len() == 1 { "" } else { "s" },
                no_layout.join(", "),
                op.name,
                if no_layout.len() == 1 { "has" } else { "have" }
            ),
        );
    }
    let output = match &out.layout {
        Some(l) if l.ignore_physical_layout => OutputHint::Partial(l.clone()),
        Some(l) => OutputHint::Layout(l.clone()),
        None => OutputHint::Null,
    };
    let config = attrs::op_config(op, &kind);
    // A partial or missing output layout is costed as DRAM interleaved, where the op model
    // would also place it by default.
    let costed_output = match &out.layout {
        Some(l) if !l.ignore_physical_layout => l.clone(),
        _ => TtnnLayout::dram_interleaved(&output_shape, output_dtype, PageLayout::Tile),
    };
    let costed_output = TensorDesc { shape: output_shape.clone(), layout: costed_output };
    let cost_model = cost::CostModel::for_target(target);
    verdict.cost = Some((
        cost_model.op_cost(&kind, &inputs, &costed_output, &config),
        cost_model.roofline_ns(&kind, &inputs, &costed_output, &config),
    ));
    let q = OpQuery {
        kind,
        inputs,
        output_shape,
        output_dtype,
        output,
        config,
        l1_in_use: live_before,
    };
    // The single-output query does not see further results; they are allocated all the same.
    let extra: u64 = op.results.iter().skip(1).map(l1_bytes).fold(0, u64::saturating_add);
    let budget = target.usable_l1_per_core();

    let (constraints, model_oom) = match model.query(target, &q) {
        Ok(c) => (c, None),
        Err(OpError::OutOfMemory { needed, available }) => {
            // Ask again without the live tensors to tell "too big next to what is live" from
            // "too big on its own", and to get the op's own numbers for the report.
            match model.query(target, &OpQuery { l1_in_use: 0, ..q }) {
                Ok(c) => (c, Some(OpError::OutOfMemory { needed, available })),
                Err(OpError::OutOfMemory { needed, available }) => {
                    // With nothing else live, what the op needs is exactly its own peak.
                    verdict.op_peak = Some(needed.saturating_add(extra));
                    ctx.violation(
                        Some("l1-out-of-memory"),
                        format!(
                            "out of L1: the op alone needs {needed} bytes per core, {available} usable"
                        ),
                    );
                    return verdict;
                }
                Err(e) => {
                    rejected(ctx, &e);
                    return verdict;
                }
            }
        }
        Err(e) => {
            rejected(ctx, &e);
            return verdict;
        }
    };
    let c: OpConstraints = constraints;
    verdict.l1 =
        Some(L1Use { cb: c.cb_peak, tensor: c.tensor_peak, output: c.output_bytes, peak: c.peak });
    let op_peak = c.peak.saturating_add(extra);
    verdict.op_peak = Some(op_peak);
    let need = live_before.saturating_add(op_peak);
    if need > budget {
        let extra_text =
            if extra > 0 { format!(" + {extra} for further results") } else { String::new() };
        ctx.violation(
            Some("l1-out-of-memory"),
            format!(
                "out of L1: needs {need} bytes per core ({live_before} live + {} for the op{extra_text}), {budget} usable",
                c.peak
            ),
        );
    } else if let Some(e) = model_oom {
        // The op model counts differently from our rule and still says no; believe it.
        ctx.violation(Some("l1-out-of-memory"), e.to_string());
    }

    if let Some(declared) = &out.layout {
        let got = &c.output_layout;
        // A partial layout leaves grid and shard to the op. Memref shapes are compared
        // collapsed to 2D (tt-mlir also prints uncollapsed `1x1x8` memrefs for the same
        // bytes) and only between equal page layouts: the op model keeps the hint's page
        // layout except for host tensors, which it always models row-major.
        let partial = declared.ignore_physical_layout;
        let memref_2d = |l: &TtnnLayout| ttnn_types::collapse_2d(&l.memref_shape);
        let differs = declared.buffer != got.buffer
            || declared.memory_layout != got.memory_layout
            || (!partial
                && (declared.grid2d() != got.grid2d()
                    || (declared.page_layout() == got.page_layout()
                        && memref_2d(declared) != memref_2d(got))));
        if differs {
            ctx.violation(
                Some("layout-mismatch"),
                format!(
                    "invalid: the result is declared as {} but the op produces {}",
                    long_layout(declared),
                    long_layout(got)
                ),
            );
        }
    }

    // An op that allocates nothing yet has an L1 result is a view of its first tensor operand.
    if c.tensor_peak == 0
        && out.layout.as_ref().is_some_and(|l| l.l1_bytes_per_core() > 0)
        && let Some(j) = first_tensor
    {
        verdict.alias_of = op.operands.get(j).copied();
    }
    return verdict;

    fn rejected(ctx: &mut OpCtx<'_>, e: &OpError) {
        match e {
            OpError::OutOfMemory { needed, available } => ctx.violation(
                Some("l1-out-of-memory"),
                format!("out of L1: needs {needed} bytes per core, {available} usable"),
            ),
            OpError::UnknownOp { name } => ctx.violation(
                Some("unknown-op"),
                format!("unknown op `{name}`: the op model has no answer for it"),
            ),
            OpError::Unsupported { .. } | OpError::Invalid { .. } => {
                ctx.violation(Some("op-model-rejects"), e.to_string());
            }
        }
    }
}

/// A layout with its memref shape, for messages that compare two layouts.
fn long_layout(l: &TtnnLayout) -> String {
    let memref: Vec<String> = l.memref_shape.iter().map(u64::to_string).collect();
    format!("`{}` (grid {}, memref {})", short_layout(l), l.grid2d(), memref.join("x"))
}

/// A type in a few characters: `256x1024xbf16 DRAM il`.
fn short_ty(ty: &Ty) -> String {
    let Ty::Tensor(t) = ty else { return format!("`{ty}`") };
    let dims: Vec<String> =
        t.shape.iter().map(|d| d.map_or("?".to_owned(), |d| d.to_string())).collect();
    let mut s = format!("`{}x{}", dims.join("x"), t.element);
    if let Some(l) = &t.layout {
        s.push(' ');
        s.push_str(&short_layout(l));
        let memref: Vec<String> = l.memref_shape.iter().map(u64::to_string).collect();
        s.push_str(&format!(" (memref {})", memref.join("x")));
    }
    s.push('`');
    s
}

/// The cost of an op without a result that writes into one of its operands (a KV-cache
/// update), with that operand as its output; `None` for any other op, or when an operand has
/// no static shape or device data type.
fn in_place_cost(
    op: &OpData,
    kind: &opmodel::OpKind,
    target: &Target,
) -> Option<(cost::OpCost, u64)> {
    let target_operand = kind.in_place_operand()?;
    let mut inputs = Vec::new();
    for ty in &op.operand_types {
        let Ty::Tensor(t) = ty else { continue };
        let (shape, dtype) = (t.static_shape()?, t.data_type()?);
        let layout = t
            .layout
            .clone()
            .unwrap_or_else(|| TtnnLayout::dram_interleaved(&shape, dtype, PageLayout::Tile));
        inputs.push(TensorDesc { shape, layout });
    }
    let output = inputs.get(target_operand)?.clone();
    let model = cost::CostModel::for_target(target);
    let config = attrs::op_config(op, kind);
    Some((
        model.op_cost(kind, &inputs, &output, &config),
        model.roofline_ns(kind, &inputs, &output, &config),
    ))
}
