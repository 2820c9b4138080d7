"""DML_PADDING_OPERATOR_DESC (the page: tests/data/seeds/001): the input grown on every axis,
the border filled with a constant, the edge element, or mirrors of the input.

DML_PADDING1 (ops/padding1.py) is the same operator with a typed padding value: it shares
this module's rules (check_padding, check_value), reference (padded_array), stage and plan. A
desc of either gives its CONSTANT element's bits through its own `fill_bits()`, the one
place where the two differ.
"""

from __future__ import annotations

import math
import numbers
import struct
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.movement.padding import PADDING
from ..tensor_desc import TensorDesc, as_int_tuple, check_length
from ..types import F16, F32, TYPES_8, TYPES_11, DataType, FeatureLevel, PaddingMode
from .base import check_copy_tensors, gather, int_list
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

OP = "Padding"
UINT32_MAX = 2**32 - 1

SUPPORT = support_table(OP, ("input_tensor", "output_tensor"), [
    (FeatureLevel.FL_5_0, (1, 8), TYPES_11),
    (FeatureLevel.FL_3_1, (1, 8), TYPES_8),
    (FeatureLevel.FL_2_1, (4, 5), TYPES_8),
    (FeatureLevel.FL_1_0, (4, 5), {F32, F16}),
])

#: The level each padding mode is introduced at, for Padding and Padding1 (the seed:
#: SYMMETRIC "from DML_FEATURE_LEVEL_3_0"; microsoft/DirectML's Releases.md, DirectML 1.15.0:
#: FL 6.4 updated DML_OPERATOR_PADDING and DML_OPERATOR_PADDING1 to accept WRAP).
MODE_INTRODUCED = {
    PaddingMode.CONSTANT: FeatureLevel.FL_1_0,
    PaddingMode.EDGE: FeatureLevel.FL_1_0,
    PaddingMode.REFLECTION: FeatureLevel.FL_1_0,
    PaddingMode.SYMMETRIC: FeatureLevel.FL_3_0,
    PaddingMode.WRAP: FeatureLevel.FL_6_4,
}


@dataclass(frozen=True)
class PaddingOperatorDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    padding_mode: PaddingMode
    padding_value: float = field(compare=False)
    start_padding: tuple[int, ...]
    end_padding: tuple[int, ...]
    # Equality and hash use the value's exact identity: 0.0 == -0.0 and NaN != NaN
    # would otherwise let a cached operator write the wrong constant bits.
    _value_key: tuple = field(init=False, repr=False)

    def __post_init__(self):
        normalize_fields(self, OP)

    def fill_bits(self) -> tuple[int, int]:
        """The CONSTANT element's bits (low word, high word): DirectML's FLOAT padding value
        converted to the tensors' type by padding_element."""
        return value_bits(OP, padding_element, self.padding_value, self.input_tensor.data_type)


def normalize_fields(desc, op: str) -> None:
    """__post_init__ of the Padding and Padding1 descs: the mode as a PaddingMode, the
    paddings as tuples of ints (InvalidArgumentError naming `op` and the field), and the
    value's key for equality."""
    set_ = object.__setattr__
    set_(desc, "padding_mode", PaddingMode.coerce(desc.padding_mode, f"{op}: padding_mode"))
    for name in ("start_padding", "end_padding"):
        set_(desc, name, as_int_tuple(getattr(desc, name), f"{op}: {name}"))
    set_(desc, "_value_key", value_key(desc.padding_value))


