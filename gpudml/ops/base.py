"""Checks and facts that several operator modules share. No wgpu."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from ..tensor_desc import TensorDesc, as_int, as_int_tuple, check_same_rank, check_tensor_desc
from ..types import FeatureLevel
from .spec import OUTPUT_FIELDS, SupportTable


def check_copy_tensors(op: str, support: SupportTable, level: FeatureLevel, inp: TensorDesc, out: TensorDesc) -> int:
    """The checks every operator whose output has its input's type shares: both descs,
    one DimensionCount, one data type, the support row. Returns the rank."""
    return check_one_type(op, support, level, {"input_tensor": inp, "output_tensor": out})


def check_one_type(op: str, support: SupportTable, level: FeatureLevel, named: dict[str, TensorDesc],
                   optional: tuple[str, ...] = ()) -> int:
    """The tensors `named` (field: desc, inputs first, outputs `output_*` (spec.OUTPUT_FIELDS); a field of
    `optional` may be None: left out) valid, of one DimensionCount and the first's data
    type, in the support row. Returns the rank."""
    named = {field: td for field, td in named.items() if td is not None or field not in optional}
    for field, td in named.items():
        check_tensor_desc(op, field, td, is_output=field.startswith(OUTPUT_FIELDS))
    rank = check_same_rank(op, named)
    first_field, first = next(iter(named.items()))
    for field, td in named.items():
        if td.data_type != first.data_type:
            raise InvalidArgumentError(f"{op}: {field}.data_type {td.data_type.name} must equal "
                                       f"{first_field}.data_type {first.data_type.name}")
    support.check(level, rank, {f: td.data_type for f, td in named.items()})
    return rank


def numpy_axis(axis, rank: int, where: str, tensor: str = "x") -> int:
    """A functional form's axis as DirectML's: an integer in [-rank, rank), a negative one
    counting from the end as in numpy (descs take DirectML's axis only); InvalidArgumentError
    naming `where` and the `tensor` whose rank it indexes otherwise."""
    axis = as_int(axis, f"{where}: axis")
    if not -rank <= axis < rank:
        raise InvalidArgumentError(
            f"{where}: axis = {axis} is outside [{-rank}, {rank - 1}] ({tensor} has {rank} dimensions)")
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


def check_parts(op: str, support: SupportTable, level: FeatureLevel, whole: tuple[str, TensorDesc],
                parts: tuple[str, object], count_name: str, axis: int, parts_are_outputs: bool) -> int:
    """The rules JOIN and SPLIT share between one tensor (`whole`: (field, desc)) and a list
    of tensors (`parts`: (field, value); the page's count of them is `count_name`): a
    non-empty list of valid TensorDescs, one DimensionCount and one data type for all, the
    support row, `axis` an axis, and every part of the whole's sizes except on `axis`,
    where the parts' sizes add up to the whole's. Returns the rank."""
    (whole_field, whole_desc), (parts_field, tensors) = whole, parts
    if not isinstance(tensors, tuple):
        raise InvalidArgumentError(f"{op}: {parts_field} must be a list of TensorDescs, got {type(tensors).__name__}")
    if not tensors:
        raise InvalidArgumentError(f"{op}: {count_name} is 0 ({parts_field} is empty); it must be greater than 0")
    check_tensor_desc(op, whole_field, whole_desc, is_output=not parts_are_outputs)
    named = {f"{parts_field}[{i}]": t for i, t in enumerate(tensors)}
    for name, t in named.items():
        check_tensor_desc(op, name, t, is_output=parts_are_outputs)
    rank = check_same_rank(op, {**named, whole_field: whole_desc})
    for name, t in named.items():
        if t.data_type != whole_desc.data_type:
            raise InvalidArgumentError(f"{op}: {name}.data_type {t.data_type.name} must equal "
                                       f"{whole_field}.data_type {whole_desc.data_type.name}")
    types = {parts_field: tensors[0].data_type, whole_field: whole_desc.data_type}  # the input first
    support.check(level, rank, dict(reversed(types.items())) if parts_are_outputs else types)
    if not 0 <= axis < rank:
        raise InvalidArgumentError(f"{op}: axis = {axis} must be in [0, DimensionCount - 1] = [0, {rank - 1}]")
    for name, t in named.items():
        for d, (m, n) in enumerate(zip(t.sizes, whole_desc.sizes, strict=True)):
            if d != axis and m != n:
                raise InvalidArgumentError(f"{op}: {name}.sizes[{d}] = {m} must equal {whole_field}.sizes[{d}] = {n} "
                                           f"(the sizes may differ on axis {axis} only)")
    total = sum(t.sizes[axis] for t in tensors)
    if total != whole_desc.sizes[axis]:
        terms = " + ".join(str(t.sizes[axis]) for t in tensors)
        raise InvalidArgumentError(f"{op}: {whole_field}.sizes[{axis}] = {whole_desc.sizes[axis]} must equal the sum "
                                   f"of {parts_field}[i].sizes[{axis}] = {terms} = {total}")
    return rank


# ---------------------------------------------------------------------------- reducing operators
def check_reduced_shape(op: str, inp: TensorDesc, out: TensorDesc, axes: tuple[int, ...]) -> None:
    """The rules every reducing operator's page states (input and output of one rank): at
    least one axis, each in [0, DimensionCount - 1] and named once; the output's sizes are
    the input's, with 1 on each reduced axis."""
    rank = inp.rank
    if not axes:
        raise InvalidArgumentError(f"{op}: axes must name at least one axis (AxisCount is 0)")
    for i, axis in enumerate(axes):
        if not 0 <= axis < rank:
            raise InvalidArgumentError(
                f"{op}: axes[{i}] = {axis} is outside [0, {rank - 1}] (DimensionCount {rank})")
        if axis in axes[:i]:
            raise InvalidArgumentError(f"{op}: axes[{i}] = {axis} repeats an axis (axes {list(axes)})")
    for i, (n_in, n_out) in enumerate(zip(inp.sizes, out.sizes, strict=True)):
        if i in axes and n_out != 1:
            raise InvalidArgumentError(
                f"{op}: output_tensor.sizes[{i}] = {n_out} must be 1 on reduced axis {i} "
                f"(input {list(inp.sizes)}, output {list(out.sizes)})")
        if i not in axes and n_out != n_in:
            raise InvalidArgumentError(
                f"{op}: output_tensor.sizes[{i}] = {n_out} must equal input_tensor.sizes[{i}] = {n_in} "
                f"on kept axis {i} (input {list(inp.sizes)}, output {list(out.sizes)})")


def normalize_axes(axes, rank: int, field: str) -> tuple[int, ...]:
    """numpy's axes as DirectML's (the functional forms): None is every axis, an int is one
    axis, a negative axis counts from the end; each in [-rank, rank), none twice."""
    if axes is None:
        return tuple(range(rank))
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, (bool, np.bool_)):
        axes = (int(axes),)
    axes = as_int_tuple(axes, field)
    out: list[int] = []
    for i, a in enumerate(axes):
        if not -rank <= a < rank:
            raise InvalidArgumentError(
                f"{field}[{i}] = {a} is outside [{-rank}, {rank - 1}] (x has {rank} dimensions)")
        a = a + rank if a < 0 else a
        if a in out:
            raise InvalidArgumentError(f"{field} {list(axes)} name axis {a} twice")
        out.append(a)
    return tuple(out)


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
