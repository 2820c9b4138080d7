"""DirectML's element-wise and activation operators (DML_OPERATOR_ELEMENT_WISE_* and
DML_OPERATOR_ACTIVATION_*), as rows of one table (`TABLE`): a row is everything its page
says that tells it apart (names, arity, attributes, the support table, the numpy
reference, the WGSL formula, the precision); `spec(row)` builds each row's OpSpec, and the
element-wise kernel family (kernels/elementwise.py) runs them all.

Shared semantics, as implemented (and tested against the references):

- Descriptions are strict as DirectML's: every tensor of one DimensionCount and one set of
  sizes, one data type (the logical operators' outputs UINT8); a broadcast is a stride-0
  stride in the description. The functional forms broadcast as numpy does, by building
  such stride-0 descriptions (no copy).
- FLOAT32 and FLOAT16 compute in float32 (a float16 result is rounded once, to nearest
  even, and beyond 65504 is +-inf), FLOAT64 in float64 where the adapter has shader-f64.
  The float attributes (DirectML's FLOAT: alpha, min, scale, ...) are float32 values: a
  Python float is rounded to float32, one beyond float32's range is an
  InvalidArgumentError. NaN and infinities in them are IEEE arithmetic's to propagate.
- DML_SCALE_BIAS (`scale_bias`, `ScaleBias(scale, bias)` or a pair) applies x * scale +
  bias to the input before the function (float tensors only); a fused activation
  (`fused_activation`, `FusedActivation("relu")`, ADD1's) applies an activation to the
  result (FLOAT32 and FLOAT16 outputs only, as the ADD1 page says). Both are parts of the
  same kernel: the formula is one WGSL expression.
- Integers compute in 32 bits (64-bit ones exactly: native or as u32 pairs) and keep the
  low bits of the result: two's-complement wrap (INT8 127 + 1 is -128).
- MAX, MIN, CLIP, CLIP1, THRESHOLD, RELU, HARD_SIGMOID and CELU use IEEE 754-2008
  maxNum/minNum, as HLSL's max and min do on DirectML's hardware: where one operand is NaN
  the other is the result (RELU(NaN) = 0, CLIP0(NaN) = min, CLIP1(NaN) = max); of two equal
  operands (0.0 and -0.0) the second.
- Precision (docs/operators/precision.md): each float row states its error bound as the
  WGSL specification's accuracy table gives it for the built-in functions its formula
  uses (division 2.5 ULP, exp 3 + 2|x| ULP, log 3 ULP or 2^-21 absolute in [0.5, 2], sqrt
  as 1 / inverseSqrt, sin/cos 2^-11 absolute in [-pi, pi]), in ULPs of float32 at the
  exact result, plus: float16 results 1 ULP of float16 (their rounding), and the
  subnormals WGSL lets an adapter flush to zero (inputs and results below 2^-126). The
  row's `tolerance` is exactly that, per element, against the float64 reference.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.elementwise import (
    Attribute,
    ElementWisePlanner,
    FusedProblem,
    Problem,
    Step,
    input_name,
    value_kind,
)
from ..tensor_desc import TensorDesc, check_same_rank, check_tensor_desc
from ..types import (
    F16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    DataType,
    FeatureLevel,
    IsInfinityMode,
    RoundingMode,
)
from .spec import Call, Cli, CliArg, Example, OpSpec, desc_class, support_table

FL = FeatureLevel
T8 = frozenset({F32, F16, I32, I16, I8, U32, U16, U8})
FLOATS = frozenset({F32, F16})
_F32_MAX = float(np.finfo(np.float32).max)


# ============================================================================ DML_SCALE_BIAS, fused activations
@dataclass(frozen=True)
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
    if math.isfinite(value) and abs(value) > _F32_MAX * (1 + 2**-25):
        raise InvalidArgumentError(f"{field} = {value!r} is beyond FLOAT's (float32's) range, +-{_F32_MAX:.7g}")
    return float(np.float32(value)) if math.isfinite(value) else value


class FusedActivation:
    """An activation fused into an operator's result (DML_OPERATOR_DESC's FusedActivation,
    ADD1's): `FusedActivation("relu")`, `FusedActivation("leaky_relu", alpha=0.1)`; the
    name is an activation's (its functional form's name without "activation_"), the
    keywords its attributes (the others take their defaults)."""

    __slots__ = ("name", "attributes")

    def __init__(self, name, **attributes):
        self._build(name, attributes, "FusedActivation")

    def _build(self, name, attributes: dict, where: str) -> None:
        row = FUSABLE.get(name.lower() if isinstance(name, str) else None)
        if row is None:
            raise InvalidArgumentError(
                f"{where}: {name!r} is not an activation that fuses (one of {', '.join(FUSABLE)})")
        known = {a.name: a for a in row.attributes}
        for key in attributes:
            if key not in known:
                raise InvalidArgumentError(f"{where}: {name} has no attribute {key!r} "
                                           f"(its attributes: {', '.join(known) or 'none'})")
        values = {a.name: a.check(attributes.get(a.name, a.default), f"{where}.{a.name}", row.op)
                  for a in row.attributes}
        object.__setattr__(self, "name", _fused_name(row))
        object.__setattr__(self, "attributes", tuple(values.items()))

    def __setattr__(self, key, value):
        raise AttributeError("FusedActivation is immutable")

    @property
    def row(self) -> Row:
        return FUSABLE[self.name]

    @classmethod
    def coerce(cls, value, where: str = "fused_activation") -> FusedActivation | None:
        if value is None or isinstance(value, FusedActivation):
            return value
        if isinstance(value, str):
            made = cls.__new__(cls)
            made._build(value, {}, where)
            return made
        raise InvalidArgumentError(f"{where}: expected a FusedActivation, an activation's name or None, got {value!r}")

    def __eq__(self, other):
        return isinstance(other, FusedActivation) and (self.name, self.attributes) == (other.name, other.attributes)

    def __hash__(self):
        return hash((self.name, self.attributes))

    def __repr__(self):
        args = "".join(f", {k}={v!r}" for k, v in self.attributes)
        return f"FusedActivation({self.name!r}{args})"


def _fused_name(row: Row) -> str:
    return row.functional.removeprefix("activation_")


# ============================================================================ the table
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
    #: Inputs that hold one element (QUANTIZED_LINEAR_ADD's scales and zero points: "the
    #: expected number of elements is 1"): each axis of size 1, or of the output's size with
    #: stride 0 (the kernel reads them broadcast by stride 0).
    single: tuple[str, ...] = ()
    #: The formula as steps of one kernel, (desc, inputs, output) -> FusedProblem, instead of
    #: `wgsl` (QUANTIZED_LINEAR_ADD's sum, then its quantization): the family runs them as
    #: several kernels where the adapter binds too few tensors for one.
    steps: Callable | None = None
    #: The precision of an integer result where it is not bit-exact: tolerance(expected,
    #: {field: logical input or None}, arguments), one per element (QUANTIZED_LINEAR_ADD's).
    tolerance: Callable | None = None

    @property
    def op(self) -> str:
        """DirectML's name in CamelCase ("ElementWiseAdd1", "ActivationRelu")."""
        return "".join(w.capitalize() for w in self.dml.split("_"))

    @property
    def family(self) -> str:
        return "Activation" if self.dml.startswith("ACTIVATION_") else "ElementWise"

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


def _wrap(fn):
    """An integer function computed in uint64 (wrapping modulo 2^64, two's complement),
    its result truncated to the inputs' type."""
    def wrapped(*xs, **kw):
        dtype = xs[0].dtype
        with np.errstate(over="ignore"):
            out = fn(*(x.astype(np.uint64) for x in xs), **kw)
        return out.astype(dtype)
    return wrapped


def _max_num(a, b):
    return np.where((a > b) | np.isnan(b), a, b)


def _min_num(a, b):
    return np.where((a < b) | np.isnan(b), a, b)


def _integer_or_float(float_fn, int_fn):
    def fn(*xs, **kw):
        return (float_fn if xs[0].dtype.kind == "f" else int_fn)(*xs, **kw)
    return fn


_ALL_INTS = frozenset({I64, I32, I16, I8, U64, U32, U16, U8})
_P = "sdk-api-src/content/directml/ns-directml-dml_"


def _exp_ulps(x, **_):
    return 3 + 2 * np.abs(x)


def _tanh_ulps(x, **_):
    return 8.5 + 4 * np.minimum(np.abs(x), 10.0)


_TANH_PRECISION = ("8.5 + 4|x| ULP and 2^-21 absolute (WGSL's tanh is inherited from sinh(x) / cosh(x), each from "
                   "exp); +-1 from |x| >= 10")


_TANH_WGSL = "select(select(tanh(a), sign(a), abs(a) >= F(10.0)), a, is_nan(f32(a)))"
_INTS_8_32 = frozenset({I32, I16, I8, U32, U16, U8})
_SINTS = frozenset({I64, I32, I16, I8})
_PI = math.pi


def _int_divide(a, b):
    """Integer a / b truncated toward zero, a where b is 0 (WGSL's rule; the page says
    nothing), wrapped in the type (INT_MIN / -1 is INT_MIN)."""
    def one(x, y):
        if y == 0:
            return x % 2**64
        q = abs(x) // abs(y)
        return (q if (x < 0) == (y < 0) else -q) % 2**64
    out = np.frompyfunc(one, 2, 1)(a.astype(object), b.astype(object))
    return np.asarray(out.astype(np.uint64)).astype(a.dtype)


def _int_mean(a, b):
    return ((a.astype(np.int64) + b.astype(np.int64)) >> 1).astype(a.dtype)


def _clip(x, min, max):
    if x.dtype.kind == "f":
        return _min_num(np.full_like(x, max), _max_num(np.full_like(x, min), x))
    lo, hi = integer_bounds(min, max, x.dtype)
    return np.minimum(hi, np.maximum(lo, x)).astype(x.dtype)


def _compare(fn):
    def compare(a, b):
        return fn(a, b).astype(np.uint8)
    return compare


def _erf(x):
    return np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64)


def _sin_cos_error(x, **_):
    return np.where(np.abs(x) <= _PI, 2.0**-11, 2.0)


def _product32(alpha, x):
    """alpha * x as a FLOAT32 kernel rounds it before adding beta (LINEAR, HARD_SIGMOID): exact
    but for float32's range (+-inf beyond: inf + -inf is then NaN, as in the kernel)."""
    with np.errstate(all="ignore"):
        p = alpha * x
        return np.where(np.abs(p) > _F32_MAX * (1 + 2.0**-25), np.copysign(np.inf, p), p)


def _elu(x, alpha):
    return np.where(x >= 0, x, alpha * np.expm1(x))


def _softplus(x, steepness):
    return np.logaddexp(0.0, steepness * x) / steepness


_LOGICAL_TYPES = (
    (FL.FL_4_1, (1, 8), T8 | {I64, U64}, T8 | {I64, U64}, {U32, U8}),
    (FL.FL_3_0, (1, 8), T8, T8, {U32, U8}),
    (FL.FL_2_1, {4}, T8, T8, {U32, U8}),
    (FL.FL_2_0, {4}, FLOATS, FLOATS, {U32, U8}),
    (FL.FL_1_0, {4}, FLOATS, FLOATS, {U32}),
)
# ---------------------------------------------------------------------------- integer, bit and quantize rows (ew-int)
_T11 = T8 | {F64, I64, U64}
_BIT_TYPES = ((FL.FL_4_1, (1, 8), _T11), (FL.FL_3_0, (1, 8), {U32, U16, U8}))
_SHIFT_TYPES = (
    (FL.FL_4_1, (1, 8), {U64, U32, U16, U8}),
    (FL.FL_3_0, (1, 8), {U32, U16, U8}),
    (FL.FL_2_1, {4}, {U32, U16, U8}),
)
_MODULUS_TYPES = (
    (FL.FL_6_0, (1, 8), FLOATS | _ALL_INTS),
    (FL.FL_3_0, (1, 8), T8),
    (FL.FL_2_1, {4}, T8),
)
_LOGICAL_BOOL_TYPES = (
    (FL.FL_3_0, (1, 8), {U32, U8}),
    (FL.FL_2_0, {4}, {U32, U8}),
    (FL.FL_1_0, {4}, {U32}),
)


def _shift(left: bool):
    """a << b or a >> b (logical) in the unsigned type; 0 where b is at least the width."""
    def shift(a, b):
        width = a.dtype.itemsize * 8
        count = np.minimum(b, width - 1).astype(a.dtype)
        moved = np.left_shift(a, count) if left else np.right_shift(a, count)
        return np.where(b < width, moved, 0).astype(a.dtype)
    return shift


def _int_remainder(floor: bool):
    """Integer a mod b: truncated (the dividend's sign) or floored (the divisor's); a where
    b is 0 (a - b * q with DIVIDE's a / 0 = a); exact, wrapped in the type."""
    def one(x, y):
        if y == 0:
            return x % 2**64
        r = abs(x) % abs(y) * (1 if x >= 0 else -1)
        if floor and r != 0 and (r < 0) != (y < 0):
            r += y
        return r % 2**64
    def remainder(a, b):
        out = np.frompyfunc(one, 2, 1)(a.astype(object), b.astype(object))
        return np.asarray(out.astype(np.uint64)).astype(a.dtype)
    return remainder


def _float_mod_floor(a, b):
    """Python's % on floats: fmod, plus b where the signs differ; a zero takes b's sign."""
    r = np.fmod(a, b)
    return np.where(r == 0, np.copysign(0.0, b), np.where((r < 0) != (b < 0), r + b, r))


def _grad_bounds(low: float, high: float, dtype) -> tuple[int, float, int, float]:
    """CLIP_GRAD's x <= min and x >= max on an integer tensor, as integer bounds: (lo, on,
    hi, on): x <= floor(min) where on, x >= ceil(max) where on (a NaN bound, or one beyond
    the type's range on the far side, holds nowhere)."""
    info = np.iinfo(dtype)
    lo_on = hi_on = 1.0
    if math.isnan(low) or low < int(info.min):
        lo, lo_on = int(info.min), 0.0
    else:
        lo = int(info.max) if low >= int(info.max) else math.floor(low)
    if math.isnan(high) or high > int(info.max):
        hi, hi_on = int(info.max), 0.0
    else:
        hi = int(info.min) if high <= int(info.min) else math.ceil(high)
    return lo, lo_on, hi, hi_on


def _clip_grad(x, gradient, min, max):
    if x.dtype.kind == "f":
        return np.where((x <= min) | (x >= max), 0.0, gradient)
    lo, lo_on, hi, hi_on = _grad_bounds(min, max, x.dtype)
    zero = ((lo_on != 0) & (x <= lo)) | ((hi_on != 0) & (x >= hi))
    return np.where(zero, 0, gradient).astype(x.dtype)


def _clip_grad1(x, gradient, min=None, max=None):
    """CLIP_GRAD1: min and max in x's own type (None: the type's lowest and highest value)."""
    if x.dtype.kind == "f":
        lo = -np.inf if min is None else min
        hi = np.inf if max is None else max
        return np.where((x <= lo) | (x >= hi), 0.0, gradient)
    info = np.iinfo(x.dtype)
    lo = np.array(info.min if min is None else min, x.dtype)
    hi = np.array(info.max if max is None else max, x.dtype)
    return np.where((x <= lo) | (x >= hi), np.zeros_like(gradient), gradient).astype(x.dtype)


