//! Upper bounds on target-file values (docs/reliability.md lists them).
//!
//! Each bound is well above every real Tenstorrent device, so no real target is refused, and
//! low enough that the planner's work (it enumerates shard grids up to the worker grid) and
//! its byte arithmetic (sizes times cores times chips in `u64`) stay bounded.

/// Rows and columns of the worker grid. The largest Tensix grid of any chip family is
/// Blackhole's 10x14 before harvesting (the p150 descriptor uses 10x13; Wormhole 8x8).
pub const MAX_GRID_SIDE: u64 = 16;

/// Chips on one board or mesh; a Galaxy has 32.
pub const MAX_CHIPS: u64 = 1024;

/// L1 bytes per core (and L1_SMALL): 1 GiB, against about 1.5 MiB on real chips.
pub const MAX_L1_SIZE: u64 = 1 << 30;

/// DRAM channels per chip: 12 on Wormhole, 8 on Blackhole.
pub const MAX_DRAM_CHANNELS: u64 = 64;

/// Bytes per DRAM channel: 1 TiB, against 1 to 4 GiB on real chips.
pub const MAX_DRAM_CHANNEL_SIZE: u64 = 1 << 40;

/// L1, DRAM and PCIe alignment in bytes: real chips use 16 to 64.
pub const MAX_ALIGNMENT: u64 = 4096;

/// DST register tiles: 16 on real chips.
pub const MAX_DST_TILES: u64 = 1024;

/// Circular buffers per core: 32 (64 on newer firmware).
pub const MAX_CBS: u64 = 1024;

/// AI clock in MHz: about 1000 to 1350 on real chips.
pub const MAX_AICLK_MHZ: u64 = 100_000;

/// DRAM bandwidth per chip in GB/s: 288 to 512 on real chips.
pub const MAX_DRAM_BANDWIDTH_GB_S: u64 = 1_000_000;
