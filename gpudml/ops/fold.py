"""DML_FOLD_OPERATOR_DESC (docs/operators/fold.md, FL 6.4; col2im): the inverse direction
of DML_UNFOLD. The input [N, C * prod(window_sizes), L] holds the sliding blocks of an image
[N, C, S1, ..., SD] (D = DimensionCount, 1-6: the output's spatial axes, whose sizes the
OutputTensor gives), and each image element is the sum of the block elements a window puts
on it: output [n, c, s] sums input [n, c * prod(W) + w, b] over every window position w and
block b with b_d * strides[d] + w_d * dilations[d] - start_padding[d] = s_d on every axis
(positions in the padding are dropped). L must be the blocks of the image: prod over the
axes of (S_d + start_padding[d] + end_padding[d] - dilations[d] * (W_d - 1) - 1) / strides[d]
+ 1, and the input's second size C * prod(W).

The page's gaps, and gpudml's choices (tests/data/pages/ns-directml-dml_fold_operator_desc.md):
as UNFOLD's page (gpudml/ops/unfold.py), its examples give the block tensor 3 dimensions
and the image 2 + DimensionCount, which gpudml follows over its "one DimensionCount"
sentence. Its "Tensor support" table lists no data types: FOLD adds, and gpudml takes
DirectML's arithmetic set of 8 types (FLOAT32, FLOAT16, 8-32-bit integers), as ONNX
Runtime's DirectML execution provider feeds it ONNX Col2Im's float tensors.

Precision (`tolerance`, tests/test_fold.py): floats sum in float32 in window order, so an
element of k contributions is within (k - 1) 2^-24 sum|x| of the exact sum (plus the
output type's rounding: half a unit in the last place; float16 half of float16's);
integers wrap in their type, exactly (DirectML's integer arithmetic).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import fold as family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc
from ..types import TYPES_8, FeatureLevel
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table
from .unfold import (
    WINDOW_CLI,
    Blocks,
    arrays_blocks,
    block_sizes,
    check_geometry,
    check_tensors,
    cli_window,
    normalize_fields,
    per_axis,
    window_arguments,
)

OP = "Fold"
SUPPORT = support_table(OP, ("input_tensor", "output_tensor"), [(FeatureLevel.FL_6_4, (3, 8), TYPES_8)])



@dataclass(frozen=True)
class FoldOperatorDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    window_sizes: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    start_padding: tuple[int, ...]
    end_padding: tuple[int, ...]

    def __post_init__(self):
        normalize_fields(self, OP)


def infer_output(input_tensor: TensorDesc, output_size, window_sizes, *, strides=None, dilations=None,
                 start_padding=None, end_padding=None) -> FoldOperatorDesc:
    """The desc of `fold(x, output_size, window_sizes, ...)`: the image [N, C, *output_size]
    with C = x's second size / prod(window_sizes) (rounded down: validation names a remainder)."""
    size = per_axis(output_size, 1, "output_size", 1, "fold")
    count = len(size)
    window = per_axis(window_sizes, count, "window_sizes", 1, "fold")
    fields = {"strides": strides, "dilations": dilations, "start_padding": start_padding, "end_padding": end_padding}
    values = {f: per_axis(v, count, f, 0 if f.endswith("padding") else 1, "fold") for f, v in fields.items()}
    positions = max(int(np.prod(window, dtype=np.int64)), 1) if all(w >= 1 for w in window) else 1
    sizes = input_tensor.sizes
    if input_tensor.rank == 3:
        sizes = (sizes[0], max(sizes[1] // positions, 1), *size)
    return FoldOperatorDesc(input_tensor, TensorDesc(input_tensor.data_type, sizes), window, **values)


def validate(desc: FoldOperatorDesc, feature_level: FeatureLevel) -> None:
    """The tensors (each rank 3-8, one type), the window fields over the output's spatial
    axes, and the input's sizes: [N, C * prod(window_sizes), L]."""
    inp, out = desc.input_tensor, desc.output_tensor
    check_tensors(OP, SUPPORT, feature_level, desc)
    blocks = check_geometry(OP, desc, "output_tensor", out.sizes[2:])
    want = block_sizes(out.sizes, blocks)
    if inp.sizes != want:
        raise InvalidArgumentError(
            f"{OP}: input_tensor.sizes {list(inp.sizes)} must be [N, C * prod(window_sizes), L] = "
            f"[{out.sizes[0]}, {out.sizes[1]} * {blocks.window_count}, {blocks.count}] = {list(want)} (N and C of "
            f"output_tensor; L = the blocks per spatial axis {list(blocks.per_axis)} multiplied)")


def problem(desc: FoldOperatorDesc) -> family.Fold:
    blocks = Blocks.of(desc, desc.output_tensor.sizes[2:])
    return family.Fold(OP, desc.input_tensor, desc.output_tensor, desc.window_sizes, desc.strides, desc.dilations,
                       desc.start_padding, blocks.per_axis)


FOLD = ProblemPlanner(problem, family.FAMILY)


# ---------------------------------------------------------------------------- reference
def _image(x: np.ndarray, blocks: Blocks, accumulate) -> np.ndarray:
    """Each window position's blocks added onto the padded image (a float64 or int64
    accumulator), one position at a time; the padding cropped off."""
    n = x.shape[0]
    channels = x.shape[1] // blocks.window_count
    padded = [s + a + b for s, a, b in zip(blocks.spatial, blocks.start_padding, blocks.end_padding, strict=True)]
    image = np.zeros([n, channels, *padded], accumulate)
    columns = x.astype(accumulate).reshape(n, channels, blocks.window_count, *blocks.per_axis)
    for k, w in enumerate(np.ndindex(*blocks.window_sizes)):
        window = tuple(slice(wd * dl, wd * dl + (nb - 1) * st + 1, st) for wd, dl, nb, st in
                       zip(w, blocks.dilations, blocks.per_axis, blocks.strides, strict=True))
        image[(slice(None), slice(None), *window)] += columns[:, :, k]
    crop = tuple(slice(a, a + s) for a, s in zip(blocks.start_padding, blocks.spatial, strict=True))
    return image[(slice(None), slice(None), *crop)]


def reference(x, output_size, window_sizes, *, strides=None, dilations=None, start_padding=None,
              end_padding=None) -> np.ndarray:
    """col2im by scattering: every window position's blocks added onto a zero image in a
    float64 accumulator (integers: int64, wrapped into their type at the end), the padding
    cropped off; the result in x's type."""
    x = np.asarray(x)
    size = per_axis(output_size, 1, "output_size", 1, "fold")
    if x.ndim != 3:
        raise ValueError(f"fold: x has {x.ndim} dimensions; it must be [N, C * prod(window_sizes), L]")
    blocks = arrays_blocks((x.shape[0], 1, *size), window_sizes, strides, dilations, start_padding, end_padding,
                           "fold")
    want = block_sizes((x.shape[0], x.shape[1] // blocks.window_count, *size), blocks)
    if x.shape != want:
        raise ValueError(f"fold: x's shape {list(x.shape)} must be [N, C * prod(window_sizes), L] = {list(want)}")
    accumulate = np.float64 if x.dtype.kind == "f" else np.int64
    return _image(x, blocks, accumulate).astype(x.dtype)


def tolerance(expected: np.ndarray, inputs, arguments: dict):
    """Floats: (k - 1) 2^-24 sum|x| + half an ULP of the output type at the result (the
    reference's rounding, float16's) + a float16 / float32 floor, per element, k its
    contributions; integers bit-exact (None); a non-finite result exactly."""
    if expected.dtype.kind != "f":
        return None
    x = np.asarray(inputs[0]).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        magnitude = reference(np.abs(x), **arguments)
        count = reference(np.ones_like(x), **arguments)
        half_ulp = {np.dtype(np.float16): 2.0**-11, np.dtype(np.float32): 2.0**-24}[expected.dtype]
        floor = {np.dtype(np.float16): 2.0**-25, np.dtype(np.float32): 2.0**-126}[expected.dtype]
        want = np.abs(expected.astype(np.float64))
        bound = np.maximum(count - 1, 0) * 2.0**-24 * magnitude + half_ulp * want + floor
    return np.where(np.isfinite(want) & np.isfinite(bound), bound, 0.0)


def sample(desc: FoldOperatorDesc, rng) -> list:
    """Integers any bits (they wrap); floats in [-4, 4] (sums stay finite)."""
    inp = desc.input_tensor
    if not inp.data_type.is_float:
        raw = rng.integers(0, 256, size=inp.required_elements * inp.data_type.size, dtype=np.uint8)
        return [raw.view(inp.data_type.numpy)]
    return [rng.uniform(-4.0, 4.0, inp.required_elements).astype(inp.data_type.numpy)]


# ---------------------------------------------------------------------------- API
def fold(x, output_size, window_sizes, *, strides=None, dilations=None, start_padding=None, end_padding=None,
         device=None):
    """DML_FOLD (col2im, as torch.nn.Fold and ONNX Col2Im): the blocks x [N, C *
    prod(window_sizes), L] summed into the image [N, C, *output_size] (output_size: its
    spatial sizes, as DirectML's OutputTensor gives them). window_sizes, strides (default 1),
    dilations (1), start_padding and end_padding (0): one int for every spatial axis or one
    per axis. Floats sum in float32; integers wrap."""
    return Call([("x", x)], {"output_size": output_size, "window_sizes": window_sizes, "strides": strides,
                             "dilations": dilations, "start_padding": start_padding, "end_padding": end_padding},
                device)


def arguments(desc: FoldOperatorDesc) -> dict:
    return {"output_size": desc.output_tensor.sizes[2:], **window_arguments(desc)}


def from_cli(x: TensorDesc, a: dict) -> FoldOperatorDesc:
    """--shape is the block tensor [N, C * prod(window_sizes), L] (3 sizes) or, of any other
    rank, the image [N, C, spatial...] (--output-size then defaults to its spatial sizes,
    and the block tensor is the one its window makes)."""
    size = a["output_size"] or (tuple(x.sizes[2:]) if x.rank != 3 and x.rank > 2 else (4, 4))
    window = cli_window(a, len(size))
    if x.rank != 3:
        probe = infer_output(TensorDesc(x.data_type, [1, 1, 1]), size, **window)
        blocks = Blocks.of(probe, size)
        if all(b >= 1 for b in blocks.per_axis):
            x = TensorDesc(x.data_type, block_sizes((x.sizes[0], x.sizes[1] if x.rank > 1 else 1, *size), blocks))
    return infer_output(x, size, window.pop("window_sizes"), **window)


PAGE = "ns-directml-dml_fold_operator_desc.md"
_PAD = {"window_sizes": [3, 3], "start_padding": [1, 0], "end_padding": [1, 0], "output_size": [4, 4]}
_IMAGE_2 = [[26, 70, 102, 60], [78, 183, 231, 129], [84, 195, 243, 135], [82, 182, 214, 116]]


def _f32(values, shape) -> np.ndarray:
    return np.array(values, np.float32).reshape(shape)


SPEC = OpSpec(
    name=OP, key="fold", desc=FoldOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=fold, tensors=("x",), arguments=arguments, planner=FOLD,
    cli=Cli((CliArg("--output-size", "the output's spatial sizes, comma-separated (default: those of a --shape of "
                    "rank other than 3, the image; else 4,4)"), *WINDOW_CLI),
            from_cli, "--shape 1,9,4 --output-size 4,4 --window-sizes 3,3"),
    page="DML_FOLD_OPERATOR_DESC", tolerance=tolerance, sample=sample,
    examples=(
        Example("fold-1", _f32(range(36), (1, 9, 4)), {"output_size": [4, 4], "window_sizes": [3, 3]},
                _f32([[0, 5, 13, 9], [14, 38, 54, 32], [38, 86, 102, 56], [26, 57, 65, 35]], (1, 1, 4, 4)), PAGE),
        Example("fold-2", _f32(range(72), (1, 9, 8)), _PAD, _f32(_IMAGE_2, (1, 1, 4, 4)), PAGE),
        Example("fold-3", _f32(range(144), (1, 18, 8)), _PAD,
                _f32([_IMAGE_2, [[170, 358, 390, 204], [294, 615, 663, 345], [300, 627, 675, 351],
                                 [226, 470, 502, 260]]], (1, 2, 4, 4)), PAGE),
    ),
)