def _popcount(x):
    return np.bitwise_count(x).astype(np.uint8)


def _zero_point_check(scale_rule: bool):
    """(DE)QUANTIZE_LINEAR's rules beyond the table: the zero point may be left out from
    FL_6_2 on; QUANTIZE_LINEAR's scale is FLOAT32 for an INT32 input, else the input's type."""
    def check(op, named, level):
        if "zero_point_tensor" not in named and level < FL.FL_6_2:
            raise InvalidArgumentError(f"{op}: zero_point_tensor is required at {FeatureLevel(level).name} (it is "
                                       f"optional from FL_6_2 on)")
        if scale_rule:
            x, scale = named["input_tensor"].data_type, named["scale_tensor"].data_type
            want = F32 if x == I32 else x
            if scale != want and x in (F32, F16, I32):
                raise InvalidArgumentError(f"{op}: scale_tensor.data_type {scale.name} must be {want.name} for an "
                                           f"input_tensor of {x.name}")
    return check


def _quantize(x, scale, zero_point=None, output_data_type=None):
    """clamp(round(x / scale) + zero_point, the output type's range): x / scale exact (a
    float64 quotient of float32 or int32 values decides a tie exactly), rounded half to
    even; NaN (0 / 0, inf / inf) rounds to 0, +-inf (x / 0) saturates."""
    out = np.dtype(_quantize_type(zero_point, output_data_type))
    with np.errstate(all="ignore"):
        q = x.astype(np.float64) / scale.astype(np.float64)
        q = np.clip(np.rint(np.nan_to_num(q, nan=0.0, posinf=4096.0, neginf=-4096.0)), -4096, 4096).astype(np.int64)
    z = 0 if zero_point is None else zero_point.astype(np.int64)
    info = np.iinfo(out)
    return np.clip(q + z, int(info.min), int(info.max)).astype(out)


def _quantize_type(zero_point, output_data_type):
    if zero_point is not None:
        return DataType.from_numpy(np.asarray(zero_point).dtype).numpy
    return DataType.parse(output_data_type or "UINT8", "output_data_type").numpy


def _quantize_out_type(named, attributes):
    given = attributes.pop("output_data_type", None)
    if given is not None or "zero_point_tensor" not in named:
        return DataType.parse(given or "UINT8", "quantize_linear: output_data_type")
    return named["zero_point_tensor"].data_type


def _quantize_wgsl(desc) -> str:
    x = desc.input_tensor.data_type
    q = f"quantize_{'i32' if x == I32 else 'f32'}(a, b)"
    z = "0i" if desc.zero_point_tensor is None else (
        "c" if desc.zero_point_tensor.data_type.is_signed else "i32(c)")
    if desc.output_tensor.data_type.is_signed:
        return f"clamp({q} + {z}, -128i, 127i)"
    return f"u32(clamp({q} + {z}, 0i, 255i))"


def _dequantize(x, scale, zero_point=None, **_):
    """(x - zero_point) * scale, the difference exact."""
    z = 0 if zero_point is None else zero_point.astype(np.float64 if x.dtype.kind == "f" else np.int64)
    return (x.astype(np.float64 if x.dtype.kind == "f" else np.int64) - z).astype(np.float64) * scale.astype(np.float64)


def _dequantize_wgsl(desc) -> str:
    signed = desc.input_tensor.data_type.is_signed
    z = "c" if desc.zero_point_tensor is not None else ("0i" if signed else "0u")
    return f"dq_diff_{'s' if signed else 'u'}(a, {z}) * b"


def _quantized_add_out_type(named, attributes):
    """QUANTIZED_LINEAR_ADD's output type: `output_data_type` where given, else the output
    zero point's, else a's."""
    given = attributes.pop("output_data_type", None)
    if given is not None:
        return DataType.parse(given, "quantized_linear_add: output_data_type")
    return named.get("output_zero_point_tensor", named["a_tensor"]).data_type


def _flushed(x: np.ndarray, flush: bool) -> np.ndarray:
    """float32 `x` with its subnormals flushed to zero (sign kept) where `flush`."""
    return np.where(np.abs(x) < np.float32(2.0**-126), np.copysign(np.float32(0.0), x), x).astype(np.float32) \
        if flush else x


def _quantized_add_sum(a, a_scale, a_zero_point, b, b_scale, b_zero_point, contract: int = 0, flush: bool = False):
    """(a - a_zero_point) a_scale + (b - b_zero_point) b_scale in float32: each product and
    the sum rounded to float32, or (`contract` 1 or 2) a's or b's product and the sum
    rounded once (a fused multiply-add); with `flush`, subnormal scales, products and sum 0."""
    with np.errstate(all="ignore"):
        terms = []
        for x, scale, zero in ((a, a_scale, a_zero_point), (b, b_scale, b_zero_point)):
            d = x.astype(np.int32) - (0 if zero is None else zero.astype(np.int32))  # exact in float32 too
            terms.append((d.astype(np.float64), _flushed(scale.astype(np.float32), flush).astype(np.float64)))
        (da, sa), (db, sb) = terms
        av = _flushed((da * sa).astype(np.float32), flush)  # da sa exact in float64 (9 x 24 bits)
        bv = _flushed((db * sb).astype(np.float32), flush)
        if contract == 1:
            total = (da * sa + bv.astype(np.float64)).astype(np.float32)
        elif contract == 2:
            total = (av.astype(np.float64) + db * sb).astype(np.float32)
        else:
            total = (av + bv).astype(np.float32)
        return _flushed(total, flush)


def _quantized_add(a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point,
                   output_data_type=None):
    """DML_ELEMENT_WISE_QUANTIZED_LINEAR_ADD: a and b dequantized and added in float32, the
    sum quantized as QUANTIZE_LINEAR does (round half to even, saturated)."""
    total = _quantized_add_sum(a, a_scale, a_zero_point, b, b_scale, b_zero_point)
    return _quantize(total, output_scale, output_zero_point, output_data_type or a.dtype)


def _quantized_add_tolerance(expected, named, arguments):
    """Exact against the float32 computation; where a compiler contracts a product and the
    sum into one fused multiply-add, or the adapter flushes subnormals (WGSL allows both), the
    result of that computation: per element, the largest difference those make."""
    args = [named[f] for f in ("a_tensor", "a_scale_tensor", "a_zero_point_tensor", "b_tensor", "b_scale_tensor",
                               "b_zero_point_tensor")]
    args = [None if x is None else np.asarray(x) for x in args]
    out_type = arguments.get("output_data_type") or expected.dtype
    quantized = [_quantize(_quantized_add_sum(*args, contract=c, flush=f), named["output_scale_tensor"],
                           named["output_zero_point_tensor"], out_type).astype(np.int64)
                 for c in (0, 1, 2) for f in (False, True)]
    return np.max([np.abs(q - quantized[0]) for q in quantized], axis=0).astype(np.float64)


def _quantized_add_problem(desc, inputs: tuple[TensorDesc, ...], output: TensorDesc) -> FusedProblem:
    """The kernel's two steps: the sum (a and b dequantized and added, a float32 value) over
    the inputs of a and b, then its quantization over the output's scale and zero point (an
    adapter of few storage bindings runs them as two kernels: kernels/elementwise.py)."""
    fields = [f for f in desc.ROW.tensors if getattr(desc, f) is not None]
    index = {f: k for k, f in enumerate(fields)}
    first = [f for f in fields if not f.startswith("output_")]
    name = {f: input_name(k) for k, f in enumerate(first)}

    def value(x: str) -> str:
        signed = getattr(desc, f"{x}_tensor").data_type.is_signed
        zero = name.get(f"{x}_zero_point_tensor", "0i" if signed else "0u")
        return f"dq_diff_{'s' if signed else 'u'}({name[f'{x}_tensor']}, {zero}) * {name[f'{x}_scale_tensor']}"
    kind = {f: value_kind(getattr(desc, f).data_type) for f in fields}
    total = TensorDesc(F32, output.sizes)
    add = Problem(desc.ROW.op, tuple(inputs[index[f]] for f in first), total, tuple(kind[f] for f in first), "float",
                  f"{value('a')} + {value('b')}")
    z = "c" if desc.output_zero_point_tensor is not None else "0i"
    if desc.output_zero_point_tensor is not None and not desc.output_zero_point_tensor.data_type.is_signed:
        z = "i32(c)"
    q = f"quantize_f32(a, b) + {z}"
    second = [f for f in fields if f.startswith("output_")]
    out_kind = value_kind(output.data_type)
    quantize = Problem(desc.ROW.op, (total,) + tuple(inputs[index[f]] for f in second), output,
                       ("float",) + tuple(kind[f] for f in second), out_kind,
                       f"clamp({q}, -128i, 127i)" if out_kind == "sint" else f"u32(clamp({q}, 0i, 255i))")
    return FusedProblem(desc.ROW.op, inputs, output, (
        Step(add, tuple(("input", index[f]) for f in first)),
        Step(quantize, (("step", 0),) + tuple(("input", index[f]) for f in second))))


def _i32_literal(v: int) -> str:
    return f"bitcast<i32>({v & 0xFFFFFFFF}u)"


def _cast_wgsl(desc) -> str:
    """DML_OPERATOR_CAST's formula from the input's type to the output's (FLOAT64 as bits)."""
    src, dst = desc.input_tensor.data_type, desc.output_tensor.data_type
    if src == dst:
        return "a"
    lo = hi = 0
    if not dst.is_float:
        info = np.iinfo(dst.numpy)
        lo, hi = int(info.min), int(info.max)
    if src == F64:
        w = "w64_words(a)"
        if dst.is_float:
            return f"f64_round({w}, 23u, -126i, 127i)" if dst == F32 else f"f64_round({w}, 10u, -14i, 15i)"
        if dst.size == 8:
            return f"w64_from_words(f64_to_{'i' if dst.is_signed else 'u'}64_words({w}))"
        if dst.is_signed:
            return f"f64_to_i32_sat({w}, {_i32_literal(lo)}, {_i32_literal(hi)})"
        return f"f64_to_u32_sat({w}, {hi}u)"
    if src.is_float:  # FLOAT32, FLOAT16: an f32
        if dst == F64:
            return "w64_from_words(f32_to_f64_bits(a))"
        if dst.is_float:
            return "a"
        if dst.size == 8:
            return f"f32_to_w64_{'s' if dst.is_signed else 'u'}(a)"
        if dst.is_signed:
            return f"f32_to_i32_sat(a, {_i32_literal(lo)}, {_i32_literal(hi)})"
        return f"f32_to_u32_sat(a, {hi}u)"
    if src.size == 8:  # W64
        if dst == F64:
            if src.is_signed:
                return "w64_from_words(mag_to_f64_bits(w64_words(w64_abs_s(a)), w64_lt_s(a, w64_zero())))"
            return "w64_from_words(mag_to_f64_bits(w64_words(a), false))"
        if dst.is_float:
            return f"w64_to_f32_{'s' if src.is_signed else 'u'}(a)"
        if dst.size == 8:
            return "a"
        return "bitcast<i32>(w64_words(a).x)" if dst.is_signed else "w64_words(a).x"
    signed = src.is_signed  # an 8-32-bit integer: i32 or u32
    if dst == F64:
        return ("w64_from_words(mag_to_f64_bits(vec2<u32>(bitcast<u32>(select(a, -a, a < 0i)), 0u), a < 0i))" if signed
                else "w64_from_words(mag_to_f64_bits(vec2<u32>(a, 0u), false))")
    if dst.is_float:
        return "i32_to_f32(a)" if signed else "u32_to_f32(a)"
    if dst.size == 8:
        return "w64_sext(a)" if signed else "w64_from_words(vec2<u32>(a, 0u))"
    if signed == dst.is_signed:
        return "a"
    return "bitcast<u32>(a)" if signed else "bitcast<i32>(a)"


def _cast_dtype(value, where: str) -> DataType:
    """CAST's `dtype`: a DataType, its name or a numpy dtype (not None, which numpy reads as float64)."""
    if value is None:
        raise InvalidArgumentError(f"{where}: dtype: None is not a data type (a DataType, its name or a numpy dtype)")
    return DataType.parse(value, f"{where}: dtype")


def _cast(x, output_data_type):
    """DML_OPERATOR_CAST: floats to floats rounded to nearest even (beyond the range +-inf);
    floats to integers truncated toward zero and saturated to the type's range, NaN 0 (as
    D3D's ftoi/ftou); integers to floats rounded to nearest even; integers to integers
    their low bits (two's-complement wrap: sign- or zero-extended first)."""
    dst = np.dtype(DataType.parse(output_data_type, "dtype").numpy)
    if x.dtype == dst:
        return np.array(x)
    if x.dtype.kind == "f" and dst.kind != "f":
        info = np.iinfo(dst)

        def one(v):
            if math.isnan(v):
                return 0
            if math.isinf(v):
                return int(info.max) if v > 0 else int(info.min)
            return max(int(info.min), min(int(info.max), int(v)))
        out = np.frompyfunc(one, 1, 1)(x.astype(np.float64).astype(object))
        return np.asarray(out, dtype=object).astype(dst).reshape(x.shape)
    with np.errstate(all="ignore"):
        return x.astype(dst)


_UNARY_FLOAT = ((FL.FL_3_0, (1, 8), FLOATS), (FL.FL_1_0, {4}, FLOATS))
_ACTIVATION_FLOAT = ((FL.FL_3_0, (1, 8), FLOATS), (FL.FL_2_0, (4, 5), FLOATS), (FL.FL_1_0, {4}, FLOATS))
_MINMAX = (
    (FL.FL_5_0, (1, 8), FLOATS | _ALL_INTS),
    (FL.FL_3_0, (1, 8), FLOATS | _INTS_8_32),
    (FL.FL_2_1, {4}, FLOATS | _INTS_8_32),
    (FL.FL_1_0, {4}, FLOATS),
)


# ---------------------------------------------------------------------------- float math rows (ew-math)
def _f(x):
    return np.asarray(x, np.float64)


def _tan_error(x, **_):
    """WGSL's tan is inherited from sin(x) / cos(x), each 2^-11 absolute in [-pi, pi]: the
    quotient's error where |cos x| exceeds that; beyond [-pi, pi] or next to a pole, any value."""
    c = np.abs(np.cos(x))
    t = np.abs(np.tan(x))
    near = np.where(c > 2.0**-11, 2.0**-11 * (1 + t) / np.maximum(c - 2.0**-11, 2.0**-60), np.inf)
    return np.where(np.abs(x) <= _PI, near, np.inf)


def _atan2(y, x):
    return np.arctan2(y, x)


def _erf_error(x, **_):
    return np.where(np.abs(x) >= 0.5, 1.5e-7 + 2.0**-21, 0.0)


def _round(x, rounding_mode=RoundingMode.HALVES_TO_NEAREST_EVEN):
    mode = RoundingMode.coerce(rounding_mode)
    if mode == RoundingMode.HALVES_TO_NEAREST_EVEN:
        return np.rint(x)
    t = np.trunc(x)
    if mode == RoundingMode.TOWARD_ZERO:
        return t
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)  # halves away from zero


