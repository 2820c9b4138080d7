"""The row type of the element-wise table: `Row` (one operator: everything its page says
that tells it apart), `Attr` (an attribute of its desc), DML_SCALE_BIAS (`ScaleBias`), DirectML's
FLOAT and DML_SCALAR_UNION values (`as_float32`, `scalar_value`), and a row's functional form's
argument names and signature (`argument_name`, `signature_of`)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InvalidArgumentError
from ...kernels.elementwise import value_kind
from ...types import F32, DataType, FeatureLevel
from ..spec import lazy_dataclass
from .common import F32_MAX


@lazy_dataclass(frozen=True)  # (a dataclass when first used: ops/spec.py)
class ScaleBias:
    """DML_SCALE_BIAS: x * scale + bias, applied to an operator's input before its function."""

    scale: float = 1.0
    bias: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "scale", as_float32(self.scale, "ScaleBias.scale"))
        object.__setattr__(self, "bias", as_float32(self.bias, "ScaleBias.bias"))

    @classmethod
    def coerce(cls, value, where: str) -> ScaleBias | None:
        """None, a ScaleBias, or a (scale, bias) pair."""
        if value is None or isinstance(value, ScaleBias):
            return value
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return cls(as_float32(value[0], f"{where}.scale"), as_float32(value[1], f"{where}.bias"))
        raise InvalidArgumentError(f"{where}: expected a ScaleBias or a (scale, bias) pair, got {value!r}")


def scalar_value(value, data_type: DataType, field: str, lowest: bool = True):
    """A DML_SCALAR_UNION of `data_type` (CLIP1's min and max): None is the type's lowest
    (`lowest`) or highest value (-inf or inf for floats); an integer type takes an integer
    (an int, or a float of integral value) within its range, FLOAT32 and FLOAT16 a real
    number rounded to the type (NaN and infinities too; a finite value beyond the type's
    range is an InvalidArgumentError)."""
    dtype = data_type.numpy
    if value is None:
        if data_type.is_float:
            return -math.inf if lowest else math.inf
        info = np.iinfo(dtype)
        return int(info.min) if lowest else int(info.max)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidArgumentError(f"{field}: expected a number (a {data_type.name} value), got {value!r}")
    if data_type.is_float:
        if data_type == F32:
            return as_float32(value, field)
        top = float(np.finfo(dtype).max)
        value = float(value)
        with np.errstate(over="ignore"):
            rounded = float(np.float64(value).astype(dtype)) if math.isfinite(value) else value
        if math.isfinite(value) and math.isinf(rounded):
            raise InvalidArgumentError(f"{field} = {value!r} is beyond {data_type.name}'s range, +-{top:g}")
        return rounded
    info = np.iinfo(dtype)
    if isinstance(value, (float, np.floating)) and not (math.isfinite(value) and float(value).is_integer()):
        raise InvalidArgumentError(f"{field} = {value!r} is not a value of {data_type.name} (an integer in "
                                   f"[{info.min}, {info.max}])")
    value = int(value)
    if not info.min <= value <= info.max:
        raise InvalidArgumentError(f"{field} = {value!r} is beyond {data_type.name}'s range [{info.min}, {info.max}]")
    return value


def as_float32(value, field: str) -> float:
    """A DirectML FLOAT: a real number (int or float, not bool) rounded to float32;
    InvalidArgumentError for anything else and for finite values beyond float32's range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidArgumentError(f"{field}: expected a number (a DirectML FLOAT), got {value!r}")
    value = float(value)
    if math.isfinite(value) and abs(value) > F32_MAX * (1 + 2**-25):
        raise InvalidArgumentError(f"{field} = {value!r} is beyond FLOAT's (float32's) range, +-{F32_MAX:.7g}")
    return float(np.float32(value)) if math.isfinite(value) else value


def fused_name(row: Row) -> str:
    """An activation row's name as a FusedActivation: its functional name without "activation_"."""
    return row.functional.removeprefix("activation_")


