"""DML_OPERATOR_GEMM (gpudml/ops/gemm.py; kernels/gemm.py): what the conformance kit
(tests/test_conformance.py) does not cover: edge sizes (1, primes, tiles cut at every edge),
K past the loop budget (split-K) on both strategies, transposes as strides, C broadcast and
alpha/beta, every fused activation, FLOAT16 accumulated in float32, batch broadcasting of
the functional form, each validation rule's message, the plan options and the strategies'
order by adapter class, `gpudml shader gemm`."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import assert_bits_equal

import gpudml as dml
from gpudml import caps as caps_module
from gpudml import cli
from gpudml.kernels import base
from gpudml.kernels import gemm as family
from gpudml.kernels.epilogue import EpilogueParams
from gpudml.ops import gemm as gemm_op
from gpudml.ops import spec_named
from gpudml.ops.elementwise import FUSABLE
from gpudml.testing import assert_within

T = dml.DataType
SPEC = spec_named("gemm")
STRATEGIES = ("registers", "workgroup")


def desc_of(a, b, c=None, **kwargs):
    descs = [dml.TensorDesc(T.from_numpy(x.dtype), x.shape) for x in (a, b, c) if x is not None]
    return gemm_op.infer_output(*descs, **kwargs)


def check(device, a, b, c=None, strategies=STRATEGIES, options=None, **kwargs):
    """Run gemm(a, b, c, **kwargs) under each strategy against the reference within the
    documented precision; the outputs by strategy."""
    desc = desc_of(a, b, c, **kwargs)
    want = SPEC.reference(a, b, c, **kwargs)
    inputs = [x for x in (a, b, c) if x is not None]
    tolerance = SPEC.tolerance(want, inputs, SPEC.arguments(desc))
    op = device.create_operator(desc)
    outs = {}
    for strategy in strategies:
        compiled = device.compile_operator(op, strategy, options=options)
        (got,) = compiled.execute(inputs)
        assert_within(got, want, tolerance, f"gemm {strategy} {options} {kwargs}")
        outs[strategy] = (got, compiled)
    return outs


def uniform(rng, shape, dtype=np.float32):
    return rng.uniform(-1, 1, shape).astype(dtype)


@pytest.mark.parametrize(("m", "k", "n"), [(1, 1, 1), (1, 7, 1), (2, 3, 5), (13, 1, 17), (31, 37, 29),
                                           (65, 3, 66), (5, 130, 1), (1, 64, 97)])
def test_edge_sizes(device, m, k, n):
    """Sizes 1, primes and tiles cut at every edge: both strategies, the reference's result."""
    rng = np.random.default_rng([m, k, n])
    check(device, uniform(rng, (m, k)), uniform(rng, (k, n)))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_k_past_the_loop_budget(device, strategy):
    """K longer than one invocation's loop budget: partial sums (split-K) and a combine pass,
    within the bound relative to K."""
    rng = np.random.default_rng(1)
    k = base.LOOP_BUDGET * 2 + 5
    a, b = uniform(rng, (3, k)), uniform(rng, (k, 2))
    outs = check(device, a, b, uniform(rng, (3, 2)), strategies=(strategy,), alpha=0.5, beta=-1.0)
    _, compiled = outs[strategy]
    assert len(compiled.program.kernels) == 2  # partial sums, combine


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_transposes_are_strides(device, trans_a, trans_b):
    """TransA / TransB read the operand through swapped strides: the reference's result."""
    rng = np.random.default_rng([trans_a, trans_b])
    m, k, n = 19, 23, 21
    a = uniform(rng, (k, m) if trans_a else (m, k))
    b = uniform(rng, (n, k) if trans_b else (k, n))
    check(device, a, b, trans_a=trans_a, trans_b=trans_b)
    desc = desc_of(a, b, trans_a=trans_a, trans_b=trans_b)
    assert desc.a_tensor.sizes == a.shape and desc.output_tensor.sizes == (m, n)


@pytest.mark.parametrize("c_shape", [(9, 11), (11,), (9, 1), (1,), (1, 11)])
def test_c_broadcast_alpha_beta(device, c_shape):
    """C broadcast to the result by stride-0 descriptions; alpha and beta."""
    rng = np.random.default_rng(len(c_shape))
    a, b, c = uniform(rng, (9, 5)), uniform(rng, (5, 11)), uniform(rng, c_shape)
    check(device, a, b, c, alpha=-0.75, beta=2.5)
    desc = desc_of(a, b, c)
    assert desc.c_tensor.sizes == (9, 11)
    assert c_shape == (9, 11) or 0 in desc.c_tensor.strides


