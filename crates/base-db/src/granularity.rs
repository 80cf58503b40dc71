//! How finely memos cut a function: one size, a group of ops, and a fixed multiple of it.
//!
//! Every memo that covers part of a function covers a group (per-group layouts, chains,
//! verdicts, plans, signatures: `ir::func_groups`) or a segment of [`SEGMENT_GROUPS`] groups
//! (the problems as written), and the plan's chunks and chain blocks span
//! [`PLAN_CHUNK_GROUPS`] groups by default. Changing [`GROUP_OPS`] scales them all together.

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

/// About how many ops a segment holds: the span of the per-segment memos.
pub const SEGMENT_OPS: usize = SEGMENT_GROUPS * GROUP_OPS;

/// About how many groups a plan chunk spans by default (`Options::plan_chunk_ops`): what one
/// override re-walks. The plan with overrides is the plan without them walked again only in
/// the chunks the overrides reach (`plan::override_reach`), so after an override salsa
/// re-checks those chunks and no other, and a smaller chunk is a shorter walk; a chunk much
/// smaller than a merge window (a fork's users, a reshape's) makes walks read more across
/// cuts. On the 10k-op generated graphs, one override's cost at 2 groups was 1.7-1.8 ms
/// against 3.7-4.8 ms at 8 (`override_rounds`, same run), and at 1 group it takes a fifth
/// fewer instructions than at 2 (median of 20 overrides under callgrind: 3.10 M against
/// 3.81 M on the mixed graph, 2.88 M against 3.56 M on the conv graph), while the optimized
/// text after it, which joins every chunk's, takes a tenth more (17.6 M against 15.8 M).
pub const PLAN_CHUNK_GROUPS: usize = 1;

/// About how many ops a plan chunk spans by default, and a block of chains
/// (`plan::chain_block`) always.
pub const PLAN_CHUNK_OPS: usize = PLAN_CHUNK_GROUPS * GROUP_OPS;
