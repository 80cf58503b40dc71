//! The concrete salsa database and its execution log.

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicBool, Ordering},
};

use ir::{FuncId, OpId};
use layout::{SharedOpModel, TensorKey};
use opmodel::{AnalyticalModel, CachedOpModel};
use salsa::{Database as _, DatabaseKeyIndex, plumbing::FromId};

/// The one database type. Cloning it is a snapshot for another thread.
#[salsa::db]
#[derive(Clone)]
pub struct RootDatabase {
    storage: salsa::Storage<Self>,
    /// Queries that executed (not merely re-validated), in order, since the last drain.
    executed: Arc<Mutex<Vec<DatabaseKeyIndex>>>,
    /// Whether `executed` records; a host that never drains it turns it off.
    log_executed: Arc<AtomicBool>,
    /// Memos re-validated without executing (deeply or by durability), in order, while
    /// `log_validated` is on (off by default: tests turn it on to see what an edit walks).
    validated: Arc<Mutex<Vec<DatabaseKeyIndex>>>,
    log_validated: Arc<AtomicBool>,
    /// The op model, shared by all snapshots: pure and value-keyed.
    op_model: Arc<SharedOpModel>,
    /// Op costs, shared by all snapshots likewise.
    cost_cache: Arc<cost::CostCache>,
    /// Chain solutions by problem, shared likewise.
    solve_cache: Arc<plan::SolveCache>,
    /// Spliced chunk texts of the last rewrite, shared likewise.
    splice_cache: Arc<rewrite::SpliceCache>,
    /// The last lowering of each file, for re-lowering one edited op.
    lowering_cache: Arc<ir::LoweringCache>,
    /// See [`layout::Db::memo_style`].
    memo_style: layout::MemoStyle,
}

impl Default for RootDatabase {
    fn default() -> RootDatabase {
        RootDatabase::new(true)
    }
}

impl RootDatabase {
    /// A database that can keep an execution log (`log`) or not. Without one, salsa gets no
    /// event callback at all: with one, salsa builds an event (reading the current thread's
    /// id) for every memo it validates, which cost a third of re-validating a 10k-op graph.
    #[must_use]
    pub fn new(log: bool) -> RootDatabase {
        let executed: Arc<Mutex<Vec<DatabaseKeyIndex>>> = Arc::default();
        let log_executed = Arc::new(AtomicBool::new(log));
        let validated: Arc<Mutex<Vec<DatabaseKeyIndex>>> = Arc::default();
        let log_validated = Arc::new(AtomicBool::new(false));
        let storage = if log {
            let log = Arc::clone(&executed);
            let enabled = Arc::clone(&log_executed);
            let checked = Arc::clone(&validated);
            let checking = Arc::clone(&log_validated);
            salsa::Storage::new(Some(Box::new(move |event: salsa::Event| match event.kind {
                salsa::EventKind::WillExecute { database_key } => {
                    if enabled.load(Ordering::Relaxed)
                        && let Ok(mut log) = log.lock()
                    {
                        log.push(database_key);
                    }
                }
                salsa::EventKind::DidValidateMemoizedValue { database_key } => {
                    if checking.load(Ordering::Relaxed)
                        && let Ok(mut log) = checked.lock()
                    {
                        log.push(database_key);
                    }
                }
                _ => {}
            })))
        } else {
            salsa::Storage::new(None)
        };
        RootDatabase {
            storage,
            executed,
            log_executed,
            validated,
            log_validated,
            op_model: Arc::new(CachedOpModel::new(AnalyticalModel)),
            cost_cache: Arc::default(),
            solve_cache: Arc::default(),
            splice_cache: Arc::default(),
            lowering_cache: Arc::default(),
            memo_style: layout::MemoStyle::Editor,
        }
    }

    /// The same database with the per-op layout queries memoized in `style`.
    #[must_use]
    pub(crate) fn with_memo_style(mut self, style: layout::MemoStyle) -> RootDatabase {
        self.memo_style = style;
        self
    }
}

#[salsa::db]
impl salsa::Database for RootDatabase {}

#[salsa::db]
impl base_db::Db for RootDatabase {}

#[salsa::db]
impl ir::Db for RootDatabase {
    fn lowering_cache(&self) -> &ir::LoweringCache {
        &self.lowering_cache
    }
}

#[salsa::db]
impl layout::Db for RootDatabase {
    fn op_model(&self) -> &SharedOpModel {
        &self.op_model
    }

    fn memo_style(&self) -> layout::MemoStyle {
        self.memo_style
    }
}

#[salsa::db]
impl plan::Db for RootDatabase {
    fn cost_cache(&self) -> &cost::CostCache {
        &self.cost_cache
    }

    fn solve_cache(&self) -> &plan::SolveCache {
        &self.solve_cache
    }
}