def test_beta_without_c_is_unused(device):
    rng = np.random.default_rng(3)
    a, b = uniform(rng, (4, 6)), uniform(rng, (6, 3))
    got = dml.gemm(a, b, beta=1e30, alpha=2.0, device=device)
    assert_within(got, 2.0 * (a.astype(np.float64) @ b).astype(np.float32),
                  SPEC.tolerance(got, [a, b], {"alpha": 2.0}), "beta")


@pytest.mark.parametrize("name", sorted(FUSABLE))
def test_fused_activations(device, name):
    """Every fusable activation, applied in the kernel's store (one dispatch)."""
    rng = np.random.default_rng(len(name))
    a, b, c = uniform(rng, (7, 9)) * 3, uniform(rng, (9, 6)), uniform(rng, (6,))
    outs = check(device, a, b, c, fused_activation=name, beta=0.5)
    for _, compiled in outs.values():
        assert len(compiled.program.kernels) == 1


def test_float16_accumulates_in_float32(device):
    """FLOAT16 operands, products and sums in float32: K = 4096 ones and a tiny value sum to
    exactly 4096 (float16 accumulation would stop at 2048), rounded once."""
    k = 4096
    a = np.ones((2, k), np.float16)
    b = np.ones((k, 3), np.float16)
    for strategy, (got, _) in check(device, a, b).items():
        assert got.dtype == np.float16 and (got == 4096).all(), strategy
    rng = np.random.default_rng(5)
    check(device, uniform(rng, (17, 33), np.float16), uniform(rng, (33, 9), np.float16),
          uniform(rng, (9,), np.float16), fused_activation="tanh", alpha=0.5)


def test_batches_broadcast_like_numpy(device):
    """The functional form's batch axes broadcast as numpy's matmul does (stride 0, no copy)."""
    rng = np.random.default_rng(6)
    cases = [((3, 4, 5), (5, 2)), ((4, 5), (2, 3, 5, 6)), ((2, 1, 4, 5), (1, 3, 5, 6)), ((1, 4, 5), (3, 5, 6))]
    for sa, sb in cases:
        a, b = uniform(rng, sa), uniform(rng, sb)
        got = dml.gemm(a, b, device=device)
        want = np.matmul(a.astype(np.float64), b)
        assert got.shape == want.shape
        assert_within(got, want.astype(np.float32), SPEC.tolerance(got, [a, b], {}), str((sa, sb)))
        check(device, a, b)
    desc = desc_of(uniform(rng, (4, 5)), uniform(rng, (2, 3, 5, 6)))
    assert desc.a_tensor.strides == (0, 0, 5, 1)


def test_strided_and_broadcast_operands(device):
    """Descriptions with gaps between rows, a stride-0 batch axis and a strided output."""
    rng = np.random.default_rng(7)
    a_raw, b_raw = uniform(rng, 600), uniform(rng, 600)
    a = dml.TensorDesc(T.FLOAT32, [2, 5, 7], [0, 9, 1])  # one A for both batches, rows 9 apart
    b = dml.TensorDesc(T.FLOAT32, [2, 7, 4], [40, 1, 8])  # each batch's B stored transposed
    out = dml.TensorDesc(T.FLOAT32, [2, 5, 4], [30, 6, 1])
    desc = gemm_op.GemmOperatorDesc(a, b, None, out)
    la = np.lib.stride_tricks.as_strided(a_raw, (2, 5, 7), (0, 36, 4))
    lb = np.lib.stride_tricks.as_strided(b_raw, (2, 7, 4), (160, 4, 32))
    want = (la.astype(np.float64) @ lb).astype(np.float32)
    op = device.create_operator(desc)
    for strategy in STRATEGIES:
        (got,) = device.compile_operator(op, strategy).execute([a_raw, b_raw])
        assert_within(got, want, SPEC.tolerance(want, [la, lb], {}), strategy)


@pytest.mark.parametrize("options", [{"tile": (1, 1)}, {"tile": (8, 2)}, {"tile": (2, 8)}, {"block_k": 8},
                                     {"block_k": 32}, {"chunks": 3}])
def test_plan_options(device, options):
    """Other register tiles, BK and chunks: the same result."""
    rng = np.random.default_rng(8)
    strategies = ("workgroup",) if "block_k" in options else STRATEGIES
    check(device, uniform(rng, (37, 41)), uniform(rng, (41, 35)), uniform(rng, (35,)), strategies=strategies,
          options=options)


