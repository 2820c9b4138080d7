"""DML_FILL_VALUE_CONSTANT and DML_FILL_VALUE_SEQUENCE (FL 2.1): generators, operators with
no input tensor, only an output. Their kernel is the generator family's
(kernels/generator.py): every element written from the description's values, as bits, so
a constant is exact in every type.

What the pages say (sdk-api's DML_FILL_VALUE_CONSTANT_OPERATOR_DESC, the 10/2020 version,
and DML_FILL_VALUE_SEQUENCE_OPERATOR_DESC, the 01/2022 version), as implemented:

- OutputTensor "may have any size": FILL_VALUE_CONSTANT's table has one row, FL 2.1,
  4 dimensions, the 8 types (no 64-bit type); FILL_VALUE_SEQUENCE's three rows: FL 2.1
  4 dimensions and the 8 types, FL 4.0 1 to 8 dimensions, FL 5.0 INT64 and UINT64 too.
  Its own strides (a strided output is written where they point).
- ValueDataType "must match OutputTensor.DataType".
- Value, ValueStart, ValueDelta: DML_SCALAR_UNIONs "with ValueDataType determining how to
  interpret the field": a value exact in that type (an integer type takes an integer in its
  range, never truncated: 10.6 is no INT32 value; a float type rounds once to nearest,
  beyond its range to infinity). NaN, infinities and -0.0 are kept bit for bit.
  FILL_VALUE_SEQUENCE's integer start and step may also be given as the other reading of
  their bits (a C assignment to the union's field: the page's example 2 steps a UINT8
  sequence by -2, which is 254, and 10, 8, 6, 4 follow by wrapping).
- FILL_VALUE_SEQUENCE's pseudocode (`OutputTensor[coordinate] = Value; Value += Delta`
  over the coordinates in order) is, for element i in row-major order: integers
  `start + i * delta` wrapping in the type (what i additions give, exactly: 64-bit ones
  too); floats, where the page is silent on rounding, gpudml computes `f32(i) * delta +
  start` in float32 (ONNX Range's definition, `start + i * delta`, not i roundings of an
  accumulator), element 0 being `start` itself; float16 rounds that once more on the store.

The functional forms take the output's shape and type (numpy's dtype or a DataType):
`fill_value_constant(shape, value, dtype)`, `fill_value_sequence(shape, start, delta,
dtype)`; the result is a numpy array (a Tensor where `device`'s tensors are wanted: pass
the result to another operator's Tensor call).

Precision (`tolerance`): constants and integer sequences are bit-exact; a float sequence is
within 2^-23 |i delta| + 2^-24 |result| (the float32 index past 2^24, the product's and the
sum's roundings) of the float64 value start + i delta rounded once to the type, plus half a
float16 ULP for FLOAT16.
"""

from __future__ import annotations

import contextlib
import numbers
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.base import ProblemPlanner
from ..kernels.generator import FAMILY, Generator
from ..tensor_desc import TensorDesc, as_int_tuple, check_tensor_desc, positive_sizes
from ..types import F16, I64, TYPES_8, U64, DataType, FeatureLevel
from . import padding
from .padding1 import exact_element
from .precision import ulp
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

FL = FeatureLevel
CONSTANT, SEQUENCE = "FillValueConstant", "FillValueSequence"
CONSTANT_SUPPORT = support_table(CONSTANT, ("output_tensor",), [(FL.FL_2_1, {4}, TYPES_8)])
SEQUENCE_SUPPORT = support_table(SEQUENCE, ("output_tensor",), [
    (FL.FL_5_0, (1, 8), TYPES_8 | {I64, U64}),
    (FL.FL_4_0, (1, 8), TYPES_8),
    (FL.FL_2_1, {4}, TYPES_8),
])


# ---------------------------------------------------------------------------- DML_SCALAR_UNION values
def scalar(value, data_type: DataType, where: str, either_sign: bool = False):
    """A DML_SCALAR_UNION of `data_type`: the value exact in the type (padding1.exact_element:
    integers in range, never truncated; floats rounded once), as a Python int or float;
    InvalidArgumentError naming `where` otherwise. `either_sign`: an integer type also takes
    the other reading of its bits (a UINT8 step of -2 is 254, the page's example 2 of
    FILL_VALUE_SEQUENCE), the value kept as given."""
    if either_sign and not data_type.is_float and isinstance(value, numbers.Integral) \
            and not isinstance(value, (bool, np.bool_)):
        bits = data_type.size * 8
        if -(1 << (bits - 1)) <= int(value) < (1 << bits):
            return int(value)
    try:
        element = exact_element(value, data_type.numpy)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{where}{exc} (a {data_type.name} value)") from None
    return float(element) if data_type.is_float else int(element)


