"""DML_REVERSE_SUBSEQUENCES_OPERATOR_DESC (SPEC.md section 7, seeds 000 and 002)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidArgumentError
from ..tensor_desc import TensorDesc, as_int, check_same_rank, check_tensor_desc
from ..types import TYPES_8, TYPES_11, U32, U64, FeatureLevel
from .base import Binding, KernelPlan, SupportRow, SupportTable, element_bits, ranks
from .movement import movement_dispatch

OP = "ReverseSubsequences"
#: Column strategy (see reverse_subsequences.wgsl.j2): coordinates on the axis per invocation (0: off).
#: W7, paired kernel-time ratios (quiet host): 8 / 16 = 1.10, 32 / 16 = 0.93, 64 / 32 = 0.98, 128 / 32 = 0.97.
COLUMN = 64


def _row(level, dims, types, length_types):
    return SupportRow(level, dims, {"input_tensor": types, "sequence_lengths_tensor": frozenset(length_types),
                                    "output_tensor": types})


SUPPORT = SupportTable(OP, [
    _row(FeatureLevel.FL_5_0, ranks(1, 8), TYPES_11, {U32, U64}),
    _row(FeatureLevel.FL_4_0, ranks(1, 8), TYPES_8, {U32}),
    _row(FeatureLevel.FL_3_0, ranks(4, 5), TYPES_8, {U32}),
    _row(FeatureLevel.FL_2_1, frozenset({4}), TYPES_8, {U32}),
])


@dataclass(frozen=True)
class ReverseSubsequencesOperatorDesc:
    input_tensor: TensorDesc
    sequence_lengths_tensor: TensorDesc
    output_tensor: TensorDesc
    axis: int

    def __post_init__(self):
        object.__setattr__(self, "axis", as_int(self.axis, f"{OP}: axis"))


def validate(desc: ReverseSubsequencesOperatorDesc, feature_level: FeatureLevel) -> None:
    check_tensor_desc(OP, "input_tensor", desc.input_tensor)
    check_tensor_desc(OP, "sequence_lengths_tensor", desc.sequence_lengths_tensor)
    check_tensor_desc(OP, "output_tensor", desc.output_tensor, is_output=True)
    inp, lengths, out = desc.input_tensor, desc.sequence_lengths_tensor, desc.output_tensor
    rank = check_same_rank(OP, {"input_tensor": inp, "sequence_lengths_tensor": lengths, "output_tensor": out})
    if out.data_type != inp.data_type:
        raise InvalidArgumentError(
            f"{OP}: output_tensor.data_type {out.data_type.name} must equal "
            f"input_tensor.data_type {inp.data_type.name}")
    SUPPORT.check(feature_level, rank, {"input_tensor": inp.data_type,
                                        "sequence_lengths_tensor": lengths.data_type,
                                        "output_tensor": out.data_type})
    axis = desc.axis
    if not 0 <= axis < rank:
        raise InvalidArgumentError(f"{OP}: axis = {axis} must be less than DimensionCount {rank} (and >= 0)")
    if out.sizes != inp.sizes:
        raise InvalidArgumentError(
            f"{OP}: output_tensor.sizes {list(out.sizes)} must equal input_tensor.sizes {list(inp.sizes)}")
    for i, (got, n) in enumerate(zip(lengths.sizes, inp.sizes, strict=True)):
        want = 1 if i == axis else n
        if got != want:
            rule = f"1 on axis {axis}" if i == axis else f"input_tensor.sizes[{i}] = {n}"
            raise InvalidArgumentError(
                f"{OP}: sequence_lengths_tensor.sizes[{i}] = {got} must be {rule} "
                f"(input sizes {list(inp.sizes)}, axis {axis}: lengths sizes {_lengths_sizes(inp.sizes, axis)})")


def _lengths_sizes(sizes, axis: int) -> list[int]:
    return [1 if i == axis else n for i, n in enumerate(sizes)]


#: Merge non-axis neighbours contiguous in the input, the lengths and the output, and drop
#: size-1 non-axis axes: longer rows, and more shapes reach the column strategy.
MERGE_AXES = True


def _merged_axes(desc: ReverseSubsequencesOperatorDesc) -> tuple[list[tuple[int, int, int, int]], int]:
    """((size, input stride, lengths stride, output stride) per kernel axis, the axis' index)."""
    inp, lengths, out, axis = desc.input_tensor, desc.sequence_lengths_tensor, desc.output_tensor, desc.axis
    merged: list[tuple[int, int, int, int]] = []
    new_axis = 0
    for i, (n, ist, lst, ost) in enumerate(zip(inp.sizes, inp.effective_strides, lengths.effective_strides,
                                                out.effective_strides, strict=True)):
        if i == axis:
            new_axis = len(merged)
            merged.append((n, ist, 0, ost))
            continue
        if MERGE_AXES and n == 1:
            continue
        if MERGE_AXES and merged and not (i > axis and len(merged) - 1 == new_axis):  # never into the axis
            n0, ist0, lst0, ost0 = merged[-1]
            if ist0 == n * ist and lst0 == n * lst and ost0 == n * ost:
                merged[-1] = (n0 * n, ist, lst, ost)
                continue
        merged.append((n, ist, lst, ost))
    return merged, new_axis


def plan(desc: ReverseSubsequencesOperatorDesc, caps) -> KernelPlan:
    """Uniforms: the input strides, the lengths' strides (0 on the axis, whose size is 1),
    and rev_axis = [axis, n, input stride on the axis]."""
    axes, axis = _merged_axes(desc)
    data_type, lengths = desc.input_tensor.data_type, desc.sequence_lengths_tensor
    inp = TensorDesc(data_type, [a[0] for a in axes], [a[1] for a in axes])
    out = TensorDesc(data_type, [a[0] for a in axes], [a[3] for a in axes])
    length_strides = tuple(a[2] for a in axes)
    in_strides = inp.effective_strides
    rank = inp.rank
    per_vec = 128 // element_bits(inp)
    uniforms = [("in_strides", in_strides), ("length_strides", length_strides),
                ("rev_axis", (axis, inp.sizes[axis], in_strides[axis]))]
    column = COLUMN if out.is_packed and rank >= 2 and axis == rank - 2 and out.sizes[-1] % per_vec == 0 else 0
    invocations = None
    if column:
        n, chunks = inp.sizes[axis], out.sizes[-1] // per_vec
        outers = out.element_count // (n * out.sizes[-1])
        blocks = -(-n // column)
        uniforms.append(("column_grid", (blocks, chunks, outers)))
        invocations = outers * blocks * chunks
    dispatch = movement_dispatch(
        "reverse_subsequences.wgsl.j2", inp, out, uniforms,
        extra_bindings=(Binding("lengths", "input:1"),),
        params={"length_bits": element_bits(lengths), "column": column},
        invocations=invocations,
    )
    return KernelPlan((dispatch,))
