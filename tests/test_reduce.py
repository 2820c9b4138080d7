"""Reduce: what the conformance kit (tests/test_conformance.py) does not cover: each
validation rule's message, the functional form (axes as numpy takes them, output data
types), the partials strategy with small chunks, each strategy's choice and boundaries (the
loop budget, the combine limit, subgroups, unrolling, column chunks), small and strided
outputs, the pipeline cache across shapes, 64-bit and wrapping integers, float16 overflow,
LOG_SUM_EXP shifting, NaN, ARGMAX ties and order, and float32 accuracy on 16M elements."""

from __future__ import annotations

import re
import time
import warnings

import numpy as np
import pytest
from conformance import accepts
from conftest import ADAPTERS, assert_bits_equal, get_device, random_bits, run_python
from isolated import limited_device

import gpudml as dml
from gpudml import reference
from gpudml.kernels import reduction
from gpudml.ops import reduce as reduce_op
from gpudml.ops.reduce import infer_output as reduce_desc
from gpudml.runtime.tensor import logical_from_raw
from gpudml.tensor_desc import packed_strides
from gpudml.testing import assert_within

F, T, FL = dml.ReduceFunction, dml.DataType, dml.FeatureLevel
ARG = (F.ARGMAX, F.ARGMIN)


def compile_with(device, desc, strategy=None, **options):
    """Validate `desc` on `device`, then compile it with a forced strategy and plan options
    (chunks, vectorize, int64_native) through the runtime's normal path."""
    return device.compile_operator(device.create_operator(desc), strategy, options=options)


def run(device, x, function, axes=None, output_data_type=None, *, in_desc=None, out_strides=None, **options):
    """Run one reduction of numpy `x` (or of raw buffer `x` read through `in_desc`)."""
    in_desc = in_desc or dml.TensorDesc(T.from_numpy(x.dtype), x.shape)
    desc = reduce_desc(in_desc, function, axes, output_data_type)
    if out_strides is not None:
        out = desc.output_tensor
        desc = dml.ReduceOperatorDesc(desc.function, in_desc, dml.TensorDesc(out.data_type, out.sizes, out_strides),
                                      desc.axes)
    compiled = compile_with(device, desc, **options)
    (got,) = compiled.execute([x])
    return got, compiled


def test_cli_shader_reduce(capsys):
    from gpudml import cli

    assert cli.main(["shader", "reduce", "--function", "sum", "--axes", "1", "--shape", "8,300"]) == 0
    assert "fn main" in capsys.readouterr().out
    assert cli.main(["shader", "reduce", "--function", "ArgMax", "--shape", "4,5", "--dtype", "INT8",
                     "--output-data-type", "INT64"]) == 0
    assert "fn main" in capsys.readouterr().out


# ------------------------------------------------------------------ validation
def _desc(function, in_type=T.FLOAT32, sizes=(2, 3, 4, 5), axes=(3,), out_type=None, out_sizes=None):
    out_type = out_type or (T.UINT32 if F.coerce(function) in ARG else in_type)
    out_sizes = out_sizes or [1 if i in axes else n for i, n in enumerate(sizes)]
    return dml.ReduceOperatorDesc(function, dml.TensorDesc(in_type, sizes), dml.TensorDesc(out_type, out_sizes), axes)


def _rejects(device, desc, *fragments):
    with pytest.raises(dml.InvalidArgumentError) as info:
        device.create_operator(desc)
    message = str(info.value)
    for fragment in ("Reduce",) + fragments:
        assert fragment in message, message
    return message


def test_rejects_unknown_function():
    with pytest.raises(dml.InvalidArgumentError, match=r"Reduce: function: 'MEDIAN' is not a ReduceFunction"):
        dml.ReduceOperatorDesc("MEDIAN", dml.TensorDesc(T.FLOAT32, [2]), dml.TensorDesc(T.FLOAT32, [1]), [0])


def test_rejects_empty_axes(at_level):
    _rejects(at_level(FL.FL_5_0), _desc(F.SUM, axes=()), "axes must name at least one axis", "AxisCount is 0")


def test_rejects_axis_out_of_range(at_level):
    desc = dml.ReduceOperatorDesc(F.SUM, dml.TensorDesc(T.FLOAT32, [2, 3]), dml.TensorDesc(T.FLOAT32, [2, 1]), [1, 2])
    _rejects(at_level(FL.FL_5_0), desc, "axes[1] = 2 is outside [0, 1]", "DimensionCount 2")


def test_rejects_duplicate_axes(at_level):
    _rejects(at_level(FL.FL_5_0), _desc(F.MAX, axes=(3, 1, 3)), "axes[2] = 3 repeats an axis", "[3, 1, 3]")


def test_rejects_reduced_output_size_not_1(at_level):
    desc = _desc(F.SUM, out_sizes=[2, 3, 4, 5])
    _rejects(at_level(FL.FL_5_0), desc, "output_tensor.sizes[3] = 5 must be 1 on reduced axis 3")


def test_rejects_kept_output_size_mismatch(at_level):
    desc = _desc(F.SUM, out_sizes=[2, 4, 4, 1])
    _rejects(at_level(FL.FL_5_0), desc, "output_tensor.sizes[1] = 4 must equal input_tensor.sizes[1] = 3",
             "kept axis 1")


