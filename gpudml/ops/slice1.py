"""DML_SLICE1_OPERATOR_DESC (SPEC.md section 6, seed 003)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidArgumentError
from ..tensor_desc import TensorDesc, as_int_tuple, check_length
from ..types import TYPES_8, TYPES_11, FeatureLevel
from .base import KernelPlan, SupportRow, SupportTable, check_copy_tensors, ranks
from .movement import movement_dispatch

OP = "Slice1"
INT32_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1

SUPPORT = SupportTable(OP, [
    SupportRow(FeatureLevel.FL_4_1, ranks(1, 8), {"input_tensor": TYPES_11, "output_tensor": TYPES_11}),
    SupportRow(FeatureLevel.FL_3_0, ranks(1, 8), {"input_tensor": TYPES_8, "output_tensor": TYPES_8}),
    SupportRow(FeatureLevel.FL_2_1, frozenset({4, 5}), {"input_tensor": TYPES_8, "output_tensor": TYPES_8}),
])


@dataclass(frozen=True)
class Slice1OperatorDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    input_window_offsets: tuple[int, ...]
    input_window_sizes: tuple[int, ...]
    input_window_strides: tuple[int, ...]

    def __post_init__(self):
        for name in ("input_window_offsets", "input_window_sizes", "input_window_strides"):
            object.__setattr__(self, name, as_int_tuple(getattr(self, name), f"{OP}: {name}"))


def max_output_size(window_size: int, window_stride: int) -> int:
    """MaxCopiedElements: 1 + (size - 1) // |stride|."""
    return 1 + (window_size - 1) // abs(window_stride)


def validate(desc: Slice1OperatorDesc, feature_level: FeatureLevel) -> None:
    inp, out = desc.input_tensor, desc.output_tensor
    rank = check_copy_tensors(OP, SUPPORT, feature_level, inp, out)
    offsets, sizes, strides = desc.input_window_offsets, desc.input_window_sizes, desc.input_window_strides
    for name, values in (("input_window_offsets", offsets), ("input_window_sizes", sizes),
                         ("input_window_strides", strides)):
        check_length(OP, name, values, rank)
    for i in range(rank):
        if not 0 <= offsets[i] <= UINT32_MAX:
            raise InvalidArgumentError(f"{OP}: input_window_offsets[{i}] = {offsets[i]} must be in 0..{UINT32_MAX}")
        if sizes[i] < 1:
            raise InvalidArgumentError(f"{OP}: input_window_sizes[{i}] = {sizes[i]} must be >= 1 (empty window)")
        if offsets[i] + sizes[i] > inp.sizes[i]:
            raise InvalidArgumentError(
                f"{OP}: input_window_offsets[{i}] + input_window_sizes[{i}] = {offsets[i] + sizes[i]} "
                f"exceeds input size {inp.sizes[i]} on axis {i}")
        if strides[i] == 0:
            raise InvalidArgumentError(f"{OP}: input_window_strides[{i}] must not be 0")
        if not -INT32_MAX - 1 <= strides[i] <= INT32_MAX:
            raise InvalidArgumentError(f"{OP}: input_window_strides[{i}] = {strides[i]} does not fit INT32")
        most = max_output_size(sizes[i], strides[i])
        if not 1 <= out.sizes[i] <= most:
            raise InvalidArgumentError(
                f"{OP}: output_tensor.sizes[{i}] = {out.sizes[i]} must be in 1..{most} "
                f"(1 + (input_window_sizes[{i}] - 1) // |input_window_strides[{i}]| = "
                f"1 + ({sizes[i]} - 1) // {abs(strides[i])})")


#: Merge output axes that step contiguously in both tensors (and drop size-1 axes):
#: longer rows, so fewer segments (see shaders/lib/movement.wgsl.j2).
MERGE_AXES = True


def _merged_axes(sizes, out_strides, steps) -> list[tuple[int, int, int]]:
    """(output size, output stride, input step) per axis after dropping size-1 output axes
    (always coordinate 0) and merging neighbours whose outer stride and step are the inner
    ones times the inner size in both tensors: the same element order and offsets."""
    merged: list[tuple[int, int, int]] = []
    for n, ost, st in zip(sizes, out_strides, steps, strict=True):
        if n == 1:
            continue
        if merged and merged[-1][1] == n * ost and merged[-1][2] == n * st:
            merged[-1] = (merged[-1][0] * n, ost, st)
            continue
        merged.append((n, ost, st))
    return merged or [(1, 0, 0)]


def plan(desc: Slice1OperatorDesc, caps) -> KernelPlan:
    in_strides = desc.input_tensor.effective_strides
    base, steps = 0, []
    for off, size, step, st in zip(desc.input_window_offsets, desc.input_window_sizes,
                                   desc.input_window_strides, in_strides):
        start = off + (size - 1 if step < 0 else 0)
        base += start * st
        steps.append(step * st)
    inp, out = desc.input_tensor, desc.output_tensor
    if MERGE_AXES:
        axes = _merged_axes(out.sizes, out.effective_strides, steps)
        out = TensorDesc(out.data_type, [a[0] for a in axes], [a[1] for a in axes])
        steps = [a[2] for a in axes]
    dispatch = movement_dispatch(
        "slice1.wgsl.j2", inp, out,
        [("slice_base", (base,)), ("slice_steps", tuple(steps))],
    )
    return KernelPlan((dispatch,))