#[salsa::db]
impl rewrite::Db for RootDatabase {
    fn splice_cache(&self) -> &rewrite::SpliceCache {
        &self.splice_cache
    }
}

/// Queries keyed by one `OpId`.
const OP_QUERIES: &[&str] = &["base_legality", "overridden_legality"];
/// Queries keyed by one `FuncId`.
const FUNC_QUERIES: &[&str] = &[
    "func_body",
    "func_source_map",
    "func_ops",
    "scalar_types",
    "func_topology",
    "schedule",
    "chains",
    "plan",
    "chunk_layout",
];
/// Queries keyed by one `ChainId`.
const CHAIN_QUERIES: &[&str] = &["solve_chain", "overridden_solve_chain"];

impl RootDatabase {
    /// Turns the execution log on (the default) or off, and empties it when off.
    pub(crate) fn set_log_executed(&self, on: bool) {
        self.log_executed.store(on, Ordering::Relaxed);
        if !on && let Ok(mut log) = self.executed.lock() {
            *log = Vec::new();
        }
    }

    /// Turns the log of re-validated memos on or off (see [`RootDatabase::validated`]);
    /// off, it is emptied. Needs a database made with a log.
    pub(crate) fn set_log_validated(&self, on: bool) {
        self.log_validated.store(on, Ordering::Relaxed);
        if !on && let Ok(mut log) = self.validated.lock() {
            *log = Vec::new();
        }
    }

    /// Drains the log of re-validated memos into counts per query name.
    pub(crate) fn take_validated_counts(&self) -> std::collections::BTreeMap<String, u64> {
        self.counts_by_name(&drain(&self.validated))
    }

    /// How many of `keys` each query has, by query name.
    fn counts_by_name(&self, keys: &[DatabaseKeyIndex]) -> std::collections::BTreeMap<String, u64> {
        let mut counts = std::collections::BTreeMap::new();
        for k in keys {
            let name = self.ingredient_debug_name(k.ingredient_index());
            *counts.entry(name.into_owned()).or_insert(0) += 1;
        }
        counts
    }

    /// Drains the execution log, as query names (`func_body`, `legal_op_layouts`, ...).
    pub fn take_executed(&self) -> Vec<String> {
        drain(&self.executed).iter().map(|k| self.describe(*k)).collect()
    }

    /// Drains the execution log into per-query counts, describing (as `take_executed`
    /// does) only the first `detail_limit` executions: a long-lived client that drains after
    /// every request keeps the log short without formatting twenty thousand keys per edit.
    pub fn take_executed_counts(
        &self,
        detail_limit: usize,
    ) -> (std::collections::BTreeMap<String, u64>, Vec<String>) {
        let keys = drain(&self.executed);
        let counts = self.counts_by_name(&keys);
        let detail = keys.iter().take(detail_limit).map(|k| self.describe(*k)).collect();
        (counts, detail)
    }

    /// A readable name for an executed query: `op_legality(@main:%3)`.
    fn describe(&self, key: DatabaseKeyIndex) -> String {
        let name = self.ingredient_debug_name(key.ingredient_index()).into_owned();
        let id = key.key_index();
        if OP_QUERIES.contains(&name.as_str()) {
            let op = OpId::from_id(id);
            return format!("{name}(@{}:{})", op.func(self).name(self), op.key(self));
        }
        if FUNC_QUERIES.contains(&name.as_str()) {
            let func = FuncId::from_id(id);
            return format!("{name}(@{})", func.name(self));
        }
        if CHAIN_QUERIES.contains(&name.as_str()) {
            let chain = plan::ChainId::from_id(id);
            let ops: Vec<&str> = chain.ops(self).iter().map(|o| o.key(self).as_str()).collect();
            return format!("{name}(@{}:[{}])", chain.func(self).name(self), ops.join(" "));
        }
        if name == "legal_tensor_layouts" {
            let key = TensorKey::from_id(id);
            let dims: Vec<String> = key.shape(self).iter().map(u64::to_string).collect();
            return format!("{name}({}x{})", dims.join("x"), key.dtype(self));
        }
        name
    }

    /// Asks the shared op model directly (for IDE features that evaluate one op).
    pub(crate) fn op_model_query(
        &self,
        target: &target::Target,
        q: &opmodel::OpQuery,
    ) -> Result<opmodel::OpConstraints, opmodel::OpError> {
        use opmodel::OpModel as _;
        self.op_model.query(target, q)
    }

    /// The op model's cache statistics.
    #[must_use]
    pub fn op_model_stats(&self) -> opmodel::CacheStats {
        self.op_model.stats()
    }
}

/// Takes what a log holds (nothing if a thread panicked while holding it).
fn drain(log: &Mutex<Vec<DatabaseKeyIndex>>) -> Vec<DatabaseKeyIndex> {
    log.lock().map(|mut l| std::mem::take(&mut *l)).unwrap_or_default()
}
