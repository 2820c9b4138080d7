"""DML_DEPTH_TO_SPACE, DML_DEPTH_TO_SPACE1, DML_SPACE_TO_DEPTH and DML_SPACE_TO_DEPTH1, four
rows of one table: permutations between a deep tensor [N, C * b * b, H, W] and a shallow one
[N, C, H * b, W * b], b the block size. DEPTH_TO_SPACE reads the deep tensor and writes the
shallow one, SPACE_TO_DEPTH the reverse. The versions 1 (FL 2.1) add `order`
(DML_DEPTH_SPACE_ORDER, gpudml.DepthSpaceOrder): with (i, j) the position inside a block and
c the shallow channel, the deep channel is (i b + j) C + c in DEPTH_COLUMN_ROW order (the
first versions' only order, ONNX's "DCR") and (c b + i) b + j in COLUMN_ROW_DEPTH order
(ONNX's "CRD"). The kernels are the data-movement family's (kernels/movement/space_depth.py):
bit-exact for every type, a strided copy alone, a stage of a graph's fused chains.

What the pages say, as implemented:

- InputTensor and OutputTensor: 4-D, one DataType; the types and levels of each page's
  "Tensor support" table. DML_DEPTH_TO_SPACE's page (the 2018 version stored) has neither
  a table nor an example: its table is taken to be its inverse DML_SPACE_TO_DEPTH's (FL
  1.0 FLOAT32/FLOAT16, FL 2.1 the 8 types, FL 5.0 the 11), and its example is
  DML_SPACE_TO_DEPTH's read backwards (both tensors are printed on that page), which is
  what the conformance kit checks it against. The pages of the versions 1 list only the FL
  2.1 table (8 types: no 64-bit types), and so does gpudml.
- BlockSize: a UINT; the pages give no least value. 0 would divide by zero: gpudml asks for
  1 or more (1 is a copy, as ONNX's blocksize 1).
- DEPTH_TO_SPACE: the input's channels a multiple of b * b; the output's sizes
  [N, C / (b * b), H * b, W * b]. SPACE_TO_DEPTH: the input's height and width multiples of
  b; the output's sizes [N, C * b * b, H / b, W / b] (DML_SPACE_TO_DEPTH1's page prints
  the DEPTH_TO_SPACE formula for its output's dimensions; its examples, followed here, are
  the SPACE_TO_DEPTH ones).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.movement.space_depth import DEPTH_TO_SPACE, SPACE_TO_DEPTH
from ..tensor_desc import TensorDesc, as_int
from ..types import F16, F32, TYPES_8, TYPES_11, DepthSpaceOrder, FeatureLevel
from .base import check_copy_tensors
from .spec import Call, Cli, CliArg, Example, OpSpec, desc_class, support_table

FL = FeatureLevel
UINT32_MAX = 2**32 - 1
DCR, CRD = DepthSpaceOrder.DEPTH_COLUMN_ROW, DepthSpaceOrder.COLUMN_ROW_DEPTH
#: DML_SPACE_TO_DEPTH's page's tables (and, inferred, DML_DEPTH_TO_SPACE's: module docstring).
SUPPORT_ROWS_0 = [(FL.FL_5_0, {4}, TYPES_11), (FL.FL_2_1, {4}, TYPES_8), (FL.FL_1_0, {4}, {F32, F16})]
#: The table of DML_DEPTH_TO_SPACE1's and DML_SPACE_TO_DEPTH1's pages.
SUPPORT_ROWS_1 = [(FL.FL_2_1, {4}, TYPES_8)]


@dataclass(frozen=True)
class Row:
    """One operator of the table: DirectML's name, its functional name, whether it writes
    the shallow tensor (DEPTH_TO_SPACE), whether it has `order` (the versions 1), its
    support rows, its page (the desc's struct) and its examples ((input, arguments, output)
    each, from the stored page `page_file`)."""

    op: str
    functional_name: str
    to_space: bool
    has_order: bool
    support_rows: list
    page: str
    page_file: str
    examples: tuple

    @property
    def key(self) -> str:
        return self.functional_name if self.functional_name[-1].isdigit() else self.functional_name + "1"


# ---------------------------------------------------------------------------- the pages' tensors
#: The deep tensor of every example ({1, 8, 2, 3}, UINT32) and the shallow ones of each order.
_DEEP = (np.array([0, 9, 18, 27, 36, 45, 54, 63], np.uint32).reshape(1, 8, 1, 1)
         + np.array([0, 1, 2, 3, 4, 5], np.uint32).reshape(1, 1, 2, 3))
_SHALLOW_DCR = np.array([
    [[0, 18, 1, 19, 2, 20], [36, 54, 37, 55, 38, 56], [3, 21, 4, 22, 5, 23], [39, 57, 40, 58, 41, 59]],
    [[9, 27, 10, 28, 11, 29], [45, 63, 46, 64, 47, 65], [12, 30, 13, 31, 14, 32], [48, 66, 49, 67, 50, 68]],
], np.uint32).reshape(1, 2, 4, 6)
_SHALLOW_CRD = np.array([
    [[0, 9, 1, 10, 2, 11], [18, 27, 19, 28, 20, 29], [3, 12, 4, 13, 5, 14], [21, 30, 22, 31, 23, 32]],
    [[36, 45, 37, 46, 38, 47], [54, 63, 55, 64, 56, 65], [39, 48, 40, 49, 41, 50], [57, 66, 58, 67, 59, 68]],
], np.uint32).reshape(1, 2, 4, 6)
_S2D0 = "ns-directml-dml_space_to_depth_operator_desc.md"
_D2S1 = "ns-directml-dml_depth_to_space1_operator_desc.md"
_S2D1 = "ns-directml-dml_space_to_depth1_operator_desc.md"

TABLE = (
    # DML_DEPTH_TO_SPACE's page has no example: its inverse's, read backwards (module docstring).
    Row("DepthToSpace", "depth_to_space0", True, False, SUPPORT_ROWS_0, "DML_DEPTH_TO_SPACE_OPERATOR_DESC", _S2D0,
        ((_DEEP, {"block_size": 2}, _SHALLOW_DCR),)),
    Row("DepthToSpace1", "depth_to_space", True, True, SUPPORT_ROWS_1, "DML_DEPTH_TO_SPACE1_OPERATOR_DESC", _D2S1,
        ((_DEEP, {"block_size": 2, "order": "depth_column_row"}, _SHALLOW_DCR),
         (_DEEP, {"block_size": 2, "order": "column_row_depth"}, _SHALLOW_CRD))),
    Row("SpaceToDepth", "space_to_depth0", False, False, SUPPORT_ROWS_0, "DML_SPACE_TO_DEPTH_OPERATOR_DESC", _S2D0,
        ((_SHALLOW_DCR, {"block_size": 2}, _DEEP),)),
    Row("SpaceToDepth1", "space_to_depth", False, True, SUPPORT_ROWS_1, "DML_SPACE_TO_DEPTH1_OPERATOR_DESC", _S2D1,
        ((_SHALLOW_DCR, {"block_size": 2, "order": "depth_column_row"}, _DEEP),
         (_SHALLOW_CRD, {"block_size": 2, "order": "column_row_depth"}, _DEEP))),
)


# ---------------------------------------------------------------------------- the reference
def depth_to_space_reference(x, block_size, order="depth_column_row") -> np.ndarray:
    """ONNX's definition: the deep tensor reshaped to 6 axes, transposed, reshaped back."""
    x = np.asarray(x)
    b, order = _reference_args(x, block_size, order)
    n, channels, h, w = x.shape
    if channels % (b * b):
        raise ValueError(f"channels {channels} are not a multiple of block_size^2 = {b * b}")
    c = channels // (b * b)
    if order == DCR:
        y = x.reshape(n, b, b, c, h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c, b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return np.ascontiguousarray(y.reshape(n, c, h * b, w * b))


def space_to_depth_reference(x, block_size, order="depth_column_row") -> np.ndarray:
    """ONNX's definition: the shallow tensor reshaped to 6 axes, transposed, reshaped back."""
    x = np.asarray(x)
    b, order = _reference_args(x, block_size, order)
    n, c, h, w = x.shape
    if h % b or w % b:
        raise ValueError(f"height {h} and width {w} must be multiples of block_size {b}")
    y = x.reshape(n, c, h // b, b, w // b, b)
    y = y.transpose(0, 3, 5, 1, 2, 4) if order == DCR else y.transpose(0, 1, 3, 5, 2, 4)
    return np.ascontiguousarray(y.reshape(n, c * b * b, h // b, w // b))


def _reference_args(x: np.ndarray, block_size, order) -> tuple[int, DepthSpaceOrder]:
    if x.ndim != 4:
        raise ValueError(f"x must have 4 dimensions, got {x.ndim}")
    b = as_int(block_size, "block_size")
    if b < 1:
        raise ValueError(f"block_size {b} must be at least 1")
    return b, DepthSpaceOrder.coerce(order)


# ---------------------------------------------------------------------------- shapes, rules
def output_sizes(row: Row, sizes, b: int) -> tuple[int, ...] | None:
    """The output's sizes for an input of `sizes` (None where b or the sizes do not fit)."""
    if len(sizes) != 4 or b < 1:
        return None
    n, c, h, w = sizes
    if row.to_space:
        return None if c % (b * b) else (n, c // (b * b), h * b, w * b)
    return None if h % b or w % b else (n, c * b * b, h // b, w // b)


def check(row: Row, desc, feature_level: FeatureLevel, support) -> None:
    """Both tensors (4-D, one type, the support row), BlockSize 1..UINT32_MAX, the input's
    sizes divisible as the direction needs, the output's sizes the input's rearranged."""
    inp, out = desc.input_tensor, desc.output_tensor
    check_copy_tensors(row.op, support, feature_level, inp, out)
    b = desc.block_size
    if not 1 <= b <= UINT32_MAX:
        raise InvalidArgumentError(f"{row.op}: block_size = {b} must be in 1..{UINT32_MAX} (a UINT larger than 0)")
    n, c, h, w = inp.sizes
    if row.to_space and c % (b * b):
        raise InvalidArgumentError(
            f"{row.op}: input_tensor.sizes[1] (channels) = {c} must be a multiple of block_size * block_size = "
            f"{b} * {b} = {b * b}")
    if not row.to_space:
        for axis, name, size in ((2, "height", h), (3, "width", w)):
            if size % b:
                raise InvalidArgumentError(
                    f"{row.op}: input_tensor.sizes[{axis}] ({name}) = {size} must be a multiple of block_size = {b}")
    want = output_sizes(row, inp.sizes, b)
    if tuple(out.sizes) != want:
        rule = "[N, C / (b * b), H * b, W * b]" if row.to_space else "[N, C * b * b, H / b, W / b]"
        raise InvalidArgumentError(
            f"{row.op}: output_tensor.sizes {list(out.sizes)} must be {list(want)} ({rule} of input_tensor.sizes "
            f"{list(inp.sizes)}, block_size b = {b})")


def spec(row: Row) -> OpSpec:
    """The OpSpec of the operator of `row`."""
    name, key = row.functional_name, row.key

    def post_init(desc):  # block_size an int, order a DepthSpaceOrder
        object.__setattr__(desc, "block_size", as_int(desc.block_size, f"{row.op}: block_size"))
        if row.has_order:
            object.__setattr__(desc, "order", DepthSpaceOrder.coerce(desc.order, f"{row.op}: order"))

    fields = [("input_tensor", TensorDesc), ("output_tensor", TensorDesc), ("block_size", int)]
    desc = desc_class(
        f"{row.op}OperatorDesc", __name__, __post_init__=post_init,
        fields=fields + ([("order", DepthSpaceOrder)] if row.has_order else []),
        doc=f"{row.page}: {'depth into b x b spatial blocks' if row.to_space else 'b x b spatial blocks into depth'}.")
    support = support_table(row.op, ("input_tensor", "output_tensor"), row.support_rows)

    def infer_any(input_tensor: TensorDesc, block_size, *order):
        """The desc of the functional call: the output's sizes rearranged (where they do not
        divide, or block_size is not positive, the input's, for validate to name the rule)."""
        b = as_int(block_size, f"{name}: block_size")
        sizes = output_sizes(row, input_tensor.sizes, b) or input_tensor.sizes
        extra = tuple(DepthSpaceOrder.coerce(o, f"{name}: order") for o in order)
        return desc(input_tensor, TensorDesc(input_tensor.data_type, sizes), b, *extra)

    if row.has_order:
        def infer(input_tensor: TensorDesc, block_size, order="depth_column_row"):
            return infer_any(input_tensor, block_size, order)
    else:
        def infer(input_tensor: TensorDesc, block_size):
            return infer_any(input_tensor, block_size)
    infer.__doc__ = infer_any.__doc__

    def validate(d, feature_level: FeatureLevel) -> None:
        check(row, d, feature_level, support)

    reference_fn = depth_to_space_reference if row.to_space else space_to_depth_reference

    if row.has_order:
        def functional(x, block_size, order="depth_column_row", *, device=None):
            return Call([("x", x)], {"block_size": block_size, "order": order}, device)

        def reference(x, block_size, order="depth_column_row"):
            return reference_fn(x, block_size, order)
    else:
        def functional(x, block_size, *, device=None):
            return Call([("x", x)], {"block_size": block_size}, device)

        def reference(x, block_size):
            return reference_fn(x, block_size)

    what = ("x's channels into block_size x block_size blocks of its height and width: [N, C * b * b, H, W] -> "
            "[N, C, H * b, W * b]" if row.to_space else
            "x's block_size x block_size blocks of height and width into its channels: [N, C, H * b, W * b] -> "
            "[N, C * b * b, H, W]")
    orders = (" `order`: \"depth_column_row\" (ONNX's \"DCR\": deep channel (i b + j) C + c) or "
              "\"column_row_depth\" (\"CRD\": (c b + i) b + j), a DepthSpaceOrder or its value too."
              if row.has_order else " Depth-column-row order (deep channel (i b + j) C + c).")
    for f in (functional, reference):
        f.__name__ = f.__qualname__ = name
        f.__doc__ = f"DML_{key.upper()}: {what}, any 4-D type its table lists, bit-exact.{orders}"

    def arguments(d) -> dict:
        return {"block_size": d.block_size, **({"order": d.order} if row.has_order else {})}

    def from_cli(x: TensorDesc, a: dict):
        b = a["block_size"]
        if b is None:  # 2 where the sizes divide, else 1
            b = 2 if x.rank == 4 and output_sizes(row, x.sizes, 2) is not None else 1
        return infer(x, b, a.get("order") or "depth_column_row") if row.has_order else infer(x, b)

    options = (CliArg("--block-size", "BlockSize (default 2 where the sizes divide, else 1)", "number"),)
    if row.has_order:
        options += (CliArg("--order", "DEPTH_COLUMN_ROW (DCR) or COLUMN_ROW_DEPTH (CRD)", "str", "DEPTH_COLUMN_ROW"),)
    shape = "--shape 8,256,64,64" if row.to_space else "--shape 8,64,128,128"
    return OpSpec(
        name=row.op, key=key, desc=desc, support=support, infer_output=infer, validate=validate,
        reference=reference, functional=functional, tensors=("x",), arguments=arguments,
        planner=DEPTH_TO_SPACE if row.to_space else SPACE_TO_DEPTH,
        cli=Cli(options, from_cli, shape + " --block-size 2" + (" --order crd" if row.has_order else "")),
        page=row.page,
        examples=tuple(Example(f"{key}-{number}", x, args, y, row.page_file)
                       for number, (x, args, y) in enumerate(row.examples, 1)),
    )


SPECS = tuple(spec(row) for row in TABLE)
DepthToSpaceOperatorDesc, DepthToSpace1OperatorDesc, SpaceToDepthOperatorDesc, SpaceToDepth1OperatorDesc = (
    s.desc for s in SPECS)
