//! Small pieces the corpus, generator, benchmark and fuzz tasks share: a flag parser, a
//! deterministic PRNG, the workspace root and file reading with path-carrying errors.
//!
//! Flags are parsed by hand because every task takes a handful of `--name value` pairs; a
//! derive-based parser would add a dependency and compile time to every `cargo xtask` run.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// `--name value` and `--switch` flags of one task, checked against what the task accepts.
pub(crate) struct Flags {
    values: Vec<(String, Option<String>)>,
}

impl Flags {
    /// Parses `args` (after the task name). `with_value` lists the flags that take a value,
    /// `switches` those that do not; anything else is an error, so a typo never silently
    /// falls back to a default.
    pub(crate) fn parse(
        task: &str,
        args: &[String],
        with_value: &[&str],
        switches: &[&str],
    ) -> anyhow::Result<Flags> {
        let mut values = Vec::new();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
                _ => (arg.as_str(), None),
            };
            if with_value.contains(&name) {
                let value = match inline {
                    Some(v) => v,
                    None => it
                        .next()
                        .cloned()
                        .ok_or_else(|| anyhow::format_err!("`{name}` needs a value"))?,
                };
                values.push((name.to_owned(), Some(value)));
            } else if switches.contains(&name) && inline.is_none() {
                values.push((name.to_owned(), None));
            } else {
                let mut known: Vec<&str> = with_value.iter().chain(switches).copied().collect();
                known.sort_unstable();
                return Err(anyhow::format_err!(
                    "unknown argument `{arg}` for `{task}`; accepted: {}",
                    if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                ));
            }
        }
        Ok(Flags { values })
    }

    /// The last value given for `name`.
    pub(crate) fn value(&self, name: &str) -> Option<&str> {
        self.values.iter().rev().find(|(n, _)| n == name).and_then(|(_, v)| v.as_deref())
    }

    pub(crate) fn switch(&self, name: &str) -> bool {
        self.values.iter().any(|(n, v)| n == name && v.is_none())
    }

    /// The value of `name` parsed as `T`, or `default` when absent.
    pub(crate) fn parsed<T: std::str::FromStr>(&self, name: &str, default: T) -> anyhow::Result<T>
    where
        T::Err: std::fmt::Display,
    {
        match self.value(name) {
            None => Ok(default),
            Some(v) => {
                v.parse().map_err(|e| anyhow::format_err!("invalid `{name}` value `{v}`: {e}"))
            }
        }
    }
}

/// The workspace root: xtask lives one level below it.
pub(crate) fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map_or_else(|| manifest.to_path_buf(), Path::to_path_buf)
}

/// Reads a whole file as UTF-8, naming the file in the error.
#[expect(clippy::disallowed_methods, reason = "xtask is an edge crate; it does IO by design")]
pub(crate) fn read_text(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Writes a whole file, naming the file in the error.
#[expect(clippy::disallowed_methods, reason = "xtask is an edge crate; it does IO by design")]
pub(crate) fn write_file(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))
}

