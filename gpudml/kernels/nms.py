"""The non-maximum-suppression family: gpudml's extension NON_MAX_SUPPRESSION (DirectML has
no operator; ONNX Runtime's DirectML execution provider runs ONNX's NonMaxSuppression on the
CPU), matching ONNX's reference exactly.

Per (batch b, class c), the candidates are the boxes whose score passes the threshold
(strictly greater; every box without one), in descending score order, ties by the lower
box index; a candidate is selected unless its IoU with a box selected before it (in that
class) is greater than iou_threshold (strictly), until max_output_boxes_per_class are
selected. The IoU is computed as ONNX's reference computes it in float32, operation by
operation: corner boxes as [y1, x1, y2, x2] with either corner first, center boxes as [x,
y, w, h]; empty intersections and non-positive areas or unions never suppress. Its
products and its quotient are computed in integers (`mul_rn`, `div_rn` of
shaders/nms.wgsl.j2, IEEE's round to nearest even), since a shader compiler may fuse a
product into an addition (FMA) and WGSL's division is not correctly rounded (2.5 ULP):
the comparison with the threshold then gives ONNX's answer bit for bit, ties included.

Three passes (scratch: the candidates' order, per class their number, the selected box
indices and their number):

1. `rank`: an invocation per (class, box) counts the candidates before its box (a loop
   over the class' boxes) and writes the box index at that position;
2. `greedy`: a workgroup of WORKGROUP invocations per class walks its candidates in
   blocks of WORKGROUP: each invocation checks one candidate against the boxes selected
   before the block and against the block's earlier candidates, then invocation 0 walks
   the block in order, selecting a candidate unless a box selected before the block or a
   candidate of the block it selected suppresses it (two barriers per block, not per
   candidate); the walk is cut into dispatches of `chunk` candidates (the loop budget:
   base.LOOP_BUDGET), the state kept in scratch;
3. `write`: an invocation per class writes its selections as rows (b, c, box) of the
   INT64 output at its place (the classes before it in (b, c) order), zero rows for the
   rest of its share of the worst case ([B * C * K, 3], K = min(max_output, boxes)) after
   the total, and the last class the total into the count.

No atomics decide an order: every run gives the same bytes. Strategy: `workgroups` (the
only one; CPU- and GPU-class adapters alike).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..errors import UnsupportedError
from ..tensor_desc import TensorDesc
from .base import LOOP_BUDGET, KernelFamily
from .builder import Dispatch, KernelPlan, f32_bits, input_buffer, output_buffer, scratch_buffer

WORKGROUP = 64
#: Loop iterations an invocation spends besides its per-candidate work.
_OVERHEAD = 64
TEMPLATE = "nms.wgsl.j2"


class Suppression(NamedTuple):
    """What the family computes (module docstring): boxes [B, N, 4] and scores [B, C, N]
    (FLOAT32, their own strides), the count and the selected rows [B * C * K, 3] (INT64)."""

    op: str
    boxes: TensorDesc
    scores: TensorDesc
    count: TensorDesc
    selected: TensorDesc
    center_point_box: int
    max_output: int  # K: per class, at most the boxes
    iou_threshold: float
    score_threshold: float | None

    @property
    def boxes_per_class(self) -> int:
        return self.boxes.sizes[1]

    @property
    def classes(self) -> int:
        return self.scores.sizes[0] * self.scores.sizes[1]


def _bits(x: float) -> int:
    """The float32 bits of x; NaN as +infinity (a comparison with NaN is false, as with +inf)."""
    return f32_bits(math.inf if math.isnan(x) else x)


def chunk(p: Suppression) -> int:
    """Candidates per `greedy` dispatch, whole blocks of WORKGROUP: a block costs an
    invocation a check of its candidate against up to K selected boxes and up to WORKGROUP
    earlier candidates of the block, and invocation 0 a walk of the block."""
    blocks = (LOOP_BUDGET - _OVERHEAD) // (p.max_output + 2 * WORKGROUP + 2)
    return WORKGROUP * max(1, blocks)


def check(p: Suppression) -> None:
    n = p.boxes_per_class
    if n + _OVERHEAD > LOOP_BUDGET or p.classes + p.max_output + _OVERHEAD > LOOP_BUDGET:
        raise UnsupportedError(f"{p.op}: {n} boxes per class and {p.classes} classes: ranking a class' boxes loops "
                               f"over them all in one invocation, writing one loops over the classes and K rows "
                               f"(the loop budget: {LOOP_BUDGET - _OVERHEAD} steps); run fewer boxes per call")


def plan(p: Suppression) -> KernelPlan:
    check(p)
    n, bc, k = p.boxes_per_class, p.classes, p.max_output
    uniforms = {
        "boxes_per_class": n, "classes": bc, "class_count": p.scores.sizes[1], "max_output": k,
        "boxes_strides": p.boxes.effective_strides, "scores_strides": p.scores.effective_strides,
        "selected_strides": p.selected.effective_strides,
        "iou_bits": _bits(p.iou_threshold),
        "score_bits": _bits(p.score_threshold if p.score_threshold is not None else -math.inf),
        "first": 0, "last": 0,
    }
    params = {"center": bool(p.center_point_box), "thresholded": p.score_threshold is not None}
    order, counts = scratch_buffer(0, "order", writable=True), scratch_buffer(1, "counts", writable=True)
    chosen = scratch_buffer(2, "chosen", writable=True)
    kept_ranges = scratch_buffer(3, "kept", writable=True)
    boxes, scores = input_buffer(0, "boxes"), input_buffer(1, "scores")
    dispatches = [Dispatch(TEMPLATE, {**params, "pass": "rank"}, (boxes, scores, order, counts), uniforms,
                           bc * n, WORKGROUP)]
    step = chunk(p)
    for first in range(0, n, step):
        dispatches.append(Dispatch(TEMPLATE, {**params, "pass": "greedy"}, (boxes, order, counts, chosen, kept_ranges),
                                   {**uniforms, "first": first, "last": min(n, first + step)}, bc * WORKGROUP,
                                   WORKGROUP))
    dispatches.append(Dispatch(TEMPLATE, {**params, "pass": "write"},
                               (counts, chosen, output_buffer(0, "count", 32), output_buffer(1, "selected", 64)),
                               uniforms, bc, WORKGROUP))
    # counts: per class its candidates, then its selected number; chosen: K box indices per
    # class; kept: their ranges (4 floats each)
    return KernelPlan(tuple(dispatches), scratch_bytes=(4 * bc * n, 8 * bc, 4 * bc * max(k, 1), 16 * bc * max(k, 1)))


class SuppressionFamily(KernelFamily):
    strategies = ("workgroups",)
    options = ()

    def strategies_for(self, problem: Suppression, caps) -> tuple[str, ...]:
        check(problem)
        if caps is not None and caps.max_invocations_per_workgroup < WORKGROUP:
            raise UnsupportedError(f"{problem.op}: a workgroup of {WORKGROUP} invocations")
        return ("workgroups",)

    def plan(self, problem: Suppression, caps, strategy: str) -> KernelPlan:
        return plan(problem)


FAMILY = SuppressionFamily()
