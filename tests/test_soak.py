"""Soak and lifetimes: many executes in one process with flat memory; Tensors and compiled
operators give their buffers back.

The default run executes 10,000 mixed operators on the first adapter (a few seconds) and
2,000 on each other adapter. Other counts (GPUDML_SOAK_OTHER_EXECUTES defaults to a fifth
of GPUDML_SOAK_EXECUTES), and a JSON report of the figures:

    GPUDML_SOAK_EXECUTES=100000 GPUDML_SOAK_REPORT=soak.json \\
        python -m pytest -q tests/test_soak.py -k soak -s

Memory is measured after a warm-up (the first WARMUP executes fill the pipeline,
compiled-operator and bind-group caches and the buffer pool) and again at the end:
host RSS (/proc/self/statm), the pool's allocation counter and idle bytes, and the live
wgpu buffers and bind groups (wgpu.diagnostics). All must be flat.
"""

from __future__ import annotations

import gc
import json
import os
import resource

import numpy as np
import pytest
import wgpu
from conftest import ADAPTERS, assert_bits_equal, get_device, random_bits
from isolated import limited_device

import gpudml as dml
from gpudml import reference
from gpudml.ops.reduce import infer_output as reduce_desc
from gpudml.ops.slice1 import infer_output as slice_desc

WARMUP = 1000