/// SplitMix64: a tiny, well-distributed PRNG. The generator and the fuzzer only need
/// reproducibility from a `u64` seed, not cryptographic quality, so no `rand` dependency.
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    state: u64,
}

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n`; `0` when `n == 0`, so callers need no special case for empty ranges.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        // The modulo bias is below 2^-40 for the ranges used here; irrelevant for test data.
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `percent / 100`.
    pub(crate) fn chance(&mut self, percent: u32) -> bool {
        self.next_u64() % 100 < u64::from(percent)
    }

    /// A uniformly chosen element of a non-empty slice.
    pub(crate) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Cores, CPU model and memory, read from the OS where it tells us.
pub(crate) fn machine_description() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let cpuinfo = read_text(Path::new("/proc/cpuinfo")).unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')))
        .map_or("unknown CPU".to_owned(), |(_, m)| m.trim().to_owned());
    let meminfo = read_text(Path::new("/proc/meminfo")).unwrap_or_default();
    let mem = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| format!(", {:.0} GiB", kib as f64 / 1024.0 / 1024.0))
        .unwrap_or_default();
    // Other builds share the machine; the load average says how much the figures may be off.
    let load = read_text(Path::new("/proc/loadavg"))
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .map(|l| format!(" (1-minute load average {l} when the run started)"))
        .unwrap_or_default();
    format!("{cores} cores (`nproc` {cores}), {model}{mem}, shared with other builds{load}")
}

/// The process's peak resident set (`VmHWM`), in KiB, where `/proc` provides it.
pub(crate) fn peak_rss_kib() -> Option<u64> {
    let status = read_text(Path::new("/proc/self/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    line.trim().trim_end_matches("kB").trim().parse().ok()
}

/// Replaces the `heading` section of a markdown document (up to the next `## ` heading) with
/// `section`, or appends it. Every other section is kept byte for byte.
pub(crate) fn replace_section(doc: &str, heading: &str, section: &str) -> String {
    let mut lines: Vec<&str> = doc.lines().collect();
    let start = lines.iter().position(|l| l.trim_end() == heading);
    let mut out = String::with_capacity(doc.len() + section.len());
    match start {
        Some(start) => {
            let end = lines[start + 1..]
                .iter()
                .position(|l| l.starts_with("## ") || l.starts_with("# "))
                .map_or(lines.len(), |i| start + 1 + i);
            for l in &lines[..start] {
                out.push_str(l);
                out.push('\n');
            }
            out.push_str(section);
            if end < lines.len() {
                out.push('\n');
            }
            for l in &lines[end..] {
                out.push_str(l);
                out.push('\n');
            }
        }
        None => {
            while lines.last().is_some_and(|l| l.trim().is_empty()) {
                lines.pop();
            }
            for l in &lines {
                out.push_str(l);
                out.push('\n');
            }
            out.push('\n');
            out.push_str(section);
        }
    }
    out
}

/// Builds the CLI in release mode and returns the binary's path, read from cargo's own
/// messages so a `CARGO_TARGET_DIR` or a configured target directory is honoured.
pub(crate) fn build_cli(root: &Path) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = std::process::Command::new(cargo)
        .current_dir(root)
        .args(["build", "--release", "-q", "-p", "cli", "--message-format=json-render-diagnostics"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| anyhow::format_err!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(anyhow::format_err!("building the CLI failed"));
    }
    // Each message is one JSON line; the artifact line of the binary carries `"executable":"..."`.
    let messages = String::from_utf8_lossy(&output.stdout);
    messages
        .lines()
        .filter_map(|l| l.split_once("\"executable\":\"").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_once('"').map(|(path, _)| path))
        .find(|path| path.ends_with("ttnn-analyzer") || path.ends_with("ttnn-analyzer.exe"))
        .map(PathBuf::from)
        .ok_or_else(|| anyhow::format_err!("cargo did not report the ttnn-analyzer binary"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_accept_space_and_equals_forms_and_reject_unknown_ones() {
        let args: Vec<String> =
            ["--ops", "12", "--seed=7", "--no-x"].iter().map(|s| (*s).to_owned()).collect();
        let flags = Flags::parse("t", &args, &["--ops", "--seed"], &["--no-x"]).unwrap();
        assert_eq!(flags.parsed("--ops", 0usize).unwrap(), 12);
        assert_eq!(flags.parsed("--seed", 0u64).unwrap(), 7);
        assert!(flags.switch("--no-x"));
        assert_eq!(flags.parsed("--absent", 3u32).unwrap(), 3);

        let bad: Vec<String> = vec!["--opz".to_owned()];
        let err = Flags::parse("t", &bad, &["--ops"], &[]).err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("unknown argument `--opz` for `t`; accepted: --ops"));
        let missing: Vec<String> = vec!["--ops".to_owned()];
        assert!(Flags::parse("t", &missing, &["--ops"], &[]).is_err());
    }

    #[test]
    fn rng_is_deterministic_per_seed_and_stays_in_range() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
        let mut r = Rng::new(9);
        assert!((0..1000).all(|_| r.below(7) < 7));
        assert_eq!(r.below(0), 0);
    }
}
