//! The parts of the `ttnn-analyzer` command-line tool that other tools drive in-process: the
//! `session` protocol (so `cargo xtask fuzz --commands all` can send it hostile requests
//! without a child process per run), how inputs are read (regular files only, size capped),
//! and the short layout names the reports print.

pub mod input;
pub mod protocol;

/// A layout in the few words the `optimize` report and the session print: `L1 bs 8x8`.
pub fn short_layout(l: Option<&ttnn_types::TtnnLayout>) -> String {
    let Some(l) = l else { return "-".to_owned() };
    let buffer = match l.buffer {
        ttnn_types::BufferType::Dram => "DRAM",
        ttnn_types::BufferType::L1 => "L1",
        ttnn_types::BufferType::SystemMemory => "host",
        _ => "other",
    };
    match l.memory_layout {
        Some(ttnn_types::TensorMemoryLayout::Interleaved) => format!("{buffer} il"),
        Some(ttnn_types::TensorMemoryLayout::HeightSharded) => {
            format!("{buffer} hs {}", l.grid2d().volume())
        }
        Some(ttnn_types::TensorMemoryLayout::WidthSharded) => {
            format!("{buffer} ws {}", l.grid2d().volume())
        }
        Some(ttnn_types::TensorMemoryLayout::BlockSharded) => format!("{buffer} bs {}", l.grid2d()),
        Some(ttnn_types::TensorMemoryLayout::NdSharded) => format!("{buffer} nd"),
        None => buffer.to_owned(),
    }
}
