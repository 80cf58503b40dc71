//! The `greedy` policy's core: tt-mlir HEAD's greedy memory-layout propagation (a beam of
//! the best `BEAM_WIDTH` candidates per op, walked forward, then consolidated backward) and
//! its L1 spill management, over a plain [`Problem`].
//!
//! A pure function of the problem, the op model and the target: no salsa, no IR. The query
//! in `greedy/mod.rs` builds the problem from a function's ops and turns the [`Decision`]s
//! into the plan's `OpPlan`s. See `docs/optimizer.md` (section `greedy`) for the passes and
//! every place this differs from tt-mlir.

use std::{cmp::Reverse, sync::Arc};

use opmodel::{
    Candidate, OpConfig, OpConstraints, OpError, OpKind, OpModel, OpQuery, OutputHint, Target,
    TensorDesc,
};
use rustc_hash::FxHashMap;
use ttnn_types::{DataType, PageLayout, TensorMemoryLayout, TtnnLayout};

/// Candidates kept per op (tt-mlir's `beam-width`).
pub const BEAM_WIDTH: usize = 8;
/// Input candidates kept per operand (`max-input-candidates-per-operand`).
pub const MAX_INPUT_CANDIDATES: usize = 64;
/// Reshard targets kept per sharding type (`max-reshard-candidates-per-type`).
pub const MAX_RESHARDS_PER_TYPE: usize = 4;
/// Input combinations tried per op at most (tt-mlir's own worst case, 2 operands x 64).
const MAX_COMBINATIONS: usize = 4096;

/// One tensor operand of an op.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Operand {
    pub shape: Vec<u64>,
    /// The op (index into [`Problem::ops`]) whose result this is; `None` for a function
    /// argument or a value the optimizer does not place.
    pub producer: Option<usize>,
    /// The value's layout when its producer is not in the beam (the argument as written,
    /// or the producer as the plan leaves it otherwise).
    pub layout: TtnnLayout,
}

/// One op, with what the op model needs to validate it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Op {
    /// A display name, for reasons.
    pub name: String,
    pub kind: OpKind,
    /// Per operand of the op; `None` for operands that are not tensors (the device).
    pub operands: Vec<Option<Operand>>,
    pub output_shape: Vec<u64>,
    pub output_dtype: DataType,
    /// The op's legal (layout, config) pairs, in search order.
    pub candidates: Arc<[Candidate]>,
    /// Per operand: the L1-sharded layouts of its tensor type (reshard targets).
    pub reshard_targets: Vec<Arc<[TtnnLayout]>>,
    /// Where the op goes when no candidate validates, or when it is demoted: its DRAM
    /// interleaved fallback and the config for it.
    pub fallback: Option<Candidate>,
    /// False for ops whose layout is not the optimizer's to choose: they keep their plan.
    pub optimize: bool,
    /// A kept op's output and config as planned, to validate it with its inputs as they
    /// arrive (tt-mlir's validation and fallback); `None` for ops that are not validated.
    pub current: Option<Candidate>,
    /// True when a result is returned by the function.
    pub returned: bool,
}

/// A function's ops in a topological order (the schedule): the order of both passes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Problem {
    pub ops: Vec<Op>,
}

/// What a candidate is ranked by, best first when compared greatest first: tt-mlir's
/// `LayoutScore` order (output in L1, sharded, fewer bytes read from DRAM, no reshard, more
/// cores, less L1), then `preferCandidate`'s tie-break (more sharded inputs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Score {
    pub l1: bool,
    pub sharded: bool,
    pub dram_bytes: Reverse<u64>,
    pub no_reshard: bool,
    pub cores: u64,
    pub l1_usage: Reverse<u64>,
    pub sharded_inputs: u32,
}

/// One input candidate of an operand.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InputChoice {
    pub layout: TtnnLayout,
    /// The producer's beam entry this layout comes from (or is resharded from).
    pub back: Option<usize>,
    /// True when the layout is a reshard of the producer's output.
    pub reshard: bool,
}

/// One entry of an op's beam: a validated (inputs, output) pair.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BeamEntry {
    /// The layout the op model produces and the config it ran with.
    pub output: Candidate,
    /// Per operand (`None` for non-tensor operands).
    pub inputs: Vec<Option<InputChoice>>,
    pub score: Score,
}

