"""The integer GEMMs: DML_OPERATOR_MATRIX_MULTIPLY_INTEGER (FL 2.1),
DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY (FL 2.1) and
DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT (FL 6.2): one matrix product per position of
the batch axes, on integer operands with zero points, summed in int32; the GEMM family's
integer path runs them (kernels/gemm.py, Problem.quantized; the arithmetic:
kernels/quantized.py). docs/operators/ says the same for users.

What the pages say (sdk-api's DML_MATRIX_MULTIPLY_INTEGER_OPERATOR_DESC,
DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC, DML_MATRIX_MULTIPLY_INTEGER_TO_FLOAT_OPERATOR_DESC;
stored under tests/data/pages/), as implemented:

- A is { [BatchCount], [ChannelCount], M, K }, B { ..., K, N }, the output { ..., M, N }:
  DimensionCount 4 at FL 2.1, 2 to 4 from FL 4.0 (MATRIX_MULTIPLY_INTEGER,
  QUANTIZED_LINEAR_MATRIX_MULTIPLY) and at FL 6.2 (INTEGER_TO_FLOAT); A, B and the output one
  DimensionCount; A's and B's batch sizes the output's (a broadcast is a stride of 0 in the
  description, as for GEMM) and K must agree.
- A zero point and A's scale (and the output's, QUANTIZED_LINEAR) hold one value ({1, ...,
  1}) or one per row ({..., M, 1}); B's one value or one per column ({..., 1, N}). The
  zero point is optional (0). Their DimensionCount: 4 at FL 2.1, 1 to 4 from FL 4.0
  (MATRIX_MULTIPLY_INTEGER's B zero point 2 to 4 at FL 4.0, 1 to 4 from FL 5.2), one for all
  of them (QUANTIZED_LINEAR, INTEGER_TO_FLOAT: the page's constraints).
- Types: MATRIX_MULTIPLY_INTEGER INT8/UINT8 operands, each zero point its operand's type,
  INT32 output. QUANTIZED_LINEAR INT8/UINT8 operands and output, FLOAT32 scales, each zero
  point its tensor's type. INTEGER_TO_FLOAT: A, B and both zero points one type of INT8,
  UINT8, INT16, UINT16, INT32, UINT32; the scales, the bias and the output one of FLOAT32
  and FLOAT16.
- MATRIX_MULTIPLY_INTEGER_TO_FLOAT's bias (optional) has the output's sizes (a broadcast is
  a stride of 0 in the description).

Where the pages are silent (documented in docs/operators/):

- the sum is int32 arithmetic: products and sums wrap modulo 2^32 (bit-exact with the sum
  in int64 wrapped to int32; 8-bit operands cannot wrap below K = 33,025);
- QUANTIZED_LINEAR's "dequantize, multiply, quantize": the int32 sum times a_scale[m] *
  b_scale[n] (one float32 product, the sum converted to float32 rounded to nearest even,
  one float32 product), divided by the output scale exactly and rounded half to even (ONNX's
  rounding, QUANTIZE_LINEAR's), plus the output zero point, saturated to the output type;
  INTEGER_TO_FLOAT: the same product plus the bias in float32, rounded to the output type;
- a scale of zero, a negative one, NaN or infinity is an InvalidArgumentError of the
  functional forms (their values are host data there), before any GPU work;
- precision: QUANTIZED_LINEAR bit-exact against that computation, INTEGER_TO_FLOAT within
  the differences an adapter's allowed flushing of subnormals and a fused multiply-add of
  the bias make (`tolerance`).

The functional forms take numpy's matmul shapes (2 to 4 dimensions; the batch axes
broadcast by stride-0 descriptions), the zero points and scales as one value, [M] or [M, 1]
(per row: A's and the output's) and [N] or [1, N] (per column: B's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.gemm import GemmPlanner, Problem
from ..kernels.quantized import (
    Quantized,
    accumulate,
    checked_scale,
    dequantized_reference,
    per_line_stride,
    requantize_reference,
    scale_product,
)
from ..tensor_desc import TensorDesc, check_same_rank, check_tensor_desc
from ..types import F16, F32, I8, I16, I32, U8, U16, U32, DataType, FeatureLevel
from .gemm import _broadcast_batch, _stretched
from .spec import Call, Cli, CliArg, OpSpec, support_table, tensor_fields

FL = FeatureLevel
BYTES = frozenset({I8, U8})
WIDE = frozenset({I8, U8, I16, U16, I32, U32})
FLOATS = frozenset({F32, F16})

# ============================================================================ the descriptions
MMI = "MatrixMultiplyInteger"
QLMM = "QuantizedLinearMatrixMultiply"
MMITF = "MatrixMultiplyIntegerToFloat"


@dataclass(frozen=True)
class MatrixMultiplyIntegerOperatorDesc:
    """DML_MATRIX_MULTIPLY_INTEGER_OPERATOR_DESC: Output = (A - AZeroPoint) x (B - BZeroPoint)
    in INT32. The zero points are optional (None)."""

    a_tensor: TensorDesc
    a_zero_point_tensor: TensorDesc | None
    b_tensor: TensorDesc
    b_zero_point_tensor: TensorDesc | None
    output_tensor: TensorDesc
    OPTIONAL_TENSORS = ("a_zero_point_tensor", "b_zero_point_tensor")


@dataclass(frozen=True)
class QuantizedLinearMatrixMultiplyOperatorDesc:
    """DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC: A and B dequantized, multiplied and
    the product quantized with the output's scale and zero point. Zero points optional (None)."""

    a_tensor: TensorDesc
    a_scale_tensor: TensorDesc
    a_zero_point_tensor: TensorDesc | None
    b_tensor: TensorDesc
    b_scale_tensor: TensorDesc
    b_zero_point_tensor: TensorDesc | None
    output_scale_tensor: TensorDesc
    output_zero_point_tensor: TensorDesc | None
    output_tensor: TensorDesc
    OPTIONAL_TENSORS = ("a_zero_point_tensor", "b_zero_point_tensor", "output_zero_point_tensor")


