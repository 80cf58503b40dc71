//! The `ttnn_analyzer` Python package's native module: an [`Analysis`] object over the same
//! tuning host the `session` command runs (`ide::AnalysisHost` in `HostMode::Tuning`), so a
//! Python tuning loop gets the session's incrementality without a subprocess or JSON lines.
//!
//! - Every method that computes releases the GIL (`Python::detach`) while it holds the host,
//!   so other Python threads run meanwhile; the host sits behind a mutex, so two threads
//!   sharing one `Analysis` take turns rather than race.
//! - Results are plain Python data (dicts, lists, strings, ints), built here as JSON values
//!   and converted once, with the same field names as the session's replies.
//! - Errors that are our diagnostics raise `AnalyzerError` with the diagnostic's kebab-case
//!   `code`, its `message` and every `diagnostics` entry; I/O errors raise `OSError` and bad
//!   arguments `ValueError`.
//!
//! `python/ttnn_analyzer/_native.pyi` is the typed interface; keep the two in step.

use std::sync::{Mutex, MutexGuard};

use camino::Utf8Path;
use ide::{AnalysisHost, Change, HostConfig, HostMode, Options, OverrideOption, Policy, Severity};
use pyo3::{
    create_exception,
    exceptions::{PyException, PyOSError, PyValueError},
    prelude::*,
    types::{PyBool, PyDict, PyList, PyString},
};
use serde_json::{Value, json};

create_exception!(
    _native,
    AnalyzerError,
    PyException,
    "An error reported by the analyzer, with its diagnostic `code` (kebab-case, as the command \
     line prints it), its `message` and the `diagnostics` behind it (a list of dicts)."
);

/// One diagnostic as plain data: the session's `diagnostics` entry plus where it is.
fn diagnostic_json(source: &str, d: &ide::Diagnostic) -> Value {
    json!({
        "source": source,
        "range": [d.range.start, d.range.end],
        "severity": d.severity.as_str(),
        "code": d.code,
        "message": d.message,
    })
}

/// An `AnalyzerError` carrying `code`, `message` and `diagnostics` as attributes.
fn analyzer_error(code: &str, message: &str, diagnostics: Vec<Value>) -> PyErr {
    Python::attach(|py| {
        let err = AnalyzerError::new_err(format!("{code}: {message}"));
        let value = err.value(py);
        let set = || -> PyResult<()> {
            value.setattr("code", code)?;
            value.setattr("message", message)?;
            value.setattr("diagnostics", to_py(py, &Value::Array(diagnostics))?)?;
            Ok(())
        };
        match set() {
            Ok(()) => err,
            Err(e) => e,
        }
    })
}

/// The error for the first error-severity diagnostic of `diags`, with all of them attached.
fn first_error(source: &str, diags: &[ide::Diagnostic]) -> Option<PyErr> {
    let first = diags.iter().find(|d| d.severity == Severity::Error)?;
    let all = diags.iter().map(|d| diagnostic_json(source, d)).collect();
    Some(analyzer_error(first.code, &first.message, all))
}

/// A JSON value as the equivalent Python object (`None`, `bool`, `int`, `float`, `str`,
/// `list`, `dict`).
fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map {
                dict.set_item(k, to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

fn parse_policy(name: &str) -> PyResult<Policy> {
    Policy::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown policy `{name}`: expected `df-sharding`, `df-sharding-merge` or `greedy`"
        ))
    })
}

fn parse_option(name: &str) -> PyResult<OverrideOption> {
    OverrideOption::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown override option `{name}`: expected `override-output-layout`, \
             `override-conv2d-config` or `insert-memreconfig`"
        ))
    })
}

/// A builtin device name, else a target file (`.json` is JSON, anything else TOML), read as
/// the command line reads it (regular files only, size capped).
fn load_target(arg: Option<&str>) -> PyResult<target::Target> {
    target::Target::load(arg, |path| cli::input::read_text(Utf8Path::new(path))).map_err(|e| {
        match &e {
            target::LoadError::Unreadable { error, .. } => {
                PyOSError::new_err(format!("{}: {error:#}", e.headline()))
            }
            target::LoadError::Invalid { .. } => {
                analyzer_error("invalid-target", &e.headline(), Vec::new())
            }
        }
    })
}