/// How an op's layout was decided.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum How {
    /// The op keeps its plan: not the optimizer's to choose, or nothing to decide.
    Kept,
    /// Beam entry `rank` (0 = best score), picked by the backward consolidation; `agreed`
    /// and `users` count its users that assumed this entry, at a fork.
    Beam { rank: usize, fork: Option<(usize, usize)> },
    /// No candidate validated: the op's DRAM fallback.
    NoValid(String),
}

/// The decision for one op.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decision {
    /// The chosen output and config; `None` for an op that keeps its plan.
    pub output: Option<Candidate>,
    /// Per operand: the layout the op reads it in (validated with), `None` when it reads
    /// the value as it comes (non-tensor operands, kept ops).
    pub inputs: Vec<Option<TtnnLayout>>,
    /// A copy of the result to DRAM right after the op (a spill), seen by every use.
    pub spill: Option<TtnnLayout>,
    pub how: How,
    /// What the spill pass did to the op, in words (empty if nothing).
    pub spill_note: String,
}

/// The policy's answer for one problem.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Outcome {
    pub decisions: Vec<Decision>,
    /// Op-model queries issued.
    pub queries: u64,
}

/// Runs both passes: propagation with the beam, backward consolidation, then the spill
/// sweep with validation and fallback.
pub fn optimize(problem: &Problem, model: &dyn OpModel, target: &Target) -> Outcome {
    let mut ctx = Ctx { p: problem, model, target, queries: 0, reshards: FxHashMap::default() };
    let beams = ctx.propagate();
    let chosen = consolidate(problem, &beams);
    let mut decisions = apply(problem, &beams, &chosen);
    ctx.spill(&mut decisions);
    Outcome { decisions, queries: ctx.queries }
}

struct Ctx<'a> {
    p: &'a Problem,
    model: &'a dyn OpModel,
    target: &'a Target,
    queries: u64,
    /// `validateReshard` answers per (source, target), cached as tt-mlir caches them.
    reshards: FxHashMap<(TtnnLayout, TtnnLayout), bool>,
}

/// Total bytes of a tensor in `layout` (shard bytes times grid volume).
fn tensor_bytes(layout: &TtnnLayout) -> u64 {
    layout.memref_bytes().saturating_mul(layout.grid2d().volume().max(1))
}

fn dtype_of(layout: &TtnnLayout) -> DataType {
    layout.data_type().unwrap_or(DataType::BF16)
}

/// Tiles in a tensor of `shape` (its last two dimensions padded to tiles, the rest folded).
fn tile_count(shape: &[u64]) -> u64 {
    let (w, rest) = match shape {
        [] => (1, &[][..]),
        [rest @ .., w] => (*w, rest),
    };
    let h: u64 = rest.iter().product::<u64>().max(1);
    h.div_ceil(32).saturating_mul(w.div_ceil(32)).max(1)
}

