"""DML_SLICE_OPERATOR_DESC (FL 1_0; docs/operators/slice0.md), the first version of the
slice, before DML_SLICE1 (ops/slice1.py): output[o] = input[offsets + strides * o] per
axis, strides positive, `sizes` the output's sizes.

Names: `gpudml.slice` is the newest version's functional form (DML_SLICE1, as DirectMLX's
dml::Slice); an older version's key and functional form carry its DirectML number, 0 for
the unnumbered first one: `slice0`.
It is the affine map Slice1 is, so it shares Slice1's kernels (kernels/movement/slice.py)
and traffic."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.movement.slice import SLICE
from ..tensor_desc import TensorDesc, as_int_tuple, check_length, positive_sizes
from ..types import F16, F32, I16, I32, TYPES_8, TYPES_11, U16, U32, FeatureLevel
from . import slice1
from .base import check_copy_tensors, int_list
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

OP = "Slice"
UINT32_MAX = 2**32 - 1
FIELDS = ("offsets", "sizes", "strides")

#: The page's "Tensor support" tables, one row per feature level.
SUPPORT = support_table(OP, ("input_tensor", "output_tensor"), [
    (FeatureLevel.FL_4_1, (1, 8), TYPES_11),
    (FeatureLevel.FL_3_0, (1, 8), TYPES_8),
    (FeatureLevel.FL_2_1, (4, 5), TYPES_8),
    (FeatureLevel.FL_1_0, (4, 5), {F32, F16, I32, I16, U32, U16}),
])


@dataclass(frozen=True)
class SliceOperatorDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    strides: tuple[int, ...]

    def __post_init__(self):
        for name in FIELDS:
            object.__setattr__(self, name, as_int_tuple(getattr(self, name), f"{OP}: {name}"))


def infer_output(input_tensor: TensorDesc, offsets, sizes, strides=None) -> SliceOperatorDesc:
    """The desc of `slice0(x, offsets, sizes, strides)`: the output's sizes are `sizes`,
    strides default to 1 (validation checks the rest)."""
    offsets = as_int_tuple(offsets, "slice0: offsets")
    sizes = positive_sizes(as_int_tuple(sizes, "slice0: sizes"), "slice0: sizes")
    strides = (1,) * input_tensor.rank if strides is None else as_int_tuple(strides, "slice0: strides")
    return SliceOperatorDesc(input_tensor, TensorDesc(input_tensor.data_type, sizes), offsets, sizes, strides)


def validate(desc: SliceOperatorDesc, feature_level: FeatureLevel) -> None:
    """The page's rules: one entry per axis in each array (UINT), strides of at least 1,
    `sizes` equal to the output's sizes, and every element read inside the input."""
    inp, out = desc.input_tensor, desc.output_tensor
    rank = check_copy_tensors(OP, SUPPORT, feature_level, inp, out)
    for name in FIELDS:
        values = getattr(desc, name)
        check_length(OP, name, values, rank)
        for i, v in enumerate(values):
            if not 0 <= v <= UINT32_MAX:
                raise InvalidArgumentError(f"{OP}: {name}[{i}] = {v} must be in 0..{UINT32_MAX} (UINT)")
    for i, (offset, size, stride) in enumerate(zip(desc.offsets, desc.sizes, desc.strides, strict=True)):
        if stride < 1:
            raise InvalidArgumentError(f"{OP}: strides[{i}] = {stride} must be >= 1 (DML_SLICE steps forwards; "
                                       f"DML_SLICE1 takes negative strides)")
        if size != out.sizes[i]:
            raise InvalidArgumentError(
                f"{OP}: sizes[{i}] = {size} must equal output_tensor.sizes[{i}] = {out.sizes[i]}")
        last = offset + stride * (size - 1)
        if last >= inp.sizes[i]:
            raise InvalidArgumentError(
                f"{OP}: offsets[{i}] + strides[{i}] * (sizes[{i}] - 1) = {offset} + {stride} * ({size} - 1) = "
                f"{last} is outside input_tensor.sizes[{i}] = {inp.sizes[i]} (out-of-bounds reads are not permitted)")


def reference(x, offsets, sizes, strides=None) -> np.ndarray:
    """output[o] = x[offsets + strides * o] per axis (strides default to 1), written as numpy
    basic slicing (a copy). ValueError for a stride below 1 or a read outside x."""
    x = np.asarray(x)
    offsets = int_list(offsets, x.ndim, "offsets")
    sizes = int_list(sizes, x.ndim, "sizes")
    strides = int_list([1] * x.ndim if strides is None else strides, x.ndim, "strides")
    window = []
    for axis, (offset, size, stride, n) in enumerate(zip(offsets, sizes, strides, x.shape, strict=True)):
        if stride < 1 or size < 1 or offset < 0 or offset + stride * (size - 1) >= n:
            raise ValueError(f"axis {axis}: offset {offset}, size {size}, stride {stride} do not read inside "
                             f"an axis of {n}")
        window.append(slice(offset, offset + stride * (size - 1) + 1, stride))
    return x[tuple(window)].copy()


# ---------------------------------------------------------------------------- API
def slice0(x, offsets, sizes, strides=None, *, device=None):
    """DML_SLICE, the first version of the slice: the elements of x at `offsets + strides * o`
    for every output coordinate o, `sizes` elements per axis (the output's sizes); `strides`
    (default 1) are >= 1. (`slice` is DML_SLICE1: windows, negative strides.)"""
    return Call([("x", x)], {"offsets": offsets, "sizes": sizes, "strides": strides}, device)


def arguments(desc: SliceOperatorDesc) -> dict:
    return {"offsets": desc.offsets, "sizes": desc.sizes, "strides": desc.strides}


def from_cli(x: TensorDesc, a: dict) -> SliceOperatorDesc:
    """Offsets default to 0, strides to 1, sizes to as many elements as fit."""
    offsets = a["offsets"] or (0,) * x.rank
    strides = a["strides"] or (1,) * x.rank
    sizes = a["sizes"] or tuple(max(1, (n - 1 - o) // max(s, 1) + 1) for n, o, s in zip(x.sizes, offsets, strides))
    return infer_output(x, offsets, sizes, strides)


_PAGE = "ns-directml-dml_slice_operator_desc.md"
_PAGE_INPUT = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)

SPEC = OpSpec(
    name=OP, key="slice0", desc=SliceOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=slice0, tensors=("x",), arguments=arguments, traffic=slice1.traffic,
    planner=SLICE,
    cli=Cli((CliArg("--offsets", "Offsets (default 0 per axis)"),
             CliArg("--sizes", "Sizes: the output's sizes (default: as many as fit)"),
             CliArg("--strides", "Strides, each >= 1 (default 1)")),
            from_cli, "--shape 1,1,4,4 --offsets 0,0,1,0 --sizes 1,1,2,2 --strides 1,1,2,3"),
    page="DML_SLICE_OPERATOR_DESC",
    examples=(
        Example("slice0-1", _PAGE_INPUT, {"offsets": [0, 0, 1, 2], "sizes": [1, 1, 3, 2], "strides": [1, 1, 1, 1]},
                np.array([[7, 8], [11, 12], [15, 16]], np.float32).reshape(1, 1, 3, 2), _PAGE),
        Example("slice0-2", _PAGE_INPUT, {"offsets": [0, 0, 1, 0], "sizes": [1, 1, 2, 2], "strides": [1, 1, 2, 3]},
                np.array([[5, 8], [13, 16]], np.float32).reshape(1, 1, 2, 2), _PAGE),
    ),
)