/// A value the overrides text keeps as one field: the session refuses the same characters,
/// since a `,`, `=` or whitespace would start another entry, option or line.
fn check_override_field(key: &str, value: &str) -> PyResult<()> {
    if value.is_empty() {
        return Err(PyValueError::new_err(format!("`{key}` must not be empty")));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control() || c == ',' || c == '=') {
        return Err(PyValueError::new_err(format!(
            "`{key}` must be one override field, without whitespace, `,` or `=`: {value:?}"
        )));
    }
    Ok(())
}

fn layout_json(l: &ttnn_types::TtnnLayout) -> Value {
    json!({
        "buffer": l.buffer.keyword(),
        "memory_layout": l.memory_layout.map(|m| m.keyword()),
        "grid": [l.grid2d().rows, l.grid2d().cols],
        "shard_shape": l.memref_shape.as_slice(),
        "page": l.page_layout().keyword(),
        "dtype": l.data_type().map(|d| d.keyword()),
        "short": cli::short_layout(Some(l)),
        // What `set_override` takes to pin exactly this layout (None for a host tensor).
        "params": ide::full_layout_params(l),
    })
}

fn cost_json(c: &ide::CostSummary) -> Value {
    json!({
        "policy": c.policy.name(),
        "total_ns": c.total_ns,
        "op_ns": c.op_ns,
        "reshard_ns": c.reshard_ns,
        "spill_ns": c.spill_ns,
        "written_ns": c.written_ns,
        "lower_bound_ns": c.lower_bound_ns,
        "load_ns": c.load_ns,
    })
}

fn plan_json(report: &ide::PlanReport) -> Value {
    json!({
        "policy": report.policy,
        "ops": report.ops.iter().map(|d| json!({
            "func": d.func, "op": d.op, "kind": d.kind,
            "written": d.written.as_ref().map(layout_json),
            "planned": d.planned.as_ref().map(layout_json),
            "config": d.config,
            "chain": d.chain.map(|(c, p, n, s)| json!({"id": c, "position": p, "length": n, "state": s})),
            "reason": d.reason,
            "reshards": d.reshards.iter().map(|(k, l, r)| json!({"operand": k, "layout": layout_json(l), "reason": r})).collect::<Vec<_>>(),
            "spill": d.spill.as_ref().map(|(l, r)| json!({"layout": layout_json(l), "reason": r})),
            "position": d.position,
            "time_ns": d.time_ns,
            "bound_ns": d.bound_ns,
        })).collect::<Vec<_>>(),
        "chains": report.chains.iter().map(|c| json!({
            "func": c.func, "id": c.index, "ops": c.ops, "state": c.state, "concat": c.concat,
            "failure": c.failure, "spill": c.spill, "spill_reason": c.spill_reason,
        })).collect::<Vec<_>>(),
        "merges": report.merges,
        "ops_in_l1": report.ops_in_l1,
        "reshards": report.reshards,
        "spills": report.spills,
        "skipped": report.skipped.iter().map(|(f, why)| json!({"func": f, "reason": why})).collect::<Vec<_>>(),
    })
}

/// The host and what the `Analysis` was opened on.
struct Inner {
    host: AnalysisHost,
    /// The file's name in the host (its path, or the name given with the text).
    name: String,
    imported: bool,
}

/// The overrides origin diagnostics name.
const ORIGIN: &str = "<python>";

impl Inner {
    fn file(&self) -> PyResult<base_db::SourceFile> {
        self.host
            .file(&self.name)
            .ok_or_else(|| analyzer_error("no-file", "the analysis has no open file", Vec::new()))
    }

    fn analysis(&self) -> ide::Analysis {
        self.host.analysis()
    }

    fn file_diagnostics(&self) -> PyResult<Vec<ide::Diagnostic>> {
        self.analysis().diagnostics(self.file()?).map_err(cancelled)
    }

