"""`gpudml bench` runs end to end (one tiny workload, quick), its optional extras (onnx,
onnxruntime, matplotlib) absent as on a bare machine: results checked, files written; W1-W7
run their adapter class's strategies. The GPU session's scripts (bench/gpu_tune.py,
bench/gpu_session.sh) plan and parse."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_python

import gpudml as dml
from gpudml import caps, compiler, lab
from gpudml.bench import report, workloads


@pytest.mark.slow
def test_bench_runs_without_its_optional_extras(tmp_path, adapter):
    code = ("import sys\n"
            "for name in ('onnx', 'onnxruntime', 'matplotlib'):\n"
            "    sys.modules[name] = None  # importing them raises ImportError\n"
            "from gpudml.cli import main\n"
            f"sys.exit(main(['--adapter', {adapter!r}, 'bench', '--quick', '--only', 'W8,W9,W10', "
            f"'--out', {str(tmp_path)!r}]))\n")
    (tmp_path / "bench.png").write_bytes(b"an earlier run's chart")
    res = run_python(code, timeout=600)
    assert not (tmp_path / "bench.png").exists()  # not left beside this run's results
    report = json.loads((tmp_path / "bench.json").read_text())
    rows = {r["id"]: r for r in report["rows"]}
    assert set(rows) == {"W8", "W9", "W10"} and not any("WRONG" in r["note"] for r in rows.values())
    assert rows["W10"]["note"].startswith("1 dispatch, GPU ") and "x 20 calls" in rows["W10"]["note"]
    w9 = rows["W9"]["extra"]
    assert 0 < w9["host_per_op_ms"] < w9["per_op_ms"] and "of it recording" in rows["W9"]["note"]
    assert rows["W8"]["device_ms"] > 0 and rows["W8"]["ort_ms"] is None
    assert report["anchors"]["copy_kernel_gbps"] > 0
    markdown = (tmp_path / "bench.md").read_text()
    assert rows["W8"]["strategy"] in ("rows", "workgroup")  # the class's Reduce strategy for short rows
    assert f"| W8 SUM last axis [8,8] | {rows['W8']['strategy']} |" in markdown
    assert "| not installed (pip install 'gpudml[bench]') |" in markdown
    assert "onnxruntime is not installed, so its column is empty: pip install 'gpudml[bench]'" in markdown
    assert "matplotlib is not installed" in res.stdout
    assert res.stdout.rstrip().endswith(f"written: {tmp_path / 'bench.md'}, {tmp_path / 'bench.json'}")


#: The strategy each of W1-W7 runs per adapter class (README: the strategy table; issue #11:
#: under the GPU class every one is a GPU-class strategy).
CLASS_STRATEGIES = {
    "gpu": {"W1": "workgroup", "W2": "columns", "W3": "workgroup", "W4": "coalesced", "W5": "coalesced",
            "W6": "coalesced", "W7": "coalesced"},
    "cpu": {"W1": "rows", "W2": "split", "W3": "rows", "W4": "stretches", "W5": "stretches",
            "W6": "stretches", "W7": "column"},
}


@pytest.mark.slow
@pytest.mark.parametrize("adapter_class", sorted(CLASS_STRATEGIES))
def test_workloads_run_their_class_strategies(vulkan_device, adapter_class):
    """W1-W7 at their bench sizes on a Device of each class: the strategy the bench records
    for each (from the dispatches of its checked call) is that class's, and the result is
    right."""
    device = dml.Device(adapter=vulkan_device.adapter_name, adapter_class=adapter_class)
    seen = {}
    for w in workloads.WORKLOADS:
        if w.id in CLASS_STRATEGIES[adapter_class]:
            case, got, seen[w.id] = workloads.first_call(device, w, True)
            assert report.check_result(got.numpy(), case.expected, case.compare), w.id
    assert seen == CLASS_STRATEGIES[adapter_class]


def _bench_script(name: str):
    """bench/NAME.py as a module (the scripts are not part of the package)."""
    path = Path(__file__).resolve().parent.parent / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpu_tune_sweeps_variants_that_plan_on_a_gpu():
    """Pure: every variant bench/gpu_tune.py sweeps plans under its strategy on a GPU's caps
    (it runs in the rare sessions with a lent GPU, where a bad option name or value would cost
    the sweep), and each case's summary names its fastest correct variant."""
    tune = _bench_script("gpu_tune")
    gpu = caps.profile("gpu")
    for title, desc, strategy, options in tune.CASES:
        for option_set in options:
            program = compiler.compile(desc, gpu, strategy=strategy, options=option_set)
            assert program.strategy == strategy, (title, option_set)
    rows = [lab.Row("coalesced", None, {}, True, 2.0), lab.Row("coalesced", None, {"chunk": "stretches"}, True, 1.6),
            lab.Row("coalesced", None, {"chunk": "x"}, False, 1.0)]
    assert tune.fastest(rows) == "  fastest: coalesced chunk=stretches 1.6000 ms, 1.25x as fast as coalesced"
    assert tune.fastest(rows[2:]) == "  fastest: none correct"


def test_gpu_session_script_parses():
    res = subprocess.run(["bash", "-n", str(Path(__file__).resolve().parent.parent / "bench" / "gpu_session.sh")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_gpu_tune_times_the_bench_cases_three_ways(device):
    """bench/gpu_tune.py's last table: a bench case's kernel time taken back-to-back, synced
    and after a copy, each a positive median, on an adapter with timestamps."""
    if not device.caps.has("timestamp-query"):
        pytest.skip("the table needs GPU timestamps")
    table = _bench_script("gpu_tune").timing_methods(device, 2, ids=("W8",)).splitlines()
    assert table[1].split() == ["case", "back-to-back", "synced", "after", "copy"]
    case, *ms = table[2].split()
    assert case == "W8" and len(table) == 3 and len(ms) == 3 and all(float(v) > 0 for v in ms)


def test_gpu_tune_times_reverse_subsequences_by_layout_of_its_lengths(device):
    """bench/gpu_tune.py's W7 table: one row per layout of the lengths, each a positive time."""
    if not device.caps.has("timestamp-query"):
        pytest.skip("the table needs GPU timestamps")
    table = _bench_script("gpu_tune").w7_lengths(device, 1, shape=(2, 64, 16)).splitlines()
    assert table[0].startswith("W7's kernel by layout of its lengths, [2, 64, 16] float32")
    rows = [line.split("  ")[1:] for line in table[1:]]
    assert [r[0].strip() for r in rows] == ["per column", "per batch", "all 64"]
    assert all(float(line.split()[-4]) > 0 and line.endswith(" GB/s") for line in table[1:])