def scalar_bits(value, data_type: DataType, where: str) -> int:
    """The bits of one `data_type` element holding `value` (scalar's rule), as an int."""
    element = np.array(scalar(value, data_type, where), data_type.numpy).reshape(1)
    return int(element.view(f"u{data_type.size}")[0])


def kernel_number(value, data_type: DataType, where: str) -> int:
    """What the generator kernel adds for a sequence: integers as themselves (any sign: the
    kernel wraps), floats as float32 bits (float16 values are exact in float32)."""
    v = scalar(value, data_type, where, either_sign=True)
    if data_type.is_float:
        return int(np.array(v, np.float32).reshape(1).view(np.uint32)[0])
    return v


def output_of(shape, dtype, fn: str) -> TensorDesc:
    """The packed output of a generator's functional call: `shape` (a sequence of ints) of
    `dtype` (a DataType, its name or a numpy dtype)."""
    if isinstance(shape, (str, bytes)) or np.ndim(shape) != 1:
        raise InvalidArgumentError(f"{fn}: shape: expected a sequence of integers, got {shape!r}")
    if dtype is None:
        raise InvalidArgumentError(f"{fn}: dtype: the output's data type is required (a DataType or numpy dtype)")
    sizes = positive_sizes(as_int_tuple(shape, f"{fn}: shape"), f"{fn}: shape")
    return TensorDesc(DataType.parse(dtype, f"{fn}: dtype"), sizes)


def check_output(op: str, support, level: FeatureLevel, out: TensorDesc, value_data_type: DataType) -> None:
    """The output valid and in the support row; ValueDataType its data type."""
    check_tensor_desc(op, "output_tensor", out, is_output=True)
    with naming_output(out):
        support.check(level, out.rank, {"output_tensor": out.data_type})
    if value_data_type != out.data_type:
        raise InvalidArgumentError(f"{op}: value_data_type {value_data_type.name} must equal "
                                   f"output_tensor.data_type {out.data_type.name} (the page's rule)")


@contextlib.contextmanager
def naming_output(out: TensorDesc):
    """A support table's refusal of the output's rank (the only tensor: its message names
    DimensionCount) naming output_tensor and its sizes too."""
    try:
        yield
    except InvalidArgumentError as exc:
        if not isinstance(out, TensorDesc):
            raise
        raise InvalidArgumentError(f"{exc} (output_tensor.sizes {list(out.sizes)})") from None


def check_value(op: str, fieldname: str, value, data_type: DataType, either_sign: bool = False) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"{op}: {fieldname}: expected a real number, got {value!r}")
    scalar(value, data_type, f"{op}: {fieldname}", either_sign)


def value_type(desc, op: str) -> None:
    """__post_init__'s ValueDataType as a DataType."""
    object.__setattr__(desc, "value_data_type", DataType.coerce(desc.value_data_type, f"{op}: value_data_type"))


# ---------------------------------------------------------------------------- FILL_VALUE_CONSTANT
@dataclass(frozen=True)
class FillValueConstantOperatorDesc:
    """DML_FILL_VALUE_CONSTANT_OPERATOR_DESC: every element of the output `value` (a
    DML_SCALAR_UNION of `value_data_type`)."""

    output_tensor: TensorDesc
    value_data_type: DataType
    value: int | float = field(compare=False)
    # Equality and hash by the value's exact identity (padding.value_key).
    _value_key: tuple = field(init=False, repr=False)

    def __post_init__(self):
        value_type(self, CONSTANT)
        object.__setattr__(self, "_value_key", padding.value_key(self.value))


def constant_infer_output(*, shape, value, dtype) -> FillValueConstantOperatorDesc:
    out = output_of(shape, dtype, "fill_value_constant")
    return FillValueConstantOperatorDesc(out, out.data_type, value)


def constant_validate(desc: FillValueConstantOperatorDesc, level: FeatureLevel) -> None:
    check_output(CONSTANT, CONSTANT_SUPPORT, level, desc.output_tensor, desc.value_data_type)
    check_value(CONSTANT, "value", desc.value, desc.value_data_type)