def test_rejects_rank_mismatch(at_level):
    desc = dml.ReduceOperatorDesc(F.SUM, dml.TensorDesc(T.FLOAT32, [2, 3]), dml.TensorDesc(T.FLOAT32, [1]), [0, 1])
    _rejects(at_level(FL.FL_5_0), desc, "same DimensionCount", "input_tensor 2, output_tensor 1")


def test_rejects_output_type_change(at_level):
    _rejects(at_level(FL.FL_5_0), _desc(F.SUM, out_type=T.FLOAT16),
             "output_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32", "function is SUM")


def test_argmax_output_type_rules(at_level):
    _rejects(at_level(FL.FL_5_0), _desc(F.ARGMAX, out_type=T.FLOAT32),
             "Reduce (ARGMAX): output_tensor.data_type FLOAT32 is not supported at FL_5_0")
    _rejects(at_level(FL.FL_2_1), _desc(F.ARGMIN, out_type=T.INT64),
             "output_tensor.data_type INT64 is not supported at FL_2_1 (supported: UINT32)")
    at_level(FL.FL_3_0).create_operator(_desc(F.ARGMIN, out_type=T.INT64))
    _rejects(at_level(FL.FL_4_0), _desc(F.ARGMAX, T.UINT64), "input_tensor.data_type UINT64", "FL_4_1 or later")
    at_level(FL.FL_4_1).create_operator(_desc(F.ARGMAX, T.UINT64, out_type=T.INT32))


def test_rejects_aliasing_output(at_level):
    desc = dml.ReduceOperatorDesc(F.SUM, dml.TensorDesc(T.FLOAT32, [4, 6]),
                                  dml.TensorDesc(T.FLOAT32, [4, 1], [0, 1]), [1])
    _rejects(at_level(FL.FL_5_0), desc, "output_tensor.strides", "share one address")


def test_functional_api_arguments(vulkan_device):
    dev = vulkan_device
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(dml.reduce(x, "Sum", device=dev), [[[276]]])
    np.testing.assert_array_equal(dml.reduce(x, "max", 2, device=dev), x.max(2, keepdims=True))
    np.testing.assert_array_equal(dml.reduce(x, F.MIN, (2, 0), device=dev), x.min((0, 2), keepdims=True))
    got = dml.reduce(x, "argmax", [1], device=dev)
    assert got.dtype == np.uint32 and got.shape == (2, 1, 4)
    got = dml.reduce(x, "ARGMIN", [1], output_data_type=np.int64, device=dev)
    assert got.dtype == np.int64 and (got == 0).all()
    assert dml.reduce(x, "argmin", [1], output_data_type="int32", device=dev).dtype == np.int32
    assert dml.reduce(x, "sum", [1], output_data_type=T.FLOAT32, device=dev).dtype == np.float32
    with pytest.raises(dml.InvalidArgumentError, match="must equal input_tensor.data_type FLOAT32"):
        dml.reduce(x, "sum", [1], output_data_type="FLOAT16", device=dev)
    with pytest.raises(dml.InvalidArgumentError, match="axes"):
        dml.reduce(x, "sum", [], device=dev)
    with pytest.raises(dml.InvalidArgumentError, match="FLOAT64 is not supported"):
        dml.reduce(x.astype(np.float64), "sum", device=dev)


def test_functional_axes_as_numpy_takes_them(vulkan_device):
    """Negative axes count from the end and one bare int is one axis (the functional API; the
    desc API stays DirectML's)."""
    dev = vulkan_device
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    for axes, numpy_axes in ((-1, 2), ([-1], 2), ([0, -1], (0, 2)), (-3, 0), (1, 1), ([-2, 0], (0, 1))):
        np.testing.assert_array_equal(dml.reduce(x, "sum", axes, device=dev), x.sum(numpy_axes, keepdims=True),
                                      err_msg=str(axes))
        np.testing.assert_array_equal(reference.reduce(x, "sum", axes), x.sum(numpy_axes, keepdims=True))
    assert reduce_desc(dml.TensorDesc(T.INT32, [2, 3, 4]), "sum", [-1, 0]).axes == (2, 0)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("reduce: axes[0] = -4 is outside [-3, 2] "
                                                                 "(x has 3 dimensions)")):
        dml.reduce(x, "sum", [-4], device=dev)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("reduce: axes[1] = 3 is outside [-3, 2]")):
        dml.reduce(x, "sum", [0, 3], device=dev)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("reduce: axes [2, -1] name axis 2 twice")):
        dml.reduce(x, "sum", [2, -1], device=dev)
    desc = dml.ReduceOperatorDesc(F.SUM, dml.TensorDesc(T.INT32, [2, 3, 4]), dml.TensorDesc(T.INT32, [2, 3, 1]), [-1])
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Reduce: axes[0] = -1 is outside [0, 2]")):
        dev.create_operator(desc)


