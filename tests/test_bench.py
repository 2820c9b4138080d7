"""`gpudml bench` runs end to end (one tiny workload, quick), its optional extras (onnx,
onnxruntime, matplotlib) absent as on a bare machine: results checked, files written; W1-W7
run their adapter class's strategies. The benchmark scripts of gpudml/bench/ (the GPU
session's gpu_session and gpu_tune among them) import, plan and give their usage."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import run_python

import gpudml as dml
from gpudml import caps, compiler, lab
from gpudml.bench import (
    cold_start,
    gpu_session,
    gpu_tune,
    kernel_start,
    large,
    model_start,
    pad_reverse,
    reduce_strategies,
    report,
    slice_strategies,
    suite,
    workloads,
)
from gpudml.bench.report import EXTRA_INSTALL


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
    if rows["W8"]["extra"]["copy_clock"] == "gpu":  # timestamps: every row has its GPU time
        assert all(r["kernel_ms"] > 0 for r in rows.values())
    assert report["anchors"]["copy_kernel_gbps"] > 0
    markdown = (tmp_path / "bench.md").read_text()
    assert rows["W8"]["strategy"] in ("rows", "workgroup")  # the class's Reduce strategy for short rows
    assert f"| W8 SUM last axis [8,8] | {rows['W8']['strategy']} |" in markdown
    assert "| not installed (the bench extra) |" in markdown
    assert f"onnxruntime is not installed, so its column is empty: the bench extra (onnx, onnxruntime, matplotlib) " \
           f"adds it: {EXTRA_INSTALL}" in markdown
    assert "matplotlib is not installed" in res.stdout and "pip install '.[bench]'" in res.stdout
    assert "\r" not in res.stdout + res.stderr  # no progress bar into a pipe
    assert report["anchors"]["copy_kernel_run_ms"] > 0 and report["anchors"]["empty_dispatch_run_ms"] > 0
    assert res.stdout.rstrip().endswith(f"written: {tmp_path / 'bench.md'}, {tmp_path / 'bench.json'}")


#: The strategy each of W1-W7, W13-W17, W35 runs per adapter class (docs/performance.md: the strategy table; issue #11:
#: under the GPU class every one is a GPU-class strategy).
CLASS_STRATEGIES = {
    "gpu": {"W1": "workgroup", "W2": "columns", "W3": "workgroup", "W4": "coalesced", "W5": "coalesced",
            "W6": "coalesced", "W7": "coalesced", "W13": "blocks", "W14": "blocks", "W15": "workgroup",
            "W16": "elements", "W17": "elements", "W35": "coalesced"},
    "cpu": {"W1": "rows", "W2": "partials", "W3": "rows", "W4": "stretches", "W5": "stretches",
            "W6": "stretches", "W7": "column", "W13": "blocks", "W14": "blocks", "W15": "registers",
            "W16": "runs", "W17": "runs", "W35": "interleave"},
}


@pytest.mark.slow
@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", sorted(CLASS_STRATEGIES))
def test_workloads_run_their_class_strategies(vulkan_device, adapter_class):
    """W1-W7, W13-W17, W35 at their bench sizes on a Device of each class: the strategy the bench records
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


@pytest.mark.parametrize("module", [large, pad_reverse, reduce_strategies, slice_strategies, cold_start, model_start,
                                    kernel_start, gpu_tune])
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


# ------------------------------------------------------------------ issue 34: honest figures
def test_progress_only_on_a_terminal():
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    log, tty = io.StringIO(), Terminal()
    for stream in (log, tty):
        progress = report.Progress(2, stream)
        progress.step("anchors")
        progress.step("W1")
    assert log.getvalue() == ""  # a file or a pipe: no carriage-return bars
    assert tty.getvalue().startswith("\r[") and tty.getvalue().endswith("2/2 W1" + " " * 38 + "\n")


def _row(id_, logical_bytes, wall, gpu, copies):
    return report.Row(id_, "t", logical_bytes, device_ms=wall, kernel_ms=gpu,
                      extra={"copy_samples_ms": copies, "copy_clock": "gpu", "empty_samples_ms": [0.1, 0.3]})