def value_key(value) -> tuple:
    """A key that tells apart every value a padding may hold (0 from 0.0, -0.0 from 0.0,
    each NaN from itself)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return ("other", repr(value))
    if isinstance(value, numbers.Integral):
        return ("int", int(value))
    if isinstance(value, (float, np.float16, np.float32, np.float64)):
        return ("float", struct.pack("<d", float(value)))
    return ("real", type(value).__name__, repr(value))  # a Fraction, a long double: no double holds it


def grown(input_tensor: TensorDesc, start_padding, end_padding, fn: str):
    """(start, end, output desc) of the functional call `fn(x, start_padding, end_padding,
    ...)`: the output is the input grown by the paddings (validation checks them)."""
    start = as_int_tuple(start_padding, f"{fn}: start_padding")
    end = as_int_tuple(end_padding, f"{fn}: end_padding")
    if len(start) == len(end) == input_tensor.rank:
        # Negative paddings are left to the operator's check, which names them.
        out_sizes = tuple(n + max(s, 0) + max(e, 0) for n, s, e in zip(input_tensor.sizes, start, end, strict=True))
    else:
        out_sizes = input_tensor.sizes  # the operator names the length mismatch
    return start, end, TensorDesc(input_tensor.data_type, out_sizes)


def infer_output(input_tensor: TensorDesc, start_padding, end_padding, mode="constant",
                 value=0.0) -> PaddingOperatorDesc:
    """The desc of `pad(x, start_padding, end_padding, mode=, value=)`."""
    start, end, out_desc = grown(input_tensor, start_padding, end_padding, "pad")
    return PaddingOperatorDesc(input_tensor, out_desc, PaddingMode.coerce(mode, "pad: mode"), value, start, end)


# ---------------------------------------------------------------------------- padding values
def value_bits(op: str, convert, value, data_type: DataType) -> tuple[int, int]:
    """`convert(value, numpy dtype)` (padding_element, or Padding1's exact_element) as the
    bits of one `data_type` element: (low word, high word, for 64-bit types). The
    converter's TypeError / ValueError becomes an InvalidArgumentError naming `op`'s
    padding_value."""
    try:
        element = convert(value, data_type.numpy)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{op}: padding_value{exc}") from None
    raw = int(np.array(element).reshape(1).view(f"u{data_type.size}")[0])
    return raw & 0xFFFFFFFF, raw >> 32


def padding_element(value, dtype: np.dtype):
    """The padding value as one element of `dtype` (Padding's rule): floats rounded once,
    to nearest (float_element); integers truncated toward zero (10.6 -> 10), NaN, inf or a
    value outside the type's range a ValueError. Python ints are taken exactly.
    TypeError / ValueError carry the reason after the field name (": expected ...")."""
    dtype = check_real(value, dtype)
    if dtype.kind == "f":
        return float_element(value, dtype)
    if isinstance(value, numbers.Integral):
        whole = int(value)
    else:
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f" = {value!r} cannot be converted to the integer type {_type_name(dtype)}")
        whole = math.trunc(v)
    return integer_element(whole, dtype, f"{value!r} (truncated: {whole})")


def check_real(value, dtype) -> np.dtype:
    """`dtype` as a numpy dtype; TypeError unless `value` is a real number (not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f": expected a real number, got {value!r}")
    return np.dtype(dtype)


def integer_element(whole: int, dtype: np.dtype, shown: str):
    """The integer `whole` as one element of integer `dtype`; ValueError (showing the value
    as `shown`) outside the type's range."""
    info = np.iinfo(dtype)
    if not info.min <= whole <= info.max:
        raise ValueError(f" = {shown} is outside the range of {_type_name(dtype)} [{info.min}, {info.max}]")
    return np.array(whole, dtype=dtype)[()]


def float_element(value, dtype: np.dtype):
    """The real `value` rounded once to nearest (ties to even) in float `dtype`: beyond the
    largest finite value it becomes +-inf, NaN stays NaN. A double (Python and numpy
    floats) rounds once by numpy's conversion; a value a double cannot hold (an int beyond
    2^53, a Fraction) is rounded from its exact value, never through float64 first, which
    could round twice (2^60 + 2^36 + 1 is 2^60 + 2^37 in float32, 2^60 through float64)."""
    try:
        with np.errstate(over="ignore"):
            near = np.array(value, dtype=np.float64).astype(dtype)[()]
    except OverflowError:  # an int beyond float64
        near = dtype.type(np.inf if value > 0 else -np.inf)
    if isinstance(value, (float, np.float16, np.float32, np.float64)):
        return near  # a double: numpy's conversion rounded it once
    exact = exact_fraction(value)
    if exact is None:
        return near  # NaN or an infinity
    top = Fraction(2) ** np.finfo(dtype).maxexp  # where rounding to nearest gives infinity

    def error(c):
        return abs((top if c > 0 else -top) - exact if np.isinf(c) else Fraction(float(c)) - exact)

    def odd(c):
        return int(np.array(c).view(f"u{dtype.itemsize}")) & 1

    # Rounding twice is off by one step at most: the answer is `near` or a neighbour.
    with np.errstate(over="ignore"):
        candidates = (np.nextafter(near, dtype.type(-np.inf)), near, np.nextafter(near, dtype.type(np.inf)))
    return min(candidates, key=lambda c: (error(c), odd(c)))


def exact_fraction(value) -> Fraction | None:
    """The exact value of a real number (an int, a float of any width, a Fraction) as a
    Fraction; None for NaN and infinities."""
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    try:
        ratio = value.as_integer_ratio() if hasattr(value, "as_integer_ratio") else float(value).as_integer_ratio()
    except (ValueError, OverflowError):
        return None
    return Fraction(*ratio)


def _type_name(dtype: np.dtype) -> str:
    return DataType.from_numpy(dtype).name


# ---------------------------------------------------------------------------- validation
def check_padding(op: str, support, desc, feature_level: FeatureLevel) -> int:
    """The rules Padding and Padding1 share: both tensors, the support row of `support`, the
    mode's level, paddings in UINT with one entry per axis, and the output's sizes.
    Returns the rank."""
    inp, out = desc.input_tensor, desc.output_tensor
    rank = check_copy_tensors(op, support, feature_level, inp, out)
    mode = desc.padding_mode
    if feature_level < MODE_INTRODUCED[mode]:
        raise InvalidArgumentError(
            f"{op}: padding_mode {mode.name} is not supported at {FeatureLevel(feature_level).name}; "
            f"it needs {MODE_INTRODUCED[mode].name} or later")
    start, end = desc.start_padding, desc.end_padding
    check_length(op, "start_padding", start, rank)
    check_length(op, "end_padding", end, rank)
    for name, values in (("start_padding", start), ("end_padding", end)):
        for i, p in enumerate(values):
            if not 0 <= p <= UINT32_MAX:
                raise InvalidArgumentError(f"{op}: {name}[{i}] = {p} must be in 0..{UINT32_MAX} (UINT)")
    for i in range(rank):
        want = inp.sizes[i] + start[i] + end[i]
        if out.sizes[i] != want:
            raise InvalidArgumentError(
                f"{op}: output_tensor.sizes[{i}] = {out.sizes[i]} must equal input_tensor.sizes[{i}] + "
                f"start_padding[{i}] + end_padding[{i}] = {inp.sizes[i]} + {start[i]} + {end[i]} = {want}")
    return rank


def check_value(op: str, desc) -> None:
    """The padding value: a real number in every mode (the field is there even where only
    CONSTANT reads it), and one the desc's own rule can convert in CONSTANT mode."""
    value = desc.padding_value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"{op}: padding_value: expected a real number, got {value!r}")
    if desc.padding_mode == PaddingMode.CONSTANT:
        desc.fill_bits()


def validate(desc: PaddingOperatorDesc, feature_level: FeatureLevel) -> None:
    check_padding(OP, SUPPORT, desc, feature_level)
    check_value(OP, desc)


# ---------------------------------------------------------------------------- reference
def reference(x, start_padding, end_padding, mode=PaddingMode.CONSTANT, value=0.0) -> np.ndarray:
    """Output sizes = sizes + start + end; each output coordinate maps, per axis, to a
    source index c in [-start, n + end):

    - CONSTANT: `value` as one element of x's dtype (floats rounded once, to nearest, NaN
      stays NaN, too large becomes +-inf; integers truncated toward zero, a value that
      is not finite or does not fit the type raises ValueError) where any axis is out of
      range, else the element;
    - EDGE: clamp(c, 0, n-1);
    - REFLECTION: periodic mirror without the edge, period 2(n-1); n == 1 -> 0;
    - SYMMETRIC: periodic mirror with the edge, period 2n;
    - WRAP: periodic, period n (c mod n).

    Periodic folding makes any padding size valid (padding >= n folds again), which is
    what the seed page says DirectML does.
    """
    x = np.asarray(x)
    return padded_array(x, start_padding, end_padding, mode, lambda: padding_element(value, x.dtype))


def padded_array(x: np.ndarray, start_padding, end_padding, mode, fill) -> np.ndarray:
    """x grown by the paddings under `mode` (see `reference`); CONSTANT writes `fill()`, one
    element of x's dtype (its TypeError / ValueError becomes a ValueError), outside x."""
    mode = PaddingMode.coerce(mode)
    start = int_list(start_padding, x.ndim, "start_padding")
    end = int_list(end_padding, x.ndim, "end_padding")
    if any(p < 0 for p in start + end):
        raise ValueError(f"start_padding {start} / end_padding {end}: paddings are unsigned")
    coords = [np.arange(-s, n + e, dtype=np.int64) for s, n, e in zip(start, x.shape, end, strict=True)]
    out = gather(x, [_source_indices(c, n, mode) for c, n in zip(coords, x.shape, strict=True)])
    if mode == PaddingMode.CONSTANT:
        outside = np.zeros(out.shape, dtype=bool)
        for axis, (c, n) in enumerate(zip(coords, x.shape, strict=True)):
            shape = [1] * x.ndim
            shape[axis] = c.size
            outside |= ((c < 0) | (c >= n)).reshape(shape)
        try:
            out[outside] = fill()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"padding value{exc}") from None
    return out