@dataclass(frozen=True)
class MatrixMultiplyIntegerToFloatOperatorDesc:
    """DML_MATRIX_MULTIPLY_INTEGER_TO_FLOAT_OPERATOR_DESC: (A - AZeroPoint) x (B - BZeroPoint)
    times AScale BScale, plus Bias, in floating point. Zero points and bias optional (None)."""

    a_tensor: TensorDesc
    a_scale_tensor: TensorDesc
    a_zero_point_tensor: TensorDesc | None
    b_tensor: TensorDesc
    b_scale_tensor: TensorDesc
    b_zero_point_tensor: TensorDesc | None
    bias_tensor: TensorDesc | None
    output_tensor: TensorDesc
    OPTIONAL_TENSORS = ("a_zero_point_tensor", "b_zero_point_tensor", "bias_tensor")


# ============================================================================ what each one is
@dataclass(frozen=True)
class Variant:
    """What the three operators differ in: their name, desc, fields (in order), the support
    table, the store of the integer path, which tensors share one type and one rank."""

    op: str
    key: str
    desc: type
    fields: tuple[str, ...]
    store: str
    same_type: tuple[tuple[str, ...], ...]
    same_rank: tuple[tuple[str, ...], ...]


#: Field -> (role in kernels/quantized.Quantized, the axis it is read along: -2 rows, -1 columns).
QUANT_FIELDS = {
    "a_zero_point_tensor": ("a_zero", -2), "b_zero_point_tensor": ("b_zero", -1),
    "a_scale_tensor": ("a_scale", -2), "b_scale_tensor": ("b_scale", -1),
    "output_scale_tensor": ("out_scale", -2), "output_zero_point_tensor": ("out_zero", -2),
}
#: Field -> the functional form's argument name.
ARGUMENT = {f: f.removesuffix("_tensor") for f in (
    "a_tensor", "b_tensor", "bias_tensor", *QUANT_FIELDS)}

MMI_V = Variant(MMI, "matrix_multiply_integer", MatrixMultiplyIntegerOperatorDesc,
                ("a_tensor", "a_zero_point_tensor", "b_tensor", "b_zero_point_tensor", "output_tensor"), "int32",
                (("a_tensor", "a_zero_point_tensor"), ("b_tensor", "b_zero_point_tensor")),
                (("a_tensor", "b_tensor", "output_tensor"),))
QLMM_V = Variant(QLMM, "quantized_linear_matrix_multiply", QuantizedLinearMatrixMultiplyOperatorDesc,
                 ("a_tensor", "a_scale_tensor", "a_zero_point_tensor", "b_tensor", "b_scale_tensor",
                  "b_zero_point_tensor", "output_scale_tensor", "output_zero_point_tensor", "output_tensor"),
                 "requantize",
                 (("a_tensor", "a_zero_point_tensor"), ("b_tensor", "b_zero_point_tensor"),
                  ("output_tensor", "output_zero_point_tensor")),
                 (("a_tensor", "b_tensor", "output_tensor"),
                  ("a_scale_tensor", "a_zero_point_tensor", "b_scale_tensor", "b_zero_point_tensor",
                   "output_scale_tensor", "output_zero_point_tensor")))