SUBGROUP_CASES = [  # (m, k, n, dtype, options): edges, K not a multiple of BK, split-K, every tile side
    (37, 41, 35, np.float32, {}), (64, 64, 64, np.float32, {"tile": (8, 8), "block_k": 32}),
    (19, 300, 70, np.float16, {"tile": (1, 2), "block_k": 8, "chunks": 3}), (5, 9, 130, np.float32, {"tile": (2, 1)}),
]


def test_workgroup_subgroups_shuffle_a_like_workgroup_memory(device):
    """The workgroup strategy's A operands handed on through subgroupShuffle (where the
    adapter has subgroups: lavapipe's are 8 wide, groups of SG_SHARE = 4 inside them; not
    GL) give the workgroup-memory reads' results bit for bit (the same products in the same
    order), within the documented precision; with C, transposed A, FLOAT16 and split-K.
    Without the feature the option is not offered and True is an error."""
    has = device.caps.has("subgroup")
    rng = np.random.default_rng(31)
    for m, k, n, dtype, options in SUBGROUP_CASES:
        kw = {"trans_a": "TRANSPOSE"} if dtype == np.float16 else {}
        a = uniform(rng, (k, m) if kw else (m, k), dtype)
        b, c = uniform(rng, (k, n), dtype), uniform(rng, (n,), dtype)
        outs = check(device, a, b, c, strategies=("workgroup",), options={**options, "subgroups": False}, **kw)
        tree, compiled = outs["workgroup"]
        assert not any("subgroupShuffle" in w for w in compiled.wgsl)
        default = device.compile_operator(device.create_operator(desc_of(a, b, c, **kw)), "workgroup",
                                          options=options)
        assert all(("subgroupShuffle" in w) == has for w in default.wgsl[:1]), (m, k, n)
        assert_bits_equal(default.execute([a, b, c])[0], tree)
    f32 = dml.TensorDesc(T.FLOAT32, [64, 64])
    desc = gemm_op.GemmOperatorDesc(f32, f32, None, f32)
    assert ({"subgroups": False} in SPEC.planner.variants(desc, device.caps, "workgroup")) == has
    if not has:
        with pytest.raises(dml.InvalidArgumentError, match="subgroups = True needs an adapter with the feature"):
            SPEC.planner.plan(desc, device.caps, "workgroup", subgroups=True)


REGISTERS_CASES = [  # (m, k, n, dtype, trans_a, trans_b, options): K % 4 = 3, tiles cut at every edge
    (37, 131, 64, np.float32, False, False, {}), (37, 131, 64, np.float32, True, False, {"chunks": 3}),
    (21, 130, 72, np.float32, False, True, {"tile": (8, 8)}), (19, 67, 64, np.float16, True, True, {}),
    (9, 41, 35, np.float32, False, False, {}),
]