def _source_indices(c: np.ndarray, n: int, mode: PaddingMode) -> np.ndarray:
    """Source index of each padded coordinate c on an axis of size n (integer math)."""
    if mode in (PaddingMode.CONSTANT, PaddingMode.EDGE):
        return np.clip(c, 0, n - 1)  # CONSTANT overwrites the outside ones afterwards
    if mode == PaddingMode.WRAP:
        return np.mod(c, n)
    if mode == PaddingMode.REFLECTION:
        if n == 1:  # period 2(n-1) = 0: the single element everywhere
            return np.zeros_like(c)
        period = 2 * (n - 1)
        m = np.mod(c, period)  # numpy's mod is non-negative for a positive divisor
        return np.where(m < n, m, period - m)
    period = 2 * n  # SYMMETRIC
    m = np.mod(c, period)
    return np.where(m < n, m, period - 1 - m)


# ---------------------------------------------------------------------------- API
def pad(x, start_padding, end_padding, *, mode="constant", value=0.0, device=None):
    """DML_PADDING: x grown by `start_padding` / `end_padding` elements on each axis.
    `mode`: a PaddingMode or "constant" | "edge" | "reflection" | "symmetric" | "wrap" (any case;
    numpy's "reflect" is "reflection": each name means what `np.pad`'s mode of that name does);
    `value` (CONSTANT only) is converted to x's type (integers: truncated toward zero)."""
    return Call([("x", x)], {"start_padding": start_padding, "end_padding": end_padding, "mode": mode, "value": value},
                device)