impl Ctx<'_> {
    fn query(&mut self, q: &OpQuery) -> Result<OpConstraints, OpError> {
        self.queries += 1;
        self.model.query(self.target, q)
    }

    /// tt-mlir's `validateReshard`: the `to_memory_config` from `from` to `to` validates and
    /// keeps the page layout.
    fn reshard_ok(&mut self, shape: &[u64], from: &TtnnLayout, to: &TtnnLayout) -> bool {
        if from.page_layout() != to.page_layout() {
            return false;
        }
        let key = (from.clone(), to.clone());
        if let Some(&ok) = self.reshards.get(&key) {
            return ok;
        }
        let q = OpQuery {
            kind: OpKind::ToMemoryConfig,
            inputs: vec![TensorDesc::new(shape, from.clone())],
            output_shape: shape.to_vec(),
            output_dtype: dtype_of(to),
            output: OutputHint::Layout(to.clone()),
            config: OpConfig::None,
            l1_in_use: from.l1_bytes_per_core(),
        };
        let ok = self.query(&q).is_ok();
        self.reshards.insert(key, ok);
        ok
    }

    /// Pass 1, forward: every op's beam from its producers' beams.
    fn propagate(&mut self) -> Vec<Vec<BeamEntry>> {
        let p = self.p;
        let mut beams: Vec<Vec<BeamEntry>> = vec![Vec::new(); p.ops.len()];
        for j in 0..p.ops.len() {
            let op = &p.ops[j];
            if !op.optimize || op.candidates.is_empty() || op.fallback.is_none() {
                continue;
            }
            if op.operands.iter().all(Option::is_none) {
                continue;
            }
            let sets: Vec<Option<Vec<InputChoice>>> = op
                .operands
                .iter()
                .enumerate()
                .map(|(k, o)| o.as_ref().map(|o| self.input_set(&beams, j, k, o)))
                .collect();
            beams[j] = self.evaluate(j, &sets);
        }
        beams
    }

    /// The input candidates of operand `k` of op `j`: the producer's beam, an L1-interleaved
    /// fallback, reshards to the op's stratified sharded targets.
    fn input_set(
        &mut self,
        beams: &[Vec<BeamEntry>],
        j: usize,
        k: usize,
        operand: &Operand,
    ) -> Vec<InputChoice> {
        let mut set: Vec<InputChoice> = Vec::new();
        let from_beam = operand.producer.filter(|&q| !beams[q].is_empty());
        match from_beam {
            Some(q) => {
                for (b, e) in beams[q].iter().enumerate() {
                    // Entries with the same output layout give the same input: the first
                    // (best) stands for them, as the stable sort would pick it anyway.
                    if !set.iter().any(|c| c.layout == e.output.layout) {
                        set.push(InputChoice {
                            layout: e.output.layout.clone(),
                            back: Some(b),
                            reshard: false,
                        });
                    }
                }
            }
            None => {
                set.push(InputChoice { layout: operand.layout.clone(), back: None, reshard: false })
            }
        }
        // Function arguments and values outside the beam are mostly weights and constants
        // (tt-mlir skips const-derived operands): no reshard is explored for them.
        if from_beam.is_none() {
            return set;
        }
        let sharded = |l: &TtnnLayout| l.is_l1() && l.is_sharded();
        if set.iter().any(|c| sharded(&c.layout))
            && !set.iter().any(|c| c.layout.is_l1() && !c.layout.is_sharded())
        {
            let target = TtnnLayout::l1_interleaved(
                &operand.shape,
                dtype_of(&operand.layout),
                PageLayout::Tile,
                self.target.worker_grid(),
            );
            self.add_reshard(&mut set, &operand.shape, target, |_| true);
        }
        let any_sharded = set.iter().any(|c| sharded(&c.layout));
        let op = &self.p.ops[j];
        let targets = stratified_targets(
            op.reshard_targets.get(k).map_or(&[][..], |t| &t[..]),
            tile_count(&op.output_shape),
        );
        for t in targets {
            if set.len() >= MAX_INPUT_CANDIDATES {
                break;
            }
            // Interleaved sources are resharded only when no sharded candidate survives.
            self.add_reshard(&mut set, &operand.shape, t, |c| !any_sharded || sharded(&c.layout));
        }
        set.truncate(MAX_INPUT_CANDIDATES);
        set
    }

    /// Adds `target` as a reshard of the first source in `set` (beam order) that `source`
    /// admits and whose reshard validates.
    fn add_reshard(
        &mut self,
        set: &mut Vec<InputChoice>,
        shape: &[u64],
        target: TtnnLayout,
        source: impl Fn(&InputChoice) -> bool,
    ) {
        if set.iter().any(|c| c.layout == target) {
            return;
        }
        let sources: Vec<InputChoice> =
            set.iter().filter(|c| !c.reshard && source(c)).cloned().collect();
        for s in sources {
            if self.reshard_ok(shape, &s.layout, &target) {
                set.push(InputChoice { layout: target, back: s.back, reshard: true });
                return;
            }
        }
    }

    /// Validates every input combination against the op's output hints and keeps the best
    /// `BEAM_WIDTH`; the DRAM fallback when nothing validates.
    fn evaluate(&mut self, j: usize, sets: &[Option<Vec<InputChoice>>]) -> Vec<BeamEntry> {
        let op = &self.p.ops[j];
        let (primary, fallbacks) = hints(op);
        let slots: Vec<usize> = (0..sets.len()).filter(|&k| sets[k].is_some()).collect();
        let sizes: Vec<usize> =
            slots.iter().map(|&k| sets[k].as_ref().map_or(1, Vec::len).max(1)).collect();
        let mut entries: Vec<BeamEntry> = Vec::new();
        let mut first_error: Option<OpError> = None;
        let mut odometer = vec![0usize; slots.len()];
        let mut tried = 0usize;
        'combos: loop {
            if tried >= MAX_COMBINATIONS {
                break;
            }
            tried += 1;
            let mut inputs: Vec<Option<InputChoice>> = vec![None; sets.len()];
            for (s, &k) in slots.iter().enumerate() {
                inputs[k] = sets[k].as_ref().and_then(|set| set.get(odometer[s]).cloned());
            }
            if valid_combination(op, &inputs) {
                let descs: Vec<TensorDesc> = op
                    .operands
                    .iter()
                    .zip(&inputs)
                    .filter_map(|(o, c)| {
                        Some(TensorDesc::new(&o.as_ref()?.shape, c.as_ref()?.layout.clone()))
                    })
                    .collect();
                let l1_in: u64 = descs.iter().map(|d| d.layout.l1_bytes_per_core()).sum();
                let mut sharded_out = false;
                for (hint, config) in &primary {
                    if let Some(e) =
                        self.try_hint(op, &descs, l1_in, &inputs, hint, config, &mut first_error)
                    {
                        sharded_out |= e.output.layout.is_l1() && e.output.layout.is_sharded();
                        entries.push(e);
                    }
                }
                if !sharded_out {
                    for (hint, config) in &fallbacks {
                        if let Some(e) = self.try_hint(
                            op,
                            &descs,
                            l1_in,
                            &inputs,
                            hint,
                            config,
                            &mut first_error,
                        ) {
                            entries.push(e);
                        }
                    }
                }
            }
            // Next combination.
            for s in 0..odometer.len() {
                odometer[s] += 1;
                if odometer[s] < sizes[s] {
                    continue 'combos;
                }
                odometer[s] = 0;
            }
            break;
        }
        entries.sort_by_key(|e| Reverse(e.score));
        entries.dedup_by(|a, b| a.output == b.output && a.inputs == b.inputs);
        entries.truncate(BEAM_WIDTH);
        if entries.is_empty()
            && let Some(fallback) = &op.fallback
        {
            // tt-mlir's `getDRAMInterleavedFallback`: the op in DRAM, reading its inputs as
            // the best producer candidates give them; the spill pass validates it.
            let inputs: Vec<Option<InputChoice>> =
                sets.iter().map(|s| s.as_ref().and_then(|s| s.first().cloned())).collect();
            let _ = first_error;
            return vec![BeamEntry {
                output: fallback.clone(),
                inputs,
                score: Score {
                    l1: false,
                    sharded: false,
                    dram_bytes: Reverse(u64::MAX),
                    no_reshard: true,
                    cores: 0,
                    l1_usage: Reverse(0),
                    sharded_inputs: 0,
                },
            }];
        }
        entries
    }

    #[allow(clippy::too_many_arguments)]
    fn try_hint(
        &mut self,
        op: &Op,
        descs: &[TensorDesc],
        l1_in: u64,
        inputs: &[Option<InputChoice>],
        hint: &OutputHint,
        config: &OpConfig,
        first_error: &mut Option<OpError>,
    ) -> Option<BeamEntry> {
        let q = OpQuery {
            kind: op.kind.clone(),
            inputs: descs.to_vec(),
            output_shape: op.output_shape.clone(),
            output_dtype: op.output_dtype,
            output: hint.clone(),
            config: config.clone(),
            l1_in_use: l1_in,
        };
        match self.query(&q) {
            Ok(c) => {
                let out = c.output_layout.clone();
                let choices = || inputs.iter().flatten();
                let score = Score {
                    l1: out.is_l1(),
                    sharded: out.is_l1() && out.is_sharded(),
                    dram_bytes: Reverse(
                        descs
                            .iter()
                            .filter(|d| !d.layout.is_l1())
                            .map(|d| tensor_bytes(&d.layout))
                            .sum(),
                    ),
                    no_reshard: !choices().any(|c| c.reshard),
                    cores: if out.is_l1() { out.grid2d().volume() } else { 0 },
                    l1_usage: Reverse(c.output_bytes),
                    sharded_inputs: choices().filter(|c| c.layout.is_sharded()).count() as u32,
                };
                Some(BeamEntry {
                    output: Candidate { layout: out, config: c.config },
                    inputs: inputs.to_vec(),
                    score,
                })
            }
            Err(e) => {
                first_error.get_or_insert(e);
                None
            }
        }
    }
}

