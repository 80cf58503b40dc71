//! The API tuning loops and the session mode use: find ops by name, read their legal
//! layouts, read a plan's cost, and edit the overrides text one op at a time.
//!
//! Everything is incremental: changing one op's override through [`AnalysisHost`] and asking
//! for the cost again re-solves only that op's chain (and the merges that touch it).

use std::sync::Arc;

use base_db::{OutputLayoutOverride, Policy, SourceFile};
use ir::{FuncId, OpId};
use ttnn_types::TtnnLayout;

use crate::{Analysis, AnalysisHost, Cancellable, Change, RootDatabase};

/// An op found by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpRef {
    pub func: FuncId,
    pub op: OpId,
    pub index: usize,
}

/// An op's candidate layouts and configs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpLayouts {
    pub name: String,
    pub kind: String,
    pub fixed: bool,
    pub scalar_types: Vec<String>,
    pub layouts: Vec<TtnnLayout>,
    /// (index into `layouts`, config in words).
    pub configs: Vec<(usize, Option<String>)>,
    pub rejected: usize,
    pub first_rejection: Option<String>,
    pub override_use: Option<String>,
    pub unknown_op: Option<String>,
}

/// A file's estimated time under a policy, with its baselines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostSummary {
    pub policy: Policy,
    pub total_ns: u64,
    pub op_ns: u64,
    pub reshard_ns: u64,
    pub spill_ns: u64,
    /// The IR as written (all DRAM for an imported model).
    pub written_ns: u64,
    pub lower_bound_ns: u64,
    /// The const-eval functions (`tt.function_type = "const_eval"`) as written: device time
    /// the runtime spends once, at load, not per inference, so no policy optimizes it and the
    /// other fields leave it out.
    pub load_ns: u64,
}

pub(crate) fn optimizable_funcs(db: &RootDatabase, file: SourceFile) -> Vec<FuncId> {
    ir::file_funcs(db, file).iter().copied().filter(|&f| rewrite::func_optimizable(db, f)).collect()
}

/// Finds an op by its `loc("name")` or its result name (`%3`).
pub(crate) fn find_op(db: &RootDatabase, file: SourceFile, name: &str) -> Option<OpRef> {
    let funcs = ir::file_funcs(db, file);
    // `@func:%key` names an op of one function; result names repeat across functions.
    if let Some((func_name, key)) = name.strip_prefix('@').and_then(|n| n.split_once(':')) {
        let func = funcs.iter().copied().find(|f| f.name(db) == func_name)?;
        let index = ir::func_body(db, func)?.op_index(key)?;
        let op = ir::func_ops(db, func).get(index).copied()?;
        return Some(OpRef { func, op, index });
    }
    // A `loc("name")` anywhere in the file first (overrides use them), then a result name, in
    // function order.
    let by_loc = funcs.iter().find_map(|&func| {
        let names = ir::func_loc_names(db, func);
        let body = ir::func_body(db, func)?;
        // The first op in body order with that name.
        let index = names
            .iter()
            .filter(|(_, n)| n.as_str() == name)
            .filter_map(|(key, _)| body.index_of(key))
            .min()?;
        Some((func, index as usize))
    });
    let (func, index) = by_loc.or_else(|| {
        funcs.iter().find_map(|&func| {
            let index = ir::func_body(db, func)?.ops.iter().position(|o| o.key == name)?;
            Some((func, index))
        })
    })?;
    let op = ir::func_ops(db, func).get(index).copied()?;
    Some(OpRef { func, op, index })
}

/// How an output-layout override applied, in words.
fn describe_override_use(o: &layout::OverrideUse) -> String {
    match o {
        layout::OverrideUse::Full { layout, rejection: None } => {
            format!("full: exactly {}", layout.describe())
        }
        layout::OverrideUse::Full { layout, rejection: Some(why) } => {
            format!(
                "full: exactly {}, used although the op model rejects it: {why}",
                layout.describe()
            )
        }
        layout::OverrideUse::Partial { remaining } => {
            format!("partial: {remaining} candidate layout(s) match it")
        }
        layout::OverrideUse::Invalid { reason } => format!("ignored: {reason}"),
        layout::OverrideUse::NoEffect => "no effect: the op's output layout is fixed".to_owned(),
    }
}