MMITF_V = Variant(MMITF, "matrix_multiply_integer_to_float", MatrixMultiplyIntegerToFloatOperatorDesc,
                  ("a_tensor", "a_scale_tensor", "a_zero_point_tensor", "b_tensor", "b_scale_tensor",
                   "b_zero_point_tensor", "bias_tensor", "output_tensor"), "float",
                  (("a_tensor", "a_zero_point_tensor", "b_tensor", "b_zero_point_tensor"),
                   ("a_scale_tensor", "bias_tensor", "b_scale_tensor", "output_tensor")),
                  (("a_tensor", "bias_tensor", "b_tensor", "output_tensor"),
                   ("a_scale_tensor", "a_zero_point_tensor", "b_scale_tensor", "b_zero_point_tensor")))

_Q4 = {"a_zero_point_tensor": (1, 4), "b_zero_point_tensor": (1, 4)}
MMI_SUPPORT = support_table(MMI, MMI_V.fields, [
    (FL.FL_5_2, {"a_tensor": (2, 4), **_Q4}, BYTES, BYTES, BYTES, BYTES, {I32}),
    (FL.FL_4_0, {"a_tensor": (2, 4), **_Q4, "b_zero_point_tensor": (2, 4)}, BYTES, BYTES, BYTES, BYTES, {I32}),
    (FL.FL_2_1, {4}, BYTES, BYTES, BYTES, BYTES, {I32}),
])
_QQ = {f: (1, 4) for f in QUANT_FIELDS}
QLMM_SUPPORT = support_table(QLMM, QLMM_V.fields, [
    (FL.FL_4_0, {"a_tensor": (2, 4), **_QQ}, BYTES, {F32}, BYTES, BYTES, {F32}, BYTES, {F32}, BYTES, BYTES),
    (FL.FL_2_1, {4}, BYTES, {F32}, BYTES, BYTES, {F32}, BYTES, {F32}, BYTES, BYTES),
])
MMITF_SUPPORT = support_table(MMITF, MMITF_V.fields, [
    (FL.FL_6_2, {"a_tensor": (2, 4), **{f: (1, 4) for f in ("a_scale_tensor", "a_zero_point_tensor",
                                                             "b_scale_tensor", "b_zero_point_tensor")}},
     WIDE, FLOATS, WIDE, WIDE, FLOATS, WIDE, FLOATS, FLOATS),
])
SUPPORT = {MMI: MMI_SUPPORT, QLMM: QLMM_SUPPORT, MMITF: MMITF_SUPPORT}


def _named(v: Variant, desc) -> dict[str, TensorDesc]:
    return {f: getattr(desc, f) for f in v.fields if getattr(desc, f) is not None
            or f not in v.desc.OPTIONAL_TENSORS}


def _validate(v: Variant, desc, level: FeatureLevel) -> None:
    """The page's rules (module docstring), each an InvalidArgumentError naming the operator,
    the field, the rule and the values."""
    op = v.op
    support = SUPPORT[op]
    named = _named(v, desc)
    for field, td in named.items():
        check_tensor_desc(op, field, td, is_output=field == "output_tensor")
    for group in v.same_rank:
        check_same_rank(op, {f: named[f] for f in group if f in named})
    for group in v.same_type:
        present = [f for f in group if f in named]
        for f in present[1:]:
            if named[f].data_type != named[present[0]].data_type:
                raise InvalidArgumentError(
                    f"{op}: {f}.data_type {named[f].data_type.name} must equal {present[0]}.data_type "
                    f"{named[present[0]].data_type.name} (the page's tensor constraints)")
    rank = desc.a_tensor.rank
    support.check(level, rank, {f: td.data_type for f, td in named.items()})
    for f, td in named.items():
        support.check_rank(level, f, td.rank)
    a, b, out = desc.a_tensor.sizes, desc.b_tensor.sizes, desc.output_tensor.sizes
    m, k, kb, n = a[-2], a[-1], b[-2], b[-1]
    if k != kb:
        raise InvalidArgumentError(f"{op}: K differs: a_tensor.sizes[{rank - 1}] = {k} must equal "
                                   f"b_tensor.sizes[{rank - 2}] = {kb} (A {{..., M, K}} x B {{..., K, N}})")
    want = tuple(out[:-2]) + (m, n)
    if tuple(out) != want:
        raise InvalidArgumentError(
            f"{op}: output_tensor.sizes {list(out)} must be {list(want)} ({{batch..., M, N}}: M = {m} from a_tensor, "
            f"N = {n} from b_tensor)")
    for field, sizes in (("a_tensor", a), ("b_tensor", b)):
        if tuple(sizes[:-2]) != tuple(out[:-2]):
            raise InvalidArgumentError(
                f"{op}: {field}.sizes {list(sizes)} must have the batch sizes of output_tensor.sizes {list(out)} "
                f"({list(out[:-2])}) on its leading axes (a broadcast is a stride of 0 in the description)")
    bias = named.get("bias_tensor")
    if bias is not None and tuple(bias.sizes) != tuple(out):
        raise InvalidArgumentError(
            f"{op}: bias_tensor.sizes {list(bias.sizes)} must equal output_tensor.sizes {list(out)} (a broadcast "
            f"bias is a stride of 0 in the description)")
    for f, td in named.items():
        if f in QUANT_FIELDS:
            axis = QUANT_FIELDS[f][1]
            per_line_stride(op, f, td, axis, m if axis == -2 else n, rank)


