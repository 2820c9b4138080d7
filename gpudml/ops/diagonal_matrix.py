"""DML_DIAGONAL_MATRIX (FL 2.0; gpudml.diagonal_matrix0) and DML_DIAGONAL_MATRIX1 (FL 5.1;
gpudml.diagonal_matrix): a value along a span of diagonals of a stack of matrices (the two
last axes), zero elsewhere, or, in DIAGONAL_MATRIX1 with its optional input, the input's
elements elsewhere. Their kernel is the generator family's (kernels/generator.py): bits
moved, so every type is exact (FLOAT64 without shader-f64).

What the pages say (sdk-api's DML_DIAGONAL_MATRIX_OPERATOR_DESC, the 10/2020 version, and
DML_DIAGONAL_MATRIX1_OPERATOR_DESC, the 07/2022 version), as implemented:

- DIAGONAL_MATRIX: OutputTensor 4-D (`{ Batch1, Batch2, OutputHeight, OutputWidth }`, not
  necessarily square), FLOAT32 and FLOAT16 from FL 2.0, the 8 types from FL 2.1; element
  [.., y, x] is Value where y + Offset == x, else 0. Offset an INT (32-bit). Value a FLOAT
  (float32) that "might be truncated (for example, 10.6 will become 10)" for an integer
  type: gpudml truncates toward zero and, where the page is silent, saturates to the
  type's range (NaN becomes 0); FLOAT16 rounds it once to nearest.
- DIAGONAL_MATRIX1: InputTensor optional; InputTensor and OutputTensor "must have the
  same DataType and DimensionCount" (and, as the pseudocode reads InputTensor[coordinate],
  the same sizes; each its own strides, stride 0 broadcasts); 2 to 4 dimensions, the 11
  types (FL 5.1). ValueDataType must match OutputTensor's type; Value a DML_SCALAR_UNION
  exact in it (fill_value.scalar). DiagonalFillBegin (inclusive) and DiagonalFillEnd
  (exclusive) INTs; with topX = x - y, Value where (End >= Begin) ^ (topX >= Begin) ^
  (topX < End) (the page's pseudocode: begin > end fills outside the span), else the
  input's element or 0. The page's first example prints ones for "Value: 7" (a typo: the
  identity it names); gpudml's example takes Value 1.
- DIAGONAL_MATRIX is DIAGONAL_MATRIX1 with Begin = Offset and End = Offset + 1 (the page's
  remark), which is how gpudml runs it (Offset = INT32_MAX fills nothing: x - y < 2^31 - 1).

The two last axes must be shorter than 2^31 (x - y is computed in 32 bits): a larger one
is an UnsupportedError of the kernel.

The functional forms: `diagonal_matrix0(shape, offset=0, value=1.0, dtype="float32")` and
`diagonal_matrix(x=None, *, shape=None, dtype=None, value=1, diagonal_fill_begin=0,
diagonal_fill_end=1)` (shape and dtype are x's where x is given; without x both are
needed). Bit-exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.base import ProblemPlanner
from ..kernels.generator import FAMILY, Generator
from ..tensor_desc import TensorDesc, as_int, as_int_tuple, check_tensor_desc
from ..types import F16, F32, TYPES_8, TYPES_11, DataType, FeatureLevel
from . import padding
from .activations import as_float32
from .base import check_one_type
from .fill_value import check_output, check_value, naming_output, output_of, scalar, scalar_bits, value_type
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

FL = FeatureLevel
OP0, OP1 = "DiagonalMatrix", "DiagonalMatrix1"
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
SUPPORT0 = support_table(OP0, ("output_tensor",), [(FL.FL_2_1, {4}, TYPES_8), (FL.FL_2_0, {4}, {F32, F16})])
SUPPORT1 = support_table(OP1, ("input_tensor", "output_tensor"), [(FL.FL_5_1, (2, 4), TYPES_11)])


def check_int32(op: str, name: str, value) -> None:
    if not INT32_MIN <= value <= INT32_MAX:
        raise InvalidArgumentError(f"{op}: {name} = {value} is not an INT (it must lie in [{INT32_MIN}, {INT32_MAX}])")


def filled(rows: int, columns: int, begin: int, end: int) -> np.ndarray:
    """DIAGONAL_MATRIX1's rule over a [rows, columns] matrix: where Value goes (bool)."""
    top_x = np.arange(columns, dtype=np.int64)[None, :] - np.arange(rows, dtype=np.int64)[:, None]
    return (end >= begin) ^ (top_x >= begin) ^ (top_x < end)