def padding(x, padding_mode=PaddingMode.CONSTANT, padding_value=0.0, start_padding=None, end_padding=None, *,
            device=None):
    """DML_PADDING under DirectMLX's name and argument names (`dml::Padding`, the `directml`
    package's `padding`): `pad(x, start_padding, end_padding, mode=padding_mode,
    value=padding_value)`."""
    for name, value in (("start_padding", start_padding), ("end_padding", end_padding)):
        if value is None:
            raise InvalidArgumentError(f"padding: {name} is required (one entry per axis of x)")
    return pad(x, start_padding, end_padding, mode=padding_mode, value=padding_value, device=device)


def arguments(desc: PaddingOperatorDesc) -> dict:
    return {"start_padding": desc.start_padding, "end_padding": desc.end_padding, "mode": desc.padding_mode,
            "value": desc.padding_value}


def from_cli(x: TensorDesc, a: dict) -> PaddingOperatorDesc:
    return infer_output(x, *cli_paddings(x, a), a["mode"], a["value"])


def cli_paddings(x: TensorDesc, a: dict) -> tuple:
    """(start, end) of `gpudml shader padding|padding1`: --start (default 1 per axis) and
    --end (default: --start)."""
    start = a["start"] or (1,) * x.rank
    return start, a["end"] or start


