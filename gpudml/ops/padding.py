"""DML_PADDING_OPERATOR_DESC (SPEC.md section 5, seed 001)."""

from __future__ import annotations

import math
import numbers
import struct
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgumentError, UnsupportedError
from ..tensor_desc import TensorDesc, as_int_tuple, check_length
from ..types import F16, F32, TYPES_8, TYPES_11, DataType, FeatureLevel, PaddingMode
from .base import KernelPlan, SupportRow, SupportTable, check_copy_tensors, ranks
from .movement import movement_dispatch

OP = "Padding"
UINT32_MAX = 2**32 - 1


def _row(level, dims, types):
    return SupportRow(level, dims, {"input_tensor": types, "output_tensor": types})


SUPPORT = SupportTable(OP, [
    _row(FeatureLevel.FL_5_0, ranks(1, 8), TYPES_11),
    _row(FeatureLevel.FL_3_1, ranks(1, 8), TYPES_8),
    _row(FeatureLevel.FL_2_1, ranks(4, 5), TYPES_8),
    _row(FeatureLevel.FL_1_0, ranks(4, 5), frozenset({F32, F16})),
])

#: The level each padding mode is introduced at (the seed: SYMMETRIC "from DML_FEATURE_LEVEL_3_0").
MODE_INTRODUCED = {
    PaddingMode.CONSTANT: FeatureLevel.FL_1_0,
    PaddingMode.EDGE: FeatureLevel.FL_1_0,
    PaddingMode.REFLECTION: FeatureLevel.FL_1_0,
    PaddingMode.SYMMETRIC: FeatureLevel.FL_3_0,
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
        set_ = object.__setattr__
        set_(self, "padding_mode", PaddingMode.coerce(self.padding_mode, f"{OP}: padding_mode"))
        for name in ("start_padding", "end_padding"):
            set_(self, name, as_int_tuple(getattr(self, name), f"{OP}: {name}"))
        set_(self, "_value_key", _value_key(self.padding_value))


def _value_key(value) -> tuple:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return ("other", repr(value))
    if isinstance(value, numbers.Integral):
        return ("int", int(value))
    return ("float", struct.pack("<d", float(value)))


def padding_value_bits(value, data_type: DataType) -> tuple[int, int]:
    """The padding value as the bits of one `data_type` element: (low word, high word).

    Floats: rounded to nearest from the given value (NaN stays NaN, too large becomes
    +-inf). Integers: truncated toward zero (10.6 -> 10); NaN, inf or a value outside
    the type's range is an InvalidArgumentError. Python ints are taken exactly.
    """
    where = f"{OP}: padding_value"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"{where}: expected a real number, got {value!r}")
    dtype = data_type.numpy
    if data_type.is_float:
        try:
            with np.errstate(over="ignore"):
                element = np.array(value, dtype=np.float64).astype(dtype)
        except OverflowError:
            raise InvalidArgumentError(f"{where} = {value!r} does not fit {data_type.name}") from None
    else:
        if isinstance(value, numbers.Integral):
            whole = int(value)
        else:
            v = float(value)
            if not math.isfinite(v):
                raise InvalidArgumentError(
                    f"{where} = {value!r} cannot be converted to the integer type {data_type.name}")
            whole = math.trunc(v)
        info = np.iinfo(dtype)
        if not info.min <= whole <= info.max:
            raise InvalidArgumentError(
                f"{where} = {value!r} (truncated: {whole}) is outside the range of {data_type.name} "
                f"[{info.min}, {info.max}]")
        element = np.array(whole, dtype=dtype)
    raw = int(element.reshape(1).view(f"u{data_type.size}")[0])
    return raw & 0xFFFFFFFF, raw >> 32