def _sign(x):
    if x.dtype.kind == "f":
        return np.where(x > 0, 1.0, np.where(x < 0, -1.0, 0.0))  # NaN: 0 (the page's "otherwise")
    if x.dtype.kind == "u":
        return (x > 0).astype(x.dtype)
    return np.sign(x.astype(np.int64)).astype(x.dtype)


def _is_infinity(x, infinity_mode=IsInfinityMode.EITHER):
    mode = IsInfinityMode.coerce(infinity_mode)
    hit = {IsInfinityMode.EITHER: np.isinf(x), IsInfinityMode.POSITIVE: x == np.inf,
           IsInfinityMode.NEGATIVE: x == -np.inf}[mode]
    return hit.astype(np.uint8)


def _threshold(x, min):
    if x.dtype.kind == "f":
        return _max_num(x, np.full_like(x, min))
    lo, _ = integer_bounds(min, math.inf, x.dtype)
    return np.maximum(x, np.array(lo, x.dtype))


def _threshold_ints(values, dtype):
    lo, _ = integer_bounds(values["min"], math.inf, dtype)
    return (Attribute("min", "value", lo),)


def _saturated(value: float, dtype) -> int:
    """A FLOAT as an integer of `dtype`: truncated toward zero, saturated to the type's range, NaN 0."""
    info = np.iinfo(dtype)
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return int(info.max) if value > 0 else int(info.min)
    return max(int(info.min), min(int(info.max), int(value)))


def _shrink(x, bias, threshold):
    if x.dtype.kind == "f":
        return np.where(x > threshold, x - bias, np.where(x < -threshold, x + bias, 0.0))
    b = _saturated(bias, x.dtype)
    wide = x.astype(np.int64)
    with np.errstate(invalid="ignore"):
        out = np.where(wide > threshold, wide - b, np.where(wide < -np.float64(threshold), wide + b, 0))
    return out.astype(np.int64).astype(x.dtype)  # wraps in the type


def _shrink_ints(values, dtype):
    return (Attribute("bias", "value", _saturated(values["bias"], dtype)),
            Attribute("threshold", "f32", values["threshold"]))


def _hard_sigmoid(x, alpha, beta):
    return _max_num(np.zeros_like(x), _min_num(_product32(alpha, x) + beta, np.ones_like(x)))


def _hard_swish(x, alpha, beta):
    h = _hard_sigmoid(x, alpha, beta)
    return np.where(h == 0, 0.0, x * h)


def _swish(x, sigmoid_input_scale):
    d = 1 + np.exp(-sigmoid_input_scale * x)
    return np.where(np.isinf(d), 0.0, x / d)


def _parametric_softplus(x, alpha, beta):
    v = beta * x
    return np.where((alpha == 0) & np.isfinite(x) & np.isfinite(beta), 0.0, alpha * np.logaddexp(0.0, v))


def _swish_ulps(x, sigmoid_input_scale):
    v = np.abs(sigmoid_input_scale * x)
    with np.errstate(all="ignore"):
        far = np.where(sigmoid_input_scale * x < -80, 6 * np.abs(np.log(np.abs(x))) + 8, 0.0)
    return 6.5 + 3 * v + np.nan_to_num(far, nan=0.0, posinf=np.inf)


def _celu_ulps(x, alpha):
    with np.errstate(all="ignore"):
        u = x / alpha
        far = np.where(u > 80, 6 * np.abs(np.log(np.abs(alpha))) + 8, 0.0)
        return np.nan_to_num(7 + 4 * np.abs(u) + far, nan=0.0, posinf=np.inf)


def _celu(x, alpha):
    u = x / alpha
    m = np.where(np.abs(u) < 2.0**-12, x * (1 + 0.5 * u), alpha * np.expm1(u))  # x itself for an infinite alpha
    return _max_num(np.zeros_like(x), x) + _min_num(np.zeros_like(x), m)


def _clip1(x, min=None, max=None):
    if x.dtype.kind == "f":
        lo = -np.inf if min is None else min
        hi = np.inf if max is None else max
        return _max_num(np.full_like(x, lo), _min_num(x, np.full_like(x, hi)))
    info = np.iinfo(x.dtype)
    lo = info.min if min is None else min
    hi = info.max if max is None else max
    return np.maximum(np.array(lo, x.dtype), np.minimum(x, np.array(hi, x.dtype)))


def _prelu(x, slope):
    if x.dtype.kind == "f":
        return np.where(x >= 0, x, slope * x)
    return np.where(x >= 0, x, _wrap(np.multiply)(slope, x)).astype(x.dtype)


def _pow_real(x, e):
    """x^e in float64 as pow_signed computes it: IEEE pow's special values, the sign of a
    negative base with an integral exponent, NaN for a negative base with another."""
    with np.errstate(all="ignore"):
        r = np.power(np.abs(x), e)
        integral = np.floor(e) == e
        odd = integral & (np.abs(np.fmod(e, 2)) == 1)
        r = np.where(np.signbit(x) & odd, -r, r)
        r = np.where((x < 0) & np.isfinite(x) & ~integral & ~np.isnan(e), np.nan, r)
        return np.where((e == 0) | (x == 1), 1.0, r)


def _int_pow(x, e):
    """Integer x^e: e >= 0 exact modulo 2^bits (wrapping, as MULTIPLY); e < 0 the real
    result truncated toward zero (1, +-1 for x = -1, 0), 0^e the type's largest value."""
    info = np.iinfo(x.dtype)

    def one(a, k):
        if k >= 0:
            return pow(a, k, 2**64)
        if a == 1:
            return 1
        if a == -1:
            return -1 if k % 2 else 1
        return int(info.max) if a == 0 else 0
    out = np.frompyfunc(one, 2, 1)(x.astype(object), e.astype(object))
    return np.asarray([int(v) % 2**64 for v in np.ravel(out)], np.uint64).reshape(np.shape(out)).astype(x.dtype)


def _pow(x, e):
    if x.dtype.kind == "f":
        return _pow_real(x, _f(e))
    if e.dtype.kind == "f":  # a real result, truncated and saturated to the integer type
        info = np.iinfo(x.dtype)
        r = np.trunc(_pow_real(_as_float64(x), _f(e)))
        r = np.where(np.isnan(r), 0, np.clip(r, info.min, info.max))
        return r.astype(x.dtype)
    return _int_pow(x, e)


def _pow_ulps(x, e, **_):
    """WGSL's pow, inherited from exp2(e log2 |x|): exp2's 3 + 2|t| ULP (t = e log2|x|), and
    log2's error (3 ULP, or 2^-21 absolute for |x| in [0.5, 2]) times |e| with t's rounding,
    carried through exp2 (ln 2 per unit of t: 2^24 ln 2 ULP at most); e's rounding to float32."""
    with np.errstate(all="ignore"):
        m = np.abs(x)
        e = _f(e)
        lg = np.log2(m)
        t = e * lg
        d_log = np.where((m >= 0.5) & (m <= 2), 2.0**-21, 3 * np.spacing(np.abs(lg).astype(np.float32)))
        d_t = np.abs(e) * d_log + np.spacing(np.abs(t).astype(np.float32))
        ulps = 3 + 3 * np.abs(t) + math.log(2) * 2.0**24 * d_t
        return np.nan_to_num(ulps, nan=0.0, posinf=np.inf)


_POW_PRECISION = ("WGSL's pow (inherited from exp2(e log2|x|)): 3 + 3|t| ULP, t = e log2|x|, and log2's error (3 "
                  "ULP, or 2^-21 absolute for |x| in [0.5, 2]) times |e|, through exp2; the sign exact for integral "
                  "exponents")
_UNARY_2_0 = ((FL.FL_3_0, (1, 8), FLOATS), (FL.FL_2_0, {4}, FLOATS))
_SIGN_TYPES = (
    (FL.FL_4_1, (1, 8), FLOATS | _ALL_INTS),
    (FL.FL_3_0, (1, 8), T8),
    (FL.FL_2_1, {4}, T8),
    (FL.FL_2_0, {4}, FLOATS),
)


