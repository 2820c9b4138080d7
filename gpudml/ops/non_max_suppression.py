"""NON_MAX_SUPPRESSION: gpudml's extension (docs/operators/non_max_suppression.md). DirectML
has no operator for it (ONNX Runtime's DirectML execution provider runs ONNX's
NonMaxSuppression on the CPU); gpudml runs it on the GPU (kernels/nms.py), matching ONNX's
reference (onnx.reference's NonMaxSuppression) exactly.

Per batch b and class c: the boxes whose score is greater than `score_threshold` (all of
them without one), by descending score (ties: the lower box index first), each selected
unless its IoU with a box selected before it in that class is greater than
`iou_threshold` (strictly), until `max_output_boxes_per_class` are selected. Boxes are
[y1, x1, y2, x2] with either corner first (`center_point_box` 0) or [x_center, y_center,
width, height] (1). The output, as DirectML's data-dependent operators give theirs, is
sized for the worst case: `selected_indices` [B * C * K, 3] INT64 (K = min(max_output,
boxes)) whose first `count` rows are (b, c, box) in ONNX's order (b, then c, then the
order of selection), zeros after them; `count` a UINT32 [1].

Choices where ONNX's reference is silent: NaN scores rank after every other score (among
themselves by box index: the order stays a permutation); NaN or infinite coordinates are
outside what it defines (gpudml's comparisons follow IEEE); a NaN threshold selects
nothing (score) or suppresses nothing (IoU), as a comparison with NaN is false; a negative
max_output_boxes_per_class selects nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import nms as family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc, as_int, check_tensor_desc
from ..types import F32, I64, U32, DataType, FeatureLevel
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

OP = "NonMaxSuppression"
FIELDS = ("boxes_tensor", "scores_tensor", "output_count_tensor", "output_indices_tensor")
SUPPORT = support_table(OP, FIELDS, [(FeatureLevel.FL_1_0, {2, 3}, {F32}, {F32}, {U32}, {I64})])


@dataclass(frozen=True)
class NonMaxSuppressionOperatorDesc:
    boxes_tensor: TensorDesc
    scores_tensor: TensorDesc
    output_count_tensor: TensorDesc
    output_indices_tensor: TensorDesc
    center_point_box: int = 0
    max_output_boxes_per_class: int = 0
    iou_threshold: float = 0.0
    score_threshold: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "center_point_box", as_int(self.center_point_box, f"{OP}: center_point_box"))
        object.__setattr__(self, "max_output_boxes_per_class",
                           as_int(self.max_output_boxes_per_class, f"{OP}: max_output_boxes_per_class"))
        object.__setattr__(self, "iou_threshold", _float(self.iou_threshold, "iou_threshold"))
        if self.score_threshold is not None:
            object.__setattr__(self, "score_threshold", _float(self.score_threshold, "score_threshold"))


def _float(value, field: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidArgumentError(f"{OP}: {field} must be a number, got {value!r}")
    return float(np.float32(value))


def kept(max_output: int, boxes: int) -> int:
    """K: the rows per class of the worst case."""
    return max(0, min(int(max_output), int(boxes)))


def infer_output(boxes_tensor: TensorDesc, scores_tensor: TensorDesc, max_output_boxes_per_class=0,
                 iou_threshold=0.0, score_threshold=None, center_point_box=0) -> NonMaxSuppressionOperatorDesc:
    """The desc of `non_max_suppression(boxes, scores, ...)`: count [1] UINT32, selected
    [B * C * K, 3] INT64 (at least one row: DirectML sizes are at least 1)."""
    b = boxes_tensor.sizes[0] if boxes_tensor.rank == 3 else 1
    n = boxes_tensor.sizes[1] if boxes_tensor.rank == 3 else 1
    c = scores_tensor.sizes[1] if scores_tensor.rank == 3 else 1
    k = kept(as_int(max_output_boxes_per_class, "non_max_suppression: max_output_boxes_per_class"), n)
    return NonMaxSuppressionOperatorDesc(
        boxes_tensor, scores_tensor, TensorDesc(DataType.UINT32, (1,)),
        TensorDesc(DataType.INT64, (max(b * c * k, 1), 3)), center_point_box, max_output_boxes_per_class,
        iou_threshold, score_threshold)


def validate(desc: NonMaxSuppressionOperatorDesc, feature_level: FeatureLevel) -> None:
    """boxes [B, N, 4] and scores [B, C, N] FLOAT32, count [1] UINT32, selected
    [max(B * C * K, 1), 3] INT64; center_point_box 0 or 1."""
    named = dict(zip(FIELDS, (desc.boxes_tensor, desc.scores_tensor, desc.output_count_tensor,
                              desc.output_indices_tensor), strict=True))
    for field, td in named.items():
        check_tensor_desc(OP, field, td, is_output=field.startswith("output"))
        if td.rank != (3 if field in FIELDS[:2] else 1 if field == "output_count_tensor" else 2):
            raise InvalidArgumentError(f"{OP}: {field} has DimensionCount {td.rank}; it must be "
                                       f"{3 if field in FIELDS[:2] else 1 if field == 'output_count_tensor' else 2}")
    for field, td in named.items():
        SUPPORT.check(feature_level, 3 if field in FIELDS[:2] else 2, {field: td.data_type})
    boxes, scores = desc.boxes_tensor.sizes, desc.scores_tensor.sizes
    if boxes[2] != 4:
        raise InvalidArgumentError(f"{OP}: boxes_tensor.sizes {list(boxes)} must be [B, N, 4]")
    if scores[0] != boxes[0] or scores[2] != boxes[1]:
        raise InvalidArgumentError(f"{OP}: scores_tensor.sizes {list(scores)} must be [B, C, N] = [{boxes[0]}, C, "
                                   f"{boxes[1]}] (B and N of boxes_tensor.sizes {list(boxes)})")
    if desc.center_point_box not in (0, 1):
        raise InvalidArgumentError(f"{OP}: center_point_box = {desc.center_point_box} must be 0 (corners) or 1 "
                                   f"(centers and sizes)")
    if desc.output_count_tensor.sizes != (1,):
        raise InvalidArgumentError(f"{OP}: output_count_tensor.sizes {list(desc.output_count_tensor.sizes)} must "
                                   f"be [1]")
    rows = max(boxes[0] * scores[1] * kept(desc.max_output_boxes_per_class, boxes[1]), 1)
    if desc.output_indices_tensor.sizes != (rows, 3):
        raise InvalidArgumentError(
            f"{OP}: output_indices_tensor.sizes {list(desc.output_indices_tensor.sizes)} must be [max(B * C * K, 1), "
            f"3] = [{rows}, 3] (K = min(max_output_boxes_per_class, N) = "
            f"{kept(desc.max_output_boxes_per_class, boxes[1])})")


def problem(desc: NonMaxSuppressionOperatorDesc) -> family.Suppression:
    return family.Suppression(OP, desc.boxes_tensor, desc.scores_tensor, desc.output_count_tensor,
                              desc.output_indices_tensor, desc.center_point_box,
                              kept(desc.max_output_boxes_per_class, desc.boxes_tensor.sizes[1]),
                              desc.iou_threshold, desc.score_threshold)


NON_MAX_SUPPRESSION = ProblemPlanner(problem, family.FAMILY)


# ---------------------------------------------------------------------------- reference
def _suppresses(a: np.ndarray, b: np.ndarray, center: int, threshold: np.float32) -> bool:
    """ONNX's reference suppress_by_iou, in float32 scalars (numpy's correctly rounded ops)."""
    if center:
        ah, bh = a[2:] / np.float32(2), b[2:] / np.float32(2)
        x1, x2 = (a[0] - ah[0], a[0] + ah[0]), (b[0] - bh[0], b[0] + bh[0])
        y1, y2 = (a[1] - ah[1], a[1] + ah[1]), (b[1] - bh[1], b[1] + bh[1])
    else:
        x1, x2 = sorted_pair(a[1], a[3]), sorted_pair(b[1], b[3])
        y1, y2 = sorted_pair(a[0], a[2]), sorted_pair(b[0], b[2])
    ix = (max(x1[0], x2[0]), min(x1[1], x2[1]))
    if ix[1] <= ix[0]:
        return False
    iy = (max(y1[0], y2[0]), min(y1[1], y2[1]))
    if iy[1] <= iy[0]:
        return False
    inter = (ix[1] - ix[0]) * (iy[1] - iy[0])
    if inter <= 0:
        return False
    area1 = (x1[1] - x1[0]) * (y1[1] - y1[0])
    area2 = (x2[1] - x2[0]) * (y2[1] - y2[0])
    union = area1 + area2 - inter
    if area1 <= 0 or area2 <= 0 or union <= 0:
        return False
    return bool(inter / union > threshold)


def sorted_pair(lhs, rhs):
    return (rhs, lhs) if lhs >= rhs else (lhs, rhs)


def reference(boxes, scores, max_output_boxes_per_class=0, iou_threshold=0.0, score_threshold=None,
              center_point_box=0) -> list[np.ndarray]:
    """[count, selected]: ONNX's reference NonMaxSuppression (float32 arithmetic), its rows
    first in [max(B * C * K, 1), 3] INT64, zeros after; count UINT32 [1]."""
    boxes, scores = np.asarray(boxes, np.float32), np.asarray(scores, np.float32)
    b_count, n = boxes.shape[:2]
    c_count = scores.shape[1]
    k = kept(max_output_boxes_per_class, n)
    iou = np.float32(math.inf if math.isnan(float(iou_threshold)) else iou_threshold)
    rows = []
    for b in range(b_count):
        for c in range(c_count):
            s = scores[b, c]
            candidates = [i for i in range(n) if score_threshold is None or s[i] > np.float32(score_threshold)]
            candidates.sort(key=lambda i: (-float(s[i]), i))
            chosen: list[int] = []
            for i in candidates:
                if len(chosen) >= k:
                    break
                if not any(_suppresses(boxes[b, i], boxes[b, j], center_point_box, iou) for j in chosen):
                    chosen.append(i)
            rows += [(b, c, i) for i in chosen]
    out = np.zeros((max(b_count * c_count * k, 1), 3), np.int64)
    if rows:
        out[:len(rows)] = rows
    return [np.array([len(rows)], np.uint32), out]


# ---------------------------------------------------------------------------- API
def non_max_suppression(boxes, scores, max_output_boxes_per_class=0, iou_threshold=0.0, score_threshold=None, *,
                        center_point_box=0, device=None):
    """gpudml's extension (DirectML has no operator): ONNX's NonMaxSuppression on the GPU,
    matching its reference exactly. boxes [B, N, 4], scores [B, C, N] (FLOAT32). Returns
    (count, selected): count UINT32 [1], selected INT64 [max(B * C * K, 1), 3] (K =
    min(max_output_boxes_per_class, N)) whose first `count` rows are (batch, class, box)
    in ONNX's order, zeros after. Boxes are [y1, x1, y2, x2] (center_point_box 0, either
    corner first) or [x, y, width, height] (1); a box is dropped when its IoU with one
    selected before it is greater than iou_threshold; only scores greater than
    score_threshold (None: every box) are candidates."""
    return Call([("boxes", boxes), ("scores", scores)],
                {"max_output_boxes_per_class": max_output_boxes_per_class, "iou_threshold": iou_threshold,
                 "score_threshold": score_threshold, "center_point_box": center_point_box}, device)


def arguments(desc: NonMaxSuppressionOperatorDesc) -> dict:
    return {"max_output_boxes_per_class": desc.max_output_boxes_per_class, "iou_threshold": desc.iou_threshold,
            "score_threshold": desc.score_threshold, "center_point_box": desc.center_point_box}


def from_cli(x: TensorDesc, a: dict) -> NonMaxSuppressionOperatorDesc:
    """--shape is boxes' [B, N, 4] (or N boxes of one batch); one class unless --classes."""
    n = x.sizes[1] if x.rank == 3 else x.sizes[0]
    b = x.sizes[0] if x.rank == 3 else 1
    classes = a["classes"][0] if a["classes"] else 1
    return infer_output(TensorDesc(DataType.FLOAT32, (b, n, 4)), TensorDesc(DataType.FLOAT32, (b, classes, n)),
                        a["max_output"][0] if a["max_output"] else n, 0.5)


