"""DML_TILE_OPERATOR_DESC (docs/operators/tile.md): the input repeated `repeats[i]` times
along each axis i; output coordinate o reads input coordinate o mod n on every axis."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import functional
from ..builder import KernelPlan
from ..errors import InvalidArgumentError
from ..tensor_desc import TensorDesc, as_int_tuple, check_length, merge_axes
from ..types import F16, F32, F64, TYPES_8, TYPES_11, FeatureLevel
from . import movement
from .base import check_copy_tensors, gather, int_list
from .spec import CliArg, Example, OpSpec, support_table

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


# ---------------------------------------------------------------------------- kernels
def strategies_for(desc: TileOperatorDesc, caps, chunk: str | None = None) -> tuple[str, ...]:
    return movement.strategies_for(desc.output_tensor, caps)


def chain_stage(desc: TileOperatorDesc) -> movement.StageRule:
    """Every axis of the desc that repeats, as a stage of a chain (fused graphs)."""
    repeated = tuple(i for i, r in enumerate(desc.repeats) if r > 1)
    return _stage(repeated, desc.input_tensor.sizes)


def _stage(axes, sizes) -> movement.StageRule:
    """The stage folding the coordinates of `axes` modulo `sizes` (one per kernel axis)."""
    return movement.StageRule("tile.wgsl.j2", params={"axes": tuple(axes)}, uniforms={"tile_sizes": tuple(sizes)})


def plan(desc: TileOperatorDesc, caps, strategy: str, chunk: str | None = None) -> KernelPlan:
    """A repeated axis of one element is a broadcast (source stride 0, no modulo); the
    other repeated axes stay apart, and the axes that do not repeat merge where they are
    contiguous in both tensors (size-1 axes drop). No repeated axis left: a copy."""
    inp, out = desc.input_tensor, desc.output_tensor
    source = [0 if n == 1 else s for n, s in zip(inp.sizes, inp.effective_strides, strict=True)]
    tiled = {i for i, (n, r) in enumerate(zip(inp.sizes, desc.repeats, strict=True)) if r > 1 and n > 1}
    axes = merge_axes(out.sizes, source, out.effective_strides, fixed=tiled)
    folded = [k for k, a in enumerate(axes) if a.axes and a.axes[0] in tiled]
    stages = [_stage(folded, [inp.sizes[a.axes[0]] if k in folded else a.size for k, a in enumerate(axes)])]
    kernel_out = TensorDesc(out.data_type, [a.size for a in axes], [a.strides[1] for a in axes])
    the_chain = movement.chain(stages if folded else [], [a.strides[0] for a in axes])
    return KernelPlan((movement.movement_dispatch(strategy, kernel_out, the_chain, chunk=chunk),))


# ---------------------------------------------------------------------------- API
def tile(x, repeats, *, device=None):
    """DML_TILE: x repeated `repeats[i]` (>= 1) times along each axis i, as numpy's tile
    with one repeat per axis."""
    return functional.call(SPEC, device, [("x", x)], repeats=repeats)


def arguments(desc: TileOperatorDesc) -> dict:
    return {"repeats": desc.repeats}


def from_cli(x: TensorDesc, a: dict) -> TileOperatorDesc:
    return infer_output(x, a["repeats"] or (2,) * x.rank)


_PAGE = "ns-directml-dml_tile_operator_desc.md"

SPEC = OpSpec(
    name=OP, key="tile", desc=TileOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    strategies=movement.STRATEGIES, strategies_for=strategies_for, plan=plan, options=movement.OPTIONS,
    variants=movement.variants,
    reference=reference, functional=tile, tensors=("x",), arguments=arguments, chain_stage=chain_stage,
    cli=(CliArg("--repeats", "repeats per axis, comma-separated (default 2 per axis)"),),
    from_cli=from_cli, cli_example="--shape 1,1,2,3 --repeats 1,1,3,3",
    page="DML_TILE_OPERATOR_DESC",
    examples=(
        # The page labels the output "InputTensor"; it is OutputTensor (sizes {1, 1, 6, 9}).
        Example("tile-1", np.array([[1, 2, 3], [4, 5, 6]], np.float32).reshape(1, 1, 2, 3),
                {"repeats": [1, 1, 3, 3]},
                np.array([[1, 2, 3, 1, 2, 3, 1, 2, 3], [4, 5, 6, 4, 5, 6, 4, 5, 6]] * 3,
                         np.float32).reshape(1, 1, 6, 9), _PAGE),
    ),
)
