//! How finely memos cut a function: one size, a group of ops, and a fixed multiple of it.
//!
//! Every memo that covers part of a function covers a group (per-group layouts, chains,
//! verdicts, plans, signatures: `ir::func_groups`) or a segment of [`SEGMENT_GROUPS`] groups
//! (the problems as written, the chain blocks, the plan's chunks by default). Changing
//! [`GROUP_OPS`] scales them all together.

/// About how many ops a group holds: the one granularity of per-group memos, and what an
/// edit to one op re-derives around it.
pub const GROUP_OPS: usize = 32;

/// A group is cut after this many ops even when no op's key starts a new one.
pub const MAX_GROUP_OPS: usize = 4 * GROUP_OPS;

/// About how many groups a segment holds. After an edit every memo read across a function
/// is verified before it is reused: per group that is thousands on a 100k-op function,
/// while a per-segment memo whose segment changed runs again over all of its ops. Segments
/// of 8 groups (about 256 ops) keep both small from 10k to 100k ops: at 32 groups, an edit
/// re-checked some 1,000 ops as written, more than all the verifying it saved on 10k ops.
pub const SEGMENT_GROUPS: usize = 8;

/// About how many ops a segment holds: the span of the per-segment memos, of a chain block
/// (`plan::chain_block`) and, by default, of a plan chunk (`Options::plan_chunk_ops`).
pub const SEGMENT_OPS: usize = SEGMENT_GROUPS * GROUP_OPS;
