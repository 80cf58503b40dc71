//! Incrementality: after one edit, exactly the affected queries execute.
//!
//! Each test analyzes a file (every op's legal layouts and configs, every function's scalar
//! types), applies one edit, analyzes again, and snapshots the queries salsa executed (not
//! merely re-validated). Queries keyed by other ops must be absent from the snapshot.

use expect_test::{Expect, expect};
use ide::{AnalysisHost, Change, HostConfig, HostMode, Options, TextEdit};
use syntax::TextRange;

const FILE: &str = "m.mlir";

const BEFORE: &str = r##"#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @main(%a: tensor<256x256xbf16, #l>, %w: tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> {
  %0 = "ttnn.matmul"(%a, %w) <{transpose_a = false, transpose_b = false}> : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("mm0")
  %1 = "ttnn.relu"(%0) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("relu0")
  %2 = "ttnn.add"(%1, %a) : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("add0")
  %3 = "ttnn.exp"(%a) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("exp1")
  return %2 : tensor<256x256xbf16, #l>
}
"##;

/// Pulls every layout query of every op, as the optimizer and the editor would.
fn analyze(host: &AnalysisHost) {
    let analysis = host.analysis();
    let file = host.file(FILE).expect("file is open");
    analysis
        .with_db(|db| {
            for func in ir::file_funcs(db, file).iter() {
                let _ = layout::scalar_types(db, *func);
                for op in ir::func_ops(db, *func).iter() {
                    let _ = layout::legal_op_configs(db, *op);
                }
            }
        })
        .expect("not cancelled");
}

fn host() -> AnalysisHost {
    prepared(AnalysisHost::new(target::Target::n150(), Options::tt_mlir_defaults()), &[])
}

/// `host` with `changes` applied and analyzed, and the execution log emptied.
fn prepared(mut host: AnalysisHost, changes: &[Change]) -> AnalysisHost {
    host.apply_change(Change::new().set_file(FILE, BEFORE));
    for change in changes {
        host.apply_change(change.clone());
    }
    analyze(&host);
    let _ = host.take_executed_queries();
    host
}

#[track_caller]
fn check(change: Change, expect: Expect) {
    check_on(host(), change, expect);
}

#[track_caller]
fn check_on(mut host: AnalysisHost, change: Change, expect: Expect) {
    host.apply_change(change);
    analyze(&host);
    let mut executed = host.take_executed_queries();
    executed.sort();
    let mut out = String::new();
    let mut i = 0;
    while i < executed.len() {
        let n = executed[i..].iter().take_while(|q| **q == executed[i]).count();
        out.push_str(&executed[i]);
        if n > 1 {
            out.push_str(&format!(" x{n}"));
        }
        out.push('\n');
        i += n;
    }
    expect.assert_eq(&out);
}

/// An edit replacing the first occurrence of `old` with `new`.
fn replace(old: &str, new: &str) -> Change {
    let start = BEFORE.find(old).expect("fixture contains the text") as u32;
    let edit =
        TextEdit { range: TextRange::new(start, start + old.len() as u32), text: new.to_owned() };
    Change::new().edit_file(FILE, vec![edit])
}

