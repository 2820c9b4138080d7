"""DML_UNFOLD_OPERATOR_DESC (docs/operators/unfold.md, FL 6.4; im2col): every sliding block
of a window over the spatial axes of an input [N, C, S1, ..., SD] (D = DimensionCount, 1-6),
flattened into a column of the output [N, C * prod(window_sizes), L].

Output element [n, c * prod(W) + w, b] (w the window position, b the block, both flat and
row-major over their axes) is input element [n, c, s] with s_d = b_d * strides[d] + w_d *
dilations[d] - start_padding[d] on every spatial axis d; outside [0, S_d) it is zero (the
implicit padding). Blocks per axis: B_d = (S_d + start_padding[d] + end_padding[d] -
dilations[d] * (W_d - 1) - 1) / strides[d] + 1, and L = prod(B_d).

What the page leaves open, and what gpudml does (tests/data/pages/ns-directml-dml_unfold_
operator_desc.md):
- its "Tensor constraints" say both tensors have one DimensionCount, but its examples (and
  FOLD's, and ONNX Runtime's Col2Im, which builds a 3-D InputTensor for a 4-D output) give
  the block tensor 3 dimensions and the image 2 + DimensionCount: gpudml follows the
  examples (each tensor's rank in the table's 3-8);
- its "Tensor support" table lists no data types: UNFOLD moves elements without arithmetic,
  and gpudml takes the types of DirectML's other data-movement operators from FL 4.1 on
  (every type but FLOAT64, as DML_TILE's table), bit-exact.

The block geometry (`Blocks`, `check_geometry`, the per-axis arguments) is FOLD's too
(gpudml/ops/fold.py: the inverse direction, summing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.movement.unfold import UNFOLD
from ..tensor_desc import MAX_ELEMENTS, TensorDesc, as_int_tuple, check_tensor_desc, check_window_fields
from ..types import F64, TYPES_11, FeatureLevel
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

OP = "Unfold"
#: The page: DimensionCount (the spatial axes) in [1, 6].
MAX_SPATIAL = 6
WINDOW_FIELDS = ("window_sizes", "strides", "dilations", "start_padding", "end_padding")
#: The page lists no types (module docstring): DirectML's data-movement set from FL 4.1.
TYPES = TYPES_11 - {F64}

SUPPORT = support_table(OP, ("input_tensor", "output_tensor"), [(FeatureLevel.FL_6_4, (3, 8), TYPES)])


@dataclass(frozen=True)
class UnfoldOperatorDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    window_sizes: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    start_padding: tuple[int, ...]
    end_padding: tuple[int, ...]

    def __post_init__(self):
        normalize_fields(self, OP)


def normalize_fields(desc, op: str) -> None:
    """The window fields of an UNFOLD or FOLD desc as tuples of ints (InvalidArgumentError
    naming the field otherwise)."""
    for field in WINDOW_FIELDS:
        object.__setattr__(desc, field, as_int_tuple(getattr(desc, field), f"{op}: {field}"))


# ---------------------------------------------------------------------------- geometry
@dataclass(frozen=True)
class Blocks:
    """The sliding blocks of a window over spatial sizes `spatial` (UNFOLD's input's, FOLD's
    output's): per axis the window, stride, dilation, start and end padding, and the
    blocks along it."""

    spatial: tuple[int, ...]
    window_sizes: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    start_padding: tuple[int, ...]
    end_padding: tuple[int, ...]

    @classmethod
    def of(cls, desc, spatial) -> Blocks:
        return cls(tuple(spatial), *(getattr(desc, f) for f in WINDOW_FIELDS))

    @property
    def per_axis(self) -> tuple[int, ...]:
        """B_d = (S + start + end - dilation * (W - 1) - 1) // stride + 1 (floor; < 1 where
        the dilated window is longer than the padded axis)."""
        return tuple((n + a + b - d * (w - 1) - 1) // s + 1 for n, w, s, d, a, b in
                     zip(self.spatial, self.window_sizes, self.strides, self.dilations, self.start_padding,
                         self.end_padding, strict=True))

    @property
    def count(self) -> int:
        """L: the blocks, all axes together."""
        return math.prod(self.per_axis)

    @property
    def window_count(self) -> int:
        return math.prod(self.window_sizes)


def check_geometry(op: str, desc, spatial_field: str, spatial: tuple[int, ...]) -> Blocks:
    """The page's rules for the window fields of a desc whose image has spatial sizes
    `spatial` (read from `spatial_field`): DimensionCount 1-6, every field one entry per
    spatial axis, window sizes, strides and dilations at least 1, paddings at least 0 (all
    UINTs), each padded axis within 32 bits, and at least one block per axis. Returns the
    blocks."""
    count = len(spatial)
    if not 1 <= count <= MAX_SPATIAL:
        raise InvalidArgumentError(f"{op}: DimensionCount = {count} ({spatial_field} has {count} spatial axes after "
                                   f"N and C) must be in [1, {MAX_SPATIAL}]")
    check_window_fields(op, desc, WINDOW_FIELDS, count, f"DimensionCount (the spatial axes of {spatial_field})")
    for i, (n, a, b) in enumerate(zip(spatial, desc.start_padding, desc.end_padding, strict=True)):
        if n + a + b > MAX_ELEMENTS:  # (the kernels' coordinates are 32-bit, as DirectML's UINTs)
            raise InvalidArgumentError(f"{op}: the padded axis {spatial_field}.sizes[{i + 2}] + start_padding[{i}] + "
                                       f"end_padding[{i}] = {n} + {a} + {b} = {n + a + b} exceeds {MAX_ELEMENTS}")
    blocks = Blocks.of(desc, spatial)
    for i, b in enumerate(blocks.per_axis):
        if b < 1:
            n, w, d = spatial[i], desc.window_sizes[i], desc.dilations[i]
            raise InvalidArgumentError(
                f"{op}: window_sizes[{i}] = {w} dilated by dilations[{i}] = {d} spans (window - 1) * dilation + 1 "
                f"= {(w - 1) * d + 1}, more than the padded axis {spatial_field}.sizes[{i + 2}] + start_padding + "
                f"end_padding = {n} + {desc.start_padding[i]} + {desc.end_padding[i]} = "
                f"{n + desc.start_padding[i] + desc.end_padding[i]}: no block fits")
    if blocks.window_count > MAX_ELEMENTS or blocks.count > MAX_ELEMENTS:
        raise InvalidArgumentError(f"{op}: prod(window_sizes) = {blocks.window_count} and the block count L = "
                                   f"{blocks.count} must each be at most {MAX_ELEMENTS}")
    return blocks


def check_tensors(op: str, support, level: FeatureLevel, desc) -> None:
    """Both descs valid, of one data type, each rank and the type in the support row."""
    inp, out = desc.input_tensor, desc.output_tensor
    check_tensor_desc(op, "input_tensor", inp)
    check_tensor_desc(op, "output_tensor", out, is_output=True)
    if out.data_type != inp.data_type:
        raise InvalidArgumentError(f"{op}: output_tensor.data_type {out.data_type.name} must equal "
                                   f"input_tensor.data_type {inp.data_type.name}")
    row = support.row_for(level)
    for field, td in (("input_tensor", inp), ("output_tensor", out)):
        if td.rank not in row.ranks:  # (each tensor its own rank: the message names which)
            raise InvalidArgumentError(f"{op}: {field}.sizes: DimensionCount {td.rank} is not supported at "
                                       f"{FeatureLevel(level).name} (supported: {min(row.ranks)}-{max(row.ranks)})")
        support.check(level, td.rank, {field: td.data_type})


def block_sizes(image: tuple[int, ...], blocks: Blocks) -> tuple[int, int, int]:
    """The block tensor's sizes [N, C * prod(window_sizes), L] of an image [N, C, spatial...]."""
    return (image[0], image[1] * blocks.window_count, blocks.count)


