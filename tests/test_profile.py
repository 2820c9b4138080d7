"""Profiling (docs/experimenting.md): `device.profile()` times every dispatch it sees, batched or
not, with GPU timestamps (the wall clock where an adapter has none); GPUDML_PROFILE=1 prints a
summary of the whole process at exit. Timings are never asserted, only that they exist."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import run_python
from isolated import limited_device

import gpudml as dml
from gpudml.runtime import profiler


def _three_operators(dev, x):
    """A two-pass reduction (`partials` or `columns`), a slice and a padding: four dispatches."""
    y = dml.reduce(x, "sum", [0])
    z = dml.slice(x, [0, 0], list(x.shape), [1, -1])
    w = dml.pad(z, [1, 1], [1, 1])
    return y, z, w


def test_rows_add_up_to_the_batch(device):
    x = device.tensor(np.random.default_rng(0).random((512, 512), dtype=np.float32))
    with device.profile() as prof:
        with device.batch():
            y, z, w = _three_operators(device, x)
    reduce, movement = ("partials", "stretches") if device.caps.is_software else ("columns", "coalesced")
    assert [(r["operator"], r["strategy"], r["dispatch"]) for r in prof.rows] == [
        ("Reduce", reduce, 0), ("Reduce", reduce, 1), ("Slice1", movement, 0), ("Padding", movement, 0)]
    assert all(r["gpu_ms"] > 0 and r["bytes"] > 0 and r["clock"] == "gpu" for r in prof.rows)
    assert prof.rows[2]["bytes"] == 2 * 512 * 512 * 4  # the slice binds its input and its output
    assert prof.gpu_ms == pytest.approx(sum(r["gpu_ms"] for r in prof.rows))
    # the results are what they would be unprofiled
    np.testing.assert_allclose(y.numpy(), x.numpy().sum(0, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(w.numpy()[1:-1, 1:-1], x.numpy()[:, ::-1])
    summary = prof.summary()
    assert summary.startswith(f"gpudml profile on {device.adapter_name}: 4 dispatches")
    assert re.search(rf"\n  Reduce +{reduce} +1 +1 ", summary)


def test_unbatched_and_numpy_executes(device):
    x = np.arange(64, dtype=np.int32).reshape(8, 8)
    with device.profile() as prof:
        for _ in range(3):
            dml.slice(x, [0, 0], [8, 8], [-1, 1], device=device)
    assert len(prof.rows) == 3 and {r["operator"] for r in prof.rows} == {"Slice1"}
    with device.profile() as empty:
        pass
    assert empty.rows == [] and "0 dispatches" in empty.summary()


def test_a_profile_sees_its_own_device_only(adapter):
    one, other = dml.Device(adapter=adapter), dml.Device(adapter=adapter, feature_level="FL_4_0")
    assert one.shares_memory_with(other)
    x = np.ones((4, 4), np.float32)
    with one.profile() as outer, other.profile() as inner:
        dml.reduce(x, "max", device=one)
        dml.reduce(x, "max", device=other)
        dml.reduce(x, "max", device=other)
    assert len(outer.rows) == 1 and len(inner.rows) == 2


def test_more_dispatches_than_one_query_set(device, monkeypatch):
    monkeypatch.setattr(profiler, "SLOTS", 4)
    dev = limited_device(device.adapter_name)  # a profiler of its own, made with 4 slots
    x = dev.tensor(np.arange(16, dtype=np.float32))
    with dev.profile() as prof:
        with dev.batch():
            y = x
            for _ in range(11):
                y = dml.slice(y, [0], [16], [-1])
    assert len(prof.rows) == 11 and all(r["gpu_ms"] > 0 for r in prof.rows)
    np.testing.assert_array_equal(y.numpy(), np.arange(16, dtype=np.float32)[::-1])


def test_the_wall_clock_where_there_are_no_timestamps(adapter):
    dev = limited_device(adapter, features=frozenset())
    x = dev.tensor(np.arange(16, dtype=np.float32))
    with dev.profile() as prof:
        with dev.batch():
            a = dml.slice(x, [0], [16], [-1])
            b = dml.reduce(a, "sum")
    assert [r["clock"] for r in prof.rows] == ["wall", "wall"] and all(r["gpu_ms"] > 0 for r in prof.rows)
    assert float(b.numpy()[0]) == 120.0


def test_gpudml_profile_prints_a_summary_at_exit():
    code = ("import numpy as np, gpudml as dml\n"
            "dev = dml.Device(adapter='vulkan', adapter_class='cpu')\n"
            "for _ in range(5):\n"
            "    dml.pad(np.ones((8, 8), np.float32), [1, 1], [1, 1], device=dev)\n")
    res = run_python(code, GPUDML_PROFILE="1")
    assert "gpudml profile on llvmpipe" in res.stderr and "5 dispatches" in res.stderr
    assert re.search(r"\n  Padding +stretches +0 +5 ", res.stderr)


def _columns(line: str) -> list[tuple[int, int]]:
    """(start, end) of each cell of a summary line (the header's two-word cells as one)."""
    line = line.replace("total ms", "total_ms").replace("mean ms", "mean_ms")
    return [m.span() for m in re.finditer(r"\S+", line)]


def test_the_summary_columns_line_up(device):
    """issue #42: a real profile with a fused kernel's long name (`Fused(...>...)`) beside short
    ones: every column starts (names) or ends (figures) at the same place on every line, the
    header's included; the widths come from the content."""
    g = dml.Graph(device)
    e = g.input([8, 8], dtype=np.float32, name="x")
    fused = g.compile([dml.sigmoid(dml.exp(e) * 2 + 1)])
    x = np.arange(64, dtype=np.float32).reshape(8, 8) / 64
    with device.profile() as prof:
        fused({"x": x})
        dml.slice(x, [0, 0], [8, 8], [-1, 1], device=device)
    lines = prof.summary().splitlines()[1:]
    names = [line.split()[0] for line in lines[1:]]
    assert len(lines) == 3 and any(n.startswith("Fused(") and len(n) > 20 for n in names) and "Slice1" in names
    spans = [_columns(line) for line in lines]
    assert all(len(s) == 7 for s in spans), lines
    for col in range(7):
        edge = 0 if col < 2 else 1  # names left-aligned, figures right-aligned
        assert len({s[col][edge] for s in spans}) == 1, (col, lines)
    widest = max(len(n) for n in names)
    assert spans[0][1][0] == 2 + widest + 2  # the operator column is as wide as its widest name