def test_ratios_use_one_copy_baseline_per_run_on_the_gpu_clock():
    """x copy comes from GPU ms and the run's one copy baseline (the median of every copy timed
    between the workloads): it ranks as GB/s does, whatever each row's neighbouring copies were.
    Wall-clock ms (submit and wait) never enter it where there are timestamps."""
    class Yard:
        copy_gbps_bytes = 2 * (64 << 20)

    rows = [_row("W1", 64 << 20, 40.0, 30.0, [60.0, 60.0]),   # slower neighbours would flatter it
            _row("W2", 64 << 20, 38.0, 27.0, [20.0, 21.0])]
    rows[0].extra["x_copy_paired"] = 0.75
    anchors = suite.run_baselines(rows, Yard())
    assert anchors["copy_kernel_run_ms"] == 40.5 and anchors["copy_kernel_run_clock"] == "gpu"
    assert anchors["empty_dispatch_run_ms"] == pytest.approx(0.2)
    table = report.render_markdown(rows, anchors, "test adapter")
    assert "Clock: GPU timestamps" in table and "copy baseline 40.5 ms" in table
    header = next(line for line in table.splitlines() if line.startswith("| workload"))
    assert [c.strip() for c in header.strip("|").split("|")] == list(report.COLUMNS)
    cells = {line.split("|")[1].strip().split()[0]: [c.strip() for c in line.strip("|").split("|")]
             for line in table.splitlines() if line.startswith("| W")}
    x_copy = {k: float(v[5]) for k, v in cells.items()}
    gbps = (64 << 20) / 30.0 / 1e6
    assert x_copy["W1"] == pytest.approx(gbps / anchors["copy_kernel_run_gbps"], abs=0.006)
    assert x_copy["W2"] > x_copy["W1"]  # the faster kernel has the higher ratio
    assert cells["W1"][3] == "30.000" and cells["W1"][2] == "40.000"  # GPU ms and wall ms side by side
    assert float(cells["W1"][7]) == pytest.approx(40.0 / 0.2, rel=1e-3)  # x empty: wall over wall
    assert cells["W1"][6] == "0.75" and cells["W2"][6] == "—"  # x copy paired: the row's own pairs


def test_the_paired_ratio_divides_each_sample_by_its_own_copy():
    """A run whose adapter flips between two speeds: the pairs keep the ratio (the medians of
    the samples and of the copies, from different speeds, would not)."""
    copy_bytes = 2 * (64 << 20)
    samples, copies = [20.0, 40.0, 40.0, 20.0, 40.0], [10.0, 20.0, 20.0, 10.0, 20.0]
    assert report.paired_ratio(samples, copies, copy_bytes, copy_bytes) == pytest.approx(0.5)
    assert report.paired_ratio(samples, [10.0] * 5, copy_bytes, copy_bytes) == pytest.approx(0.25)
    assert report.paired_ratio([], [], 1, 1) is None and report.paired_ratio([1.0, None], [1.0, 1.0], 1, 1) is None


