//! Settings from `initializationOptions` and `workspace/didChangeConfiguration`.
//!
//! ```json
//! { "target": "n300", "policy": "df-sharding", "maxLegalLayouts": 32,
//!   "diagnostics": { "planFindings": true } }
//! ```
//!
//! `diagnostics.planFindings` may also be written as one dotted key.
//!
//! The object may also be nested under `ttnn-analyzer` or `ttnnAnalyzer` (how VS Code and
//! most clients scope settings). Unknown keys are ignored; a bad value is reported and the
//! previous setting kept.

use ide::{Options, Policy};
use serde_json::Value;

/// The settings in force, starting from tt-mlir's defaults on an n150.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) target: target::Target,
    /// The `target` setting as written, to report it back.
    pub(crate) target_name: String,
    pub(crate) options: Options,
    /// Publish the optimizer's findings as information diagnostics too (off by default:
    /// they are outcomes, shown by inlay hints and hover, and computing them means
    /// computing the plan).
    pub(crate) plan_findings: bool,
}

impl Config {
    pub(crate) fn new() -> Config {
        Config {
            target: target::Target::n150(),
            target_name: "n150".to_owned(),
            options: Options::tt_mlir_defaults(),
            plan_findings: false,
        }
    }

    /// Applies a settings object; returns one message per value that could not be used.
    pub(crate) fn update(&mut self, value: &Value) -> Vec<String> {
        let mut errors = Vec::new();
        let Some(obj) = settings_object(value) else { return errors };
        if let Some(t) = obj.get("target") {
            match t.as_str() {
                Some(name) => match load_target(name) {
                    Ok(target) => {
                        self.target = target;
                        self.target_name = name.to_owned();
                    }
                    Err(e) => errors.push(e),
                },
                None => errors.push(format!("`target` must be a string, found {t}")),
            }
        }
        if let Some(p) = obj.get("policy") {
            match p.as_str().and_then(Policy::from_name) {
                Some(policy) => self.options.policy = policy,
                None => errors.push(format!(
                    "`policy` must be `df-sharding`, `df-sharding-merge` or `greedy`, found {p}"
                )),
            }
        }
        if let Some(m) = obj.get("maxLegalLayouts") {
            match m.as_u64().and_then(|v| u32::try_from(v).ok()) {
                Some(v) => self.options.max_legal_layouts = v,
                None => errors
                    .push(format!("`maxLegalLayouts` must be a non-negative integer, found {m}")),
            }
        }
        let plan_findings = obj
            .get("diagnostics")
            .and_then(|d| d.get("planFindings"))
            .or_else(|| obj.get("diagnostics.planFindings"));
        if let Some(v) = plan_findings {
            match v.as_bool() {
                Some(b) => self.plan_findings = b,
                None => errors
                    .push(format!("`diagnostics.planFindings` must be true or false, found {v}")),
            }
        }
        errors
    }
}

fn settings_object(value: &Value) -> Option<&serde_json::Map<String, Value>> {
    let obj = value.as_object()?;
    for key in ["ttnn-analyzer", "ttnnAnalyzer", "ttnn_analyzer"] {
        if let Some(inner) = obj.get(key).and_then(Value::as_object) {
            return Some(inner);
        }
    }
    Some(obj)
}

/// A builtin device name (`n150`, `n300`, `p150`, ...) or the path of a TOML/JSON target file.
fn load_target(name: &str) -> Result<target::Target, String> {
    target::Target::load(Some(name), crate::files::read_regular_file)
        .map_err(|e| format!("`target` setting: {e}"))
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    #[test]
    #[expect(clippy::disallowed_methods, reason = "the test writes a target file")]
    fn a_target_file_with_an_impossible_grid_is_reported_and_the_target_kept() {
        let path =
            std::env::temp_dir().join(format!("ttnn-config-{}-grid.toml", std::process::id()));
        std::fs::write(&path, "base = \"n150\"\nworker_grid = { rows = 100000, cols = 100000 }\n")
            .expect("the temp file is written");
        let name = path.to_str().expect("temp paths are UTF-8 here").to_owned();
        let mut config = Config::new();
        let errors = config.update(&serde_json::json!({ "target": name }));
        let _ = std::fs::remove_file(&path);
        let shown = errors.join("\n").replace(&name, "<file>");
        expect!["`target` setting: <file>:2:15: `worker_grid`: rows and cols must each be at most 16 (no Tenstorrent chip has a larger Tensix grid), got 100000 rows x 100000 cols"].assert_eq(&shown);
        assert_eq!(config.target, target::Target::n150());
        assert_eq!(config.target_name, "n150");
    }

    #[test]
    fn the_greedy_policy_is_a_policy_setting() {
        let mut config = Config::new();
        let errors = config.update(&serde_json::json!({ "policy": "greedy" }));
        assert_eq!(errors, Vec::<String>::new());
        assert_eq!(config.options.policy, base_db::Policy::Greedy);
    }
}
