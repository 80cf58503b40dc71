//! The solving steps: first-op preprocessing, edge path sets, reshard insertion,
//! propagation, core-usage maximization and picking.

use std::{collections::BTreeMap, sync::Arc};

use opmodel::{OpConfig, OpConstraints, OpError, OpKind, OpModel, OpQuery, OutputHint, TensorDesc};
use target::Target;
use ttnn_types::{PageLayout, TensorMemoryLayout, TtnnLayout};

use crate::{
    Bitset, ChainProblem, ChainSolution, Edge, Failure, Reshard,
    probe_memo::{Enabled, Key, ProbeMemo},
};

/// Solves one chain. Deterministic: the same problem always gives the same solution.
pub fn solve(problem: &ChainProblem, model: &dyn OpModel, target: &Target) -> ChainSolution {
    solve_with(problem, model, target, None)
}

/// [`solve`], with the configs each reshard enables read from and kept in `memo` (see
/// [`ProbeMemo`]); the solution is the same with or without it.
pub fn solve_with(
    problem: &ChainProblem,
    model: &dyn OpModel,
    target: &Target,
    memo: Option<&ProbeMemo>,
) -> ChainSolution {
    let mut s = Solver {
        p: problem,
        model,
        target,
        memo,
        bits: problem.ops.iter().map(|o| Bitset::full(o.candidates.len())).collect(),
        path_sets: Vec::new(),
        reshards: BTreeMap::new(),
        first_input: None,
        spill_mask: None,
        queries: 0,
    };
    let result = s.run();
    let alive = s.bits.iter().map(Bitset::count).collect();
    match result {
        Ok((selected, core_usage)) => {
            let reshards = s.finish_reshards(&selected);
            ChainSolution {
                result: Ok(selected),
                reshards,
                first_input_layout: s.first_input.clone(),
                core_usage,
                alive,
                queries: s.queries,
            }
        }
        Err(f) => ChainSolution {
            result: Err(f),
            reshards: Vec::new(),
            first_input_layout: None,
            core_usage: Vec::new(),
            alive,
            queries: s.queries,
        },
    }
}

/// An op-model probe: an output hint with op-specific knobs.
#[derive(Clone)]
struct TestConfig {
    hint: OutputHint,
    config: OpConfig,
}

struct PathSet {
    edge: Edge,
    paths: Vec<(u32, u32)>,
}

/// The reshard layouts recorded on one edge, per consumer config they enable.
struct ReshardEntry {
    enabled: Arc<Enabled>,
    user: bool,
    reason: String,
}

struct Solver<'a> {
    p: &'a ChainProblem,
    model: &'a dyn OpModel,
    target: &'a Target,
    memo: Option<&'a ProbeMemo>,
    bits: Vec<Bitset>,
    path_sets: Vec<PathSet>,
    /// Keyed by (consumer op, operand).
    reshards: BTreeMap<(usize, u32), ReshardEntry>,
    first_input: Option<TtnnLayout>,
    /// The last op's configs whose output can still be spilled (see `spill_room`); every
    /// reset of that op's bitset is intersected with it.
    spill_mask: Option<(usize, Bitset)>,
    queries: u64,
}

fn fail(op: usize, edge: Option<Edge>, reason: String) -> Failure {
    Failure { op, edge, reason }
}

