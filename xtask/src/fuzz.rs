//! `cargo xtask fuzz [--iterations N] [--seed S] [--time SECS] [--jobs J] [--corpus DIR]
//! [--commands all|LIST]`: a mutation fuzzer for the syntax and lowering layers, in plain Rust
//! on stable; with `--commands`, for what the CLI commands do (see `fuzz_commands`), round
//! robin over the listed commands, with a time and a memory cap per run.
//!
//! Seeds are the corpus files (when the corpus is present) and generated graphs. Each
//! iteration mutates one seed a few times (byte flips, slice inserts and deletes, chunk
//! duplication, splices from other seeds, bracket runs, quotes, `{-#`/`#-}`, invalid UTF-8),
//! decodes it with `String::from_utf8_lossy` as the CLI would after reporting bad bytes, and
//! runs parse, print, lower and a re-parse of the printed text under `catch_unwind`.
//!
//! Besides panics it checks two invariants that need no oracle: the token stream covers the
//! text exactly, and the printed form of an error-free parse parses without errors.
//!
//! Every iteration derives its own RNG from `(seed, iteration)`, so a run is reproducible
//! whatever `--jobs` is, and a failure is saved with what regenerates it under
//! `target/fuzz-crashes/`.

use std::{
    cell::RefCell,
    io::Write as _,
    path::{Path, PathBuf},
    sync::{
        Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use crate::{
    fuzz_commands::{self, BIG, Command, SLOW},
    r#gen::{GraphKind, generate},
    util::{Flags, Rng, read_text, workspace_root, write_file},
};

/// Seeds longer than this are usually cut to a random window of this size: the parser is
/// linear, so a window finds the same bugs at many more executions per second.
const WINDOW: usize = 64 * 1024;

/// The window for `--commands`: a command runs the optimizer and the verifier, superlinear
/// in places, so a smaller window keeps a run short and the executions many; most corpus
/// files are smaller than this and are taken whole.
const COMMAND_WINDOW: usize = 16 * 1024;

/// At most this many failures are written to disk; the rest are only counted.
const MAX_SAVED: usize = 20;

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let flags = Flags::parse(
        "fuzz",
        args,
        &["--iterations", "--seed", "--time", "--jobs", "--corpus", "--commands"],
        &[],
    )?;
    let seed: u64 = flags.parsed("--seed", 0)?;
    let time: Option<f64> = flags
        .value("--time")
        .map(str::parse)
        .transpose()
        .map_err(|e| anyhow::format_err!("invalid `--time` value: {e}"))?;
    let default_iterations = if time.is_some() { u64::MAX } else { 10_000 };
    let iterations: u64 = flags.parsed("--iterations", default_iterations)?;
    let jobs: usize = flags.parsed("--jobs", 1)?;
    let commands = flags.value("--commands").map(Command::parse_list).transpose()?;
    let corpus = match flags.value("--corpus") {
        Some(d) => PathBuf::from(d),
        None => {
            let root = workspace_root();
            root.parent().map_or(root.clone(), Path::to_path_buf).join("shared").join("corpus")
        }
    };

    let mut out = std::io::stdout().lock();
    let seeds = load_seeds(&corpus)?;
    let corpus_seeds = seeds.iter().filter(|s| !s.name.starts_with("generated:")).count();
    writeln!(
        out,
        "fuzz: {} seeds ({corpus_seeds} corpus files, {} generated), seed {seed}, {jobs} job(s)",
        seeds.len(),
        seeds.len() - corpus_seeds
    )?;
    if let Some(c) = &commands {
        let names: Vec<&str> = c.iter().map(|c| c.name()).collect();
        writeln!(
            out,
            "commands: {}; a run over {} s or {} MiB is a finding",
            names.join(", "),
            SLOW.as_secs(),
            BIG >> 20
        )?;
    }
    out.flush()?;

    let ctx = Ctx {
        seeds: &seeds,
        seed,
        iterations,
        deadline: time.map(|t| Instant::now() + Duration::from_secs_f64(t.max(0.0))),
        next: AtomicU64::new(0),
        done: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        failures: Mutex::new(Vec::new()),
        commands: commands.clone().unwrap_or_default(),
        stats: Mutex::new(vec![CommandStats::default(); Command::ALL.len()]),
    };
    let started = Instant::now();
    let previous_hook = std::panic::take_hook();
    // Panics are expected findings here: record the message for the report instead of
    // letting the default hook print a backtrace per crashing input.
    std::panic::set_hook(Box::new(|info| {
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(info.to_string()));
    }));
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            // Spawned threads get 2 MiB of stack, as the language server's workers do, so
            // deep recursion shows up here rather than only in the field.
            s.spawn(|| ctx.worker());
        }
        let mut last_report = Instant::now();
        while !ctx.stop.load(Ordering::Relaxed) && ctx.next.load(Ordering::Relaxed) < iterations {
            std::thread::sleep(Duration::from_millis(100));
            if last_report.elapsed() >= Duration::from_secs(10) {
                last_report = Instant::now();
                let n = ctx.done.load(Ordering::Relaxed);
                let secs = started.elapsed().as_secs_f64();
                let _ = writeln!(out, "  {n} execs, {:.0} exec/s", n as f64 / secs);
                let _ = out.flush();
            }
        }
    });
    std::panic::set_hook(previous_hook);
    let secs = started.elapsed().as_secs_f64();
    let n = ctx.done.load(Ordering::Relaxed);

    let mut failures = ctx.failures.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    failures.sort_by_key(|f| f.iteration);
    let count = |k: Kind| failures.iter().filter(|f| f.kind == k).count();
    writeln!(
        out,
        "executions: {n} in {secs:.1} s ({:.0} exec/s); panics: {}; invariant violations: {}",
        n as f64 / secs.max(1e-9),
        count(Kind::Panic),
        count(Kind::Invariant)
    )?;
    if commands.is_some() {
        writeln!(
            out,
            "over {} s: {}; over {} MiB: {}",
            SLOW.as_secs(),
            count(Kind::Slow),
            BIG >> 20,
            count(Kind::Big)
        )?;
        let stats = ctx.stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (c, st) in Command::ALL.iter().zip(stats.iter()) {
            if st.runs > 0 {
                writeln!(
                    out,
                    "  {:<15} {:>9} runs, slowest {:>8.1} ms, largest peak {:>7.1} MiB",
                    c.name(),
                    st.runs,
                    st.slowest.as_secs_f64() * 1e3,
                    st.peak as f64 / f64::from(1u32 << 20)
                )?;
            }
        }
    }
    if failures.is_empty() {
        return Ok(());
    }
    let dir = workspace_root().join("target").join("fuzz-crashes");
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::format_err!("cannot create {}: {e}", dir.display()))?;
    let mut seen: Vec<String> = Vec::new();
    for f in &failures {
        // One file per distinct message (the panic location is part of it), so a bug hit a
        // thousand times is saved once.
        let key = f.message.lines().next().unwrap_or("").to_owned();
        if seen.contains(&key) || seen.len() >= MAX_SAVED {
            continue;
        }
        seen.push(key);
        let kind = f.kind.name();
        let stem = format!("{kind}-seed{seed}-iter{}", f.iteration);
        write_file(&dir.join(format!("{stem}.mlir")), f.input.as_bytes())?;
        let about = format!(
            "{kind} at iteration {} of `cargo xtask fuzz --seed {seed}{}`\nmutated from: {}\n\n{}\n",
            f.iteration,
            commands.as_ref().map_or(String::new(), |c| format!(
                " --commands {}",
                c.iter().map(|c| c.name()).collect::<Vec<_>>().join(",")
            )),
            f.seed_name,
            f.message
        );
        write_file(&dir.join(format!("{stem}.txt")), about.as_bytes())?;
        writeln!(out, "  {kind} from {}: {}", f.seed_name, f.message.lines().next().unwrap_or(""))?;
        writeln!(out, "    saved as {}", dir.join(format!("{stem}.mlir")).display())?;
    }
    Err(anyhow::format_err!("fuzzing found {} failing input(s)", failures.len()))
}

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

