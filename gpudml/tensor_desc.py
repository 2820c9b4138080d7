"""DML_BUFFER_TENSOR_DESC: TensorDesc, DMLCalcBufferTensorSize and layout helpers.

The constructor normalizes values (so a desc can be built from lists or numpy
integers) and refuses a size below 1 at once (no description of any operator
can hold one; the message names the index: `TensorDesc.sizes[2] = -1`); the
other rules of a buffer tensor description (1 to 8 dimensions, non-negative
strides whose element offsets fit 32 bits, a total size no smaller than DMLCalcBufferTensorSize, the flags, the
base offset alignment, and no two elements of an output at one address) are
checked by `check_tensor_desc`, called by each operator's `validate` so that a
message can name the operator and the field.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .errors import InvalidArgumentError
from .types import DataType

MAX_DIMENSIONS = 8
MAX_ELEMENTS = 2**32 - 1  # DirectML's limit on the element count of a tensor
TENSOR_FLAG_OWNED_BY_DML = 0x1


def check_window_fields(op: str, desc, fields, count: int, count_name: str) -> None:
    """The per-axis UINT fields of a windowed desc (window sizes, strides, dilations, paddings):
    `count` entries each (`count_name` says what fixes it), each a UINT, of at least 1 but the
    paddings; InvalidArgumentError naming the field, the rule and the values."""
    for field in fields:
        values = getattr(desc, field)
        if len(values) != count:
            raise InvalidArgumentError(f"{op}: {field} has {len(values)} entries {list(values)}; {count_name} is "
                                       f"{count}")
        least = 0 if field.endswith("padding") else 1
        for i, v in enumerate(values):
            if not least <= v <= MAX_ELEMENTS:
                raise InvalidArgumentError(f"{op}: {field}[{i}] = {v} must be in [{least}, {MAX_ELEMENTS}] (a UINT"
                                           f"{'' if least == 0 else ' of at least 1'})")


def as_int_tuple(values, field: str) -> tuple[int, ...]:
    """A tuple of Python ints from a list/tuple/array of integers; InvalidArgumentError otherwise."""
    if isinstance(values, (str, bytes)) or values is None:
        raise InvalidArgumentError(f"{field}: expected a sequence of integers, got {values!r}")
    try:
        items = list(values)
    except TypeError:
        raise InvalidArgumentError(f"{field}: expected a sequence of integers, got {values!r}") from None
    out = []
    for i, v in enumerate(items):
        if isinstance(v, (bool, np.bool_)):
            raise InvalidArgumentError(f"{field}[{i}]: expected an integer, got {v!r}")
        try:
            out.append(operator.index(v))
        except TypeError:
            raise InvalidArgumentError(f"{field}[{i}]: expected an integer, got {v!r}") from None
    return tuple(out)


def positive_sizes(sizes: tuple[int, ...], field: str) -> tuple[int, ...]:
    """`sizes` when every one is at least 1 (DirectML has no empty or negative dimension);
    InvalidArgumentError naming `field`, the index and the value otherwise."""
    for i, n in enumerate(sizes):
        if n < 1:
            raise InvalidArgumentError(f"{field}[{i}] = {n} must be >= 1 (DirectML tensors have no empty or "
                                       f"negative dimension; sizes {list(sizes)})")
    return sizes


def as_int(value, field: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{field}: expected an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{field}: expected an integer, got {value!r}") from None


def packed_strides(sizes) -> tuple[int, ...]:
    """Row-major element strides, last axis fastest."""
    strides, step = [], 1
    for s in reversed(sizes):
        strides.append(step)
        step *= s
    return tuple(reversed(strides))


class MergedAxis(NamedTuple):
    size: int
    strides: tuple[int, ...]  # one stride per layout
    axes: tuple[int, ...]  # the original axes it stands for


def merge_axes(sizes, *strides, fixed=()) -> list[MergedAxis]:
    """The fewest, longest axes that address the same elements in the same order.

    `sizes[i]` is axis i's size; each of `strides` gives one layout's stride per axis (a
    tensor's, or an index map's): every layout walks the same elements. Size-1 axes drop
    out (their coordinate is always 0), and a neighbour pair merges where, in every layout,
    the outer axis steps over exactly the inner one (outer stride = inner stride x inner
    size). Axes in `fixed` never merge and stay even at size 1. A problem whose axes all
    drop is one axis of size 1 and stride 0.
    """
    merged: list[MergedAxis] = []
    fixed = set(fixed)
    for i, n in enumerate(sizes):
        st = tuple(layout[i] for layout in strides)
        if i in fixed:
            merged.append(MergedAxis(n, st, (i,)))
            continue
        if n == 1:
            continue
        if merged and merged[-1].axes[-1] not in fixed and all(
                o == s * n for o, s in zip(merged[-1].strides, st, strict=True)):
            outer = merged.pop()
            merged.append(MergedAxis(outer.size * n, st, outer.axes + (i,)))
            continue
        merged.append(MergedAxis(n, st, (i,)))
    return merged or [MergedAxis(1, (0,) * len(strides), ())]


def view_strides(old_sizes, old_strides, new_sizes) -> list[int] | None:
    """Strides that read a strided tensor with other sizes of its element count, where
    they exist (numpy's no-copy reshape: merged axes must be contiguous in each other);
    None where they do not. (A reshape as a view: the ONNX importer's, Tensor.reshape's.)"""
    old = [(n, s) for n, s in zip(old_sizes, old_strides) if n != 1]
    new = [n for n in new_sizes if n != 1]
    od, ost = [n for n, _ in old], [s for _, s in old]
    strides = [0] * len(new)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new) and oi < len(od):
        np_, op = new[ni], od[oi]
        while np_ != op:
            if np_ < op:
                np_ *= new[nj]
                nj += 1
            else:
                op *= od[oj]
                oj += 1
        if any(ost[k] != od[k + 1] * ost[k + 1] for k in range(oi, oj - 1)):
            return None
        strides[nj - 1] = ost[oj - 1]
        for nk in range(nj - 1, ni, -1):
            strides[nk - 1] = strides[nk] * new[nk]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    it = iter(strides)
    return [0 if n == 1 else next(it) for n in new_sizes]


def calc_buffer_tensor_size(data_type: DataType, sizes, strides=None) -> int:
    """DMLCalcBufferTensorSize: bytes of the minimal buffer, rounded up to a multiple of 4."""
    if strides is None:
        last = math.prod(sizes) - 1
    else:
        last = sum((n - 1) * s for n, s in zip(sizes, strides))
    nbytes = (last + 1) * DataType(data_type).size
    return (nbytes + 3) & ~3


def bound_bytes(nbytes: int) -> int:
    """Bytes of a buffer of `nbytes` as kernels see it: whole 16-byte blocks (kernels may
    read any buffer as array<vec4<u32>>), at least one. Buffers are allocated so (the
    runtime's pool) and bound so (the runtime, the kernel builder)."""
    return max(16, (nbytes + 15) & ~15)


@dataclass(frozen=True, init=False)
class TensorDesc:
    """DML_BUFFER_TENSOR_DESC. `strides=None` means packed row-major. A size below 1 is an
    InvalidArgumentError here, naming its index (`TensorDesc.sizes[2] = -1 must be >= 1`);
    the other rules are checked by the operator that takes the desc, naming its field."""

    data_type: DataType
    sizes: tuple[int, ...]
    strides: tuple[int, ...] | None
    total_tensor_size_in_bytes: int
    flags: int
    guaranteed_base_offset_alignment: int

    def __init__(
        self,
        data_type,
        sizes,
        strides=None,
        *,
        total_tensor_size_in_bytes=None,
        flags=0,
        guaranteed_base_offset_alignment=0,
    ):
        dt = DataType.coerce(data_type, "TensorDesc.data_type")
        sz = positive_sizes(as_int_tuple(sizes, "TensorDesc.sizes"), "TensorDesc.sizes")
        st = None if strides is None else as_int_tuple(strides, "TensorDesc.strides")
        if total_tensor_size_in_bytes is None:
            ok = sz and (st is None or (len(st) == len(sz) and min(st) >= 0))
            total = calc_buffer_tensor_size(dt, sz, st) if ok else 0
        else:
            total = as_int(total_tensor_size_in_bytes, "TensorDesc.total_tensor_size_in_bytes")
        set_ = object.__setattr__
        set_(self, "data_type", dt)
        set_(self, "sizes", sz)
        set_(self, "strides", st)
        set_(self, "total_tensor_size_in_bytes", total)
        set_(self, "flags", as_int(flags, "TensorDesc.flags"))
        set_(self, "guaranteed_base_offset_alignment",
             as_int(guaranteed_base_offset_alignment, "TensorDesc.guaranteed_base_offset_alignment"))

    @classmethod
    def packed(cls, data_type, sizes) -> TensorDesc:
        return cls(data_type, sizes)

    @property
    def rank(self) -> int:
        return len(self.sizes)

    @property
    def element_count(self) -> int:
        return math.prod(self.sizes)

    @property
    def effective_strides(self) -> tuple[int, ...]:
        return packed_strides(self.sizes) if self.strides is None else self.strides

    @property
    def is_packed(self) -> bool:
        """True when element k of the logical tensor lies at buffer element k."""
        if self.strides is None:
            return True
        return all(s == p for n, s, p in zip(self.sizes, self.strides, packed_strides(self.sizes)) if n > 1)

    @property
    def required_elements(self) -> int:
        """Buffer elements the tensor spans: last implied index + 1."""
        return sum((n - 1) * s for n, s in zip(self.sizes, self.effective_strides)) + 1

    @property
    def covers_buffer(self) -> bool:
        """True when the tensor's elements fill every byte of its buffer (a kernel writing
        all elements leaves nothing of the old contents)."""
        return self.is_packed and self.element_count * self.data_type.size == self.buffer_bytes

    @property
    def buffer_bytes(self) -> int:
        """Bytes a GPU buffer for this desc holds: the total size rounded up to 4."""
        return (self.total_tensor_size_in_bytes + 3) & ~3

    def __repr__(self) -> str:
        parts = [self.data_type.name, f"sizes={list(self.sizes)}"]
        if self.strides is not None:
            parts.append(f"strides={list(self.strides)}")
        parts.append(f"total_tensor_size_in_bytes={self.total_tensor_size_in_bytes}")
        return f"TensorDesc({', '.join(parts)})"


def check_tensor_desc(op: str, field: str, desc, *, is_output: bool = False) -> None:
    """Every rule of DML_BUFFER_TENSOR_DESC (the module docstring), with messages naming `op`
    and `field`."""
    where = f"{op}: {field}"
    if not isinstance(desc, TensorDesc):
        raise InvalidArgumentError(f"{where}: expected a TensorDesc, got {type(desc).__name__}")
    rank = desc.rank
    if not 1 <= rank <= MAX_DIMENSIONS:
        raise InvalidArgumentError(
            f"{where}.sizes: DimensionCount {rank} must be in 1..{MAX_DIMENSIONS} (sizes {list(desc.sizes)})")
    for i, n in enumerate(desc.sizes):
        if n < 1:
            raise InvalidArgumentError(f"{where}.sizes[{i}] = {n} must be >= 1")
        if n > MAX_ELEMENTS:
            raise InvalidArgumentError(f"{where}.sizes[{i}] = {n} exceeds {MAX_ELEMENTS}")
    if desc.element_count > MAX_ELEMENTS:
        raise InvalidArgumentError(
            f"{where}.sizes: element count {desc.element_count} of {list(desc.sizes)} exceeds {MAX_ELEMENTS}")
    if desc.strides is not None:
        if len(desc.strides) != rank:
            raise InvalidArgumentError(
                f"{where}.strides: {len(desc.strides)} strides {list(desc.strides)} for DimensionCount {rank}")
        for i, s in enumerate(desc.strides):
            if s < 0:
                raise InvalidArgumentError(f"{where}.strides[{i}] = {s} must be >= 0")
            if s > MAX_ELEMENTS:
                raise InvalidArgumentError(f"{where}.strides[{i}] = {s} exceeds {MAX_ELEMENTS}")
        last = sum((n - 1) * s for n, s in zip(desc.sizes, desc.strides))
        if last > MAX_ELEMENTS:
            # Element offsets are 32-bit (as in DirectML): a larger one would wrap around.
            raise InvalidArgumentError(
                f"{where}.strides: the last element lies at element offset sum((sizes[i] - 1) * strides[i]) "
                f"= {last} (sizes {list(desc.sizes)}, strides {list(desc.strides)}), beyond the 32-bit "
                f"limit {MAX_ELEMENTS}")
    minimum = calc_buffer_tensor_size(desc.data_type, desc.sizes, desc.strides)
    if desc.total_tensor_size_in_bytes < minimum:
        raise InvalidArgumentError(
            f"{where}.total_tensor_size_in_bytes = {desc.total_tensor_size_in_bytes} is smaller than "
            f"DMLCalcBufferTensorSize = {minimum} for sizes {list(desc.sizes)}, strides "
            f"{None if desc.strides is None else list(desc.strides)}, {desc.data_type.name}")
    if desc.flags & ~TENSOR_FLAG_OWNED_BY_DML:
        raise InvalidArgumentError(
            f"{where}.flags = {desc.flags:#x}: only DML_TENSOR_FLAG_OWNED_BY_DML (0x1) is defined")
    align = desc.guaranteed_base_offset_alignment
    if align != 0 and (align < 16 or align & (align - 1)):
        raise InvalidArgumentError(
            f"{where}.guaranteed_base_offset_alignment = {align} must be 0 or a power of two >= 16")
    if is_output:
        _check_no_aliasing(where, desc)


def _check_no_aliasing(where: str, desc: TensorDesc) -> None:
    """Reject output strides that map two elements to one address (a write race)."""
    if desc.strides is None:
        return
    axes = sorted((s, n, i) for i, (n, s) in enumerate(zip(desc.sizes, desc.strides)) if n > 1)
    reach = 0  # largest offset reachable by the axes seen so far
    culprit = None
    for s, n, i in axes:
        if s <= reach:
            culprit = (i, s)
            break
        reach += (n - 1) * s
    if culprit is None:
        return
    # The quick proof failed; decide exactly when the tensor is small enough to enumerate.
    if desc.element_count <= 1 << 22:
        offsets = np.zeros(1, dtype=np.int64)
        for size, stride in zip(desc.sizes, desc.strides):
            offsets = (offsets[:, None] + np.arange(size, dtype=np.int64)[None, :] * stride).reshape(-1)
        if np.unique(offsets).size == offsets.size:
            return
    raise InvalidArgumentError(
        f"{where}.strides: {list(desc.strides)} with sizes {list(desc.sizes)} make two output elements "
        f"share one address (axis {culprit[0]} stride {culprit[1]}); an output must not alias itself")


def check_same_rank(op: str, fields: dict[str, TensorDesc]) -> int:
    ranks = {name: d.rank for name, d in fields.items()}
    if len(set(ranks.values())) > 1:
        listed = ", ".join(f"{k} {v}" for k, v in ranks.items())
        raise InvalidArgumentError(f"{op}: all tensors must have the same DimensionCount (got {listed})")
    return next(iter(ranks.values()))


def check_length(op: str, field: str, values: tuple, rank: int) -> None:
    if len(values) != rank:
        raise InvalidArgumentError(
            f"{op}: {field} has {len(values)} entries {list(values)}; DimensionCount is {rank}")
