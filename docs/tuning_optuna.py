"""A tuning loop with Optuna over the ttnn_analyzer Python package (docs/tuning.md).

Opens a model (TTNN, or TTIR which is imported first), picks the ops that cost the most under
the default plan, and lets Optuna's TPE sampler choose, per op, whether to leave it to the
optimizer or pin where its result lives (one of the kinds its legal layouts have:
`dram:interleaved`, `l1:interleaved`, `l1:height_sharded`, ...). Every trial sets the whole
overrides text at once and asks for the estimated cost; the analysis re-derives only what
changed. The best overrides are written in tt-mlir's option syntax.

    pip install optuna ttnn-analyzer   # the wheel: see docs/tuning.md
    python docs/tuning_optuna.py ../shared/corpus/ttir-models/llama_attention.mlir \
        --trials 60 --ops 12 -o llama_attention.overrides
"""

import argparse
import sys
import time

import optuna

from ttnn_analyzer import Analysis, AnalyzerError

LEAVE = "optimizer"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="a TTNN or TTIR .mlir file (read, never written)")
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--ops", type=int, default=12, help="how many of the costliest ops to tune")
    ap.add_argument("--policy", default="df-sharding-merge")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", help="write the best overrides here (default: stdout)")
    args = ap.parse_args()

    started = time.perf_counter()
    a = Analysis.open(args.model, policy=args.policy)
    baseline = a.cost()
    plan = a.plan()
    print(
        f"{a.name}: {len(plan['ops'])} ops{' (imported from TTIR)' if a.imported else ''}, "
        f"default plan {baseline['total_ns']} ns, as written {baseline['written_ns']} ns, "
        f"lower bound {baseline['lower_bound_ns']} ns ({time.perf_counter() - started:.2f} s)"
    )

    # The search space: for the costliest named ops with a choice, each kind of layout their
    # legal layouts include, as a partial override (the optimizer still picks the grid).
    space: dict[str, list[str]] = {}
    for op in sorted(plan["ops"], key=lambda o: -o["time_ns"]):
        if len(space) == args.ops:
            break
        try:
            legal = a.layouts(op["op"])
        except AnalyzerError:
            continue
        kinds = sorted({f"{l['buffer']}:{l['memory_layout']}" for l in legal["layouts"] if l["memory_layout"]})
        if legal["fixed"] or len(kinds) < 2:
            continue
        space[op["op"]] = [LEAVE] + kinds
    print(f"tuning {len(space)} ops: " + ", ".join(f"{k} ({len(v) - 1} kinds)" for k, v in space.items()))

    def overrides_for(choice: dict[str, str]) -> str:
        return "".join(f"override-output-layout={op}={p}\n" for op, p in sorted(choice.items()) if p != LEAVE)

    def objective(trial: optuna.Trial) -> float:
        choice = {op: trial.suggest_categorical(op, kinds) for op, kinds in space.items()}
        try:
            a.set_overrides(overrides_for(choice))
        except AnalyzerError as e:
            # An override the analyzer refuses (its code says why) is a failed trial.
            trial.set_user_attr("error", e.code)
            raise optuna.TrialPruned() from e
        return float(a.cost()["total_ns"])

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=args.seed))
    # The default plan is the first trial, so the best is never worse than it.
    study.enqueue_trial({op: LEAVE for op in space})
    tuning = time.perf_counter()
    study.optimize(objective, n_trials=args.trials)
    elapsed = time.perf_counter() - tuning

    best = overrides_for(study.best_params)
    a.set_overrides(best)
    tuned = a.cost()["total_ns"]
    gain = 100.0 * (tuned - baseline["total_ns"]) / baseline["total_ns"]
    print(
        f"{args.trials} trials in {elapsed:.2f} s ({1000 * elapsed / max(1, args.trials):.1f} ms each): "
        f"best {tuned} ns ({gain:+.2f}% vs. the default plan)"
    )
    text = f"# tuned with Optuna over {a.name}: {baseline['total_ns']} ns -> {tuned} ns\n" + a.overrides()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