def float_value(value: float, data_type: DataType):
    """DIAGONAL_MATRIX's FLOAT Value in the output's type: floats rounded once; integers
    truncated toward zero and saturated to the type's range (NaN: 0)."""
    if data_type.is_float:
        with np.errstate(over="ignore"):
            return float(np.float64(value).astype(data_type.numpy))
    info = np.iinfo(data_type.numpy)
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return int(info.max if value > 0 else info.min)
    return int(min(max(math.trunc(value), int(info.min)), int(info.max)))


# ---------------------------------------------------------------------------- DIAGONAL_MATRIX
@dataclass(frozen=True)
class DiagonalMatrixOperatorDesc:
    """DML_DIAGONAL_MATRIX_OPERATOR_DESC: `value` (a FLOAT) where y + offset == x, 0 elsewhere."""

    output_tensor: TensorDesc
    offset: int
    value: float = field(compare=False)
    _value_key: tuple = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "offset", as_int(self.offset, f"{OP0}: offset"))
        object.__setattr__(self, "value", as_float32(self.value, f"{OP0}: value"))
        object.__setattr__(self, "_value_key", padding.value_key(self.value))


def infer_output0(*, shape, offset=0, value=1.0, dtype="float32") -> DiagonalMatrixOperatorDesc:
    return DiagonalMatrixOperatorDesc(output_of(shape, dtype, "diagonal_matrix0"), offset, value)


def validate0(desc: DiagonalMatrixOperatorDesc, level: FeatureLevel) -> None:
    out = desc.output_tensor
    check_tensor_desc(OP0, "output_tensor", out, is_output=True)
    with naming_output(out):
        SUPPORT0.check(level, out.rank, {"output_tensor": out.data_type})
    check_int32(OP0, "offset", desc.offset)


def reference0(shape, offset=0, value=1.0, dtype="float32") -> np.ndarray:
    """numpy's eye(rows, columns, k=offset) as a mask over the stacked matrices: value there
    (float_value's conversion), 0 elsewhere."""
    data_type = DataType.parse(dtype)
    shape = tuple(shape)
    mask = np.eye(shape[-2], shape[-1], k=int(offset), dtype=bool)
    v = float_value(float(np.float32(value)), data_type)
    return np.broadcast_to(np.where(mask, v, 0).astype(data_type.numpy), shape).copy()


def problem0(desc: DiagonalMatrixOperatorDesc) -> Generator:
    dt = desc.output_tensor.data_type
    bits = scalar_bits(float_value(desc.value, dt), dt, f"{OP0}: value")
    end = desc.offset + 1 if desc.offset < INT32_MAX else INT32_MAX
    return Generator(OP0, desc.output_tensor, "diagonal", bits, begin=desc.offset, end=end)


def diagonal_matrix0(shape, offset=0, value=1.0, dtype="float32", *, device=None):
    """DML_OPERATOR_DIAGONAL_MATRIX: an array of `shape` (4-D: stacked matrices) and `dtype`
    that holds `value` (a float32, truncated toward zero and saturated for integer types) on
    the diagonal shifted by `offset` (element [.., y, y + offset]), 0 elsewhere: numpy's
    eye(rows, columns, k=offset) * value. Bit-exact."""
    return Call([], {"shape": shape, "offset": offset, "value": value, "dtype": dtype}, device)


def arguments0(desc: DiagonalMatrixOperatorDesc) -> dict:
    return {"shape": desc.output_tensor.sizes, "offset": desc.offset, "value": desc.value,
            "dtype": desc.output_tensor.data_type}


def from_cli0(x: TensorDesc, o: dict) -> DiagonalMatrixOperatorDesc:
    """The output --shape/--dtype; --offset (default 0), --value (default 1)."""
    offset = o.get("offset")
    return infer_output0(shape=x.sizes, offset=offset[0] if offset else 0,
                         value=o["value"] if o.get("value") is not None else 1.0, dtype=x.data_type)


# ---------------------------------------------------------------------------- DIAGONAL_MATRIX1
@dataclass(frozen=True)
class DiagonalMatrix1OperatorDesc:
    """DML_DIAGONAL_MATRIX1_OPERATOR_DESC: `value` (a DML_SCALAR_UNION of `value_data_type`)
    on the diagonals x - y in [diagonal_fill_begin, diagonal_fill_end) (outside it where
    begin > end), elsewhere `input_tensor`'s element (optional: None) or 0."""

    input_tensor: TensorDesc | None
    output_tensor: TensorDesc
    value_data_type: DataType
    value: int | float = field(compare=False)
    diagonal_fill_begin: int
    diagonal_fill_end: int
    _value_key: tuple = field(init=False, repr=False)
    #: Tensor fields that may be None (the conformance kit never breaks them into None).
    OPTIONAL_TENSORS = ("input_tensor",)

    def __post_init__(self):
        value_type(self, OP1)
        for name in ("diagonal_fill_begin", "diagonal_fill_end"):
            object.__setattr__(self, name, as_int(getattr(self, name), f"{OP1}: {name}"))
        object.__setattr__(self, "_value_key", padding.value_key(self.value))