def per_axis(value, count: int, field: str, default: int, where: str) -> tuple[int, ...]:
    """A functional form's per-axis argument: None (the default on every axis), one int (on
    every axis) or one per spatial axis (left for validation to count)."""
    if value is None:
        return (default,) * count
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * count
    return as_int_tuple(value, f"{where}: {field}")


def window_arguments(desc) -> dict:
    return {f: desc.__getattribute__(f) for f in WINDOW_FIELDS}


# ---------------------------------------------------------------------------- the desc
def infer_output(input_tensor: TensorDesc, window_sizes, *, strides=None, dilations=None, start_padding=None,
                 end_padding=None) -> UnfoldOperatorDesc:
    """The desc of `unfold(x, window_sizes, ...)`: output [N, C * prod(window_sizes), L]
    (where the geometry does not fit, the input's sizes, for validation to name)."""
    count = max(input_tensor.rank - 2, 0)
    window = per_axis(window_sizes, count, "window_sizes", 1, "unfold")
    fields = {"strides": strides, "dilations": dilations, "start_padding": start_padding, "end_padding": end_padding}
    values = {f: per_axis(v, count, f, 0 if f.endswith("padding") else 1, "unfold") for f, v in fields.items()}
    sizes = input_tensor.sizes
    try:
        probe = UnfoldOperatorDesc(input_tensor, input_tensor, window, **values)
        blocks = check_geometry(OP, probe, "input_tensor", input_tensor.sizes[2:])
        sizes = block_sizes(input_tensor.sizes, blocks)
    except InvalidArgumentError:
        pass
    return UnfoldOperatorDesc(input_tensor, TensorDesc(input_tensor.data_type, sizes), window, **values)


