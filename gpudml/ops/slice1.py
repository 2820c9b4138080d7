"""DML_SLICE1_OPERATOR_DESC (the page: tests/data/seeds/003): a strided window of the input,
read forwards or backwards along each axis."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.movement.slice import SLICE1
from ..tensor_desc import TensorDesc, as_int_tuple, check_length
from ..types import TYPES_8, TYPES_11, FeatureLevel
from .base import check_copy_tensors, gather, int_list
from .spec import Call, Cli, CliArg, Example, OpSpec, element_bytes, support_table

OP = "Slice1"
INT32_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1

SUPPORT = support_table(OP, ("input_tensor", "output_tensor"), [
    (FeatureLevel.FL_4_1, (1, 8), TYPES_11),
    (FeatureLevel.FL_3_0, (1, 8), TYPES_8),
    (FeatureLevel.FL_2_1, {4, 5}, TYPES_8),
])


@dataclass(frozen=True)
class Slice1OperatorDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    input_window_offsets: tuple[int, ...]
    input_window_sizes: tuple[int, ...]
    input_window_strides: tuple[int, ...]

    def __post_init__(self):
        normalize_window(self, OP)


def normalize_window(desc, op: str) -> None:
    """A window desc's (Slice1's, SliceGrad's) three arrays as tuples of ints (__post_init__)."""
    for name in ("input_window_offsets", "input_window_sizes", "input_window_strides"):
        object.__setattr__(desc, name, as_int_tuple(getattr(desc, name), f"{op}: {name}"))


def max_output_size(window_size: int, window_stride: int) -> int:
    """MaxCopiedElements: 1 + (size - 1) // |stride|."""
    return 1 + (window_size - 1) // abs(window_stride)


def infer_output(input_tensor: TensorDesc, offsets, sizes, strides=None, output_sizes=None) -> Slice1OperatorDesc:
    """The desc of `slice(x, offsets, sizes, strides, output_sizes=...)`: strides default to 1,
    the output to the largest one the window allows (validation checks the rest)."""
    offsets = as_int_tuple(offsets, "slice: offsets")
    sizes = as_int_tuple(sizes, "slice: sizes")
    strides = (1,) * input_tensor.rank if strides is None else as_int_tuple(strides, "slice: strides")
    if output_sizes is None:
        output_sizes = tuple(max_output_size(n, s) if n >= 1 and s != 0 else 1
                             for n, s in zip(sizes, strides))
    out = TensorDesc(input_tensor.data_type, as_int_tuple(output_sizes, "slice: output_sizes"))
    return Slice1OperatorDesc(input_tensor, out, offsets, sizes, strides)


def validate(desc: Slice1OperatorDesc, feature_level: FeatureLevel) -> None:
    inp, out = desc.input_tensor, desc.output_tensor
    rank = check_copy_tensors(OP, SUPPORT, feature_level, inp, out)
    check_window(OP, desc, inp.sizes, out.sizes, rank, lambda i: f"input size {inp.sizes[i]} on axis {i}",
                 "output_tensor")


def check_window(op: str, desc, input_sizes, output_sizes, rank: int, reach, output_field: str,
                 output_note: str = "", zero_note: str = "") -> None:
    """The window's rules (Slice1's, SliceGrad's): one entry per axis of each array; offsets
    UINT, sizes at least 1, offset + size within the forward input's `input_sizes` (`reach(i)`
    names that bound), strides non-zero INT32 (`zero_note` says why), and the forward
    output's `output_sizes` (the tensor `output_field`) in 1..what the window holds."""
    offsets, sizes, strides = desc.input_window_offsets, desc.input_window_sizes, desc.input_window_strides
    for name, values in (("input_window_offsets", offsets), ("input_window_sizes", sizes),
                         ("input_window_strides", strides)):
        check_length(op, name, values, rank)
    for i in range(rank):
        if not 0 <= offsets[i] <= UINT32_MAX:
            raise InvalidArgumentError(f"{op}: input_window_offsets[{i}] = {offsets[i]} must be in 0..{UINT32_MAX}")
        if sizes[i] < 1:
            raise InvalidArgumentError(f"{op}: input_window_sizes[{i}] = {sizes[i]} must be >= 1 (empty window)")
        if offsets[i] + sizes[i] > input_sizes[i]:
            raise InvalidArgumentError(
                f"{op}: input_window_offsets[{i}] + input_window_sizes[{i}] = {offsets[i] + sizes[i]} "
                f"exceeds {reach(i)}")
        if strides[i] == 0:
            raise InvalidArgumentError(f"{op}: input_window_strides[{i}] must not be 0{zero_note}")
        if not -INT32_MAX - 1 <= strides[i] <= INT32_MAX:
            raise InvalidArgumentError(f"{op}: input_window_strides[{i}] = {strides[i]} does not fit INT32")
        most = max_output_size(sizes[i], strides[i])
        if not 1 <= output_sizes[i] <= most:
            raise InvalidArgumentError(
                f"{op}: {output_field}.sizes[{i}] = {output_sizes[i]} must be in 1..{most} ({output_note}"
                f"1 + (input_window_sizes[{i}] - 1) // |input_window_strides[{i}]| = "
                f"1 + ({sizes[i]} - 1) // {abs(strides[i])})")