/// The op's output hints: (primary, fallbacks). Fallbacks are tried for an input
/// combination only when no primary hint gave a sharded output (tt-mlir's `OpRuleBook`).
type Hints = Vec<(OutputHint, OpConfig)>;

fn hints(op: &Op) -> (Hints, Hints) {
    let as_layout = |c: &Candidate| (OutputHint::Layout(c.layout.clone()), c.config.clone());
    match op.kind {
        // Matmul: its sharded configs (with program configs) and DRAM; no null hint, no L1
        // interleaved.
        OpKind::Matmul(_) | OpKind::Linear(_) => (
            op.candidates
                .iter()
                .filter(|c| !c.layout.is_l1() || c.layout.is_sharded())
                .map(as_layout)
                .collect(),
            Vec::new(),
        ),
        // Convolutions: every legal config with its conv config.
        OpKind::Conv2d(_) | OpKind::ConvTranspose2d(_) | OpKind::Conv1d(_) => {
            (op.candidates.iter().map(as_layout).collect(), Vec::new())
        }
        _ => {
            let config = op.fallback.as_ref().map_or(OpConfig::None, |f| f.config.clone());
            (
                vec![(OutputHint::Null, config)],
                op.candidates
                    .iter()
                    .filter(|c| c.layout.is_l1() && c.layout.is_sharded())
                    .map(as_layout)
                    .collect(),
            )
        }
    }
}

