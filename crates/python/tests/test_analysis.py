"""The ttnn_analyzer package against the repository's sample model: opening, plans, costs,
overrides, layouts, diagnostics, TTIR import, errors and the GIL.

Run from a venv with the built wheel installed: `pytest crates/python/tests`.
"""

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import ttnn_analyzer
from ttnn_analyzer import Analysis, AnalyzerError

REPO = Path(__file__).resolve().parents[3]
FFN = REPO / "test-data" / "samples" / "ffn.mlir"
MIXED_TTIR = REPO / "test-data" / "import" / "mixed_ops.mlir"

RELU_TTIR = """func.func @main(%x: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  %0 = "ttir.relu"(%x) : (tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("act")
  return %0 : tensor<64x64xbf16>
}
"""


def relu_chain_ttnn(n: int) -> str:
    """A TTNN function of `n` relus in a row on a 1024x1024 DRAM tensor, each with a loc."""
    layout = (
        "#ttnn.ttnn_layout<(d0, d1) -> (d0, d1), <1x1>, "
        "memref<32x32x!ttcore.tile<32x32, bf16>, #ttnn.buffer_type<dram>>, <interleaved>>"
    )
    ty = f"tensor<1024x1024xbf16, #l>"
    lines = [f"#l = {layout}", f"func.func @main(%x: {ty}) -> {ty} {{"]
    prev = "%x"
    for i in range(n):
        lines.append(f'  %{i} = "ttnn.relu"({prev}) : ({ty}) -> {ty} loc("relu{i}")')
        prev = f"%{i}"
    lines.append(f"  return {prev} : {ty}")
    lines.append("}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def ffn() -> Analysis:
    return Analysis.open(str(FFN))


def test_opening_a_ttnn_file_plans_every_op_with_its_time(ffn: Analysis):
    assert ffn.name == str(FFN)
    assert not ffn.imported
    assert ffn.policy == "df-sharding-merge"
    plan = ffn.plan()
    kinds = [op["kind"] for op in plan["ops"]]
    assert kinds == ["ttnn.matmul", "ttnn.add", "ttnn.gelu", "ttnn.matmul", "ttnn.add", "ttnn.relu"]
    assert [op["op"] for op in plan["ops"]][0] == "ffn.up"
    assert all(op["time_ns"] > 0 for op in plan["ops"])
    assert all(0 < op["bound_ns"] for op in plan["ops"])
    assert plan["ops_in_l1"] == sum(
        1 for op in plan["ops"] if op["planned"] and op["planned"]["buffer"] == "l1"
    )
    # Every op of a chain names the chain, which lists the op.
    for op in plan["ops"]:
        if op["chain"] is not None:
            chain = plan["chains"][op["chain"]["id"]]
            assert op["op"] in chain["ops"]


def test_the_cost_beats_the_ir_as_written_and_respects_the_lower_bound(ffn: Analysis):
    cost = ffn.cost()
    assert cost["policy"] == "df-sharding-merge"
    assert cost["lower_bound_ns"] <= cost["total_ns"] < cost["written_ns"]
    assert cost["total_ns"] == cost["op_ns"] + cost["reshard_ns"] + cost["spill_ns"]
    other = ffn.cost("df-sharding")
    assert other["policy"] == "df-sharding"


def test_an_override_changes_the_plan_and_is_written_in_tt_mlir_syntax(ffn: Analysis):
    default = ffn.cost()["total_ns"]
    ffn.set_override("ffn.act", "dram")
    assert ffn.overrides() == "override-output-layout=ffn.act=dram\n"
    planned = {op["op"]: op["planned"] for op in ffn.plan()["ops"]}
    assert planned["ffn.act"]["buffer"] == "dram"
    assert ffn.cost()["total_ns"] > default
    ffn.clear_override("ffn.act")
    assert ffn.overrides() == ""
    assert ffn.cost()["total_ns"] == default


def test_a_layout_from_layouts_pins_exactly_that_layout(ffn: Analysis):
    layouts = ffn.layouts("ffn.act")
    assert layouts["kind"] == "ttnn.gelu"
    sharded = [l for l in layouts["layouts"] if l["memory_layout"] not in (None, "interleaved")]
    assert sharded, "gelu on 256x4096 has sharded candidates"
    pick = sharded[-1]
    ffn.set_override("ffn.act", pick["params"])
    planned = {op["op"]: op["planned"] for op in ffn.plan()["ops"]}["ffn.act"]
    assert (planned["memory_layout"], planned["grid"], planned["shard_shape"]) == (
        pick["memory_layout"],
        pick["grid"],
        pick["shard_shape"],
    )
    assert ffn.layouts("ffn.act")["override"].startswith("full: exactly")


def test_a_malformed_override_raises_with_its_code_and_keeps_the_overrides(ffn: Analysis):
    ffn.set_override("ffn.act", "dram")
    with pytest.raises(AnalyzerError) as err:
        ffn.set_override("ffn.up", "9x9:l2:sideways")
    assert err.value.code
    assert err.value.message in str(err.value)
    assert err.value.diagnostics and err.value.diagnostics[0]["source"] == "overrides"
    assert ffn.overrides() == "override-output-layout=ffn.act=dram\n"


def test_an_override_on_no_op_raises_unknown_override_target(ffn: Analysis):
    with pytest.raises(AnalyzerError) as err:
        ffn.set_override("no.such.op", "dram")
    assert err.value.code == "unknown-override-target"
    assert ffn.overrides() == ""


def test_fields_that_would_splice_into_the_overrides_text_are_refused(ffn: Analysis):
    with pytest.raises(ValueError):
        ffn.set_override("ffn.act", "dram,ffn.up=dram")
    with pytest.raises(ValueError):
        ffn.set_override("ffn.act", "dram", option="no-such-option")


def test_layouts_of_an_unknown_op_raise_unknown_op(ffn: Analysis):
    with pytest.raises(AnalyzerError) as err:
        ffn.layouts("nope")
    assert err.value.code == "unknown-op"


def test_final_ir_carries_the_planned_layouts(ffn: Analysis):
    text = ffn.final_ir()
    assert text.count('"ttnn.matmul"') == 2
    assert "#l1" in text or "<l1>" in text
    assert ffn.final_ir("df-sharding").count('"ttnn.gelu"') == 1


def test_the_policy_can_be_switched(ffn: Analysis):
    ffn.policy = "df-sharding"
    assert ffn.policy == "df-sharding"
    assert ffn.cost()["policy"] == "df-sharding"
    ffn.policy = "greedy"
    assert ffn.cost()["policy"] == "greedy"
    with pytest.raises(ValueError):
        ffn.policy = "annealing"


def test_a_file_with_errors_has_diagnostics_and_refuses_to_plan():
    broken = FFN.read_text().replace('"ttnn.gelu"(%1)', '"ttnn.gelu"(%1', 1)
    a = Analysis.from_text(broken, name="broken.mlir")
    diags = a.diagnostics()
    errors = [d for d in diags if d["severity"] == "error"]
    assert errors and errors[0]["source"] == "file"
    with pytest.raises(AnalyzerError) as err:
        a.cost()
    assert err.value.code == errors[0]["code"]
    assert err.value.message == errors[0]["message"]


def test_ttir_text_is_imported_before_it_is_analysed():
    a = Analysis.from_text(RELU_TTIR, name="relu.mlir")
    assert a.imported
    assert '"ttnn.relu"' in a.text
    assert [op["op"] for op in a.plan()["ops"] if op["kind"] == "ttnn.relu"] == ["act"]
    assert ttnn_analyzer.import_ttir(RELU_TTIR).count('"ttnn.relu"') == 1


def test_a_ttir_file_is_imported_when_opened():
    a = Analysis.open(str(MIXED_TTIR))
    assert a.imported
    assert a.cost()["total_ns"] > 0


def test_an_op_the_import_cannot_lower_raises_unsupported_op():
    text = RELU_TTIR.replace('"ttir.relu"', '"ttir.no_such_op"')
    with pytest.raises(AnalyzerError) as err:
        ttnn_analyzer.import_ttir(text)
    assert err.value.code == "unsupported-op"
    with pytest.raises(AnalyzerError) as err:
        Analysis.from_text(text)
    assert err.value.code == "unsupported-op"
    assert err.value.diagnostics[0]["source"] == "import"


def test_a_missing_file_raises_os_error_and_a_bad_target_value_error_or_os_error(tmp_path):
    with pytest.raises(OSError):
        Analysis.open(str(tmp_path / "missing.mlir"))
    with pytest.raises(OSError):
        Analysis.open(str(FFN), target=str(tmp_path / "no-target.toml"))
    with pytest.raises(ValueError):
        Analysis.open(str(FFN), policy="annealing")
    assert Analysis.open(str(FFN), target="p150").cost()["total_ns"] > 0


def test_other_threads_run_while_the_analysis_computes():
    a = Analysis.from_text(relu_chain_ttnn(400), name="chain.mlir")
    inside = threading.Event()
    done = threading.Event()

    def work():
        inside.set()
        a.final_ir()
        done.set()

    ticks = 0
    worker = threading.Thread(target=work)
    started = time.perf_counter()
    worker.start()
    inside.wait()
    while not done.is_set():
        ticks += 1
        time.sleep(0)
    worker.join()
    elapsed = time.perf_counter() - started
    # Holding the GIL, the call would leave this thread a handful of ticks at most; released,
    # it ticks all along. The work takes tens of milliseconds even in a release build.
    assert elapsed > 0.01, f"the work took only {elapsed:.4f} s: make the graph larger"
    assert ticks > 100, f"{ticks} ticks in {elapsed:.3f} s"



SHARING = """
import sys, threading, time
from ttnn_analyzer import Analysis, AnalyzerError

a = Analysis.open(sys.argv[1])
stop = time.monotonic() + 2.0
failures = []

def fail():
    while time.monotonic() < stop:
        try:
            a.set_override("ffn.up", "9x9:l2")
        except AnalyzerError as e:
            failures.append(e.code)

def read():
    while time.monotonic() < stop:
        assert a.overrides() == "" and a.name == sys.argv[1]
        repr(a)

threads = [threading.Thread(target=fail), threading.Thread(target=read)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(failures), sorted(set(failures)))
"""


def test_threads_sharing_an_analysis_take_turns_even_when_calls_fail():
    # One thread keeps failing (its error is built while it holds the analysis), the other
    # keeps reading; a reader that waited for the analysis holding the GIL would deadlock
    # the whole interpreter, so the threads run in a child process with a time limit.
    out = subprocess.run(
        [sys.executable, "-c", SHARING, str(FFN)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    count, codes = out.stdout.split(" ", 1)
    assert int(count) > 0 and codes.strip() == "['invalid-layout-parameter']"