def _problem(v: Variant, desc) -> Problem:
    """What the GEMM family's integer path computes for `desc`."""
    named = _named(v, desc)
    index = {f: i for i, f in enumerate(f for f in named if f != "output_tensor")}
    m, n, rank = desc.a_tensor.sizes[-2], desc.b_tensor.sizes[-1], desc.a_tensor.rank
    roles, strides, inputs = {}, [], [("a", index["a_tensor"]), ("b", index["b_tensor"])]
    if "bias_tensor" in named:
        inputs.append(("c", index["bias_tensor"]))
    for f, (role, axis) in QUANT_FIELDS.items():
        if f in named:
            roles[role] = named[f]
            strides.append((role, per_line_stride(v.op, f, named[f], axis, m if axis == -2 else n, rank)))
            inputs.append((role, index[f]))
    q = Quantized(v.store, strides=tuple(strides), inputs=tuple(inputs), **roles)
    return Problem(v.op, desc.a_tensor, desc.b_tensor, named.get("bias_tensor"), desc.output_tensor, quantized=q)


# ============================================================================ the functional forms
def _line(td: TensorDesc | None, rank: int, axis: int, count: int) -> TensorDesc | None:
    """A functional form's zero point or scale described at the operands' rank: one value
    {1, ..., 1}; per row ([M] or [..., M, 1]) {1, ..., M, 1}; per column ([N] or [..., 1, N])
    {1, ..., 1, N}. Other shapes are described as they are (validation names them)."""
    if td is None:
        return None
    sizes = list(td.sizes)
    if td.element_count == 1:
        return TensorDesc(td.data_type, [1] * rank, total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)
    if td.rank == 1 and sizes == [count]:
        line = [1] * (rank - 2) + ([count, 1] if axis == -2 else [1, count])
        return TensorDesc(td.data_type, line, total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)
    if td.rank < rank and all(s == 1 for s in sizes[:-2]):
        return TensorDesc(td.data_type, [1] * (rank - td.rank) + sizes,
                          [0] * (rank - td.rank) + list(td.effective_strides),
                          total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)
    return td


def _given(v: Variant, descs, given) -> dict[str, TensorDesc]:
    """The input descs by field: `given` names the functional arguments they are (a Call's
    order), else they are the fields in order."""
    inputs = [f for f in v.fields if f != "output_tensor"]
    names = [ARGUMENT[f] for f in inputs]
    if given is None:
        given = names[:len(descs)]
    return {inputs[names.index(g)]: d for g, d in zip(given, descs)}


def _infer(v: Variant, descs, given, out_type: DataType | None):
    named = _given(v, descs, given)
    a, b = named["a_tensor"], named["b_tensor"]
    if a.rank < 2 or b.rank < 2:
        out = TensorDesc(out_type or I32, a.sizes)
        return v.desc(**{f: named.get(f) for f in v.fields if f != "output_tensor"}, output_tensor=out)
    batch = _broadcast_batch([a.sizes[:-2], b.sizes[:-2]], ["a", "b"])
    rank = len(batch) + 2
    a2, b2 = _stretched(a, batch + list(a.sizes[-2:])), _stretched(b, batch + list(b.sizes[-2:]))
    m, n = a.sizes[-2], b.sizes[-1]
    out = batch + [m, n]
    fields = {"a_tensor": a2, "b_tensor": b2}
    for f, (_, axis) in QUANT_FIELDS.items():
        if f in v.fields:
            fields[f] = _line(named.get(f), rank, axis, m if axis == -2 else n)
    if "bias_tensor" in v.fields:
        bias = named.get("bias_tensor")
        if bias is not None:
            if bias.rank > len(out) or any(s not in (1, o) for s, o in zip(reversed(bias.sizes), reversed(out))):
                raise InvalidArgumentError(f"{v.key}: bias {list(bias.sizes)} does not broadcast to the result's "
                                           f"shape {out} (numpy's rule, one way)")
            bias = _stretched(bias, out)
        fields["bias_tensor"] = bias
    return v.desc(**fields, output_tensor=TensorDesc(out_type, out))