/// Prunes combinations no backend call can accept (tt-mlir's `isValidInputCombination`): an
/// elementwise op whose same-shaped inputs are sharded differently.
fn valid_combination(op: &Op, inputs: &[Option<InputChoice>]) -> bool {
    if !matches!(op.kind, OpKind::Binary(_) | OpKind::Ternary(_)) {
        return true;
    }
    let sharded: Vec<(&Vec<u64>, &TtnnLayout)> = op
        .operands
        .iter()
        .zip(inputs)
        .filter_map(|(o, c)| Some((&o.as_ref()?.shape, &c.as_ref()?.layout)))
        .filter(|(_, l)| l.is_sharded())
        .collect();
    sharded.windows(2).all(|w| w[0].0 != w[1].0 || w[0].1 == w[1].1)
}

/// The reshard targets of one operand: grid volume at most the output's tile count, one per
/// (memory layout, grid), the first `MAX_RESHARDS_PER_TYPE` of each sharding type (the pool
/// lists the largest grids first), then by volume, largest first.
fn stratified_targets(pool: &[TtnnLayout], tiles: u64) -> Vec<TtnnLayout> {
    let mut out: Vec<TtnnLayout> = Vec::new();
    for kind in [
        TensorMemoryLayout::HeightSharded,
        TensorMemoryLayout::WidthSharded,
        TensorMemoryLayout::BlockSharded,
    ] {
        let mut seen: Vec<ttnn_types::Grid> = Vec::new();
        for l in pool.iter().filter(|l| l.memory_layout == Some(kind)) {
            let g = l.grid2d();
            if g.volume() > tiles || seen.contains(&g) {
                continue;
            }
            seen.push(g);
            out.push(l.clone());
            if seen.len() >= MAX_RESHARDS_PER_TYPE {
                break;
            }
        }
    }
    out.sort_by_key(|l| Reverse(l.grid2d().volume()));
    out
}