def constant_reference(shape, value, dtype) -> np.ndarray:
    """`shape` filled with `value` exact in `dtype` (numpy's full of the exact element)."""
    data_type = DataType.parse(dtype)
    return np.full(tuple(shape), exact_element(value, data_type.numpy), data_type.numpy)


def constant_problem(desc: FillValueConstantOperatorDesc) -> Generator:
    bits = scalar_bits(desc.value, desc.value_data_type, f"{CONSTANT}: value")
    return Generator(CONSTANT, desc.output_tensor, "constant", bits)


def fill_value_constant(shape, value, dtype, *, device=None):
    """DML_OPERATOR_FILL_VALUE_CONSTANT: an array of `shape` and `dtype` (a DataType or numpy
    dtype; DirectML: 4 dimensions, 8 types) whose every element is `value`, exact in the
    type (an integer type takes integers in range; floats round once). Bit-exact."""
    return Call([], {"shape": shape, "value": value, "dtype": dtype}, device)


def constant_arguments(desc: FillValueConstantOperatorDesc) -> dict:
    return {"shape": desc.output_tensor.sizes, "value": desc.value, "dtype": desc.value_data_type}


def _number(o: dict, name: str, default):
    value = o.get(name)
    if value is None:
        return default
    return value


def constant_from_cli(x: TensorDesc, o: dict) -> FillValueConstantOperatorDesc:
    """The output --shape/--dtype; --value (default 13)."""
    return constant_infer_output(shape=x.sizes, value=_number(o, "value", 13), dtype=x.data_type)


# ---------------------------------------------------------------------------- FILL_VALUE_SEQUENCE
@dataclass(frozen=True)
class FillValueSequenceOperatorDesc:
    """DML_FILL_VALUE_SEQUENCE_OPERATOR_DESC: element i of the output (row-major) `value_start
    + i * value_delta` in `value_data_type` (module docstring)."""

    output_tensor: TensorDesc
    value_data_type: DataType
    value_start: int | float = field(compare=False)
    value_delta: int | float = field(compare=False)
    _value_key: tuple = field(init=False, repr=False)

    def __post_init__(self):
        value_type(self, SEQUENCE)
        object.__setattr__(self, "_value_key", (padding.value_key(self.value_start),
                                                padding.value_key(self.value_delta)))


def sequence_infer_output(*, shape, start, delta, dtype) -> FillValueSequenceOperatorDesc:
    out = output_of(shape, dtype, "fill_value_sequence")
    return FillValueSequenceOperatorDesc(out, out.data_type, start, delta)


def sequence_validate(desc: FillValueSequenceOperatorDesc, level: FeatureLevel) -> None:
    check_output(SEQUENCE, SEQUENCE_SUPPORT, level, desc.output_tensor, desc.value_data_type)
    check_value(SEQUENCE, "value_start", desc.value_start, desc.value_data_type, either_sign=True)
    check_value(SEQUENCE, "value_delta", desc.value_delta, desc.value_data_type, either_sign=True)


def sequence_reference(shape, start, delta, dtype) -> np.ndarray:
    """Element i (row-major) of `shape`: integers start + i * delta in Python's integers,
    wrapped into `dtype`; floats start + i * delta in float64 (start itself at i = 0),
    rounded once to `dtype`."""
    data_type = DataType.parse(dtype)
    shape = tuple(shape)
    count = int(np.prod(shape, dtype=np.int64))
    s, d = scalar(start, data_type, "start", True), scalar(delta, data_type, "delta", True)
    if not data_type.is_float:
        bits = data_type.size * 8
        words = np.array([(s + i * d) % (1 << bits) for i in range(count)], np.uint64)
        return words.astype(f"u{data_type.size}").view(data_type.numpy).reshape(shape)
    i = np.arange(count, dtype=np.float64)
    with np.errstate(all="ignore"):
        values = np.where(i == 0, s, s + i * d)
        return values.astype(data_type.numpy).reshape(shape)


def sequence_tolerance(expected, inputs, arguments: dict):
    """The documented precision (module docstring), per element; None for integers."""
    data_type = DataType.parse(arguments["dtype"])
    if not data_type.is_float:
        return None
    expected = np.asarray(expected, np.float64)
    d = scalar(arguments["delta"], data_type, "delta")
    i = np.arange(expected.size, dtype=np.float64).reshape(expected.shape)
    with np.errstate(all="ignore"):
        bound = 2.0**-23 * np.abs(i * d) + 2.0**-24 * np.abs(expected)
        if data_type == F16:
            bound = bound + 0.5 * ulp(expected, np.float16)
    return np.where(np.isfinite(bound), bound, 0.0)