    /// Refuses to plan a file with errors: the optimizer drops what it cannot read, as the
    /// `optimize` command and the session's `optimize` refuse it.
    fn ensure_no_errors(&self) -> PyResult<()> {
        match first_error("file", &self.file_diagnostics()?) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn policy(&self) -> Policy {
        self.analysis()
            .with_db(|db| layout::effective_options(db).policy)
            .unwrap_or(Policy::DfShardingMerge)
    }

    /// The overrides text's own errors (syntax, duplicates) and entries naming no op.
    fn override_errors(&self) -> PyResult<Vec<ide::Diagnostic>> {
        let file = self.file()?;
        let diags = self.analysis().override_diagnostics(&[file]).map_err(cancelled)?;
        Ok(diags.on_overrides.into_iter().filter(|d| d.severity == Severity::Error).collect())
    }

    /// Sets a new overrides text, or keeps the old one and raises if the new one has errors.
    fn replace_overrides(&mut self, text: String) -> PyResult<()> {
        let (_, before) = self.host.overrides_text();
        self.host.apply_change(Change::new().set_overrides(ORIGIN, text));
        let errors = self.override_errors()?;
        if let Some(e) = first_error("overrides", &errors) {
            self.host.apply_change(Change::new().set_overrides(ORIGIN, before));
            return Err(e);
        }
        Ok(())
    }
}

fn cancelled(_: ide::Cancelled) -> PyErr {
    // The host has one writer, behind the mutex every reader takes too: a query is never
    // cancelled under it. Should that change, the caller can retry.
    analyzer_error("cancelled", "the query was cancelled by a concurrent change", Vec::new())
}

/// An analysis of one TTNN (or imported TTIR) file: the optimizer's plan, its estimated cost,
/// the rewritten IR and per-op candidate layouts, kept up to date incrementally as
/// overrides change.
///
/// Open one with `Analysis.open(path)` or `Analysis.from_text(text)`; a TTIR model is imported
/// to TTNN first. `target` is a builtin device (`n150`, `n300`, `p150`) or a target file;
/// `policy` is `df-sharding-merge` (the default), `df-sharding` or `greedy`.
#[pyclass(module = "ttnn_analyzer._native", frozen)]
struct Analysis {
    inner: Mutex<Inner>,
}

impl Analysis {
    fn lock(&self) -> PyResult<MutexGuard<'_, Inner>> {
        self.inner.lock().map_err(|_| {
            analyzer_error(
                "internal-error",
                "an earlier call panicked while holding this analysis; open it again",
                Vec::new(),
            )
        })
    }

    /// Runs `f` on the host with the GIL released. Every method takes the lock this way: one
    /// that waited for it holding the GIL could deadlock with a holder that needs the GIL
    /// (to build an error).
    fn compute<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Inner) -> PyResult<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut inner = self.lock()?;
            f(&mut inner)
        })
    }

    fn new_from(
        py: Python<'_>,
        name: String,
        text: String,
        target: Option<&str>,
        policy: &str,
    ) -> PyResult<Analysis> {
        let target = load_target(target)?;
        let policy = parse_policy(policy)?;
        py.detach(move || {
            let imported = import::is_ttir(&text);
            let text = if imported {
                let file_name = Utf8Path::new(&name).file_name().unwrap_or(&name).to_owned();
                let result = import::import_ttir(&text, &file_name);
                let diags: Vec<ide::Diagnostic> = result
                    .diagnostics
                    .iter()
                    .map(|d| ide::Diagnostic {
                        range: d.range,
                        severity: d.severity,
                        code: d.code,
                        message: d.message.clone(),
                    })
                    .collect();
                if let Some(e) = first_error("import", &diags) {
                    return Err(e);
                }
                result.ttnn
            } else {
                text
            };
            // The session's host: tuning durabilities, one slot per op's overrides.
            let mut host = AnalysisHost::with_config(
                target,
                Options { policy, ..Options::tt_mlir_defaults() },
                HostConfig { mode: HostMode::Tuning, query_log: false },
            );
            host.apply_change(Change::new().set_file(name.clone(), text).set_overrides(ORIGIN, ""));
            Ok(Analysis { inner: Mutex::new(Inner { host, name, imported }) })
        })
    }
}

#[pymethods]
impl Analysis {
    /// Opens a TTNN or TTIR `.mlir` file (TTIR is imported to TTNN first). The file is read
    /// once and never written.
    ///
    /// Raises `OSError` if it cannot be read, `AnalyzerError` if it is not UTF-8 or its
    /// import has errors.
    #[staticmethod]
    #[pyo3(signature = (path, *, target=None, policy="df-sharding-merge"))]
    fn open(py: Python<'_>, path: &str, target: Option<&str>, policy: &str) -> PyResult<Analysis> {
        let input = cli::input::read(Utf8Path::new(path))
            .map_err(|e| PyOSError::new_err(format!("{e:#}")))?;
        if let Some(d) = &input.encoding_error {
            return Err(analyzer_error(d.code, &d.message, vec![diagnostic_json("file", d)]));
        }
        Analysis::new_from(py, input.path, input.text, target, policy)
    }

    /// Analyses `text` (TTNN, or TTIR which is imported first); `name` labels it in
    /// diagnostics.
    #[staticmethod]
    #[pyo3(signature = (text, *, name="input.mlir", target=None, policy="df-sharding-merge"))]
    fn from_text(
        py: Python<'_>,
        text: String,
        name: &str,
        target: Option<&str>,
        policy: &str,
    ) -> PyResult<Analysis> {
        Analysis::new_from(py, name.to_owned(), text, target, policy)
    }