def validate(desc: UnfoldOperatorDesc, feature_level: FeatureLevel) -> None:
    """The tensors (each rank 3-8, one type), the window fields and the output's sizes."""
    inp, out = desc.input_tensor, desc.output_tensor
    check_tensors(OP, SUPPORT, feature_level, desc)
    blocks = check_geometry(OP, desc, "input_tensor", inp.sizes[2:])
    want = block_sizes(inp.sizes, blocks)
    if out.sizes != want:
        raise InvalidArgumentError(
            f"{OP}: output_tensor.sizes {list(out.sizes)} must be [N, C * prod(window_sizes), L] = "
            f"[{want[0]}, {inp.sizes[1]} * {blocks.window_count}, {want[2]}] = {list(want)} (L = the blocks per "
            f"spatial axis {list(blocks.per_axis)} multiplied)")


# ---------------------------------------------------------------------------- reference
def positions(blocks: Blocks) -> list[np.ndarray]:
    """Per spatial axis d, the padded input coordinate b * stride + w * dilation of window
    position w and block b, shaped to broadcast over (W_1, ..., W_D, B_1, ..., B_D)."""
    count = len(blocks.spatial)
    found = []
    for d, (w, s, dl, nb) in enumerate(zip(blocks.window_sizes, blocks.strides, blocks.dilations, blocks.per_axis,
                                           strict=True)):
        grid = np.arange(w, dtype=np.int64)[:, None] * dl + np.arange(nb, dtype=np.int64)[None, :] * s
        found.append(grid.reshape([w if k == d else 1 for k in range(count)] + [nb if k == d else 1
                                                                                   for k in range(count)]))
    return found


def arrays_blocks(x_shape, window_sizes, strides, dilations, start_padding, end_padding, where: str) -> Blocks:
    """The Blocks of a reference call (ValueError where they do not fit)."""
    count = len(x_shape) - 2
    blocks = Blocks(tuple(x_shape[2:]), *(per_axis(v, count, f, dflt, where) for f, v, dflt in (
        ("window_sizes", window_sizes, 1), ("strides", strides, 1), ("dilations", dilations, 1),
        ("start_padding", start_padding, 0), ("end_padding", end_padding, 0))))
    try:
        check_geometry(OP, blocks, "x", blocks.spatial)
    except InvalidArgumentError as exc:
        raise ValueError(str(exc)) from None
    return blocks


def reference(x, window_sizes, *, strides=None, dilations=None, start_padding=None, end_padding=None) -> np.ndarray:
    """im2col as one gather: the input zero-padded, then read at b * stride + w * dilation
    on every spatial axis at once, reshaped to [N, C * prod(window_sizes), L]."""
    x = np.asarray(x)
    blocks = arrays_blocks(x.shape, window_sizes, strides, dilations, start_padding, end_padding, "unfold")
    padded = np.pad(x, [(0, 0), (0, 0), *zip(blocks.start_padding, blocks.end_padding, strict=True)])
    taken = padded[(slice(None), slice(None), *positions(blocks))]  # [N, C, W..., B...]
    return taken.reshape(block_sizes(x.shape, blocks))


