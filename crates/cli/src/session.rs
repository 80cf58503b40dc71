//! `session`: a long-running JSON-lines mode over one `AnalysisHost`, for tools, tuning loops
//! and tests. The protocol itself is `cli::protocol`; this is its command-line front.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use ide::Policy;

use crate::common;

#[derive(Args)]
pub(crate) struct SessionArgs {
    /// A builtin target (n150, n300, p150) or a target description file.
    #[arg(long)]
    target: Option<String>,
    /// The initial policy (`df-sharding`, `df-sharding-merge` or `greedy`).
    #[arg(long, default_value = "df-sharding-merge")]
    policy: String,
}

pub(crate) fn session(args: &SessionArgs) -> anyhow::Result<ExitCode> {
    let target = common::load_target(args.target.as_deref())?;
    let policy = Policy::from_name(&args.policy)
        .with_context(|| format!("unknown policy `{}`", args.policy))?;
    let mut session = cli::protocol::Session::new(target, policy);
    cli::protocol::serve(&mut session, std::io::stdin().lock(), std::io::stdout().lock())
        .context("cannot read stdin or write stdout")?;
    Ok(ExitCode::SUCCESS)
}