#[test]
fn whitespace_and_comment_edits_stop_at_the_function_body() {
    check(
        replace("  %1 = ", "  // a comment\n\n     %1 =   "),
        expect![[r#"
            file_funcs
            func_body(@main)
            lower_file
        "#]],
    );
}

#[test]
fn a_location_edit_reruns_no_layout_query() {
    check(
        replace("loc(\"relu0\")", "loc(\"relu_renamed\"(\"model.py\":3:1))"),
        expect![[r#"
            file_funcs
            func_body(@main)
            lower_file
        "#]],
    );
}

#[test]
fn an_attribute_that_does_not_affect_layouts_stops_at_the_signature() {
    check(
        replace("\"ttnn.relu\"(%0) :", "\"ttnn.relu\"(%0) {ttnn.hoist_generic_via_d2m} :"),
        expect![[r#"
            file_funcs
            func_body(@main)
            func_frame
            func_group_at
            func_segment_at
            group_signatures
            lower_file
            overrides_block
            pinned_outputs
            scalar_types(@main)
        "#]],
    );
}

#[test]
fn editing_one_result_type_reruns_only_that_op() {
    check(
        replace(
            "(tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc(\"exp1\")",
            "(tensor<256x256xbf16, #l>) -> tensor<256x256xf32, #l> loc(\"exp1\")",
        ),
        expect![[r#"
            file_funcs
            func_body(@main)
            func_frame
            func_group_at
            func_segment_at
            group_signatures
            legality_of
            lower_file
            overrides_block
            pinned_outputs
            scalar_types(@main)
        "#]],
    );
}

fn relu_override(params: &str) -> Change {
    Change::new().set_overrides("m.overrides", format!("override-output-layout=relu0={params}\n"))
}

#[test]
fn a_first_override_in_an_editor_looks_up_every_ops_name_once() {
    // The op name has no slot yet: the slot map grows, so every op's lookup re-runs once,
    // and only the overridden op's layouts change.
    check(
        relu_override("8x8:l1:block_sharded:tile"),
        expect![[r#"
            func_loc_names
            overridden_legality(@main:%1)
            overrides_block
            scalar_types(@main)
        "#]],
    );
}

#[test]
fn changing_an_existing_override_reruns_only_that_ops_queries() {
    let host = prepared(
        AnalysisHost::new(target::Target::n150(), Options::tt_mlir_defaults()),
        &[relu_override("8x8:l1:block_sharded:tile")],
    );
    check_on(
        host,
        relu_override("l1:interleaved"),
        expect![[r#"
            overridden_legality(@main:%1)
            overrides_block
            scalar_types(@main)
        "#]],
    );
}

#[test]
fn a_tuning_host_reruns_only_the_overridden_ops_queries_on_a_first_override() {
    // A tuning host gave every named op a slot when the file was set. The overrides are read
    // a group of ops at a time (`overrides_block`), as in an editor: the op's group's lookup
    // and the op's legality re-run.
    let config = HostConfig { mode: HostMode::Tuning, query_log: true };
    let host = prepared(
        AnalysisHost::with_config(target::Target::n150(), Options::tt_mlir_defaults(), config),
        &[],
    );
    check_on(
        host,
        relu_override("8x8:l1:block_sharded:tile"),
        expect![[r#"
            overridden_legality(@main:%1)
            overrides_block
            scalar_types(@main)
        "#]],
    );
}

#[test]
fn a_comment_in_the_overrides_reruns_no_op_query() {
    check(Change::new().set_overrides("m.overrides", "# nothing yet\n"), expect![""]);
}

#[test]
fn inserting_an_op_with_a_fresh_name_leaves_the_others_alone() {
    check(
        replace(
            "  %0 = ",
            "  %new = \"ttnn.neg\"(%a) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc(\"neg_new\")\n  %0 = ",
        ),
        expect![[r#"
            file_funcs
            func_body(@main)
            func_frame
            func_group_at
            func_groups
            func_ops(@main)
            func_segment_at
            func_segments
            group_signatures
            legality_of
            lower_file
            overrides_block
            pinned_outputs
            scalar_types(@main)
        "#]],
    );
}

/// Two independent chains (a matmul -> relu -> gelu and an exp-fed matmul -> neg) and a
/// reshape between them that belongs to no chain.
const TWO_CHAINS: &str = r##"#dram = #ttnn.buffer_type<dram>
#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>
func.func @main(%a: tensor<256x256xbf16, #l>, %w: tensor<256x256xbf16, #l>) -> (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) {
  %0 = "ttnn.matmul"(%a, %w) <{transpose_a = false, transpose_b = false}> : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("mm0")
  %1 = "ttnn.relu"(%0) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("relu0")
  %2 = "ttnn.gelu"(%1) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("gelu0")
  %3 = "ttnn.exp"(%w) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("exp1")
  %4 = "ttnn.matmul"(%3, %a) <{transpose_a = false, transpose_b = false}> : (tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("mm1")
  %5 = "ttnn.neg"(%4) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc("neg1")
  return %2, %5 : tensor<256x256xbf16, #l>, tensor<256x256xbf16, #l>
}
"##;

/// Optimizes the file: plan, merges, final IR and cost, as `optimize` and `cost` do.
fn optimize_all(host: &AnalysisHost) {
    let file = host.file(FILE).expect("file is open");
    let analysis = host.analysis();
    let _ = analysis.final_ir(file).expect("not cancelled");
    let _ = analysis.cost(file, ide::Policy::DfShardingMerge).expect("not cancelled");
}

#[track_caller]
fn check_optimize(change: Change, expect: Expect) {
    let mut host = AnalysisHost::new(target::Target::n150(), Options::tt_mlir_defaults());
    host.apply_change(Change::new().set_file(FILE, TWO_CHAINS));
    optimize_all(&host);
    let _ = host.take_executed_queries();
    host.apply_change(change);
    optimize_all(&host);
    let mut executed: Vec<String> = host
        .take_executed_queries()
        .into_iter()
        .filter(|q| {
            let q = q.strip_prefix("overridden_").unwrap_or(q);
            q.starts_with("solve_")
                || q.starts_with("legal_op")
                || q.starts_with("chains")
                || q.starts_with("merge")
                || q.starts_with("schedule")
                || q.starts_with("plan")
        })
        .collect();
    executed.sort();
    expect.assert_eq(&executed.join("\n"));
}

#[test]
fn an_override_on_one_op_resolves_only_its_chain() {
    // The overridden op's chain now reads overrides (`overridden_solve_chain`); the other
    // chain reads none and is not re-derived.
    check_optimize(
        Change::new()
            .set_overrides("m.overrides", "override-output-layout=neg1=l1:height_sharded\n"),
        expect![[r#"
            merge_base_chunk
            overridden_solve_chain(@main:[%4 %5])
            plan_chunk
            plan_parts_chunk
            plan_slice
            plan_totals"#]],
    );
}

#[test]
fn a_whitespace_edit_resolves_no_chain() {
    let start = TWO_CHAINS.find("  %3 =").expect("fixture has %3") as u32;
    check_optimize(
        Change::new().edit_file(
            FILE,
            vec![TextEdit {
                range: TextRange::new(start, start),
                text: "\n  // moved\n".to_owned(),
            }],
        ),
        expect![[r#""#]],
    );
}

/// A function `@main` of 1200 relus `%0` to `%1199` (locations `r0` to `r1199`), relu `i`
/// reading `input(i)`; it returns `%1199`.
fn relus(input: impl Fn(usize) -> String) -> String {
    let t = "tensor<256x256xbf16, #l>";
    let mut text = String::from(
        "#dram = #ttnn.buffer_type<dram>\n#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>\n",
    );
    text.push_str(&format!("func.func @main(%a: {t}) -> {t} {{\n"));
    for i in 0..1200 {
        let x = input(i);
        text.push_str(&format!("  %{i} = \"ttnn.relu\"({x}) : ({t}) -> {t} loc(\"r{i}\")\n"));
    }
    text.push_str(&format!("  return %1199 : {t}\n}}\n"));
    text
}

/// `host` with `text` set as `FILE`.
/// The long functions' tests tell their stories in plan chunks of a segment's 256 ops (the
/// default is smaller): which chunk an op falls in, which windows cross a cut.
fn segment_chunks() -> Options {
    Options { plan_chunk_ops: ir::SEGMENT_OPS as u32, ..Options::tt_mlir_defaults() }
}

fn with_file(mut host: AnalysisHost, text: String) -> AnalysisHost {
    host.apply_change(Change::new().set_file(FILE, text));
    host
}

/// An editor host with the 1200 relus of `relus` reading `%a` open: the host, the file and
/// its text.
fn relu_editor() -> (AnalysisHost, base_db::SourceFile, String) {
    let text = relus(|_| "%a".to_owned());
    let host = with_file(AnalysisHost::new(target::Target::n150(), segment_chunks()), text.clone());
    let file = host.file(FILE).expect("file is open");
    (host, file, text)
}

/// The df-sharding-merge cost and final IR of `FILE`, as a tuning loop asks for them.
fn optimize_file(host: &AnalysisHost) {
    let file = host.file(FILE).expect("file is open");
    let analysis = host.analysis();
    let _ = analysis.cost(file, ide::Policy::DfShardingMerge).expect("not cancelled");
    let _ = analysis.final_ir_for(file, ide::Policy::DfShardingMerge).expect("not cancelled");
}

/// A tuning host (query log on) with `text` set as `FILE` and optimized once, its log of
/// those queries taken.
fn optimized_tuning_host(text: String) -> AnalysisHost {
    let config = HostConfig { mode: HostMode::Tuning, query_log: true };
    let host = with_file(
        AnalysisHost::with_config(target::Target::n150(), Options::tt_mlir_defaults(), config),
        text,
    );
    optimize_file(&host);
    let _ = host.take_executed_queries();
    host
}

/// Sets the overrides text of `host` to `overrides` and optimizes `FILE` again.
fn optimize_with_overrides(host: &mut AnalysisHost, overrides: &str) {
    host.apply_change(Change::new().set_overrides("m.overrides", overrides));
    optimize_file(host);
}

#[test]
fn the_greedy_policy_re_plans_the_edited_function_once_and_a_repeated_question_runs_nothing() {
    // `greedy_plan` is one memo per function (not incremental below it): an attribute edit
    // in relu 1100 runs it once for the whole function; its plan comes out equal, so no
    // chunk is planned again and only the edited op's chunk is costed again.
    let (mut host, file, text) = relu_editor();
    let cost = |host: &AnalysisHost| {
        let _ = host.analysis().cost(file, ide::Policy::Greedy).expect("not cancelled");
    };
    cost(&host);
    let _ = host.take_executed_queries();
    cost(&host);
    let again = executed_counts(&host, &["greedy_plan", "plan_chunk", "chunk_cost", "plan_cost"]);
    host.apply_change(note_on_relu_1100(&text));
    cost(&host);
    let edited = executed_counts(&host, &["greedy_plan", "plan_chunk", "chunk_cost", "plan_cost"]);
    expect![[r#"
        asked again:

        after an edit:
        chunk_cost 1
        greedy_plan 1"#]]
    .assert_eq(&format!("asked again:\n{again}\nafter an edit:\n{edited}"));
}

/// 1200 independent single-op relu chains `r0` to `r1199`: optimized, `overrides` applied,
/// optimized again; the plan, chain and per-block queries that executed.
fn long_function_after(overrides: &str) -> String {
    let mut host = with_file(
        AnalysisHost::new(target::Target::n150(), segment_chunks()),
        relus(|_| "%a".to_owned()),
    );
    optimize_file(&host);
    let _ = host.take_executed_queries();
    host.apply_change(Change::new().set_overrides("m.overrides", overrides));
    optimize_file(&host);
    let mut executed: Vec<String> = host
        .take_executed_queries()
        .into_iter()
        .filter(|q| {
            // A walk shows as `base_chunk` or `overridden_chunk`; `plan_chunk` only picks
            // one of them per chunk, and re-runs for every chunk when the overrides' reach
            // changes.
            if q.starts_with("plan_chunk") {
                return false;
            }
            if q.starts_with("overridden_chunk") || q.starts_with("base_chunk") {
                return true;
            }
            let q = q.strip_prefix("overridden_").unwrap_or(q);
            q.starts_with("plan")
                || q.starts_with("chunk_cost")
                || q.starts_with("rewrite_chunk")
                || q.starts_with("args_text")
                || q.starts_with("func_text")
                || q.starts_with("unscheduled")
                || q.starts_with("final_ir")
                || q.starts_with("solve_chain")
                || q.starts_with("chains")
                || q.starts_with("chainable_block")
                || q.starts_with("chain_block")
                || q.starts_with("lower_bound_block")
                || q.starts_with("base_plans_block")
                || q.starts_with("group_signatures")
                || q.starts_with("fixed_block")
                || q.starts_with("chunk_incoming")
        })
        .collect();
    executed.sort();
    // A query that ran for many keys (the chains of one block) shows once, with a count.
    let mut lines: Vec<String> = Vec::new();
    let mut i = 0;
    while i < executed.len() {
        let n = executed[i..].iter().take_while(|q| **q == executed[i]).count();
        lines.push(if n == 1 { executed[i].clone() } else { format!("{} x{n}", executed[i]) });
        i += n;
    }
    lines.join("\n")
}

#[test]
fn an_override_in_a_long_function_lays_out_only_its_chunk_again() {
    // The plan's parts come in chunks of 256 ops, and an override that keeps the 1100th op
    // in its chain (another sharding) re-solves that chain and re-derives only the fifth
    // chunk, which is walked with the overrides (`overridden_chunk`) and whose cost and
    // rewritten text are the only ones made again (its text reads the values carried in
    // with the overrides, `chunk_incoming` and `plan_carry`, asked for the first time);
    // every other chunk keeps the plan, and the text, without overrides. The chunk's chains with overrides are built for the first time (the
    // blocks of 32 schedule positions it overlaps, reading their groups' chainability with
    // overrides); its fixed outputs
    // are checked again; the blocks of base plans read no overrides (the chunk makes an
    // overridden op's base plan itself). The op's chain moves to the variant of the per-chain
    // queries that reads overrides (`overridden_solve_chain`); the other chains of the block
    // read no overrides and are not re-derived.
    expect![[r#"
        chain_block x6
        chainable_block x6
        chunk_cost
        chunk_incoming
        final_ir_for
        fixed_block
        overridden_chunk
        overridden_chunks
        overridden_solve_chain(@main:[%1100])
        plan_carry
        plan_parts_chunk
        plan_slice
        plan_totals
        rewrite_chunk"#]]
    .assert_eq(&long_function_after("override-output-layout=r1100=l1:height_sharded\n"));
}

#[test]
fn pinning_an_op_to_dram_rechecks_chainability_in_one_block_of_ops() {
    // A full DRAM layout takes the op out of its chain: the chains with overrides of the
    // blocks of 64 schedule positions its chunk overlaps are built (reading their groups'
    // chainability with overrides, the first time anything asks), and the op's chunk reads
    // them from that block (the function's chains are not gathered again: `chains` serves
    // reports, not the plan); the chunk cuts, placed by the chains without overrides, stay
    // where they are. The op's
    // block of fixed-output flags is read again and comes out the same (the op could still
    // go elsewhere), so no block of the cost bound re-runs.
    expect![[r#"
        chain_block x6
        chainable_block x6
        chunk_cost
        chunk_incoming
        final_ir_for
        fixed_block
        overridden_chunk
        overridden_chunks
        plan_carry
        plan_parts_chunk
        plan_slice
        plan_totals
        rewrite_chunk"#]]
    .assert_eq(&long_function_after(
        "override-output-layout=r1100=1x1:dram:interleaved:tile:bf16\n",
    ));
}

#[test]
fn a_tuning_host_re_plans_one_chunk_when_the_chains_change_after_an_earlier_override() {
    // On a tuning host the slots are `LOW`. Pinning op 1100 to DRAM (after op 10 was
    // overridden and cleared) changes its chainability and so the chain block holding it.
    // The chunks read the chains through the blocks they lie in, not through the function's
    // gathered chains (`chains` does not run): the chunk layout is checked again and
    // backdated, and only the chunks overlapping that block look at their chains again (two;
    // one comes out equal). Only the chunk holding op 1100 is planned and printed again, not
    // all five.
    let mut host = optimized_tuning_host(relus(|_| "%a".to_owned()));
    optimize_with_overrides(&mut host, "override-output-layout=r10=l1:height_sharded\n");
    optimize_with_overrides(&mut host, "");
    let _ = host.take_executed_queries();
    host.apply_change(Change::new().set_overrides(
        "m.overrides",
        "override-output-layout=r1100=1x1:dram:interleaved:tile:bf16\n",
    ));
    optimize_file(&host);
    expect![[r#"
        chunk_chains 1
        chunk_cost 1
        chunk_incoming 1
        chunk_overridden 1
        overridden_chunk 1
        overridden_chunks 1
        plan_parts_chunk 1
        rewrite_chunk 1"#]]
    .assert_eq(&executed_counts(
        &host,
        &[
            "chains",
            "chunk_",
            "overridden_chunk",
            "base_chunk",
            "plan_parts_chunk",
            "rewrite_chunk",
        ],
    ));
}

#[test]
fn a_first_override_on_a_tuning_host_walks_only_the_chunk_holding_the_op() {
    // An op's first override in a tuning loop: its chunk's walk re-runs, and the carry it
    // hands on comes out equal, so no later chunk is walked, costed or printed again. Had
    // the slot been created at a higher durability than its later writes, the carry would
    // come out equal but less durable, which salsa does not backdate, and each of the
    // four chunks after op 10's would be walked again in turn.
    let mut host = optimized_tuning_host(relus(|_| "%a".to_owned()));
    optimize_with_overrides(&mut host, "override-output-layout=r10=l1:height_sharded\n");
    expect![[r#"
        chunk_cost 1
        chunk_incoming 1
        overridden_carry 1
        overridden_chunk 1
        overridden_chunks 1
        overridden_groups 1
        overridden_legality 1
        overridden_solve_chain 1
        plan_parts_chunk 1
        plan_slice 1
        plan_totals 1
        rewrite_chunk 1"#]]
    .assert_eq(&executed_counts(
        &host,
        &[
            "chunk_cost",
            "chunk_incoming",
            "plan_carry",
            "plan_cost",
            "plan_totals",
            "plan_parts",
            "plan_slice",
            "overridden_",
            "base_chunk",
            "rewrite_chunk",
        ],
    ));
}

#[test]
fn a_tuning_host_reaches_the_override_memos_of_the_overridden_group_alone() {
    // On a tuning host the slots are `LOW` and every memo reading them is walked after each
    // override. The readers that look at every group (the lower bound, the chain blocks, the
    // probes of the chunks' parts) read each group's slot itself and its memos without
    // overrides (`func_slots` says which slots serve a group, from the graph alone), and ask
    // a group's override memos only where its slot holds something. So after an override of
    // op 1100 the group override memos are run for its group, once each, and re-validated for
    // no other group; the lower bound is the bound without overrides
    // (`base_lower_bound_named`, not re-run) corrected for that group. The chunks without an
    // override keep their parts without overrides (`parts_without_overrides`, keyed by their
    // content, graph only: not re-run), and whether the function is optimized is not asked
    // again (`func_optimizable`). Clearing the override runs none of them: no group has
    // overrides, and op 1100's chunk takes its parts without overrides from the memo made
    // when the file was first optimized.
    let mut host = optimized_tuning_host(relus(|_| "%a".to_owned()));
    let group_memos =
        ["overrides_block", "chainable_block", "fixed_block", "base_lower_bound", "func_slots"];
    let _ = host.take_executed_queries();
    host.set_validation_log(true);
    let _ = host.take_validated_counts();
    host.apply_change(Change::new().set_overrides(
        "m.overrides",
        "override-output-layout=r1100=1x1:dram:interleaved:tile:bf16\n",
    ));
    optimize_file(&host);
    expect![[r#"
        chainable_block 1
        cost_lower_bound 1
        fixed_block 1
        overrides_block 1"#]]
    .assert_eq(&executed_counts(
        &host,
        &[
            "overrides_block",
            "chainable_block",
            "fixed_block",
            "func_slots",
            "base_lower",
            "cost_lower",
            "parts_without",
            "func_optimizable",
        ],
    ));
    let validated = host.take_validated_counts();
    let walked: Vec<String> = group_memos
        .iter()
        .map(|name| format!("{name} {}", validated.get(*name).copied().unwrap_or(0)))
        .collect();
    expect![[r#"
        overrides_block 0
        chainable_block 0
        fixed_block 0
        base_lower_bound 0
        func_slots 1"#]]
    .assert_eq(&walked.join("\n"));
    optimize_with_overrides(&mut host, "");
    expect![[r#""#]].assert_eq(&executed_counts(
        &host,
        &[
            "overrides_block",
            "chainable_block",
            "fixed_block",
            "func_slots",
            "base_lower",
            "parts_without",
            "func_optimizable",
        ],
    ));
}

/// 1200 ops `%0` to `%1199` (locations `r0` to `r1199`) after a device handle `%dev`
/// (location `dev`): a chain of relus on a 1x1x3136x64 tensor with every 50th op a 3x3
/// convolution that keeps the shape and reads the device handle, as tt-mlir's convolutions
/// do.
fn convs_reading_the_device() -> String {
    let t = "tensor<1x1x3136x64xbf16, #l>";
    let w = "tensor<64x64x3x3xbf16, #l>";
    let b = "tensor<1x1x1x64xbf16, #l>";
    let mut text = String::from(
        "#dram = #ttnn.buffer_type<dram>\n#l = #ttnn.ttnn_layout<(d0, d1, d2, d3) -> (d0 * 3136 + d1 * 3136 + d2, d3), <1x1>, memref<98x2x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>\n",
    );
    text.push_str(&format!("func.func @main(%a: {t}, %w: {w}, %b: {b}) -> {t} {{\n"));
    text.push_str("  %dev = \"ttnn.get_device\"() <{mesh_offset = #ttnn<mesh_offset 0x0>, mesh_shape = #ttnn<mesh_shape 1x1>}> : () -> !ttnn.device loc(\"dev\")\n");
    for i in 0..1200 {
        let x = if i == 0 { "%a".to_owned() } else { format!("%{}", i - 1) };
        if i % 50 == 25 {
            text.push_str(&format!(
                "  %{i} = \"ttnn.conv2d\"({x}, %w, %b, %dev) <{{batch_size = 1 : i32, dilation = array<i32: 1, 1>, groups = 1 : i32, in_channels = 64 : i32, input_height = 56 : i32, input_width = 56 : i32, kernel_size = array<i32: 3, 3>, out_channels = 64 : i32, padding = array<i32: 1, 1, 1, 1>, stride = array<i32: 1, 1>}}> : ({t}, {w}, {b}, !ttnn.device) -> {t} loc(\"r{i}\")\n"
            ));
        } else {
            text.push_str(&format!("  %{i} = \"ttnn.relu\"({x}) : ({t}) -> {t} loc(\"r{i}\")\n"));
        }
    }
    text.push_str(&format!("  return %1199 : {t}\n}}\n"));
    text
}

#[test]
fn an_override_sharing_the_device_handles_slot_re_plans_only_its_chunk() {
    // On a tuning host the ops of one group share an override slot: r3 shares the device
    // handle's, which the convolutions of every chunk read. An override on r3 re-plans and
    // re-walks r3's chunk alone: the device handle has no override of its own, so the last
    // chunk (which holds it, unscheduled) and every other chunk keep the plan without
    // overrides. The chains around the convolutions now read
    // overrides (a producer's slot holds one), so the override memos of their ops' groups
    // are asked, and made, for the first time (34 groups): a tuning host reaches a group's
    // override memos only once something asks with overrides.
    let mut host = optimized_tuning_host(convs_reading_the_device());
    optimize_with_overrides(&mut host, "override-output-layout=r3=dram\n");
    expect![[r#"
        overridden_chunk 1
        overridden_chunks 1
        overrides_block 34
        plan_parts_chunk 1"#]]
    .assert_eq(&executed_counts(
        &host,
        &["overrides_block", "plan_parts_chunk", "overridden_chunk", "base_chunk"],
    ));
}

#[test]
fn an_override_in_the_last_chunk_reprints_that_chunk_alone() {
    // The convolutions of most chunks read the device handle, which the last chunk plans
    // (unscheduled ops form its tail). An override on r1199 reaches the last chunk but
    // leaves the device handle's plan as it was, so the last chunk's text alone is made from
    // the plan with overrides (its incoming values too, the first time anything asks with
    // them); every other chunk keeps the text of the plan without overrides, and which
    // chunks read unscheduled ops (`reads_unscheduled`) is not asked.
    let mut host = optimized_tuning_host(convs_reading_the_device());
    optimize_with_overrides(&mut host, "override-output-layout=r1199=dram\n");
    expect![[r#"
        chunk_incoming 1
        overridden_chunk 1
        overridden_chunks 1
        rewrite_chunk 1"#]]
    .assert_eq(&executed_counts(
        &host,
        &["rewrite_chunk", "reads_unscheduled", "chunk_incoming", "overridden_chunk"],
    ));
}

#[test]
fn splitting_a_chain_by_an_override_leaves_the_chunk_cuts_in_place() {
    // 120 chains of 10 relus each: the cut near op 256 falls inside the chain of ops 250 to
    // 259 and moves to 260. Pinning op 255 to DRAM splits that chain, but the cuts are placed
    // by the chains of the graph alone, so they stay where they were, and the chunk holding
    // op 255 is the only one costed again.
    let text = relus(|i| if i % 10 == 0 { "%a".to_owned() } else { format!("%{}", i - 1) });
    let mut host = AnalysisHost::new(target::Target::n150(), segment_chunks());
    host.apply_change(Change::new().set_file(FILE, text));
    let file = host.file(FILE).expect("file is open");
    let cost = |host: &AnalysisHost| {
        let _ = host.analysis().cost(file, ide::Policy::DfShardingMerge).expect("not cancelled");
    };
    cost(&host);
    let _ = host.take_executed_queries();
    host.apply_change(Change::new().set_overrides(
        "m.overrides",
        "override-output-layout=r255=1x1:dram:interleaved:tile:bf16\n",
    ));
    cost(&host);
    let mut executed: Vec<String> = host
        .take_executed_queries()
        .into_iter()
        .filter(|q| q.starts_with("chunk_cost") || q.starts_with("chunk_layout"))
        .collect();
    executed.sort();
    expect!["chunk_cost"].assert_eq(&executed.join("\n"));
}

#[test]
fn an_attribute_edit_in_a_long_function_reruns_only_the_chunk_holding_the_op() {
    // 1200 independent relus; a discardable attribute added to the 1100th changes the
    // function body, but of its groups of 32 ops only one: only that group's
    // signatures are read again (and come out the same), only the chunk holding the op is
    // walked again (once per policy) and costed, and no chunk's parts are re-derived; the
    // chains are not rebuilt (that group's chain facts are read again and come out the
    // same). The whole plan is gathered again for the report, which reads the body.
    let (mut host, file, text) = relu_editor();
    let optimize = |host: &AnalysisHost| {
        let analysis = host.analysis();
        let _ = analysis.cost(file, ide::Policy::DfShardingMerge).expect("not cancelled");
        let _ = analysis.plan_report(file).expect("not cancelled");
    };
    optimize(&host);
    let _ = host.take_executed_queries();
    host.apply_change(note_on_relu_1100(&text));
    optimize(&host);
    let text = executed_counts(
        &host,
        &[
            "func_group",
            "chain",
            "solve_chain",
            "op_signature",
            "plan_",
            "chunk_",
            "base_plans_block",
        ],
    );
    expect![[r#"
        base_plans_block 1
        chain_facts_block 1
        chunk_cost 1
        chunk_incoming 1
        func_group_at 16
        plan_for 1"#]]
    .assert_eq(&text);
}

/// The edit adding a discardable attribute to relu `%1100` of the `relus` fixture `text`.
fn note_on_relu_1100(text: &str) -> Change {
    let op = "%1100 = \"ttnn.relu\"(%a)";
    let end = (text.find(op).expect("fixture has %1100") + op.len()) as u32;
    Change::new().edit_file(
        FILE,
        vec![TextEdit { range: TextRange::new(end, end), text: " {note = 1 : i64}".to_owned() }],
    )
}

/// The diagnostics and findings of `file`, as an editor asks for them after each change.
fn diagnose(host: &AnalysisHost, file: base_db::SourceFile) {
    let analysis = host.analysis();
    let _ = analysis.diagnostics(file).expect("not cancelled");
    let _ = analysis.findings(file).expect("not cancelled");
}

/// How many times each query whose name starts with one of `prefixes` executed since the
/// last drain, one `name count` line per query name, sorted.
fn executed_counts(host: &AnalysisHost, prefixes: &[&str]) -> String {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for q in host.take_executed_queries() {
        let name = q.split('(').next().unwrap_or(&q).to_owned();
        if prefixes.iter().any(|p| name.starts_with(p)) {
            *counts.entry(name).or_default() += 1;
        }
    }
    counts.iter().map(|(n, c)| format!("{n} {c}")).collect::<Vec<_>>().join("\n")
}

#[test]
fn an_edit_in_a_long_function_rechecks_only_its_segment_as_written() {
    // The findings read the op model's verdict on every op as written, a segment of about
    // 8 groups at a time: an edit inside the 1100th of 1200 relus checks that segment again
    // and no other.
    let (mut host, file, text) = relu_editor();
    let diagnose = |host: &AnalysisHost| diagnose(host, file);
    diagnose(&host);
    let _ = host.take_executed_queries();
    host.apply_change(note_on_relu_1100(&text));
    diagnose(&host);
    let checks: Vec<String> = host
        .take_executed_queries()
        .into_iter()
        .filter(|q| q.starts_with("written_check") || q.starts_with("lower_file"))
        .collect();
    expect![[r#"
        lower_file
        written_checks_segment"#]]
    .assert_eq(&checks.join("\n"));
}

#[test]
fn the_ir_as_written_is_walked_again_only_when_its_verdicts_or_l1_data_flow_change() {
    // `written_findings` walks every op with the live L1 before it. An attribute edit in
    // relu 1100 re-checks its segment's verdicts, which come out the same, so nothing reading
    // them runs, nor after a second attribute edit there. Making relu 1100 read relu 1099
    // instead of `%a` changes the data flow, but of values in DRAM, which add nothing to the
    // live L1: the walk does not run either (its L1 counterpart is
    // `problems_follow_the_live_l1_as_written_through_a_data_flow_edit`).
    let (mut host, file, text) = relu_editor();
    diagnose(&host, file);
    let _ = host.take_executed_queries();
    host.apply_change(note_on_relu_1100(&text));
    diagnose(&host, file);
    let after_first = executed_counts(&host, &["written_"]);
    let edit = |host: &mut AnalysisHost, old: &str, new: &str| {
        let text = host.analysis().file_text(file).expect("not cancelled");
        let at = text.find(old).expect("the text is there") as u32;
        host.apply_change(Change::new().edit_file(
            FILE,
            vec![TextEdit {
                range: TextRange::new(at, at + old.len() as u32),
                text: new.to_owned(),
            }],
        ));
        diagnose(host, file);
    };
    edit(&mut host, "{note = 1 : i64}", "{note = 2 : i64}");
    let after_second = executed_counts(&host, &["written_"]);
    edit(&mut host, "\"ttnn.relu\"(%a) {note", "\"ttnn.relu\"(%1099) {note");
    let after_data_flow = executed_counts(&host, &["written_"]);
    expect![[r#"
        first edit in the group:
        written_checks_segment 1
        second attribute edit:
        written_checks_segment 1
        data-flow edit:
        written_checks_segment 1"#]]
    .assert_eq(&format!(
        "first edit in the group:\n{after_first}\nsecond attribute edit:\n{after_second}\ndata-flow edit:\n{after_data_flow}"
    ));
}

#[test]
fn an_override_in_a_long_function_formats_the_findings_of_its_chunk_alone() {
    // The optimizer's findings are kept per chunk of the plan without positions
    // (`chunk_findings`): pinning relu 1100 to DRAM changes the plan of its chunk only, so
    // only that chunk's messages are made again; the others only get their ranges.
    let mut host = with_file(
        AnalysisHost::new(target::Target::n150(), Options::tt_mlir_defaults()),
        relus(|_| "%a".to_owned()),
    );
    let file = host.file(FILE).expect("file is open");
    let findings = |host: &AnalysisHost| host.analysis().findings(file).expect("not cancelled");
    let before = findings(&host);
    let _ = host.take_executed_queries();
    host.apply_change(Change::new().set_overrides(
        "m.overrides",
        "override-output-layout=r1100=1x1:dram:interleaved:tile:bf16\n",
    ));
    let after = findings(&host);
    expect![[r#"
        chunk_findings 1
        findings before 1200, after 1199"#]]
    .assert_eq(&format!(
        "{}\nfindings before {}, after {}",
        executed_counts(&host, &["chunk_findings"]),
        before.len(),
        after.len()
    ));
}

#[test]
fn an_override_past_a_merge_window_does_not_rewalk_the_chunk_before() {
    // 1200 relus, but op 420 adds relu 250 to relu 419: the walk of the first chunk (the
    // first 256 or so scheduled ops, cut between groups) weighs keeping relu 250's output
    // in L1 until op 420, a window that runs into the second chunk, and reads the base
    // plans of ops there, one memo per op or chain read (`foreign_op_plan`,
    // `foreign_chain`). An override on relu 480, in the second chunk but outside that
    // window, re-derives the second chunk's base plans; the memos the first walk read are
    // checked again and come out the same, so the first chunk is not walked again.
    let t = "tensor<256x256xbf16, #l>";
    let mut text = String::from(
        "#dram = #ttnn.buffer_type<dram>\n#l = #ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, memref<8x8x!ttcore.tile<32x32, bf16>, #dram>, <interleaved>>\n",
    );
    text.push_str(&format!("func.func @main(%a: {t}) -> {t} {{\n"));
    for i in 0..1200 {
        if i == 420 {
            text.push_str(&format!(
                "  %{i} = \"ttnn.add\"(%250, %419) : ({t}, {t}) -> {t} loc(\"r{i}\")\n"
            ));
        } else {
            text.push_str(&format!("  %{i} = \"ttnn.relu\"(%a) : ({t}) -> {t} loc(\"r{i}\")\n"));
        }
    }
    text.push_str(&format!("  return %1199 : {t}\n}}\n"));
    let mut host = AnalysisHost::new(target::Target::n150(), segment_chunks());
    host.apply_change(Change::new().set_file(FILE, text));
    let file = host.file(FILE).expect("file is open");
    let cost = |host: &AnalysisHost| {
        let _ = host.analysis().cost(file, ide::Policy::DfShardingMerge).expect("not cancelled");
    };
    cost(&host);
    let first: usize =
        host.take_executed_queries().iter().filter(|q| q.starts_with("foreign")).count();
    host.apply_change(
        Change::new()
            .set_overrides("m.overrides", "override-output-layout=r480=l1:height_sharded\n"),
    );
    cost(&host);
    let text = executed_counts(&host, &["overridden_chunk", "base_chunk", "foreign"]);
    expect![[r#"
        foreign reads at first: 208
        foreign_chain 103
        foreign_op_plan 104
        overridden_chunk 1
        overridden_chunks 1"#]]
    .assert_eq(&format!("foreign reads at first: {first}\n{text}"));
}

#[test]
fn an_edit_inside_one_op_reruns_only_what_reads_its_group() {
    // Everything derived from the file is re-checked after an edit, and the projections of
    // the lowering (the groups' ops) are backdated where nothing changed: an edit inside
    // relu 1100 runs the queries of its own group and the function-wide ones that read the
    // body, and no other group's. A second edit in the same op does the same.
    let (mut host, file, text) = relu_editor();
    let diagnose = |host: &AnalysisHost| diagnose(host, file);
    diagnose(&host);
    let _ = host.take_executed_queries();
    host.apply_change(note_on_relu_1100(&text));
    diagnose(&host);
    let first = executed_counts(&host, &[""]);
    let note = text.find("%1100 = \"ttnn.relu\"(%a)").expect("fixture has %1100") as u32;
    let value = note + "%1100 = \"ttnn.relu\"(%a) {note = ".len() as u32;
    host.apply_change(Change::new().edit_file(
        FILE,
        vec![TextEdit { range: TextRange::new(value, value + 1), text: "2".to_owned() }],
    ));
    diagnose(&host);
    let second = executed_counts(&host, &[""]);
    expect![[r#"
        first edit:
        base_chainable_block 1
        base_chunk 1
        base_plans_block 1
        chain_facts_block 1
        file_funcs 1
        flow_block 1
        func_body 1
        func_frame 1
        func_group_at 16
        func_segment_at 4
        func_source_map 1
        group_signatures 1
        lower_file 1
        pinned_outputs 1
        written_checks_segment 1
        second edit:
        base_chainable_block 1
        base_chunk 1
        base_plans_block 1
        chain_facts_block 1
        file_funcs 1
        flow_block 1
        func_body 1
        func_frame 1
        func_group_at 16
        func_segment_at 4
        func_source_map 1
        group_signatures 1
        lower_file 1
        pinned_outputs 1
        written_checks_segment 1"#]]
    .assert_eq(&format!("first edit:\n{first}\nsecond edit:\n{second}"));
}

#[test]
fn inserting_an_op_in_a_long_function_reruns_only_what_reads_its_group() {
    // An op with a fresh name inserted after relu 600 changes the group that holds it; the
    // other groups keep their ops (the groups are cut by the ops' names, not by position),
    // so their per-group queries are backdated; the function-wide ones that read the body
    // (the frame, the data flow) run again.
    let (mut host, file, text) = relu_editor();
    let diagnose = |host: &AnalysisHost| diagnose(host, file);
    diagnose(&host);
    let _ = host.take_executed_queries();
    let op = "%600 = \"ttnn.relu\"";
    let line_end = text[text.find(op).expect("fixture has %600")..]
        .find('\n')
        .map(|k| k + text.find(op).unwrap_or(0))
        .expect("the op ends its line") as u32;
    let line = &text[text.find(op).unwrap_or(0)..line_end as usize];
    let inserted = format!("\n    {}", line.replacen("%600 =", "%fresh =", 1));
    host.apply_change(Change::new().edit_file(
        FILE,
        vec![TextEdit { range: TextRange::new(line_end, line_end), text: inserted }],
    ));
    diagnose(&host);
    expect![[r#"
        base_carry 2
        base_chainable_block 1
        base_chunk 5
        base_plans_block 1
        chain_block 38
        chain_facts_block 1
        chunk_chains 5
        chunk_count 1
        chunk_findings 3
        chunk_layout 1
        chunk_ops 5
        file_funcs 1
        flow_block 1
        func_body 1
        func_frame 1
        func_group_at 16
        func_groups 1
        func_ops 1
        func_segment_at 4
        func_segments 1
        func_slots 1
        func_source_map 1
        func_topology 1
        group_signatures 1
        lower_file 1
        merge_base_chunk 5
        overridden_chunks 1
        parts_without_overrides 5
        pinned_outputs 1
        plan_chunk 3
        plan_slice 3
        schedule 1
        solve_single_chains 34
        written_checks_segment 1
        written_findings 1"#]]
    .assert_eq(&executed_counts(&host, &[""]));
}

#[test]
fn inserting_an_op_reprojects_only_the_groups_of_its_segment() {
    // The 34 groups of the 1200 relus fall into 4 segments, both cut by content. An op whose
    // name starts no group (as 31 names in 32 do) inserted after relu 450 joins a group:
    // every segment is read from the body again (4), but only the groups of the segment
    // holding the new op are projected again (6 of 34), and only that segment is checked
    // as written again.
    let (mut host, file, text) = relu_editor();
    let diagnose = |host: &AnalysisHost| diagnose(host, file);
    diagnose(&host);
    let _ = host.take_executed_queries();
    let at = text.find("  %451 = ").expect("fixture has %451") as u32;
    let inserted = "  %new451 = \"ttnn.relu\"(%a) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc(\"f\")\n";
    host.apply_change(Change::new().edit_file(
        FILE,
        vec![TextEdit { range: TextRange::new(at, at), text: inserted.to_owned() }],
    ));
    diagnose(&host);
    expect![[r#"
        func_group_at 6
        func_segment_at 4
        func_segments 1
        written_checks_segment 1"#]]
    .assert_eq(&executed_counts(
        &host,
        &["func_group_at", "func_segment", "written_check", "segment_uses"],
    ));
}

#[test]
fn pasting_ops_that_start_groups_rechecks_only_the_pasted_ops_as_written() {
    // 100 relus with fresh names pasted after relu 300: some of their names start groups of
    // their own, so every group after them moves to a later index. The verdicts as written
    // are kept per segment by the segment's first op's name, not its index: only the
    // segments holding pasted ops are checked again, not the segments after them.
    let (mut host, file, text) = relu_editor();
    let diagnose = |host: &AnalysisHost| diagnose(host, file);
    diagnose(&host);
    let groups = |host: &AnalysisHost| {
        let funcs = ir::file_funcs(host.analysis().db(), file);
        funcs.first().map_or(0, |&f| ir::func_groups(host.analysis().db(), f).len())
    };
    let before = groups(&host);
    let _ = host.take_executed_queries();
    let at = text.find("  %301 = ").expect("fixture has %301") as u32;
    let pasted: String = (0..100)
        .map(|k| {
            format!(
                "  %pasted{k} = \"ttnn.relu\"(%a) : (tensor<256x256xbf16, #l>) -> tensor<256x256xbf16, #l> loc(\"p{k}\")\n"
            )
        })
        .collect();
    host.apply_change(
        Change::new()
            .edit_file(FILE, vec![TextEdit { range: TextRange::new(at, at), text: pasted }]),
    );
    diagnose(&host);
    let checks = executed_counts(&host, &["written_check"]);
    expect![[r#"
        groups 34 -> 37
        written_checks_segment 2"#]]
    .assert_eq(&format!("groups {before} -> {}\n{checks}", groups(&host)));
}

/// The per-group memos of the layouts and the plan, and the per-segment memos of the
/// problems as written: keyed by their group's (segment's) first op's name, each re-runs
/// after an edit only for the groups (segments) whose ops changed.
const GROUP_MEMOS: &[&str] = &[
    "base_chainable_block",
    "base_fixed_block",
    "base_plans_block",
    "chain_facts_block",
    "chainable_block",
    "fixed_block",
    "flow_block",
    "group_signatures",
    "lower_bound_block",
    "overrides_block",
    "written_checks_segment",
    "segment_uses",
];

/// The edit inserting `lines` before the line of relu `%at` of the `relus` fixture `text`.
fn insert_before_relu(text: &str, at: usize, lines: &str) -> Change {
    let start = text.find(&format!("  %{at} = ")).expect("fixture has the relu") as u32;
    Change::new()
        .edit_file(FILE, vec![TextEdit { range: TextRange::new(start, start), text: lines.into() }])
}

/// The line of a relu named `%{name}` at `loc("{name}")`, reading `%a`.
fn relu_line(name: &str) -> String {
    let t = "tensor<256x256xbf16, #l>";
    format!("  %{name} = \"ttnn.relu\"(%a) : ({t}) -> {t} loc(\"{name}\")\n")
}

/// On the 1200 relus of `relus` in a host in `mode`, analyzed as an editor and a tuning loop
/// ask (diagnostics, findings, the cost and the final IR), then `edit`ed and analyzed again:
/// how the groups changed, and how many times each per-group memo ran.
fn group_memos_after(mode: HostMode, edit: impl Fn(&str) -> Change) -> String {
    let text = relus(|_| "%a".to_owned());
    let config = HostConfig { mode, query_log: true };
    let mut host = with_file(
        AnalysisHost::with_config(target::Target::n150(), Options::tt_mlir_defaults(), config),
        text.clone(),
    );
    let file = host.file(FILE).expect("file is open");
    let analyze = |host: &AnalysisHost| {
        diagnose(host, file);
        optimize_file(host);
        let analysis = host.analysis();
        let db = analysis.db();
        let funcs = ir::file_funcs(db, file);
        for &f in funcs.iter() {
            let _ = plan::cost_lower_bound(db, f);
        }
        funcs.first().map_or(0, |&f| ir::func_groups(db, f).len())
    };
    let before = analyze(&host);
    let _ = host.take_executed_queries();
    host.apply_change(edit(&text));
    let after = analyze(&host);
    format!("groups {before} -> {after}\n{}", executed_counts(&host, GROUP_MEMOS))
}

/// [`group_memos_after`] on an editor and a tuning host, which must agree.
fn group_memos_on_both_hosts(edit: impl Fn(&str) -> Change) -> String {
    let editor = group_memos_after(HostMode::Editor, &edit);
    let tuning = group_memos_after(HostMode::Tuning, &edit);
    if editor == tuning { editor } else { format!("editor:\n{editor}\ntuning:\n{tuning}") }
}

#[test]
fn inserting_an_op_reruns_the_group_memos_of_its_group_alone_on_both_hosts() {
    // A relu with a fresh name inserted before relu 600: the group holding it changes; every
    // other group keeps its first op's name and its ops, and its memos are not re-run.
    //
    // The one exception is `overrides_block` on a tuning host: it gives every named op an
    // override slot up front, so a new name grows the map of slots that every group's lookup
    // reads, and each group's lookup re-runs (32 map lookups) and comes out equal, so nothing
    // that reads it re-runs. An editor creates slots for overridden names only.
    expect![[r#"
        editor:
        groups 34 -> 34
        base_chainable_block 1
        base_fixed_block 1
        base_plans_block 1
        chain_facts_block 1
        fixed_block 1
        flow_block 1
        group_signatures 1
        lower_bound_block 1
        overrides_block 1
        written_checks_segment 1
        tuning:
        groups 34 -> 34
        base_chainable_block 1
        base_fixed_block 1
        base_plans_block 1
        chain_facts_block 1
        flow_block 1
        group_signatures 1
        lower_bound_block 1
        written_checks_segment 1"#]]
    .assert_eq(&group_memos_on_both_hosts(|text| {
        insert_before_relu(text, 600, &relu_line("fresh"))
    }));
}

#[test]
fn deleting_an_op_reruns_the_group_memos_of_its_group_alone_on_both_hosts() {
    // Relu 600 deleted: as for an insertion, the group that held it (and on a tuning host,
    // whose ops all have override slots, every group's lookup of the ops' location names,
    // which changed, comes out equal).
    expect![[r#"
        editor:
        groups 34 -> 34
        base_chainable_block 1
        base_fixed_block 1
        base_plans_block 1
        chain_facts_block 1
        fixed_block 1
        flow_block 1
        group_signatures 1
        lower_bound_block 1
        overrides_block 1
        written_checks_segment 1
        tuning:
        groups 34 -> 34
        base_chainable_block 1
        base_fixed_block 1
        base_plans_block 1
        chain_facts_block 1
        flow_block 1
        group_signatures 1
        lower_bound_block 1
        written_checks_segment 1"#]]
    .assert_eq(&group_memos_on_both_hosts(|text| {
        let start = text.find("  %600 = ").expect("fixture has %600");
        let end = start + text[start..].find('\n').expect("the op ends its line") + 1;
        Change::new().edit_file(
            FILE,
            vec![TextEdit { range: TextRange::new(start as u32, end as u32), text: String::new() }],
        )
    }));
}

#[test]
fn pasting_ops_that_start_groups_reruns_the_group_memos_of_the_pasted_ops_alone_on_both_hosts() {
    // 100 relus pasted before relu 301, some of whose names start groups: every group after
    // them moves to a later index and keeps its memos, which are keyed by its first op's
    // name; only the four groups holding pasted ops run theirs.
    expect![[r#"
        editor:
        groups 34 -> 36
        base_chainable_block 4
        base_fixed_block 4
        base_plans_block 4
        chain_facts_block 4
        fixed_block 4
        flow_block 4
        group_signatures 4
        lower_bound_block 4
        overrides_block 4
        written_checks_segment 1
        tuning:
        groups 34 -> 36
        base_chainable_block 4
        base_fixed_block 4
        base_plans_block 4
        chain_facts_block 4
        flow_block 4
        group_signatures 4
        lower_bound_block 4
        written_checks_segment 1"#]]
    .assert_eq(&group_memos_on_both_hosts(|text| {
        let lines: String = (0..100).map(|k| relu_line(&format!("p{k}"))).collect();
        insert_before_relu(text, 301, &lines)
    }));
}

#[test]
fn changing_the_target_plans_as_a_fresh_host_for_that_target_does() {
    // What depends on the target outside the queries' own reads is re-made when it changes:
    // the pinned ops the host writes into each function's input, and the solutions the
    // solve cache keeps (keyed by problem, for one target).
    // 1024x1024: 32x32 tiles, more than an n150's 8x8 worker grid can give one each.
    let text = relus(|i| if i % 3 == 0 { "%a".to_owned() } else { format!("%{}", i - 1) })
        .replace("256x256", "1024x1024")
        .replace("memref<8x8x", "memref<32x32x");
    let final_ir = |host: &AnalysisHost| {
        let file = host.file(FILE).expect("file is open");
        host.analysis().final_ir_for(file, ide::Policy::DfShardingMerge).expect("not cancelled")
    };
    let mut switched = with_file(
        AnalysisHost::new(target::Target::n150(), Options::tt_mlir_defaults()),
        text.clone(),
    );
    let on_n150 = final_ir(&switched);
    switched.apply_change(Change::new().set_target(target::Target::p150()));
    let fresh =
        with_file(AnalysisHost::new(target::Target::p150(), Options::tt_mlir_defaults()), text);
    let on_p150 = final_ir(&fresh);
    assert_ne!(on_n150, on_p150, "the fixture plans differently on the two targets");
    assert_eq!(final_ir(&switched), on_p150);
}

/// The 1200 relus of `relus` behind a two-result `ttcore.load_cached` `%w` (what const-eval
/// hands a function: results no policy places), read by the relus `readers` names, the first
/// reading `%w#0` and the others `%w#1`; every other relu reads `%a`.
fn relus_reading_cached(readers: &[usize]) -> String {
    let t = "tensor<256x256xbf16, #l>";
    let text = relus(|i| match readers.iter().position(|&r| r == i) {
        Some(0) => "%w#0".to_owned(),
        Some(_) => "%w#1".to_owned(),
        None => "%a".to_owned(),
    });
    let cached = format!(
        "  %w:2 = \"ttcore.load_cached\"(%a) <{{callee = @main_const_eval_0}}> : ({t}) -> ({t}, {t}) loc(\"w\")\n"
    );
    let body = text.find("  %0 = ").expect("fixture has relu 0");
    format!("{}{cached}{}", &text[..body], &text[body..])
}

#[test]
fn the_values_read_as_written_are_one_firewall_for_every_groups_lower_bound() {
    // The lower bound reads a const-eval result that one op reads where it is written, as it
    // reads an argument. Which values those are is one memo per function, read by every
    // group's bound: an edit that leaves the set as it was re-runs it and the edited group's
    // bound; an edit that changes it (a second reader of `%w#1`) re-runs every group's.
    let config = HostConfig { mode: HostMode::Editor, query_log: true };
    let mut host = with_file(
        AnalysisHost::with_config(target::Target::n150(), segment_chunks(), config),
        relus_reading_cached(&[0, 600]),
    );
    let file = host.file(FILE).expect("file is open");
    let bound = |host: &AnalysisHost| -> String {
        let analysis = host.analysis();
        let db = analysis.db();
        let f = ir::file_funcs(db, file)[0];
        let values = plan::values_read_as_written(db, f);
        let names: Vec<String> = values.iter().map(|(op, i)| format!("{op}#{i}")).collect();
        format!(
            "read as written: [{}], bound {} ns",
            names.join(", "),
            plan::cost_lower_bound(db, f)
        )
    };
    let before = bound(&host);
    let _ = host.take_executed_queries();

    // An attribute of relu 300 (`r300` gains a discardable attribute): the set comes out equal.
    let text = relus_reading_cached(&[0, 600]);
    let at = text.find("loc(\"r300\")").expect("fixture has r300") as u32;
    host.apply_change(Change::new().edit_file(
        FILE,
        vec![TextEdit { range: TextRange::new(at, at), text: "{note = 1} ".to_owned() }],
    ));
    let unrelated = bound(&host);
    let unrelated_runs = executed_counts(&host, &["values_read_as_written", "lower_bound_block"]);

    // Relu 900 reads `%w#1` too: the value has two readers and leaves the set.
    host.apply_change(Change::new().set_file(FILE, relus_reading_cached(&[0, 600, 900])));
    let second_reader = bound(&host);
    let second_reader_runs =
        executed_counts(&host, &["values_read_as_written", "lower_bound_block"]);
    expect![[r#"
        before: read as written: [%w#0, %w#1], bound 4270800 ns
        an attribute elsewhere: read as written: [%w#0, %w#1], bound 4270800 ns
        lower_bound_block 1
        values_read_as_written 1
        a second reader: read as written: [%w#0], bound 4269874 ns
        lower_bound_block 34
        values_read_as_written 1"#]]
    .assert_eq(&format!(
        "before: {before}\nan attribute elsewhere: {unrelated}\n{unrelated_runs}\na second reader: {second_reader}\n{second_reader_runs}"
    ));
}
