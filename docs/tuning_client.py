#!/usr/bin/env python3
"""A minimal tuning client for `ttnn-analyzer session` (standard library only).

It opens a TTNN file in one long-running session, reads the legal layouts of one op, tries a
few output-layout overrides for it with one `batch` request (each candidate is applied on top
of the current overrides, costed, and reverted by the session), and prints the estimated cost
of each next to the default plan's.

    python3 docs/tuning_client.py [FILE] [OP]

FILE defaults to test-data/samples/ffn.mlir and OP to the first op of the plan that has a
sharded legal layout. The binary is `$TTNN_ANALYZER` if set, else `ttnn-analyzer` on PATH,
else a release or debug build in ./target (or `$CARGO_TARGET_DIR`).
"""

import json
import os
import shutil
import subprocess
import sys


def find_binary():
    if os.environ.get("TTNN_ANALYZER"):
        return os.environ["TTNN_ANALYZER"]
    on_path = shutil.which("ttnn-analyzer")
    if on_path:
        return on_path
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    for profile in ("release", "debug"):
        candidate = os.path.join(target, profile, "ttnn-analyzer")
        if os.path.exists(candidate):
            return candidate
    sys.exit("ttnn-analyzer not found: set TTNN_ANALYZER or build it with cargo build --release")


class Session:
    """One `ttnn-analyzer session` process: a JSON request per line in, a reply per line out."""

    def __init__(self, binary):
        self.proc = subprocess.Popen(
            [binary, "session"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def request(self, cmd, **fields):
        self.proc.stdin.write(json.dumps({"cmd": cmd, **fields}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            sys.exit(f"the session ended while answering `{cmd}`")
        reply = json.loads(line)
        if not reply.get("ok"):
            sys.exit(f"`{cmd}` failed: {reply.get('error')}")
        return reply

    def close(self):
        self.request("shutdown")
        self.proc.stdin.close()
        self.proc.wait()


def full_params(layout):
    """A legal layout as full `override-output-layout` parameters: grid:buffer:layout:page:dtype."""
    rows, cols = layout["grid"]
    parts = [f"{rows}x{cols}", layout["buffer"], layout["memory_layout"], layout["page"]]
    if layout.get("dtype"):
        parts.append(layout["dtype"])
    return ":".join(parts)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "test-data/samples/ffn.mlir"
    session = Session(find_binary())
    opened = session.request("open", path=path)
    print(f"opened {opened['file']} ({opened['errors']} errors)")

    default = session.request("cost")
    print(f"default plan: {default['total_ns']} ns "
          f"(as written {default['written_ns']} ns, lower bound {default['lower_bound_ns']} ns)")

    # The op to tune: named on the command line, else the first with a sharded legal layout.
    plan = session.request("plan")
    op, layouts = None, None
    names = [sys.argv[2]] if len(sys.argv) > 2 else [d["op"] for d in plan["ops"]]
    for name in names:
        reply = session.request("layouts", op=name)
        sharded = [l for l in reply["layouts"] if l["memory_layout"] not in (None, "interleaved")]
        if not reply["fixed"] and sharded:
            op, layouts = name, reply["layouts"]
            break
    if op is None:
        sys.exit("no op with a sharded legal layout")
    planned = next(d["planned"] for d in plan["ops"] if d["op"] == op)
    print(f"\n{op}: {len(layouts)} legal layouts; planned: {planned['short'] if planned else '-'}")
    for layout in layouts[:6]:
        print(f"  {layout['short']:<14} shard {layout['shard_shape']}  -> {full_params(layout)}")
    if len(layouts) > 6:
        print(f"  ... and {len(layouts) - 6} more")

    # Candidates: a few full layouts (DRAM, the largest and the smallest sharded grid) and
    # two partial ones that leave the grid to the optimizer.
    sharded = [l for l in layouts if l["memory_layout"] not in (None, "interleaved")]
    candidates = [full_params(layouts[0]), full_params(sharded[0]), full_params(sharded[-1])]
    candidates += ["l1:height_sharded", "l1:width_sharded"]
    sets = [[{"op": op, "params": p}] for p in candidates]
    results = session.request("batch", sets=sets)["results"]

    print(f"\n{'override-output-layout':<44} {'estimated ns':>12} {'vs default':>10}")
    best = None
    for params, result in zip(candidates, results):
        note = "  (" + "; ".join(result["override_errors"]) + ")" if "override_errors" in result else ""
        delta = (result["total_ns"] / default["total_ns"] - 1.0) * 100.0
        print(f"{op + '=' + params:<44} {result['total_ns']:>12} {delta:>+9.2f}%{note}")
        if best is None or result["total_ns"] < best[1]:
            best = (params, result["total_ns"])

    # The batch restored the overrides: the plan and cost are the default ones again.
    after = session.request("cost")
    print(f"\nafter the batch: {after['total_ns']} ns (unchanged: {after['total_ns'] == default['total_ns']})")
    if best and best[1] < default["total_ns"]:
        print(f"best: override-output-layout={op}={best[0]} "
              f"({(best[1] / default['total_ns'] - 1.0) * 100.0:+.2f}%)")
    else:
        print("no candidate beats the default plan")
    stats = session.request("stats")
    print(f"queries executed in this session: {sum(stats['executed'].values())}")
    session.close()


if __name__ == "__main__":
    main()
