"""Checks and facts that several operator modules share. No wgpu."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from ..tensor_desc import TensorDesc, as_int, check_same_rank, check_tensor_desc
from ..types import FeatureLevel
from .spec import SupportTable


def element_bits(desc: TensorDesc) -> int:
    return desc.data_type.size * 8


def check_copy_tensors(op: str, support: SupportTable, level: FeatureLevel, inp: TensorDesc, out: TensorDesc) -> int:
    """The checks every operator whose output has its input's type shares: both descs,
    one DimensionCount, one data type, the support row. Returns the rank."""
    check_tensor_desc(op, "input_tensor", inp)
    check_tensor_desc(op, "output_tensor", out, is_output=True)
    rank = check_same_rank(op, {"input_tensor": inp, "output_tensor": out})
    if inp.data_type != out.data_type:
        raise InvalidArgumentError(
            f"{op}: output_tensor.data_type {out.data_type.name} must equal "
            f"input_tensor.data_type {inp.data_type.name}")
    support.check(level, rank, {"input_tensor": inp.data_type, "output_tensor": out.data_type})
    return rank


def numpy_axis(axis, rank: int, field: str) -> int:
    """A functional form's axis as DirectML's: an integer in [-rank, rank), a negative one
    counting from the end as in numpy (descs take DirectML's axis only)."""
    axis = as_int(axis, field)
    if not -rank <= axis < rank:
        raise InvalidArgumentError(f"{field} = {axis} is outside [{-rank}, {rank - 1}] (x has {rank} dimensions)")
    return axis + rank if axis < 0 else axis


def integer_array(value, where: str, what: str) -> np.ndarray:
    """A functional form's integer argument (lengths, indices) as a numpy array of integers;
    InvalidArgumentError naming `where` otherwise, `what` saying what it must hold."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{where}: not an integer array ({exc})") from None
    if array.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{where}: {what}, got dtype {array.dtype}")
    return array


# ---------------------------------------------------------------------------- for the references
def int_list(values, rank: int, field: str) -> list[int]:
    """`values` as a list of Python ints of length `rank` (ValueError otherwise)."""
    out = [int(v) for v in np.asarray(values).reshape(-1)]
    if len(out) != rank:
        raise ValueError(f"{field}: expected {rank} entries (the input rank), got {len(out)}")
    return out


def gather(x: np.ndarray, index_per_axis: list[np.ndarray]) -> np.ndarray:
    """x at the outer product of per-axis source indices (a fresh array). Fancy indexing
    copies raw elements, which is what makes the data-movement references bit-exact."""
    if x.ndim == 0:
        return x.copy()
    return x[np.ix_(*index_per_axis)]