TABLE: tuple[Row, ...] = (
    Row("ELEMENT_WISE_IDENTITY", "identity", "identity", ("input_tensor",), (
        (FL.FL_4_1, (1, 8), T8 | {F64, I64, U64}),
        (FL.FL_3_0, (1, 8), T8),
        (FL.FL_2_1, (4, 5), T8),
        (FL.FL_1_0, (4, 5), FLOATS),
    ), lambda x: x, {"float": "a", "int": "a", "int64": "a"},
        "element_wise_identity_operator_desc.md",
        "x (a copy, or a layout change through strides)", scale_bias=True, copy=True),
    Row("ELEMENT_WISE_ADD", "add0", "add0", ("a_tensor", "b_tensor"), (
        (FL.FL_5_1, (1, 8), FLOATS | _ALL_INTS),
        (FL.FL_4_1, (1, 8), FLOATS | {I64, I32, U64, U32}),
        (FL.FL_3_0, (1, 8), FLOATS | {I32, U32}),
        (FL.FL_2_1, (4, 5), FLOATS | {I32, U32}),
        (FL.FL_1_0, (4, 5), FLOATS),
    ), _integer_or_float(np.add, _wrap(np.add)), {"float": "a + b", "int": "a + b", "int64": "w64_add(a, b)"},
        "element_wise_add_operator_desc.md", "a + b",
        ulps=0.5, precision="correctly rounded (0.5 ULP)"),
    Row("ELEMENT_WISE_ADD1", "add1", "add", ("a_tensor", "b_tensor"), (
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_2_0, (4, 5), FLOATS),
    ), np.add, {"float": "a + b"},
        "element_wise_add1_operator_desc.md",
        "a + b, then the fused activation", fused_activation=True, ulps=0.5, precision="correctly rounded (0.5 ULP)"),
    Row("ELEMENT_WISE_MULTIPLY", "multiply", "multiply", ("a_tensor", "b_tensor"), (
        (FL.FL_5_1, (1, 8), FLOATS | _ALL_INTS),
        (FL.FL_4_1, (1, 8), FLOATS | {I64, I32, U64, U32}),
        (FL.FL_3_0, (1, 8), FLOATS | {I32, U32}),
        (FL.FL_2_1, (4, 5), FLOATS | {I32, U32}),
        (FL.FL_1_0, (4, 5), FLOATS),
    ), _integer_or_float(np.multiply, _wrap(np.multiply)),
        {"float": "a * b", "int": "a * b", "int64": "w64_mul(a, b)"},
        "element_wise_multiply_operator_desc.md", "a * b",
        ulps=0.5, precision="correctly rounded (0.5 ULP)"),
    Row("ELEMENT_WISE_SQRT", "sqrt", "sqrt", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_1_0, {4}, FLOATS),
    ), np.sqrt, {"float": "sqrt(a)"},
        "element_wise_sqrt_operator_desc.md", "the square root of x",
        scale_bias=True, ulps=5.0, precision="5 ULP (WGSL: sqrt is inherited from 1 / inverseSqrt: 2 + 2.5 ULP)"),
    Row("ACTIVATION_RELU", "relu", "relu", ("input_tensor",), (
        (FL.FL_5_1, (1, 8), FLOATS | {I32, I16, I8}),
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_2_0, (4, 5), FLOATS),
        (FL.FL_1_0, {4}, FLOATS),
    ), _integer_or_float(lambda x: _max_num(x, np.zeros_like(x)), lambda x: np.maximum(x, 0).astype(x.dtype)),
        {"float": "max_num(a, F(0.0))", "int": "max(a, 0)"},
        "activation_relu_operator_desc.md",
        "max(0, x) (NaN gives 0, as HLSL's max)", fuses=True),
    Row("ELEMENT_WISE_ABS", "abs", "abs", ("input_tensor",), (
        (FL.FL_4_1, (1, 8), FLOATS | _SINTS),
        (FL.FL_3_0, (1, 8), FLOATS | {I32, I16, I8}),
        (FL.FL_2_1, {4}, FLOATS | {I32, I16, I8}),
        (FL.FL_1_0, {4}, FLOATS),
    ), _integer_or_float(np.abs, lambda x: np.abs(x.astype(np.int64)).astype(x.dtype)),
        {"float": "abs(a)", "sint": "abs(a)", "sint64": "w64_abs_s(a)"},
        "element_wise_abs_operator_desc.md",
        "|x| (integers wrap: |INT_MIN| is INT_MIN)", scale_bias=True),
    Row("ELEMENT_WISE_SUBTRACT", "subtract", "subtract", ("a_tensor", "b_tensor"), (
        (FL.FL_5_1, (1, 8), FLOATS | _ALL_INTS),
        (FL.FL_4_1, (1, 8), FLOATS | {I64, I32, U64, U32}),
        (FL.FL_3_0, (1, 8), FLOATS | {I32, U32}),
        (FL.FL_2_1, {4}, FLOATS | {I32, U32}),
        (FL.FL_1_0, {4}, FLOATS),
    ), _integer_or_float(np.subtract, _wrap(np.subtract)),
        {"float": "a - b", "int": "a - b", "int64": "w64_sub(a, b)"},
        "element_wise_subtract_operator_desc.md", "a - b",
        ulps=0.5, precision="correctly rounded (0.5 ULP)"),
    Row("ELEMENT_WISE_DIVIDE", "divide", "divide", ("a_tensor", "b_tensor"), (
        (FL.FL_6_0, (1, 8), FLOATS | _ALL_INTS),
        (FL.FL_5_1, (1, 8), FLOATS | _INTS_8_32),
        (FL.FL_3_0, (1, 8), FLOATS | {I32, U32}),
        (FL.FL_2_1, {4}, FLOATS | {I32, U32}),
        (FL.FL_1_0, {4}, FLOATS),
    ), _integer_or_float(np.divide, _int_divide),
        {"float": "a / b", "int": "select(a / b, a, b == 0)", "sint64": "w64_div_s(a, b)",
         "uint64": "w64_div_u(a, b)"},
        "element_wise_divide_operator_desc.md",
        "a / b (integers: truncated toward zero; a where b is 0, as WGSL divides)",
        ulps=2.5, precision="2.5 ULP (WGSL's division)"),
    Row("ELEMENT_WISE_MAX", "max", "max", ("a_tensor", "b_tensor"), _MINMAX,
        _integer_or_float(_max_num, np.maximum),
        {"float": "max_num(a, b)", "int": "max(a, b)", "sint64": "w64_max_s(a, b)", "uint64": "w64_max_u(a, b)"},
        "element_wise_max_operator_desc.md", "the larger of a and b (a NaN operand gives the other)"),
    Row("ELEMENT_WISE_MIN", "min", "min", ("a_tensor", "b_tensor"), _MINMAX,
        _integer_or_float(_min_num, np.minimum),
        {"float": "min_num(a, b)", "int": "min(a, b)", "sint64": "w64_min_s(a, b)", "uint64": "w64_min_u(a, b)"},
        "element_wise_min_operator_desc.md", "the smaller of a and b (a NaN operand gives the other)"),
    Row("ELEMENT_WISE_MEAN", "mean", "mean", ("a_tensor", "b_tensor"), (
        (FL.FL_3_0, (1, 8), FLOATS | {I32, U32}),
        (FL.FL_2_1, {4}, FLOATS | {I32, U32}),
        (FL.FL_1_0, {4}, FLOATS),
    ), _integer_or_float(lambda a, b: (a + b) / 2, _int_mean),
        {"float": "a * F(0.5) + b * F(0.5)", "int": "(a & b) + ((a ^ b) >> 1u)"},
        "element_wise_mean_operator_desc.md",
        "(a + b) / 2 (integers: rounded toward negative infinity, without overflow)",
        ulps=0.5, precision="correctly rounded (0.5 ULP; halves are exact)"),
    Row("ELEMENT_WISE_EXP", "exp", "exp", ("input_tensor",), _UNARY_FLOAT, np.exp, {"float": "exp(a)"},
        "element_wise_exp_operator_desc.md", "e^x", scale_bias=True, ulps=_exp_ulps,
        precision="3 + 2|x| ULP (WGSL's exp)"),
    Row("ELEMENT_WISE_LOG", "log", "log", ("input_tensor",), _UNARY_FLOAT, np.log, {"float": "log(a)"},
        "element_wise_log_operator_desc.md", "the natural logarithm of x", scale_bias=True, ulps=3.0,
        absolute=2.0**-21, precision="3 ULP, or 2^-21 absolute for x in [0.5, 2] (WGSL's log)"),
    Row("ELEMENT_WISE_RECIP", "recip", "recip", ("input_tensor",), _UNARY_FLOAT, lambda x: 1 / x,
        {"float": "F(1.0) / a"}, "element_wise_recip_operator_desc.md", "1 / x", scale_bias=True,
        ulps=2.5, precision="2.5 ULP (WGSL's division)"),
    Row("ELEMENT_WISE_NEGATE", "negate", "negate", ("input_tensor",), (
        (FL.FL_5_0, (1, 8), FLOATS | _SINTS),
    ), _integer_or_float(np.negative, _wrap(np.negative)), {"float": "-a", "sint": "-a", "sint64": "w64_neg(a)"},
        "element_wise_negate_operator_desc.md", "-x (integers wrap: -INT_MIN is INT_MIN)"),
    Row("ELEMENT_WISE_SIN", "sin", "sin", ("input_tensor",), _UNARY_FLOAT, np.sin, {"float": "sin(reduced_angle(a))"},
        "element_wise_sin_operator_desc.md", "sin(x)", scale_bias=True, absolute=_sin_cos_error,
        precision="2^-11 absolute for x in [-pi, pi] (WGSL's sin); beyond, WGSL promises nothing: any value in "
                  "[-1, 1]"),
    Row("ELEMENT_WISE_COS", "cos", "cos", ("input_tensor",), _UNARY_FLOAT, np.cos, {"float": "cos(reduced_angle(a))"},
        "element_wise_cos_operator_desc.md", "cos(x)", scale_bias=True, absolute=_sin_cos_error,
        precision="2^-11 absolute for x in [-pi, pi] (WGSL's cos); beyond, WGSL promises nothing: any value in "
                  "[-1, 1]"),
    Row("ELEMENT_WISE_CLIP", "clip0", "clip0", ("input_tensor",), _MINMAX, _clip,
        {"float": "min_num(F(u_max), max_num(F(u_min), a))", "int": "min(u_max, max(u_min, a))",
         "sint64": "w64_min_s(u_max, w64_max_s(u_min, a))", "uint64": "w64_min_u(u_max, w64_max_u(u_min, a))"},
        "element_wise_clip_operator_desc.md",
        "min(max, max(min, x)) (NaN gives min; integer tensors: the integers within [min, max])",
        attributes=(Attr("min", -math.inf), Attr("max", math.inf)), scale_bias=True),
    Row("ELEMENT_WISE_LOGICAL_EQUALS", "logical_equals", "logical_equals", ("a_tensor", "b_tensor"), _LOGICAL_TYPES,
        _compare(np.equal), {"float": "select(0u, 1u, a == b)", "int": "select(0u, 1u, a == b)",
                             "int64": "select(0u, 1u, w64_eq(a, b))"},
        "element_wise_logical_equals_operator_desc.md", "1 where a == b, else 0", logical=True),
    Row("ELEMENT_WISE_LOGICAL_GREATER_THAN", "logical_greater_than", "logical_greater_than", ("a_tensor", "b_tensor"),
        _LOGICAL_TYPES, _compare(np.greater),
        {"float": "select(0u, 1u, a > b)", "int": "select(0u, 1u, a > b)", "sint64": "select(0u, 1u, w64_lt_s(b, a))",
         "uint64": "select(0u, 1u, w64_lt_u(b, a))"},
        "element_wise_logical_greater_than_operator_desc.md", "1 where a > b, else 0", logical=True),
    Row("ELEMENT_WISE_LOGICAL_LESS_THAN", "logical_less_than", "logical_less_than", ("a_tensor", "b_tensor"),
        _LOGICAL_TYPES, _compare(np.less),
        {"float": "select(0u, 1u, a < b)", "int": "select(0u, 1u, a < b)", "sint64": "select(0u, 1u, w64_lt_s(a, b))",
         "uint64": "select(0u, 1u, w64_lt_u(a, b))"},
        "element_wise_logical_less_than_operator_desc.md", "1 where a < b, else 0", logical=True),
    Row("ELEMENT_WISE_LOGICAL_AND", "logical_and", "logical_and", ("a_tensor", "b_tensor"), (
        (FL.FL_3_0, (1, 8), {U32, U8}),
        (FL.FL_2_0, {4}, {U32, U8}),
        (FL.FL_1_0, {4}, {U32}),
    ), lambda a, b: ((a != 0) & (b != 0)).astype(a.dtype), {"int": "select(0u, 1u, a != 0u && b != 0u)"},
        "element_wise_logical_and_operator_desc.md", "1 where a and b are both non-zero, else 0"),
    Row("ELEMENT_WISE_LOGICAL_NOT", "logical_not", "logical_not", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), {U32, U8}),
        (FL.FL_2_0, {4}, {U32, U8}),
        (FL.FL_1_0, {4}, {U32}),
    ), lambda x: (x == 0).astype(x.dtype), {"int": "select(0u, 1u, a == 0u)"},
        "element_wise_logical_not_operator_desc.md", "1 where x is 0, else 0"),
    Row("ELEMENT_WISE_LOGICAL_OR", "logical_or", "logical_or", ("a_tensor", "b_tensor"), _LOGICAL_BOOL_TYPES,
        lambda a, b: ((a != 0) | (b != 0)).astype(a.dtype), {"int": "select(0u, 1u, a != 0u || b != 0u)"},
        "element_wise_logical_or_operator_desc.md", "1 where a or b is non-zero, else 0"),
    Row("ELEMENT_WISE_LOGICAL_XOR", "logical_xor", "logical_xor", ("a_tensor", "b_tensor"), _LOGICAL_BOOL_TYPES,
        lambda a, b: ((a != 0) != (b != 0)).astype(a.dtype), {"int": "select(0u, 1u, (a != 0u) != (b != 0u))"},
        "element_wise_logical_xor_operator_desc.md", "1 where exactly one of a and b is non-zero, else 0"),
    Row("ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL", "logical_greater_than_or_equal", "logical_greater_than_or_equal",
        ("a_tensor", "b_tensor"), _LOGICAL_TYPES[:2], _compare(np.greater_equal),
        {"float": "select(0u, 1u, a >= b)", "int": "select(0u, 1u, a >= b)",
         "sint64": "select(0u, 1u, !w64_lt_s(a, b))", "uint64": "select(0u, 1u, !w64_lt_u(a, b))"},
        "element_wise_logical_greater_than_or_equal_operator_desc.md", "1 where a >= b, else 0 (0 where either is NaN)",
        logical=True),
    Row("ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL", "logical_less_than_or_equal", "logical_less_than_or_equal",
        ("a_tensor", "b_tensor"), _LOGICAL_TYPES[:2], _compare(np.less_equal),
        {"float": "select(0u, 1u, a <= b)", "int": "select(0u, 1u, a <= b)",
         "sint64": "select(0u, 1u, !w64_lt_s(b, a))", "uint64": "select(0u, 1u, !w64_lt_u(b, a))"},
        "element_wise_logical_less_than_or_equal_operator_desc.md", "1 where a <= b, else 0 (0 where either is NaN)",
        logical=True),
    Row("ELEMENT_WISE_BIT_AND", "bit_and", "bit_and", ("a_tensor", "b_tensor"), _BIT_TYPES, np.bitwise_and,
        {"int": "a & b", "int64": "a & b"}, "element_wise_bit_and_operator_desc.md",
        "the bits of a AND those of b (any type: its bits)", bits=True),
    Row("ELEMENT_WISE_BIT_OR", "bit_or", "bit_or", ("a_tensor", "b_tensor"), _BIT_TYPES, np.bitwise_or,
        {"int": "a | b", "int64": "a | b"}, "element_wise_bit_or_operator_desc.md",
        "the bits of a OR those of b (any type: its bits)", bits=True),
    Row("ELEMENT_WISE_BIT_XOR", "bit_xor", "bit_xor", ("a_tensor", "b_tensor"), _BIT_TYPES, np.bitwise_xor,
        {"int": "a ^ b", "int64": "a ^ b"}, "element_wise_bit_xor_operator_desc.md",
        "the bits of a XOR those of b (any type: its bits)", bits=True),
    Row("ELEMENT_WISE_BIT_NOT", "bit_not", "bit_not", ("input_tensor",), _BIT_TYPES, np.invert,
        {"int": "~a", "int64": "~a"}, "element_wise_bit_not_operator_desc.md",
        "the bits of x inverted (any type: its bits)", bits=True,
        examples=(("bit_not-1", (np.uint8([[0, 128], [42, 255]]),), {}, np.uint8([[255, 127], [213, 0]])),)),
    Row("ELEMENT_WISE_BIT_COUNT", "bit_count", "bit_count", ("input_tensor",), (
        (FL.FL_4_1, (1, 8), _T11, {U32, U8}),
        (FL.FL_3_0, (1, 8), {U32, U16, U8}, {U32, U8}),
    ), _popcount, {"int": "countOneBits(a)", "int64": "w64_popcount(a)"}, "element_wise_bit_count_operator_desc.md",
        "the number of bits set in x (any type: its bits)", bits=True, logical=True,
        examples=(("bit_count-1", (np.uint32([[0, 123], [456, 789]]),), {"output_data_type": "UINT32"},
                   np.uint32([[0, 6], [4, 5]])),)),
    Row("ELEMENT_WISE_BIT_SHIFT_LEFT", "bit_shift_left", "bit_shift_left", ("a_tensor", "b_tensor"), _SHIFT_TYPES,
        _shift(True), {"int": "select(0u, a << (b & 31u), b < 32u)", "int64": "w64_shl(a, b)"},
        "element_wise_bit_shift_left_operator_desc.md",
        "a shifted left by b bits, the bits past the width dropped (0 where b is at least the width)"),
    Row("ELEMENT_WISE_BIT_SHIFT_RIGHT", "bit_shift_right", "bit_shift_right", ("a_tensor", "b_tensor"), _SHIFT_TYPES,
        _shift(False), {"int": "select(0u, a >> (b & 31u), b < 32u)", "int64": "w64_shr(a, b)"},
        "element_wise_bit_shift_right_operator_desc.md",
        "a shifted right by b bits, zeros shifted in (0 where b is at least the width)"),
    Row("ELEMENT_WISE_MODULUS_FLOOR", "modulus_floor", "modulus_floor", ("a_tensor", "b_tensor"), _MODULUS_TYPES,
        _integer_or_float(_float_mod_floor, _int_remainder(True)),
        {"float": "float_mod(a, b, true)", "sint": "mod_floor_s(a, b)", "uint": "rem_u(a, b)",
         "sint64": "w64_mod_floor_s(a, b)", "uint64": "w64_rem_u(a, b)"},
        "element_wise_modulus_floor_operator_desc.md",
        "a - b floor(a / b), Python's % (the divisor's sign; floats: NaN where b is 0, integers: a where b is 0)",
        ulps=0.5, precision="exact where |a| >= |b|; a + b correctly rounded (0.5 ULP) where |a| < |b| and "
                            "the signs differ"),
    Row("ELEMENT_WISE_MODULUS_TRUNCATE", "modulus_truncate", "modulus_truncate", ("a_tensor", "b_tensor"),
        _MODULUS_TYPES, _integer_or_float(np.fmod, _int_remainder(False)),
        {"float": "float_mod(a, b, false)", "sint": "rem_s(a, b)", "uint": "rem_u(a, b)",
         "sint64": "w64_rem_s(a, b)", "uint64": "w64_rem_u(a, b)"},
        "element_wise_modulus_truncate_operator_desc.md",
        "a - b trunc(a / b), C's fmod and % (the dividend's sign; floats: NaN where b is 0, integers: a where b is 0)",
        precision="exact (C's fmod: the remainder is representable)"),
    Row("ELEMENT_WISE_IF", "if", "if_", ("condition_tensor", "a_tensor", "b_tensor"), (
        (FL.FL_5_0, (1, 8), {U8}, _T11, _T11, _T11),
        (FL.FL_3_0, (1, 8), {U8}, T8, T8, T8),
        (FL.FL_2_0, {4}, {U8}, {F16}, {F16}, {F16}),
    ), lambda c, a, b: np.where(c != 0, a, b), {"int": "select(c, b, a != 0u)"},
        "element_wise_if_operator_desc.md", "a where the condition is non-zero, else b (their bits)",
        bits=True, same_type=(("a_tensor", "b_tensor", "output_tensor"),), out_from="a_tensor"),
    Row("ELEMENT_WISE_CLIP_GRAD", "clip_grad0", "clip_grad0", ("input_tensor", "input_gradient_tensor"), (
        (FL.FL_5_0, (1, 8), FLOATS | _ALL_INTS),
        (FL.FL_3_1, (1, 8), T8),
    ), _clip_grad, {"float": "select(b, F(0.0), a <= u_min || a >= u_max)",
                    "int": "select(b, b ^ b, (u_lo_on != F(0.0) && a <= u_lo) || (u_hi_on != F(0.0) && a >= u_hi))",
                    "sint64": "select(b, b ^ b, (u_lo_on != F(0.0) && !w64_lt_s(u_lo, a)) "
                              "|| (u_hi_on != F(0.0) && !w64_lt_s(a, u_hi)))",
                    "uint64": "select(b, b ^ b, (u_lo_on != F(0.0) && !w64_lt_u(u_lo, a)) "
                              "|| (u_hi_on != F(0.0) && !w64_lt_u(a, u_hi)))"},
        "element_wise_clip_grad_operator_desc.md",
        "0 where x <= min or x >= max, else the gradient (a NaN x passes it; integer x compared exactly)",
        attributes=(Attr("min", -math.inf), Attr("max", math.inf)), output="output_gradient_tensor"),
    Row("ELEMENT_WISE_CLIP_GRAD1", "clip_grad", "clip_grad", ("input_tensor", "input_gradient_tensor"), (
        (FL.FL_5_0, (1, 8), FLOATS | _ALL_INTS),
    ), _clip_grad1, {"float": "select(b, F(0.0), a <= u_min || a >= u_max)",
                     "int": "select(b, b ^ b, a <= u_min || a >= u_max)",
                     "sint64": "select(b, b ^ b, !w64_lt_s(u_min, a) || !w64_lt_s(a, u_max))",
                     "uint64": "select(b, b ^ b, !w64_lt_u(u_min, a) || !w64_lt_u(a, u_max))"},
        "element_wise_clip_grad1_operator_desc.md",
        "0 where x <= min or x >= max, else the gradient (min and max in the tensor's own type; a NaN x passes it)",
        attributes=(Attr("min", "lowest", kind="value"), Attr("max", "highest", kind="value")),
        output="output_gradient_tensor", min_max_data_type=True),
    Row("ACTIVATION_RELU_GRAD", "relu_grad", "relu_grad", ("input_tensor", "input_gradient_tensor"), (
        (FL.FL_5_1, (1, 8), FLOATS | {I32, I16, I8}),
        (FL.FL_4_0, (1, 8), FLOATS),
        (FL.FL_3_0, (1, 8), FLOATS),
    ), lambda x, dy: np.where(x > 0, dy, 0).astype(dy.dtype) if x.dtype.kind != "f" else np.where(x > 0, dy, 0.0),
        {"float": "select(F(0.0), b, a > F(0.0))", "sint": "select(0i, b, a > 0i)"},
        "activation_relu_grad_operator_desc.md", "the gradient where x > 0, else 0",
        output="output_gradient_tensor"),
    Row("CAST", "cast", "cast", ("input_tensor",), (
        (FL.FL_4_1, (1, 8), _T11, _T11),
        (FL.FL_3_1, (1, 8), T8 | {I64, U64}, T8 | {I64, U64}),
        (FL.FL_3_0, {4}, T8 | {I64, U64}, T8 | {I64, U64}),
        (FL.FL_1_0, {4}, {F32, F16, I16, I8, U16, U8}, {F32, F16, I16, I8, U16, U8}),
    ), _cast, _cast_wgsl, "cast_operator_desc.md",
        "x converted to the output's type (floats to integers truncated and saturated, NaN 0; to floats rounded "
        "to nearest even; integers to integers wrap)", cast=True, raw=True, precision="exact (correctly rounded)"),
    Row("ELEMENT_WISE_QUANTIZE_LINEAR", "quantize_linear", "quantize_linear",
        ("input_tensor", "scale_tensor", "zero_point_tensor"), (
            (FL.FL_6_2, (1, 8), {F32, F16, I32}, FLOATS, {I8, U8}, {I8, U8}),
            (FL.FL_6_0, (1, 8), {F32, F16, I32}, FLOATS, {I8, U8}, {I8, U8}),
            (FL.FL_3_0, (1, 8), {F32, I32}, {F32}, {I8, U8}, {I8, U8}),
            (FL.FL_2_1, {4}, {F32, I32}, {F32}, {I8, U8}, {I8, U8}),
            (FL.FL_1_0, {4}, {F32}, {F32}, {U8}, {U8}),
        ), _quantize, _quantize_wgsl, "element_wise_quantize_linear_operator_desc.md",
        "clamp(round(x / scale) + zero_point, the output type's range), x / scale exact and rounded half to even "
        "(NaN 0, x / 0 saturating); the zero point optional from FL_6_2 (0; the output then output_data_type's, "
        "default UINT8)",
        raw=True, optional=("zero_point_tensor",),
        same_type=(("input_tensor",), ("zero_point_tensor", "output_tensor")),
        check=_zero_point_check(True), out_type=_quantize_out_type,
        out_type_arguments=lambda desc: {"output_data_type": desc.output_tensor.data_type.name},
        precision="exact (round(x / scale) decided on the exact quotient)"),
    Row("ELEMENT_WISE_DEQUANTIZE_LINEAR", "dequantize_linear", "dequantize_linear",
        ("input_tensor", "scale_tensor", "zero_point_tensor"), (
            (FL.FL_6_2, (1, 8), _INTS_8_32, FLOATS, _INTS_8_32, FLOATS),
            (FL.FL_6_0, (1, 8), _INTS_8_32, FLOATS, _INTS_8_32, FLOATS),
            (FL.FL_3_0, (1, 8), _INTS_8_32, {F32}, _INTS_8_32, {F32}),
            (FL.FL_2_1, {4}, _INTS_8_32, {F32}, _INTS_8_32, {F32}),
            (FL.FL_1_0, {4}, {U8}, {F32}, {U8}, {F32}),
        ), _dequantize, _dequantize_wgsl, "element_wise_dequantize_linear_operator_desc.md",
        "(x - zero_point) * scale (the zero point optional from FL_6_2: 0)",
        raw=True, optional=("zero_point_tensor",), out_from="scale_tensor",
        same_type=(("input_tensor", "zero_point_tensor"), ("scale_tensor", "output_tensor")),
        check=_zero_point_check(False), ulps=1.5,
        precision="1.5 ULP; correctly rounded (0.5 ULP) where |x - zero_point| < 2^24 (the difference exact)"),
    Row("ELEMENT_WISE_QUANTIZED_LINEAR_ADD", "quantized_linear_add", "quantized_linear_add",
        ("a_tensor", "a_scale_tensor", "a_zero_point_tensor", "b_tensor", "b_scale_tensor", "b_zero_point_tensor",
         "output_scale_tensor", "output_zero_point_tensor"), (
            (FL.FL_4_0, (1, 8), {I8, U8}, {F32}, {I8, U8}, {I8, U8}, {F32}, {I8, U8}, {F32}, {I8, U8}, {I8, U8}),
        ), _quantized_add, {}, "element_wise_quantized_linear_add_operator_desc.md",
        "clamp(round(((a - a_zero_point) a_scale + (b - b_zero_point) b_scale) / output_scale) + output_zero_point, "
        "the output type's range): a and b dequantized and added in float32, the sum quantized as quantize_linear "
        "does (half to even, NaN 0, saturating); each scale and zero point one element, a zero point optional (0; "
        "the output then output_data_type's, else a's type)",
        raw=True, optional=("a_zero_point_tensor", "b_zero_point_tensor", "output_zero_point_tensor"),
        single=("a_scale_tensor", "a_zero_point_tensor", "b_scale_tensor", "b_zero_point_tensor",
                "output_scale_tensor", "output_zero_point_tensor"),
        same_type=(("a_tensor", "a_zero_point_tensor"), ("b_tensor", "b_zero_point_tensor"),
                   ("output_zero_point_tensor", "output_tensor")),
        out_type=_quantized_add_out_type,
        out_type_arguments=lambda desc: {"output_data_type": desc.output_tensor.data_type.name},
        tolerance=_quantized_add_tolerance, steps=_quantized_add_problem,
        precision="exact against the float32 sum (each product and the sum rounded); where a compiler contracts a "
                  "product and the sum into a fused multiply-add, or the adapter flushes subnormals, the result of "
                  "that computation"),
    Row("ELEMENT_WISE_TANH", "tanh", "tanh", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_2_0, {4}, FLOATS),
    ), np.tanh, {"float": _TANH_WGSL}, "element_wise_tanh_operator_desc.md", "tanh(x)",
        scale_bias=True, ulps=_tanh_ulps, absolute=2.0**-21, precision=_TANH_PRECISION),
    Row("ACTIVATION_LEAKY_RELU", "leaky_relu", "leaky_relu", ("input_tensor",), _ACTIVATION_FLOAT,
        lambda x, alpha: np.where(x >= 0, x, alpha * x), {"float": "select(u_alpha * a, a, a >= F(0.0))"},
        "activation_leaky_relu_operator_desc.md", "x where x >= 0, else alpha * x",
        attributes=(Attr("alpha", 0.01),), fuses=True, ulps=0.5, precision="correctly rounded (0.5 ULP)"),
    Row("ACTIVATION_SIGMOID", "sigmoid", "sigmoid", ("input_tensor",), _ACTIVATION_FLOAT,
        lambda x: 1 / (1 + np.exp(-x)), {"float": "F(1.0) / (F(1.0) + exp(-a))"},
        "activation_sigmoid_operator_desc.md", "1 / (1 + e^-x)", fuses=True,
        ulps=lambda x, **_: 6 + 2 * np.abs(x), precision="6 + 2|x| ULP (WGSL's exp, an addition and a division)"),
    Row("ACTIVATION_TANH", "activation_tanh", "activation_tanh", ("input_tensor",), _ACTIVATION_FLOAT, np.tanh,
        {"float": _TANH_WGSL}, "activation_tanh_operator_desc.md", "tanh(x)", fuses=True,
        ulps=_tanh_ulps, absolute=2.0**-21, precision=_TANH_PRECISION),
    Row("ACTIVATION_ELU", "elu", "elu", ("input_tensor",), _ACTIVATION_FLOAT, _elu,
        {"float": "select(u_alpha * (exp(a) - F(1.0)), a, a >= F(0.0))"},
        "activation_elu_operator_desc.md", "x where x >= 0, else alpha * (e^x - 1)",
        attributes=(Attr("alpha", 1.0),), fuses=True, ulps=1.5,
        absolute=lambda x, alpha: np.where(x < 0, np.abs(alpha) * (3 + 2 * np.abs(x)) * 2.0**-24, 0.0),
        precision="1.5 ULP, and |alpha| (3 + 2|x|) 2^-24 absolute for x < 0 (WGSL's exp, its difference to 1)"),
    Row("ACTIVATION_LINEAR", "linear", "linear", ("input_tensor",), _ACTIVATION_FLOAT,
        lambda x, alpha, beta: _product32(alpha, x) + beta, {"float": "u_alpha * a + u_beta"},
        "activation_linear_operator_desc.md", "alpha * x + beta",
        attributes=(Attr("alpha", 1.0), Attr("beta", 0.0)), fuses=True, ulps=0.5,
        absolute=lambda x, alpha, beta: np.spacing(np.abs(alpha * x).astype(np.float32)).astype(np.float64),
        precision="0.5 ULP of the result and 1 ULP of alpha * x (two roundings)"),
    Row("ACTIVATION_SOFTPLUS", "softplus", "softplus", ("input_tensor",), _ACTIVATION_FLOAT, _softplus,
        {"float": "(max(u_steepness * a, F(0.0)) + log(F(1.0) + exp(-abs(u_steepness * a)))) / u_steepness"},
        "activation_softplus_operator_desc.md", "ln(1 + e^(steepness x)) / steepness",
        attributes=(Attr("steepness", 1.0, minimum=1.0, minimum_until=FL.FL_6_4),), fuses=True, ulps=4.0,
        absolute=lambda x, steepness: np.where(np.abs(steepness * x) > _F32_MAX, np.inf, 2.0**-20 / np.abs(steepness)),
        precision="4 ULP and 2^-20 / |steepness| absolute (WGSL's log on [1, 2], exp, a division)"),
    Row("ACTIVATION_GELU", "gelu", "gelu", ("input_tensor",), ((FL.FL_5_1, (1, 8), FLOATS),),
        lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
        {"float": "F(0.5) * a * (F(1.0) + erf_approx(a * F(0.7071067811865476)))"},
        "activation_gelu_operator_desc.md", "x (1 + erf(x / sqrt(2))) / 2", fuses=True, ulps=4.0,
        absolute=lambda x: 2.0e-7 * np.abs(x) + 2.0**-24,
        precision="erf by Abramowitz & Stegun 7.1.26 (1.5e-7 absolute; WGSL has no erf): 2e-7 |x| absolute and 4 ULP"),
    # ------------------------------------------------------------------------ float math rows (ew-math)
    Row("ELEMENT_WISE_CLIP1", "clip", "clip", ("input_tensor",), ((FL.FL_5_0, (1, 8), FLOATS | _ALL_INTS),), _clip1,
        {"float": "max_num(u_min, min_num(a, u_max))", "int": "max(u_min, min(a, u_max))",
         "sint64": "w64_max_s(u_min, w64_min_s(a, u_max))", "uint64": "w64_max_u(u_min, w64_min_u(a, u_max))"},
        "element_wise_clip1_operator_desc.md",
        "max(min, min(x, max)) with min and max in the tensor's own type (NaN gives max; min > max gives min)",
        attributes=(Attr("min", "lowest", kind="value"), Attr("max", "highest", kind="value")), scale_bias=True,
        min_max_data_type=True),
    Row("ELEMENT_WISE_POW", "pow", "pow", ("input_tensor", "exponent_tensor"), (
        (FL.FL_3_0, (1, 8), T8),
        (FL.FL_1_0, {4}, FLOATS),
    ), _pow, {
        "float": "pow_real(a, b)", "float,sint": "pow_signed(a, F(b), (b & 1) != 0)",
        "float,uint": "pow_signed(a, F(b), (b & 1u) != 0u)",
        "sint": "ipow_s(a, b, u_top)", "sint,uint": "bitcast<i32>(ipow_wrap(bitcast<u32>(a), b))",
        "uint,sint": "ipow_us(a, b, u_top)", "uint": "ipow_wrap(a, b)",
        "sint,float": "saturate_s(pow_real(F(a), b), u_bottom, u_top)",
        "uint,float": "saturate_u(pow_real(F(a), b), u_top)"},
        "element_wise_pow_operator_desc.md",
        "x^exponent (a negative base: the exact sign for integral exponents, NaN for others; integers: exact, "
        "wrapping; a float exponent on integers: the real result truncated and saturated)",
        scale_bias=True, mixed=(("exponent_tensor", FL.FL_3_0),), ulps=_pow_ulps, precision=_POW_PRECISION,
        int_attributes=lambda values, dtype: (Attribute("top", "value", int(np.iinfo(dtype).max)),
                                              Attribute("bottom", "value", int(np.iinfo(dtype).min)))),
    Row("ELEMENT_WISE_CONSTANT_POW", "constant_pow", "constant_pow", ("input_tensor",), _UNARY_FLOAT,
        lambda x, exponent: _pow_real(x, exponent), {"float": "pow_real(a, u_exponent)"},
        "element_wise_constant_pow_operator_desc.md",
        "x^exponent (a negative base: the exact sign for integral exponents, NaN for others)",
        attributes=(Attr("exponent", 1.0),), scale_bias=True, ulps=lambda x, exponent: _pow_ulps(x, exponent),
        precision=_POW_PRECISION),
    Row("ELEMENT_WISE_ACOS", "acos", "acos", ("input_tensor",), _UNARY_FLOAT, np.arccos, {"float": "acos_real(a)"},
        "element_wise_acos_operator_desc.md", "arccos(x) (NaN outside [-1, 1])", scale_bias=True, ulps=4096.0,
        absolute=2.0**-21, precision="4096 ULP and 2^-21 absolute (computed as WGSL defines acos: atan2(sqrt((1 - x)"
        "(1 + x)), x), atan2's 4096 ULP and the square root's rounding)"),
    Row("ELEMENT_WISE_ASIN", "asin", "asin", ("input_tensor",), _UNARY_FLOAT, np.arcsin, {"float": "asin_real(a)"},
        "element_wise_asin_operator_desc.md", "arcsin(x) (NaN outside [-1, 1])", scale_bias=True, ulps=4096.0,
        absolute=2.0**-21, precision="4096 ULP and 2^-21 absolute (computed as WGSL defines asin: atan2(x, "
        "sqrt((1 - x)(1 + x))), atan2's 4096 ULP and the square root's rounding)"),
    Row("ELEMENT_WISE_ATAN", "atan", "atan", ("input_tensor",), _UNARY_FLOAT, np.arctan, {"float": "atan_real(a)"},
        "element_wise_atan_operator_desc.md", "arctan(x)", scale_bias=True, ulps=4096.0,
        precision="4096 ULP (WGSL's atan)"),
    Row("ELEMENT_WISE_ATAN_YX", "atan_yx", "atan_yx", ("a_tensor", "b_tensor"), ((FL.FL_3_1, (1, 8), FLOATS),),
        _atan2, {"float": "atan2_real(a, b)"}, "element_wise_atan_yx_operator_desc.md",
        "atan2(a, b), a the y and b the x coordinate (IEEE atan2's values at the origin and the infinities)",
        ulps=4096.0, precision="4096 ULP (WGSL's atan2)"),
    Row("ELEMENT_WISE_ACOSH", "acosh", "acosh", ("input_tensor",), _UNARY_2_0, np.arccosh, {"float": "acosh_real(a)"},
        "element_wise_acosh_operator_desc.md", "arcosh(x) (NaN below 1)", scale_bias=True, ulps=6.0,
        absolute=2.0**-20, precision="6 ULP and 2^-20 absolute (WGSL's log of x + sqrt((x - 1)(x + 1)), "
        "log(x) + ln 2 beyond 4096)"),
    Row("ELEMENT_WISE_ASINH", "asinh", "asinh", ("input_tensor",), _UNARY_2_0, np.arcsinh, {"float": "asinh_real(a)"},
        "element_wise_asinh_operator_desc.md", "arsinh(x)", scale_bias=True, ulps=6.0, absolute=2.0**-20,
        precision="6 ULP and 2^-20 absolute (WGSL's log of |x| + sqrt(x^2 + 1), log|x| + ln 2 beyond 4096, "
        "x itself below 2^-12)"),
    Row("ELEMENT_WISE_ATANH", "atanh", "atanh", ("input_tensor",), _UNARY_2_0, np.arctanh, {"float": "atanh_real(a)"},
        "element_wise_atanh_operator_desc.md", "artanh(x) (+-inf at +-1, NaN beyond)", scale_bias=True, ulps=3.5,
        absolute=2.0**-21, precision="3.5 ULP and 2^-21 absolute (WGSL's log of (1 + |x|) / (1 - |x|), halved; "
                                     "x itself below 2^-12)"),
    Row("ELEMENT_WISE_COSH", "cosh", "cosh", ("input_tensor",), _UNARY_2_0, np.cosh, {"float": "cosh_real(a)"},
        "element_wise_cosh_operator_desc.md", "cosh(x)", scale_bias=True, ulps=lambda x, **_: 10 + 2 * np.abs(x),
        precision="10 + 2|x| ULP (WGSL's exp of |x| / 2, squared, halved, plus its reciprocal: finite up to "
                  "float32's limit)"),
    Row("ELEMENT_WISE_SINH", "sinh", "sinh", ("input_tensor",), _UNARY_2_0, np.sinh, {"float": "sinh_real(a)"},
        "element_wise_sinh_operator_desc.md", "sinh(x)", scale_bias=True, ulps=lambda x, **_: 13 + 3 * np.abs(x),
        precision="13 + 3|x| ULP (its Taylor series below |x| = 1; beyond, WGSL's exp of |x| / 2, squared, less its "
                  "reciprocal)"),
    Row("ELEMENT_WISE_TAN", "tan", "tan", ("input_tensor",), _UNARY_FLOAT, np.tan, {"float": "tan(reduced_angle(a))"},
        "element_wise_tan_operator_desc.md", "tan(x)", scale_bias=True, ulps=2.5, absolute=_tan_error,
        precision="WGSL's tan, inherited from sin(x) / cos(x), each 2^-11 absolute in [-pi, pi]: 2^-11 (1 + |tan x|) "
                  "/ (|cos x| - 2^-11) absolute and 2.5 ULP; beyond [-pi, pi] or next to a pole, WGSL promises "
                  "nothing"),
    Row("ELEMENT_WISE_CEIL", "ceil", "ceil", ("input_tensor",), _UNARY_FLOAT, np.ceil, {"float": "ceil(a)"},
        "element_wise_ceil_operator_desc.md", "the least integer >= x", scale_bias=True),
    Row("ELEMENT_WISE_FLOOR", "floor", "floor", ("input_tensor",), _UNARY_FLOAT, np.floor, {"float": "floor(a)"},
        "element_wise_floor_operator_desc.md", "the largest integer <= x", scale_bias=True),
    Row("ELEMENT_WISE_ROUND", "round", "round", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_2_1, {4}, FLOATS),
    ), _round, {"float": {RoundingMode.HALVES_TO_NEAREST_EVEN: "round(a)", RoundingMode.TOWARD_ZERO: "trunc(a)",
                          RoundingMode.TOWARD_INFINITY: "round_away(a)"}},
        "element_wise_round_operator_desc.md",
        "x rounded to an integer as rounding_mode says (halves to even, toward zero, halves away from zero)",
        attributes=(Attr("rounding_mode", RoundingMode.HALVES_TO_NEAREST_EVEN, kind="enum", enum=RoundingMode),)),
    Row("ELEMENT_WISE_ERF", "erf", "erf", ("input_tensor",), _UNARY_2_0, _erf, {"float": "erf_real(a)"},
        "element_wise_erf_operator_desc.md", "erf(x)", scale_bias=True, ulps=2.0, absolute=_erf_error,
        precision="2 ULP below |x| = 0.5 (its Taylor series); beyond, Abramowitz & Stegun 7.1.26 (1.5e-7 absolute; "
                  "WGSL has no erf) and 2^-21 absolute"),
    Row("ELEMENT_WISE_SIGN", "sign", "sign", ("input_tensor",), _SIGN_TYPES, _sign,
        {"float": "select(select(F(0.0), F(-1.0), a < F(0.0)), F(1.0), a > F(0.0))",
         "sint": "select(select(0, -1, a < 0), 1, a > 0)", "uint": "select(0u, 1u, a > 0u)",
         "sint64": "select(select(w64_zero(), w64_neg(w64_one()), w64_lt_s(a, w64_zero())), w64_one(), "
                   "w64_lt_s(w64_zero(), a))",
         "uint64": "select(w64_one(), w64_zero(), w64_eq(a, w64_zero()))"},
        "element_wise_sign_operator_desc.md", "-1 where x < 0, 1 where x > 0, else 0 (-0.0 and NaN too)"),
    Row("ELEMENT_WISE_IS_NAN", "is_nan", "is_nan", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), FLOATS, {U32, U8}),
        (FL.FL_2_0, {4}, FLOATS, {U32, U8}),
    ), lambda x: np.isnan(x).astype(np.uint8), {"float": "select(0u, 1u, is_nan(f32(a)))"},
        "element_wise_is_nan_operator_desc.md", "1 where x is NaN, else 0", logical=True),
    Row("ELEMENT_WISE_IS_INFINITY", "is_infinity", "is_infinity", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), FLOATS, {U8}),
        (FL.FL_2_1, {4}, FLOATS, {U8}),
    ), _is_infinity, {"float": {
        IsInfinityMode.EITHER: "select(0u, 1u, (bitcast<u32>(f32(a)) & 0x7FFFFFFFu) == 0x7F800000u)",
        IsInfinityMode.POSITIVE: "select(0u, 1u, bitcast<u32>(f32(a)) == 0x7F800000u)",
        IsInfinityMode.NEGATIVE: "select(0u, 1u, bitcast<u32>(f32(a)) == 0xFF800000u)"}},
        "element_wise_is_infinity_operator_desc.md", "1 where x is an infinity of infinity_mode's sign, else 0",
        attributes=(Attr("infinity_mode", IsInfinityMode.EITHER, kind="enum", enum=IsInfinityMode),), logical=True),
    Row("ELEMENT_WISE_THRESHOLD", "threshold", "threshold", ("input_tensor",), (
        (FL.FL_3_0, (1, 8), T8),
        (FL.FL_2_1, {4}, T8),
        (FL.FL_1_0, {4}, FLOATS),
    ), _threshold, {"float": "max_num(a, u_min)", "int": "max(a, u_min)"},
        "element_wise_threshold_operator_desc.md",
        "max(x, min) (NaN gives min; integer tensors: the least integer of the type >= min)",
        attributes=(Attr("min", -math.inf),), scale_bias=True, int_attributes=_threshold_ints),
    Row("ELEMENT_WISE_DIFFERENCE_SQUARE", "difference_square", "difference_square", ("a_tensor", "b_tensor"),
        ((FL.FL_3_1, (1, 8), FLOATS | {I32, U32}),), _integer_or_float(lambda a, b: (a - b) * (a - b),
                                                                     _wrap(lambda a, b: (a - b) * (a - b))),
        {"float": "(a - b) * (a - b)", "int": "(a - b) * (a - b)"},
        "element_wise_difference_square_operator_desc.md", "(a - b)^2 (integers wrap)",
        ulps=2.0, precision="2 ULP (a subtraction and a product, each correctly rounded)"),
    Row("ACTIVATION_HARD_SIGMOID", "hard_sigmoid", "hard_sigmoid", ("input_tensor",), _ACTIVATION_FLOAT,
        _hard_sigmoid, {"float": "max_num(F(0.0), min_num(u_alpha * a + u_beta, F(1.0)))"},
        "activation_hard_sigmoid_operator_desc.md", "max(0, min(alpha * x + beta, 1)) (NaN gives 1, as HLSL's min)",
        attributes=(Attr("alpha", 0.2), Attr("beta", 0.5)), fuses=True, ulps=0.5,
        absolute=lambda x, alpha, beta: np.spacing(np.abs(alpha * x).astype(np.float32)).astype(np.float64),
        precision="0.5 ULP of the result and 1 ULP of alpha * x (two roundings)"),
    Row("ACTIVATION_PARAMETRIC_SOFTPLUS", "parametric_softplus", "parametric_softplus", ("input_tensor",),
        _ACTIVATION_FLOAT, _parametric_softplus, {"float": "parametric_softplus(a, u_alpha, u_beta)"},
        "activation_parametric_softplus_operator_desc.md", "alpha ln(1 + e^(beta x))",
        attributes=(Attr("alpha", 1.0), Attr("beta", 1.0)), fuses=True, ulps=4.5,
        absolute=lambda x, alpha, beta: np.where(np.abs(beta * x) > _F32_MAX, np.inf, np.abs(alpha) * 2.0**-20),
        precision="4.5 ULP and 2^-20 |alpha| absolute (WGSL's log on [1, 2], exp)"),
    Row("ACTIVATION_SCALED_ELU", "scaled_elu", "scaled_elu", ("input_tensor",), _ACTIVATION_FLOAT,
        lambda x, alpha, gamma: np.where(x > 0, gamma * x, gamma * (alpha * np.exp(x) - alpha)),
        {"float": "select(u_gamma * (u_alpha * exp(a) - u_alpha), u_gamma * a, a > F(0.0))"},
        "activation_scaled_elu_operator_desc.md", "gamma x where x > 0, else gamma (alpha e^x - alpha)",
        attributes=(Attr("alpha", 1.6732), Attr("gamma", 1.0507)), fuses=True, ulps=1.5,
        absolute=lambda x, alpha, gamma: np.where(x > 0, 0.0, np.abs(alpha * gamma) * 2.0**-22),
        precision="1.5 ULP, and |alpha gamma| 2^-22 absolute for x <= 0 (WGSL's exp: (3 + 2|x|) e^x <= 3 ULP of 1)"),
    Row("ACTIVATION_SCALED_TANH", "scaled_tanh", "scaled_tanh", ("input_tensor",), _ACTIVATION_FLOAT,
        lambda x, alpha, beta: alpha * np.tanh(beta * x), {"float": "u_alpha * tanh_real(u_beta * a)"},
        "activation_scaled_tanh_operator_desc.md", "alpha tanh(beta x)",
        attributes=(Attr("alpha", 1.0), Attr("beta", 0.5)), fuses=True,
        ulps=lambda x, alpha, beta: 2 * _tanh_ulps(beta * x) + 1.5,
        absolute=lambda x, alpha, beta: np.abs(alpha) * 2.0**-21,
        precision="2 (8.5 + 4|beta x|) + 1.5 ULP and 2^-21 |alpha| absolute (tanh's, scaled)"),
    Row("ACTIVATION_SOFTSIGN", "softsign", "softsign", ("input_tensor",), _ACTIVATION_FLOAT,
        lambda x: np.where(np.isinf(x), np.sign(x), x / (1 + np.abs(x))),
        {"float": "select(a / (F(1.0) + abs(a)), sign(a), abs(a) >= F(16777216.0))"},
        "activation_softsign_operator_desc.md", "x / (1 + |x|) (+-1 at +-inf)", fuses=True, ulps=3.0,
        precision="3 ULP (an addition and WGSL's division)"),
    Row("ACTIVATION_THRESHOLDED_RELU", "thresholded_relu", "thresholded_relu", ("input_tensor",), _ACTIVATION_FLOAT,
        lambda x, alpha: np.where(x > alpha, x, 0.0), {"float": "select(F(0.0), a, a > u_alpha)"},
        "activation_thresholded_relu_operator_desc.md", "x where x > alpha, else 0 (NaN gives 0)",
        attributes=(Attr("alpha", 1.0),), fuses=True),
    Row("ACTIVATION_SHRINK", "shrink", "shrink", ("input_tensor",), (
        (FL.FL_5_1, (1, 8), T8),
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_2_0, (4, 5), FLOATS),
    ), _shrink, {"float": "select(select(F(0.0), a + u_bias, a < -u_threshold), a - u_bias, a > u_threshold)",
                 "sint": "select(select(0, a + u_bias, int_below(a, ceil(-u_threshold))), a - u_bias, "
                         "int_above(a, floor(u_threshold)))",
                 "uint": "select(select(0u, a + u_bias, uint_below(a, ceil(-u_threshold))), a - u_bias, "
                         "uint_above(a, floor(u_threshold)))"},
        "activation_shrink_operator_desc.md",
        "x - bias where x > threshold, x + bias where x < -threshold, else 0 (integers: the comparisons exact, bias "
        "truncated toward zero and saturated to the type, the result wrapping)",
        attributes=(Attr("bias", 0.0), Attr("threshold", 0.5)), fuses=True, ulps=0.5, int_attributes=_shrink_ints,
        precision="correctly rounded (0.5 ULP)"),
    Row("ACTIVATION_CELU", "celu", "celu", ("input_tensor",), ((FL.FL_3_0, (1, 8), FLOATS),), _celu,
        {"float": "celu(a, u_alpha)"},
        "activation_celu_operator_desc.md",
        "max(0, x) + min(0, alpha (e^(x / alpha) - 1)) (x (1 + x / 2 alpha) where |x / alpha| < 2^-12: x itself for an "
        "infinite alpha)",
        attributes=(Attr("alpha", 1.0),), fuses=True,
        ulps=_celu_ulps,
        precision="7 + 4|u| ULP, u = x / alpha (WGSL's division; alpha (e^u - 1) by its Taylor series below |u| = "
                  "0.5, else WGSL's exp less 1; beyond u = 80 as e^(u + ln|alpha|): and 6|ln|alpha|| + 8 ULP more)"),
    Row("ACTIVATION_HARD_SWISH", "hard_swish", "hard_swish", ("input_tensor",), ((FL.FL_6_2, (1, 8), FLOATS),),
        _hard_swish, {"float": "hard_swish(a, u_alpha, u_beta)"},
        "activation_hard_swish_operator_desc.md", "x max(0, min(alpha x + beta, 1)) (0 where the second factor is 0)",
        attributes=(Attr("alpha", 1 / 6), Attr("beta", 0.5)), ulps=0.5,
        absolute=lambda x, alpha, beta: np.abs(x) * (np.spacing(np.abs(alpha * x).astype(np.float32)) + 2.0**-24),
        precision="0.5 ULP, and |x| (1 ULP of alpha x + 2^-24) absolute"),
    Row("ACTIVATION_SWISH", "swish", "swish", ("input_tensor",), ((FL.FL_6_2, (1, 8), FLOATS),), _swish,
        {"float": "swish(a, u_sigmoid_input_scale)"},
        "activation_swish_operator_desc.md",
        "x / (1 + e^(-sigmoid_input_scale x)) (0 where x is infinite and the quotient is inf / inf: the limit)",
        attributes=(Attr("sigmoid_input_scale", 1.0),),
        ulps=_swish_ulps, precision="6.5 + 3|v| ULP, v = sigmoid_input_scale x (WGSL's exp, an addition and a "
                                    "division); below v = -80, x e^v as e^(v + ln|x|): and 6|ln|x|| + 8 ULP more"),
    Row("ACTIVATION_IDENTITY", "activation_identity", "activation_identity", ("input_tensor",), _ACTIVATION_FLOAT,
        lambda x: x, {"float": "a"}, "activation_identity_operator_desc.md", "x (a copy)", fuses=True, copy=True),
    Row("ACTIVATION_PARAMETERIZED_RELU", "parameterized_relu", "parameterized_relu", ("input_tensor", "slope_tensor"), (
        (FL.FL_5_1, (1, 8), FLOATS | {I32, I16, I8}),
        (FL.FL_3_0, (1, 8), FLOATS),
        (FL.FL_2_0, (4, 5), FLOATS),
        (FL.FL_1_0, {4}, FLOATS),
    ), _prelu, {"float": "select(b * a, a, a >= F(0.0))", "int": "select(b * a, a, a >= 0)"},
        "activation_parameterized_relu_operator_desc.md",
        "x where x >= 0, else slope * x (slope a tensor; integers wrap)", ulps=0.5,
        precision="correctly rounded (0.5 ULP)"),
)


