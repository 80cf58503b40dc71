//! Scratch profile (not committed).
use ide::{AnalysisHost, Change, Options, OverrideOption, Policy};
use std::time::Instant;
fn main() {
    let text = std::fs::read_to_string(std::env::var("ZZ_FILE").unwrap_or("/tmp/g10k.mlir".into()))
        .unwrap();
    let mut host = AnalysisHost::for_tuning(target::Target::n150(), Options::tt_mlir_defaults());
    host.apply_change(Change::new().set_file("b.mlir", text));
    let file = host.file("b.mlir").unwrap();
    let policy = Policy::DfShardingMerge;
    let t = Instant::now();
    let _ = host.analysis().cost(file, policy).unwrap();
    let _ = host.analysis().final_ir_for(file, policy).unwrap();
    println!("scratch {:?}", t.elapsed());
    if std::env::var_os("ZZ_STOP").is_some() {
        return;
    }
    let report = host.analysis().plan_report(file).unwrap();
    let mut picks = Vec::new();
    for d in report.ops.iter().step_by(400) {
        let Some(l) = host.analysis().op_layouts(file, &d.op).unwrap() else { continue };
        if l.fixed {
            continue;
        }
        if let Some(p) = l
            .layouts
            .iter()
            .find(|c| Some(*c) != d.planned.as_ref())
            .and_then(ide::full_layout_params)
        {
            picks.push((d.op.clone(), p));
        }
    }
    let _ = host.take_executed_counts(0);
    for (op, p) in picks.iter().cycle().take(30) {
        host.set_override(op, OverrideOption::OutputLayout, p);
        let a = host.analysis();
        a.with_db(move |db| {
            let func = ir::file_funcs(db, file)[0];
            let mut last = Instant::now();
            let mut lap = |name: &str| {
                let e = last.elapsed();
                last = Instant::now();
                print!("{name} {:.1}ms  ", e.as_secs_f64() * 1e3);
            };
            let _ = ir::func_ops(db, func);
            lap("first");
            let g = plan::chains(db, func);
            lap("chains");
            for c in g.chains.iter().copied() {
                let _ = plan::solve_chain(db, c);
            }
            lap("solve_all");
            let _ = plan::schedule(db, func);
            lap("schedule");
            let _ = plan::merge_decisions(db, func);
            lap("merge");
            let _ = plan::plan_for(db, func, policy);
            lap("plan_for");
            let _ = plan::plan_cost(db, func, policy);
            lap("plan_cost");
            let _ = plan::written_cost(db, func);
            lap("written_cost");
            let _ = rewrite::final_ir_for(db, file, policy);
            lap("final_ir");
            println!();
        })
        .unwrap();
        println!("{:?}", host.take_executed_counts(0).0);
        drop(a);
        let t = Instant::now();
        host.clear_override(op, None);
        let _ = host.analysis().cost(file, policy).unwrap();
        let _ = host.analysis().final_ir_for(file, policy).unwrap();
        println!("  clear {:?}", t.elapsed());
        let _ = host.take_executed_counts(0);
    }
}