impl Analysis {
    pub fn find_op(&self, file: SourceFile, name: &str) -> Cancellable<Option<OpRef>> {
        let name = name.to_owned();
        self.with_db(move |db| find_op(db, file, &name))
    }

    /// An op's legal layouts and configs (the session's `layouts` answer).
    pub fn op_layouts(&self, file: SourceFile, name: &str) -> Cancellable<Option<OpLayouts>> {
        let name = name.to_owned();
        self.with_db(move |db| {
            let r = find_op(db, file, &name)?;
            let body = ir::func_body(db, r.func)?;
            let legal = layout::legal_op_layouts(db, r.op);
            let configs = layout::legal_op_configs(db, r.op);
            let scalar = layout::scalar_types(db, r.func);
            Some(OpLayouts {
                name,
                kind: body.ops[r.index].name.clone(),
                fixed: legal.fixed,
                scalar_types: scalar.iter().map(ToString::to_string).collect(),
                layouts: legal.layouts.clone(),
                configs: configs
                    .iter()
                    .map(|c| {
                        let idx =
                            legal.layouts.iter().position(|l| *l == c.layout).unwrap_or(usize::MAX);
                        (idx, crate::plan_report::config_text(&c.config))
                    })
                    .collect(),
                rejected: legal.rejected,
                first_rejection: legal.first_rejection.clone(),
                override_use: legal.override_use.as_ref().map(describe_override_use),
                unknown_op: legal.unknown_op.clone(),
            })
        })
    }

    /// The file's estimated time under `policy`, summed over its optimizable functions.
    pub fn cost(&self, file: SourceFile, policy: Policy) -> Cancellable<CostSummary> {
        self.with_db(move |db| {
            let mut s = CostSummary {
                policy,
                total_ns: 0,
                op_ns: 0,
                reshard_ns: 0,
                spill_ns: 0,
                written_ns: 0,
                lower_bound_ns: 0,
                load_ns: 0,
            };
            for &func in ir::file_funcs(db, file).iter() {
                if ir::func_body(db, func)
                    .is_some_and(|b| b.function_type.as_deref() == Some("const_eval"))
                {
                    s.load_ns += plan::written_cost(db, func).total_ns;
                }
            }
            for func in optimizable_funcs(db, file) {
                let c = plan::plan_totals(db, func, policy);
                s.total_ns += c.total_ns;
                s.op_ns += c.op_ns;
                s.reshard_ns += c.reshard_ns;
                s.spill_ns += c.spill_ns;
                s.written_ns += plan::written_cost(db, func).total_ns;
                s.lower_bound_ns += plan::cost_lower_bound(db, func);
            }
            s
        })
    }

    /// The optimized text of a file under a given policy.
    pub fn final_ir_for(
        &self,
        file: SourceFile,
        policy: Policy,
    ) -> Cancellable<Arc<rewrite::FinalIr>> {
        self.with_db(move |db| rewrite::final_ir_for(db, file, policy))
    }
}

/// The `override-output-layout` parameters that pin `layout` exactly, in tt-mlir syntax
/// (`8x8:l1:block_sharded:tile:bf16`): grid, buffer type, memory layout, page layout and data
/// type. `None` for a layout without a memory layout (a host tensor), which the syntax cannot
/// name.
#[must_use]
pub fn full_layout_params(layout: &TtnnLayout) -> Option<String> {
    let o = OutputLayoutOverride {
        grid: Some(layout.grid2d()),
        buffer: Some(layout.buffer),
        memory_layout: Some(layout.memory_layout?),
        page: Some(layout.page_layout()),
        dtype: layout.data_type(),
    };
    Some(o.to_params())
}

