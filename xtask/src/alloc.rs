//! The xtask's global allocator: mimalloc, as the `ttnn-analyzer` binary uses, with a count
//! of the bytes each thread has allocated and not freed, and that count's peak since the
//! thread last reset it. `xtask fuzz --commands` reads the peak to flag runs that allocate
//! more than their memory cap.
//!
//! The counts are per thread (a `const` thread-local, so touching it never allocates): a
//! fuzzing worker resets its own before a run and reads it after, whatever the other workers
//! do. Memory freed by another thread than the one that allocated it is counted against
//! the freeing thread; the analysis frees on the thread that allocated, so the peak is close.

use std::{
    alloc::{GlobalAlloc, Layout},
    cell::Cell,
};

pub(crate) struct Counting;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn note(delta: i64) {
    // `try_with`: during thread teardown the slots may be gone; those bytes go uncounted.
    let _ = LIVE.try_with(|live| {
        let now = live.get().saturating_add(delta);
        live.set(now);
        let _ = PEAK.try_with(|peak| {
            if now > peak.get() {
                peak.set(now);
            }
        });
    });
}

/// Starts a new peak from what this thread has live now: the run's own allocations count.
pub(crate) fn reset_peak() {
    let _ = LIVE.try_with(|live| {
        live.set(0);
        let _ = PEAK.try_with(|peak| peak.set(0));
    });
}

/// The most bytes this thread had allocated at once since [`reset_peak`].
pub(crate) fn peak() -> u64 {
    PEAK.try_with(Cell::get).map_or(0, |p| u64::try_from(p).unwrap_or(0))
}

#[expect(unsafe_code, reason = "a global allocator is an unsafe trait; this one only forwards")]
// SAFETY: every method forwards to mimalloc with the caller's arguments unchanged, so
// mimalloc's guarantees hold; the counting touches no memory the allocator hands out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is (see the impl).
        let p = unsafe { mimalloc::MiMalloc.alloc(layout) };
        if !p.is_null() {
            note(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is (see the impl).
        let p = unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) };
        if !p.is_null() {
            note(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is (see the impl).
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) };
        note(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is (see the impl).
        let p = unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            note(new_size as i64 - layout.size() as i64);
        }
        p
    }
}
