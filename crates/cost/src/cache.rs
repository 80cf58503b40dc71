//! A value-keyed, thread-safe memo table for op costs.
//!
//! Costing one op runs the whole analytical model (work split, placements, bandwidths):
//! microseconds, against a fraction of one for a hash lookup. A tuning loop re-costs the
//! same ops with the same layouts after every candidate (a re-planned chunk, a merge's
//! pays-off check), so the answers are kept across salsa revisions, keyed by value: the
//! target and everything [`CostModel::op_cost`] reads.
//!
//! A lookup hashes the borrowed arguments and compares them with the stored keys, so a hit
//! allocates nothing.

use std::{
    hash::{Hash, Hasher},
    sync::{PoisonError, RwLock},
};

use opmodel::{OpConfig, OpKind, TensorDesc};
use rustc_hash::{FxHashMap, FxHasher};
use target::Target;

use crate::{CostModel, OpCost};

/// Answers kept per target before the table starts over (a few tens of MB at most).
const CAPACITY: usize = 1 << 17;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    kind: OpKind,
    inputs: Vec<TensorDesc>,
    output: TensorDesc,
    config: OpConfig,
}

/// Per target: hash of the arguments → the keys with that hash and their costs.
type Table = FxHashMap<u64, Vec<(Key, OpCost)>>;

/// Memoizes [`CostModel::op_cost`] by `(target, arguments)`.
#[derive(Default)]
pub struct CostCache {
    map: RwLock<FxHashMap<Target, (usize, Table)>>,
}

impl std::fmt::Debug for CostCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CostCache").finish_non_exhaustive()
    }
}

impl CostCache {
    #[must_use]
    pub fn new() -> CostCache {
        CostCache::default()
    }

    /// [`CostModel::op_cost`] of `model` (built for `target`), from the table when known.
    pub fn op_cost(
        &self,
        target: &Target,
        model: &CostModel,
        kind: &OpKind,
        inputs: &[TensorDesc],
        output: &TensorDesc,
        config: &OpConfig,
    ) -> OpCost {
        let mut h = FxHasher::default();
        kind.hash(&mut h);
        inputs.hash(&mut h);
        output.hash(&mut h);
        config.hash(&mut h);
        let hash = h.finish();
        let same = |k: &Key| {
            &k.kind == kind && k.inputs == inputs && &k.output == output && &k.config == config
        };
        {
            let map = self.map.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(hit) = map
                .get(target)
                .and_then(|(_, t)| t.get(&hash))
                .and_then(|bucket| bucket.iter().find(|(k, _)| same(k)))
            {
                return hit.1;
            }
        }
        // Computed outside the lock: two threads may race on one key; both compute the same
        // deterministic answer.
        let cost = model.op_cost(kind, inputs, output, config);
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        let (len, table) = map.entry(target.clone()).or_default();
        if *len >= CAPACITY {
            table.clear();
            *len = 0;
        }
        let bucket = table.entry(hash).or_default();
        if !bucket.iter().any(|(k, _)| same(k)) {
            let key = Key {
                kind: kind.clone(),
                inputs: inputs.to_vec(),
                output: output.clone(),
                config: config.clone(),
            };
            bucket.push((key, cost));
            *len += 1;
        }
        cost
    }
}
