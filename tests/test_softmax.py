"""ACTIVATION_SOFTMAX(1), LOG_SOFTMAX(1) and HARDMAX(1) (gpudml/ops/softmax.py, one table;
kernels/normalization.py): what the conformance kit (tests/test_conformance.py) does not cover:
the pages' quirks (HARDMAX1's examples through the desc API, LOG_SOFTMAX1's wrong examples,
version 1 as version 0 on the last axis), each validation rule's message (axes: empty, out
of range, twice; the version-0 effective rank; sizes and types), the functional forms' numpy
axes, NaN and infinities, HARDMAX's ties, rows past the loop budget, every strategy forced
on layouts that merge or do not, the plan options (chunks, lanes, subgroups) and the
strategies' order by adapter class."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conformance import limited, page_text
from conftest import assert_bits_equal, bits

import gpudml as dml
from gpudml import caps as caps_module
from gpudml import cli
from gpudml.kernels import base, normalization
from gpudml.ops import softmax as softmax_op
from gpudml.ops import spec_named
from gpudml.runtime.tensor import logical_from_raw
from gpudml.testing import assert_within

T, FL = dml.DataType, dml.FeatureLevel
V1 = [spec_named(k) for k in ("softmax1", "log_softmax1", "hardmax1")]
V0 = [spec_named(k) for k in ("softmax0", "log_softmax0", "hardmax0")]
NAN, INF = float("nan"), float("inf")


@pytest.fixture(params=V1, ids=lambda spec: spec.key, scope="module")
def op(request):
    """A version-1 operator: the tests below run for each."""
    return request.param


def expected(spec, desc, x):
    want = spec.reference(x, **spec.arguments(desc))
    tolerance = None if spec.tolerance is None else spec.tolerance(want, [x], spec.arguments(desc))
    return want, tolerance


def check_strategies(device, spec, desc, raw, strategies=None, **options) -> dict:
    """Run `desc` on buffer contents `raw` under each strategy (default: each eligible one)
    and check it against the reference within the spec's precision; the outputs by strategy."""
    x = logical_from_raw(raw, desc.input_tensor)
    want, tolerance = expected(spec, desc, x)
    operator = device.create_operator(desc)
    if strategies is None:
        strategies = device.compile_operator(operator, options=options).strategies
    outs = {}
    for strategy in strategies:
        (got,) = device.compile_operator(operator, strategy, options=options).execute([raw])
        assert_within(got, want, tolerance, f"{spec.key} {strategy} {options}")
        outs[strategy] = got
    return outs


def desc_v1(spec, sizes, axes, data_type=T.FLOAT32, in_strides=None, out_strides=None):
    return spec.desc(dml.TensorDesc(data_type, sizes, in_strides), dml.TensorDesc(data_type, sizes, out_strides),
                     axes)


def rejects(device, desc, *fragments) -> str:
    with pytest.raises(dml.InvalidArgumentError) as info:
        device.create_operator(desc)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


# ------------------------------------------------------------------ the pages
def test_hardmax1_page_examples_through_the_desc_api_axes_in_either_order(device):
    """HARDMAX1's three examples (all right), as descs whose axes come in either order."""
    spec = spec_named("hardmax1")
    assert len(spec.examples) == 3
    for example in spec.examples:
        axes = example.args["axes"]
        for order in (axes, axes[::-1]):
            desc = desc_v1(spec, [2, 2, 2], order)
            (got,) = device.compile_operator(device.create_operator(desc)).execute([example.input])
            assert_bits_equal(got, example.expected)


def test_log_softmax1_page_examples_are_hardmax1s_and_not_stored():
    """LOG_SOFTMAX1's page prints HARDMAX1's examples (0/1 outputs): the stored excerpt
    leaves them out, the spec has none, and the log-softmax of the page's input is not them."""
    log_softmax1, hardmax1 = spec_named("log_softmax1"), spec_named("hardmax1")
    assert not log_softmax1.examples
    assert "## Examples" not in page_text(softmax_op.TABLE[3].page_file)
    for example in hardmax1.examples:
        got = log_softmax1.reference(example.input, **example.args)
        assert np.all(got <= 0) and not np.array_equal(got, example.expected)