impl Solver<'_> {
    fn run(&mut self) -> Result<(Vec<usize>, Vec<u64>), Failure> {
        if self.p.ops.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        if let Some(i) = self.p.ops.iter().position(|o| o.candidates.is_empty()) {
            return Err(fail(
                i,
                None,
                format!("`{}` has no L1-sharded candidate", self.p.ops[i].name),
            ));
        }
        self.spill_room()?;
        self.preprocess_first_op()?;
        self.apply_spill_mask();
        for c in 0..self.p.ops.len() {
            let edges: Vec<Edge> =
                self.p.edges.iter().filter(|e| e.consumer == c).copied().collect();
            for edge in edges {
                self.resolve_edge(edge)?;
            }
        }
        self.propagate()?;
        Ok(self.pick())
    }

    /// The op-model probes for op `c`, as tt-mlir's `getUniqueTestConfigs`: most ops are
    /// probed with a null output hint (the backend picks the output) once per distinct
    /// op-specific config; matmul/linear without a fused activation with a partial layout per
    /// (buffer, memory layout) and program config; d2m subgraphs with their full configs.
    fn test_configs(&self, c: usize) -> Vec<TestConfig> {
        let op = &self.p.ops[c];
        let mut out: Vec<TestConfig> = Vec::new();
        let mut push = |t: TestConfig| {
            if !out.iter().any(|o| o.hint == t.hint && o.config == t.config) {
                out.push(t);
            }
        };
        let partial_matmul = match &op.kind {
            OpKind::Matmul(a) | OpKind::Linear(a) => a.activation.is_none(),
            _ => false,
        };
        for cand in op.candidates.iter() {
            if partial_matmul {
                let mut partial = cand.layout.partial();
                // Partial hints carry only buffer type and memory layout.
                partial.grid = ttnn_types::smallvec![1, 1];
                partial.core_ranges = None;
                partial.memref_shape = ttnn_types::Dims::new();
                push(TestConfig {
                    hint: OutputHint::Partial(partial),
                    config: cand.config.clone(),
                });
            } else if op.kind.is_d2m_subgraph() {
                push(TestConfig {
                    hint: OutputHint::Layout(cand.layout.clone()),
                    config: cand.config.clone(),
                });
            } else {
                push(TestConfig { hint: OutputHint::Null, config: cand.config.clone() });
            }
        }
        out
    }

    fn validate(
        &mut self,
        c: usize,
        operands: &[Option<TensorDesc>],
        test: &TestConfig,
    ) -> Result<OpConstraints, OpError> {
        let op = &self.p.ops[c];
        let inputs: Vec<TensorDesc> = operands.iter().flatten().cloned().collect();
        // Deviation from tt-mlir: the op's own L1 inputs are resident while it runs, so
        // they count against the budget (see the crate docs).
        let l1_in_use = inputs.iter().map(|t| t.layout.l1_bytes_per_core()).sum();
        let q = OpQuery {
            kind: op.kind.clone(),
            inputs,
            output_shape: op.output_shape.clone(),
            output_dtype: op.output_dtype,
            output: test.hint.clone(),
            config: test.config.clone(),
            l1_in_use,
        };
        self.queries += 1;
        self.model.query(self.target, &q)
    }

    /// The candidate of op `c` the backend's answer corresponds to, as
    /// `validateWithMultipleAttributes` maps it: same output layout and same op config.
    fn match_output(&self, c: usize, r: &OpConstraints, test: &TestConfig) -> Option<usize> {
        let config = if r.config == OpConfig::None { &test.config } else { &r.config };
        self.p.ops[c]
            .candidates
            .iter()
            .position(|cand| cand.layout == r.output_layout && cand.config == *config)
            .or_else(|| {
                // Configs the backend does not echo back are matched by layout and the probe.
                self.p.ops[c]
                    .candidates
                    .iter()
                    .position(|cand| cand.layout == r.output_layout && cand.config == test.config)
            })
    }

    fn with_operand(&self, c: usize, operand: u32, layout: &TtnnLayout) -> Vec<Option<TensorDesc>> {
        let mut ops = self.p.ops[c].operands.clone();
        if let Some(Some(t)) = ops.get_mut(operand as usize) {
            t.layout = layout.clone();
        }
        ops
    }

    /// Going past tt-mlir: the spill after a chain is a `to_memory_config` that runs while
    /// the sharded output is still resident, and needs circular buffers of its own. A config
    /// whose output leaves no room for that copy would put the spill out of L1, so it is
    /// dropped up front; if no config is left the chain fails with the reason.
    fn spill_room(&mut self) -> Result<(), Failure> {
        if !self.p.spills_output {
            return Ok(());
        }
        let last = self.p.ops.len() - 1;
        let op = &self.p.ops[last];
        let mut mask = Bitset::empty(op.candidates.len());
        let mut first_error = None;
        for (i, cand) in op.candidates.iter().enumerate() {
            let dtype = cand.layout.data_type().unwrap_or(ttnn_types::DataType::BF16);
            let dram =
                TtnnLayout::dram_interleaved(&op.output_shape, dtype, cand.layout.page_layout());
            let q = OpQuery {
                kind: OpKind::ToMemoryConfig,
                inputs: vec![TensorDesc::new(&op.output_shape, cand.layout.clone())],
                output_shape: op.output_shape.clone(),
                output_dtype: dtype,
                output: OutputHint::Layout(dram),
                config: OpConfig::None,
                l1_in_use: cand.layout.l1_bytes_per_core(),
            };
            self.queries += 1;
            match self.model.query(self.target, &q) {
                Ok(_) => mask.set(i),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if mask.is_empty() {
            let why = first_error.map_or_else(String::new, |e| format!(": {e}"));
            return Err(fail(
                last,
                None,
                format!(
                    "no config of `{}` leaves room in L1 to spill its output to DRAM{why}",
                    op.name
                ),
            ));
        }
        self.spill_mask = Some((last, mask));
        Ok(())
    }

    fn apply_spill_mask(&mut self) {
        if let Some((op, mask)) = &self.spill_mask {
            self.bits[*op].and_with(mask);
        }
    }

    fn preprocess_first_op(&mut self) -> Result<(), Failure> {
        let first = &self.p.ops[0];
        if self.p.user_reshards.contains(&(0, 0)) {
            return self.insert_reshard(
                0,
                0,
                true,
                "requested by `insert-memreconfig`".to_owned(),
                None,
            );
        }
        let Some(Some(input)) = first.operands.first() else { return Ok(()) };
        let input = input.clone();
        if first.kind.is_conv2d_like() {
            return self.insert_reshard(
                0,
                0,
                false,
                "conv2d chains always reshard their input (tt-mlir's rule)".to_owned(),
                None,
            );
        }
        if first.input_from_d2m && self.search_d2m_input(&input) {
            return Ok(());
        }
        // The chain entry is validated against a DRAM-interleaved input, whatever the real
        // producer's layout is; the producer's output spills there.
        let dram = TtnnLayout::dram_interleaved(
            &input.shape,
            input.layout.data_type().unwrap_or(ttnn_types::DataType::BF16),
            PageLayout::Tile,
        );
        let operands = self.with_operand(0, 0, &dram);
        let partial_matmul =
            matches!(&first.kind, OpKind::Matmul(a) | OpKind::Linear(a) if a.activation.is_none());
        let candidates = first.candidates.clone();
        let mut bits = Bitset::empty(candidates.len());
        for (i, cand) in candidates.iter().enumerate() {
            let hint = if partial_matmul {
                OutputHint::Partial(cand.layout.partial())
            } else {
                OutputHint::Layout(cand.layout.clone())
            };
            let test = TestConfig { hint, config: cand.config.clone() };
            if let Ok(r) = self.validate(0, &operands, &test)
                && r.output_layout.is_sharded()
                && r.output_layout.is_l1()
                && r.output_layout == cand.layout
            {
                bits.set(i);
            }
        }
        if bits.is_empty() {
            return self.insert_reshard(
                0,
                0,
                false,
                "no config accepts a DRAM-interleaved input with a sharded output".to_owned(),
                None,
            );
        }
        self.bits[0].and_with(&bits);
        Ok(())
    }

    /// A chain fed by a `d2m_subgraph`: the subgraph can produce any layout, so search the
    /// input layouts of the first op for the one that enables the best output. Returns
    /// false if no input works (the chain then falls back to the interleaved entry).
    fn search_d2m_input(&mut self, input: &TensorDesc) -> bool {
        let first = self.p.ops[0].clone();
        let targets = first.reshard_targets.first().cloned().unwrap_or_default();
        let mut best: Option<(u64, u64, TtnnLayout, usize)> = None;
        for cand_in in targets.iter() {
            if cand_in.page_layout() != input.layout.page_layout() {
                continue;
            }
            let operands = self.with_operand(0, 0, cand_in);
            for (i, cand) in first.candidates.iter().enumerate() {
                let test = TestConfig {
                    hint: OutputHint::Layout(cand.layout.clone()),
                    config: cand.config.clone(),
                };
                let Ok(r) = self.validate(0, &operands, &test) else { continue };
                if r.output_layout != cand.layout {
                    continue;
                }
                let score = (cand.layout.num_cores(), cand_in.num_cores());
                if best.as_ref().is_none_or(|b| score > (b.0, b.1)) {
                    best = Some((score.0, score.1, cand_in.clone(), i));
                }
            }
        }
        let Some((_, _, layout, idx)) = best else { return false };
        let mut bits = Bitset::empty(first.candidates.len());
        bits.set(idx);
        self.bits[0].and_with(&bits);
        self.first_input = Some(layout);
        true
    }

    /// Tries every sharded layout of the operand's type as a reshard target and records
    /// which consumer configs each enables. Returns an error if none does.
    /// Per config of op `c`: the reshard layouts of its operand `operand` the op model
    /// accepts it with. Depends on op `c` alone (see [`ProbeMemo`]).
    fn enabled(&mut self, c: usize, operand: u32) -> Enabled {
        let targets =
            self.p.ops[c].reshard_targets.get(operand as usize).cloned().unwrap_or_default();
        let tests = self.test_configs(c);
        let mut enabled: Enabled = BTreeMap::new();
        for target in targets.iter() {
            let operands = self.with_operand(c, operand, target);
            for t in &tests {
                if let Ok(r) = self.validate(c, &operands, t)
                    && let Some(j) = self.match_output(c, &r, t)
                {
                    let list = enabled.entry(j).or_default();
                    if !list.contains(target) {
                        list.push(target.clone());
                    }
                }
            }
        }
        enabled
    }

    fn insert_reshard(
        &mut self,
        c: usize,
        operand: u32,
        user: bool,
        reason: String,
        edge: Option<Edge>,
    ) -> Result<(), Failure> {
        // A reshard is a `to_memory_config`, which reads a device tensor only: an operand in
        // host memory (a conv's activation passed in from host) cannot be resharded.
        let on_host = |t: &TensorDesc| t.layout.buffer == ttnn_types::BufferType::SystemMemory;
        if let Some(Some(t)) = self.p.ops[c].operands.get(operand as usize)
            && on_host(t)
        {
            let name = &self.p.ops[c].name;
            return Err(fail(
                c,
                edge,
                format!(
                    "operand {operand} of `{name}` is in host memory and cannot be resharded ({reason})"
                ),
            ));
        }
        let enabled = match self.memo {
            Some(memo) => {
                let key = Key::reshards(&self.p.ops[c], operand);
                memo.reshards(self.target, key, || self.enabled(c, operand))
            }
            None => Arc::new(self.enabled(c, operand)),
        };
        if enabled.is_empty() {
            let name = &self.p.ops[c].name;
            return Err(fail(
                c,
                edge,
                format!(
                    "no reshard of operand {operand} of `{name}` enables any of its L1-sharded configs ({reason})"
                ),
            ));
        }
        self.bits[c].clear_all();
        for j in enabled.keys() {
            self.bits[c].set(*j);
        }
        self.apply_spill_mask();
        if self.bits[c].is_empty() {
            let name = &self.p.ops[c].name;
            return Err(fail(
                c,
                edge,
                format!(
                    "the configs a reshard of operand {operand} of `{name}` enables leave no room to spill its output ({reason})"
                ),
            ));
        }
        self.reshards.insert((c, operand), ReshardEntry { enabled, user, reason });
        Ok(())
    }

    fn resolve_edge(&mut self, edge: Edge) -> Result<(), Failure> {
        let (p, c) = (edge.producer, edge.consumer);
        if self.p.user_reshards.contains(&(c, edge.operand))
            && !self.reshards.contains_key(&(c, edge.operand))
        {
            self.insert_reshard(
                c,
                edge.operand,
                true,
                "requested by `insert-memreconfig`".to_owned(),
                Some(edge),
            )?;
        }
        let paths = if let Some(entry) = self.reshards.get(&(c, edge.operand)) {
            let enabled: Vec<usize> = entry.enabled.keys().copied().collect();
            self.bits[p]
                .iter()
                .flat_map(|pi| enabled.iter().map(move |&j| (pi as u32, j as u32)))
                .collect()
        } else {
            let paths = self.edge_paths(edge);
            let mut prod = Bitset::empty(self.bits[p].len());
            let mut cons = Bitset::empty(self.bits[c].len());
            for &(a, b) in &paths {
                prod.set(a as usize);
                cons.set(b as usize);
            }
            let mut pi = self.bits[p].clone();
            pi.and_with(&prod);
            let mut ci = self.bits[c].clone();
            ci.and_with(&cons);
            if paths.is_empty() || pi.is_empty() || ci.is_empty() {
                let why = if paths.is_empty() {
                    "no producer output is a valid input for any consumer config"
                } else {
                    "the valid pairs conflict with configs already ruled out"
                };
                let reason = format!(
                    "edge `{}` -> `{}` (operand {}): {why}",
                    self.p.ops[p].name, self.p.ops[c].name, edge.operand
                );
                self.insert_reshard(c, edge.operand, false, reason, Some(edge))?;
                let enabled: Vec<usize> = self
                    .reshards
                    .get(&(c, edge.operand))
                    .map(|e| e.enabled.keys().copied().collect())
                    .unwrap_or_default();
                self.bits[p]
                    .iter()
                    .flat_map(|pi| enabled.iter().map(move |&j| (pi as u32, j as u32)))
                    .collect()
            } else {
                paths
            }
        };
        self.path_sets.push(PathSet { edge, paths });
        self.propagate()
    }

    /// Every (producer config, consumer config) pair the op model accepts on this edge.
    fn edge_paths(&mut self, edge: Edge) -> Vec<(u32, u32)> {
        let (p, c) = (edge.producer, edge.consumer);
        let producers: Vec<usize> = self.bits[p].iter().collect();
        let mut paths = Vec::new();
        for pi in producers {
            let lp = self.p.ops[p].candidates[pi].layout.clone();
            for &j in self.accepting(c, edge.operand, &lp).iter() {
                if !paths.contains(&(pi as u32, j)) {
                    paths.push((pi as u32, j));
                }
            }
        }
        paths
    }

    /// The configs of op `c` the op model accepts with `input` as its operand `operand`, in
    /// the order its test configs find them. Depends on op `c` alone (see [`ProbeMemo`]).
    fn accepting(&mut self, c: usize, operand: u32, input: &TtnnLayout) -> Arc<Vec<u32>> {
        let (memo, target) = (self.memo, self.target);
        let key = memo.map(|_| Key::input(&self.p.ops[c], operand, input));
        let mut compute = || {
            let tests = self.test_configs(c);
            let rejects_shrink = self.p.ops[c].kind.rejects_eltwise_core_shrink();
            let operands = self.with_operand(c, operand, input);
            let mut out: Vec<u32> = Vec::new();
            for t in &tests {
                let Ok(r) = self.validate(c, &operands, t) else { continue };
                let Some(j) = self.match_output(c, &r, t) else { continue };
                // tt-metal#34765: add/multiply/minimum hang when a sharded input is spread
                // over more cores than the output.
                if rejects_shrink
                    && input.is_l1()
                    && input.is_sharded()
                    && self.p.ops[c].candidates[j].layout.num_cores() < input.num_cores()
                {
                    continue;
                }
                if !out.contains(&(j as u32)) {
                    out.push(j as u32);
                }
            }
            out
        };
        match (memo, key) {
            (Some(memo), Some(key)) => memo.accepting(target, key, compute),
            _ => Arc::new(compute()),
        }
    }

    /// Bidirectional propagation to a fixpoint: drop paths whose endpoints are ruled out,
    /// then rule out configs no remaining path supports. Terminates because bitsets only
    /// lose bits.
    fn propagate(&mut self) -> Result<(), Failure> {
        loop {
            let mut changed = false;
            for ps in &mut self.path_sets {
                let (p, c) = (ps.edge.producer, ps.edge.consumer);
                ps.paths
                    .retain(|&(a, b)| self.bits[p].get(a as usize) && self.bits[c].get(b as usize));
                if ps.paths.is_empty() {
                    return Err(fail(
                        c,
                        Some(ps.edge),
                        format!(
                            "edge `{}` -> `{}`: no compatible pair of configs is left",
                            self.p.ops[p].name, self.p.ops[c].name
                        ),
                    ));
                }
                let mut prod = Bitset::empty(self.bits[p].len());
                let mut cons = Bitset::empty(self.bits[c].len());
                for &(a, b) in &ps.paths {
                    prod.set(a as usize);
                    cons.set(b as usize);
                }
                changed |= self.bits[p].and_with(&prod);
                changed |= self.bits[c].and_with(&cons);
            }
            if !changed {
                break;
            }
        }
        if let Some(i) = self.bits.iter().position(Bitset::is_empty) {
            return Err(fail(i, None, format!("no config of `{}` is left", self.p.ops[i].name)));
        }
        Ok(())
    }

    /// Accumulated core usage, walking the chain backward: a config's own core count plus,
    /// per user edge, the best reachable consumer score divided by the consumer's number of
    /// in-chain inputs (so a join does not count cores twice).
    fn core_usage(&self) -> Vec<Vec<u64>> {
        let n = self.p.ops.len();
        let mut acc: Vec<Vec<u64>> =
            self.p.ops.iter().map(|o| vec![0; o.candidates.len()]).collect();
        for i in (0..n).rev() {
            for k in self.bits[i].iter() {
                let mut total = self.p.ops[i].candidates[k].layout.num_cores();
                for ps in self.path_sets.iter().filter(|ps| ps.edge.producer == i) {
                    let c = ps.edge.consumer;
                    let n_in = self.path_sets.iter().filter(|q| q.edge.consumer == c).count().max(1)
                        as u64;
                    let best = ps
                        .paths
                        .iter()
                        .filter(|(a, _)| *a as usize == k)
                        .map(|(_, b)| acc[c][*b as usize])
                        .max()
                        .unwrap_or(0);
                    total += best / n_in;
                }
                acc[i][k] = total;
            }
        }
        acc
    }

    fn set(&mut self, op: usize, k: usize) -> Result<(), Failure> {
        let mut only = Bitset::empty(self.bits[op].len());
        only.set(k);
        self.bits[op].and_with(&only);
        self.propagate()
    }

    fn pick(&mut self) -> (Vec<usize>, Vec<u64>) {
        let acc = self.core_usage();
        let n = self.p.ops.len();
        if let Some(pref) = self.p.preferred_output {
            let last = n - 1;
            let best = self.bits[last]
                .iter()
                .filter(|&k| self.p.ops[last].candidates[k].layout.memory_layout == Some(pref))
                .max_by_key(|&k| (acc[last][k], std::cmp::Reverse(k)));
            if let Some(k) = best {
                let saved = self.bits.clone();
                if self.set(last, k).is_err() {
                    self.bits = saved;
                }
            }
        }
        let mut selected = Vec::with_capacity(n);
        let mut usage = Vec::with_capacity(n);
        #[expect(clippy::needless_range_loop, reason = "`i` indexes several parallel tables")]
        for i in 0..n {
            let alive: Vec<usize> = self.bits[i].iter().collect();
            let Some(&first) = alive.first() else {
                selected.push(0);
                usage.push(0);
                continue;
            };
            // Highest score, first seen on ties; then tt-mlir's tie-breaker: a block-sharded
            // pick gives way to a non-block-sharded config of equal score.
            let mut pick = first;
            for &k in &alive {
                if acc[i][k] > acc[i][pick] {
                    pick = k;
                }
            }
            let is_bs = |k: usize| {
                self.p.ops[i].candidates[k].layout.memory_layout
                    == Some(TensorMemoryLayout::BlockSharded)
            };
            if is_bs(pick)
                && let Some(&k) = alive.iter().find(|&&k| acc[i][k] == acc[i][pick] && !is_bs(k))
            {
                pick = k;
            }
            let saved = self.bits.clone();
            if self.set(i, pick).is_err() {
                // Cannot happen after a successful propagation; keep the pick regardless.
                self.bits = saved;
            }
            selected.push(pick);
            usage.push(acc[i][pick]);
        }
        (selected, usage)
    }

    /// Picks the concrete reshard layout of every edge: among the targets that enable the
    /// consumer's chosen config, the first with the producer's page layout that the op model
    /// accepts as a `to_memory_config` from the producer's layout.
    fn finish_reshards(&mut self, selected: &[usize]) -> Vec<Reshard> {
        type Entry = ((usize, u32), Vec<TtnnLayout>, bool, String);
        let entries: Vec<Entry> = self
            .reshards
            .iter()
            .map(|(k, e)| {
                (
                    *k,
                    e.enabled.get(&selected[k.0]).cloned().unwrap_or_default(),
                    e.user,
                    e.reason.clone(),
                )
            })
            .collect();
        let mut out = Vec::new();
        for ((c, operand), targets, user, reason) in entries {
            let producer =
                self.p.edges.iter().find(|e| e.consumer == c && e.operand == operand).map(|e| {
                    self.p.ops[e.producer].candidates[selected[e.producer]].layout.clone()
                });
            let Some(Some(input)) = self.p.ops[c].operands.get(operand as usize).cloned() else {
                continue;
            };
            let from = producer.unwrap_or_else(|| {
                self.first_input.clone().unwrap_or_else(|| {
                    TtnnLayout::dram_interleaved(
                        &input.shape,
                        input.layout.data_type().unwrap_or(ttnn_types::DataType::BF16),
                        PageLayout::Tile,
                    )
                })
            });
            let same_page: Vec<&TtnnLayout> =
                targets.iter().filter(|t| t.page_layout() == from.page_layout()).collect();
            let mut chosen = None;
            for t in &same_page {
                let q = OpQuery {
                    kind: OpKind::ToMemoryConfig,
                    inputs: vec![TensorDesc::new(&input.shape, from.clone())],
                    output_shape: input.shape.clone(),
                    output_dtype: t.data_type().unwrap_or(ttnn_types::DataType::BF16),
                    output: OutputHint::Layout((*t).clone()),
                    config: OpConfig::None,
                    l1_in_use: from.l1_bytes_per_core(),
                };
                self.queries += 1;
                if self.model.query(self.target, &q).is_ok() {
                    chosen = Some((*t).clone());
                    break;
                }
            }
            let Some(layout) = chosen
                .or_else(|| same_page.first().map(|t| (*t).clone()))
                .or_else(|| targets.first().cloned())
            else {
                continue;
            };
            if layout == from {
                continue;
            }
            out.push(Reshard { consumer: c, operand, layout, user, reason });
        }
        out
    }
}
