"""The pure compiler and the kernel builder: compile(desc, caps) -> Program with no wgpu, the
builder's bindings, uniform struct and bytes, the workgroup grid, named strategies and plan
options, capability profiles, axis merging, and generated WGSL an adapter rejects (an
InternalError printing the numbered source, never an UnsupportedError)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from conftest import run_python

import gpudml as dml
from gpudml import caps, compiler, examples
from gpudml.kernels import builder
from gpudml.kernels.builder import Dispatch, input_buffer, output_buffer, scratch_buffer
from gpudml.ops import SPECS
from gpudml.tensor_desc import merge_axes

T = dml.DataType


def _example_descs():
    """(spec, desc) of every operator's documentation examples (a list input, JOIN's, is a
    list of descs; a generator's example has none)."""
    for spec in SPECS:
        for ex in spec.examples:
            descs = [dml.TensorDesc(T.from_numpy(a.dtype), a.shape) for a in examples.arrays(ex.input)]
            tensors = [] if ex.input is None else [descs if isinstance(ex.input, list) else descs[0]]
            attributes = dict(ex.args)
            for name in spec.tensors[1:]:  # further tensor arguments: their descs
                arr = np.asarray(attributes.pop(name))
                tensors.append(dml.TensorDesc(T.from_numpy(arr.dtype), arr.shape))
            yield spec, spec.infer_output(*tensors, **attributes)


# ------------------------------------------------------------------ pure: no wgpu
@pytest.mark.any_class  # every named profile's caps: no Device, no class from the environment
def test_compiling_needs_no_wgpu():
    """With wgpu unimportable, every example compiles for every profile; gpudml never imports
    wgpu unless a Device is made."""
    code = """
import sys
sys.modules["wgpu"] = None  # importing it now raises
import gpudml, gpudml.caps, gpudml.compiler
import test_compiler
n = 0
for name, profile in gpudml.caps.PROFILES.items():
    for spec, desc in test_compiler._example_descs():
        spec.validate(desc, gpudml.types.HIGHEST_FEATURE_LEVEL)
        program = gpudml.compiler.compile(desc, profile)
        assert program.kernels and all("fn main" in k.source for k in program.kernels)
        n += 1
print(n)
"""
    res = run_python(code)
    assert int(res.stdout) == len(caps.PROFILES) * sum(len(s.examples) for s in SPECS)


def test_profiles_decide_the_native_64_bit_path():
    desc = dml.ops.reduce.infer_output(dml.TensorDesc(T.INT64, [4, 9]), "sum", [1])
    native = compiler.compile(desc, caps.profile("vulkan-cpu")).wgsl[0]
    emulated = compiler.compile(desc, caps.profile("gl-cpu")).wgsl[0]
    assert "alias W64 = u64;" in native and "alias W64 = vec2<u32>;" in emulated


def test_unknown_profile():
    with pytest.raises(dml.InvalidArgumentError, match="'cuda' is not a capability profile .*vulkan-cpu, gl-cpu"):
        caps.profile("cuda")


def test_program_describes_the_dispatches():
    desc = dml.ops.reduce.infer_output(dml.TensorDesc(T.FLOAT32, [4096, 300]), "sum", [0])
    program = compiler.compile(desc, caps.profile("vulkan-cpu"))
    assert program.operator == "Reduce" and program.strategy == "partials"
    assert program.strategies == ("partials", "rows", "columns", "workgroup")
    partials, combine = program.kernels
    assert [b.key for b in partials.buffers][:2] == [("scratch", 0), ("input", 0)]
    assert [b.key for b in combine.buffers] == [("output", 0), ("scratch", 0)]
    assert program.scratch_bytes[0] > 0 and partials.invocations > combine.invocations
    assert program.inputs[0][0] == "input_tensor" and program.outputs[0][0] == "output_tensor"