def test_output_data_type_errors_list_the_names(vulkan_device):
    x = np.zeros((2, 2), np.float32)
    with pytest.raises(dml.InvalidArgumentError) as info:
        dml.reduce(x, "argmax", [1], output_data_type="INT65", device=vulkan_device)
    message = str(info.value)
    assert message.startswith("reduce: output_data_type: 'INT65' is not a DataType (FLOAT32, FLOAT16, UINT32")
    assert message.endswith("INT64) nor the numpy dtype of one")
    for value, want in (("int64", T.INT64), ("UINT32", T.UINT32), (np.int32, T.INT32), ("<i4", T.INT32),
                        (T.UINT64, T.UINT64), (11, T.INT64), (np.dtype(np.uint32), T.UINT32)):
        assert dml.DataType.parse(value) == want, value
    with pytest.raises(dml.InvalidArgumentError, match="numpy dtype complex64 has no DirectML data type"):
        dml.DataType.parse(np.complex64, "output_data_type")


# ------------------------------------------------------------------ sweep against reference.py
def _data(rng, data_type: dml.DataType, function, shape) -> np.ndarray:
    return reduce_op.sample_values(rng, data_type, function, int(np.prod(shape))).reshape(shape)


def assert_reduce_close(got, want, x, function, axes, what=""):
    """Within Reduce's documented precision (ops/reduce.py tolerance): integers, MIN/MAX and
    ARGMAX/ARGMIN exactly; float results within rounding bounds scaled by the magnitudes
    involved (float32 accumulation, one rounding to the output type)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype, got.shape, want.shape)
    tolerance = reduce_op.tolerance(want, [x], {"function": function, "axes": axes})
    if tolerance is None:
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    assert_within(got, want, tolerance, what)


#: Every (function, input type) the support tables take (rank 3, FL 5_0).
PAIRS = [(fn, dt) for fn in F for dt in T
         if accepts(reduce_op.SUPPORT[fn], FL.FL_5_0, 3, {"input_tensor": dt, "output_tensor": T.UINT32 if fn in ARG
                                                           else dt})]


def _layout_desc(data_type, sizes, strides):
    if strides == "padded":
        strides = packed_strides([n + 1 for n in sizes])
    return dml.TensorDesc(data_type, sizes, strides)


@pytest.mark.parametrize("function, data_type", PAIRS, ids=lambda v: v.name)
def test_partials_strategy_against_reference(device, function, data_type):
    """The two-pass strategy with small chunks (chunk edges inside rows), vectorized and not,
    and with 64-bit integers emulated even where the adapter has them."""
    rng = np.random.default_rng([int(function), int(data_type), 1])
    options = [{"chunks": 3}, {"chunks": 5, "vectorize": False}]
    if data_type.size == 8:
        options.append({"chunks": 2, "int64_native": False})
    # Contiguous rows; columns in groups of outputs sharing 16-byte blocks (the last group of
    # each row partial; rows of 32: groups of several blocks); non-adjacent axes.
    for sizes, in_strides, axes in [((7, 70), None, [1]), ((40, 3, 37), [3 * 48, 48, 1], [0]),
                                    ((9, 3, 32), [3 * 48, 48, 1], [0]), ((6, 7, 9), None, [0, 2])]:
        in_desc = _layout_desc(data_type, sizes, in_strides)
        raw = _data(rng, data_type, function, [in_desc.required_elements])
        x = logical_from_raw(raw, in_desc)
        want = reference.reduce(x, function, axes)
        for opts in options:
            got, compiled = run(device, raw, function, axes, in_desc=in_desc, strategy="partials", **opts)
            assert len(compiled.wgsl) == 2
            if in_strides and opts.get("vectorize", True):
                per_block = 16 // data_type.size
                assert compiled.program.kernels[0].params["group"] == (
                    per_block if sizes[2] == 37 else min(16, 4 * per_block))  # 32 = a whole number of groups
            assert_reduce_close(got, want, x, function, axes, f"{function.name} {data_type.name} {sizes} {opts}")


# ------------------------------------------------------------------ strategies
def _templates(compiled):
    return [d.template for d in compiled.program.kernels]


@pytest.mark.parametrize("function", [F.SUM, F.ARGMAX, F.MIN, F.LOG_SUM_EXP])
def test_each_strategy_on_larger_inputs(device, function):
    """The plan's own choices: many contiguous rows (one pass), few long rows (partials),
    columns (partials with groups of outputs), and each agrees with reference.py."""
    rng = np.random.default_rng(int(function))
    cases = [
        ((2048, 96), [1], "reduce.wgsl.j2"),  # many outputs: one invocation per row
        ((3, 300_000), [1], "reduce_partials.wgsl.j2"),  # few outputs, long rows: partial results
        ((700, 130), [0], "reduce_partials.wgsl.j2"),  # columns
        ((700, 128), [0], "reduce_partials.wgsl.j2"),  # columns in groups of 4 outputs
        ((64, 3, 1000), [0, 2], "reduce_partials.wgsl.j2"),  # non-adjacent
    ]
    for sizes, axes, first in cases:
        x = rng.uniform(-4, 4, sizes).astype(np.float32)
        got, compiled = run(device, x, function, axes)
        if not device.caps.is_software:  # GPU class: lanes for rows, `columns` for columns
            first = "reduce_partials.wgsl.j2" if axes == [0] else "reduce_workgroup.wgsl.j2"
        assert _templates(compiled)[0] == first, (sizes, _templates(compiled))
        if sizes == (700, 128):  # `partials` in groups of 16 outputs (4 blocks), `columns` of 4
            assert compiled.program.kernels[0].params["group"] == (16 if device.caps.is_software else 4)
        assert_reduce_close(got, reference.reduce(x, function, axes), x, function, axes, f"{sizes} {axes}")


def test_long_rows_stay_within_the_loop_cap(device):
    """llvmpipe stops every loop of an invocation after 65535 iterations in total: a one-pass
    plan over 200,000-element rows is not eligible; they are cut into partial results."""
    x = np.ones((3, 200_000), dtype=np.int32)
    for options in [{}, {"vectorize": False}, {"strategy": "partials", "chunks": 1}]:
        got, compiled = run(device, x, "sum", [1], **options)
        np.testing.assert_array_equal(got, [[200_000]] * 3)
        assert len(compiled.wgsl) == 2 and compiled.strategy == ("partials" if device.caps.is_software or
                                                                  "strategy" in options else "workgroup")
        assert set(compiled.strategies) == {"partials", "workgroup"}
    for options in [{}, {"vectorize": False}]:
        with pytest.raises(dml.InvalidArgumentError, match="strategy 'rows' cannot run this description; "
                                                           "eligible: (workgroup, )?partials"):
            run(device, x, "sum", [1], strategy="rows", **options)
    # The workgroup strategy with one lane forced is cut to the budget too (it was not: 65535).
    got, compiled = run(device, x, "sum", [1], strategy="workgroup", lanes=1, chunks=1, vectorize=False)
    np.testing.assert_array_equal(got, [[200_000]] * 3)
    assert len(compiled.wgsl) == 2
    # Packed uint8 output: four outputs share an invocation in one-pass kernels.
    y = np.zeros((5, 70_000), dtype=np.uint8)
    y[:, 69_999] = [1, 2, 3, 4, 5]
    got, compiled = run(device, y, "max", [1], vectorize=False)
    np.testing.assert_array_equal(got.ravel(), [1, 2, 3, 4, 5])
    assert compiled.strategy == ("partials" if device.caps.is_software else "workgroup")


def test_broadcast_beyond_the_combine_limit_needs_workgroups(device):
    """2^31 elements per output: more partial results than the partials strategy's combine pass
    may merge within the loop budget; only the workgroup strategy (256 lanes a chunk) plans
    it. (Planned, not run: 2^31 reads take minutes on a software adapter.)"""
    in_desc = dml.TensorDesc(T.FLOAT32, [1 << 31], [0])
    desc = reduce_desc(in_desc, "sum")
    operator = device.create_operator(desc)
    assert device.compile_operator(operator).strategies == ("workgroup",)
    with pytest.raises(dml.InvalidArgumentError, match="strategy 'partials' cannot run this description"):
        device.compile_operator(operator, "partials")


SUBGROUP_CASES = [  # (dtype, sizes, axes, lanes): lanes under, at and over lavapipe's 8-wide subgroups
    (np.float32, (37, 1000), [1], None), (np.float32, (37, 1000), [1], 4), (np.float32, (37, 1000), [1], 256),
    (np.float32, (3, 100_000), [1], None),  # chunks and the combine pass
    (np.float16, (50, 300), [1], 16), (np.int32, (64, 513), [1], 8), (np.int64, (20, 700), [1], 32),
    (np.uint64, (5, 3000), [1], None), (np.float32, (7, 9, 33), [0, 2], 2),  # strided lanes
]


@pytest.mark.parametrize("function", list(F), ids=lambda f: f.name)
def test_workgroup_subgroups_merge_like_the_tree(device, function):
    """The workgroup strategy's butterfly through subgroupShuffleXor (where the adapter has
    subgroups: lavapipe, not GL) returns the workgroup-memory tree's results bit for bit,
    floats included: lane 0 merges the same States in the same order. Rows shorter than a
    subgroup, as long, longer (steps through both), chunks with the combine pass, float16,
    64-bit integers (native and as u32 pairs) and strided lanes."""
    check_subgroup_merge(device, function)


@pytest.mark.any_class  # the strategy forced (workgroup, with and without subgroups)
def test_workgroup_subgroups_four_wide():
    """The same at another subgroup width: GPUs run subgroups of 16, 32 or 64 invocations,
    lavapipe of 8 (its 256-bit vectors); with LP_NATIVE_VECTOR_WIDTH=128 its subgroups are
    4 wide, so that the butterfly's switch from shuffles to workgroup memory comes a step
    earlier and lanes=4 and 8 merge by other paths. Every function, in a fresh process
    (lavapipe reads the variable when it loads)."""
    if "vulkan" not in ADAPTERS or "llvmpipe" not in get_device("vulkan").adapter_name:
        pytest.skip("needs lavapipe as the Vulkan adapter (the variable is Mesa's)")
    code = ("import gpudml as dml\n"
            "from test_reduce import F, check_subgroup_merge\n"
            "d = dml.Device(adapter='vulkan')\n"
            "assert d.caps.has('subgroup') and '128 bits' in d.adapter_name, d.adapter_name\n"
            "for f in F:\n"
            "    check_subgroup_merge(d, f)\n"
            "print(d.adapter_name)\n")
    assert "128 bits" in run_python(code, timeout=600, LP_NATIVE_VECTOR_WIDTH="128").stdout


def check_subgroup_merge(device, function) -> None:
    """The body of the two tests above: every SUBGROUP_CASES case of `function`, the default
    workgroup kernel (subgroups where the adapter has them) against subgroups=False."""
    has = device.caps.has("subgroup")
    rng = np.random.default_rng(int(function))
    for dtype, sizes, axes, lanes in SUBGROUP_CASES:
        data_type = T.from_numpy(np.dtype(dtype))
        try:
            desc = reduce_desc(dml.TensorDesc(data_type, sizes), function, axes, T.UINT32 if function in ARG else None)
            operator = device.create_operator(desc)
        except dml.InvalidArgumentError:
            continue  # not in the function's support table (AVERAGE on integers, ...)
        x = np.abs(_data(rng, data_type, function, sizes)) if function == F.LOG_SUM else _data(rng, data_type,
                                                                                               function, sizes)
        shape = {} if lanes is None else {"lanes": lanes}
        for extra in _int64_options(device) if dtype in (np.int64, np.uint64) else [{}]:
            tree = device.compile_operator(operator, "workgroup", options={**shape, **extra, "subgroups": False})
            assert not any("subgroupShuffleXor" in w for w in tree.wgsl)
            want = tree.execute([x])[0]
            default = device.compile_operator(operator, "workgroup", options={**shape, **extra})
            assert all(("subgroupShuffleXor" in w) == has for w in default.wgsl), (sizes, lanes)
            assert_bits_equal(default.execute([x])[0], want)
            assert_reduce_close(want, reference.reduce(x, function, axes), x, function, axes, f"{sizes} {lanes}")
    if not has:
        with pytest.raises(dml.InvalidArgumentError, match="subgroups = True needs an adapter with the feature"):
            device.compile_operator(operator, "workgroup", options={"subgroups": True})


def test_subgroup_kernels_fall_back_when_subgroups_are_not_full(vulkan_device, monkeypatch):
    """Where a workgroup's subgroups are not all full (or of no power-of-two size), the
    entry point keeps local_invocation_index and sets sg_size to 1: every butterfly step
    then goes through workgroup memory, with the same bits. Forced here by rewriting the
    entry point's test (lavapipe's 8-wide subgroups are always full)."""
    from gpudml.kernels import builder

    if not vulkan_device.caps.has("subgroup"):
        pytest.skip("the first adapter has no subgroups")
    real = builder._entry

    def never_full(buffers, workgroup_size, subgroups):
        text = real(buffers, workgroup_size, subgroups)
        return text.replace("let full = nsg * sgs", "let full = false && nsg * sgs") if subgroups else text

    rng = np.random.default_rng(11)
    x = rng.standard_normal((37, 1000)).astype(np.float32)
    cases = []
    for function in (F.SUM, F.MAX, F.ARGMIN):
        operator = vulkan_device.create_operator(
            reduce_desc(dml.TensorDesc(T.FLOAT32, x.shape), function, [1], T.UINT32 if function in ARG else None))
        for lanes in (4, 64):
            tree = vulkan_device.compile_operator(operator, "workgroup", options={"subgroups": False, "lanes": lanes})
            cases.append((operator, lanes, tree.execute([x])[0]))
    monkeypatch.setattr(builder, "_entry", never_full)
    builder._render.cache_clear()
    try:
        for operator, lanes, want in cases:
            compiled = vulkan_device.compile_operator(operator, "workgroup", options={"lanes": lanes})
            assert "let full = false && nsg * sgs" in compiled.wgsl[0]
            assert_bits_equal(compiled.execute([x])[0], want)
    finally:
        monkeypatch.undo()
        builder._render.cache_clear()


@pytest.mark.parametrize("function", [F.SUM, F.ARGMIN, F.LOG_SUM_EXP, F.MAX])
def test_gpu_class_unroll_keeps_the_order(device, function):
    """The loads a workgroup lane (or a columns invocation) issues `unroll` steps at a time
    are folded in the same order: every unroll gives the same bits (contiguous rows in
    16-byte blocks with head and tail, element by element over strided axes, chunks;
    columns in groups of 4 and 8 outputs, chunks not a multiple of the unroll); a bad value
    is a clear error."""
    rng = np.random.default_rng(int(function) + 7)
    for strategy, dtype, sizes, axes, options in [
            ("workgroup", np.float32, (37, 1001), [1], {"lanes": 8}),
            ("workgroup", np.int32, (5, 70, 30), [1], {"lanes": 8}),
            ("workgroup", np.float16, (3, 40_003), [1], {"lanes": 8}),
            ("columns", np.float32, (701, 128), [0], {"chunks": 3}),
            ("columns", np.float16, (300, 64), [0], {"chunks": 7})]:
        data_type = T.from_numpy(np.dtype(dtype))
        try:
            desc = reduce_desc(dml.TensorDesc(data_type, sizes), function, axes, T.UINT32 if function in ARG else None)
            operator = device.create_operator(desc)
        except dml.InvalidArgumentError:
            continue
        x = _data(rng, data_type, function, sizes)
        results = []
        for unroll in reduction.UNROLLS:
            compiled = device.compile_operator(operator, strategy, options={"unroll": unroll, **options})
            assert compiled.program.kernels[0].params["unroll"] == unroll
            results.append(compiled.execute([x])[0])
        for got in results[1:]:
            assert_bits_equal(got, results[0])
        assert_reduce_close(results[0], reference.reduce(x, function, axes), x, function, axes, str(sizes))
    with pytest.raises(dml.InvalidArgumentError, match="option unroll = 3 must be one of 1, 2, 4, 8"):
        device.compile_operator(operator, "workgroup", options={"unroll": 3})


@pytest.mark.parametrize("function", [F.MIN, F.MAX, F.ARGMAX, F.ARGMIN, F.SUM, F.MULTIPLY])
def test_columns_combine_chunks_in_a_tree(device, function):
    """The columns strategy's combine pass is the workgroup strategy's (lanes per output
    merging its chunks in a tree): MIN/MAX States carry their index there, so that with
    NaN payloads and signed zeros in random bits the result is still the sequential combine's
    bit for bit, as ARGMAX/ARGMIN's and integer results are; float sums and products within
    the documented precision."""
    rng = np.random.default_rng(int(function) + 40)
    for dtype, sizes, axes in [(np.float32, (3000, 5), [0]), (np.float16, (700, 130), [0]),
                               (np.int32, (600, 3, 40), [0]), (np.uint32, (2000, 128), [0])]:
        data_type = T.from_numpy(np.dtype(dtype))
        if function == F.MULTIPLY and data_type.is_float:
            x = rng.uniform(0.99, 1.01, sizes).astype(dtype)
        elif function in (F.MIN, F.MAX) or function in ARG:
            x = random_bits(rng, dtype, sizes)
        else:
            x = _data(rng, data_type, function, sizes)
        desc = reduce_desc(dml.TensorDesc(data_type, sizes), function, axes, T.UINT32 if function in ARG else None)
        operator = device.create_operator(desc)
        columns = device.compile_operator(operator, "columns", options={"chunks": 37})
        partials, combine = columns.program.kernels
        assert combine.template == "reduce_workgroup.wgsl.j2" and combine.params["combine"]
        assert partials.params["indexed"] == (function in (F.MIN, F.MAX))
        got = columns.execute([x])[0]
        want = device.compile_operator(operator, "partials", options={"chunks": 37}).execute([x])[0]
        if data_type.is_float and function in (F.SUM, F.MULTIPLY):
            assert_reduce_close(got, want, x, function, axes, str(sizes))
        else:
            assert_bits_equal(got, want)


def test_broadcast_reduction_of_a_million(device):
    in_desc = dml.TensorDesc(T.FLOAT16, [1000, 1000], [0, 0])
    got, _ = run(device, np.array([0.25], np.float16), "sum", None, in_desc=in_desc)
    assert got.dtype == np.float16 and float(got[0, 0]) == np.inf  # 250,000 > 65504
    got, _ = run(device, np.array([0.25], np.float16), "average", [1], in_desc=in_desc)
    np.testing.assert_array_equal(got, np.full((1000, 1), 0.25, np.float16))


def test_packed_and_strided_small_outputs(device):
    """8- and 16-bit outputs: packed (one invocation owns a word) and strided (atomic word
    updates), through one pass and the combine pass."""
    rng = np.random.default_rng(3)
    for dtype in (np.uint8, np.int16, np.float16):
        x = random_bits(rng, dtype, (9, 13, 6)) if dtype != np.float16 else rng.uniform(-9, 9, (9, 13, 6)).astype(dtype)
        want = reference.reduce(x, "max", [2])
        for out_strides in (None, [13 * 3, 3, 1], [1, 9, 1]):
            for options in ({"strategy": "rows"}, {"strategy": "partials", "chunks": 2}):
                got, _ = run(device, x, "max", [2], out_strides=out_strides, **options)
                np.testing.assert_array_equal(got, want, err_msg=f"{dtype} {out_strides} {options}")


def test_strided_output_keeps_other_elements(device):
    """Elements of the output buffer outside the tensor are left as they were."""
    x = np.arange(24, dtype=np.int16).reshape(4, 6)
    out_desc = dml.TensorDesc(T.INT16, [4, 1], [3, 1])
    desc = dml.ReduceOperatorDesc(F.MAX, dml.TensorDesc(T.INT16, [4, 6]), out_desc, [1])
    compiled = device.compile_operator(device.create_operator(desc))
    before = np.full(out_desc.buffer_bytes // 2, -7, np.int16)
    (result,) = compiled.execute([device.tensor(x)], outputs=[device.tensor(before, desc=out_desc)])
    raw = result.raw()
    np.testing.assert_array_equal(raw[::3][:4], [5, 11, 17, 23])
    assert (np.delete(raw, [0, 3, 6, 9]) == -7).all()


def test_a_new_shape_of_a_known_kind_compiles_nothing(adapter):
    """On a pipeline cache of the test's own (nothing compiled before, whatever ran earlier):
    once a kind is compiled, a new shape of it (same merged ranks, same strategy) compiles
    nothing."""
    dev = limited_device(adapter)
    np.testing.assert_array_equal(dml.reduce(np.ones((3, 4, 20), np.float32), "sum", [2], device=dev),
                                  np.full((3, 4, 1), 20, np.float32))
    misses = dev.pipeline_cache_stats.misses
    assert misses >= 1
    y = np.ones((7, 2, 24), dtype=np.float32)  # (as many workgroup lanes as 20 under the GPU class)
    np.testing.assert_array_equal(dml.reduce(y, "sum", [2], device=dev), np.full((7, 2, 1), 24, np.float32))
    assert dev.pipeline_cache_stats.misses == misses


# ------------------------------------------------------------------ integers
def _int64_options(device):
    native = device.caps.has("shader-int64")
    return [{}, {"int64_native": False}] if native else [{}]


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_int64_wraps_exactly(device, dtype):
    big = np.iinfo(dtype).max
    x = np.array([[big, big, 3, 2**40 + 7], [2**62 + 1, 2**33, 2**31, 5]], dtype=dtype)
    if dtype == np.int64:
        x[1, 3] = np.iinfo(np.int64).min
    for options in _int64_options(device):
        for function in (F.SUM, F.MULTIPLY, F.L1, F.SUM_SQUARE, F.MIN, F.MAX, F.ARGMAX, F.ARGMIN):
            for axes in ([1], [0], None):
                for strategy in ({"strategy": "rows"}, {"strategy": "partials", "chunks": 2}):
                    out_type = T.UINT64 if function in ARG else None
                    got, _ = run(device, x, function, axes, out_type, **options, **strategy)
                    want = reference.reduce(x, function, axes, out_type)
                    np.testing.assert_array_equal(got, want, err_msg=f"{function.name} {axes} {options} {strategy}")


def test_int64_compare_uses_high_and_low_words(device):
    # Values differing only in the low word, only in the high word, and in sign.
    x = np.array([0x1_0000_0000, 0x0_FFFF_FFFF, -1, -(2**32), 2**32 + 1, -(2**63)], dtype=np.int64)
    for options in _int64_options(device):
        for function in (F.MIN, F.MAX, F.ARGMIN, F.ARGMAX):
            got, _ = run(device, x, function, **options)
            np.testing.assert_array_equal(got, reference.reduce(x, function), err_msg=f"{function.name} {options}")
        u = x.view(np.uint64)
        for function in (F.MIN, F.MAX, F.ARGMAX):
            got, _ = run(device, u, function, **options)
            np.testing.assert_array_equal(got, reference.reduce(u, function), err_msg=f"u64 {function.name} {options}")


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_int32_wraps(device, dtype):
    x = np.array([[2**31 - 1, 5, 2**30], [np.iinfo(dtype).min, 3, 65536]], dtype=dtype)
    for function in (F.SUM, F.MULTIPLY, F.L1, F.SUM_SQUARE):
        got, _ = run(device, x, function, [1])
        np.testing.assert_array_equal(got, reference.reduce(x, function, [1]), err_msg=function.name)


# ------------------------------------------------------------------ floats: f16, LSE, NaN
def test_float16_accumulates_in_float32_and_overflows_to_inf(device):
    x = np.full((4, 3000), 30.0, np.float16)  # every partial sum is exact in float32
    x[1] = -30.0
    x[2, :] = 0.0
    x[2, :2] = [65504, 15]  # 65519 rounds to 65504
    x[3, :] = 0.0
    x[3, :2] = [65504, 16]  # 65520 rounds to inf
    got = dml.reduce(x, "sum", [1], device=device)
    np.testing.assert_array_equal(got.ravel(), np.array([np.inf, -np.inf, 65504, np.inf], np.float16))
    y = np.full((2, 5000), 0.1, np.float16)  # a float16 running sum would stall at 256
    got = dml.reduce(y, "sum", [1], device=device).astype(np.float64)
    np.testing.assert_allclose(got, 5000 * float(np.float16(0.1)), rtol=1e-3)
    got = dml.reduce(y, "average", None, device=device)
    np.testing.assert_array_equal(got, [[np.float16(0.1)]])


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_reference_takes_signaling_nans_quietly(dtype):
    """Every float function's reference (and its tolerance) on an input holding a signaling
    NaN: NaN (MIN/MAX keep the input's bits), without numpy's "invalid value encountered in
    cast" warning from the NaN's cast to float64."""
    bits = {np.float16: (np.uint16, 0x7C01, 0x3C00), np.float32: (np.uint32, 0x7F800001, 0x3F800000)}[dtype]
    x = np.array([[bits[1], bits[2]], [bits[2], bits[2]]], bits[0]).view(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for function in [f for f in dml.ReduceFunction if f.name not in reduction.ARG_FUNCTIONS]:
            got = reference.reduce(x, function, [1])
            assert np.isnan(got[0, 0]) and not np.isnan(got[1, 0]), function
            reduce_op.tolerance(got, [x], {"function": function, "axes": [1]})


def test_float16_subnormal_and_rounding(device):
    x = np.array([[6e-8, 6e-8, 0], [1.0, 2.0**-11, 0], [1.0, 2.0**-11, 2.0**-11]], np.float16)
    got = dml.reduce(x, "sum", [1], device=device)
    np.testing.assert_array_equal(got, reference.reduce(x, "sum", [1]))


def test_log_sum_exp_is_max_shifted(device):
    x = np.array([[1000.0, 999.0, 998.5], [-1000.0, -1001.0, -999.0], [88.0, 89.0, 90.0]], np.float32)
    for options in ({"strategy": "rows"}, {"strategy": "partials", "chunks": 2}):
        got, _ = run(device, x, "log_sum_exp", [1], **options)
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, reference.reduce(x, "log_sum_exp", [1]), rtol=1e-6)
    inf = np.float32(np.inf)
    y = np.array([[inf, 1, inf], [-inf, -inf, -inf], [-inf, 2, -inf], [np.nan, 1, 2]], np.float32)
    got = dml.reduce(y, "log_sum_exp", [1], device=device).ravel()
    np.testing.assert_array_equal(got[:2], [np.inf, -np.inf])
    np.testing.assert_allclose(got[2], 2.0)
    assert np.isnan(got[3])
    h = (np.arange(2000) % 7 + 9000).astype(np.float16).reshape(2, 1000)
    got = dml.reduce(h, "log_sum_exp", [1], device=device)
    np.testing.assert_allclose(got.astype(np.float64), reference.reduce(h, "log_sum_exp", [1]).astype(np.float64),
                               rtol=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_nan_propagates_like_numpy(device, dtype):
    nan = np.nan
    x = np.array([[1, nan, 3, nan], [5, 4, 3, 9], [nan, nan, nan, nan], [-np.inf, -np.inf, 2, -np.inf]], dtype)
    for options in ({"strategy": "rows"}, {"strategy": "partials", "chunks": 2}, {"strategy": "workgroup"},
                    {"strategy": "workgroup", "chunks": 2, "lanes": 2}):
        for function in (F.MAX, F.MIN, F.ARGMAX, F.ARGMIN, F.SUM, F.LOG_SUM_EXP):
            got, _ = run(device, x, function, [1], **options)
            want = reference.reduce(x, function, [1])
            if function == F.LOG_SUM_EXP:  # NaN where numpy has it; exp and log round as the GPU's do
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=str(options))
                np.testing.assert_allclose(got, want, rtol=4e-3 if dtype == np.float16 else 4e-6)
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"{function.name} {options}")
        got, _ = run(device, x.T.copy(), F.ARGMAX, [0], **options)  # columns
        np.testing.assert_array_equal(got, reference.reduce(x.T, F.ARGMAX, [0]))


