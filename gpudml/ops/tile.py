"""DML_TILE_OPERATOR_DESC (docs/operators/tile.md): the input repeated `repeats[i]` times
along each axis i; output coordinate o reads input coordinate o mod n on every axis."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.movement.tile import TILE
from ..tensor_desc import TensorDesc, as_int_tuple, check_length
from ..types import F16, F32, F64, TYPES_8, TYPES_11, FeatureLevel
from .base import check_copy_tensors, gather, int_list
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

OP = "Tile"
UINT32_MAX = 2**32 - 1

#: The page's "Tensor support" tables: no level lists FLOAT64.
SUPPORT = support_table(OP, ("input_tensor", "output_tensor"), [
    (FeatureLevel.FL_4_1, (1, 8), TYPES_11 - {F64}),
    (FeatureLevel.FL_3_1, (1, 8), TYPES_8),
    (FeatureLevel.FL_2_1, {4}, TYPES_8),
    (FeatureLevel.FL_1_0, {4}, {F32, F16}),
])


@dataclass(frozen=True)
class TileOperatorDesc:
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    repeats: tuple[int, ...]

    def __post_init__(self):
        object.__setattr__(self, "repeats", as_int_tuple(self.repeats, f"{OP}: repeats"))


def infer_output(input_tensor: TensorDesc, repeats) -> TileOperatorDesc:
    """The desc of `tile(x, repeats)`: output sizes n * r per axis (where a repeat is not
    positive, or the count is wrong, the input's, for validation to name the repeat)."""
    repeats = as_int_tuple(repeats, "tile: repeats")
    sizes = input_tensor.sizes
    if len(repeats) == len(sizes):
        sizes = tuple(n * r if r >= 1 else n for n, r in zip(sizes, repeats, strict=True))
    return TileOperatorDesc(input_tensor, TensorDesc(input_tensor.data_type, sizes), repeats)


def validate(desc: TileOperatorDesc, feature_level: FeatureLevel) -> None:
    inp, out = desc.input_tensor, desc.output_tensor
    rank = check_copy_tensors(OP, SUPPORT, feature_level, inp, out)
    check_length(OP, "repeats", desc.repeats, rank)
    for i, r in enumerate(desc.repeats):
        if not 1 <= r <= UINT32_MAX:
            raise InvalidArgumentError(f"{OP}: repeats[{i}] = {r} must be in 1..{UINT32_MAX} (a UINT larger than 0)")
    for i, (n, r, m) in enumerate(zip(inp.sizes, desc.repeats, out.sizes, strict=True)):
        if m != n * r:
            raise InvalidArgumentError(
                f"{OP}: output_tensor.sizes[{i}] = {m} must equal input_tensor.sizes[{i}] * repeats[{i}] = "
                f"{n} * {r} = {n * r}")


# ---------------------------------------------------------------------------- reference
def reference(x, repeats) -> np.ndarray:
    """output[o] = x[o mod n] per axis, output sizes n * repeats (each >= 1; ValueError
    otherwise)."""
    x = np.asarray(x)
    repeats = int_list(repeats, x.ndim, "repeats")
    if any(r < 1 for r in repeats):
        raise ValueError(f"repeats {repeats}: each must be at least 1")
    return gather(x, [np.arange(n * r, dtype=np.int64) % n for n, r in zip(x.shape, repeats, strict=True)])


# ---------------------------------------------------------------------------- API
def tile(x, repeats, *, device=None):
    """DML_TILE: x repeated `repeats[i]` (>= 1) times along each axis i, as numpy's tile
    with one repeat per axis."""
    return Call([("x", x)], {"repeats": repeats}, device)


def arguments(desc: TileOperatorDesc) -> dict:
    return {"repeats": desc.repeats}


def from_cli(x: TensorDesc, a: dict) -> TileOperatorDesc:
    return infer_output(x, a["repeats"] or (2,) * x.rank)


_PAGE = "ns-directml-dml_tile_operator_desc.md"

SPEC = OpSpec(
    name=OP, key="tile", desc=TileOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=tile, tensors=("x",), arguments=arguments, planner=TILE,
    cli=Cli((CliArg("--repeats", "repeats per axis, comma-separated (default 2 per axis)"),),
            from_cli, "--shape 1,1,2,3 --repeats 1,1,3,3"),
    page="DML_TILE_OPERATOR_DESC",
    examples=(
        # The page labels the output "InputTensor"; it is OutputTensor (sizes {1, 1, 6, 9}).
        Example("tile-1", np.array([[1, 2, 3], [4, 5, 6]], np.float32).reshape(1, 1, 2, 3),
                {"repeats": [1, 1, 3, 3]},
                np.array([[1, 2, 3, 1, 2, 3, 1, 2, 3], [4, 5, 6, 4, 5, 6, 4, 5, 6]] * 3,
                         np.float32).reshape(1, 1, 6, 9), _PAGE),
    ),
)