struct Seed {
    name: String,
    bytes: Vec<u8>,
}

struct Failure {
    iteration: u64,
    seed_name: String,
    kind: Kind,
    message: String,
    input: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Panic,
    Invariant,
    Slow,
    Big,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Panic => "panic",
            Kind::Invariant => "invariant",
            Kind::Slow => "slow",
            Kind::Big => "big",
        }
    }
}

/// Per command: how many runs, the slowest and the largest peak allocation.
#[derive(Debug, Clone, Copy, Default)]
struct CommandStats {
    runs: u64,
    slowest: Duration,
    peak: u64,
}

struct Ctx<'a> {
    seeds: &'a [Seed],
    seed: u64,
    iterations: u64,
    deadline: Option<Instant>,
    next: AtomicU64,
    done: AtomicU64,
    stop: AtomicBool,
    failures: Mutex<Vec<Failure>>,
    /// Empty: the syntax-and-lowering pipeline only; else the commands to drive.
    commands: Vec<Command>,
    stats: Mutex<Vec<CommandStats>>,
}

impl Ctx<'_> {
    fn worker(&self) {
        loop {
            if self.stop.load(Ordering::Relaxed)
                || self.deadline.is_some_and(|d| Instant::now() >= d)
            {
                self.stop.store(true, Ordering::Relaxed);
                return;
            }
            let iteration = self.next.fetch_add(1, Ordering::Relaxed);
            if iteration >= self.iterations {
                return;
            }
            let mut rng = Rng::new(self.seed ^ iteration.wrapping_mul(0xA076_1D64_78BD_642F));
            let command = (!self.commands.is_empty())
                .then(|| self.commands[iteration as usize % self.commands.len()]);
            let seed_idx = self.pick_seed(&mut rng, command);
            let window = if command.is_some() { COMMAND_WINDOW } else { WINDOW };
            let bytes = mutate(&mut rng, self.seeds, seed_idx, window);
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let mut failures = Vec::new();
            match command {
                None => match std::panic::catch_unwind(|| exercise(&text)) {
                    Ok(Ok(())) => {}
                    Ok(Err(message)) => failures.push((Kind::Invariant, message)),
                    Err(_) => failures.push((Kind::Panic, last_panic())),
                },
                Some(c) => {
                    let extras = fuzz_commands::extras(&mut rng, &text);
                    let (outcome, took, peak) =
                        fuzz_commands::measured(|| fuzz_commands::run(c, &text, &extras));
                    match outcome {
                        Ok(Ok(())) => {}
                        Ok(Err(message)) => failures.push((Kind::Invariant, message)),
                        Err(_) => failures.push((Kind::Panic, last_panic())),
                    }
                    let about = || {
                        format!(
                            "command `{}`; overrides {:?}; target {:?}; session requests {:?}",
                            c.name(),
                            extras.overrides,
                            extras.target,
                            extras
                                .requests
                                .iter()
                                .map(|r| String::from_utf8_lossy(r))
                                .collect::<Vec<_>>()
                        )
                    };
                    if took > SLOW {
                        failures.push((
                            Kind::Slow,
                            format!("took {:.1} s: {}", took.as_secs_f64(), about()),
                        ));
                    }
                    if peak > BIG {
                        failures.push((
                            Kind::Big,
                            format!("peaked at {} MiB: {}", peak >> 20, about()),
                        ));
                    }
                    if let Some((_, m)) = failures.first_mut()
                        && !m.starts_with("took")
                        && !m.starts_with("peaked")
                    {
                        m.push_str(&format!("\n{}", about()));
                    }
                    let mut stats =
                        self.stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    let st = &mut stats[Command::ALL.iter().position(|x| *x == c).unwrap_or(0)];
                    st.runs += 1;
                    st.slowest = st.slowest.max(took);
                    st.peak = st.peak.max(peak);
                }
            }
            for (kind, message) in failures {
                let f = Failure {
                    iteration,
                    seed_name: self.seeds[seed_idx].name.clone(),
                    kind,
                    message,
                    input: text.clone(),
                };
                self.failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(f);
            }
            self.done.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A seed for the run: TTIR model files for `import` when the corpus has them, so the
    /// importer sees mostly its own dialect; any seed otherwise.
    fn pick_seed(&self, rng: &mut Rng, command: Option<Command>) -> usize {
        if command == Some(Command::Import) && rng.chance(80) {
            let ttir: Vec<usize> = (0..self.seeds.len())
                .filter(|&i| self.seeds[i].name.starts_with("ttir-models"))
                .collect();
            if !ttir.is_empty() {
                return ttir[rng.below(ttir.len())];
            }
        }
        rng.below(self.seeds.len())
    }
}

fn last_panic() -> String {
    LAST_PANIC
        .with(|p| p.borrow_mut().take())
        .unwrap_or_else(|| "panic without a message".to_owned())
}

/// Runs the whole syntax-and-lowering pipeline on one input. `Err` is an invariant violation;
/// a panic propagates to the caller's `catch_unwind`.
fn exercise(text: &str) -> Result<(), String> {
    let parse = syntax::parse(text);
    let mut at = 0u32;
    for t in parse.tokens() {
        if t.range.start != at || t.range.end < t.range.start {
            return Err(format!("token {:?} does not start where the previous ended ({at})", t));
        }
        at = t.range.end;
    }
    if at as usize != text.len() {
        return Err(format!("tokens end at {at}, the text at {}", text.len()));
    }
    let printed = syntax::print(text, &parse);
    let lowered = ir::lower_parse(text, &parse);
    std::hint::black_box(&lowered);
    let reparsed = syntax::parse(&printed);
    let relowered = ir::lower_parse(&printed, &reparsed);
    std::hint::black_box(&relowered);
    if parse.errors.is_empty()
        && let Some(e) = reparsed.errors.first()
    {
        return Err(format!(
            "the printed text of an error-free parse has a syntax error: {}: {} at {}..{}",
            e.code, e.message, e.range.start, e.range.end
        ));
    }
    Ok(())
}

fn load_seeds(corpus: &Path) -> anyhow::Result<Vec<Seed>> {
    let mut seeds = Vec::new();
    for area in ["ttnn", "ttir-models"] {
        let dir = corpus.join(area);
        if !dir.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        crate::corpus::collect_mlir_files(&dir, &mut files)?;
        files.sort();
        for path in files {
            let text = read_text(&path)?;
            let name = path.strip_prefix(corpus).unwrap_or(&path).to_string_lossy().into_owned();
            seeds.push(Seed { name, bytes: text.into_bytes() });
        }
    }
    for kind in GraphKind::ALL {
        for (ops, seed) in [(12, 0), (60, 1), (300, 2)] {
            let name = format!("generated:{}:{ops}:{seed}", kind.name());
            seeds.push(Seed { name, bytes: generate(ops, seed, kind).into_bytes() });
        }
    }
    Ok(seeds)
}

/// Fragments that steer mutations toward the parser's interesting states: bracket kinds,
/// MLIR punctuation, the resource section markers, split markers and half-finished tokens.
pub(crate) const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "<",
    ">",
    "<{",
    "}>",
    "\"",
    "\\",
    "#-}",
    "{-#",
    "->",
    ":",
    ",",
    "=",
    "%0",
    "%0#1",
    "%0:2",
    "%",
    "@",
    "@\"",
    "#",
    "#loc",
    "#loc1 = loc(",
    "loc(",
    "loc(\"a\"(",
    "!ttcore.tile<",
    "tensor<",
    "memref<",
    "dense<",
    "array<i32:",
    "x",
    "0x",
    "?x",
    "1x1x",
    "^bb0",
    "// -----\n",
    "//",
    "\n",
    " ",
    "func.func @f(",
    "return",
    "module {",
    "\"ttnn.add\"(",
    "#ttnn.ttnn_layout<",
    "(d0, d1) -> (d0, d1)",
    "99999999999999999999999",
    "-",
    "1e309",
    "...",
    "|",
    "?",
    "*",
    "+",
    "'",
    "\t",
    "\r\n",
    "attributes",
    "ttcore.device @d = <",
    "ttnn.d2m_subgraph @f ins(",
    "ttcore.load_cached(@f, [",
    "dense_resource<",
    "affine_map<",
    "0x0x",
    "4294967295x4294967295x",
    "<0x0>",
    "<65536x65536>",
    "18446744073709551615",
    "(0,0), (4294967295,4294967295)",
    "floordiv 0",
    "mod 0",
    "#ttcore.grid<0x0>",
];