# ---------------------------------------------------------------------------- reference
def reference(x, offsets, sizes, strides=None, output_sizes=None) -> np.ndarray:
    """output[o] = x[start + strides * o] per axis, start = offset (+ size - 1 where the
    stride is negative: a negative stride walks the window from its end). `strides`
    default to 1; `output_sizes` to the largest output, 1 + (sizes[i] - 1) // |strides[i]|.
    ValueError for a zero stride or an output that would read outside the window (numpy
    would silently wrap a negative index)."""
    x = np.asarray(x)
    rank = x.ndim
    offsets = int_list(offsets, rank, "offsets")
    sizes = int_list(sizes, rank, "sizes")
    strides = int_list([1] * rank if strides is None else strides, rank, "strides")
    if any(s == 0 for s in strides):
        raise ValueError(f"strides {strides}: a stride may not be 0")
    if output_sizes is None:
        output_sizes = [max_output_size(n, s) for n, s in zip(sizes, strides, strict=True)]
    output_sizes = int_list(output_sizes, rank, "output_sizes")
    index = [source_indices(i, o, n, s, m, x.shape[i])
             for i, (o, n, s, m) in enumerate(zip(offsets, sizes, strides, output_sizes, strict=True))]
    return gather(x, index)


def source_indices(axis, offset, size, stride, out_size, dim) -> np.ndarray:
    start = offset + (size - 1 if stride < 0 else 0)
    idx = start + stride * np.arange(out_size, dtype=np.int64)
    lo, hi = offset, offset + size
    if out_size < 1 or idx.min() < lo or idx.max() >= hi or lo < 0 or hi > dim:
        raise ValueError(f"axis {axis}: output size {out_size} with stride {stride} reads outside the "
                         f"window [{lo}, {hi}) of an input of size {dim}")
    return idx


# ---------------------------------------------------------------------------- API
def slice(x, offsets=None, sizes=None, strides=None, *, output_sizes=None, device=None,  # noqa: A001
          input_window_offsets=None, input_window_sizes=None, input_window_strides=None):
    """DML_SLICE1: the window `offsets`/`sizes` of x, read with `strides` (may be negative).
    `output_sizes=None` takes the largest valid output, 1 + (sizes[i] - 1) // |strides[i]|.
    DirectMLX's names (`dml::Slice`, the `directml` package) are accepted too:
    `input_window_offsets`, `input_window_sizes`, `input_window_strides`."""
    offsets = one_spelling("offsets", offsets, "input_window_offsets", input_window_offsets, required=True)
    sizes = one_spelling("sizes", sizes, "input_window_sizes", input_window_sizes, required=True)
    strides = one_spelling("strides", strides, "input_window_strides", input_window_strides, required=False)
    return Call([("x", x)], {"offsets": offsets, "sizes": sizes, "strides": strides, "output_sizes": output_sizes},
                device)


def one_spelling(name: str, value, directml_name: str, directml_value, required: bool):
    """The argument given as `name` or as DirectMLX's `directml_name`, not both."""
    if value is not None and directml_value is not None:
        raise InvalidArgumentError(
            f"slice: {name} and {directml_name} are two names of one argument; pass one of them")
    value = directml_value if value is None else value
    if value is None and required:
        raise InvalidArgumentError(f"slice: {name} (or {directml_name}) is required (one entry per axis of x)")
    return value


def arguments(desc: Slice1OperatorDesc) -> dict:
    return {"offsets": desc.input_window_offsets, "sizes": desc.input_window_sizes,
            "strides": desc.input_window_strides, "output_sizes": desc.output_tensor.sizes}


def traffic(desc: Slice1OperatorDesc) -> int:
    return 2 * element_bytes(desc.output_tensor)  # each output element read once and written once


def from_cli(x: TensorDesc, a: dict) -> Slice1OperatorDesc:
    return infer_output(x, a["offsets"] or (0,) * x.rank, a["sizes"] or x.sizes, a["strides"])


_SEED_INPUT = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)

SPEC = OpSpec(
    name=OP, key="slice1", desc=Slice1OperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=slice, tensors=("x",), arguments=arguments, traffic=traffic,
    planner=SLICE1,
    cli=Cli((CliArg("--offsets", "input_window_offsets (default 0 per axis)"),
             CliArg("--sizes", "input_window_sizes (default: the input sizes)"),
             CliArg("--strides", "input_window_strides, may be negative (default 1)")),
            from_cli, "--shape 1,1,4,4 --offsets 0,0,0,1 --sizes 1,1,4,3 --strides 1,1,-2,2"),
    page="DML_SLICE1_OPERATOR_DESC",
    examples=(
        Example("slice1-1", _SEED_INPUT, {"offsets": [0, 0, 0, 1], "sizes": [1, 1, 4, 3], "strides": [1, 1, 2, 2]},
                np.array([[2, 4], [10, 12]], np.float32).reshape(1, 1, 2, 2), "003_6bb030eeb1b9e3ae.txt"),
        # The page's text says InputWindowSizes[0] where [2] is meant; the numbers are right.
        Example("slice1-2", _SEED_INPUT, {"offsets": [0, 0, 0, 1], "sizes": [1, 1, 4, 3], "strides": [1, 1, -2, 2]},
                np.array([[14, 16], [6, 8]], np.float32).reshape(1, 1, 2, 2), "003_6bb030eeb1b9e3ae.txt"),
    ),
)
