"""`gpudml bench` runs end to end (one tiny workload, quick), its optional extras (onnx,
onnxruntime, matplotlib) absent as on a bare machine: results checked, files written; W1-W7
run their adapter class's strategies. The benchmark scripts of gpudml/bench/ (the GPU
session's gpu_session and gpu_tune among them) import, plan and give their usage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_python

import gpudml as dml
from gpudml import caps, compiler, lab
from gpudml.bench import (
    cold_start,
    gpu_session,
    gpu_tune,
    large,
    pad_reverse,
    reduce_strategies,
    report,
    slice_strategies,
    workloads,
)


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


#: The strategy each of W1-W7 runs per adapter class (docs/performance.md: the strategy table; issue #11:
#: under the GPU class every one is a GPU-class strategy).
CLASS_STRATEGIES = {
    "gpu": {"W1": "workgroup", "W2": "columns", "W3": "workgroup", "W4": "coalesced", "W5": "coalesced",
            "W6": "coalesced", "W7": "coalesced"},
    "cpu": {"W1": "rows", "W2": "partials", "W3": "rows", "W4": "stretches", "W5": "stretches",
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


def test_gpu_tune_sweeps_variants_that_plan_on_a_gpu():
    """Pure: every variant gpudml.bench.gpu_tune sweeps plans under its strategy on a GPU's caps
    (it runs in the rare sessions with a lent GPU, where a bad option name or value would cost
    the sweep), and each case's summary names its fastest correct variant."""
    gpu = caps.profile("gpu")
    for title, desc, strategy, options in gpu_tune.CASES:
        for option_set in options:
            program = compiler.compile(desc, gpu, strategy=strategy, options=option_set)
            assert program.strategy == strategy, (title, option_set)
    rows = [lab.Row("coalesced", None, {}, True, 2.0), lab.Row("coalesced", None, {"block": "stretches"}, True, 1.6),
            lab.Row("coalesced", None, {"block": "x"}, False, 1.0)]
    assert gpu_tune.fastest(rows) == "  fastest: coalesced block=stretches 1.6000 ms, 1.25x as fast as coalesced"
    assert gpu_tune.fastest(rows[2:]) == "  fastest: none correct"


def test_gpu_session_names_its_parts_and_tests(capsys):
    """The GPU session's script (run only where a GPU is lent): its usage, its parts checked,
    and the tests it runs exist (the conformance kit and each operator's own file)."""
    assert gpu_session.main(["--help"]) == 0 and "PARTS" in capsys.readouterr().out
    assert gpu_session.main([]) == 2
    assert gpu_session.main(["/nonexistent", "lab,wrong"]) == 2
    assert "unknown parts wrong" in capsys.readouterr().err
    root = Path(__file__).resolve().parent.parent
    found = gpu_session._tests(root)
    assert found and all(Path(f).is_file() for f in found)
    assert str(root / "tests" / "test_reduce.py") in found


@pytest.mark.parametrize("module", [large, pad_reverse, reduce_strategies, slice_strategies, cold_start, gpu_tune])
def test_bench_scripts_give_their_usage(module, capsys):
    """Each script of gpudml/bench/ (run as python -m gpudml.bench.NAME) imports and shows its usage."""
    with pytest.raises(SystemExit) as stop:
        module.main(["--help"])
    assert stop.value.code == 0 and "usage:" in capsys.readouterr().out


def test_gpu_tune_times_the_bench_cases_three_ways(device):
    """gpudml.bench.gpu_tune's last table: a bench case's kernel time taken back-to-back, synced
    and after a copy, each a positive median, on an adapter with timestamps."""
    if not device.caps.has("timestamp-query"):
        pytest.skip("the table needs GPU timestamps")
    table = gpu_tune.timing_methods(device, 2, ids=("W8",)).splitlines()
    assert table[1].split() == ["case", "back-to-back", "synced", "after", "copy"]
    case, *ms = table[2].split()
    assert case == "W8" and len(table) == 3 and len(ms) == 3 and all(float(v) > 0 for v in ms)


def test_gpu_tune_times_reverse_subsequences_by_layout_of_its_lengths(device):
    """gpudml.bench.gpu_tune's W7 table: one row per layout of the lengths, each a positive time."""
    if not device.caps.has("timestamp-query"):
        pytest.skip("the table needs GPU timestamps")
    table = gpu_tune.w7_lengths(device, 1, shape=(2, 64, 16)).splitlines()
    assert table[0].startswith("W7's kernel by layout of its lengths, [2, 64, 16] float32")
    rows = [line.split("  ")[1:] for line in table[1:]]
    assert [r[0].strip() for r in rows] == ["per column", "per batch", "all 64"]
    assert all(float(line.split()[-4]) > 0 and line.endswith(" GB/s") for line in table[1:])