/// Partial `override-output-layout` parameters that keep only where the layout lives
/// (`l1:height_sharded`): the optimizer still searches the grid and shard shape among the
/// op's legal layouts of that kind.
#[must_use]
pub fn partial_layout_params(layout: &TtnnLayout) -> Option<String> {
    let o = OutputLayoutOverride {
        buffer: Some(layout.buffer),
        memory_layout: Some(layout.memory_layout?),
        ..OutputLayoutOverride::default()
    };
    Some(o.to_params())
}

/// Which override option an entry belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverrideOption {
    OutputLayout,
    Conv2dConfig,
    InsertMemReconfig,
}

impl OverrideOption {
    #[must_use]
    pub fn from_name(s: &str) -> Option<OverrideOption> {
        match s {
            "override-output-layout" | "output_layout" | "layout" => {
                Some(OverrideOption::OutputLayout)
            }
            "override-conv2d-config" | "conv2d_config" | "conv2d" => {
                Some(OverrideOption::Conv2dConfig)
            }
            "insert-memreconfig" | "reshard" => Some(OverrideOption::InsertMemReconfig),
            _ => None,
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            OverrideOption::OutputLayout => "override-output-layout",
            OverrideOption::Conv2dConfig => "override-conv2d-config",
            OverrideOption::InsertMemReconfig => "insert-memreconfig",
        }
    }
}

/// The overrides text with the entries for `op` removed (all options, or only `option`).
/// Lines keep their order; a line left with no entries is dropped.
#[must_use]
pub fn overrides_without(text: &str, op: &str, option: Option<OverrideOption>) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("//") {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let mut kept_opts = Vec::new();
        for opt in trimmed.split_whitespace() {
            let Some((name, value)) = opt.split_once('=') else {
                kept_opts.push(opt.to_owned());
                continue;
            };
            let matches_option = option.is_none_or(|o| o.name() == name);
            if OverrideOption::from_name(name).is_none() || !matches_option {
                kept_opts.push(opt.to_owned());
                continue;
            }
            let entries: Vec<&str> = value
                .split(',')
                .filter(|e| e.split_once('=').is_none_or(|(n, _)| n != op))
                .collect();
            if !entries.is_empty() {
                kept_opts.push(format!("{name}={}", entries.join(",")));
            }
        }
        if !kept_opts.is_empty() {
            out.push_str(&kept_opts.join(" "));
            out.push('\n');
        }
    }
    out
}

/// The overrides text with `op`'s entry for `option` set to `params`.
#[must_use]
pub fn overrides_with(text: &str, op: &str, option: OverrideOption, params: &str) -> String {
    let mut out = overrides_without(text, op, Some(option));
    out.push_str(&format!("{}={op}={params}\n", option.name()));
    out
}

impl AnalysisHost {
    /// The current overrides text.
    #[must_use]
    pub fn overrides_text(&self) -> (String, String) {
        let input = base_db::OverridesInput::get(self.db());
        (input.origin(self.db()).clone(), input.text(self.db()).to_string())
    }

    /// Sets one op's override, keeping the others.
    pub fn set_override(&mut self, op: &str, option: OverrideOption, params: &str) {
        let (origin, text) = self.overrides_text();
        self.apply_change(
            Change::new().set_overrides(origin, overrides_with(&text, op, option, params)),
        );
    }