def test_registers_blocks_and_shared_rows_give_the_elements_bits(device):
    """`registers` reading 16-byte blocks (A along K or M, B along N or K), 4 k per step,
    and sharing A's reads across the subgroup (where the adapter has subgroups and the
    tile columns fill whole subgroups) gives the element-by-element kernel's results bit for
    bit (the same products in the same order); with C, transposes, FLOAT16, split-K."""
    rng = np.random.default_rng(12)
    for m, k, n, dtype, ta, tb, options in REGISTERS_CASES:
        kw = {"trans_a": "TRANSPOSE"} if ta else {}
        kw.update({"trans_b": "TRANSPOSE"} if tb else {})
        a, b = uniform(rng, (k, m) if ta else (m, k), dtype), uniform(rng, (n, k) if tb else (k, n), dtype)
        c = uniform(rng, (n,), dtype)
        (got, compiled), = check(device, a, b, c, strategies=("registers",), options=options, **kw).values()
        params = compiled.program.kernels[0].params
        # (shared where the adapter has subgroups, the tile's rows fill them and so do its tile columns)
        shared = (device.caps.has("subgroup") and params["tm"] % family.SHARE_LANES == 0
                  and -(-n // params["tn"]) % family.SHARE_LANES == 0)
        assert any("subgroupBroadcast" in w for w in compiled.wgsl) == shared, (m, k, n)
        alone = device.compile_operator(device.create_operator(desc_of(a, b, c, **kw)), "registers",
                                        options={**options, "subgroups": False})
        assert not any("subgroupBroadcast" in w for w in alone.wgsl)
        assert_bits_equal(alone.execute([a, b, c])[0], got)
        elements = {**options, "tile": (params["tm"], params["tn"]), "subgroups": False}
        try:
            family.CPU_BLOCKS = False
            plain = device.compile_operator(device.create_operator(desc_of(a, b, c, **kw)), "registers",
                                            options=elements)
        finally:
            family.CPU_BLOCKS = True
        assert not any("_block(" in w for w in plain.wgsl)
        assert_bits_equal(plain.execute([a, b, c])[0], got)


def test_registers_block_axes():
    """`registers` reads A as blocks along K (row-major) or M (transposed), B along N or K,
    where the strides allow (FLOAT32; the tile's side a whole block for M and N)."""
    caps = caps_module.profile("vulkan-cpu")
    f32, f16 = dml.TensorDesc(T.FLOAT32, [64, 64]), dml.TensorDesc(T.FLOAT16, [64, 64])
    for trans, axes in (("NONE", ("k", "n")), ("TRANSPOSE", ("m", "k"))):
        p = gemm_op.problem(gemm_op.GemmOperatorDesc(f32, f32, None, f32, trans, trans))
        params = family.plan(p, caps, "registers").dispatches[0].params
        assert (params["block_a"], params["block_b"]) == axes
        assert params["share_a"] == family.SHARE_LANES
    for desc in (gemm_op.GemmOperatorDesc(f16, f16, None, f16), gemm_op.GemmOperatorDesc(
            *(dml.TensorDesc(T.FLOAT32, [63, 63]),) * 2, None, dml.TensorDesc(T.FLOAT32, [63, 63]))):
        params = family.plan(gemm_op.problem(desc), caps, "registers").dispatches[0].params
        assert (params["block_a"], params["block_b"]) == ("", "")
    params = family.plan(gemm_op.problem(gemm_op.GemmOperatorDesc(f32, f32, None, f32)), caps_module.profile("gl-cpu"),
                         "registers").dispatches[0].params
    assert params["share_a"] == 0  # (no subgroups on GL)
    f72 = dml.TensorDesc(T.FLOAT32, [64, 72])  # (9 tile columns: no whole subgroup of them, no shared steps)
    params = family.plan(gemm_op.problem(gemm_op.GemmOperatorDesc(f32, f72, None, f72)), caps,
                         "registers").dispatches[0].params
    assert params["share_a"] == 0


def test_registers_stores_the_tile_in_one_loop_where_the_store_reads_tensors():
    """`registers` stores its tile through one loop over the rows of an array of the sums (a
    row's tn stores unrolled) where its store reads tensors of its own (a fused graph's
    epilogue: one inlined copy of those loads and their index arithmetic per output of a
    16 x 8 tile made a fused convolution's compile on lavapipe 10-20x longer:
    docs/performance.md, "A model's cold start"); a plain store stays unrolled (the loop
    costs a cheap store run time)."""
    caps = caps_module.profile("vulkan-cpu")
    f32 = dml.TensorDesc(T.FLOAT32, [64, 64])
    dispatch = family.plan(gemm_op.problem(gemm_op.GemmOperatorDesc(f32, f32, None, f32)), caps,
                           "registers").dispatches[0]
    tm, tn = dispatch.params["tm"], dispatch.params["tn"]
    plain = family.wgsl_parts({**dispatch.params, "pass": "direct"})
    assert plain["puts"].count("put(") == tm * tn
    reads = EpilogueParams((), ("float", "float"), (32, 32), "float", 32, 2)  # (the value and one tensor)
    looped = family.wgsl_parts({**dispatch.params, "pass": "direct", "epilogue": reads})
    assert looped["puts"].count("put(") == tn and f"var sums = array<array<ACC, {tn}>, {tm}>" in looped["puts"]
    alone = EpilogueParams((), ("float",), (32,), "float", 32, 2)  # (an activation of the value only)
    assert family.wgsl_parts({**dispatch.params, "pass": "direct", "epilogue": alone})["puts"] == plain["puts"]


def test_registers_single_k_loop_only_where_k_is_left_over():
    """`registers` carries its loop of single k (after the steps of 4) only where a chunk
    ends past its steps: K % 4 != 0, or chunks of a length that is no multiple of 4; the
    results match numpy's either way (test_registers_blocks_and_shared_rows_give_the_elements_bits
    compares the bits)."""
    caps = caps_module.profile("vulkan-cpu")
    for k, tail in ((64, False), (67, True)):
        a, b = dml.TensorDesc(T.FLOAT32, [32, k]), dml.TensorDesc(T.FLOAT32, [k, 32])
        out = dml.TensorDesc(T.FLOAT32, [32, 32])
        dispatch = family.plan(gemm_op.problem(gemm_op.GemmOperatorDesc(a, b, None, out)), caps,
                               "registers").dispatches[0]
        assert dispatch.params["tail"] == tail
        assert bool(family.wgsl_parts({**dispatch.params, "pass": "direct"})["tail"]) == tail


def test_vector_loads_where_the_layout_allows():
    """The workgroup strategy reads 16-byte blocks of A and B where their contiguous axis has
    stride 1 and rows start on block boundaries (FLOAT32); element by element elsewhere."""
    caps = caps_module.profile("gpu")
    f32 = dml.TensorDesc(T.FLOAT32, [64, 64])
    packed = gemm_op.problem(gemm_op.GemmOperatorDesc(f32, f32, None, f32))
    params = family.plan(packed, caps, "workgroup").dispatches[0].params
    assert params["vec_a"] and params["vec_b"]
    odd = dml.TensorDesc(T.FLOAT32, [63, 63])
    params = family.plan(gemm_op.problem(gemm_op.GemmOperatorDesc(odd, odd, None, odd)), caps,
                         "workgroup").dispatches[0].params
    assert not params["vec_a"] and not params["vec_b"]
    transposed = gemm_op.problem(gemm_op.GemmOperatorDesc(f32, f32, None, f32, trans_a="TRANSPOSE"))
    params = family.plan(transposed, caps, "workgroup").dispatches[0].params
    assert not params["vec_a"] and params["vec_b"]


def test_strategy_order_by_adapter_class():
    f32 = dml.TensorDesc(T.FLOAT32, [64, 64])
    desc = gemm_op.GemmOperatorDesc(f32, f32, None, f32)
    assert SPEC.planner.strategies_for(desc, caps_module.profile("vulkan-cpu"))[0] == "registers"
    assert SPEC.planner.strategies_for(desc, caps_module.profile("gpu"))[0] == "workgroup"
    assert SPEC.planner.strategies_for(desc, None)[0] == "registers"


def test_split_k_chunks():
    """`registers` cuts K into chunks of about CPU_CHUNK_K (cache blocking); past the loop
    budget every strategy cuts it; a forced count below what the budget needs is raised."""
    caps = caps_module.profile("vulkan-cpu")
    f32 = lambda *s: dml.TensorDesc(T.FLOAT32, list(s))  # noqa: E731
    short = gemm_op.problem(gemm_op.GemmOperatorDesc(f32(8, 64), f32(64, 8), None, f32(8, 8)))
    assert len(family.plan(short, caps, "registers").dispatches) == 1
    long = gemm_op.problem(gemm_op.GemmOperatorDesc(f32(8, 1024), f32(1024, 8), None, f32(8, 8)))
    plan = family.plan(long, caps, "registers")
    assert len(plan.dispatches) == 2 and plan.dispatches[0].uniforms["chunks"] == 1024 // family.CPU_CHUNK_K
    k = base.LOOP_BUDGET * 3
    huge = gemm_op.problem(gemm_op.GemmOperatorDesc(f32(1, k), f32(k, 1), None, f32(1, 1)))
    plan = family.plan(huge, caps, "workgroup", chunks=1)
    assert plan.dispatches[0].uniforms["chunk_len"] < base.LOOP_BUDGET


def test_bad_options():
    f32 = dml.TensorDesc(T.FLOAT32, [4, 4])
    p = gemm_op.problem(gemm_op.GemmOperatorDesc(f32, f32, None, f32))
    for options in ({"tile": (3, 4)}, {"tile": 4}, {"block_k": 12}, {"chunks": 0}):
        with pytest.raises(dml.InvalidArgumentError, match="Gemm: option"):
            family.plan(p, None, "registers" if "block_k" not in options else "workgroup", **options)


# ============================================================================ bad input
def _f(*sizes, dt=T.FLOAT32, strides=None):
    return dml.TensorDesc(dt, list(sizes), strides)


@pytest.mark.parametrize(("desc", "match"), [
    (lambda: gemm_op.GemmOperatorDesc(_f(2, 3), _f(4, 5), None, _f(2, 5)),
     r"Gemm: K differs: a_tensor.sizes\[1\] = 3 \(trans_a NONE\) must equal b_tensor.sizes\[0\] = 4"),
    (lambda: gemm_op.GemmOperatorDesc(_f(2, 3), _f(3, 5), None, _f(2, 6)),
     r"Gemm: output_tensor.sizes \[2, 6\] must be \[2, 5\]"),
    (lambda: gemm_op.GemmOperatorDesc(_f(2, 3), _f(3, 5), _f(2, 1), _f(2, 5)),
     r"Gemm: c_tensor.sizes \[2, 1\] must equal output_tensor.sizes \[2, 5\]"),
    (lambda: gemm_op.GemmOperatorDesc(_f(1, 2, 3), _f(2, 3, 5), None, _f(2, 2, 5)),
     r"Gemm: a_tensor.sizes \[1, 2, 3\] must have the batch sizes of output_tensor.sizes"),
    (lambda: gemm_op.GemmOperatorDesc(_f(2, 3), _f(3, 5, dt=T.FLOAT16), None, _f(2, 5)),
     r"Gemm: b_tensor.data_type FLOAT16 must equal a_tensor.data_type FLOAT32"),
    (lambda: gemm_op.GemmOperatorDesc(_f(2, 3, dt=T.INT32), _f(3, 5, dt=T.INT32), None, _f(2, 5, dt=T.INT32)),
     r"Gemm: a_tensor.data_type INT32 is not supported at FL_6_4 \(supported: FLOAT32, FLOAT16\)"),
    (lambda: gemm_op.GemmOperatorDesc(_f(1, 1, 1, 2, 3), _f(1, 1, 1, 3, 5), None, _f(1, 1, 1, 2, 5)),
     r"Gemm: DimensionCount 5 is not supported at FL_6_4 \(supported: 2-4\)"),
    (lambda: gemm_op.GemmOperatorDesc(_f(2, 3), _f(1, 3, 5), None, _f(2, 5)), r"Gemm: .*DimensionCount"),
    (lambda: gemm_op.GemmOperatorDesc(_f(2, 3), _f(3, 5), None, _f(2, 5), trans_a="sideways"),
     r"Gemm: trans_a: 'sideways' is not a MatrixTransform"),
    (lambda: gemm_op.GemmOperatorDesc(_f(2, 3), _f(3, 5), None, _f(2, 5), alpha=1e300),
     r"Gemm: alpha = 1e\+300 is beyond FLOAT's"),
    (lambda: gemm_op.GemmOperatorDesc(_f(2, 3), _f(3, 5), None, _f(2, 5), fused_activation="softmax"),
     r"Gemm: fused_activation: 'softmax' is not an activation that fuses"),
])
def test_bad_descriptions(device, desc, match):
    """Each rule's InvalidArgumentError names the field, the rule and the values, before any GPU work."""
    with pytest.raises(dml.InvalidArgumentError, match=match):
        device.create_operator(desc())


def test_feature_level_1_0_takes_four_dimensions_only():
    desc = gemm_op.GemmOperatorDesc(_f(2, 3), _f(3, 5), None, _f(2, 5))
    with pytest.raises(dml.InvalidArgumentError, match="DimensionCount 2 is not supported at FL_1_0 .* FL_4_0"):
        SPEC.validate(desc, dml.FeatureLevel.FL_1_0)
    SPEC.validate(dataclasses.replace(desc, a_tensor=_f(1, 1, 2, 3), b_tensor=_f(1, 1, 3, 5),
                                      output_tensor=_f(1, 1, 2, 5)), dml.FeatureLevel.FL_1_0)


def test_bad_functional_calls(device):
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=r"gemm: the batch axes do not broadcast"):
        dml.gemm(np.ones((2, 2, 3), np.float32), np.ones((3, 3, 4), np.float32), device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"gemm: c \[3\] does not broadcast"):
        dml.gemm(a, b, np.ones(3, np.float32), device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"Gemm: K differs"):
        dml.gemm(a, a, device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"gemm: trans_a: 'x' is not a MatrixTransform"):
        dml.gemm(a, b, trans_a="x", device=device)
    with pytest.raises(dml.InvalidArgumentError, match=r"DimensionCount 1 is not supported"):
        dml.gemm(np.ones(3, np.float32), np.ones(3, np.float32), device=device)


def test_shader_cli(capsys):
    assert cli.main(["shader", "gemm", "--shape", "8,16", "--n", "4", "--transpose", "b", "--c", "row",
                     "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert "fn kernel" in out and "finish" in out
    assert cli.main(["shader", "gemm", "--shape", "64,64", "--caps", "gpu", "--strategy", "workgroup"]) == 0
    assert "var<workgroup> tile_a" in capsys.readouterr().out
