"""DML_PADDING1_OPERATOR_DESC (FL 5_0; docs/operators/padding1.md): DML_PADDING with a
padding value typed by PaddingValueDataType (a DML_SCALAR_UNION), so that it is exact in
every one of the eleven types: INT64 and UINT64 beyond 2^53 and FLOAT64 included.

Everything but the value is Padding's: the rules (padding.check_padding), the modes and
the levels they need (WRAP from FL 6_4), the reference (padding.padded_array), and the
kernels (kernels/movement/padding.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.movement.padding import PADDING
from ..tensor_desc import TensorDesc
from ..types import TYPES_11, DataType, FeatureLevel, PaddingMode
from . import padding
from .spec import Call, Cli, CliArg, OpSpec, support_table

OP = "Padding1"

#: The page's one "Tensor support" table: from DML_FEATURE_LEVEL_5_0 (its Availability).
SUPPORT = support_table(OP, ("input_tensor", "output_tensor"), [
    (FeatureLevel.FL_5_0, (1, 8), TYPES_11),
])


@dataclass(frozen=True)
class Padding1OperatorDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    padding_mode: PaddingMode
    padding_value_data_type: DataType
    padding_value: int | float = field(compare=False)
    start_padding: tuple[int, ...]
    end_padding: tuple[int, ...]
    # Equality and hash by the value's exact identity (padding.value_key).
    _value_key: tuple = field(init=False, repr=False)

    def __post_init__(self):
        padding.normalize_fields(self, OP)
        object.__setattr__(self, "padding_value_data_type", DataType.coerce(
            self.padding_value_data_type, f"{OP}: padding_value_data_type"))

    def fill_bits(self) -> tuple[int, int]:
        """The CONSTANT element's bits (low word, high word): the value exact in
        padding_value_data_type (exact_element)."""
        return padding.value_bits(OP, exact_element, self.padding_value, self.padding_value_data_type)


def exact_element(value, dtype: np.dtype):
    """The padding value as one element of `dtype`, as a DML_SCALAR_UNION of that type holds
    it: an integer type takes integers only (Python and numpy ints exactly, at any size;
    a float only when it is a whole number), in the type's range, and never truncates
    (10.6 is no INT32 value); a float type rounds the value once, to nearest
    (padding.float_element: a Python float is exact in FLOAT64). TypeError / ValueError
    with the reason after the field name."""
    dtype = padding.check_real(value, dtype)
    if dtype.kind == "f":
        return padding.float_element(value, dtype)
    name = DataType.from_numpy(dtype).name
    exact = padding.exact_fraction(value)
    if exact is None:
        raise ValueError(f" = {value!r} cannot be converted to the integer type {name}")
    if exact.denominator != 1:
        raise ValueError(f" = {value!r} is not a whole number, so it is no {name} value "
                         f"(Padding1 holds its value exactly: it does not truncate)")
    return padding.integer_element(exact.numerator, dtype, repr(value))


def infer_output(input_tensor: TensorDesc, start_padding, end_padding, mode="constant", value=0,
                 value_data_type=None) -> Padding1OperatorDesc:
    """The desc of `padding1(x, start_padding, end_padding, mode=, value=, value_data_type=)`:
    the value's type defaults to x's (validation checks a given one)."""
    start, end, out_desc = padding.grown(input_tensor, start_padding, end_padding, "padding1")
    mode = PaddingMode.coerce(mode, "padding1: mode")
    value_type = input_tensor.data_type if value_data_type is None else DataType.parse(
        value_data_type, "padding1: value_data_type")
    return Padding1OperatorDesc(input_tensor, out_desc, mode, value_type, value, start, end)


def validate(desc: Padding1OperatorDesc, feature_level: FeatureLevel) -> None:
    padding.check_padding(OP, SUPPORT, desc, feature_level)
    # "The data type of the PaddingValue member, which must match OutputTensor.DataType."
    if desc.padding_value_data_type != desc.output_tensor.data_type:
        raise InvalidArgumentError(
            f"{OP}: padding_value_data_type {desc.padding_value_data_type.name} must equal "
            f"output_tensor.data_type {desc.output_tensor.data_type.name}")
    padding.check_value(OP, desc)


def reference(x, start_padding, end_padding, mode=PaddingMode.CONSTANT, value=0, value_data_type=None) -> np.ndarray:
    """Padding's semantics (gpudml.reference.padding: every mode, paddings of any width),
    the CONSTANT element being `value` exact in x's dtype (exact_element: integers are
    never truncated nor rounded through a float; floats round once). `value_data_type`,
    when given, must be x's data type (ValueError otherwise)."""
    x = np.asarray(x)
    if value_data_type is not None and DataType.parse(value_data_type) != DataType.from_numpy(x.dtype):
        raise ValueError(f"value_data_type {value_data_type!r} is not the data type of x ({x.dtype})")
    return padding.padded_array(x, start_padding, end_padding, mode, lambda: exact_element(value, x.dtype))


# ---------------------------------------------------------------------------- API
def padding1(x, start_padding, end_padding, *, mode="constant", value=0, value_data_type=None, device=None):
    """DML_PADDING1: x grown by `start_padding` / `end_padding` elements on each axis, as
    `pad` does (`mode`: a PaddingMode or its name, any case, "wrap" included), CONSTANT
    filling with `value` exact in x's type: an int of any size for the integer types (a
    whole number; no truncation), a float rounded once for the float types.
    `value_data_type` (DirectML's PaddingValueDataType: a DataType, its name or a numpy
    dtype) defaults to x's type and must equal it."""
    return Call([("x", x)], {"start_padding": start_padding, "end_padding": end_padding, "mode": mode, "value": value,
                             "value_data_type": value_data_type}, device)


def arguments(desc: Padding1OperatorDesc) -> dict:
    return {"start_padding": desc.start_padding, "end_padding": desc.end_padding, "mode": desc.padding_mode,
            "value": desc.padding_value, "value_data_type": desc.padding_value_data_type}


def from_cli(x: TensorDesc, a: dict) -> Padding1OperatorDesc:
    return infer_output(x, *padding.cli_paddings(x, a), a["mode"], a["value"], a["value_data_type"])


SPEC = OpSpec(
    name=OP, key="padding1", desc=Padding1OperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=padding1, tensors=("x",), arguments=arguments, planner=PADDING,
    cli=Cli(padding.CLI_ARGS + (CliArg("--value-data-type", "padding_value_data_type (default: --dtype)", "str"),),
            from_cli, padding.CLI_EXAMPLE + " --value 9 --value-data-type FLOAT32"),
    page="DML_PADDING1_OPERATOR_DESC",
    # The page's four examples are the Padding page's (PaddingValueDataType FLOAT32).
    examples=padding.page_examples("padding1", "ns-directml-dml_padding1_operator_desc.md",
                                   value_data_type=DataType.FLOAT32),
)