    /// Removes one op's overrides (all options, or one).
    pub fn clear_override(&mut self, op: &str, option: Option<OverrideOption>) {
        let (origin, text) = self.overrides_text();
        self.apply_change(
            Change::new().set_overrides(origin, overrides_without(&text, op, option)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_one_ops_override_keeps_the_others() {
        let text = "# pins\noverride-output-layout=a=l1,b=dram max-legal-layouts=8\ninsert-memreconfig=a=0\n";
        let with =
            overrides_with(text, "a", OverrideOption::OutputLayout, "8x8:l1:block_sharded:tile");
        assert_eq!(
            with,
            "# pins\noverride-output-layout=b=dram max-legal-layouts=8\ninsert-memreconfig=a=0\noverride-output-layout=a=8x8:l1:block_sharded:tile\n"
        );
        assert_eq!(
            overrides_without(&with, "a", None),
            "# pins\noverride-output-layout=b=dram max-legal-layouts=8\n"
        );
    }

    #[test]
    fn layout_params_name_a_layout_fully_or_by_kind() {
        let l = TtnnLayout::sharded(
            &[256, 1024],
            ttnn_types::DataType::BF16,
            ttnn_types::PageLayout::Tile,
            ttnn_types::TensorMemoryLayout::BlockSharded,
            ttnn_types::Grid::new(8, 8),
            ttnn_types::Grid::new(8, 8),
        )
        .expect("an 8x32-tile tensor shards on 8x8");
        assert_eq!(full_layout_params(&l).as_deref(), Some("8x8:l1:block_sharded:tile:bf16"));
        assert_eq!(partial_layout_params(&l).as_deref(), Some("l1:block_sharded"));
        // The full parameters rebuild exactly the same layout, so pinning a legal layout
        // pins that layout and not a neighbour.
        let parsed = base_db::parse_overrides(&format!(
            "override-output-layout=x={}",
            full_layout_params(&l).unwrap_or_default()
        ));
        let Some(base_db::OverrideKind::OutputLayout(o)) = parsed.entries.first().map(|e| &e.kind)
        else {
            panic!("the parameters did not parse: {:?}", parsed.errors);
        };
        let rebuilt = layout::full_override_layout(
            o,
            &[256, 1024],
            ttnn_types::DataType::BF16,
            ttnn_types::Grid::new(8, 8),
        );
        assert_eq!(rebuilt, Ok(l));
    }

    /// Ops are found in every function: by `loc` name first, then by result name (the first
    /// function that has it), or exactly with `@func:%key`.
    #[test]
    fn ops_are_found_in_every_function_by_loc_result_or_qualified_name() {
        let text = r#"func.func @first(%a: tensor<32x32xbf16>) -> tensor<32x32xbf16> {
  %0 = "ttnn.relu"(%a) : (tensor<32x32xbf16>) -> tensor<32x32xbf16> loc("first_relu")
  return %0 : tensor<32x32xbf16>
}
func.func @second(%a: tensor<32x32xbf16>) -> tensor<32x32xbf16> {
  %0 = "ttnn.gelu"(%a) : (tensor<32x32xbf16>) -> tensor<32x32xbf16> loc("second_gelu")
  %1 = "ttnn.exp"(%0) : (tensor<32x32xbf16>) -> tensor<32x32xbf16>
  return %1 : tensor<32x32xbf16>
}
"#;
        let mut host =
            crate::AnalysisHost::new(target::Target::n150(), crate::Options::tt_mlir_defaults());
        host.apply_change(Change::new().set_file("m.mlir", text));
        let file = host.file("m.mlir").expect("file is open");
        let analysis = host.analysis();
        let found = |name: &str| {
            analysis.find_op(file, name).expect("not cancelled").map(|r| {
                analysis
                    .with_db(|db| format!("@{}:{}", r.func.name(db), r.op.key(db)))
                    .expect("not cancelled")
            })
        };
        assert_eq!(found("second_gelu").as_deref(), Some("@second:%0"));
        assert_eq!(found("%1").as_deref(), Some("@second:%1"));
        assert_eq!(found("%0").as_deref(), Some("@first:%0"));
        assert_eq!(found("@second:%0").as_deref(), Some("@second:%0"));
        assert_eq!(found("@second:%7"), None);
        assert_eq!(found("nothing"), None);
    }
}