def test_argmax_returns_first_occurrence(device):
    x = np.array([3, 2, 1, 2, 3], np.float32)  # the ties example of the DML ARGMAX page
    assert dml.reduce(x, "argmax", device=device)[0] == 0
    assert dml.reduce(x, "argmin", device=device)[0] == 2
    # Ties across chunk edges and 16-byte blocks: the lowest flat index wins.
    y = np.zeros((3, 1000), np.int8)
    y[0, [5, 400, 999]] = 7
    y[1, [999]] = -1
    for options in ({}, {"strategy": "partials", "chunks": 7},
                    {"strategy": "partials", "chunks": 3, "vectorize": False}):
        got, _ = run(device, y, "argmax", [1], **options)
        np.testing.assert_array_equal(got.ravel(), [5, 0, 0], err_msg=str(options))
        got, _ = run(device, y, "argmin", [1], **options)
        np.testing.assert_array_equal(got.ravel(), [0, 999, 0], err_msg=str(options))


def test_argmax_over_several_axes_is_row_major_in_axis_order(device):
    rng = np.random.default_rng(11)
    x = rng.integers(0, 4, (3, 4, 5, 6)).astype(np.float32)  # many ties
    for axes in ([3, 1], [1, 3], [0, 2, 3], [2, 0]):
        for options in ({}, {"strategy": "partials", "chunks": 4}):
            got, _ = run(device, x, "argmax", axes, T.INT32, **options)
            np.testing.assert_array_equal(got, reference.reduce(x, "argmax", axes, T.INT32), err_msg=str(axes))
    # The flat index over axes (1, 3) of the maximum placed at (i, 2, j, 4): 2 * 6 + 4.
    x[:, 2, :, 4] = 10
    got, _ = run(device, x, "argmax", [3, 1], T.UINT64)
    assert (got == 16).all() and got.dtype == np.uint64


# ------------------------------------------------------------------ accuracy
@pytest.mark.slow
def test_float32_sum_of_16m_is_accurate(device):
    """float32 SUM of 16M uniform [0, 1) values: within 1e-5 relative of the float64 sum
    (numpy's own pairwise float32 sum is the anchor: both errors are in the message)."""
    x = np.random.default_rng(2024).random(1 << 24, dtype=np.float32)
    exact = x.astype(np.float64).sum()
    start = time.perf_counter()
    got = float(dml.reduce(x, "sum", device=device)[0])
    seconds = time.perf_counter() - start
    ours, numpys = abs(got - exact) / exact, abs(float(x.sum(dtype=np.float32)) - exact) / exact
    assert ours < 1e-5, f"relative error {ours:.2e} (numpy float32: {numpys:.2e})"
    print(f"16M float32 sum: relative error {ours:.2e}, numpy float32 {numpys:.2e}, {seconds:.2f} s")
    rows = x.reshape(4096, 4096)
    for axis in (0, 1):
        got = dml.reduce(rows, "sum", [axis], device=device).astype(np.float64).ravel()
        want = rows.astype(np.float64).sum(axis)
        assert np.max(np.abs(got - want) / want) < 2e-6
