//! A value-keyed, thread-safe memo table for op costs.
//!
//! Costing one op runs the whole analytical model (work split, placements, bandwidths):
//! microseconds, against a fraction of one for a hash lookup. A tuning loop re-costs the
//! same ops with the same layouts after every candidate (a re-planned chunk, a merge's
//! pays-off check), so the answers are kept across salsa revisions, keyed by value: the
//! target and everything [`CostModel::op_cost`] reads.
//!
//! A lookup hashes the borrowed arguments and compares them with the stored keys, so a hit
//! allocates nothing. Reshards ([`CostModel::reshard_cost`]) are kept the same way: a merge
//! decision prices its copies for every candidate it tries.

use std::{
    hash::{Hash, Hasher},
    sync::{PoisonError, RwLock},
};

use opmodel::{OpConfig, OpKind, TensorDesc};
use rustc_hash::{FxHashMap, FxHasher};
use target::Target;
use ttnn_types::TtnnLayout;

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

/// Per target: hash of a reshard's source and destination → those with that hash and their
/// costs.
type ReshardTable = FxHashMap<u64, Vec<(TensorDesc, TtnnLayout, OpCost)>>;

/// One target's answers: op costs (and how many), reshards (and how many).
#[derive(Default)]
struct Tables {
    len: usize,
    ops: Table,
    reshard_len: usize,
    reshards: ReshardTable,
}

/// Memoizes [`CostModel::op_cost`] and [`CostModel::reshard_cost`] by `(target, arguments)`.
///
/// The targets are a list compared in turn rather than hashed: a process sees one or two,
/// and hashing a target (its name included) cost a good part of a hit.
#[derive(Default)]
pub struct CostCache {
    map: RwLock<Vec<(Target, Tables)>>,
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
            if let Some(hit) = tables_for(&map, target)
                .and_then(|t| t.ops.get(&hash))
                .and_then(|bucket| bucket.iter().find(|(k, _)| same(k)))
            {
                return hit.1;
            }
        }
        // Computed outside the lock: two threads may race on one key; both compute the same
        // deterministic answer.
        let cost = model.op_cost(kind, inputs, output, config);
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        let Tables { len, ops: table, .. } = tables_for_mut(&mut map, target);
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

    /// [`CostModel::reshard_cost`] of `model` (built for `target`), from the table when
    /// known.
    pub fn reshard_cost(
        &self,
        target: &Target,
        model: &CostModel,
        from: &TensorDesc,
        to: &TtnnLayout,
    ) -> OpCost {
        let mut h = FxHasher::default();
        from.hash(&mut h);
        to.hash(&mut h);
        let hash = h.finish();
        let same = |f: &TensorDesc, t: &TtnnLayout| f == from && t == to;
        {
            let map = self.map.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(hit) = tables_for(&map, target)
                .and_then(|t| t.reshards.get(&hash))
                .and_then(|bucket| bucket.iter().find(|(f, t, _)| same(f, t)))
            {
                return hit.2;
            }
        }
        // Computed outside the lock, as `op_cost` is.
        let cost = model.reshard_cost(from, to);
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        let Tables { reshard_len: len, reshards: table, .. } = tables_for_mut(&mut map, target);
        if *len >= CAPACITY {
            table.clear();
            *len = 0;
        }
        let bucket = table.entry(hash).or_default();
        if !bucket.iter().any(|(f, t, _)| same(f, t)) {
            bucket.push((from.clone(), to.clone(), cost));
            *len += 1;
        }
        cost
    }
}

/// The answers kept for `target`.
fn tables_for<'a>(map: &'a [(Target, Tables)], target: &Target) -> Option<&'a Tables> {
    map.iter().find(|(t, _)| t == target).map(|(_, t)| t)
}

/// The answers kept for `target`, made empty on first use.
fn tables_for_mut<'a>(map: &'a mut Vec<(Target, Tables)>, target: &Target) -> &'a mut Tables {
    let at = match map.iter().position(|(t, _)| t == target) {
        Some(at) => at,
        None => {
            map.push((target.clone(), Tables::default()));
            map.len() - 1
        }
    };
    &mut map[at].1
}