def _vector(value):
    """A zero point given as a scalar: one value of 1 dimension."""
    arr = np.asarray(value)
    return arr.reshape(1) if arr.ndim == 0 else arr


def _present(pairs) -> tuple[list, tuple[str, ...]]:
    """A Call's tensors (those given, in the fields' order; a zero point's scalar as one
    value of 1 dimension) and their names."""
    tensors = [p if len(p) > 2 or not p[0].endswith("zero_point") else (*p, _vector) for p in pairs
               if p[1] is not None]
    return tensors, tuple(p[0] for p in tensors)


# ---- MATRIX_MULTIPLY_INTEGER
def matrix_multiply_integer(a, b, a_zero_point=None, b_zero_point=None, *, device=None):
    """DML_OPERATOR_MATRIX_MULTIPLY_INTEGER: (a - a_zero_point) @ (b - b_zero_point) in int32
    (wrapping), numpy's matmul shapes of 2-4 dimensions (batch axes broadcast). a, b INT8 or
    UINT8; a_zero_point one value or one per row ([M]), b_zero_point one or one per column
    ([N]), each of its operand's type. Bit-exact."""
    tensors, given = _present([("a", a), ("a_zero_point", a_zero_point), ("b", b), ("b_zero_point", b_zero_point)])
    return Call(tensors, {"given": given}, device)


def mmi_infer_output(*descs, given=None) -> MatrixMultiplyIntegerOperatorDesc:
    """The desc of matrix_multiply_integer(...): numpy's matmul shapes (module docstring)."""
    return _infer(MMI_V, descs, given, I32)


def _row(x, rank_hint=None):
    """A per-row value ([M] or [..., M, 1], or one) as numpy broadcasts it against [..., M, N]."""
    if x is None:
        return None
    x = np.asarray(x)
    return x.reshape(-1, 1) if x.ndim == 1 and x.size > 1 else x


def _col(x):
    return None if x is None else np.asarray(x)


def mmi_reference(a, b, a_zero_point=None, b_zero_point=None, *, given=None):
    """DML_OPERATOR_MATRIX_MULTIPLY_INTEGER on numpy arrays: the sum in int64, wrapped to int32."""
    if given is not None:
        named = dict(zip(given, (a, b, a_zero_point, b_zero_point)))
        a, b = named["a"], named["b"]
        a_zero_point, b_zero_point = named.get("a_zero_point"), named.get("b_zero_point")
    return accumulate(a, _row(a_zero_point), b, _col(b_zero_point))


mmi_reference.__name__ = mmi_reference.__qualname__ = "matrix_multiply_integer"


def mmi_validate(desc, level) -> None:
    _validate(MMI_V, desc, level)


def mmi_problem(desc) -> Problem:
    return _problem(MMI_V, desc)


# ---- QUANTIZED_LINEAR_MATRIX_MULTIPLY
_QL_NAMES = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "output_scale", "output_zero_point")


def quantized_linear_matrix_multiply(a, a_scale, a_zero_point=None, *, b, b_scale, b_zero_point=None, output_scale,
                                     output_zero_point=None, output_data_type=None, device=None):
    """DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY: a and b dequantized ((x - zero_point) *
    scale), multiplied and the product quantized (round half to even, + output_zero_point,
    saturated): the int32 sum times a_scale b_scale in float32, divided by output_scale
    exactly. a, b, the output INT8 or UINT8 (the output: output_data_type, else
    output_zero_point's type, else a's); scales FLOAT32 and positive; a's and the output's
    scale and zero point one value or one per row ([M]), b's one or one per column ([N])."""
    where = "quantized_linear_matrix_multiply"
    tensors, given = _present([
        ("a", a), ("a_scale", a_scale, checked_scale(where, "a_scale")), ("a_zero_point", a_zero_point),
        ("b", b), ("b_scale", b_scale, checked_scale(where, "b_scale")), ("b_zero_point", b_zero_point),
        ("output_scale", output_scale, checked_scale(where, "output_scale")),
        ("output_zero_point", output_zero_point)])
    return Call(tensors, {"given": given, "output_data_type": output_data_type}, device)