/// Byte sequences that are not UTF-8 (lone continuation bytes, truncated multi-byte starts,
/// overlongs, surrogates); the lossy decode turns them into U+FFFD, which must lex as errors.
const BAD_UTF8: &[&[u8]] = &[
    b"\xff",
    b"\xc3",
    b"\x80",
    b"\xf0\x9f",
    b"\xe2\x82",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xfe\xff",
];

fn mutate(rng: &mut Rng, seeds: &[Seed], idx: usize, window: usize) -> Vec<u8> {
    let src = &seeds[idx].bytes;
    let data = if src.len() > window && rng.chance(85) {
        let start = rng.below(src.len() - window + 1);
        src[start..start + window].to_vec()
    } else {
        src.clone()
    };
    mutate_with(rng, data, seeds, TOKENS)
}

/// Mutates `bytes` a few times with the same operators as corpus files, steering inserts with
/// `tokens` (an overrides text, a target file, a session request line).
pub(crate) fn mutate_bytes(rng: &mut Rng, bytes: &[u8], tokens: &[&str]) -> Vec<u8> {
    mutate_with(rng, bytes.to_vec(), &[], tokens)
}

fn mutate_with(rng: &mut Rng, mut data: Vec<u8>, seeds: &[Seed], tokens: &[&str]) -> Vec<u8> {
    let max_rounds = if rng.chance(10) { 32 } else { 4 };
    let rounds = 1 + rng.below(max_rounds);
    for _ in 0..rounds {
        let len = data.len();
        let at = rng.below(len + 1);
        match rng.below(11) {
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = rng.next_u64() as u8;
            }
            2 if len > 0 => {
                let n = 1 + rng.below(64.min(len));
                let start = rng.below(len - n + 1);
                data.drain(start..start + n);
            }
            3 if len > 0 => {
                let n = 1 + rng.below(256.min(len));
                let start = rng.below(len - n + 1);
                let chunk = data[start..start + n].to_vec();
                let to = if rng.chance(50) { start + n } else { at };
                data.splice(to..to, chunk);
            }
            4 if !seeds.is_empty() => {
                let other = &seeds[rng.below(seeds.len())].bytes;
                if !other.is_empty() {
                    let n = 1 + rng.below(1024.min(other.len()));
                    let start = rng.below(other.len() - n + 1);
                    data.splice(at..at, other[start..start + n].iter().copied());
                }
            }
            5 | 6 => {
                let t = rng.pick(tokens);
                data.splice(at..at, t.bytes());
            }
            7 => {
                let b = rng.pick(BAD_UTF8);
                data.splice(at..at, b.iter().copied());
            }
            8 => {
                let open = rng.pick(b"([{<");
                let max = if rng.chance(20) { 5000 } else { 300 };
                let n = 1 + rng.below(max);
                data.splice(at..at, std::iter::repeat_n(open, n));
            }
            9 if len > 0 => data.truncate(at),
            _ => {
                // Replace a number with an extreme one, where integer parsing can overflow.
                if let Some(i) = (0..16)
                    .map(|_| rng.below(len))
                    .find(|&i| data.get(i).is_some_and(u8::is_ascii_digit))
                {
                    let end =
                        data[i..].iter().position(|b| !b.is_ascii_digit()).map_or(len, |e| i + e);
                    let big = rng.pick(&[
                        "0",
                        "4294967296",
                        "18446744073709551616",
                        "340282366920938463463374607431768211457",
                        "2147483648",
                        "18446744073709551615",
                        "9223372036854775807",
                    ]);
                    data.splice(i..end, big.bytes());
                }
            }
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutation_is_deterministic_per_seed_and_changes_the_input() {
        let seeds = vec![
            Seed {
                name: "a".to_owned(),
                bytes: b"%0 = \"ttnn.add\"(%a, %b) : (i32, i32) -> i32".to_vec(),
            },
            Seed { name: "b".to_owned(), bytes: b"#x = #ttnn.buffer_type<dram>".to_vec() },
        ];
        let run = |s: u64| mutate(&mut Rng::new(s), &seeds, 0, WINDOW);
        assert_eq!(run(5), run(5));
        let changed = (0..50).filter(|&s| run(s) != seeds[0].bytes).count();
        assert!(changed >= 45, "only {changed} of 50 mutations changed the input");
    }

    #[test]
    fn exercise_accepts_clean_and_broken_inputs_alike() {
        assert_eq!(exercise(&generate(30, 1, GraphKind::Mixed)), Ok(()));
        assert_eq!(exercise("func.func @f( {{{ \u{fffd} \"unterminated"), Ok(()));
        assert_eq!(exercise(""), Ok(()));
    }
}
