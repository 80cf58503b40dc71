//! Cancelling one snapshot's work, as a client's `$/cancelRequest` asks.
//!
//! A write cancels every snapshot (`Cancelled::PendingWrite`); a [`CancelHandle`] cancels
//! only the snapshot it was taken from (`Cancelled::Local`), so the server can drop one
//! request without touching the others.

use std::time::{Duration, Instant};

use salsa::Database as _;

use crate::{Analysis, Cancellable};

/// Cancels the work of one [`Analysis`] snapshot. Cheap to clone and `Send`.
#[derive(Clone)]
pub struct CancelHandle(salsa::CancellationToken);

impl CancelHandle {
    /// The snapshot's next query (or cancellation check) unwinds with `Cancelled::Local`.
    pub fn cancel(&self) {
        self.0.cancel();
    }
}

impl Analysis {
    /// The handle cancelling this snapshot (not its clones: each clone has its own).
    #[must_use]
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle(self.db().cancellation_token())
    }

    /// Waits until this snapshot is cancelled, by a pending write or its handle; `Ok(false)`
    /// if `timeout` passes first. Stands in for a long analysis in cancellation tests.
    pub fn wait_until_cancelled(&self, timeout: Duration) -> Cancellable<bool> {
        self.with_db(|db| {
            let start = Instant::now();
            while start.elapsed() < timeout {
                db.unwind_if_revision_cancelled();
                std::thread::sleep(Duration::from_millis(1));
            }
            false
        })
    }
}
