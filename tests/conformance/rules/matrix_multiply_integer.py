"""The rules of DML_MATRIX_MULTIPLY_INTEGER, DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY and
DML_MATRIX_MULTIPLY_INTEGER_TO_FLOAT (gpudml/ops/matrix_multiply_integer.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import spec_named
from gpudml.testing import assert_within

from ..draws import MAX_SIZE, Draw, T
from ..hostile import maybe_hostile, one_more, replace_fields
from ..registry import Ask, Drawn, rule
from ._common import broken_output

MMI, QLMM, MMITF = "matrix_multiply_integer", "quantized_linear_matrix_multiply", "matrix_multiply_integer_to_float"
_OPERAND_FIELDS = ("a", "b", "a_tensor", "b_tensor", "output_tensor", "batch", "device", "given")
_Q_FIELDS = ("a_zero_point", "b_zero_point", "a_zero_point_tensor", "b_zero_point_tensor")
_S_FIELDS = ("a_scale", "b_scale", "a_scale_tensor", "b_scale_tensor")


def _line(d: Draw, dt, count: int):
    """A zero point or scale: one value ([1]) or one per row / column ([count])."""
    return dml.TensorDesc(dt, [count] if d.bool() else [1])


def _operands(d: Draw, ask: Ask, b_type):
    """A of the input's sizes ([batch..., M, K]), B of K x N (batch axes of 1 broadcast half
    the time); (a, b, m, n). Inputs of fewer than 2 dimensions as they are (M = N = 1)."""
    x = ask.input(d)
    sizes = list(x.sizes)
    if ask.rank < 2:  # (as it is: validation's to reject)
        return x, dml.TensorDesc(b_type, sizes), 1, 1
    k, m = sizes[-1], sizes[-2]
    n = d.int(1, MAX_SIZE[min(ask.rank, 8)])
    batch = [s if d.bool() else 1 for s in sizes[:-2]]
    return x, dml.TensorDesc(b_type, batch + [k, n]), m, n


def _call(key: str, d: Draw, ask: Ask) -> Drawn:
    """The operator's call: operands, each zero point half the time (one value or one per
    row / column), the scales likewise, INTEGER_TO_FLOAT's bias half the time (the whole
    result, a row [N] or one value)."""
    types = ask.types
    b_type = types["b_tensor"] if key != MMITF else ask.data_type
    a, b, m, n = _operands(d, ask, b_type)
    named = {"a": a, "b": b}
    if d.bool():
        named["a_zero_point"] = _line(d, a.data_type, m)
    if d.bool():
        named["b_zero_point"] = _line(d, b.data_type, n)
    attributes = {}
    if key != MMI:
        float_type = T.FLOAT32 if key == QLMM else types["a_scale_tensor"]
        named["a_scale"], named["b_scale"] = _line(d, float_type, m), _line(d, float_type, n)
    if key == QLMM:
        named["output_scale"] = _line(d, T.FLOAT32, m)
        out_type = d.pick([T.INT8, T.UINT8])
        if d.bool():
            named["output_zero_point"] = _line(d, out_type, m)
        else:
            attributes["output_data_type"] = out_type
    if key == MMITF and d.bool():
        out = list(a.sizes[:-2]) + [m, n]
        named["bias"] = dml.TensorDesc(types["a_scale_tensor"], d.pick([out, [n], [1]]))
    order = [name for name in spec_named(key).tensors if name in named]
    return Drawn([named[name] for name in order], {**attributes, "given": tuple(order)})


@st.composite
def _broken(draw, desc, key):
    """One rule of the page broken: K, the output's sizes or type, a zero point of another
    type or of the wrong length, a scale of another type."""
    a, b = desc.a_tensor, desc.b_tensor
    kinds = ["k", "output_sizes", "output_type", "zero_type", "zero_length"]
    kinds += ["scale_type"] if key != MMI else []
    kind = draw(st.sampled_from(kinds))
    if kind == "k":
        return replace_fields(desc, b_tensor=one_more(b, b.rank - 2)), "K differs", kind
    if kind in ("output_sizes", "output_type"):
        builder, fragment, kind = broken_output(draw, desc, kind)
        return builder, "output_tensor", kind
    side = draw(st.sampled_from(["a", "b"]))
    operand = a if side == "a" else b
    field = f"{side}_zero_point_tensor"
    count = operand.sizes[-2] if side == "a" else operand.sizes[-1]
    line = [1] * (a.rank - 2) + ([count + 1, 1] if side == "a" else [1, count + 1])
    if kind == "zero_type":
        dt = draw(st.sampled_from([t for t in T if t != operand.data_type]))
        return replace_fields(desc, **{field: dml.TensorDesc(dt, [1] * a.rank)}), field, kind
    if kind == "zero_length":
        return replace_fields(desc, **{field: dml.TensorDesc(operand.data_type, line)}), field, kind
    scale = f"{side}_scale_tensor"
    dt = draw(st.sampled_from([t for t in T if t not in (T.FLOAT32, T.FLOAT16)]))
    return replace_fields(desc, **{scale: dml.TensorDesc(dt, [1] * a.rank)}), scale, kind


def _scale(rng, n: int, dtype=np.float32):
    return rng.uniform(2.0**-8, 2.0**-4, n).astype(dtype)


@st.composite
def _functional(draw, x, shape, key):
    """B (and the zero points and scales) that fit x's shape as numpy's matmul takes it, now
    and then K one longer, a scale of zero, negative or NaN, or a hostile zero point."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    integer = isinstance(x, np.ndarray) and x.dtype.kind in "iu"
    dtype = x.dtype.newbyteorder("=") if integer else np.dtype(np.int8)
    if key != MMITF and dtype.itemsize != 1:
        dtype = np.dtype(np.uint8)
    k = shape[-1] if len(shape) >= 1 else 1
    m = shape[-2] if len(shape) >= 2 else 1
    n = draw(st.integers(1, 6))
    batch = [s if draw(st.booleans()) else 1 for s in shape[:-2]]
    b_dtype = dtype if key == MMITF else np.dtype(draw(st.sampled_from([np.int8, np.uint8])))
    info = np.iinfo(b_dtype)
    lo, hi = max(int(info.min), -1000), min(int(info.max), 1000)
    b = rng.integers(lo, hi, batch + [k + (draw(st.integers(0, 9)) == 0), n], endpoint=True).astype(b_dtype)
    args = {"b": b}
    if draw(st.booleans()):
        args["b_zero_point"] = maybe_hostile(draw, rng.integers(lo, hi, draw(st.sampled_from([[1], [n]])),
                                                                endpoint=True).astype(b_dtype))
    if key == MMI:
        if draw(st.booleans()):
            a_info = np.iinfo(dtype)
            args["a_zero_point"] = np.array([a_info.max // 2], dtype)
        return args, lambda a: spec_named(MMI).reference(a, **args)
    float_type = np.float32 if key == QLMM or draw(st.booleans()) else np.float16
    args["a_scale"] = _scale(rng, draw(st.sampled_from([1, m])), float_type)
    args["b_scale"] = _scale(rng, draw(st.sampled_from([1, n])), float_type)
    if draw(st.integers(0, 4)) == 0:
        field = draw(st.sampled_from(["a_scale", "b_scale"]))
        args[field] = args[field].copy()
        args[field][0] = draw(st.sampled_from([0.0, -1.0, float("nan"), float("inf")]))
    if key == QLMM:
        args["output_scale"] = np.float32(2.0**-8 * 2.0**-4 * 64 * np.sqrt(max(k, 1)))
        if draw(st.booleans()):
            args["output_zero_point"] = np.array([draw(st.integers(0, 255))], np.uint8)
        else:
            args["output_data_type"] = draw(st.sampled_from(["INT8", "UINT8", "bogus"]))
    elif draw(st.booleans()):
        args["bias"] = rng.uniform(-1, 1, draw(st.sampled_from([[n], [1], [n + 1]]))).astype(float_type)
    ref = spec_named(key).reference

    def reference(a):
        kw = dict(args)
        return ref(a, kw.pop("a_scale"), kw.pop("a_zero_point", None), **kw)
    return args, reference


def _compare(key):
    def compare(got, want, x, args):
        spec = spec_named(key)
        names = [n for n in spec.tensors if n == "a" or n in args]
        inputs = [x if n == "a" else args[n] for n in names]
        attributes = {k: v for k, v in args.items() if k not in spec.tensors}
        attributes["given"] = tuple(names)
        tolerance = np.asarray(spec.tolerance(want, inputs, attributes), np.float64)
        assert got.dtype == want.dtype and got.shape == want.shape
        bounded = ~np.isinf(tolerance)
        assert_within(got[bounded], want[bounded], tolerance[bounded], spec.name)
    return compare


def _register(key: str, extra_fields: tuple[str, ...], free: tuple[str, ...], compare: bool):
    @rule(key, broken=lambda desc: _broken(desc, key), functional=lambda x, shape: _functional(x, shape, key),
          compare=_compare(key) if compare else None, fields=_OPERAND_FIELDS + _Q_FIELDS + extra_fields, free=free,
          light=True)
    def call(d: Draw, ask: Ask) -> Drawn:
        return _call(key, d, ask)
    call.__name__ = call.__qualname__ = f"{key}_call"
    call.__doc__ = _call.__doc__
    return call


# (free: the tensors whose type the calls read from the Ask, each beside the input's; the
# feature-level test tries every type of each: few, or its product grows past any budget)
matrix_multiply_integer_call = _register(MMI, (), ("b_tensor",), False)
quantized_linear_matrix_multiply_call = _register(
    QLMM, _S_FIELDS + ("output_scale", "output_zero_point", "output_scale_tensor", "output_zero_point_tensor",
                       "output_data_type"),
    ("b_tensor",), True)
matrix_multiply_integer_to_float_call = _register(
    MMITF, _S_FIELDS + ("bias", "bias_tensor"),
    ("a_scale_tensor",), True)