    /// The file's name: its path, or the name given to `from_text`.
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        self.compute(py, |inner| Ok(inner.name.clone()))
    }

    /// True when the input was TTIR and the analysis runs on its import.
    #[getter]
    fn imported(&self, py: Python<'_>) -> PyResult<bool> {
        self.compute(py, |inner| Ok(inner.imported))
    }

    /// The TTNN text analysed (the import's output for a TTIR input).
    #[getter]
    fn text(&self, py: Python<'_>) -> PyResult<String> {
        self.compute(py, |inner| {
            Ok(inner.host.text(&inner.name).map(|t| t.to_string()).unwrap_or_default())
        })
    }

    /// The policy `cost`, `plan` and `final_ir` use when not given one.
    #[getter]
    fn get_policy(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.compute(py, |inner| Ok(inner.policy().name()))
    }

    #[setter]
    fn set_policy(&self, py: Python<'_>, policy: &str) -> PyResult<()> {
        let policy = parse_policy(policy)?;
        self.compute(py, move |inner| {
            let options = inner
                .analysis()
                .with_db(|db| base_db::OptionsInput::get(db).options(db).clone())
                .map_err(cancelled)?;
            inner.host.apply_change(Change::new().set_options(Options { policy, ..options }));
            Ok(())
        })
    }

    /// Sets one op's override in tt-mlir's option syntax, keeping the others: `op` is the
    /// op's `loc` name, `params` the value after `op=` (`8x8:l1:block_sharded:tile:bf16`,
    /// `l1:height_sharded`, `dram`, ...). Raises `AnalyzerError` (and keeps the overrides as
    /// they were) if the entry does not parse or names no op.
    #[pyo3(signature = (op, params, option="override-output-layout"))]
    fn set_override(&self, py: Python<'_>, op: &str, params: &str, option: &str) -> PyResult<()> {
        check_override_field("op", op)?;
        check_override_field("params", params)?;
        let option = parse_option(option)?;
        self.compute(py, move |inner| {
            let (_, text) = inner.host.overrides_text();
            inner.replace_overrides(ide::overrides_with(&text, op, option, params))
        })
    }

    /// Removes one op's overrides: every option, or only `option`.
    #[pyo3(signature = (op, option=None))]
    fn clear_override(&self, py: Python<'_>, op: &str, option: Option<&str>) -> PyResult<()> {
        check_override_field("op", op)?;
        let option = option.map(parse_option).transpose()?;
        self.compute(py, move |inner| {
            inner.host.clear_override(op, option);
            Ok(())
        })
    }

    /// Replaces all overrides with `text` (tt-mlir optimizer options, one or more per line).
    /// Raises `AnalyzerError` (and keeps the old ones) if it has errors.
    fn set_overrides(&self, py: Python<'_>, text: String) -> PyResult<()> {
        self.compute(py, move |inner| inner.replace_overrides(text))
    }

    /// The current overrides in tt-mlir's option syntax, one entry per line: what to pass to
    /// tt-mlir's optimizer (or to `ttnn-analyzer optimize --overrides`).
    fn overrides(&self, py: Python<'_>) -> PyResult<String> {
        self.compute(py, |inner| Ok(inner.host.overrides_text().1))
    }

    /// The estimated device time in ns under `policy` (default: the analysis's policy),
    /// with its parts and baselines: `total_ns`, `op_ns`, `reshard_ns`, `spill_ns`,
    /// `written_ns` (the IR as written), `lower_bound_ns`, `load_ns` (const-eval, once).
    #[pyo3(signature = (policy=None))]
    fn cost<'py>(&self, py: Python<'py>, policy: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let policy = policy.map(parse_policy).transpose()?;
        let v = self.compute(py, move |inner| {
            inner.ensure_no_errors()?;
            let policy = policy.unwrap_or_else(|| inner.policy());
            let c = inner.analysis().cost(inner.file()?, policy).map_err(cancelled)?;
            Ok(cost_json(&c))
        })?;
        to_py(py, &v)
    }

    /// The optimizer's decisions under `policy`: `ops` (per op: layouts as written and
    /// planned, config, chain, reason, reshards, spill, schedule position, time), `chains`,
    /// `merges`, and the counts `ops_in_l1`, `reshards` and `spills`.
    #[pyo3(signature = (policy=None))]
    fn plan<'py>(&self, py: Python<'py>, policy: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let policy = policy.map(parse_policy).transpose()?;
        let v = self.compute(py, move |inner| {
            inner.ensure_no_errors()?;
            let policy = policy.unwrap_or_else(|| inner.policy());
            let r = inner.analysis().plan_report_for(inner.file()?, policy).map_err(cancelled)?;
            Ok(plan_json(&r))
        })?;
        to_py(py, &v)
    }

    /// The rewritten IR under `policy`: every op's chosen layout and config, with the
    /// conversions the plan needs, in tt-mlir's printer style.
    #[pyo3(signature = (policy=None))]
    fn final_ir(&self, py: Python<'_>, policy: Option<&str>) -> PyResult<String> {
        let policy = policy.map(parse_policy).transpose()?;
        self.compute(py, move |inner| {
            inner.ensure_no_errors()?;
            let policy = policy.unwrap_or_else(|| inner.policy());
            let ir = inner.analysis().final_ir_for(inner.file()?, policy).map_err(cancelled)?;
            Ok(ir.text.clone())
        })
    }

    /// An op's legal layouts and configs under the current overrides. `op` is a `loc` name,
    /// a result name (`%3`) or `@func:%3`. Each layout's `params` pins it exactly through
    /// `set_override`. Raises `AnalyzerError` (`unknown-op`) if no op has that name.
    fn layouts<'py>(&self, py: Python<'py>, op: &str) -> PyResult<Bound<'py, PyAny>> {
        let v = self.compute(py, move |inner| {
            let l = inner.analysis().op_layouts(inner.file()?, op).map_err(cancelled)?;
            let Some(l) = l else {
                return Err(analyzer_error(
                    "unknown-op",
                    &format!("no op named `{op}` (a `loc` name, `%N` or `@func:%N`)"),
                    Vec::new(),
                ));
            };
            Ok(json!({
                "op": l.name, "kind": l.kind, "fixed": l.fixed, "scalar_types": l.scalar_types,
                "layouts": l.layouts.iter().map(layout_json).collect::<Vec<_>>(),
                "configs": l.configs.iter().map(|(i, c)| json!({"layout": i, "config": c})).collect::<Vec<_>>(),
                "rejected_by_op_model": l.rejected, "first_rejection": l.first_rejection,
                "override": l.override_use, "unknown_op": l.unknown_op,
            }))
        })?;
        to_py(py, &v)
    }

    /// The file's diagnostics (syntax and semantic) and the overrides' errors and warnings,
    /// each a dict with `source` (`file` or `overrides`), `range` (byte offsets), `severity`,
    /// `code` and `message`.
    fn diagnostics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = self.compute(py, |inner| {
            let file = inner.file()?;
            let mut out: Vec<Value> =
                inner.file_diagnostics()?.iter().map(|d| diagnostic_json("file", d)).collect();
            let o = inner.analysis().override_diagnostics(&[file]).map_err(cancelled)?;
            out.extend(
                o.on_overrides
                    .iter()
                    .filter(|d| d.severity != Severity::Info)
                    .map(|d| diagnostic_json("overrides", d)),
            );
            Ok(Value::Array(out))
        })?;
        to_py(py, &v)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.compute(py, |inner| {
            Ok(format!(
                "Analysis({:?}, policy={:?}, imported={})",
                inner.name,
                inner.policy().name(),
                if inner.imported { "True" } else { "False" }
            ))
        })
    }
}

/// Imports TTIR text to TTNN with DRAM-interleaved layouts (what `ttnn-analyzer import`
/// prints). Raises `AnalyzerError` if an op cannot be lowered.
#[pyfunction]
#[pyo3(signature = (text, name="model.mlir"))]
fn import_ttir(py: Python<'_>, text: &str, name: &str) -> PyResult<String> {
    py.detach(|| {
        let result = import::import_ttir(text, name);
        let diags: Vec<ide::Diagnostic> = result
            .diagnostics
            .iter()
            .map(|d| ide::Diagnostic {
                range: d.range,
                severity: d.severity,
                code: d.code,
                message: d.message.clone(),
            })
            .collect();
        match first_error("import", &diags) {
            Some(e) => Err(e),
            None => Ok(result.ttnn),
        }
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Analysis>()?;
    m.add_function(wrap_pyfunction!(import_ttir, m)?)?;
    m.add("AnalyzerError", m.py().get_type::<AnalyzerError>())?;
    Ok(())
}