def infer_output1(input_tensor: TensorDesc | None = None, *, shape=None, dtype=None, value=1,
                  diagonal_fill_begin=0, diagonal_fill_end=1) -> DiagonalMatrix1OperatorDesc:
    """The desc of diagonal_matrix(x, ...): the output x's shape and type (packed); without
    x, `shape` and `dtype`'s."""
    fn = "diagonal_matrix"
    if input_tensor is not None:
        given = None if shape is None else as_int_tuple(shape, f"{fn}: shape")
        if given is not None and given != input_tensor.sizes:
            raise InvalidArgumentError(f"{fn}: shape {list(given)} differs from x's {list(input_tensor.sizes)} "
                                       f"(give one or the other)")
        if dtype is not None and DataType.parse(dtype, f"{fn}: dtype") != input_tensor.data_type:
            raise InvalidArgumentError(f"{fn}: dtype {dtype!r} differs from x's {input_tensor.data_type.name}")
        out = TensorDesc(input_tensor.data_type, input_tensor.sizes)
    else:
        if shape is None:
            raise InvalidArgumentError(f"{fn}: without x, shape (the output's sizes) is required")
        out = output_of(shape, dtype, fn)
    return DiagonalMatrix1OperatorDesc(input_tensor, out, out.data_type, value, diagonal_fill_begin, diagonal_fill_end)


def validate1(desc: DiagonalMatrix1OperatorDesc, level: FeatureLevel) -> None:
    inp, out = desc.input_tensor, desc.output_tensor
    with naming_output(out):
        check_one_type(OP1, SUPPORT1, level, {"input_tensor": inp, "output_tensor": out}, ("input_tensor",))
    if inp is not None and inp.sizes != out.sizes:
        raise InvalidArgumentError(f"{OP1}: input_tensor.sizes {list(inp.sizes)} must equal output_tensor.sizes "
                                   f"{list(out.sizes)} (the output's elements off the diagonals are the input's)")
    check_output(OP1, SUPPORT1, level, out, desc.value_data_type)
    check_value(OP1, "value", desc.value, desc.value_data_type)
    check_int32(OP1, "diagonal_fill_begin", desc.diagonal_fill_begin)
    check_int32(OP1, "diagonal_fill_end", desc.diagonal_fill_end)


def reference1(x=None, *, shape=None, dtype=None, value=1, diagonal_fill_begin=0, diagonal_fill_end=1) -> np.ndarray:
    """x (or zeros of `shape` and `dtype`) with `value`, exact in the type, written where
    `filled` says (the page's rule over x - y)."""
    if x is not None:
        out = np.array(x, copy=True)
    else:
        out = np.zeros(tuple(shape), DataType.parse(dtype).numpy)
    data_type = DataType.from_numpy(out.dtype)
    mask = filled(out.shape[-2], out.shape[-1], int(diagonal_fill_begin), int(diagonal_fill_end))
    out[..., mask] = np.array(scalar(value, data_type, "value"), out.dtype)
    return out


def problem1(desc: DiagonalMatrix1OperatorDesc) -> Generator:
    bits = scalar_bits(desc.value, desc.value_data_type, f"{OP1}: value")
    return Generator(OP1, desc.output_tensor, "diagonal", bits, begin=desc.diagonal_fill_begin,
                     end=desc.diagonal_fill_end, input=desc.input_tensor)


def diagonal_matrix(x=None, *, shape=None, dtype=None, value=1, diagonal_fill_begin=0, diagonal_fill_end=1,
                    device=None):
    """DML_OPERATOR_DIAGONAL_MATRIX1: x (2-4 dimensions: stacked matrices; or, without x, zeros
    of `shape` and `dtype`) with `value` (exact in the type) written on the diagonals x - y in
    [diagonal_fill_begin, diagonal_fill_end), or outside that span where begin > end (ONNX's
    Trilu: begin INT32_MIN, end k keeps the upper triangle). Bit-exact, the 11 types."""
    return Call([("x", x)] if x is not None else [], {"shape": shape, "dtype": dtype, "value": value,
                                                     "diagonal_fill_begin": diagonal_fill_begin,
                                                     "diagonal_fill_end": diagonal_fill_end}, device)


def arguments1(desc: DiagonalMatrix1OperatorDesc) -> dict:
    none = desc.input_tensor is None
    return {"shape": desc.output_tensor.sizes if none else None, "dtype": desc.value_data_type if none else None,
            "value": desc.value, "diagonal_fill_begin": desc.diagonal_fill_begin,
            "diagonal_fill_end": desc.diagonal_fill_end}