def _ql_out_type(named: dict, output_data_type) -> DataType:
    if output_data_type is not None:
        return DataType.parse(output_data_type, "quantized_linear_matrix_multiply: output_data_type")
    return named.get("output_zero_point_tensor", named["a_tensor"]).data_type


def qlmm_infer_output(*descs, given=None, output_data_type=None) -> QuantizedLinearMatrixMultiplyOperatorDesc:
    named = _given(QLMM_V, descs, given)
    return _infer(QLMM_V, descs, given, _ql_out_type(named, output_data_type))


def _by_name(values: tuple, given, names) -> dict:
    if given is None:
        return dict(zip(names, values))
    return dict(zip(given, values))


def qlmm_reference(a, a_scale, a_zero_point=None, *, b, b_scale, b_zero_point=None, output_scale,
                   output_zero_point=None, output_data_type=None, given=None, flush=False):
    """DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY on numpy arrays: the kernels' arithmetic
    (kernels/quantized.py's requantize_reference); `flush`: subnormal scales and products 0."""
    if given is not None:  # (a functional Call's arguments, positional in its order)
        named = _by_name((a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point),
                         given, _QL_NAMES)
        a, a_scale, a_zero_point = named["a"], named["a_scale"], named.get("a_zero_point")
        b, b_scale, b_zero_point = named["b"], named["b_scale"], named.get("b_zero_point")
        output_scale, output_zero_point = named["output_scale"], named.get("output_zero_point")
    acc = accumulate(a, _row(a_zero_point), b, _col(b_zero_point))
    scale = scale_product(_row(a_scale), _col(b_scale), flush)
    if output_data_type is not None:
        dtype = DataType.parse(output_data_type, "output_data_type").numpy
    else:
        dtype = np.asarray(output_zero_point if output_zero_point is not None else a).dtype
    return requantize_reference(acc, scale, _row(output_scale), _row(output_zero_point), dtype, flush)


qlmm_reference.__name__ = qlmm_reference.__qualname__ = "quantized_linear_matrix_multiply"


def qlmm_tolerance(expected, inputs, arguments):
    """Bit-exact against the kernels' arithmetic; where the adapter flushes subnormal scales
    or products (WGSL allows it), that result: per element the difference the flush makes."""
    return _flush_difference(qlmm_reference, expected, inputs, arguments, QLMM_V)


def _flush_difference(reference, expected, inputs, arguments, v: Variant, extra=()):
    names = [ARGUMENT[f] for f in v.fields if f != "output_tensor"]
    args = {k: val for k, val in arguments.items() if k != "given"}
    given = arguments.get("given") or tuple(n for n in names if args.pop(n, 0) is not None)[:len(inputs)]
    kw = dict(zip(given, inputs))
    first = kw.pop("a")
    results = [np.asarray(reference(first, **kw, **args, flush=f)).astype(np.float64) for f in (False, True)]
    results += [np.asarray(r).astype(np.float64) for r in extra]
    base = results[0]
    with np.errstate(invalid="ignore"):
        diff = np.max([np.abs(r - base) for r in results], axis=0)
    return np.where(np.isnan(diff), np.inf, diff)


# ---- MATRIX_MULTIPLY_INTEGER_TO_FLOAT
def matrix_multiply_integer_to_float(a, a_scale, a_zero_point=None, *, b, b_scale, b_zero_point=None, bias=None,
                                     device=None):
    """DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT: (a - a_zero_point) @ (b - b_zero_point)
    in int32 (wrapping), times a_scale b_scale and plus bias in float32, rounded to the
    scales' type (FLOAT32 or FLOAT16). a, b and the zero points one integer type of 8, 16 or
    32 bits; a_scale and a_zero_point one value or one per row ([M]), b's one or one per
    column ([N]); bias (optional) broadcast to the result."""
    where = "matrix_multiply_integer_to_float"
    tensors, given = _present([
        ("a", a), ("a_scale", a_scale, checked_scale(where, "a_scale")), ("a_zero_point", a_zero_point),
        ("b", b), ("b_scale", b_scale, checked_scale(where, "b_scale")), ("b_zero_point", b_zero_point),
        ("bias", bias)])
    return Call(tensors, {"given": given}, device)


_TF_NAMES = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "bias")