# ------------------------------------------------------------------ the builder
def test_builder_owns_bindings_uniforms_and_entry():
    dispatch = Dispatch(
        template="movement.wgsl.j2",
        params={"rank": 2, "bits": 8, "run": 64, "strategy": "strided", "out_base": False, "stages": (), "unit": True,
                "rows": True},
        buffers=(output_buffer(0, "output", 8, "stores"), input_buffer(0, "input")),
        uniforms={"count": 6, "out_sizes": (2, 3), "out_strides": (4, 1), "src_strides": (-3, 1), "src_base": 5},
        invocations=1)
    kernel = builder.build(dispatch, 65535)
    source = kernel.source
    assert "@group(0) @binding(0) var<storage, read_write> output: array<atomic<u32>>;" in source
    assert "@group(0) @binding(1) var<storage, read> input: array<u32>;" in source
    assert "@group(0) @binding(2) var<uniform> uni: Uniforms;" in source
    struct_text = source[source.index("struct Uniforms {"):source.index("}", source.index("struct Uniforms {"))]
    assert struct_text.split("\n")[1:] == [
        "    out_sizes: array<vec4<u32>, 1>,", "    out_strides: array<vec4<u32>, 1>,",
        "    src_strides: array<vec4<u32>, 1>,", "    count: u32,", "    src_base: u32,", ""]
    words = struct.unpack(f"<{len(kernel.uniform_bytes) // 4}I", kernel.uniform_bytes)
    assert words == (2, 3, 0, 0, 4, 1, 0, 0, 2**32 - 3, 1, 0, 0, 6, 5, 0, 0)
    assert "fn kernel(gid: u32)" in source
    assert source.rstrip().endswith("kernel((wid.y * nwg.x + wid.x) * 64u + lid);\n}")


def test_subgroup_entry_numbers_invocations_subgroup_by_subgroup():
    """A dispatch with subgroups: the entry point numbers a workgroup's invocations subgroup
    by subgroup and sets sg_size, or (subgroups not all full, or of no power-of-two size)
    keeps local_invocation_index with sg_size 1; no `enable subgroups;` (naga rejects it).
    The workgroup reduction uses it on profiles with the feature, never on gl-cpu."""
    dispatch = Dispatch(template="reduce_workgroup.wgsl.j2", params={}, buffers=(), uniforms={}, invocations=1)
    entry = builder._entry((), 256, True)
    assert "var<private> sg_size: u32 = 1u;" in entry and "@builtin(subgroup_invocation_id) sgi: u32" in entry
    assert "let full = nsg * sgs == 256u && (sgs & (sgs - 1u)) == 0u;" in entry
    assert "kernel((wid.y * nwg.x + wid.x) * 256u + select(lid, sgid * sgs + sgi, full));" in entry
    assert "subgroup" not in builder._entry((), 256, False) and not dispatch.subgroups
    desc = dml.ops.reduce.infer_output(dml.TensorDesc(T.FLOAT32, [64, 4096]), "sum", [1])
    gpu = compiler.compile(desc, caps.profile("gpu"))
    assert gpu.strategy == "workgroup" and "state_shuffle_xor(s, half)" in gpu.wgsl[0]
    assert "enable subgroups" not in gpu.wgsl[0]
    gl = compiler.compile(desc, caps.profile("gl-cpu").with_class("gpu"))
    assert gl.strategy == "workgroup" and "subgroup" not in gl.wgsl[0]
    with pytest.raises(dml.InvalidArgumentError, match="option subgroups = True needs an adapter with the feature"):
        compiler.compile(desc, caps.profile("gl-cpu"), strategy="workgroup", options={"subgroups": True})


@pytest.mark.parametrize("buffer, wgsl", [
    (input_buffer(0, "x"), "array<u32>"),
    (input_buffer(0, "x", "blocks"), "array<vec4<u32>>"),
    (output_buffer(0, "y", 16, "stores"), "array<atomic<u32>>"),
    (output_buffer(0, "y", 32, "stores"), "array<u32>"),
    (output_buffer(0, "y", 64, "stores"), "array<u32>"),
    (output_buffer(0, "y", 8, "words"), "array<u32>"),
    (output_buffer(0, "y", 8, "blocks"), "array<vec4<u32>>"),
    (scratch_buffer(0, "p", writable=True), "array<u32>"),
])
def test_binding_types_follow_access_and_width(buffer, wgsl):
    assert buffer.wgsl_type == wgsl