# ============================================================================ descs, validation
@dataclass(frozen=True)
class ElementWiseDesc:
    """What every element-wise and activation desc shares: its row (`ROW`, a class
    attribute). The fields are the row's (desc_class)."""

    ROW: ClassVar[Row]

    def __post_init__(self):
        row = self.ROW
        if row.scale_bias:
            object.__setattr__(self, "scale_bias", ScaleBias.coerce(self.scale_bias, f"{row.op}: scale_bias"))
        if row.fused_activation:
            object.__setattr__(self, "fused_activation",
                               FusedActivation.coerce(self.fused_activation, f"{row.op}: fused_activation"))
        out_type = getattr(getattr(self, row.output), "data_type", None)  # (not a TensorDesc: validation says so)
        if row.min_max_data_type:
            given = self.min_max_data_type
            object.__setattr__(self, "min_max_data_type", out_type if given is None else
                               DataType.parse(given, f"{row.op}: min_max_data_type"))
        value_type = self.min_max_data_type if row.min_max_data_type else out_type
        for a in row.attributes:
            object.__setattr__(self, a.name, a.check(getattr(self, a.name), a.name, row.op, value_type))

    @property
    def input_descs(self) -> tuple[TensorDesc | None, ...]:
        """The input tensors (None for an optional one left out)."""
        return tuple(getattr(self, f) for f in self.ROW.tensors)