def test_ratios_on_an_adapter_without_timestamps_say_wall_clock():
    class Yard:
        copy_gbps_bytes = 2 * (64 << 20)

    rows = [_row("W1", 64 << 20, 40.0, None, [50.0])]
    rows[0].extra["copy_clock"] = "wall"
    anchors = suite.run_baselines(rows, Yard())
    table = report.render_markdown(rows, anchors, "llvmpipe via OpenGL")
    assert "no GPU timestamps on this adapter: GB/s and x copy from wall ms" in table
    line = next(line for line in table.splitlines() if line.startswith("| W1"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[3] == "—"  # no GPU ms
    assert float(cells[5]) == pytest.approx(((64 << 20) / 40.0) / (2 * (64 << 20) / 50.0), abs=0.006)


def test_hints_name_commands_that_work():
    """gpudml is not on PyPI: the extra's hint says how to install it from a checkout or a wheel."""
    assert "gpudml[bench]" not in report.EXTRA_INSTALL + report.EXTRA_HINT + report.NOT_INSTALLED
    assert "pip install '.[bench]'" in report.EXTRA_INSTALL
    assert f"dist/gpudml-{dml.__version__}-py3-none-any.whl[bench]" in report.EXTRA_INSTALL


# ------------------------------------------------------------------ issue 42: onnxruntime's column
#: The workloads with no onnxruntime counterpart (reverse_subsequences has no ONNX operator; the
#: chains, graphs and per-call rows time gpudml against itself; ONNX has no im2col, the
#: bench's opset-13 Resize has no antialias, its ONNX models are float32 (and opset 13 has no
#: attention: W59-W62), and its one-output OnnxNode cannot hold TopK's two outputs (nor training-mode
#: BatchNormalization's, W69); W58, W63 and W67 (a contrib MatMulNBits node) give onnxruntime
#: themselves; W64-W65's int8 GEMM beside its float32 peer is gpudml against itself; ONNX has no
#: pooling gradient operator: W68; W70 is a training step, which onnxruntime's inference sessions
#: do not run).
NO_ONNX = {"W7", "W9", "W10", "W11", "W12", "W24", "W28", "W34", "W36", "W37", "W38", "W39", "W44", "W45", "W46", "W47",
           "W48", "W49", "W58", "W59", "W60", "W61", "W62", "W63", "W64", "W65", "W66", "W67", "W68", "W69", "W70"}


@pytest.mark.slow
@pytest.mark.any_class  # the harness's phases: the MLP's GPU-class kernels run in test_onnx_session
def test_model_start_times_cold_and_warm_processes_beside_onnxruntime():
    """python -m gpudml.bench.model_start on the small MLP, one round: a cold process (both
    disk caches empty), a warm one and onnxruntime's, every phase timed, the second session
    of a process warm, gpudml's output within the session tolerance of onnxruntime's."""
    pytest.importorskip("onnxruntime")
    from gpudml.onnx.session import TOLERANCE

    result = model_start.measure("mlp", "vulkan", rounds=1)
    samples = result["samples"]
    assert set(samples) == {"gpudml, cold", "gpudml, caches warm", "onnxruntime"}
    for name in ("gpudml, cold", "gpudml, caches warm"):
        (s,) = samples[name]
        assert s["dispatches"] == 4 and min(s[k] for k in ("construct", "first run", "warm first run")) > 0
        assert s["construct + first run"] == pytest.approx(s["construct"] + s["first run"])
    assert samples["onnxruntime"][0]["construct + first run"] > 0
    assert result["difference"] <= TOLERANCE


@pytest.mark.slow
@pytest.mark.any_class  # the harness's phases: the MLP's GPU-class kernels run in test_onnx_session
def test_kernel_start_probes_a_model_kernel_in_a_cold_process():
    """python -m gpudml.bench.kernel_start on the small MLP: its kernels recorded without a
    dispatch, one of them created and dispatched in a fresh process with every cache off,
    each phase timed."""
    (row,) = kernel_start.measure("mlp", "vulkan", only=[0])
    assert row["index"] == 0 and row["lines"] > 0 and row["operator"]
    assert min(row[k] for k in ("create", "first dispatch", "second dispatch")) > 0


@pytest.mark.any_class  # onnxruntime alone: no gpudml kernel
def test_every_workload_onnx_model_loads_in_onnxruntime():
    """Each workload's one-node ONNX model (the one its onnxruntime column times, built from
    shapes alone: no case data, no bench run) is a model onnxruntime's CPU provider accepts,
    with the workload's input shape. W14's once named an initializer and the output both `y`,
    which onnxruntime refuses ("Duplicate definition of name"), so its column said Fail."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    assert {w.id for w in workloads.WORKLOADS if w.onnx is None} == NO_ONNX
    for w in workloads.WORKLOADS:
        if w.onnx is None:
            continue
        node = w.onnx()
        session = ort.InferenceSession(node.model(), providers=["CPUExecutionProvider"])
        (x,), (y,) = session.get_inputs(), session.get_outputs()
        assert (x.name, x.shape, y.name) == ("x", list(node.x_shape), "output"), w.id


def test_onnx_nodes_refuse_clashing_names_and_wrong_data():
    """An OnnxNode names its output apart from its inputs, and checks the case's data against
    the shapes it declares (the bench's model is the one the test above loads)."""
    node = workloads.OnnxNode("Add", (2, 2), {"y": (2, 2)})
    with pytest.raises(ValueError, match=r"initializer 'y' has shape \[3\], the node declares \[2, 2\]"):
        node.model({"y": np.zeros(3, np.float32)})
    with pytest.raises(ValueError, match=r"data for \['z'\], which are not its data initializers \(\['y'\]\)"):
        node.model({"z": np.zeros((2, 2), np.float32)})
    with pytest.raises(ValueError, match="names must be distinct, got \\['x', 'output', 'output'\\]"):
        workloads.OnnxNode("Add", (2, 2), {"output": (2, 2)}).model()
    ort = pytest.importorskip("onnxruntime")
    y = np.arange(4, dtype=np.float32).reshape(2, 2)
    session = ort.InferenceSession(node.model({"y": y}), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"x": y})[0], 2 * y)


# ------------------------------------------------------------------ issue 48: a training step
def test_training_step_workload_checks_its_first_step(vulkan_device):
    """W70: the checked call is the CNN's first training step (its loss the float64
    reference's within GAMMA), its dispatches counted from one step's profile (forward,
    gradients, 7 Adam steps of 3 kernels each, the counter), and every later call trains on."""
    case, got, strategy = workloads.first_call(vulkan_device, next(w for w in workloads.WORKLOADS if w.id == "W70"),
                                               True)
    assert report.check_result(got.numpy(), case.expected, case.compare) and strategy
    assert 35 <= case.dispatches <= 40
    assert case.device_fn().numpy().item() < got.numpy().item()  # the second step's loss is lower
