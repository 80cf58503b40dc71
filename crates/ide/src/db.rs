//! The concrete salsa database and its execution log.

use std::sync::{Arc, Mutex};

use salsa::{Database as _, DatabaseKeyIndex};

/// The one database type. Cloning it is a snapshot for another thread.
#[salsa::db]
#[derive(Clone)]
pub struct RootDatabase {
    storage: salsa::Storage<Self>,
    /// Queries that executed (not merely re-validated), in order, since the last drain.
    executed: Arc<Mutex<Vec<DatabaseKeyIndex>>>,
}

impl Default for RootDatabase {
    fn default() -> RootDatabase {
        let executed: Arc<Mutex<Vec<DatabaseKeyIndex>>> = Arc::default();
        let log = Arc::clone(&executed);
        let storage = salsa::Storage::new(Some(Box::new(move |event: salsa::Event| {
            if let salsa::EventKind::WillExecute { database_key } = event.kind
                && let Ok(mut log) = log.lock()
            {
                log.push(database_key);
            }
        })));
        RootDatabase { storage, executed }
    }
}

#[salsa::db]
impl salsa::Database for RootDatabase {}

#[salsa::db]
impl base_db::Db for RootDatabase {}

#[salsa::db]
impl ir::Db for RootDatabase {}

impl RootDatabase {
    /// Drains the execution log, as query names (`func_body`, `legal_op_layouts`, ...).
    pub fn take_executed(&self) -> Vec<String> {
        let keys = match self.executed.lock() {
            Ok(mut log) => std::mem::take(&mut *log),
            Err(_) => return Vec::new(),
        };
        keys.iter().map(|k| self.ingredient_debug_name(k.ingredient_index()).into_owned()).collect()
    }
}