def soak_counts(environ) -> tuple[int, int]:
    """(executes on the first adapter, on each other adapter)."""
    first = int(environ.get("GPUDML_SOAK_EXECUTES", "10000"))
    return first, int(environ.get("GPUDML_SOAK_OTHER_EXECUTES", first // 5))


SOAK_EXECUTES, OTHER_ADAPTER_EXECUTES = soak_counts(os.environ)
RSS_SLACK_BYTES = 16 << 20  # Python's allocator and wgpu's caches may settle a little


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def wgpu_counts() -> dict[str, int]:
    counts = wgpu.diagnostics.object_counts.get_dict()
    return {"buffers": counts["Buffer"]["count"], "buffer_bytes": counts["Buffer"].get("resource_mem", 0),
            "bind_groups": counts["BindGroup"]["count"]}


def snapshot(device) -> dict[str, int]:
    gc.collect()
    memory = device._ctx.pool
    return {"rss": rss_bytes(), "allocations": memory.allocations, "pooled_bytes": memory.pooled_bytes,
            **wgpu_counts()}


def workload(device, rng):
    """Mixed operations: (label, callable -> result, expected). numpy and Tensor paths,
    the four operators, several dtypes and ranks, a compiled operator with given outputs,
    a batch."""
    x8 = random_bits(rng, np.uint8, (7, 33))
    x16 = random_bits(rng, np.float16, (5, 6, 7))
    x32 = rng.random((40, 25), dtype=np.float32)
    x64 = random_bits(rng, np.int64, (3, 4, 5, 2))
    xi = rng.integers(-1000, 1000, size=(64, 9)).astype(np.int32)
    lengths = rng.integers(0, 9, size=(1, 33)).astype(np.uint32)
    t32, t64 = device.tensor(x32), device.tensor(x64)
    slice_op = slice_desc(dml.TensorDesc(dml.DataType.FLOAT32, x32.shape), [1, 0], [39, 25], [-2, 3])
    compiled = device.compile_operator(device.create_operator(slice_op))
    out = device.empty(slice_op.output_tensor)
    argmax = reduce_desc(dml.TensorDesc(dml.DataType.INT32, xi.shape), "argmax", [1], "int64")
    compiled_argmax = device.compile_operator(device.create_operator(argmax))

    def batched():
        with device.batch():
            a = dml.slice(t32, [0, 0], [40, 25], [1, -1])
            b = dml.pad(a, [1, 0], [0, 2], mode="symmetric")
        return b.numpy()

    return [
        ("slice u8 numpy", lambda: dml.slice(x8, [1, 2], [6, 30], [-1, 4], device=device),
         reference.slice(x8, [1, 2], [6, 30], [-1, 4])),
        ("pad f16 numpy", lambda: dml.pad(x16, [1, 0, 2], [0, 3, 1], mode="reflection", device=device),
         reference.pad(x16, [1, 0, 2], [0, 3, 1], "reflection")),
        ("reverse u8 numpy", lambda: dml.reverse_subsequences(x8, lengths, 0, device=device),
         reference.reverse_subsequences(x8, lengths, 0)),
        ("reduce f32 tensor", lambda: dml.reduce(t32, "max", [0]).numpy(), reference.reduce(x32, "max", [0])),
        ("pad i64 tensor", lambda: dml.pad(t64, [0, 1, 0, 1], [1, 0, 2, 0], value=-5).numpy(),
         reference.pad(x64, [0, 1, 0, 1], [1, 0, 2, 0], "constant", -5)),
        ("slice f32 compiled into an output", lambda: compiled.execute([t32], outputs=[out])[0].numpy(),
         reference.slice(x32, [1, 0], [39, 25], [-2, 3])),
        ("argmax i32 compiled numpy", lambda: compiled_argmax.execute([xi])[0],
         reference.reduce(xi, "argmax", [1], "int64")),
        ("reduce i32 sum numpy", lambda: dml.reduce(xi, "sum", [0], device=device), reference.reduce(xi, "sum", [0])),
        ("tensor round trip", lambda: device.tensor(x16).numpy(), x16),
        ("batch of two", batched, reference.pad(x32[:, ::-1], [1, 0], [0, 2], "symmetric")),
    ]


def soak(device, executes: int) -> dict:
    rng = np.random.default_rng(11)
    work = workload(device, rng)
    counts = {label: 0 for label, _, _ in work}

    def run(n):
        for i in range(n):
            label, call, want = work[i % len(work)]
            got = call()
            if want.dtype.kind == "f":
                assert_bits_equal(got, want)
            else:
                np.testing.assert_array_equal(got, want)
            counts[label] += 1

    run(min(WARMUP, executes))
    before = snapshot(device)
    run(executes - min(WARMUP, executes))
    after = snapshot(device)
    weight = {"tensor round trip": 0, "batch of two": 2}  # operator executes per operation
    return {"adapter": device.adapter_name, "operations": executes,
            "operator_executes": sum(n * weight.get(label, 1) for label, n in counts.items()),
            "warmup": min(WARMUP, executes), "before": before, "after": after, "per_operation": counts}


def _check_flat(report: dict) -> None:
    before, after = report["before"], report["after"]
    assert after["allocations"] == before["allocations"], report
    assert after["pooled_bytes"] == before["pooled_bytes"], report
    assert after["buffers"] == before["buffers"] and after["buffer_bytes"] == before["buffer_bytes"], report
    # A compiled operator keeps a bind group per combination of buffers it has run on (bounded:
    # BIND_GROUP_CACHE_SIZE); which pooled buffers a staged input takes depends on the pool the
    # tests before left, so an operation may meet a new combination after the warm-up: one each
    # at most (seen: +3 under pytest-xdist's order), never a group per execute.
    assert after["bind_groups"] <= before["bind_groups"] + len(report["per_operation"]), report
    assert after["rss"] - before["rss"] < RSS_SLACK_BYTES, report


@pytest.mark.slow
@pytest.mark.parametrize("adapter_name", ADAPTERS)
def test_soak_mixed_executes_with_flat_memory(adapter_name):
    executes = SOAK_EXECUTES if adapter_name == ADAPTERS[0] else OTHER_ADAPTER_EXECUTES
    report = soak(get_device(adapter_name), executes)
    path = os.environ.get("GPUDML_SOAK_REPORT")
    if path:
        reports = json.load(open(path)) if os.path.exists(path) else []
        with open(path, "w") as f:
            json.dump(reports + [report], f, indent=1)
    print(json.dumps(report))
    _check_flat(report)


def test_soak_counts_are_read_separately():
    assert soak_counts({}) == (10_000, 2_000)
    assert soak_counts({"GPUDML_SOAK_EXECUTES": "100000"}) == (100_000, 20_000)
    assert soak_counts({"GPUDML_SOAK_EXECUTES": "50", "GPUDML_SOAK_OTHER_EXECUTES": "7"}) == (50, 7)


# ------------------------------------------------------------------ lifetimes
def test_dead_tensors_return_their_buffers(adapter):
    dev = limited_device(adapter)  # a private pool over the shared wgpu device
    memory = dev._ctx.pool
    gc.collect()
    live = wgpu_counts()["buffers"]
    tensors = [dev.tensor(np.full(n, n, np.uint16)) for n in (10, 100, 1000, 10_000)]
    assert memory.allocations == 4 and memory.pooled_bytes == 0
    sizes = sum(t.buffer.size for t in tensors)
    tensors[0].free()
    tensors[0].free()  # a second free is harmless
    del tensors
    gc.collect()
    assert memory.pooled_bytes == sizes
    again = dev.tensor(np.zeros(1000, np.uint16))  # reuses a pooled buffer
    assert memory.allocations == 4
    del again
    gc.collect()
    memory.trim()
    assert memory.pooled_bytes == 0
    assert wgpu_counts()["buffers"] == live  # destroyed, not only pooled


def test_numpy_executes_keep_nothing(adapter):
    """numpy in, numpy out: the staged inputs and the output go back to the pool."""
    dev = limited_device(adapter)
    memory = dev._ctx.pool
    x = np.arange(1000, dtype=np.float32)
    dml.slice(x, [0], [1000], [-1], device=dev)
    gc.collect()
    pooled, allocations = memory.pooled_bytes, memory.allocations
    for _ in range(20):
        dml.pad(x, [3], [4], mode="edge", device=dev)
        dml.slice(x, [0], [1000], [-1], device=dev)
    gc.collect()
    assert memory.allocations <= allocations + 2  # pad's own buffers, once
    memory.trim()
    assert memory.pooled_bytes == 0 and pooled > 0


def test_compiled_operators_free_scratch_and_uniforms(adapter):
    dev = limited_device(adapter)
    memory = dev._ctx.pool
    x = np.ones((3, 200_000), np.float32)
    desc = reduce_desc(dml.TensorDesc(dml.DataType.FLOAT32, x.shape), "sum", [1])
    gc.collect()
    live = wgpu_counts()["buffers"] - len(dev._ctx.transfers._staging_free)  # (readback staging: GL, at most 4)
    compiled = dev.compile_operator(dev.create_operator(desc))
    assert len(compiled.wgsl) == 2 and compiled._scratch  # the partials strategy: scratch buffers
    scratch = sum(b.size for b in compiled._scratch)
    np.testing.assert_array_equal(compiled.execute([x])[0], [[200_000]] * 3)
    gc.collect()
    pooled = memory.pooled_bytes
    del compiled
    gc.collect()
    assert memory.pooled_bytes == pooled + scratch  # scratch back in the pool
    memory.trim()
    assert wgpu_counts()["buffers"] - len(dev._ctx.transfers._staging_free) == live  # and the uniform buffers are gone


def test_caches_are_bounded(vulkan_device):
    from gpudml.device import compiled as compiled_module
    from gpudml.device import device as device_module

    dev = limited_device(ADAPTERS[0])
    for n in range(1, device_module.OPERATOR_CACHE_SIZE + 40):
        dml.slice(np.zeros(4, np.uint8), [0], [4], output_sizes=[1 + n % 4], device=dev)
        dml.pad(np.zeros(2, np.uint8), [n], [0], device=dev)
    assert len(dev._operators) == device_module.OPERATOR_CACHE_SIZE
    desc = slice_desc(dml.TensorDesc(dml.DataType.UINT8, [4]), [0], [4])
    compiled = dev.compile_operator(dev.create_operator(desc))
    inputs = [dev.tensor(np.zeros(4, np.uint8)) for _ in range(compiled_module.BIND_GROUP_CACHE_SIZE + 10)]
    for t in inputs:  # a new input buffer each time: a new bind group each time
        compiled.execute([t])
    assert len(compiled._groups) <= compiled_module.BIND_GROUP_CACHE_SIZE