def mmitf_infer_output(*descs, given=None) -> MatrixMultiplyIntegerToFloatOperatorDesc:
    named = _given(MMITF_V, descs, given)
    return _infer(MMITF_V, descs, given, named["a_scale_tensor"].data_type)


def mmitf_reference(a, a_scale, a_zero_point=None, *, b, b_scale, b_zero_point=None, bias=None, given=None,
                    flush=False, fused=False):
    """DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT on numpy arrays: the kernels' arithmetic
    (the int32 sum to float32, times a_scale b_scale, plus bias, each step a float32 rounding;
    `flush`: subnormals 0; `fused`: the product and the bias one fused multiply-add),
    rounded to a_scale's type."""
    if given is not None:
        named = _by_name((a, a_scale, a_zero_point, b, b_scale, b_zero_point, bias), given, _TF_NAMES)
        a, a_scale, a_zero_point = named["a"], named["a_scale"], named.get("a_zero_point")
        b, b_scale, b_zero_point, bias = named["b"], named["b_scale"], named.get("b_zero_point"), named.get("bias")
    dtype = np.asarray(a_scale).dtype
    acc = accumulate(a, _row(a_zero_point), b, _col(b_zero_point))
    scale = scale_product(_row(a_scale), _col(b_scale), flush)
    with np.errstate(all="ignore"):
        if fused and bias is not None:
            y = (acc.astype(np.float32).astype(np.float64) * scale.astype(np.float64)
                 + np.asarray(bias).astype(np.float64)).astype(np.float32)
        else:
            y = dequantized_reference(acc, scale, flush)
            if bias is not None:
                y = (y + np.asarray(bias).astype(np.float32)).astype(np.float32)
        return y.astype(dtype)


mmitf_reference.__name__ = mmitf_reference.__qualname__ = "matrix_multiply_integer_to_float"


def mmitf_tolerance(expected, inputs, arguments):
    """Bit-exact against the kernels' arithmetic, but for the differences that an adapter's
    flushing of subnormals and a fused multiply-add of the bias make (WGSL allows both)."""
    names = [ARGUMENT[f] for f in MMITF_V.fields if f != "output_tensor"]
    args = {k: val for k, val in arguments.items() if k != "given"}
    given = arguments.get("given") or tuple(n for n in names if args.pop(n, 0) is not None)[:len(inputs)]
    kw = dict(zip(given, inputs))
    first = kw.pop("a")
    fused = mmitf_reference(first, **kw, **args, fused=True)
    return _flush_difference(mmitf_reference, expected, inputs, arguments, MMITF_V, extra=(fused,))


def mmitf_validate(desc, level) -> None:
    _validate(MMITF_V, desc, level)


def mmitf_problem(desc) -> Problem:
    return _problem(MMITF_V, desc)


def qlmm_validate(desc, level) -> None:
    _validate(QLMM_V, desc, level)


def qlmm_problem(desc) -> Problem:
    return _problem(QLMM_V, desc)


# ============================================================================ shared spec pieces
def _arguments_of(v: Variant):
    def arguments(desc) -> dict:
        """The functional keywords of `desc`: each optional input it leaves out as None."""
        out = {ARGUMENT[f]: None for f in v.desc.OPTIONAL_TENSORS if getattr(desc, f) is None}
        if v is QLMM_V:
            out["output_data_type"] = desc.output_tensor.data_type.name
        return out
    return arguments


def sample(desc, rng) -> list:
    """Inputs worth multiplying: random integers for the operands and zero points, scales
    in [2^-8, 2^-4] (the output scale of QUANTIZED_LINEAR sized so that the results spread
    over the output type: a_scale b_scale 64 sqrt(K) / 64), a bias in [-1, 1]."""
    k = desc.a_tensor.sizes[-1]
    out = []
    for field, td in tensor_fields(desc)[0]:
        n, dt = td.required_elements, td.data_type
        if field.endswith("scale_tensor"):
            values = rng.uniform(2.0**-8, 2.0**-4, n)
            if field == "output_scale_tensor":
                values = values * 2.0**-4 * 64 * np.sqrt(k) / 16
            out.append(values.astype(dt.numpy))
        elif dt in FLOATS:
            out.append(rng.uniform(-1.0, 1.0, n).astype(dt.numpy))
        else:
            info = np.iinfo(dt.numpy)
            lo, hi = (max(info.min, -(1 << 15)), min(info.max, 1 << 15)) if dt.size > 1 else (info.min, info.max)
            out.append(rng.integers(lo, hi, n, endpoint=True).astype(dt.numpy))
    return out


def traffic(desc) -> int:
    return sum(td.element_count * td.data_type.size for _, td in tensor_fields(desc)[0] + tensor_fields(desc)[1])


