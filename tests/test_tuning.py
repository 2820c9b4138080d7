"""Autotuning (API.md section 7, runtime/tuning.py): off unless asked; the first compile of a
kind times its strategies and writes the cache file, a second process reuses the choice
without timing; stale, foreign and corrupt files are handled; two threads tune a kind once.
Timings are never asserted, only which strategies were timed and what was kept."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import same_gpudml_env
from isolated import limited_device

import gpudml as dml
from gpudml import cli
from gpudml.ops import reduce
from gpudml.runtime import tuning

PROBE = """
import json, numpy as np, gpudml as dml
dev = dml.Device(adapter="vulkan")
x = np.random.default_rng(0).random((2048, 64), dtype=np.float32)
got = dml.reduce(x, "sum", [0], device=dev)
assert np.allclose(got, x.sum(0, keepdims=True), rtol=1e-5)
print(json.dumps([[c["strategy"], timed, sorted(c["ms"])] for c, timed in dev._ctx.tuner.used.values()]))
"""


def _probe(tmp_path, **env) -> list:
    res = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120,
                         env=same_gpudml_env(**env), cwd=str(Path(__file__).parent))
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1]), res.stderr


def test_first_process_tunes_second_reuses(tmp_path):
    cache = tmp_path / "tuning.json"
    first, _ = _probe(tmp_path, GPUDML_AUTOTUNE="1", GPUDML_TUNING_CACHE=str(cache))
    assert len(first) == 1 and first[0][1] is True  # timed all
    assert first[0][2] == ["columns", "rows", "split", "workgroup"]
    data = json.loads(cache.read_text())
    (section,) = data["sections"].values()
    assert section["adapter"].endswith("via Vulkan") and section["gpudml"] == dml.__version__
    (choice,) = section["choices"].values()
    assert choice["strategy"] == first[0][0] and set(choice["ms"]) == {"columns", "rows", "split", "workgroup"}
    second, _ = _probe(tmp_path, GPUDML_AUTOTUNE="1", GPUDML_TUNING_CACHE=str(cache))
    assert second == [[first[0][0], False, first[0][2]]]  # the cached choice, nothing timed


def test_off_unless_asked(tmp_path, monkeypatch):
    cache = tmp_path / "tuning.json"
    used, _ = _probe(tmp_path, GPUDML_AUTOTUNE="", GPUDML_TUNING_CACHE=str(cache))
    assert used == [] and not cache.exists()
    monkeypatch.setenv("GPUDML_AUTOTUNE", "1")
    assert dml.Device(adapter="vulkan", autotune=False).autotune is False
    monkeypatch.delenv("GPUDML_AUTOTUNE")
    assert dml.Device(adapter="vulkan").autotune is False and dml.Device(adapter="vulkan", autotune=True).autotune


def _tuned_device(adapter, tmp_path, monkeypatch, name="tuning.json"):
    monkeypatch.setenv("GPUDML_TUNING_CACHE", str(tmp_path / name))
    dev = limited_device(adapter)  # a tuner of its own
    dev.autotune = True
    return dev


def _split_or_rows(dev):
    x = np.random.default_rng(1).random((1024, 96), dtype=np.float32)
    np.testing.assert_allclose(dml.reduce(x, "sum", [0], device=dev), x.sum(0, keepdims=True), rtol=1e-5)


def test_a_corrupt_file_is_ignored_with_one_warning(adapter, tmp_path, monkeypatch):
    (tmp_path / "tuning.json").write_text("{ not json")
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    with pytest.warns(RuntimeWarning, match="ignoring the tuning cache .*tuning.json"):
        _split_or_rows(dev)
    data = json.loads((tmp_path / "tuning.json").read_text())  # replaced by a valid one
    assert data["format"] == 1 and len(data["sections"]) == 1


def test_foreign_and_stale_sections(adapter, tmp_path, monkeypatch):
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    _split_or_rows(dev)
    path = tmp_path / "tuning.json"
    data = json.loads(path.read_text())
    (name, section), = data["sections"].items()
    (key, choice), = section["choices"].items()
    # another adapter's section holds a choice this one cannot use; an older gpudml's too
    foreign = {**section, "adapter": "Some Other GPU", "choices": {key: {**choice, "strategy": "bogus"}}}
    stale = {**section, "gpudml": "0.0.1", "choices": {key: {**choice, "strategy": "bogus"}}}
    data["sections"] = {"Some Other GPU|x|0.1.0|t": foreign, name.replace(dml.__version__, "0.0.1"): stale}
    path.write_text(json.dumps(data))
    dev2 = _tuned_device(adapter, tmp_path, monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _split_or_rows(dev2)
    assert any("for another gpudml version or other templates" in str(w.message) for w in caught)
    (c, timed), = dev2._ctx.tuner.used.values()
    assert timed and c["strategy"] in dml.ops.reduce.SPEC.strategies  # timed afresh, the others untouched
    assert len(json.loads(path.read_text())["sections"]) == 3


def test_a_cached_strategy_that_cannot_run_is_tuned_again(adapter, tmp_path, monkeypatch):
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    _split_or_rows(dev)
    path = tmp_path / "tuning.json"
    data = json.loads(path.read_text())
    for section in data["sections"].values():
        for choice in section["choices"].values():
            choice["strategy"] = "column"  # not a Reduce strategy
    path.write_text(json.dumps(data))
    dev2 = _tuned_device(adapter, tmp_path, monkeypatch)
    _split_or_rows(dev2)
    (c, timed), = dev2._ctx.tuner.used.values()
    assert timed and c["strategy"] in dml.ops.reduce.SPEC.strategies


def test_two_threads_tune_a_kind_once(adapter, tmp_path, monkeypatch):
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    calls = []
    original = tuning._time_strategies

    def counting(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(tuning, "_time_strategies", counting)
    desc = reduce.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, [2048, 48]), "sum", [0])
    op = dev.create_operator(desc)
    chosen = []
    threads = [threading.Thread(target=lambda: chosen.append(dev.compile_operator(op).strategy)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(set(chosen)) == 1 and len(chosen) == 4


def test_the_default_stays_unless_another_is_clearly_faster():
    assert tuning.pick({"rows": 10.0, "split": 9.8}, "rows") == "rows"  # 2%: within the noise
    assert tuning.pick({"rows": 10.0, "split": 9.0}, "rows") == "split"
    assert tuning.pick({"rows": 9.0, "split": 10.0}, "rows") == "rows"
    assert tuning.pick({"a": 10.0, "b": 9.9, "c": 5.0}, "b") == "c"


def test_kinds_differ_by_layout_and_size():
    caps = dml.caps.profile("vulkan-cpu")
    from gpudml import compiler

    def kind(shape, axes, dtype=dml.DataType.FLOAT32):
        return tuning.kind_of(compiler.compile(reduce.infer_output(dml.TensorDesc(dtype, shape), "sum", axes), caps))[0]

    assert kind([2048, 64], [0]) == kind([2100, 64], [0])  # same kind, same size bucket
    assert kind([2048, 64], [0]) != kind([64, 2048], [1])  # rows, not columns
    assert kind([2048, 64], [0]) != kind([2048 * 16, 64], [0])  # a bigger bucket
    assert kind([2048, 64], [0]) != kind([2048, 64], [0], dml.DataType.FLOAT16)


def test_tune_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPUDML_TUNING_CACHE", str(tmp_path / "tuning.json"))
    monkeypatch.setenv("GPUDML_ADAPTER_CLASS", "cpu")  # (the default it names: rows)
    assert cli.main(["tune", "--only", "W8"]) == 0
    out = capsys.readouterr().out
    assert f"cache: {tmp_path / 'tuning.json'}" in out
    assert "W8 SUM last axis [8,8], Reduce: " in out and "the default rows)" in out
    assert cli.main(["tune", "--only", "W0"]) == 2
    assert "--only: W0 not a workload (W1, W2" in capsys.readouterr().err