# ============================================================================ the row
@dataclass(frozen=True)
class Attr:
    """An attribute of a row's desc (DirectML's field in snake case): its default in the
    functional form, and whether NaN and infinities are allowed (`finite`: the page forbids
    them). `kind`: "float" (a DirectML FLOAT), "enum" (a DirectML enum: `enum` is its
    IntEnum, the default a member; the formula is chosen by it) or "value" (a
    DML_SCALAR_UNION in the tensor's own type, CLIP1's min and max: None is the type's
    lowest (`default` "lowest") or highest value)."""

    name: str
    default: Any
    finite: bool = False
    #: The least value the page allows (below the level `minimum_until`; None: any).
    minimum: float | None = None
    minimum_until: FeatureLevel | None = None
    kind: str = "float"
    enum: Any = None

    def check(self, value, field: str, op: str, data_type: DataType | None = None):
        if self.kind == "enum":
            return self.enum.coerce(value, f"{op}: {field}")
        if self.kind == "value":
            if data_type is None:  # no output type to read it in: the desc is invalid anyway
                return value
            return scalar_value(value, data_type, f"{op}: {field}", lowest=self.default == "lowest")
        value = as_float32(value, f"{op}: {field}")
        if self.finite and not math.isfinite(value):
            raise InvalidArgumentError(f"{op}: {field} = {value!r} must be finite")
        return value

    def check_level(self, value, op: str, level: FeatureLevel) -> None:
        """The page's least value, where it applies at `level`."""
        if self.minimum is None or (self.minimum_until is not None and level >= self.minimum_until):
            return
        if not value >= self.minimum:
            later = f"; {self.minimum_until.name} and later take any" if self.minimum_until is not None else ""
            raise InvalidArgumentError(f"{op}: {self.name} = {value!r} must be at least {self.minimum} at "
                                       f"{FeatureLevel(level).name}{later}")


@dataclass(frozen=True)
class Row:
    """One operator. `dml`: its enum name ("ELEMENT_WISE_ADD1"; `op`, in CamelCase, names it
    in error messages and its desc class, `ElementWiseAdd1OperatorDesc`); `key`: the spec
    key; `functional`: the public name (API.md 11);
    `tensors`: its input fields; `support`: the page's rows (level, ranks, types), one type
    set shared by every tensor, or one per tensor (inputs, then the output); `numpy`: the
    function in numpy over float64 values (floats) or the inputs' own integers (which it
    must wrap: `wrapping`); `wgsl`: the formula by compute class ("float", "int" (8-32-bit
    integers, "sint"/"uint" where they differ), "int64" ("sint64"/"uint64")); `ulps` and
    `absolute`: the precision (ULPs of float32 at the result, a number or a function of
    the inputs; an absolute error); `page`: the page's file (its excerpt, with the commit
    read, under tests/data/pages/ns-directml-dml_<page>)."""

    dml: str
    key: str
    functional: str
    tensors: tuple[str, ...]
    support: tuple
    numpy: Callable
    wgsl: dict
    page: str
    summary: str
    attributes: tuple[Attr, ...] = ()
    scale_bias: bool = False
    fused_activation: bool = False
    logical: bool = False  # the output's type is its own (`output_data_type`, default UINT8; the comparisons' 1 or 0)
    #: The output's field (the _GRAD operators' `output_gradient_tensor`).
    output: str = "output_tensor"
    #: The values are the elements' bits (an unsigned integer of the element's width, floats
    #: too: "the tensor data type is ignored except for determining the width"): BIT_*, IF.
    bits: bool = False
    #: Groups of fields that share one data type (None: every tensor, the output too unless
    #: its type is its own).
    same_type: tuple | None = None
    #: The input whose type the output takes (None: the first input's; ignored for a logical or cast row).
    out_from: str | None = None
    #: The output's type is the functional form's `dtype` (DML_OPERATOR_CAST).
    cast: bool = False
    #: `numpy` takes the inputs as they are (each its own type), not as float64 values.
    raw: bool = False
    #: The page's examples: (name, inputs (a tuple), attributes, expected output).
    examples: tuple = ()
    #: Inputs the description may leave out (None): their functional arguments default to None.
    optional: tuple[str, ...] = ()
    #: More of the page's rules: check(op, {field: TensorDesc}, level), InvalidArgumentError.
    check: Callable | None = None
    #: The output's type from the inputs' descs ({field: TensorDesc}) and infer_output's
    #: arguments (popping its own: `output_data_type`), and those arguments of a desc
    #: (QUANTIZE_LINEAR's: the zero point's type, or output_data_type).
    out_type: Callable | None = None
    out_type_arguments: Callable | None = None
    fuses: bool = False  # an activation that can be another operator's FusedActivation
    ulps: float | Callable = 0.0
    absolute: float | Callable = 0.0
    precision: str = "exact"
    #: Input tensors whose data type may differ from the first input's, and the level from
    #: which it may (POW's exponent from FL_3_0); the formula is then looked up by the
    #: inputs' kinds ("float,sint", ...), the numpy function takes each in its own type.
    mixed: tuple[tuple[str, FeatureLevel], ...] = ()
    #: The formula's attributes for integer tensors (values, numpy dtype) -> Attributes
    #: (THRESHOLD's and SHRINK's FLOATs as integers of the type); None: the FLOATs as they are.
    int_attributes: Callable | None = None
    copy: bool = False  # the output takes the input's bits (the identities, without ScaleBias)
    min_max_data_type: bool = False  # the desc names its attributes' type (CLIP1's MinMaxDataType)

    @property
    def op(self) -> str:
        """DirectML's name in CamelCase ("ElementWiseAdd1", "ActivationRelu")."""
        return "".join(w.capitalize() for w in self.dml.split("_"))

    @property
    def arity(self) -> int:
        return len(self.tensors)

    @property
    def fields(self) -> tuple[str, ...]:
        """The tensor fields: the inputs, then the output."""
        return self.tensors + (self.output,)

    def type_groups(self) -> tuple[tuple[str, ...], ...]:
        """The groups of fields of one data type (a `mixed` field may leave its group from
        its level on)."""
        if self.same_type is not None:
            return self.same_type
        return (self.tensors,) if self.logical or self.cast else (self.fields,)

    def formula(self, data_type: DataType, *others: DataType) -> str | dict | None:
        """The WGSL formula for inputs of `data_type` (None: the row has none for it); a
        bit row's values are its elements' bits ("uint"); where a `mixed` row's other inputs
        (`others`, their types) differ in kind from the first, the formula of those kinds
        ("float,sint"). A dict: one formula per value of the row's enum."""
        kind = "uint" if self.bits else value_kind(data_type)
        if self.mixed and others:
            kinds = [kind] + [value_kind(t) for t in others]
            if len(set(kinds)) > 1:
                return self.wgsl.get(",".join(kinds))
        if kind == "float":
            return self.wgsl.get("float")
        if data_type.size == 8:
            return self.wgsl.get(kind + "64", self.wgsl.get("int64"))
        return self.wgsl.get(kind, self.wgsl.get("int"))