def validate(support, desc: ElementWiseDesc, level: FeatureLevel) -> None:
    """The pages' rules: valid tensors of one DimensionCount and one set of sizes, one data
    type (the logical operators' outputs the table's), the support row; a fused activation
    only on FLOAT32 and FLOAT16 outputs; ScaleBias on float tensors only."""
    row = desc.ROW
    op = row.op
    named = {f: getattr(desc, f) for f in row.fields}
    named = {f: td for f, td in named.items() if td is not None or f not in row.optional}
    for field, td in named.items():
        check_tensor_desc(op, field, td, is_output=field == row.output)
    rank = check_same_rank(op, named)
    first_field, first = next(iter(named.items()))
    mixed = dict(row.mixed)
    for field, td in named.items():
        if field in row.single:
            _check_single(op, field, td, first_field, first)
        elif td.sizes != first.sizes:
            raise InvalidArgumentError(
                f"{op}: {field}.sizes {list(td.sizes)} must equal {first_field}.sizes {list(first.sizes)} (a broadcast "
                f"is a stride of 0 in the description)")
    for group in row.type_groups():
        present = [f for f in group if f in named]
        for field in present[1:]:
            want = named[present[0]].data_type
            if named[field].data_type == want or (field in mixed and level >= mixed[field]):
                continue
            later = f" at {FeatureLevel(level).name}; it needs {mixed[field].name} or later" if field in mixed else ""
            raise InvalidArgumentError(
                f"{op}: {field}.data_type {named[field].data_type.name} must equal {present[0]}.data_type "
                f"{want.name}{later}")
    if row.min_max_data_type and desc.min_max_data_type != named[row.output].data_type:
        raise InvalidArgumentError(
            f"{op}: min_max_data_type {desc.min_max_data_type.name} must match {row.output}.data_type "
            f"{named[row.output].data_type.name}")
    if row.check is not None:
        row.check(op, named, level)
    support.check(level, rank, {f: td.data_type for f, td in named.items()})
    out_type = named[row.output].data_type
    if row.fused_activation and desc.fused_activation is not None and out_type not in FLOATS:
        raise InvalidArgumentError(
            f"{op}: fused_activation needs a FLOAT32 or FLOAT16 output_tensor, not {out_type.name}")
    for a in row.attributes:
        if a.kind == "float":
            a.check_level(getattr(desc, a.name), op, level)
    if row.scale_bias and desc.scale_bias is not None and not first.data_type.is_float:
        raise InvalidArgumentError(f"{op}: scale_bias applies to float tensors only, not {first.data_type.name}")


