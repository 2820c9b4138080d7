"""Kernels in HLSL (issue 33, docs/hlsl.md): `Kernel.from_hlsl` through both compilers (Slang,
the default, through slangpy's library; glslang's glslangValidator), the examples of the docs
page on every adapter with the lab's comparison, batches, profiles, graphs, the command line,
and every bad input refused before GPU work. setup.sh installs both compilers (the hlsl extra
and glslang-tools), so nothing here is skipped."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import gpudml as dml
from gpudml import cli, hlsl, lab
from gpudml.runtime.tensor import Tensor

pytestmark = pytest.mark.any_class  # kernels of their own (no strategies): the same under either adapter class

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "hlsl-examples"
ADD = (EXAMPLES / "add.hlsl").read_text()
REDUCE = (EXAMPLES / "reduce_rows.hlsl").read_text()
F32 = dml.DataType.FLOAT32

SCALE = """
StructuredBuffer<float> x : register(t0);
RWStructuredBuffer<float> y : register(u0);
cbuffer Constants : register(b0) { uint n; float alpha; float2 shift; float4 more; };
[numthreads(64, 1, 1)]
void main(uint3 id : SV_DispatchThreadID) {
    if (id.x < n) y[id.x] = alpha * x[id.x] + shift.y + more.w;
}
"""


def _wave(device) -> bool:
    return "subgroup" in device.caps.features


@pytest.fixture(params=hlsl.COMPILERS)
def compiler(request) -> str:
    return request.param


def _quiet(device):
    """A check that no GPU work was recorded or submitted meanwhile."""
    ctx = device._ctx
    ctx.recorder.flush()
    before = ctx.recorder.submissions
    return lambda: ctx.recorder._pending is None and ctx.recorder.submissions == before


# ---------------------------------------------------------------------------- the examples
def test_both_compilers_are_installed():
    assert hlsl.available() == ("slang", "glslang")
    assert hlsl.default_compiler() == "slang"


def test_elementwise_example(device, compiler):
    k = dml.Kernel.from_hlsl(ADD, compiler=compiler)
    assert k.compiler == compiler and k.interface.workgroup_size == (64, 1, 1)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(1000, dtype=np.float32), rng.standard_normal(1000, dtype=np.float32)
    out, = k([a, b], outputs=[dml.TensorDesc(F32, [1000])], grid=(16,), constants={"count": 1000}, device=device)
    np.testing.assert_array_equal(out, a + b)


@pytest.mark.parametrize("wave", [False, True], ids=["tree", "wave"])
def test_reduction_example(device, wave):
    if wave and not _wave(device):
        with pytest.raises(dml.UnsupportedError, match="wave intrinsics"):
            dml.Kernel.from_hlsl(REDUCE, defines={"USE_WAVE": 1})([np.ones((4, 8), np.float32)],
                                                                   outputs=[dml.TensorDesc(F32, [4])], grid=(4,),
                                                                   device=device)
        return
    k = dml.Kernel.from_hlsl(REDUCE, defines={"USE_WAVE": int(wave)})
    x = np.random.default_rng(2).standard_normal((300, 257), dtype=np.float32)
    constants = np.zeros(22, np.uint32)
    constants[20:22] = (300, 257)  # count, red_count after the five uint4 arrays
    call = k.call(device, [dml.TensorDesc(F32, [300, 257])], [dml.TensorDesc(F32, [300])], (300,),
                  uniform_bytes=constants.tobytes())
    out, = call.execute([x])
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5, atol=1e-4)


def test_reduction_example_with_glslang(device):
    k = dml.Kernel.from_hlsl(REDUCE, compiler="glslang")
    x = np.random.default_rng(3).standard_normal((64, 100), dtype=np.float32)
    data = np.zeros(22, np.uint32)
    data[20:22] = (64, 100)
    out, = k.call(device, [dml.TensorDesc(F32, [64, 100])], [dml.TensorDesc(F32, [64])], (64,),
                  uniform_bytes=data.tobytes()).execute([x])
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5, atol=1e-4)
    with pytest.raises(dml.UnsupportedError, match="compile this kernel with Slang"):
        dml.Kernel.from_hlsl(REDUCE, defines={"USE_WAVE": 1}, compiler="glslang")


def test_the_lab_compares_the_examples_with_gpudmls_kernels(device):
    add = dml.ElementWiseAdd1OperatorDesc(*(dml.TensorDesc(F32, [4096]),) * 3)
    rows = lab.run(device, add, reps=1, copy_bytes=1 << 16, hlsl=[("add.hlsl", ADD)])
    mine = [r for r in rows if r.hlsl]
    assert [r.strategy for r in mine] == ["hlsl"] and len(rows) > 1
    assert all(r.correct for r in rows), lab.table(rows, "add")
    assert mine[0].gpu_ms is not None and mine[0].ratio_to_copy is not None
    assert "add.hlsl" in lab.table(rows, "add")
    x = dml.TensorDesc(F32, [1024, 256])
    reduce = dml.ReduceOperatorDesc(dml.ReduceFunction.SUM, x, dml.TensorDesc(F32, [1024, 1]), (1,))
    variants = [("tree.hlsl", REDUCE)]
    rows = lab.run(device, reduce, reps=1, copy_bytes=1 << 16, hlsl=variants, grid=(1024,))
    assert all(r.correct for r in rows), lab.table(rows, "reduce")
    if _wave(device):
        rows = lab.run(device, reduce, reps=1, copy_bytes=1 << 16, hlsl=[("wave.hlsl", REDUCE)], grid=(1024,),
                       defines={"USE_WAVE": 1})
        assert all(r.correct for r in rows), lab.table(rows, "reduce")


def test_a_wrong_or_broken_kernel_is_a_row(device):
    add = dml.ElementWiseAdd1OperatorDesc(*(dml.TensorDesc(F32, [256]),) * 3)
    wrong = ADD.replace("a_tensor[i] + b_tensor[i]", "a_tensor[i] - b_tensor[i]")
    broken = ADD.replace("uint i = id.x;", "uint i = id.x")
    rows = lab.run(device, add, reps=1, copy_bytes=1 << 16, hlsl=[("wrong.hlsl", wrong), ("broken.hlsl", broken)])
    by_file = {r.hlsl: r for r in rows if r.hlsl}
    assert not by_file["wrong.hlsl"].correct and by_file["wrong.hlsl"].first_wrong
    broken_row = by_file["broken.hlsl"]
    assert not broken_row.correct and "unexpected token" in broken_row.error and "kernel.hlsl:13" in broken_row.error
    assert all(r.correct for r in rows if not r.hlsl)
    assert len(lab.failures(rows)) == 2


def test_the_docs_page_runs_as_written(monkeypatch):
    monkeypatch.chdir(ROOT)
    page = (ROOT / "docs" / "hlsl.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/hlsl.md", "exec"), namespace)
    np.testing.assert_array_equal(namespace["out"], np.arange(1000, dtype=np.float32) + 1)
    np.testing.assert_array_equal(namespace["t"].numpy(), namespace["out"])
    assert [s.name for s in namespace["compiled"].steps][0] == "HLSL(main)"
    got = namespace["compiled"]({"input0": np.zeros(1000, np.float32)})[0]
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-1.0)), rtol=1e-6)
    readme = (ROOT / "README.md").read_text()
    assert "(docs/hlsl.md)" in readme


# ---------------------------------------------------------------------------- the runtime
def test_constants_follow_hlsl_packing(device, compiler):
    k = dml.Kernel.from_hlsl(SCALE, compiler=compiler)
    offsets = {c.name: (c.type, c.offset) for c in k.interface.constants}
    assert offsets == {"n": ("uint", 0), "alpha": ("float", 4), "shift": ("float2", 8), "more": ("float4", 16)}
    x = np.arange(100, dtype=np.float32)
    out, = k([x], [dml.TensorDesc(F32, [100])], (2,), {"n": 100, "alpha": 2.0, "shift": (0, 0.5), "more": [0, 0, 0, 1]},
             device=device)
    np.testing.assert_array_equal(out, 2 * x + 1.5)


def test_batch_profile_and_tensors(device):
    k = dml.Kernel.from_hlsl(ADD)
    a = device.tensor(np.arange(256, dtype=np.float32))
    ctx = device._ctx
    ctx.recorder.flush()
    before = ctx.recorder.submissions
    with device.profile() as prof, device.batch():
        t, = k([a, a], [dml.TensorDesc(F32, [256])], (4,), {"count": 256})
        u, = k([t, a], [dml.TensorDesc(F32, [256])], (4,), {"count": 256})
        assert isinstance(u, Tensor) and ctx.recorder.submissions == before  # recorded, not submitted
    np.testing.assert_array_equal(u.numpy(), 3 * np.arange(256, dtype=np.float32))
    assert [r["operator"] for r in prof.rows] == ["HLSL(main)"] * 2
    assert {r["strategy"] for r in prof.rows} == {"hlsl"}
    into = device.empty(dml.TensorDesc(F32, [256]))
    assert k([a, a], [into], (4,), {"count": 256})[0] is into


def test_graphs_run_it_as_an_opaque_node(device):
    k = dml.Kernel.from_hlsl(ADD)
    g = dml.Graph(device)
    x = g.input([64])
    sliced = dml.slice(dml.slice(x, [0], [64], [1]), [0], [64], [1])
    s, = k([sliced, np.ones(64, np.float32)], [dml.TensorDesc(F32, [64])], (1,), {"count": 64})
    y = dml.slice(dml.slice(s, [0], [64], [1]), [0], [64], [1])
    compiled = g.compile([y])
    names = [step.name for step in compiled.steps]
    assert "HLSL(main)" in names and len(names) == 3  # the chains before and after fuse; nothing across it
    data = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(compiled({"input0": data})[0], data + 1)
    assert len(g.compile([y], fuse=False).steps) == 5
    odd = dml.Kernel.from_hlsl(ADD.replace("if (i < count)", "if (i < count && i % 2 == 1)"))
    for _ in range(2):  # (the second run's pooled intermediates held the first's values)
        h, = odd([x, x], [dml.TensorDesc(F32, [64])], (1,), {"count": 64})
        got = g.compile([dml.slice(h, [0], [64], [1])])({"input0": data})[0]
        np.testing.assert_array_equal(got, np.where(np.arange(64) % 2 == 1, 2 * data, 0))


def test_an_out_of_range_store_writes_nothing_outside_its_buffer(device):
    k = dml.Kernel.from_hlsl("""