#: The `gpudml shader` options of Padding (Padding1 adds its own).
CLI_ARGS = (CliArg("--mode", "constant | edge | reflection (numpy: reflect) | symmetric | wrap", "str", "constant"),
            CliArg("--start", "start_padding, comma-separated (default 1 per axis)"),
            CliArg("--end", "end_padding, comma-separated (default: --start)"),
            CliArg("--value", "padding_value (CONSTANT)", "number", "0"))
CLI_EXAMPLE = "--shape 1,1,4,4 --mode reflection --start 0,0,1,2 --end 0,0,3,4"


_PAD_SOURCE = "001_1509160903300232.txt"
_PAD_INPUT = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], np.float32).reshape(1, 1, 4, 4)
_PAD_ARGS = {"start_padding": [0, 0, 1, 2], "end_padding": [0, 0, 3, 4]}
_PAD_OUTPUTS = {
    # Example 1 misses a comma after its first row on the page; values as printed.
    (PaddingMode.CONSTANT, 9.0): [
        [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
        [9, 9, 1, 2, 3, 4, 9, 9, 9, 9],
        [9, 9, 5, 6, 7, 8, 9, 9, 9, 9],
        [9, 9, 1, 2, 3, 4, 9, 9, 9, 9],
        [9, 9, 5, 6, 7, 8, 9, 9, 9, 9],
        [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
        [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
        [9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
    ],
    (PaddingMode.EDGE, 0.0): [
        [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
        [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [1, 1, 1, 2, 3, 4, 4, 4, 4, 4],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
        [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
    ],
    (PaddingMode.REFLECTION, 0.0): [
        [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
        [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
        [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
        [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
        [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
        [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
        [7, 6, 5, 6, 7, 8, 7, 6, 5, 6],
        [3, 2, 1, 2, 3, 4, 3, 2, 1, 2],
    ],
    # From DML_FEATURE_LEVEL_3_0.
    (PaddingMode.SYMMETRIC, 0.0): [
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
        [2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
        [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
    ],
}


def page_examples(key: str, source: str, **extra) -> tuple[Example, ...]:
    """The four examples the Padding and Padding1 pages share (one input, one pair of
    paddings, a mode each; Example 1 pads with 9), as Examples of operator `key` from page
    `source`, with `extra` functional arguments."""
    return tuple(
        Example(f"{key}-{i}", _PAD_INPUT, {**_PAD_ARGS, "mode": mode, "value": value, **extra},
                np.array(rows, np.float32).reshape(1, 1, 8, 10), source)
        for i, ((mode, value), rows) in enumerate(_PAD_OUTPUTS.items(), start=1))


SPEC = OpSpec(
    name=OP, key="padding", desc=PaddingOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=pad, aliases=(padding,), tensors=("x",), arguments=arguments,
    planner=PADDING, cli=Cli(CLI_ARGS, from_cli, CLI_EXAMPLE), page="DML_PADDING_OPERATOR_DESC",
    examples=page_examples("padding", _PAD_SOURCE),
)