def test_unit_access_takes_the_widest_access_the_binding_holds_whole():
    """builder.unit_access: 64-bit units only with shader-int64 (the vulkan-cpu profile; not
    gl-cpu, nor no caps), and only on a tensor bound as a whole number of them (bound in
    16-byte blocks: 8 bytes bind 16, 40 bind 48, not whole 32-byte units); else the next
    access the plan names; the last one must fit every tensor."""
    vulkan, gl = caps.profile("vulkan-cpu"), caps.profile("gl-cpu")
    chain = ("wide", "blocks64", "blocks")
    got = {n: builder.unit_access(vulkan, chain, n) for n in (4, 16, 32, 40, 48, 64, 96, 112)}
    assert got == {4: "blocks64", 16: "blocks64", 32: "wide", 40: "blocks64", 48: "blocks64", 64: "wide",
                   96: "wide", 112: "blocks64"}
    assert builder.unit_access(vulkan, ("wide", "blocks"), 48) == "blocks"
    assert builder.unit_access(vulkan, ("wide", "blocks"), 64, 48) == "blocks"  # every tensor named
    assert {builder.unit_access(c, chain, 64) for c in (gl, None)} == {"blocks"}
    assert builder.u64_units(vulkan) and not builder.u64_units(gl) and not builder.u64_units(None)
    with pytest.raises(dml.InternalError, match="the fallback 'blocks64'"):
        builder.unit_access(vulkan, ("wide", "blocks64"), 64)


def test_a_unit_binding_a_plan_did_not_fit_is_an_internal_error():
    """The compiler has the builder check each 64-bit or 16-byte-unit binding against its
    bytes (builder.check_units): a `wide` buffer of 48 bytes, one of 16, one on gl-cpu, a
    segmented one whose last segment is 16 bytes, and one of whole units in 16-byte
    segments are InternalErrors naming the buffer and the sizes; whole units pass, segments
    included."""
    vulkan, gl = caps.profile("vulkan-cpu"), caps.profile("gl-cpu")

    def dispatch(*buffers):
        return Dispatch("t.wgsl.j2", {}, buffers, {}, 1)

    wide = input_buffer(1, "idx", "wide")
    builder.check_units("Op", dispatch(wide), {("input", 1): 64}, vulkan)
    for nbytes in (48, 16, 8):
        with pytest.raises(dml.InternalError, match=rf"Op: t.wgsl.j2 binds idx \(input 1, {nbytes} bytes\) as wide"):
            builder.check_units("Op", dispatch(wide), {("input", 1): nbytes}, vulkan)
    with pytest.raises(dml.InternalError, match="binds idx as wide .* which has no shader-int64"):
        builder.check_units("Op", dispatch(wide), {("input", 1): 64}, gl)
    builder.check_units("Op", dispatch(input_buffer(0, "x", "blocks")), {("input", 0): 4}, gl)
    builder.check_units("Op", dispatch(builder.segment(wide, 512 + 64, 256)), {("input", 1): 512 + 64}, vulkan)
    with pytest.raises(dml.InternalError, match=r"bindings of \[256, 256, 16\] bytes: \[16\]"):
        builder.check_units("Op", dispatch(builder.segment(wide, 512 + 16, 256)), {("input", 1): 512 + 16}, vulkan)
    with pytest.raises(dml.InternalError, match=r"bindings of \[16, 16, 16, 16\] bytes"):  # whole, not per binding
        builder.check_units("Op", dispatch(builder.segment(wide, 64, 16)), {("input", 1): 64}, vulkan)


STRIDED_1D = {"rank": 1, "bits": 32, "run": 64, "strategy": "strided", "out_base": False, "stages": (), "unit": True,
              "rows": True}


def test_uniform_values_must_fit_32_bits():
    dispatch = Dispatch("movement.wgsl.j2", STRIDED_1D,
                        (output_buffer(0, "output", 32, "stores"), input_buffer(0, "input")),
                        {"count": 2**32, "out_sizes": (1,), "out_strides": (1,), "src_base": 0,
                         "src_strides": (1,)}, 1)
    with pytest.raises(dml.InternalError, match="uniform count value 4294967296 does not fit 32 bits"):
        builder.build(dispatch, 65535)


def test_workgroup_grid_folds_and_has_a_limit():
    assert builder.workgroup_grid(64 * 10, 64, 4) == (4, 3)
    assert builder.workgroup_grid(1, 64, 4) == (1, 1)
    assert builder.workgroup_grid(64 * 16, 64, 4) == (4, 4)
    with pytest.raises(dml.UnsupportedError, match="17 workgroups, more than 4\\^2"):
        builder.workgroup_grid(64 * 17, 64, 4)