RWStructuredBuffer<float> y : register(u0);
[numthreads(64, 1, 1)]
void main(uint3 id : SV_DispatchThreadID) { y[id.x] = 1.0; y[id.x + 100000] = 2.0; }
""")
    ctx = device._ctx
    buffer = ctx.pool.acquire(4096, device.caps)  # 1,024 floats; the kernel's output is its first 16
    ctx.transfers.upload(buffer, np.full(1024, 7, np.float32))
    out = Tensor(device, buffer, dml.TensorDesc(F32, [16]))
    k([], [out], (64,))  # 4,096 invocations, each storing twice
    raw = ctx.transfers.download(buffer).view(np.float32)
    assert np.all(raw[:16] != 7) and np.all(raw[:16] <= 2)  # (inside: naga may clamp the stray index)
    np.testing.assert_array_equal(raw[16:1024], 7)


def test_compiled_once_and_kept_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDML_CACHE_DIR", str(tmp_path))
    first = hlsl.compile_hlsl(ADD, defines={"X": 1})
    assert list((tmp_path / "hlsl").iterdir())

    def refuse(*args):
        raise AssertionError("compiled again")

    monkeypatch.setattr(hlsl, "_slang_compile", refuse)
    again = hlsl.compile_hlsl(ADD, defines={"X": 1})
    assert again.code == first.code and again.interface == first.interface
    with pytest.raises(AssertionError):
        hlsl.compile_hlsl(ADD, defines={"X": 2})


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("compiler", hlsl.COMPILERS)
def test_a_kernel_that_does_not_compile(compiler):
    with pytest.raises(dml.InvalidArgumentError) as info:
        dml.Kernel.from_hlsl(ADD.replace("a_tensor[i] +", "a_tensr[i] +"), compiler=compiler)
    text = str(info.value)
    assert f"did not compile ({compiler})" in text and "a_tensr" in text
    assert "14          output_tensor[i] = a_tensr[i] + b_tensor[i];" in text  # the numbered source


def test_no_compiler_says_what_to_install(monkeypatch):
    monkeypatch.setitem(hlsl._SLANG, "path", None)
    monkeypatch.setattr(hlsl, "_glslang", lambda: None)
    monkeypatch.delenv("GPUDML_HLSL_COMPILER", raising=False)
    with pytest.raises(dml.UnsupportedError, match=r'pip install "gpudml\[hlsl\]".*glslang-tools'):
        dml.Kernel.from_hlsl(ADD)
    with pytest.raises(dml.UnsupportedError, match="glslang-tools"):
        dml.Kernel.from_hlsl(ADD, compiler="glslang")
    with pytest.raises(dml.InvalidArgumentError, match="compiler must be one of"):
        dml.Kernel.from_hlsl(ADD, compiler="dxc")


def test_bad_calls_are_refused_before_gpu_work(device):
    k = dml.Kernel.from_hlsl(SCALE)
    x = np.ones(100, np.float32)
    out = [dml.TensorDesc(F32, [100])]
    quiet = _quiet(device)
    cases = [
        (lambda: k([x, x], out, (2,), {"n": 1}), "t0 \\(x\\).*2 inputs"),
        (lambda: k([x], out + out, (2,), {"n": 1}), "u0 \\(y\\).*2 outputs"),
        (lambda: k([x], out, (2,), {"m": 1}), "'m': the cbuffer has no such member"),
        (lambda: k([x], out, (2,), {"n": 1.5}), "uint needs uint value"),
        (lambda: k([x], out, (2,), {"n": -1}), "outside uint's range"),
        (lambda: k([x], out, (2,), {"shift": 1.0}), "float2 takes 2 values"),
        (lambda: k([x], out, (2,), {"alpha": "big"}), "float needs float value"),
        (lambda: k([x], out, (device.caps.max_workgroups_per_dimension + 1,)), "grid"),
        (lambda: k([x], out, (0, 1, 1)), "grid"),
        (lambda: k([x], out, "big"), "grid"),
        (lambda: k([x.astype(np.int32)], out, (2,)), "holds float, the tensor is INT32"),
        (lambda: k([x], [dml.TensorDesc("INT32", [100])], (2,)), "holds float, the tensor is INT32"),
    ]
    for call, message in cases:
        with pytest.raises(dml.InvalidArgumentError, match=message):
            call()
    assert quiet()
    big = dml.Kernel.from_hlsl("RWStructuredBuffer<float> y : register(u1);\n"
                               "[numthreads(1,1,1)] void main(uint3 i : SV_DispatchThreadID) { y[i.x] = 1; }")
    with pytest.raises(dml.InvalidArgumentError, match="with no gap"):
        big([], [dml.TensorDesc(F32, [4])] * 2, (1,))
    assert quiet()


def test_a_cbuffer_wgsl_cannot_lay_out_as_hlsl_does(compiler):
    source = SCALE.replace("float alpha; float2 shift;", "float3 shift; float alpha;")  # HLSL: shift at byte 4
    with pytest.raises(dml.InvalidArgumentError, match="float3 shift sits at byte 4 by HLSL's packing rules"):
        dml.Kernel.from_hlsl(source, compiler=compiler)


def test_too_many_threads_per_workgroup(device):
    k = dml.Kernel.from_hlsl(ADD.replace("numthreads(64, 1, 1)", "numthreads(1024, 2, 1)"))
    with pytest.raises(dml.InvalidArgumentError, match="2048 invocations per workgroup"):
        k([np.ones(4, np.float32)] * 2, [dml.TensorDesc(F32, [4])], (1,), {"count": 4}, device=device)


# ---------------------------------------------------------------------------- command line
def test_shader_interface_hlsl(capsys):
    assert cli.main(["shader", "add", "--shape", "1000", "--caps", "vulkan-cpu", "--interface", "hlsl"]) == 0
    text = capsys.readouterr().out
    assert "StructuredBuffer<float> a_tensor" in text and "register(t1);" in text
    assert "RWStructuredBuffer<float> output_tensor" in text and "register(u0);" in text
    assert "cbuffer Constants : register(b0) {" in text and "uint count;" in text
    assert cli.main(["shader", "reduce", "--function", "sum", "--axes", "1", "--shape", "1024,256", "--caps",
                     "vulkan-cpu", "--interface", "hlsl"]) == 0
    text = capsys.readouterr().out
    cbuffer = REDUCE.split("register(b0) {")[1].split("};")[0]
    declared = [line.split("//")[0].strip() for line in cbuffer.splitlines() if line.strip()]
    assert len(declared) == 7
    for line in declared:  # the docs example declares what the interface prints
        assert line in text


def test_lab_hlsl_command_line(tmp_path, capsys):
    good, bad = tmp_path / "mine.hlsl", tmp_path / "bad.hlsl"
    good.write_text(ADD)
    bad.write_text("this is not HLSL")
    out_json = tmp_path / "lab.json"
    status = cli.main(["lab", "add", "--shape", "512", "--reps", "1", "--hlsl", str(good), "--hlsl", str(bad),
                       "--json", str(out_json), "--wgsl", str(tmp_path / "wgsl")])
    text = capsys.readouterr().out
    assert status == 1  # the broken kernel is a failure, reported as a row
    assert "mine.hlsl" in text and "bad.hlsl" in text and "InvalidArgumentError: error" in text
    rows = {r["hlsl"]: r for r in json.loads(out_json.read_text()) if r["hlsl"]}
    assert rows[str(good)]["correct"] and not rows[str(bad)]["correct"]
    assert (tmp_path / "wgsl" / "hlsl-mine.wgsl").exists()