def flops(desc) -> int:
    """2 M N K per matrix of the batch: the integer operations of the product."""
    return 2 * desc.output_tensor.element_count * desc.a_tensor.sizes[-1]


def _from_cli_of(v: Variant):
    def from_cli(x: TensorDesc, o: dict):
        """--shape is A's ([batch..., M, K], INT8/UINT8 by --type); --n N (default K);
        --quantization tensor (default) or line (zero points and scales per row / column)."""
        dt = x.data_type if x.data_type in (WIDE if v is MMITF_V else BYTES) else I8
        k = x.sizes[-1] if x.rank >= 1 else 1
        m = x.sizes[-2] if x.rank >= 2 else 1
        n = int(o["n"][0]) if o.get("n") else k
        line = (o.get("quantization") or "tensor").lower() == "line"
        a = TensorDesc(dt, x.sizes, x.strides)
        b = TensorDesc(dt, list(x.sizes[:-2]) + [k, n])

        def q(axis, t):
            return TensorDesc(t, ([m] if axis == -2 else [n]) if line else [1])
        if v is MMI_V:
            return mmi_infer_output(a, q(-2, dt), b, q(-1, dt))
        if v is QLMM_V:
            return qlmm_infer_output(a, q(-2, F32), q(-2, dt), b, q(-1, F32), q(-1, dt), q(-2, F32), q(-2, dt))
        return mmitf_infer_output(a, q(-2, F32), q(-2, dt), b, q(-1, F32), q(-1, dt),
                                  TensorDesc(F32, [n]))
    return from_cli


_CLI_ARGS = (CliArg("--n", "N, the output's columns (default: K, the last size of --shape)"),
             CliArg("--quantization", "tensor (one zero point and scale per tensor) or line (per row of A and "
                                      "the output, per column of B)", "str"))

SPECS = (
    OpSpec(name=MMI, key=MMI_V.key, desc=MatrixMultiplyIntegerOperatorDesc, support=MMI_SUPPORT,
           infer_output=mmi_infer_output, validate=mmi_validate, reference=mmi_reference,
           functional=matrix_multiply_integer, tensors=("a", "a_zero_point", "b", "b_zero_point"),
           arguments=_arguments_of(MMI_V), planner=GemmPlanner(mmi_problem),
           cli=Cli(_CLI_ARGS, _from_cli_of(MMI_V), "--shape 256,256 --dtype INT8 --n 256"),
           page="DML_MATRIX_MULTIPLY_INTEGER_OPERATOR_DESC", traffic=traffic, sample=sample),
    OpSpec(name=QLMM, key=QLMM_V.key, desc=QuantizedLinearMatrixMultiplyOperatorDesc, support=QLMM_SUPPORT,
           infer_output=qlmm_infer_output, validate=qlmm_validate, reference=qlmm_reference,
           functional=quantized_linear_matrix_multiply, tensors=_QL_NAMES,
           arguments=_arguments_of(QLMM_V), planner=GemmPlanner(qlmm_problem),
           cli=Cli(_CLI_ARGS, _from_cli_of(QLMM_V), "--shape 256,256 --dtype UINT8 --n 256"),
           page="DML_QUANTIZED_LINEAR_MATRIX_MULTIPLY_OPERATOR_DESC", tolerance=qlmm_tolerance, traffic=traffic,
           sample=sample),
    OpSpec(name=MMITF, key=MMITF_V.key, desc=MatrixMultiplyIntegerToFloatOperatorDesc, support=MMITF_SUPPORT,
           infer_output=mmitf_infer_output, validate=mmitf_validate, reference=mmitf_reference,
           functional=matrix_multiply_integer_to_float, tensors=_TF_NAMES,
           arguments=_arguments_of(MMITF_V), planner=GemmPlanner(mmitf_problem),
           cli=Cli(_CLI_ARGS, _from_cli_of(MMITF_V), "--shape 256,256 --dtype INT8 --n 256"),
           page="DML_MATRIX_MULTIPLY_INTEGER_TO_FLOAT_OPERATOR_DESC", tolerance=mmitf_tolerance, traffic=traffic,
           sample=sample),
)

__all__ = ["MatrixMultiplyIntegerOperatorDesc", "MatrixMultiplyIntegerToFloatOperatorDesc",
           "QuantizedLinearMatrixMultiplyOperatorDesc", "SPECS", "matrix_multiply_integer",
           "matrix_multiply_integer_to_float", "quantized_linear_matrix_multiply"]