# ---------------------------------------------------------------------------- API
def unfold(x, window_sizes, *, strides=None, dilations=None, start_padding=None, end_padding=None, device=None):
    """DML_UNFOLD (im2col, as torch.nn.Unfold): the sliding blocks of x [N, C, spatial...]
    as the columns of [N, C * prod(window_sizes), L]; zero outside the input. Each of
    window_sizes, strides (default 1), dilations (1), start_padding and end_padding (0) is
    one int for every spatial axis or one per axis."""
    return Call([("x", x)], {"window_sizes": window_sizes, "strides": strides, "dilations": dilations,
                             "start_padding": start_padding, "end_padding": end_padding}, device)


def arguments(desc) -> dict:
    return window_arguments(desc)


WINDOW_CLI = (
    CliArg("--window-sizes", "window size per spatial axis, comma-separated (default 2 per axis)"),
    CliArg("--strides", "window strides per spatial axis (default 1)"),
    CliArg("--dilations", "window dilations per spatial axis (default 1)"),
    CliArg("--start-padding", "zero padding before each spatial axis (default 0)"),
    CliArg("--end-padding", "zero padding after each spatial axis (default 0)"),
)


def cli_window(a: dict, count: int) -> dict:
    """The window fields of `gpudml shader` options (a spatial axis count `count`)."""
    return {"window_sizes": a["window_sizes"] or (2,) * count, "strides": a["strides"], "dilations": a["dilations"],
            "start_padding": a["start_padding"], "end_padding": a["end_padding"]}


def from_cli(x: TensorDesc, a: dict) -> UnfoldOperatorDesc:
    window = cli_window(a, x.rank - 2)
    return infer_output(x, window.pop("window_sizes"), **window)


PAGE = "ns-directml-dml_unfold_operator_desc.md"
_FIVE = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)


def _page_output(rows) -> np.ndarray:
    return np.array(rows, np.float32)[None]


SPEC = OpSpec(
    name=OP, key="unfold", desc=UnfoldOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=unfold, tensors=("x",), arguments=arguments, planner=UNFOLD,
    cli=Cli(WINDOW_CLI, from_cli, "--shape 1,1,5,5 --window-sizes 3,3 --start-padding 1,0 --end-padding 1,0"),
    page="DML_UNFOLD_OPERATOR_DESC",
    examples=(
        Example("unfold-1", _FIVE, {"window_sizes": [3, 3]},
                _page_output([[b + w for b in (0, 1, 2, 5, 6, 7, 10, 11, 12)] for w in (0, 1, 2, 5, 6, 7, 10, 11, 12)]),
                PAGE),
        # The page titles it "1-channel, padded fold": it is an unfold (its sizes and values).
        Example("unfold-2", _FIVE, {"window_sizes": [3, 3], "start_padding": [1, 0], "end_padding": [1, 0]},
                _page_output([[0, 0, 0, 0, 1, 2, 5, 6, 7, 10, 11, 12, 15, 16, 17],
                              [0, 0, 0, 1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18],
                              [0, 0, 0, 2, 3, 4, 7, 8, 9, 12, 13, 14, 17, 18, 19],
                              [0, 1, 2, 5, 6, 7, 10, 11, 12, 15, 16, 17, 20, 21, 22],
                              [1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18, 21, 22, 23],
                              [2, 3, 4, 7, 8, 9, 12, 13, 14, 17, 18, 19, 22, 23, 24],
                              [5, 6, 7, 10, 11, 12, 15, 16, 17, 20, 21, 22, 0, 0, 0],
                              [6, 7, 8, 11, 12, 13, 16, 17, 18, 21, 22, 23, 0, 0, 0],
                              [7, 8, 9, 12, 13, 14, 17, 18, 19, 22, 23, 24, 0, 0, 0]]), PAGE),
    ),
)