def sequence_problem(desc: FillValueSequenceOperatorDesc) -> Generator:
    dt = desc.value_data_type
    number = "float" if dt.is_float else "sint" if np.dtype(dt.numpy).kind == "i" else "uint"
    return Generator(SEQUENCE, desc.output_tensor, "sequence",
                     kernel_number(desc.value_start, dt, f"{SEQUENCE}: value_start"),
                     kernel_number(desc.value_delta, dt, f"{SEQUENCE}: value_delta"), number)


def fill_value_sequence(shape, start, delta, dtype, *, device=None):
    """DML_OPERATOR_FILL_VALUE_SEQUENCE: an array of `shape` and `dtype` whose element i
    (row-major) is start + i * delta in the type: integers wrap, exactly (64-bit ones too);
    floats are f32(i) * delta + start in float32 (element 0 start itself), within 2^-23 |i
    delta| + 2^-24 |result| (+ half a float16 ULP) of the exact value."""
    return Call([], {"shape": shape, "start": start, "delta": delta, "dtype": dtype}, device)


def sequence_arguments(desc: FillValueSequenceOperatorDesc) -> dict:
    return {"shape": desc.output_tensor.sizes, "start": desc.value_start, "delta": desc.value_delta,
            "dtype": desc.value_data_type}


def sequence_from_cli(x: TensorDesc, o: dict) -> FillValueSequenceOperatorDesc:
    """The output --shape/--dtype; --start (default 3), --delta (default 2)."""
    return sequence_infer_output(shape=x.sizes, start=_number(o, "start", 3), delta=_number(o, "delta", 2),
                                 dtype=x.data_type)


_CONSTANT_PAGE = "ns-directml-dml_fill_value_constant_operator_desc.md"
_SEQUENCE_PAGE = "ns-directml-dml_fill_value_sequence_operator_desc.md"

SPECS = (
    OpSpec(
        name=CONSTANT, key="fill_value_constant", desc=FillValueConstantOperatorDesc, support=CONSTANT_SUPPORT,
        infer_output=constant_infer_output, validate=constant_validate, reference=constant_reference,
        functional=fill_value_constant, tensors=(), arguments=constant_arguments,
        planner=ProblemPlanner(constant_problem, FAMILY),
        cli=Cli((CliArg("--value", "Value (default 13)", "number"),), constant_from_cli,
                "--shape 1,1,2,4 --value 13"),
        page="DML_FILL_VALUE_CONSTANT_OPERATOR_DESC",
        examples=(Example("fill_value_constant-1", None, {"shape": [1, 1, 2, 4], "value": 13.0, "dtype": "float32"},
                          np.full((1, 1, 2, 4), 13.0, np.float32), _CONSTANT_PAGE),),
    ),
    OpSpec(
        name=SEQUENCE, key="fill_value_sequence", desc=FillValueSequenceOperatorDesc, support=SEQUENCE_SUPPORT,
        infer_output=sequence_infer_output, validate=sequence_validate, reference=sequence_reference,
        functional=fill_value_sequence, tensors=(), arguments=sequence_arguments,
        planner=ProblemPlanner(sequence_problem, FAMILY),
        cli=Cli((CliArg("--start", "ValueStart (default 3)", "number"),
                 CliArg("--delta", "ValueDelta (default 2)", "number")), sequence_from_cli,
                "--shape 1,1,1,3 --start 3 --delta 2"),
        page="DML_FILL_VALUE_SEQUENCE_OPERATOR_DESC", tolerance=sequence_tolerance,
        examples=(
            Example("fill_value_sequence-1", None, {"shape": [1, 1, 1, 3], "start": 3, "delta": 2, "dtype": "float32"},
                    np.array([[[[3, 5, 7]]]], np.float32), _SEQUENCE_PAGE),
            Example("fill_value_sequence-2", None, {"shape": [1, 1, 2, 2], "start": 10, "delta": -2, "dtype": "uint8"},
                    np.array([[[[10, 8], [6, 4]]]], np.uint8), _SEQUENCE_PAGE),
        ),
    ),
)

__all__ = ["SPECS", "FillValueConstantOperatorDesc", "FillValueSequenceOperatorDesc"]