/// Pass 1, backward (`consolidateBeam`): in reverse order, an op with no user in the beam
/// takes its best entry; one with a single user follows that user's back pointer; a fork
/// takes the entry most users assumed (ties to the better score). Users that assumed
/// another entry read the value converted to the layout they assumed.
fn consolidate(p: &Problem, beams: &[Vec<BeamEntry>]) -> Vec<(usize, Option<(usize, usize)>)> {
    let n = p.ops.len();
    let mut users: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    for (j, op) in p.ops.iter().enumerate() {
        if beams[j].is_empty() {
            continue;
        }
        for (k, o) in op.operands.iter().enumerate() {
            if let Some(q) = o.as_ref().and_then(|o| o.producer)
                && q < n
                && !users[q].iter().any(|&(u, _)| u == j)
            {
                // Only the first operand through which a user reads the op is examined.
                users[q].push((j, k));
            }
        }
    }
    let mut chosen: Vec<(usize, Option<(usize, usize)>)> = vec![(0, None); n];
    for j in (0..n).rev() {
        if beams[j].is_empty() {
            continue;
        }
        let picks: Vec<Option<usize>> = users[j]
            .iter()
            .map(|&(u, k)| {
                beams[u]
                    .get(chosen[u].0)
                    .and_then(|e| e.inputs.get(k).cloned().flatten())
                    .and_then(|c| c.back)
            })
            .collect();
        chosen[j] = match picks.as_slice() {
            [] => (0, None),
            [one] => (one.unwrap_or(0).min(beams[j].len() - 1), None),
            many => {
                let mut counts = vec![0usize; beams[j].len()];
                for b in many.iter().flatten() {
                    if let Some(c) = counts.get_mut(*b) {
                        *c += 1;
                    }
                }
                // Most agreeing users; on a tie the lower index, the better score.
                let best = (0..counts.len()).max_by_key(|&i| (counts[i], Reverse(i))).unwrap_or(0);
                (best, Some((counts[best], many.len())))
            }
        };
    }
    chosen
}

/// The consolidated beam as decisions, with tt-mlir's `insertReturnDramSpills`.
fn apply(
    p: &Problem,
    beams: &[Vec<BeamEntry>],
    chosen: &[(usize, Option<(usize, usize)>)],
) -> Vec<Decision> {
    p.ops
        .iter()
        .enumerate()
        .map(|(j, op)| {
            let Some(e) = beams[j].get(chosen[j].0) else {
                return Decision {
                    output: None,
                    inputs: vec![None; op.operands.len()],
                    spill: None,
                    how: How::Kept,
                    spill_note: String::new(),
                };
            };
            let how = if e.score.dram_bytes == Reverse(u64::MAX) && !e.score.l1 {
                How::NoValid("no input and output combination validates".to_owned())
            } else {
                How::Beam { rank: chosen[j].0, fork: chosen[j].1 }
            };
            let spill = (op.returned && e.output.layout.is_l1())
                .then(|| dram_of(&op.output_shape, &e.output.layout));
            Decision {
                output: Some(e.output.clone()),
                inputs: e.inputs.iter().map(|c| c.as_ref().map(|c| c.layout.clone())).collect(),
                spill,
                how,
                spill_note: if op.returned && e.output.layout.is_l1() {
                    "returned: copied to DRAM right after the op".to_owned()
                } else {
                    String::new()
                },
            }
        })
        .collect()
}

/// DRAM interleaved for a tensor of `shape` with `like`'s data type and page layout.
fn dram_of(shape: &[u64], like: &TtnnLayout) -> TtnnLayout {
    TtnnLayout::dram_interleaved(shape, dtype_of(like), like.page_layout())
}

/// A value held in L1 by the spill sweep.
struct Live {
    op: usize,
    bytes: u64,
    last_use: usize,
}