def from_cli1(x: TensorDesc, o: dict) -> DiagonalMatrix1OperatorDesc:
    """The input --shape/--dtype; --value (default 7), --begin (default 0), --end (default 3)."""
    begin, end = o.get("begin"), o.get("end")
    value = o["value"] if o.get("value") is not None else 7
    return infer_output1(TensorDesc(x.data_type, x.sizes, x.strides), value=value,
                         diagonal_fill_begin=begin[0] if begin else 0, diagonal_fill_end=end[0] if end else 3)


_PAGE0 = "ns-directml-dml_diagonal_matrix_operator_desc.md"
_PAGE1 = "ns-directml-dml_diagonal_matrix1_operator_desc.md"
_F = np.float32
_PAGE1_INPUT = np.array([[4, 7, 3, 7, 9], [1, 2, 8, 6, 9], [9, 4, 1, 8, 7], [4, 3, 4, 2, 4]], _F)


def _shape4(args: dict) -> dict:
    return {"dtype": "float32", **args}


SPECS = (
    OpSpec(
        name=OP0, key="diagonal_matrix0", desc=DiagonalMatrixOperatorDesc, support=SUPPORT0,
        infer_output=infer_output0, validate=validate0, reference=reference0, functional=diagonal_matrix0,
        tensors=(), arguments=arguments0, planner=ProblemPlanner(problem0, FAMILY),
        cli=Cli((CliArg("--offset", "Offset (default 0)"), CliArg("--value", "Value (default 1)", "number")),
                from_cli0, "--shape 1,1,3,3 --offset 1"),
        page="DML_DIAGONAL_MATRIX_OPERATOR_DESC",
        examples=(
            Example("diagonal_matrix0-1", None, _shape4({"shape": [1, 1, 3, 3], "offset": 0, "value": 1.0}),
                    np.eye(3, dtype=_F).reshape(1, 1, 3, 3), _PAGE0),
            Example("diagonal_matrix0-2", None, _shape4({"shape": [1, 1, 3, 3], "offset": 1, "value": 1.0}),
                    np.eye(3, k=1, dtype=_F).reshape(1, 1, 3, 3), _PAGE0),
            Example("diagonal_matrix0-3", None, _shape4({"shape": [1, 1, 3, 2], "offset": -1, "value": 1.0}),
                    np.eye(3, 2, k=-1, dtype=_F).reshape(1, 1, 3, 2), _PAGE0),
            Example("diagonal_matrix0-4", None, _shape4({"shape": [1, 1, 3, 2], "offset": -3, "value": 1.0}),
                    np.zeros((1, 1, 3, 2), _F), _PAGE0),
        ),
    ),
    OpSpec(
        name=OP1, key="diagonal_matrix1", desc=DiagonalMatrix1OperatorDesc, support=SUPPORT1,
        infer_output=infer_output1, validate=validate1, reference=reference1, functional=diagonal_matrix,
        tensors=("x",), arguments=arguments1, planner=ProblemPlanner(problem1, FAMILY),
        cli=Cli((CliArg("--value", "Value (default 7)", "number"), CliArg("--begin", "DiagonalFillBegin (default 0)"),
                 CliArg("--end", "DiagonalFillEnd (default 3)")), from_cli1, "--shape 4,5 --begin 0 --end 3"),
        page="DML_DIAGONAL_MATRIX1_OPERATOR_DESC",
        examples=(
            Example("diagonal_matrix1-1", None, {"shape": [4, 5], "dtype": "float32", "value": 1,
                                                 "diagonal_fill_begin": 0, "diagonal_fill_end": 1},
                    np.eye(4, 5, dtype=_F), _PAGE1),
            Example("diagonal_matrix1-2", None, {"shape": [4, 5], "dtype": "float32", "value": 7,
                                                 "diagonal_fill_begin": 0, "diagonal_fill_end": 3},
                    7 * (np.eye(4, 5, dtype=_F) + np.eye(4, 5, 1, dtype=_F) + np.eye(4, 5, 2, dtype=_F)), _PAGE1),
            Example("diagonal_matrix1-3", _PAGE1_INPUT, {"value": 0, "diagonal_fill_begin": INT32_MIN,
                                                         "diagonal_fill_end": 1},
                    np.triu(_PAGE1_INPUT, 1), _PAGE1),
            Example("diagonal_matrix1-4", _PAGE1_INPUT, {"value": 0, "diagonal_fill_begin": 1,
                                                         "diagonal_fill_end": 0},
                    _PAGE1_INPUT * np.eye(4, 5, dtype=_F), _PAGE1),
        ),
    ),
)

__all__ = ["SPECS", "DiagonalMatrix1OperatorDesc", "DiagonalMatrixOperatorDesc"]