def _check_single(op: str, field: str, td: TensorDesc, first_field: str, first: TensorDesc) -> None:
    """A tensor of one element: each axis of size 1, or of `first`'s size with stride 0."""
    for axis, (n, stride, want) in enumerate(zip(td.sizes, td.effective_strides, first.sizes)):
        if n != 1 and (n != want or stride != 0):
            raise InvalidArgumentError(
                f"{op}: {field} must hold one element (the page: its expected number of elements is 1), each axis of "
                f"size 1 or of {first_field}'s size with stride 0: {field}.sizes {list(td.sizes)} with strides "
                f"{list(td.effective_strides)} against {first_field}.sizes {list(first.sizes)} (axis {axis})")


def read_broadcast(td: TensorDesc, sizes) -> TensorDesc:
    """`td` read at `sizes` (its rank): each axis of size 1 against a larger one with stride 0 (no copy)."""
    if tuple(td.sizes) == tuple(sizes):
        return td
    strides = [0 if n == 1 and want != 1 else s for n, s, want in zip(td.sizes, td.effective_strides, sizes)]
    return TensorDesc(td.data_type, sizes, strides, total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)


def problem(desc: ElementWiseDesc) -> Problem | FusedProblem:
    """What the element-wise kernels compute for `desc` (steps: a row's `steps`)."""
    row = desc.ROW
    output = getattr(desc, row.output)
    inputs = tuple(read_broadcast(t, output.sizes) if f in row.single else t
                   for f, t in zip(row.tensors, desc.input_descs) if t is not None)
    if row.steps is not None:
        return row.steps(desc, inputs, output)
    dt = inputs[0].data_type
    scale_bias = getattr(desc, "scale_bias", None)
    fused = getattr(desc, "fused_activation", None)
    activation, act_attrs = None, ()
    if fused is not None:
        activation = _as_activation(fused.row.wgsl["float"])
        act_attrs = tuple(Attribute(k, "f32", v) for k, v in fused.attributes)
    if callable(row.wgsl):  # a formula built from the desc (CAST's per pair of types)
        expression = row.wgsl(desc)
    else:
        expression = row.formula(dt, *[t.data_type for t in inputs[1:]])
    if isinstance(expression, dict):  # one formula per value of the row's enum
        enum_attr = next(a for a in row.attributes if a.kind == "enum")
        expression = expression[getattr(desc, enum_attr.name)]
    copy = (row.copy and scale_bias is None) or (row.cast and dt == output.data_type)

    def kind(t: TensorDesc) -> str:  # a bit operation's values, and a cast's FLOAT64, are bits
        return "uint" if row.bits or (row.cast and t.data_type == F64) else value_kind(t.data_type)
    return Problem(
        op=row.op, inputs=inputs, output=output,
        kinds=tuple(kind(t) for t in inputs), out_kind=kind(output),
        expression=expression,
        attributes=_attributes(row, desc, dt),
        scale_bias=None if scale_bias is None else (scale_bias.scale, scale_bias.bias),
        activation=activation, activation_attributes=act_attrs, copy=copy)


def _attributes(row: Row, desc, data_type: DataType) -> tuple[Attribute, ...]:
    """The formula's attributes: FLOATs, or for an integer tensor the integer bounds of
    CLIP (integer_bounds)."""
    values = {a.name: getattr(desc, a.name) for a in row.attributes if a.kind != "enum"}
    if row.key == "clip0" and not data_type.is_float:
        lo, hi = integer_bounds(values["min"], values["max"], data_type.numpy)
        return (Attribute("min", "value", lo), Attribute("max", "value", hi))
    if row.key == "clip_grad0" and not data_type.is_float:
        lo, lo_on, hi, hi_on = _grad_bounds(values["min"], values["max"], data_type.numpy)
        return (Attribute("lo", "value", lo), Attribute("lo_on", "f32", lo_on), Attribute("hi", "value", hi),
                Attribute("hi_on", "f32", hi_on))
    if row.int_attributes is not None and not data_type.is_float:
        return row.int_attributes(values, data_type.numpy)
    kinds = {a.name: "value" if a.kind == "value" else "f32" for a in row.attributes}
    return tuple(Attribute(k, kinds[k], v) for k, v in values.items())


def integer_bounds(low: float, high: float, dtype) -> tuple[int, int]:
    """CLIP's FLOAT bounds for an integer tensor: the least and the largest integer of the
    type within [low, high] (ceil(low) and floor(high), clamped to the type's range); a NaN
    bound bounds nothing (as HLSL's max and min ignore a NaN operand)."""
    info = np.iinfo(dtype)

    def clamped(value: float, rounding, default: int) -> int:
        if math.isnan(value):
            return default
        if math.isinf(value):
            return int(info.max) if value > 0 else int(info.min)
        return max(int(info.min), min(int(info.max), rounding(value)))
    return clamped(low, math.ceil, int(info.min)), clamped(high, math.floor, int(info.max))


def _as_activation(expression: str) -> str:
    """An activation row's formula (over its input `a`) as a function of the result `x`."""
    return re.sub(r"\ba\b", "x", expression)