def test_version_1_on_the_last_axis_is_version_0(device):
    """Each v1 page's remark: AxisCount 1, Axes {DimensionCount - 1} is version 0; bit for
    bit here (the same kernels), effective rank 2 at rank 4."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(1, 1, 5, 37)).astype(np.float32) * 4
    for v0, v1 in zip(V0, V1, strict=True):
        (a,) = device.compile_operator(device.create_operator(v0.infer_output(dml.TensorDesc(T.FLOAT32, x.shape)))) \
            .execute([x])
        (b,) = device.compile_operator(device.create_operator(
            v1.infer_output(dml.TensorDesc(T.FLOAT32, x.shape), axes=[3]))).execute([x])
        assert_bits_equal(a, b)


def test_names_and_descs():
    """API.md 11: the newest version has the plain name; desc classes Activation<X>OperatorDesc."""
    assert dml.softmax is dml.FUNCTIONS["softmax"] and spec_named("softmax").key == "softmax1"
    assert spec_named("log_softmax").key == "log_softmax1" and spec_named("hardmax").key == "hardmax1"
    assert spec_named("softmax0").desc is dml.ActivationSoftmaxOperatorDesc
    assert spec_named("hardmax1").desc is dml.ActivationHardmax1OperatorDesc
    assert [f.name for f in dataclasses.fields(dml.ActivationLogSoftmax1OperatorDesc)] == [
        "input_tensor", "output_tensor", "axes"]
    assert [f.name for f in dataclasses.fields(dml.ActivationLogSoftmaxOperatorDesc)] == [
        "input_tensor", "output_tensor"]


# ------------------------------------------------------------------ validation
def test_axes_rules_name_field_rule_and_values(at_level, op):
    device = at_level(FL.FL_5_1)
    name = op.name
    rejects(device, desc_v1(op, [2, 3, 4], []), name, "axes must name at least one axis (AxisCount is 0)")
    rejects(device, desc_v1(op, [2, 3, 4], [0, 3]), name, "axes[1] = 3 is outside [0, 2] (DimensionCount 3)")
    rejects(device, desc_v1(op, [2, 3, 4], [-1]), name, "axes[0] = -1 is outside [0, 2]")
    rejects(device, desc_v1(op, [2, 3, 4], [2, 0, 2]), name, "axes[2] = 2 repeats an axis (axes [2, 0, 2])")
    with pytest.raises(dml.InvalidArgumentError, match=f"{name}: axes"):
        desc_v1(op, [2, 3], [0.5])
    with pytest.raises(dml.InvalidArgumentError, match=f"{name}: axes"):
        desc_v1(op, [2, 3], None)


def test_tensor_rules(at_level, op):
    device = at_level(FL.FL_5_1)
    x = dml.TensorDesc(T.FLOAT32, [2, 3])
    rejects(device, op.desc(x, dml.TensorDesc(T.FLOAT32, [2, 4]), [1]),
            "output_tensor.sizes [2, 4] must equal input_tensor.sizes [2, 3]")
    rejects(device, op.desc(x, dml.TensorDesc(T.FLOAT16, [2, 3]), [1]),
            "output_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32")
    rejects(device, desc_v1(op, [2, 3], [1], T.INT32), "input_tensor.data_type INT32 is not supported at FL_5_1")
    rejects(device, desc_v1(op, [2, 3], [1], T.FLOAT64), "FLOAT64 is not supported")
    rejects(at_level(FL.FL_5_0), desc_v1(op, [2, 3], [1]), "not available at feature level FL_5_0",
            "introduced at FL_5_1")


@pytest.mark.parametrize("spec", V0, ids=lambda s: s.key)
def test_version_0_effective_rank(at_level, spec):
    """At most 2 without the leftmost axes of size 1; the page's ranks per level."""
    device = at_level(FL.FL_3_0)
    for sizes in ([1, 1, 3, 4], [1, 1, 1, 4], [5], [1, 3, 1], [7, 1]):
        device.create_operator(spec.infer_output(dml.TensorDesc(T.FLOAT16, sizes)))
    for sizes, effective in (([2, 1, 3, 4], 4), ([1, 3, 1, 4], 3), ([2, 2, 2], 3)):
        rejects(device, spec.infer_output(dml.TensorDesc(T.FLOAT32, sizes)), spec.name,
                f"input_tensor.sizes {sizes} has effective rank {effective}", "it must be at most 2")
    rejects(at_level(FL.FL_1_0), spec.infer_output(dml.TensorDesc(T.FLOAT32, [1, 3, 4])),
            "DimensionCount 3 is not supported at FL_1_0 (supported: 4); it needs FL_3_0 or later")
    at_level(FL.FL_1_0).create_operator(spec.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 3, 4])))
    rejects(at_level(FL.FL_2_0), spec.infer_output(dml.TensorDesc(T.FLOAT32, [1, 1, 1, 1, 1, 4])),
            "DimensionCount 6 is not supported at FL_2_0 (supported: 4, 5)")


