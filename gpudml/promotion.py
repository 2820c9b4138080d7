"""numpy 2's type promotion for gpudml's values: what numpy would take an operand to be
(`operand_dtype`), the dtype an operation computes in (numpy's own ufunc loop resolution,
`loop_dtypes`), an operand converted to that dtype (host values by numpy's own conversion,
`host_array`, beside a Tensor uploaded, `beside`; Tensors and Expressions by DirectML's CAST
on the GPU, `cast`), and whether
the device and a DirectML operator take that dtype (`require`: an UnsupportedError naming
numpy's result type where they do not; never a silent truncation).

NEP 50 (numpy 2): Python `int` and `float` are weak scalars (they take the other operand's
dtype: int8 tensor + 1 is int8, int8 tensor + 300 an OverflowError as in numpy, int tensor +
1.5 float64); numpy scalars, numpy arrays, Tensors and Expressions are strong (int32 + int64
array is int64, int32 + np.float32 is float64). Python `bool` is numpy's bool.

numpy's bool has no DirectML data type: a bool Tensor or Expression is UINT8 0/1 (as
DirectML's comparisons write it and ONNX Runtime's DirectML provider carries ONNX BOOL),
flagged `is_bool`; such a Tensor's `dtype` is numpy's bool and its `numpy()` a bool array.
"""

from __future__ import annotations

import numpy as np

from . import functional
from .errors import UnsupportedError
from .graph import Expression
from .ops import SPECS
from .runtime import Tensor
from .types import DataType

BOOL = np.dtype(np.bool_)

#: Each functional form's spec (the support tables `require` reads).
_SPEC_OF = {spec.functional_name: spec for spec in SPECS}


def is_device(value) -> bool:
    """A Tensor or an Expression: an operand that lives on (or will be computed by) a device."""
    return isinstance(value, (Tensor, Expression))


def is_bool(value) -> bool:
    """A bool Tensor or Expression (UINT8 0/1 flagged `is_bool`)."""
    return bool(getattr(value, "is_bool", False))


def mark_bool(value, flag: bool = True):
    """`value` (a Tensor or Expression just made) flagged as numpy bool, or not; returned."""
    value.is_bool = flag
    return value


def operand_dtype(value):
    """What numpy takes `value` to be in an operation: a numpy dtype (strong: Tensors,
    Expressions, numpy arrays and scalars; Python bool is numpy's bool), the type `int` or
    `float` (a weak Python scalar, NEP 50), or None (not an operand gpudml takes)."""
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, Expression):
        return BOOL if value.is_bool else value.desc.data_type.numpy
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, (int, float)):
        return type(value)
    return None


def loop_dtypes(ufunc: np.ufunc, operands) -> tuple[np.dtype, ...]:
    """numpy's loop for `ufunc` on these operands: the input dtypes (each operand is cast to
    its own) and, last, the output dtype. numpy's own resolution (`ufunc.resolve_dtypes`), so
    its TypeErrors (bool - bool, float & int, ...) are numpy's."""
    kinds = tuple(operand_dtype(v) for v in operands)
    return ufunc.resolve_dtypes((*kinds, None))


def data_type(dtype: np.dtype, what: str) -> DataType:
    """The DirectML type carrying numpy `dtype` (bool: UINT8); UnsupportedError where none does."""
    if dtype == BOOL:
        return DataType.UINT8
    try:
        return DataType.from_numpy(dtype)
    except ValueError:
        raise UnsupportedError(f"{what}: numpy's result type is {dtype}, which no DirectML data type "
                               f"holds") from None


def device_of(values):
    """The Device of the first Tensor or Expression among `values`."""
    for v in values:
        if isinstance(v, Tensor):
            return v.device
        if isinstance(v, Expression):
            return v.graph.device
    raise TypeError("no gpudml Tensor or Expression among the operands")


def require(form: str, dtype: np.dtype, device, what: str, hint: str = "") -> None:
    """UnsupportedError unless the device holds `dtype` and DirectML's operator of `form`
    takes it (its first input's types at the device's feature level): the message names
    numpy's result type, the operator, the types it takes and what to do instead."""
    dt = data_type(dtype, what)
    fix = hint or "cast the operands to a type it takes first (e.g. dml.cast(x, np.float32))"
    if not device.supports_data_type(dt):
        raise UnsupportedError(f"{what}: numpy's result type is {dtype} ({dt.name}), which this adapter "
                               f"({device.adapter_name}) does not support; {fix}")
    spec = _SPEC_OF.get(form)
    if spec is None:  # not registered: the operator's call names the form (python_operators._form)
        return
    row = spec.support.row_for(device.feature_level)
    types = next(iter(row.types.values()))
    if dt not in types:
        names = ", ".join(t.name for t in DataType if t in types)
        raise UnsupportedError(
            f"{what}: numpy's result type is {dtype} ({dt.name}); DirectML's {spec.name} does not take "
            f"{dt.name} at {device.feature_level.name} (it takes {names}); {fix}")


def host_array(value, dtype: np.dtype) -> np.ndarray:
    """A host operand (Python or numpy scalar, numpy array) as numpy converts it for a loop of
    `dtype` (a Python int beyond the type: numpy's OverflowError), at least 1-D (DirectML
    tensors have 1..8 dimensions; one element broadcasts); bool as UINT8 0/1."""
    if isinstance(value, (bool, int, float)):
        array = np.asarray(value, dtype=dtype)  # numpy 2: OverflowError for an int out of range
    else:
        array = np.asarray(value).astype(dtype, copy=False)
    if array.dtype == BOOL:
        array = array.view(np.uint8)
    return array.reshape(array.shape or (1,))


def cast(value, dtype):
    """A Tensor or an Expression as numpy dtype `dtype`, converted on the GPU as numpy's
    astype converts (DirectML's CAST; to bool: x != 0); `value` itself if it is `dtype`
    already. The result is a Tensor or an Expression as `value` is, flagged bool when
    `dtype` is."""
    dtype = np.dtype(dtype)
    if operand_dtype(value) == dtype:
        return value
    form = functional.FUNCTIONS
    if dtype == BOOL:
        zero = np.zeros([1], value.desc.data_type.numpy)
        return mark_bool(form["logical_not"](form["logical_equals"](value, beside(zero, value))))
    return mark_bool(form["cast"](value, data_type(dtype, "cast")), False)


def beside(array: np.ndarray, anchor):
    """A host array as an operand next to `anchor`: a Tensor on its device beside a Tensor
    (a functional form returns numpy when its first input is numpy), as it is beside an
    Expression (a graph constant)."""
    return anchor.device.tensor(array) if isinstance(anchor, Tensor) else array


__all__ = ["BOOL", "beside", "cast", "data_type", "device_of", "host_array", "is_bool", "is_device", "loop_dtypes",
           "mark_bool", "operand_dtype", "require"]
