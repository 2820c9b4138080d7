"""Tensor layouts: the sweep's (LAYOUTS), drawn strides (padded, permuted, broadcast) and
random ones for the fuzz tests; a description's tensors by field."""

from __future__ import annotations

import dataclasses

import gpudml as dml
from gpudml.ops import tensor_fields
from gpudml.tensor_desc import calc_buffer_tensor_size, packed_strides

from .draws import Draw

#: The layouts of the sweep: every input packed; with gaps between its rows; with gaps and
#: some axes broadcast (stride 0); the outputs with gaps (which must keep their bytes).
LAYOUTS = ("packed", "strided_input", "broadcast_input", "strided_output")


def padded_strides(sizes, rng=None, broadcast: bool = False) -> list[int]:
    """Row-major strides of a buffer one element longer on every axis (gaps between rows);
    with `broadcast`, some axes (at least one) get stride 0."""
    strides = list(packed_strides([n + 1 for n in sizes]))
    if broadcast:
        for axis in rng.choice(len(sizes), size=max(1, len(sizes) // 2), replace=False):
            strides[int(axis)] = 0
    return strides


def drawn_strides(d: Draw, sizes, kind: str) -> list[int] | None:
    """Strides of `kind` for a tensor of `sizes`: packed (None), explicit (packed, spelled
    out), padded (gaps after every axis), permuted (axes stored in another order, with
    gaps) or broadcast (padded, some axes of stride 0)."""
    rank = len(sizes)
    if kind == "packed":
        return None
    if kind == "explicit":
        return list(packed_strides(sizes))
    gaps = [d.int(1, 2) if kind != "permuted" else d.int(0, 2) for _ in sizes]
    order = d.permutation(rank) if kind == "permuted" else list(range(rank))
    strides, step = [0] * rank, 1
    for axis in reversed(order):  # order[0] outermost
        strides[axis] = step
        step *= sizes[axis] + gaps[axis]
    if kind == "broadcast":
        for axis in d.subset(rank):
            strides[axis] = 0
    return strides


def _fuzzed_tensor(d: Draw, td: dml.TensorDesc, output: bool) -> dml.TensorDesc:
    """`td` in a random layout: any kind (inputs may broadcast), any stride on a size-1
    axis, and a total size beyond DMLCalcBufferTensorSize (beyond a whole 16-byte block
    too: a kernel storing past the tensor's last block is then inside the binding, not
    dropped by the adapter's bounds checks, and seen)."""
    sizes = list(td.sizes)
    kinds = ["packed", "explicit", "padded", "permuted"] + ([] if output else ["broadcast"])
    strides = drawn_strides(d, sizes, d.pick(kinds))
    if strides is not None:
        for axis, n in enumerate(sizes):  # a size-1 axis never moves: any stride is valid
            if n == 1 and d.bool():
                strides[axis] = d.pick([0, 1, 7, 1000])
    extra = d.pick([0, 0, 0, 1, 3, 4, 8, 13, 32, 61])
    total = calc_buffer_tensor_size(td.data_type, sizes, strides) + extra
    return dml.TensorDesc(td.data_type, sizes, strides, total_tensor_size_in_bytes=total)


def laid_out(desc, d: Draw, layout: str | None):
    """`desc` with its tensors in `layout` (one of LAYOUTS), or each in a random layout (None)."""
    inputs, outputs = tensor_fields(desc)
    for side, fields in (("input", inputs), ("output", outputs)):
        for field, td in fields:
            if layout is None:
                new = _fuzzed_tensor(d, td, output=side == "output")
            else:
                kind = {"strided_input": "padded", "broadcast_input": "broadcast"}.get(layout, "packed") \
                    if side == "input" else ("padded" if layout == "strided_output" else "packed")
                new = dml.TensorDesc(td.data_type, td.sizes, drawn_strides(d, list(td.sizes), kind))
            desc = with_tensor(desc, field, new)
    return desc


def tensor_at(desc, field: str) -> dml.TensorDesc:
    """The tensor a tensor_fields name points at: `field`, or element i of `name[i]`."""
    name, _, index = field.partition("[")
    value = getattr(desc, name)
    return value[int(index[:-1])] if index else value


def with_tensor(desc, field: str, new):
    """`desc` with the tensor at `field` (as tensor_at) replaced by `new`."""
    name, _, index = field.partition("[")
    if not index:
        return dataclasses.replace(desc, **{name: new})
    items = list(getattr(desc, name))
    items[int(index[:-1])] = new
    return dataclasses.replace(desc, **{name: tuple(items)})
