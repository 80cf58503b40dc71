//! The ttnn-analyzer language server.
//!
//! Structured like rust-analyzer's: one main loop (`main_loop`) owns the `AnalysisHost` and
//! is the only writer; requests are answered on a small thread pool from `Analysis`
//! snapshots. A write cancels running snapshots, and a cancelled request is answered with
//! `ContentModified` (hover and inlay hints are retried once first). Every request runs under
//! `catch_unwind`, so a bug becomes an `InternalError` response, not a crash.
//!
//! This is the only crate that knows LSP or JSON; `ide` answers in plain data and
//! `convert` translates. Logs go to stderr: stdout carries the protocol.

mod config;
mod convert;
mod files;
mod handlers;
mod main_loop;
mod overrides;
mod stdio;

use std::process::ExitCode;

use lsp_server::Connection;

pub use crate::main_loop::ServerOptions;

/// Serves LSP over stdin and stdout until the client sends `exit` or hangs up.
pub fn run_stdio() -> anyhow::Result<ExitCode> {
    let (connection, io_threads) = stdio::connect();
    let clean = main_loop::run(connection, ServerOptions::default())?;
    io_threads.join();
    Ok(if clean { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Serves LSP over `connection`. Returns whether the session ended cleanly (`shutdown`
/// before `exit`, as the protocol asks).
pub fn run(connection: Connection, options: ServerOptions) -> anyhow::Result<bool> {
    main_loop::run(connection, options)
}