# ------------------------------------------------------------------ strategies and options
def test_forced_strategies(vulkan_device):
    dev = dml.Device(adapter=vulkan_device.adapter_name, adapter_class="cpu")  # its order: CPU-class first
    x = np.arange(40, dtype=np.int16).reshape(5, 8)
    op = dev.create_operator(dml.ops.slice1.infer_output(dml.TensorDesc(T.INT16, [5, 8]), [0, 0], [5, 8], [-1, 2]))
    default = dev.compile_operator(op)
    assert default.strategy == "stretches" and default.strategies == ("stretches", "elements", "coalesced")
    for name in default.strategies:
        compiled = dev.compile_operator(op, name)
        assert compiled.strategy == name
        np.testing.assert_array_equal(compiled.execute([x])[0], x[::-1, ::2])
    with pytest.raises(dml.InvalidArgumentError, match="Slice1: strategy 'strided' cannot run this description; "
                                                       "eligible: stretches, elements, coalesced \\(strategies of "
                                                       "Slice1: stretches, elements, strided, coalesced\\)"):
        dev.compile_operator(op, "strided")
    with pytest.raises(dml.InvalidArgumentError, match="strategy must be a strategy name or None, got int"):
        dev.compile_operator(op, 3)
    with pytest.raises(dml.InvalidArgumentError,
                       match="Slice1: unknown plan option\\(s\\) chunks \\(options: block\\)"):
        dev.compile_operator(op, options={"chunks": 2})


def test_gpu_adapters_get_the_coalesced_strategy_first():
    """Data movement: the CPU-class strategies first on CPU adapters, `coalesced` (one block
    per invocation) first on GPUs; its grid has one invocation per 16-byte block."""
    desc = dml.ops.slice1.infer_output(dml.TensorDesc(T.INT16, [64, 64]), [0, 0], [64, 64], [1, -1])
    gpu = compiler.compile(desc, caps.profile("gpu"))
    assert gpu.strategy == "coalesced" and gpu.strategies == ("coalesced", "stretches", "elements")
    assert gpu.kernels[0].invocations == 64 * 64 // 8 and gpu.kernels[0].params["run"] == 8
    cpu = compiler.compile(desc, caps.profile("vulkan-cpu"))
    assert cpu.strategies == ("stretches", "elements", "coalesced") and cpu.kernels[0].invocations == 64 * 64 // 64
    gaps = dml.ops.slice1.infer_output(dml.TensorDesc(T.INT16, [64, 64]), [0, 0], [64, 64], [1, -1])
    gaps = dml.Slice1OperatorDesc(gaps.input_tensor, dml.TensorDesc(T.INT16, [64, 64], [128, 1]),
                                  gaps.input_window_offsets, gaps.input_window_sizes, gaps.input_window_strides)
    assert compiler.compile(gaps, caps.profile("gpu")).strategies == ("coalesced", "strided")
    assert compiler.compile(gaps, caps.profile("gpu")).kernels[0].invocations == 64 * 64


def test_plan_options_are_the_operators_own(vulkan_device):
    dev = vulkan_device
    op = dev.create_operator(dml.ops.reduce.infer_output(dml.TensorDesc(T.FLOAT32, [64, 64]), "sum", [1]))
    compiled = dev.compile_operator(op, "partials", options={"chunks": 4, "vectorize": False})
    assert compiled.strategy == "partials" and compiled.program.kernels[0].params["vec_inner"] is False
    x = np.ones((64, 64), np.float32)
    np.testing.assert_array_equal(compiled.execute([x])[0], np.full((64, 1), 64, np.float32))
    with pytest.raises(dml.InvalidArgumentError, match="Reduce: unknown plan option\\(s\\) bogus \\(options: "
                                                       "chunks, vectorize, int64_native, lanes, subgroups, unroll\\)"):
        dev.compile_operator(op, options={"bogus": 1})
    for bad in ("many", 0, -2, 2.5, True):  # counts are integers of at least 1 (the lab's CLI passes names through)
        for strategy in ("partials", "workgroup"):
            with pytest.raises(dml.InvalidArgumentError, match=f"Reduce: option chunks = {bad!r} must be an integer "
                                                               "of at least 1"):
                dev.compile_operator(op, strategy, options={"chunks": bad})
    scan_spec = dml.ops.spec_named("cumulative_summation")
    scan = dev.create_operator(scan_spec.infer_output(dml.TensorDesc(T.FLOAT32, [64, 64]), 1))
    with pytest.raises(dml.InvalidArgumentError, match="scan: option chunks = 'x' must be an integer of at least 1"):
        dev.compile_operator(scan, "runs", options={"chunks": "x"})