impl Ctx<'_> {
    /// The layout op `j`'s operand `k` arrives in: its producer's output as decided (or its
    /// spill), else the operand as the plan leaves it.
    fn incoming(&self, d: &[Decision], j: usize, k: usize) -> Option<TtnnLayout> {
        let o = self.p.ops[j].operands.get(k)?.as_ref()?;
        let Some(q) = o.producer else { return Some(o.layout.clone()) };
        let dq = d.get(q)?;
        if let Some(s) = &dq.spill {
            return Some(s.clone());
        }
        Some(dq.output.as_ref().map_or_else(|| o.layout.clone(), |c| c.layout.clone()))
    }

    /// The op's query with its inputs as they will be read (converted where it expects
    /// another layout) and `l1_in_use` live.
    fn op_query(&self, d: &[Decision], j: usize, l1_in_use: u64) -> Option<OpQuery> {
        let op = &self.p.ops[j];
        let out = d[j].output.as_ref().or(op.current.as_ref())?;
        let mut inputs = Vec::new();
        for (k, o) in op.operands.iter().enumerate() {
            let Some(o) = o else { continue };
            let layout = d[j].inputs[k].clone().or_else(|| self.incoming(d, j, k))?;
            inputs.push(TensorDesc::new(&o.shape, layout));
        }
        Some(OpQuery {
            kind: op.kind.clone(),
            inputs,
            output_shape: op.output_shape.clone(),
            output_dtype: op.output_dtype,
            output: OutputHint::Layout(out.layout.clone()),
            config: out.config.clone(),
            l1_in_use,
        })
    }

    /// Pass 2 (`GreedyL1SpillManagement`, with the sum tracker) and the validation and
    /// fallback after it: in schedule order, each decided op is validated with everything
    /// live in L1; out of memory evicts the live value with the farthest last use to DRAM
    /// (or demotes the op's own output when none is left), another error demotes the op.
    fn spill(&mut self, d: &mut [Decision]) {
        let p = self.p;
        let n = p.ops.len();
        let mut last_use = vec![None::<usize>; n];
        for (j, op) in p.ops.iter().enumerate() {
            for o in op.operands.iter().flatten() {
                if let Some(q) = o.producer
                    && q < n
                {
                    last_use[q] = Some(last_use[q].map_or(j, |u: usize| u.max(j)));
                }
            }
        }
        // L1 function arguments stay live throughout: the caller owns them.
        let mut args: Vec<TtnnLayout> = Vec::new();
        for o in p.ops.iter().flat_map(|op| op.operands.iter().flatten()) {
            if o.producer.is_none() && o.layout.is_l1() && !args.contains(&o.layout) {
                args.push(o.layout.clone());
            }
        }
        let base: u64 = args.iter().map(TtnnLayout::l1_bytes_per_core).sum();
        let mut live: Vec<Live> = Vec::new();
        for j in 0..n {
            live.retain(|v| v.last_use >= j);
            // A kept op is validated only when it reads a value in L1, which the policy may
            // have put there; it is never demoted, only its inputs read from DRAM.
            let kept = d[j].output.is_none();
            let reads_l1 = (0..p.ops[j].operands.len())
                .any(|k| self.incoming(d, j, k).is_some_and(|l| l.is_l1()));
            if kept && (p.ops[j].current.is_none() || !reads_l1) {
                self.track(p, d, j, &last_use, &mut live);
                continue;
            }
            // Users of an evicted or spilled value read it from DRAM unless they reject it
            // (tt-mlir's probe): drop the conversion back to L1 where DRAM validates.
            for k in 0..p.ops[j].operands.len() {
                let Some(q) = p.ops[j].operands[k].as_ref().and_then(|o| o.producer) else {
                    continue;
                };
                let Some(incoming) = self.incoming(d, j, k) else { continue };
                if d[q].spill.is_none()
                    || d[j].inputs[k].is_none()
                    || d[j].inputs[k].as_ref() == Some(&incoming)
                {
                    continue;
                }
                let before = d[j].inputs[k].replace(incoming);
                let occupied = base + live.iter().map(|v| v.bytes).sum::<u64>();
                let ok = self.op_query(d, j, occupied).is_some_and(|q| self.query(&q).is_ok());
                if !ok {
                    d[j].inputs[k] = before;
                }
            }
            let mut demoted = kept;
            let mut inputs_to_dram = false;
            let as_planned = d[j].inputs.clone();
            loop {
                let copies: u64 = (0..p.ops[j].operands.len())
                    .filter(|&k| {
                        d[j].inputs[k].is_some() && d[j].inputs[k] != self.incoming(d, j, k)
                    })
                    .filter_map(|k| d[j].inputs[k].as_ref().map(TtnnLayout::l1_bytes_per_core))
                    .sum();
                let occupied = base + live.iter().map(|v| v.bytes).sum::<u64>() + copies;
                let Some(q) = self.op_query(d, j, occupied) else { break };
                match self.query(&q) {
                    Ok(_) => break,
                    Err(OpError::OutOfMemory { .. }) => {
                        let reads: Vec<usize> =
                            p.ops[j].operands.iter().flatten().filter_map(|o| o.producer).collect();
                        let victim = live
                            .iter()
                            .enumerate()
                            // Only values the policy placed can move.
                            .filter(|(_, v)| !reads.contains(&v.op) && d[v.op].output.is_some())
                            .max_by_key(|(_, v)| (v.last_use, v.op))
                            .map(|(i, _)| i);
                        if let Some(i) = victim {
                            let v = live.remove(i);
                            self.evict(p, d, v.op, j);
                            continue;
                        }
                        if !demoted && self.demote(d, j, "it does not fit L1 next to what is live")
                        {
                            demoted = true;
                            continue;
                        }
                        if !inputs_to_dram && self.inputs_to_dram(d, j) {
                            inputs_to_dram = true;
                            continue;
                        }
                        break;
                    }
                    Err(e) => {
                        if !demoted && self.demote(d, j, &format!("the op model rejects it ({e})"))
                        {
                            demoted = true;
                            continue;
                        }
                        if !inputs_to_dram && self.inputs_to_dram(d, j) {
                            inputs_to_dram = true;
                            continue;
                        }
                        if kept {
                            // The op fails whatever it reads: leave it as planned.
                            d[j].inputs = as_planned;
                            d[j].spill_note.clear();
                        }
                        break;
                    }
                }
            }
            let out_l1 = d[j].output.as_ref().is_some_and(|c| c.layout.is_l1());
            if p.ops[j].returned && out_l1 && d[j].spill.is_none() {
                let out = d[j].output.as_ref().map(|c| c.layout.clone());
                d[j].spill = out.map(|l| dram_of(&p.ops[j].output_shape, &l));
            }
            self.track(p, d, j, &last_use, &mut live);
        }
    }

    /// Adds op `j`'s result to the live set when it stays in L1 for later users.
    fn track(
        &self,
        p: &Problem,
        d: &[Decision],
        j: usize,
        last_use: &[Option<usize>],
        live: &mut Vec<Live>,
    ) {
        if d[j].spill.is_some() {
            return;
        }
        let layout = match &d[j].output {
            Some(c) => c.layout.clone(),
            None => match p
                .ops
                .iter()
                .skip(j + 1)
                .flat_map(|o| o.operands.iter().flatten())
                .find(|o| o.producer == Some(j))
            {
                Some(o) => o.layout.clone(),
                None => return,
            },
        };
        if let Some(u) = last_use[j]
            && layout.is_l1()
        {
            live.push(Live { op: j, bytes: layout.l1_bytes_per_core(), last_use: u });
        }
    }

    /// Spills op `v`'s result to DRAM (evicted while op `at` runs).
    fn evict(&self, p: &Problem, d: &mut [Decision], v: usize, at: usize) {
        let Some(out) = d[v].output.as_ref().map(|c| c.layout.clone()) else { return };
        d[v].spill = Some(dram_of(&p.ops[v].output_shape, &out));
        d[v].spill_note = format!(
            "evicted to DRAM when {} did not fit L1 (the live value used farthest ahead)",
            p.ops[at].name
        );
    }

    /// Demotes op `j`'s output to its DRAM fallback; false if it has none or is there.
    fn demote(&self, d: &mut [Decision], j: usize, why: &str) -> bool {
        let Some(f) = self.p.ops[j].fallback.clone() else { return false };
        if d[j].output.as_ref() == Some(&f) {
            return false;
        }
        d[j].output = Some(f);
        d[j].spill = None;
        d[j].spill_note = format!("demoted to DRAM: {why}");
        true
    }

    /// Reads every L1 input of op `j` from DRAM instead; false if none is in L1.
    fn inputs_to_dram(&self, d: &mut [Decision], j: usize) -> bool {
        let mut changed = false;
        for k in 0..self.p.ops[j].operands.len() {
            let Some(o) = &self.p.ops[j].operands[k] else { continue };
            // Function arguments (and values the policy does not place) are read as they
            // come: copying one out of L1 needs it resident, which is what failed.
            if o.producer.is_none() {
                continue;
            }
            let now = d[j].inputs[k].clone().or_else(|| self.incoming(d, j, k));
            if let Some(l) = now.filter(TtnnLayout::is_l1) {
                d[j].inputs[k] = Some(dram_of(&o.shape, &l));
                changed = true;
            }
        }
        if changed {
            if !d[j].spill_note.is_empty() {
                d[j].spill_note.push_str("; ");
            }
            d[j].spill_note.push_str("its L1 inputs are read from DRAM");
        }
        changed
    }
}