def sample(desc: NonMaxSuppressionOperatorDesc, rng) -> list:
    """Boxes of random corners in [0, 10) (overlapping), scores in [0, 1)."""
    boxes = rng.uniform(0, 10, desc.boxes_tensor.required_elements).astype(np.float32)
    return [boxes, rng.random(desc.scores_tensor.required_elements).astype(np.float32)]


_BOXES = np.array([[[0.0, 0.0, 1.0, 1.0], [0.0, 0.1, 1.0, 1.1], [0.0, -0.1, 1.0, 0.9], [0.0, 10.0, 1.0, 11.0],
                    [0.0, 10.1, 1.0, 11.1], [0.0, 100.0, 1.0, 101.0]]], np.float32)
_SCORES = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], np.float32)

SPEC = OpSpec(
    name=OP, key="non_max_suppression", desc=NonMaxSuppressionOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=non_max_suppression, tensors=("boxes", "scores"), arguments=arguments,
    planner=NON_MAX_SUPPRESSION,
    cli=Cli((CliArg("--classes", "classes (default 1)"), CliArg("--max-output", "boxes per class (default all)")),
            from_cli, "--shape 1,5000,4"),
    page="NON_MAX_SUPPRESSION (gpudml's extension: ONNX's NonMaxSuppression)", sample=sample,
    examples=(
        # ONNX's test_nonmaxsuppression_suppress_by_IOU (its node test's data)
        Example("non_max_suppression-1", _BOXES, {"scores": _SCORES, "max_output_boxes_per_class": 3,
                                                  "iou_threshold": 0.5},
                [np.array([3], np.uint32), np.array([[0, 0, 3], [0, 0, 0], [0, 0, 5]], np.int64)],
                "onnx: node test test_nonmaxsuppression_suppress_by_IOU"),
    ),
)