def argument_name(field: str) -> str:
    """The functional form's name of a tensor field."""
    return {"input_tensor": "x", "a_tensor": "a", "b_tensor": "b"}.get(field, field.removesuffix("_tensor"))


def signature_of(row: Row, with_device: bool = True) -> inspect.Signature:
    """The signature of the row's functional form (`with_device`: its `device` keyword; the reference has none)."""
    P = inspect.Parameter
    # The tensors in the struct's order; a required one after an optional one (QUANTIZED_LINEAR_ADD's b
    # after a_zero_point) and everything after it keyword-only.
    kind = P.POSITIONAL_OR_KEYWORD
    params = []
    for k, f in enumerate(row.tensors):
        if f not in row.optional and any(g in row.optional for g in row.tensors[:k]):
            kind = P.KEYWORD_ONLY
        params.append(P(argument_name(f), kind, **({"default": None} if f in row.optional else {})))
    if row.cast:
        params.append(P("dtype", kind))
    params += [P(a.name, kind, default=None if a.kind == "value" else a.default) for a in row.attributes]
    if row.logical:
        params.append(P("output_data_type", P.KEYWORD_ONLY, default="UINT8"))
    if row.out_type is not None:
        params.append(P("output_data_type", P.KEYWORD_ONLY, default=None))
    if row.scale_bias:
        params.append(P("scale_bias", P.KEYWORD_ONLY, default=None))
    if row.fused_activation:
        params.append(P("fused_activation", P.KEYWORD_ONLY, default=None))
    if with_device:
        params.append(P("device", P.KEYWORD_ONLY, default=None))
    return inspect.Signature(params)