# ============================================================================ the reference
def _as_float64(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return x.astype(np.float64)


def _activate(fused: FusedActivation | None, y: np.ndarray) -> np.ndarray:
    if fused is None:
        return y
    return fused.row.numpy(y, **dict(fused.attributes))


def compute(row: Row, arrays, scale_bias=None, fused=None, **attributes) -> np.ndarray:
    """The row's function on broadcast `arrays`: floats in float64, unrounded (the
    reference rounds); integers exactly, wrapped in their type."""
    given = iter(np.broadcast_arrays(*[np.asarray(a) for a in arrays if a is not None]))
    arrays = [None if a is None else next(given) for a in arrays]  # (None: an optional input left out)
    dtype = arrays[0].dtype
    with np.errstate(all="ignore"):
        if row.bits:  # the elements' bits, as unsigned integers of their width
            return np.asarray(row.numpy(*[a.view(f"u{a.dtype.itemsize}") for a in arrays], **attributes))
        if row.raw:
            return np.asarray(row.numpy(*arrays, **attributes))
        if dtype.kind == "f":
            xs = [_as_float64(a) for a in arrays]
            if scale_bias is not None:  # computed in the kernel's float type: beyond float32's range, +-inf
                xs[0] = xs[0] * scale_bias.scale + scale_bias.bias
                if dtype != np.float64:
                    xs[0] = xs[0].astype(np.float32).astype(np.float64)
            return _activate(fused, np.asarray(row.numpy(*xs, **attributes), np.float64))
        return np.asarray(row.numpy(*arrays, **attributes))


def reference_of(row: Row) -> Callable:
    def reference(*args, **kwargs):
        bound = _signature(row, with_device=False).bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        given = {f: values.pop(argument_name(f)) for f in row.tensors}
        arrays = [None if v is None and f in row.optional else np.asarray(v) for f, v in given.items()]
        out_type = values.pop("output_data_type", None)
        if row.cast:
            out_type = _cast_dtype(values.pop("dtype"), row.functional)
        scale_bias = ScaleBias.coerce(values.pop("scale_bias", None), "scale_bias")
        fused = FusedActivation.coerce(values.pop("fused_activation", None))
        for a in row.attributes:  # enums as members, scalars in the tensor's type
            if a.kind != "float":
                values[a.name] = a.check(values[a.name], a.name, row.op, DataType.from_numpy(arrays[0].dtype))
        if row.copy and scale_bias is None:  # a copy: bits through (NaN payloads too)
            return np.array(arrays[0])
        if row.cast or row.raw:
            values["output_data_type"] = out_type
        y = compute(row, arrays, scale_bias, fused, **values)
        if row.out_type is not None:  # its numpy gives the output's type
            return y
        with np.errstate(all="ignore"):
            if out_type is not None:
                want = np.dtype(DataType.parse(out_type, "output_data_type").numpy)
            else:  # the first input's type (a mixed row's too), or out_from's
                source = arrays[row.tensors.index(row.out_from)] if row.out_from else arrays[0]
                want = source.dtype
            if row.bits and y.dtype.itemsize == want.itemsize:
                return y.view(want)
            return y.astype(want)
    reference.__name__ = reference.__qualname__ = row.functional
    reference.__signature__ = _signature(row, with_device=False)
    reference.__doc__ = (f"DML_{row.dml}: {row.summary}, on numpy-broadcast inputs; floats computed in float64 and "
                         f"rounded once to the type, integers wrapping in their type.")
    return reference


_SUBNORMAL = {np.dtype(np.float32): 2.0**-126, np.dtype(np.float64): 2.0**-1022}


def _ulp(values: np.ndarray, compute_type) -> np.ndarray:
    """One ULP of `compute_type` at each |value| (the largest finite one's beyond it)."""
    top = np.finfo(compute_type).max
    return np.spacing(np.minimum(np.abs(values), top).astype(compute_type)).astype(np.float64)


def _spread(fn, x: np.ndarray, delta: np.ndarray, y: np.ndarray) -> np.ndarray:
    """How far fn moves from y = fn(x) when x moves by up to +-delta (0 where undefined)."""
    moved = np.maximum(np.abs(fn(x + delta) - y), np.abs(fn(x - delta) - y))
    return np.nan_to_num(moved, nan=0.0, posinf=np.inf)


def activation_error(fused: FusedActivation, x: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(y, its error): a fused activation of x, where x is within e of the exact value (the
    families that apply one in their store: GEMM, MEAN_VARIANCE_NORMALIZATION): the error
    as the function moves it, plus the activation's own (its ULPs and absolute part) and
    a flushed subnormal."""
    attrs = dict(fused.attributes)
    g = lambda v: np.asarray(fused.row.numpy(v, **attrs), np.float64)  # noqa: E731
    y = g(x)
    return y, (_spread(g, x, e, y) + _bound(fused.row.ulps, [x], attrs) * _ulp(y, np.float32)
               + _bound(fused.row.absolute, [x], attrs) + 2.0**-126)


def _bound(value, xs: list, attrs: dict):
    """A row's ulps or absolute error: a number, or a function of its inputs and attributes."""
    return value(*xs, **attrs) if callable(value) else value


def tolerance_of(row: Row) -> Callable:
    """The row's documented precision (the module docstring), per element: the row's own
    error (ULPs of the compute type at the exact result, and an absolute part); the
    rounding of ScaleBias's x * scale + bias (1 ULP of each term) and the row's error
    propagated through the fused activation, by evaluating the functions at the ends of
    their inputs' error; float16's rounding of the result (1 ULP of float16); the
    subnormals an adapter may flush (results below the compute type's smallest normal,
    and the result of the inputs, and of x * scale + bias, flushed); where the exact result rounds to +-inf in the
    output type within the error, any value (the kernel may round below the limit)."""
    def tolerance(expected: np.ndarray, inputs, arguments: dict):
        if row.tolerance is not None:  # (the inputs the call gives, by field; None for an optional one left out)
            given = iter(inputs)
            named = {f: None if f in row.optional and arguments.get(argument_name(f), 0) is None else next(given)
                     for f in row.tensors}
            return row.tolerance(expected, named, arguments)
        if expected.dtype.kind != "f" or row.bits or (row.copy and arguments.get("scale_bias") is None):
            return None
        if row.cast:  # exact; NaN any NaN, and a float32 result below 2^-126 may be flushed to 0
            return np.full(expected.shape, 2.0**-126 if expected.dtype == np.float32 else 0.0)
        arrays = np.broadcast_arrays(*[np.asarray(x) for x in inputs])
        attrs = {k: v for k, v in arguments.items() if k not in ("scale_bias", "fused_activation", "output_data_type")}
        sb = ScaleBias.coerce(arguments.get("scale_bias"), "scale_bias")
        fused = FusedActivation.coerce(arguments.get("fused_activation"))
        compute_type = np.dtype(np.float64) if expected.dtype == np.float64 else np.dtype(np.float32)
        tiny = _SUBNORMAL[compute_type]
        with np.errstate(all="ignore"):
            xs = [_as_float64(a) for a in arrays]
            f = lambda x0: np.asarray(row.numpy(x0, *xs[1:], **attrs), np.float64)  # noqa: E731
            e = np.zeros(xs[0].shape)
            if sb is not None:
                product = xs[0] * sb.scale
                xs[0] = product + sb.bias
                if compute_type == np.float32:
                    xs[0] = xs[0].astype(np.float32).astype(np.float64)
                e = _spread(f, xs[0], _ulp(product, compute_type) + _ulp(xs[0], compute_type), f(xs[0]))
                top = float(np.finfo(compute_type).max)  # x * scale + bias beyond it: +-inf in the kernel
                e = np.where((np.abs(product) > top) | (np.abs(xs[0]) > top), np.inf, e)
            y = f(xs[0])
            e = e + _bound(row.ulps, xs, attrs) * _ulp(y, compute_type) + _bound(row.absolute, xs, attrs)
            if fused is not None:
                g_row, g_attrs = fused.row, dict(fused.attributes)
                g = lambda v: np.asarray(g_row.numpy(v, **g_attrs), np.float64)  # noqa: E731
                z = g(y)
                e = (_spread(g, y, e, z) + _bound(g_row.ulps, [y], g_attrs) * _ulp(z, compute_type)
                     + _bound(g_row.absolute, [y], g_attrs))
                y = z
            if row.ulps or row.absolute:  # the reference's own rounding to the output type
                e = e + 0.5 * _ulp(y, compute_type)
            e = e + tiny
            if expected.dtype == np.float16:
                e = e + np.spacing(np.minimum(np.abs(y), 65504).astype(np.float16)).astype(np.float64)
            flushed = [np.where(np.abs(x) < tiny, np.copysign(0.0, x), x).astype(a.dtype) if a.dtype.kind == "f" else a
                       for a, x in zip(arrays, (_as_float64(a) for a in arrays))]
            e = e + np.nan_to_num(np.abs(compute(row, flushed, sb, fused, **attrs) - y), nan=0.0, posinf=np.inf)
            if sb is not None:  # x * scale + bias is the function's input: flushed where subnormal too
                z = f(np.where(np.abs(xs[0]) < tiny, np.copysign(0.0, xs[0]), xs[0]))
                z = z if fused is None else np.asarray(fused.row.numpy(z, **dict(fused.attributes)), np.float64)
                e = e + np.nan_to_num(np.abs(z - y), nan=0.0, posinf=np.inf)
            limit = float(np.finfo(expected.dtype).max)
            edge = np.isinf(expected.astype(np.float64)) & np.isfinite(y) & (np.abs(y) <= limit + 2 * e)
            return np.where(edge, np.inf, e)
    return tolerance


# ============================================================================ broadcasting, the functional form
def argument_name(field: str) -> str:
    """The functional form's name of a tensor field."""
    return {"input_tensor": "x", "a_tensor": "a", "b_tensor": "b"}.get(field, field.removesuffix("_tensor"))


def broadcast_descs(fn: str, descs: list[TensorDesc], names: list[str]) -> list[TensorDesc]:
    """numpy's broadcasting of the inputs' descs as DirectML descs of one shape: axes
    prepended with size 1, and every axis of size 1 against a larger one read with stride
    0 (no copy). InvalidArgumentError naming the shapes where they do not broadcast."""
    rank = max(d.rank for d in descs)
    shape = []
    for axis in range(rank):
        sizes = {d.sizes[axis - rank + d.rank] for d in descs if axis - rank + d.rank >= 0} - {1}
        if len(sizes) > 1:
            listed = ", ".join(f"{n} {list(d.sizes)}" for n, d in zip(names, descs))
            raise InvalidArgumentError(f"{fn}: the shapes do not broadcast ({listed}: sizes {sorted(sizes)} meet on "
                                       f"axis {axis - rank} of the result)")
        shape.append(sizes.pop() if sizes else 1)
    out = []
    for d in descs:
        lead = rank - d.rank
        if lead:  # axes prepended with size 1
            d = TensorDesc(d.data_type, [1] * lead + list(d.sizes), [0] * lead + list(d.effective_strides),
                           total_tensor_size_in_bytes=d.total_tensor_size_in_bytes)
        out.append(read_broadcast(d, tuple(shape)))
    return out


def _one_element(d: TensorDesc, rank: int) -> TensorDesc:
    """A tensor of one element at `rank` (axes of 1 prepended)."""
    if d.rank == rank:
        return d
    return TensorDesc(d.data_type, [1] * rank, total_tensor_size_in_bytes=d.total_tensor_size_in_bytes)


def _signature(row: Row, with_device: bool = True) -> inspect.Signature:
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


def functional_of(row: Row) -> Callable:
    signature = _signature(row)

    def functional(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise InvalidArgumentError(f"{row.functional}: {exc} (its arguments: {signature})") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        device = values.pop("device")
        tensors = [(argument_name(f), values.pop(argument_name(f))) for f in row.tensors]
        tensors = [(name, value) for (name, value), f in zip(tensors, row.tensors)
                   if not (value is None and f in row.optional)]
        if row.optional:  # which of the inputs are given
            values["given"] = tuple(f for f in row.tensors if f not in row.optional
                                    or bound.arguments[argument_name(f)] is not None)
        return Call(tensors, values, device)
    functional.__name__ = functional.__qualname__ = row.functional
    functional.__signature__ = signature
    extras = []
    if row.scale_bias:
        extras.append("`scale_bias`: a ScaleBias or (scale, bias), x * scale + bias applied to x first")
    if row.fused_activation:
        extras.append("`fused_activation`: a FusedActivation or an activation's name, applied to the result "
                      "(float outputs)")
    broadcast = "; the inputs broadcast as numpy's do" if row.arity > 1 else ""
    functional.__doc__ = (f"DML_OPERATOR_{row.dml}: {row.summary}{broadcast}. " + ". ".join(extras)
                          + (". " if extras else "") + f"Precision: {row.precision}.")
    return functional


def infer_output_of(row: Row, desc_cls) -> Callable:
    def infer_output(*descs, **attributes):
        # (an optional input named None: left out, as `arguments` names it)
        left_out = [f for f in row.optional
                    if argument_name(f) in attributes and attributes.pop(argument_name(f)) is None]
        given = attributes.pop("given", None) or tuple(f for f in row.tensors if f not in left_out)[:len(descs)]
        shaped = broadcast_descs(row.functional, list(descs), [argument_name(f) for f in given])
        # A tensor of one element (`single`) stays one: its axes all 1 (the kernel broadcasts it).
        descs = [_one_element(d, s.rank) if f in row.single and d.element_count == 1 else s
                 for f, d, s in zip(given, descs, shaped)]
        named = dict(zip(given, descs))
        out_type = named[row.out_from].data_type if row.out_from else descs[0].data_type
        if row.logical:
            out_type = DataType.parse(attributes.pop("output_data_type", "UINT8"),
                                      f"{row.functional}: output_data_type")
        if row.cast:
            out_type = _cast_dtype(attributes.pop("dtype"), row.functional)
        if row.out_type is not None:
            out_type = row.out_type(named, attributes)
        return desc_cls(**{f: named.get(f) for f in row.tensors}, **{row.output: TensorDesc(out_type, descs[0].sizes)},
                        **attributes)
    return infer_output


def arguments(desc: ElementWiseDesc) -> dict:
    """The functional keywords of `desc`: its attributes, and each optional input it leaves
    out as None (so that the tensors it gives pass positionally up to the first such one,
    by name after it: ops/spec.py's tensor_arguments)."""
    row = desc.ROW
    out = {argument_name(f): None for f in row.optional if getattr(desc, f) is None}
    out.update({a.name: getattr(desc, a.name) for a in row.attributes})
    if row.logical:
        out["output_data_type"] = desc.output_tensor.data_type
    if row.cast:
        out["dtype"] = desc.output_tensor.data_type
    if row.out_type is not None:
        out.update(row.out_type_arguments(desc))
    if row.scale_bias:
        out["scale_bias"] = desc.scale_bias
    if row.fused_activation:
        out["fused_activation"] = desc.fused_activation
    return out


def _from_cli(row: Row, infer):
    def desc(x: TensorDesc, a: dict):
        """(`gpudml shader`: an operator that takes no float tensor runs the CLI's default
        FLOAT32 as its newest row's first type, UINT8 for the logical AND and NOT)"""
        newest = max(row.support, key=lambda r: r[0])
        sets = list(newest[2:]) if len(newest) > 3 else [newest[2]] * (row.arity + 1)

        def pick(types):
            return x.data_type if x.data_type in types else min(types, key=lambda t: -t.value)
        main = row.tensors.index(row.out_from) if row.out_from else 0
        groups = [g for g in row.type_groups() if row.tensors[main] in g]
        types = [pick(sets[main]) if i == main or any(f in g for g in groups) else pick(sets[i])
                 for i, f in enumerate(row.tensors)]
        attrs = {at.name: _cli_value(at, a.get(at.name)) for at in row.attributes}
        if row.cast:
            attrs["dtype"] = a.get("to") or "FLOAT16"
        return infer(*[TensorDesc(t, [1] * x.rank, None) if f in row.single else TensorDesc(t, x.sizes, x.strides)
                       for f, t in zip(row.tensors, types)], **attrs)
    return desc


def _default_text(a: Attr) -> str:
    if a.kind == "enum":
        return a.default.name.lower()
    if a.kind == "value":
        return f"the type's {a.default}"
    return str(a.default)


def _cli_value(a: Attr, raw):
    if raw is None:
        return None if a.kind == "value" else a.default
    if a.kind == "enum":
        return raw
    value = float(raw)
    return int(value) if a.kind == "value" and value.is_integer() else value


def spec(row: Row) -> OpSpec:
    """The OpSpec of `row`: its desc class, validation, reference, functional form, tolerance."""
    # The tensors in the struct's order (the order of the inputs a compiled operator takes),
    # an optional one keyword-only (None: left out).
    fields: list[tuple[str, Any, Any]] = [(f, Any, dataclasses.field(default=None, kw_only=True))
                                          if f in row.optional else (f, TensorDesc) for f in row.tensors]
    fields.append((row.output, TensorDesc))
    if row.scale_bias:
        fields.append(("scale_bias", Any, dataclasses.field(default=None)))
    if row.fused_activation:
        fields.append(("fused_activation", Any, dataclasses.field(default=None)))
    if row.min_max_data_type:
        fields.append(("min_max_data_type", Any, dataclasses.field(default=None)))
    fields += [(a.name, Any, dataclasses.field(default=None if a.kind == "value" else a.default))
               for a in row.attributes]
    name = f"{row.op}OperatorDesc"
    desc = desc_class(name, __name__, base=ElementWiseDesc, fields=fields, ROW=row, OPTIONAL_TENSORS=row.optional,
                      doc=f"DML_{row.dml}_OPERATOR_DESC: {row.summary}.")
    tensors = row.fields
    types_per_tensor = [(lvl, ranks, *types) for lvl, ranks, *types in row.support]
    support = support_table(row.op, tensors, types_per_tensor)
    infer = infer_output_of(row, desc)
    cli_args = tuple(CliArg(f"--{a.name.replace('_', '-')}", f"{a.name} (default {_default_text(a)})",
                            "str" if a.kind == "enum" else "number") for a in row.attributes)
    if row.cast:
        cli_args += (CliArg("--to", "the output's data type (default FLOAT16)", "str"),)
    examples = tuple(
        Example(name, inputs[0], {**{argument_name(f): v for f, v in zip(row.tensors[1:], inputs[1:])}, **attrs},
                expected, f"ns-directml-dml_{row.page}")
        for name, inputs, attrs, expected in row.examples)
    return OpSpec(
        name=row.op, key=row.key, desc=desc, support=support,
        infer_output=infer, validate=lambda d, level: validate(support, d, level),
        reference=reference_of(row), functional=functional_of(row),
        tensors=tuple(argument_name(f) for f in row.tensors),
        arguments=arguments, planner=ElementWisePlanner(problem),
        cli=Cli(cli_args, _from_cli(row, infer), "--shape 1024,1024"),
        page=f"DML_{row.dml}_OPERATOR_DESC", tolerance=tolerance_of(row), examples=examples,
    )


IDENTITY_ROW = TABLE[0]
FUSABLE = {_fused_name(r): r for r in TABLE if r.fuses}
SPECS = tuple(spec(row) for row in TABLE)

__all__ = ["FusedActivation", "ScaleBias", "SPECS", "TABLE", "Row", "Attr"]