def test_functional_axes_as_numpy_takes_them(vulkan_device, op):
    """Negative axes count from the end, one int is one axis, None is every axis, the
    default is the last; duplicates and axes out of range are InvalidArgumentErrors."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 4, 5)).astype(np.float32)
    fn = dml.FUNCTIONS[op.functional_name]
    for axes, same in (((-1,), (2,)), (-2, (1,)), (None, (0, 1, 2)), ([0, -1], (2, 0))):
        got = fn(x, axes, device=vulkan_device)
        assert_bits_equal(got, fn(x, list(same), device=vulkan_device))
        want, tolerance = expected(op, op.infer_output(dml.TensorDesc(T.FLOAT32, x.shape), axes), x)
        assert_within(got, want, tolerance)
    assert_bits_equal(fn(x, device=vulkan_device), fn(x, [2], device=vulkan_device))
    with pytest.raises(dml.InvalidArgumentError, match=rf"{op.functional_name}: axes \[1, -2\] name axis 1 twice"):
        fn(x, [1, -2], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=rf"{op.functional_name}: axes\[0\] = 3 is outside \[-3, 2\]"):
        fn(x, [3], device=vulkan_device)


# ------------------------------------------------------------------ NaN, infinities, ties
def _run(device, spec, x, **args):
    return dml.FUNCTIONS[spec.functional_name](np.asarray(x, np.float32), device=device, **args)


def test_softmax_special_values(device):
    """A row whose maximum is not finite (NaN, +inf, or all -inf) is NaN throughout; -inf
    elsewhere gives 0 (log-softmax -inf); large inputs stay finite (max-shifted)."""
    softmax, log_softmax = spec_named("softmax"), spec_named("log_softmax")
    x = np.array([[1, NAN, 2, 3], [1, INF, 2, 3], [-INF] * 4, [-INF, 0, -INF, 0], [1000, 1000, -1000, 999]],
                 np.float32)
    for spec in (softmax, log_softmax):
        strategies = device.compile_operator(device.create_operator(
            spec.infer_output(dml.TensorDesc(T.FLOAT32, x.shape), [1]))).strategies
        for strategy in strategies:
            desc = spec.infer_output(dml.TensorDesc(T.FLOAT32, x.shape), [1])
            (got,) = device.compile_operator(device.create_operator(desc), strategy).execute([x])
            assert np.isnan(got[:3]).all(), (spec.key, strategy, got)
            assert not np.isnan(got[3:]).any()
            if spec is softmax:
                np.testing.assert_allclose(got[3], [0, 0.5, 0, 0.5], atol=1e-7)
                np.testing.assert_allclose(got[4], [np.e / (2 * np.e + 1)] * 2 + [0, 1 / (2 * np.e + 1)], rtol=1e-6)
            else:
                assert list(got[3][[0, 2]]) == [-INF, -INF]
                np.testing.assert_allclose(got[3][[1, 3]], [-np.log(2)] * 2, rtol=1e-6)
                assert got[4][2] < -1000 and np.isfinite(got[4]).all()
            assert_within(got, spec.reference(x, [1]), spec.tolerance(spec.reference(x, [1]), [x], {"axes": [1]}))


def test_hardmax_ties_nan_and_signed_zeros(device):
    """1 at the first largest element: ties go to the first, -0.0 and 0.0 are equal, NaN
    counts as the largest (the first NaN), a row of -inf marks its first element."""
    hardmax = spec_named("hardmax")
    x = np.array([[1, 3, 3, 2], [-0.0, 0.0, -1, -0.0], [0.0, -0.0, -2, -3], [1, NAN, 5, NAN], [-INF] * 4,
                  [2, INF, INF, -INF]], np.float32)
    want = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0]], np.float32)
    assert_bits_equal(hardmax.reference(x, [1]), want)
    desc = hardmax.infer_output(dml.TensorDesc(T.FLOAT32, x.shape), [1])
    check_strategies(device, hardmax, desc, x)
    # Columns, and both axes: the first in row-major order over the reduced axes.
    assert_bits_equal(_run(device, hardmax, x, axes=[0]), hardmax.reference(x, [0]))
    both = _run(device, hardmax, np.array([[1, 5, 5], [5, 2, 5]], np.float32), axes=[1, 0])
    assert_bits_equal(both, np.array([[0, 1, 0], [0, 0, 0]], np.float32))


def test_float16_computes_in_float32_and_rounds_once(device, op):
    rng = np.random.default_rng(5)
    x = (rng.normal(size=(6, 50)) * 5).astype(np.float16)
    check_strategies(device, op, op.infer_output(dml.TensorDesc(T.FLOAT16, x.shape), [1]), x)


# ------------------------------------------------------------------ strategies, layouts, the loop budget
def _sample(op, desc, seed):
    return op.sample_buffers(desc, np.random.default_rng(seed))[0]


LAYOUTS = [  # (sizes, axes, input strides, output strides)
    ([4, 5, 6], [1], None, None),
    ([4, 5, 6], [0, 2], None, None),                        # not contiguous: two reduced axes
    ([3, 4, 5, 2], [1, 2], None, None),                     # merged into one
    ([3, 4, 5], [2, 0], [1, 3, 12], None),                  # axes stored in another order
    ([3, 4, 5], [1], [0, 7, 1], [30, 6, 1]),                # broadcast input, strided output
    ([2, 3, 4], [0, 1, 2], [40, 12, 2], None),              # every axis, strided
    ([1, 1, 300], [2], None, None),
]


@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
def test_every_strategy_on_layouts(device, op, layout):
    sizes, axes, in_strides, out_strides = LAYOUTS[layout]
    desc = desc_v1(op, sizes, axes, in_strides=in_strides, out_strides=out_strides)
    outs = check_strategies(device, op, desc, _sample(op, desc, layout))
    assert set(outs) == {"rows", "chunks", "workgroup"}


def test_plan_options(device, op):
    """chunks 1, 3 and one per element; lanes 1, 4 and 256; the butterfly through workgroup
    memory only: each within the precision, the two butterflies bit for bit the same."""
    desc = desc_v1(op, [5, 7, 30], [0, 2])
    raw = _sample(op, desc, 11)
    for chunks in (1, 3, 150):
        check_strategies(device, op, desc, raw, ["chunks"], chunks=chunks)
    for lanes in (1, 4, 256):
        default = check_strategies(device, op, desc, raw, ["workgroup"], lanes=lanes)["workgroup"]
        memory = check_strategies(device, op, desc, raw, ["workgroup"], lanes=lanes, subgroups=False)["workgroup"]
        assert np.array_equal(bits(default), bits(memory))
    compiled = device.compile_operator(device.create_operator(desc), "workgroup", options={"subgroups": False})
    assert not any("subgroupShuffleXor" in w for w in compiled.wgsl)
    if not device.caps.has("subgroup"):
        with pytest.raises(dml.InvalidArgumentError, match="subgroups = True needs an adapter"):
            device.compile_operator(device.create_operator(desc), "workgroup", options={"subgroups": True})
    with pytest.raises(dml.InvalidArgumentError, match="option lanes = 3 must be a power of two"):
        device.compile_operator(device.create_operator(desc), "workgroup", options={"lanes": 3})


@pytest.mark.parametrize("dtype", [T.FLOAT32, T.FLOAT16])
def test_rows_of_whole_blocks(device, adapter, op, dtype, monkeypatch):
    """Rows of whole 16-byte blocks, read and written a block at a time by `rows` and
    `chunks` (kernels/normalization.py's _modes): NaN, +inf, -inf rows and ties, `rows` bit for
    bit as element by element (BLOCKS = False), chunks of a length rounded up to whole
    blocks, in 256-byte bindings; an input whose rows start past a gap (element by element)
    and an output so (stored element by element)."""
    x = (np.random.default_rng(7).normal(size=(6, 24)) * 3).astype(np.float32)
    x[0, 5], x[1, 17], x[2], x[3, [4, 9, 20]] = NAN, INF, -INF, 8
    raw = x.astype(np.float16 if dtype == T.FLOAT16 else np.float32)
    desc = desc_v1(op, [6, 24], [1], dtype)
    for dev in (device, limited(adapter)):
        outs = check_strategies(dev, op, desc, raw, ["rows", "chunks"])
        check_strategies(dev, op, desc, raw, ["chunks"], chunks=4)
        assert ": array<vec4<u32>>" in dev.compile_operator(dev.create_operator(desc), "rows").wgsl[0]
        monkeypatch.setattr(normalization, "BLOCKS", False)
        elements = dev.compile_operator(dev.create_operator(desc), "rows")
        monkeypatch.setattr(normalization, "BLOCKS", True)
        assert ": array<vec4<u32>>" not in elements.wgsl[0]
        assert_bits_equal(outs["rows"], elements.execute([raw])[0])
    padded = [32, 1]  # rows of 24 elements 32 apart: whole blocks still
    gapped = [25, 1]  # rows not on blocks: element by element
    for inp, out in ((padded, gapped), (gapped, padded)):
        strided = desc_v1(op, [6, 24], [1], dtype, inp, out)
        check_strategies(device, op, strided, _sample(op, strided, 8), ["rows", "chunks"])


def test_rows_past_the_loop_budget(device, op):
    """A row of 40,000 elements is too long for one invocation's passes (`rows` is not
    offered) and runs in chunks and in a workgroup; one of 5,000,000 in chunks only."""
    desc = desc_v1(op, [2, 40_000], [1])
    assert normalization.passes(op.desc.ROW.function) * 40_000 > base.LOOP_BUDGET
    outs = check_strategies(device, op, desc, _sample(op, desc, 2))
    assert set(outs) == {"chunks", "workgroup"}
    long = desc_v1(op, [5_000_000], [0])
    outs = check_strategies(device, op, long, _sample(op, long, 3))
    assert set(outs) == {"chunks"}


def test_rows_beyond_what_chunks_merge_are_unsupported(op):
    """A broadcast row longer than max_row: no strategy within the loop budget."""
    n = normalization.max_row(op.desc.ROW.function) + 1
    desc = op.desc(dml.TensorDesc(T.FLOAT32, [n], [0]), dml.TensorDesc(T.FLOAT32, [n]), [0])
    with pytest.raises(dml.UnsupportedError, match=f"rows of {n} elements are too long"):
        op.planner.strategies_for(desc, caps_module.profile("vulkan-cpu"))


def test_strategy_order_by_adapter_class(op):
    """CPU adapters: `rows` first (many rows, or short ones), `chunks` first for few long
    rows; GPUs: `workgroup` first."""
    cpu, gpu = caps_module.profile("vulkan-cpu"), caps_module.profile("gpu")
    many = desc_v1(op, [512, 100], [1])
    few_long = desc_v1(op, [2, 8000], [1])
    assert op.planner.strategies_for(many, cpu) == ("rows", "chunks", "workgroup")
    assert op.planner.strategies_for(few_long, cpu) == ("chunks", "rows", "workgroup")
    assert op.planner.strategies_for(many, gpu)[0] == "workgroup"
    assert op.planner.strategies_for(few_long, None)[0] == "chunks"


def test_gpudml_shader_takes_the_axes(capsys):
    assert cli.main(["shader", "softmax1", "--shape", "8,300", "--axes", "0"]) == 0
    assert "fn main" in capsys.readouterr().out
    assert cli.main(["shader", "hardmax0", "--shape", "1,1,4,300", "--dtype", "FLOAT16"]) == 0
    assert "fn main" in capsys.readouterr().out