# ------------------------------------------------------------------ rejected WGSL
def test_rejected_wgsl_is_an_internal_error_with_numbered_source(device):
    source = "fn main() {\n    let x: u32 = 1.5;\n}\n"
    with pytest.raises(dml.InternalError) as info:
        device._ctx.pipeline(source)
    message = str(info.value)
    assert not isinstance(info.value, dml.UnsupportedError)
    assert "rejected a generated shader (a gpudml bug" in message and device.adapter_name in message
    assert "1  fn main() {\n2      let x: u32 = 1.5;\n3  }" in message


def test_every_binding_is_in_the_pipeline_layout(device):
    """Pipelines take the layout wgpu derives from the shader; the entry point uses every
    binding, so one the kernel's code never reads is there too: the layout takes a bind
    group of all four bindings and refuses one without the binding never read."""
    import wgpu

    dispatch = Dispatch("movement.wgsl.j2", STRIDED_1D,
                        (output_buffer(0, "output", 32, "stores"), input_buffer(0, "input"),
                         input_buffer(1, "never_read")),
                        {"count": 4, "out_sizes": (4,), "out_strides": (1,), "src_base": 0, "src_strides": (1,)}, 4)
    kernel = builder.build(dispatch, 65535)
    assert "@binding(2) var<storage, read> never_read" in kernel.source
    ctx = device._ctx
    with ctx.lock:
        pipeline = ctx.pipeline(kernel.source)
        buffers = [ctx.device.create_buffer(size=16, usage=wgpu.BufferUsage.STORAGE) for _ in range(3)]
        uniforms = ctx.device.create_buffer_with_data(data=kernel.uniform_bytes, usage=wgpu.BufferUsage.UNIFORM)
        entries = [{"binding": i, "resource": {"buffer": b}} for i, b in enumerate(buffers)]
        entries.append({"binding": 3, "resource": {"buffer": uniforms}})
        assert ctx.device.create_bind_group(layout=pipeline.layout, entries=entries) is not None
        with pytest.raises(wgpu.GPUValidationError, match="bind group layout"):  # the layout holds binding 2
            ctx.device.create_bind_group(layout=pipeline.layout, entries=[e for e in entries if e["binding"] != 2])


def test_a_broken_template_fails_compile_operator_as_internal(device, monkeypatch):
    monkeypatch.setattr(builder, "_entry", lambda buffers, workgroup_size, subgroups: "\nthis is not wgsl\n")
    builder._render.cache_clear()
    try:
        desc = dml.ops.slice1.infer_output(dml.TensorDesc(T.FLOAT32, [3]), [0], [3], [1])
        with pytest.raises(dml.InternalError, match="this is not wgsl"):
            device.compile_operator(device.create_operator(desc))
    finally:
        monkeypatch.undo()
        builder._render.cache_clear()


# ------------------------------------------------------------------ axis merging
def test_merge_axes_drops_size_one_and_merges_contiguous_neighbours():
    axes = merge_axes([2, 1, 3, 4], [12, 99, 4, 1], [24, 7, 8, 2])
    assert [(a.size, a.strides, a.axes) for a in axes] == [(24, (1, 2), (0, 2, 3))]
    # a neighbour pair that is not contiguous in one layout stays apart
    axes = merge_axes([2, 3, 4], [12, 4, 1], [30, 4, 1])
    assert [(a.size, a.strides, a.axes) for a in axes] == [(2, (12, 30), (0,)), (12, (1, 1), (1, 2))]


def test_merge_axes_keeps_fixed_axes():
    axes = merge_axes([2, 1, 3], [3, 3, 1], fixed={1})
    assert [(a.size, a.strides, a.axes) for a in axes] == [(2, (3,), (0,)), (1, (3,), (1,)), (3, (1,), (2,))]


def test_merge_axes_of_nothing_is_one_element():
    assert [(a.size, a.strides, a.axes) for a in merge_axes([1, 1], [5, 1], [2, 1])] == [(1, (0, 0), ())]
    assert [(a.size, a.strides) for a in merge_axes([], [])] == [(1, (0,))]