def validate(desc: PaddingOperatorDesc, feature_level: FeatureLevel) -> None:
    inp, out = desc.input_tensor, desc.output_tensor
    rank = check_copy_tensors(OP, SUPPORT, feature_level, inp, out)
    mode = desc.padding_mode
    if feature_level < MODE_INTRODUCED[mode]:
        raise InvalidArgumentError(
            f"{OP}: padding_mode {mode.name} is not supported at {FeatureLevel(feature_level).name}; "
            f"it needs {MODE_INTRODUCED[mode].name} or later")
    start, end = desc.start_padding, desc.end_padding
    check_length(OP, "start_padding", start, rank)
    check_length(OP, "end_padding", end, rank)
    for name, values in (("start_padding", start), ("end_padding", end)):
        for i, p in enumerate(values):
            if not 0 <= p <= UINT32_MAX:
                raise InvalidArgumentError(f"{OP}: {name}[{i}] = {p} must be in 0..{UINT32_MAX} (UINT)")
    for i in range(rank):
        want = inp.sizes[i] + start[i] + end[i]
        if out.sizes[i] != want:
            raise InvalidArgumentError(
                f"{OP}: output_tensor.sizes[{i}] = {out.sizes[i]} must equal input_tensor.sizes[{i}] + "
                f"start_padding[{i}] + end_padding[{i}] = {inp.sizes[i]} + {start[i]} + {end[i]} = {want}")
    value = desc.padding_value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        # A FLOAT field in every mode, even where only CONSTANT reads it.
        raise InvalidArgumentError(f"{OP}: padding_value: expected a real number, got {value!r}")
    if mode == PaddingMode.CONSTANT:
        padding_value_bits(value, inp.data_type)


def _merged_axes(desc: PaddingOperatorDesc) -> list[tuple[int, int, int, int, int, int]]:
    """(start, end, input size, input stride, output size, output stride) per axis, after
    dropping output axes of size 1 (always coordinate 0) and merging unpadded neighbours
    that are contiguous in both tensors: less coordinate math per element, same result."""
    inp, out = desc.input_tensor, desc.output_tensor
    axes = [ax for ax in zip(desc.start_padding, desc.end_padding, inp.sizes, inp.effective_strides,
                             out.sizes, out.effective_strides, strict=True) if ax[4] > 1]
    merged: list[tuple[int, int, int, int, int, int]] = []
    for ax in axes:
        if merged:
            s0, e0, n0, st0, m0, ost0 = merged[-1]
            s1, e1, n1, st1, m1, ost1 = ax
            if s0 == e0 == s1 == e1 == 0 and st0 == n1 * st1 and ost0 == m1 * ost1:
                merged[-1] = (0, 0, n0 * n1, st1, m0 * m1, ost1)
                continue
        merged.append(ax)
    return merged or [(0, 0, 1, 0, 1, 0)]


def plan(desc: PaddingOperatorDesc, caps) -> KernelPlan:
    """Per (merged) axis the kernel gets (start padding, input size, fold period, input stride).

    The period is 2(n-1) for REFLECTION (1 when n == 1, so that no modulo is by zero)
    and 2n for SYMMETRIC. `fold` compiles in the modulo only when some axis of size > 1
    reaches a coordinate a whole period away (padding >= n or so); a size-1 axis never
    needs it (the kernel clamps to its single element).
    """
    inp, mode = desc.input_tensor, desc.padding_mode
    mirror = 1 if mode == PaddingMode.SYMMETRIC else 0
    merged = _merged_axes(desc)
    uniforms, fold = [], False
    for start, end, n, stride, _, _ in merged:
        if mode == PaddingMode.REFLECTION:
            period = max(2 * (n - 1), 1)
        elif mode == PaddingMode.SYMMETRIC:
            period = 2 * n
        else:
            period = 0
        if period > UINT32_MAX:
            raise UnsupportedError(f"{OP}: an input axis of {n} elements is too long to fold in 32 bits")
        # The largest mirrored coordinate x the kernel sees on this axis (see padding.wgsl.j2).
        fold |= period > 0 and n > 1 and max(start - mirror, n - 1 + end) >= period
        uniforms += [start, n, period, stride]
    value = padding_value_bits(desc.padding_value, inp.data_type) if mode == PaddingMode.CONSTANT else (0, 0)
    kernel_in = TensorDesc(inp.data_type, [ax[2] for ax in merged], [ax[3] for ax in merged])
    kernel_out = TensorDesc(inp.data_type, [ax[4] for ax in merged], [ax[5] for ax in merged])
    dispatch = movement_dispatch(
        "padding.wgsl.j2", kernel_in, kernel_out,
        [("pad_axes", tuple(uniforms)), ("pad_value", value)],
        params={"mode": mode.name, "fold": fold},
    )
    return KernelPlan((dispatch,))
