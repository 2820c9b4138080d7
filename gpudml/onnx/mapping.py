"""ONNX nodes as DirectML operators: the mapping table (one row per ONNX op type).

Each row says what ONNX Runtime's DirectML execution provider runs for an op type
(onnxruntime/core/providers/dml/DmlExecutionProvider/src/Operators/: one
DmlOperator<Name>.cpp per op type), the opsets it covers, the gpudml functional forms it
calls, and a function that records it (`build(ctx, node)`: the node's outputs) on a gpudml
Graph (an InferenceSession's) or runs it at once (`Context` without a graph: ONNX's node
tests, tests/test_onnx_nodes.py); this module is the one place that knows how an ONNX node
becomes DirectML operators. What the provider expresses in tensor descs rather than operators is the same
here: Reshape, Flatten, Squeeze, Unsqueeze and Identity-like reshapes are views of the
same buffer (`Graph.view`: no dispatch), Transpose and Expand are strides (a permutation,
stride 0) that the reading operator takes, or one DML_OPERATOR_ELEMENT_WISE_IDENTITY where
they must be written, as the provider's DmlOperatorCopy/Transpose do; numpy-style
broadcasting is stride 0 in the element-wise forms. Constant, Shape, Size and any node
whose inputs are all constants (shape arithmetic on initializers) are folded at load
(`gpudml.onnx.session`), so only nodes that read a runtime tensor come here.

What DirectML cannot express raises NotMapped with the reason (a test of ONNX's lists it
with that reason); what an operator rejects at the device's feature level (a data type its
support table lacks) is the functional form's InvalidArgumentError.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx

from .. import functional, fusion
from ..errors import InvalidArgumentError
from ..graph import Expression
from ..ops import spec_named
from ..ops.elementwise import ScaleBias
from ..ops.elementwise.fused import FusedActivation
from ..ops.random_generator import philox_state
from ..tensor_desc import view_strides
from . import sequences
from .attention import ATTENTION_ROWS, ONNX_ATTENTION_ROWS
from .contrib import CONTRIB_ROWS, ONNX_ROWS, gather_axis, gelu_tanh
from .nbits import NBITS_ROWS, cast_four, dequantize_linear, quantize_linear4
from .quantized import QUANTIZED_ROWS, integer_to_float
from .quantized import quant_value as _quant_value
from .values import NotMapped, as_expr, broadcast, materialize, rank, reshape, shape, transpose
from .values import dtype_of as _dtype

#: onnxruntime's contrib domain: its ops the DirectML execution provider runs are `CONTRIB`'s rows.
MS = "com.microsoft"

#: Ops onnxruntime registers in the ONNX domain that onnx has no schema for (its transformer optimizer
#: writes them there): mapped as ONNX ops; the session's onnx.checker sees them in MS's domain.
ORT_ONNX_DOMAIN = ("SimplifiedLayerNormalization",)

#: The newest opset of the onnx release gpudml is tested with (1.22.0).
NEWEST = onnx.defs.onnx_opset_version()


#: ONNX op type -> its first version (ai.onnx).
FIRST_VERSION: dict[str, int] = {}
for _schema in onnx.defs.get_all_schemas_with_history():
    if _schema.domain in ("", "ai.onnx"):
        FIRST_VERSION[_schema.name] = min(FIRST_VERSION.get(_schema.name, 10**6), _schema.since_version)


@dataclass(frozen=True)
class Mapping:
    op_type: str
    directml: str  # the DirectML operator(s) the execution provider uses
    build: Callable  # (ctx, node) -> list of outputs (Expressions or numpy constants)
    needs: tuple[str, ...]  # gpudml functional forms it calls
    domain: str = "ai.onnx"  # or MS: onnxruntime's contrib ops (`CONTRIB`)

    @property
    def since(self) -> int:
        """The first opset covered: 7, or the op's first version in ONNX; a contrib op's, 1 (the
        only version of the com.microsoft domain the provider registers)."""
        if self.domain == MS:
            return 1
        return max(7, FIRST_VERSION.get(self.op_type, 1))  # (ORT_ONNX_DOMAIN's: onnxruntime registers version 1)

    @property
    def opsets(self) -> str:
        return "1" if self.domain == MS else f"{self.since}-{NEWEST}"


class Node:
    """One ONNX node as a build function sees it: attributes, its inputs' values
    (Expressions, numpy constants, or None for an omitted optional input), its opset."""

    def __init__(self, proto: onnx.NodeProto, opset: int, inputs: list, outputs_wanted: list[bool]):
        self.proto = proto
        self.op_type = proto.op_type
        self.name = proto.name
        self.opset = opset
        self.inputs = inputs
        self.outputs_wanted = outputs_wanted  # per output: read by the graph or a graph output
        self.attrs = {a.name: _attr(onnx.helper.get_attribute_value(a)) for a in proto.attribute}

    def attr(self, key, default=None):
        return self.attrs.get(key, default)

    def input(self, k):
        return self.inputs[k] if k < len(self.inputs) else None

    def constant(self, k, what: str):
        """Input k, which DirectML needs when the graph is built (a shape, pads, axes): a
        numpy constant, or NotMapped. CONSTANT_INPUTS lists it (from that table, a session
        computes such an input on the host from its value inputs, or refuses the model at
        construction: gpudml/onnx/analysis.py)."""
        if what != CONSTANT_INPUTS.get(self.op_type, {}).get(k):
            raise RuntimeError(f"gpudml.onnx.mapping: {self.op_type}'s input {k} ({what}) is read as a constant but "
                               f"CONSTANT_INPUTS does not list it")
        value = self.input(k)
        if isinstance(value, Expression):
            raise NotMapped(f"{what} (input {k}) is computed at run time; DirectML needs it when the graph is built")
        return value


def _attr(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [v.decode() if isinstance(v, bytes) else v for v in value]
    return value


def _ints(a) -> list[int]:
    return [int(v) for v in np.asarray(a).reshape(-1)]


class Context:
    """Where a build function records a node's operators: on `graph` (an InferenceSession's
    gpudml Graph: values are Expressions, views are `Graph.view`, constants graph constants),
    or, `graph` None, eagerly on `device` (values are numpy arrays, each functional form runs
    at once, views are numpy's; tests/test_onnx_nodes.py runs ONNX's node tests so).
    `onnx_dtype(name)`: the element type (a numpy dtype) of the model's value `name` (CastLike's
    target); `onnx_rank(name)`: its ONNX rank, None where unknown (a session's rank-0 values
    are held as one element, [1]: `scalar`)."""

    def __init__(self, device, graph=None, onnx_dtype=None, onnx_rank=None):
        self.device = device
        self.graph = graph
        self._onnx_dtype = onnx_dtype
        self._onnx_rank = onnx_rank
        #: The random nodes' generator states, as graph inputs: (input name, initial state, blocks a run draws).
        self.random_states: list[tuple[str, np.ndarray, int]] = []
        #: (subgraph, {its input name: value}, label, opset) -> its outputs (SequenceMap's body, once per
        #: item: gpudml/onnx/sequences.py): a session records the subgraph in place; eagerly, its
        #: nodes run one by one (`eager_subgraph`).
        self.subgraph = self.eager_subgraph
        #: RotaryEmbedding's host tables, once per (caches, layout) for the whole graph (every
        #: layer's query and key rotations share them: contrib.rotary_tables).
        self.rotary_tables: dict = {}

    def as_expr(self, x):
        return as_expr(self, x)

    def scalar(self, name: str, x) -> bool:
        """Value `name`, recorded as `x`, is rank 0 in ONNX though held as one element ([1]): a
        graph input or a subgraph's input declared so (a Loop body's iteration number)."""
        if self._onnx_rank is None or not isinstance(x, Expression) or list(x.shape) != [1]:
            return False
        try:
            return self._onnx_rank(name) == 0
        except (KeyError, NotMapped):
            return False

    def reshape(self, x, sizes):
        return reshape(self, x, sizes)

    def eager_subgraph(self, graph: onnx.GraphProto, bound: dict, label: str, opset: int) -> list:
        """A subgraph run eagerly, its inputs `bound`: Constant, Shape and Size on the host,
        every other node through its row (what the subgraph reads from outside it is not known
        eagerly: NotMapped)."""
        values = {"": None, **{t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}, **bound}
        for proto in graph.node:
            missing = [name for name in proto.input if name not in values]
            if missing:
                raise NotMapped(f"{label}: {proto.op_type} reads {missing[0]!r} from outside the subgraph, which "
                                f"runs in a session only")
            inputs = [values[name] for name in proto.input]
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in proto.attribute}
            if proto.op_type == "Constant" and "value" in attrs:
                outs = [onnx.numpy_helper.to_array(attrs["value"])]
            elif proto.op_type in ("Shape", "Size"):
                sizes = shape(inputs[0])
                outs = [np.array(sizes[attrs.get("start", 0):attrs.get("end")] if proto.op_type == "Shape"
                                 else int(np.prod(sizes)), np.int64)]
            elif row(proto.op_type, proto.domain) is not None:
                node = Node(proto, opset, inputs, [bool(name) for name in proto.output])
                outs = row(proto.op_type, proto.domain).build(self, node)
            else:
                raise NotMapped(f"{label}: {proto.op_type}: {refusal(proto.op_type, proto.domain, opset)}")
            values.update(zip(proto.output, outs))
        return [values[v.name] for v in graph.output]

    def random_state(self, key: str, initial: np.ndarray, blocks: int):
        """The DML_RANDOM_GENERATOR state a random node (whose first output is `key`) reads:
        eagerly `initial`; in a graph, a graph input (named "gpudml.random_state:" + key) that
        the session feeds on each run, starting from `initial` and advanced by the `blocks`
        each run draws, as the provider writes the generator's output state back over its input
        state: successive runs draw on, a seed's sequence of runs repeats."""
        if self.graph is None:
            return initial
        name = f"gpudml.random_state:{key}"
        self.random_states.append((name, initial, blocks))
        return self.graph.input(list(initial.shape), np.uint32, name=name)

    def fn(self, name: str):
        """gpudml's functional form `name` on this context's device."""
        return functools.partial(functional.FUNCTIONS[name], device=self.device)

    def onnx_dtype(self, name: str) -> np.dtype:
        if self._onnx_dtype is None:
            raise NotMapped(f"the element type of {name!r} is not known")
        return self._onnx_dtype(name)


# ------------------------------------------------------------------------------ views


# ------------------------------------------------------------------------------ data-dependent sizes
@dataclass(frozen=True)
class DataDependent:
    """What a build function returns for a node whose output sizes depend on the data
    (NonZero, NonMaxSuppression) on a graph: `count`, an Expression of one UINT32 element
    (the rows the outputs have), `carried`, the worst-case tensors the outputs are cut
    from, and `finish(ctx, count, carried)`, the node's outputs for that count (an int),
    recorded on the graph after the split with `carried` as its inputs. An InferenceSession
    runs the graph up to the node, reads the count back (one readback) and builds the rest
    per observed count (cached: gpudml/onnx/session.py). Eagerly (`ctx.graph` None) the
    build function finishes at once (`data_dependent`)."""

    count: Expression
    carried: tuple
    finish: Callable


def data_dependent(ctx, count, carried, finish):
    """A build function's result for outputs whose sizes are `count`'s value: eagerly, the
    outputs themselves (the count read back now); on a graph, a DataDependent."""
    if ctx.graph is None:
        return finish(ctx, int(np.asarray(count).reshape(-1)[0]), tuple(carried))
    return DataDependent(count, tuple(carried), finish)


def _rows(ctx, x, count: int):
    """The first `count` rows of the 2-D x (a view of the same buffer)."""
    if not isinstance(x, Expression):
        return x[:count]
    return ctx.graph.view(x, [count, x.shape[1]], list(x.desc.effective_strides))


def _nonzero(ctx, n):
    """NONZERO_COORDINATES of x padded to rank 4 (5 for a rank-5 x) with one column per axis
    of x (the provider's {numElements, rank}); after the count is read back, its first
    `count` rows transposed (a view) and cast to INT64 ([rank, count], ONNX's layout).
    BOOL is UINT8. A rank-0 x is one element ([0, count] out); ranks past 5 have no
    DirectML operator (NONZERO_COORDINATES takes 4 and 5)."""
    x = as_expr(ctx, n.inputs[0])
    r = len(np.shape(n.inputs[0])) if not isinstance(n.inputs[0], Expression) else rank(n.inputs[0])
    if r > 5:
        raise NotMapped(f"an input of rank {r}: DML_OPERATOR_NONZERO_COORDINATES takes DimensionCount 4 and 5")
    sizes = shape(x)
    padded = reshape(ctx, x, [1] * (max(4, len(sizes)) - len(sizes)) + sizes)
    elements = int(np.prod(sizes))
    count, coords = ctx.fn("nonzero_coordinates")(padded, columns=max(r, 1))

    def finish(ctx, found: int, carried):
        if r == 0 or found == 0:
            return [np.zeros((r, found), np.int64)]
        flat = reshape(ctx, carried[0], [elements, r])
        return [_cast_to(ctx, transpose(ctx, _rows(ctx, flat, found), [1, 0]), np.dtype(np.int64))]
    return data_dependent(ctx, count, (coords,), finish)


def _nms(ctx, n):
    """gpudml's extension NON_MAX_SUPPRESSION (the provider runs NonMaxSuppression on the
    CPU): its worst-case rows and count; after the count is read back, the rows it counts
    ([num_selected, 3] INT64, a view). No max_output_boxes_per_class (or 0) selects nothing."""
    k = n.constant(2, "max_output_boxes_per_class")
    iou = n.constant(3, "iou_threshold")
    score = n.constant(4, "score_threshold")
    k = 0 if k is None or np.size(k) == 0 else int(np.asarray(k).reshape(-1)[0])
    iou = 0.0 if iou is None or np.size(iou) == 0 else float(np.asarray(iou).reshape(-1)[0])
    score = None if score is None or np.size(score) == 0 else float(np.asarray(score).reshape(-1)[0])
    if k <= 0:
        return [np.zeros((0, 3), np.int64)]
    count, selected = ctx.fn("non_max_suppression")(
        as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1]), k, iou, score,
        center_point_box=n.attr("center_point_box", 0))

    def finish(ctx, found: int, carried):
        return [np.zeros((0, 3), np.int64) if found == 0 else _rows(ctx, carried[0], found)]
    return data_dependent(ctx, count, (selected,), finish)


# ------------------------------------------------------------------------------ element-wise


def _unary(name: str):
    def build(ctx, n):
        return [ctx.fn(name)(as_expr(ctx, n.inputs[0]))]
    return build


def _binary(name: str, ints: str | None = None):
    """`name` (or `ints` for integer inputs: ADD1 takes floats only, ADD every type)."""
    def build(ctx, n):
        a, b = n.inputs[:2]
        form = ints if ints is not None and _dtype(a).kind in "iub" else name
        return [ctx.fn(form)(as_expr(ctx, a), _operand(ctx, b))]
    return build


def _operand(ctx, b):
    """A second operand: a rank-0 constant is a one-element array, broadcast."""
    if isinstance(b, Expression):
        return b
    b = np.asarray(b)
    b = b.astype(np.uint8) if b.dtype == np.bool_ else b
    return b.reshape(b.shape or (1,))  # (a BOOL one too)


def _variadic(name: str, ints: str | None = None):
    """Max/Min/Sum of any number of inputs: DirectML's binary operator folded (the provider's
    DmlOperatorElementwise for >2 inputs)."""
    def build(ctx, n):
        value = as_expr(ctx, n.inputs[0])
        form = ctx.fn(ints if ints is not None and _dtype(value).kind in "iu" else name)
        if len(n.inputs) == 1:
            return [ctx.fn("identity")(value)]
        for other in n.inputs[1:]:
            value = form(value, _operand(ctx, other))
        return [value]
    return build


def _mean(ctx, n):
    if len(n.inputs) == 2:
        return [ctx.fn("mean")(as_expr(ctx, n.inputs[0]), _operand(ctx, n.inputs[1]))]
    total = _variadic("add")(ctx, n)[0]
    return [ctx.fn("identity")(total, scale_bias=(1.0 / len(n.inputs), 0.0))]


def _with_attrs(name: str, **names):
    def build(ctx, n):
        kwargs = {kw: n.attr(onnx_name, default) for onnx_name, (kw, default) in names.items()}
        return [ctx.fn(name)(as_expr(ctx, n.inputs[0]), **kwargs)]
    return build


def _clip(ctx, n):
    x = as_expr(ctx, n.inputs[0])
    if n.opset >= 11:
        low, high = n.constant(1, "min"), n.constant(2, "max")
    else:
        low, high = n.attr("min"), n.attr("max")
    kwargs = {}
    if low is not None:
        kwargs["min"] = np.asarray(low).item()
    if high is not None:
        kwargs["max"] = np.asarray(high).item()
    if low is not None and high is not None and kwargs["min"] > kwargs["max"]:
        raise NotMapped("min > max: ONNX's Clip gives max there, DirectML's CLIP1 (max(Min, min(x, Max))) min")
    return [ctx.fn("clip")(x, **kwargs)]


def _is_inf(ctx, n):
    negative, positive = n.attr("detect_negative", 1), n.attr("detect_positive", 1)
    if not (negative or positive):
        raise NotMapped("IsInf detecting neither sign: no DML_IS_INFINITY_MODE")
    mode = "either" if negative and positive else "negative" if negative else "positive"
    return [ctx.fn("is_infinity")(as_expr(ctx, n.inputs[0]), mode.upper())]


def _bitshift(ctx, n):
    form = "bit_shift_left" if n.attr("direction") == "LEFT" else "bit_shift_right"
    return [ctx.fn(form)(as_expr(ctx, n.inputs[0]), _operand(ctx, n.inputs[1]))]


def _mod(ctx, n):
    form = "modulus_truncate" if n.attr("fmod", 0) else "modulus_floor"
    return [ctx.fn(form)(as_expr(ctx, n.inputs[0]), _operand(ctx, n.inputs[1]))]


def _where(ctx, n):
    condition, a, b = n.inputs
    return [ctx.fn("if_")(as_expr(ctx, condition), as_expr(ctx, a), _operand(ctx, b))]


def _cast_to(ctx, x, to: np.dtype):
    if to == np.bool_:  # BOOL is UINT8 0/1 in DirectML: x != 0
        zero = np.zeros([1], _dtype(x))
        return ctx.fn("logical_not")(ctx.fn("logical_equals")(as_expr(ctx, x), zero))
    cast_four(x, to)
    if to.kind not in "fiu":
        raise NotMapped(f"a cast to {to}: not a DirectML data type")
    return ctx.fn("cast")(as_expr(ctx, x), to)


def _cast(ctx, n):
    return [_cast_to(ctx, n.inputs[0], onnx.helper.tensor_dtype_to_np_dtype(n.attr("to")))]


def _cast_like(ctx, n):
    return [_cast_to(ctx, n.inputs[0], ctx.onnx_dtype(n.proto.input[1]))]


def _pow(ctx, n):
    return [ctx.fn("pow")(as_expr(ctx, n.inputs[0]), _operand(ctx, n.inputs[1]))]


def _gelu(ctx, n):
    x = as_expr(ctx, n.inputs[0])
    if n.attr("approximate", "none") == "none":
        return [ctx.fn("gelu")(x)]
    return [gelu_tanh(ctx, x)]


def _dropout(ctx, n):
    """Dropout in inference: the input itself (the provider's copy)."""
    ratio = n.constant(1, "ratio") if n.opset >= 12 else n.attr("ratio", 0.5)
    training = n.constant(2, "training_mode") if n.opset >= 12 else None
    if training is not None and bool(np.asarray(training).reshape(-1)[0]) and (
            ratio is None or float(np.asarray(ratio).reshape(-1)[0]) != 0):
        raise NotMapped("Dropout in training mode (a random mask): the provider runs inference only")
    if len(n.outputs_wanted) > 1 and n.outputs_wanted[1]:
        raise NotMapped("Dropout's mask output: the provider runs inference only (mask unsupported)")
    return [n.inputs[0]]


def _softmax(name: str):
    """Softmax, LogSoftmax, Hardmax: from opset 13 along `axis` (default -1); before, over
    every axis from `axis` on (default 1: the input coerced to 2-D), DirectML's axes either way."""
    def build(ctx, n):
        x = as_expr(ctx, n.inputs[0])
        if n.opset >= 13:
            axes = [n.attr("axis", -1) % rank(x)]
        else:
            axes = list(range(n.attr("axis", 1) % rank(x), rank(x)))
        return [ctx.fn(name)(x, axes)]
    return build


# ------------------------------------------------------------------------------ GEMM
def _matmul(ctx, n):
    """MatMul: DML_OPERATOR_GEMM, batched over the leading axes (broadcast); a vector operand
    is a matrix of one row (A) or one column (B), that axis dropped from the result."""
    a, b = as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1])
    out = None
    if rank(a) == 1:
        a = reshape(ctx, a, [1, a.shape[0]])
        out = "a"
    if rank(b) == 1:
        b = reshape(ctx, b, [b.shape[0], 1])
        out = "b" if out is None else "ab"
    y = ctx.fn("gemm")(a, b)
    if out is not None:
        sizes = shape(y)
        if "b" in out:
            sizes.pop(-1)
        if "a" in out:
            sizes.pop(-1 if "b" in out else -2)
        y = reshape(ctx, y, sizes or [1])
    return [y]


def _gemm(ctx, n):
    a, b, c = as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1]), n.input(2)
    if c is not None:
        c = _operand(ctx, c) if not isinstance(c, Expression) else c
        if isinstance(c, Expression) and rank(c) == 1:
            c = reshape(ctx, c, [1, c.shape[0]])
        elif not isinstance(c, Expression) and c.ndim == 1:
            c = c.reshape(1, -1)
    return [ctx.fn("gemm")(a, b, c, trans_a=bool(n.attr("transA", 0)), trans_b=bool(n.attr("transB", 0)),
                       alpha=n.attr("alpha", 1.0), beta=n.attr("beta", 1.0))]


# ------------------------------------------------------------------------------ integer GEMMs
def _vector_operands(ctx, a, b):
    """MatMul's vector operands as matrices (a: one row, b: one column) and which axes of the
    result to drop (as _matmul)."""
    out = ""
    if rank(a) == 1:
        a, out = reshape(ctx, a, [1, a.shape[0]]), "a"
    if rank(b) == 1:
        b, out = reshape(ctx, b, [b.shape[0], 1]), out + "b"
    return a, b, out


def _vector_result(ctx, y, out: str):
    if not out:
        return y
    sizes = shape(y)
    if "b" in out:
        sizes.pop(-1)
    if "a" in out:
        sizes.pop(-1 if "b" in out else -2)
    return reshape(ctx, y, sizes or [1])


def _matmul_integer(ctx, n):
    """MatMulInteger: DML_OPERATOR_MATRIX_MULTIPLY_INTEGER, batched as MatMul; a 1-D
    a_zero_point per row, b_zero_point per column."""
    a, b, out = _vector_operands(ctx, as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1]))
    y = ctx.fn("matrix_multiply_integer")(a, b, _quant_value(ctx, n.input(2)), _quant_value(ctx, n.input(3)))
    return [_vector_result(ctx, y, out)]


def _qlinear_matmul(ctx, n):
    """QLinearMatMul (10, 21): DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY; opset 21's
    FLOAT16 scales read as FLOAT32 (exact)."""
    a, b, out = _vector_operands(ctx, as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[3]))
    q = [_quant_value(ctx, n.input(k), f32=k in (1, 4, 6)) for k in (1, 2, 4, 5, 6, 7)]
    y_type = _dtype(n.inputs[7]) if n.input(7) is not None else _dtype(n.inputs[0])
    y = ctx.fn("quantized_linear_matrix_multiply")(a, q[0], q[1], b=b, b_scale=q[2], b_zero_point=q[3],
                                                   output_scale=q[4], output_zero_point=q[5],
                                                   output_data_type=np.dtype(y_type).name.upper())
    return [_vector_result(ctx, y, out)]


def _matmul_integer_to_float(ctx, n):
    """com.microsoft MatMulIntegerToFloat: quantized.integer_to_float (MATRIX_MULTIPLY_INTEGER_TO_FLOAT,
    or for A and B of different types MATRIX_MULTIPLY_INTEGER, CAST, MULTIPLY, ADD)."""
    a, b, out = _vector_operands(ctx, as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1]))
    y = integer_to_float(ctx, a, b, n.inputs[2], n.inputs[3], n.input(4), n.input(5), n.input(6))
    return [_vector_result(ctx, y, out)]


def _qgemm(ctx, n):
    """com.microsoft QGemm (onnxruntime's QOperator Gemm; its DirectML provider has none):
    MATRIX_MULTIPLY_INTEGER of A and B (transA, transB as views) less their zero points, the
    INT32 bias C added to the sums (ELEMENT_WISE_ADD), CAST to FLOAT32, MULTIPLY by the
    output scale, as onnxruntime's CPU kernel: alpha a_scale b_scale (b_scale per column where
    it has N values), divided by y_scale where Y is quantized, then QUANTIZE_LINEAR with scale
    1 and y's zero point (round half to even, saturation): one rounding of acc * multiplier,
    as its requantization. Scales must be constants (the multiplier is computed on the host)."""
    a, b = as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[3])
    if n.attr("transA", 0):
        a = transpose(ctx, a, [1, 0])
    if n.attr("transB", 0):
        b = transpose(ctx, b, [1, 0])
    scales = {"a_scale": n.inputs[1], "b_scale": n.inputs[4], "y_scale": n.input(7)}
    for what, v in scales.items():
        if isinstance(v, Expression):
            raise NotMapped(f"QGemm's {what} is computed at run time; gpudml needs it when the graph is built")
    acc = ctx.fn("matrix_multiply_integer")(a, b, _quant_value(ctx, n.inputs[2]), _quant_value(ctx, n.input(5)))
    if n.input(6) is not None:
        acc = ctx.fn("add0")(acc, as_expr(ctx, n.input(6)))
    multiplier = np.float32(n.attr("alpha", 1.0)) * np.asarray(scales["a_scale"], np.float32).reshape(-1)[0] \
        * np.asarray(scales["b_scale"], np.float32).reshape(-1)
    y_scale, y_zero = scales["y_scale"], n.input(8)
    if y_scale is not None:
        multiplier = (multiplier / np.asarray(y_scale, np.float32).reshape(-1)[0]).astype(np.float32)
    y = ctx.fn("multiply")(ctx.fn("cast")(acc, np.float32), multiplier.astype(np.float32))
    if y_scale is None:
        return [y]
    zero = _quant_value(ctx, y_zero) if y_zero is not None else np.zeros(1, np.uint8)
    return [ctx.fn("quantize_linear")(y, np.ones(1, np.float32), zero)]


def _dynamic_quantize_lstm(ctx, n):
    """com.microsoft DynamicQuantizeLSTM (onnxruntime's quantize_dynamic LSTM; its DirectML
    provider has none): W [dirs, input, 4 hidden] and R [dirs, hidden, 4 hidden], 8-bit with a
    scale and zero point per direction or per direction and column, dequantized on the host
    ((w - zero) scale in float32, transposed to ONNX LSTM's [dirs, 4 hidden, input]), then the
    LSTM row (DML_OPERATOR_LSTM). onnxruntime's CPU kernel also quantizes X and the hidden state
    to uint8 at every step (dynamic ranges) before its integer products: gpudml keeps them
    float, so its results are the float LSTM of the dequantized weights (within about one
    activation quantization step of onnxruntime's, tests/test_onnx_quantized.py)."""
    weights = {}
    for k, zero_k, scale_k, what in ((1, 9, 8, "W"), (2, 11, 10, "R")):
        values = [n.inputs[k], n.inputs[scale_k], n.input(zero_k)]
        if any(isinstance(v, Expression) for v in values):
            raise NotMapped(f"DynamicQuantizeLSTM's {what}, its scale and zero point must be constants")
        q, scale = np.asarray(n.inputs[k]), np.asarray(n.inputs[scale_k], np.float32)
        zero = np.zeros_like(scale, dtype=q.dtype) if n.input(zero_k) is None else np.asarray(n.input(zero_k))
        if q.ndim != 3 or scale.shape not in ((q.shape[0],), (q.shape[0], q.shape[2])) or zero.shape != scale.shape:
            raise InvalidArgumentError(f"DynamicQuantizeLSTM {n.name!r}: {what} {list(q.shape)} needs a scale and zero "
                                       f"point of shape [{q.shape[0]}] or [{q.shape[0]}, {q.shape[2]}], got "
                                       f"{list(scale.shape)} and {list(zero.shape)}")
        per = (slice(None), None, None) if scale.ndim == 1 else (slice(None), None, slice(None))
        dequantized = (q.astype(np.float32) - zero.astype(np.float32)[per]) * scale[per]
        weights[k] = np.ascontiguousarray(dequantized.transpose(0, 2, 1))
    proto = onnx.NodeProto()
    proto.CopyFrom(n.proto)
    proto.op_type, proto.domain = "LSTM", ""
    inputs = [n.inputs[0], weights[1], weights[2], *[n.input(k) for k in range(3, 8)]]
    return _recurrent(ctx, Node(proto, 7, inputs, n.outputs_wanted))


def _dynamic_quantize_matmul(ctx, n):
    """com.microsoft DynamicQuantizeMatMul as the provider's DmlOperatorDynamicQuantizeMatMul
    composes it: DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR of A into B's type (INT8 or UINT8; the
    CPU provider quantizes A to UINT8 always), then MATRIX_MULTIPLY_INTEGER_TO_FLOAT with B,
    its scale and zero point and the bias."""
    b = as_expr(ctx, n.inputs[1])
    a_q, a_scale, a_zero = ctx.fn("dynamic_quantize_linear")(as_expr(ctx, n.inputs[0]), dtype=_dtype(b))
    a, b, out = _vector_operands(ctx, a_q, b)
    y = ctx.fn("matrix_multiply_integer_to_float")(a, reshape(ctx, a_scale, [1]), reshape(ctx, a_zero, [1]), b=b,
                                                   b_scale=_quant_value(ctx, n.inputs[2]),
                                                   b_zero_point=_quant_value(ctx, n.input(3)), bias=n.input(4))
    return [_vector_result(ctx, y, out)]


# ------------------------------------------------------------------------------ reductions
REDUCE = {"ReduceSum": "sum", "ReduceMean": "average", "ReduceMax": "max", "ReduceMin": "min",
          "ReduceProd": "multiply", "ReduceL1": "l1", "ReduceL2": "l2", "ReduceLogSum": "log_sum",
          "ReduceLogSumExp": "log_sum_exp", "ReduceSumSquare": "sum_square"}


def _reduce(ctx, n):
    x = as_expr(ctx, n.inputs[0])
    from_input = n.opset >= 18 or n.op_type == "ReduceSum" and n.opset >= 13
    axes = n.constant(1, "axes") if from_input else n.attr("axes")
    axes = None if axes is None else _ints(axes)
    if not axes:
        if n.attr("noop_with_empty_axes", 0):
            return [x]
        axes = None
    y = ctx.fn("reduce")(x, REDUCE[n.op_type], axes)
    return [_keepdims(ctx, n, y, axes)]


def _keepdims(ctx, n, y, axes):
    if n.attr("keepdims", 1):
        return y
    kept = range(rank(y)) if axes is None else {a % rank(y) for a in axes}
    return reshape(ctx, y, [s for i, s in enumerate(y.shape) if i not in kept])


def _arg(ctx, n):
    x = as_expr(ctx, n.inputs[0])
    axis = n.attr("axis", 0) % rank(x)
    direction = "decreasing" if n.attr("select_last_index", 0) else "increasing"
    form = ctx.fn("argmax" if n.op_type == "ArgMax" else "argmin")
    y = form(x, [axis], axis_direction=direction, output_data_type="INT64")
    return [_keepdims(ctx, n, y, [axis])]


def _top_k(ctx, n):
    """TopK: DML_OPERATOR_TOP_K1 as the provider's DmlOperatorTopK builds it: k the attribute
    (opset 1) or the constant input 1 (opset 10 on), `largest` as the axis direction
    (DECREASING where 1), `sorted` ignored (DirectML sorts always: a sorted answer is one
    that sorted=0 allows); the Indices as UINT64 (the provider forces the INT64 output
    unsigned), cast to ONNX's INT64. k = 0 (DirectML asks k >= 1): the two empty outputs."""
    x = as_expr(ctx, n.inputs[0])
    k = int(n.attr("k")) if n.opset < 10 else int(np.asarray(n.constant(1, "k")).reshape(-1)[0])
    axis = int(n.attr("axis", -1)) % rank(x)
    direction = "decreasing" if n.attr("largest", 1) else "increasing"
    if k == 0:
        sizes = [0 if i == axis else s for i, s in enumerate(x.shape)]
        return [np.zeros(sizes, np.asarray(x).dtype if isinstance(x, np.ndarray) else x.dtype.numpy),
                np.zeros(sizes, np.int64)]
    values, indices = ctx.fn("top_k")(x, k, axis, direction, index_data_type=np.uint64)
    return [values, ctx.fn("cast")(indices, np.int64)]


# ------------------------------------------------------------------------------ data movement
_PAD_MODES = {"constant": "constant", "reflect": "reflection", "edge": "edge", "wrap": "wrap"}


def _pad(ctx, n):
    x = as_expr(ctx, n.inputs[0])
    if n.opset >= 11:
        pads, value, axes = n.constant(1, "pads"), n.constant(2, "constant_value"), n.constant(3, "axes")
        pads = _ints(pads)
    else:
        pads, value, axes = n.attr("pads"), n.attr("value"), None
    r = rank(x)
    axes = list(range(r)) if axes is None else [a % r for a in _ints(axes)]
    start, end = [0] * r, [0] * r
    for k, a in enumerate(axes):
        start[a], end[a] = pads[k], pads[k + len(axes)]
    mode = n.attr("mode", "constant")
    if mode not in _PAD_MODES:
        raise NotMapped(f"Pad mode {mode!r}: DML_PADDING_MODE has constant, edge, reflection, symmetric and wrap")
    if min(start + end) < 0:  # negative pads crop: a slice first (the provider's DmlOperatorPadding does so too)
        offsets = [max(0, -s) for s in start]
        sizes = [d - max(0, -s) - max(0, -e) for d, s, e in zip(x.shape, start, end)]
        x = ctx.fn("slice")(x, offsets, sizes)
        start, end = [max(0, s) for s in start], [max(0, e) for e in end]
    value = 0.0 if value is None else float(np.asarray(value).reshape(-1)[0])
    return [ctx.fn("pad")(x, start, end, mode=_PAD_MODES[mode], value=value)]


def _slice(ctx, n):
    x = as_expr(ctx, n.inputs[0])
    if n.opset >= 10:
        starts, ends = _ints(n.constant(1, "starts")), _ints(n.constant(2, "ends"))
        axes = n.constant(3, "axes")
        steps = n.constant(4, "steps")
        axes = list(range(len(starts))) if axes is None else _ints(axes)
        steps = [1] * len(starts) if steps is None else _ints(steps)
    else:
        starts, ends = n.attr("starts"), n.attr("ends")
        axes = n.attr("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    r = rank(x)
    offsets, sizes, strides = [0] * r, list(x.shape), [1] * r
    for a, start, end, step in zip(axes, starts, ends, steps):
        a %= r
        picked = range(*slice(start, end, step).indices(x.shape[a]))
        if not picked:  # an empty result: a host value, no dispatch (as the provider skips empty outputs)
            return [np.zeros([0 if b == a else d for b, d in enumerate(x.shape)], _dtype(x))]
        lo, hi = min(picked[0], picked[-1]), max(picked[0], picked[-1])
        offsets[a], sizes[a], strides[a] = lo, hi - lo + 1, step
    if isinstance(x, Expression) and not any(offsets) and min(strides) > 0 and not _computed_by_readers(ctx, x):
        # From the start of every axis, forward: x's elements through other sizes and strides (a view, no
        # dispatch; a view has no base offset, so other slices stay SLICE1)
        return [ctx.graph.view(x, [-(-size // step) for size, step in zip(sizes, strides)],
                               [st * step for st, step in zip(x.desc.effective_strides, strides)])]
    return [ctx.fn("slice")(x, offsets, sizes, strides)]


def _computed_by_readers(ctx, x: Expression) -> bool:
    """Would graph fusion compute x inside the kernels reading it? A value read through a
    view is written instead, so a view of it would cost a kernel where SLICE1 costs none."""
    return x.node is not None and fusion.computed_in_readers(ctx.graph.nodes[x.node])


def _concat(ctx, n):
    xs = [as_expr(ctx, x) for x in n.inputs]
    return [ctx.fn("join")(xs, n.attr("axis") % rank(xs[0]))]


def _split(ctx, n):
    x = as_expr(ctx, n.inputs[0])
    axis = n.attr("axis", 0) % rank(x)
    sizes = n.constant(1, "split") if n.opset >= 13 else None
    sizes = _ints(sizes) if sizes is not None else n.attr("split")
    count = len(n.outputs_wanted)
    if sizes is None:
        count = n.attr("num_outputs", count)
        part = -(-x.shape[axis] // count)
        sizes = [min(part, x.shape[axis] - k * part) for k in range(count)]
    # Zero-size parts are empty host values (no dispatch), as the provider skips empty outputs.
    parts = [s for s in sizes if s]
    computed = iter(list(ctx.fn("split")(x, axis, parts)) if len(parts) > 1 else [x])
    empty = [0 if a == axis else d for a, d in enumerate(x.shape)]
    return [next(computed) if s else np.zeros(empty, _dtype(x)) for s in sizes]


def _gather(ctx, n):
    x, indices = as_expr(ctx, n.inputs[0]), n.inputs[1]
    index_shape = [] if ctx.scalar(n.proto.input[1], indices) else list(indices.shape)  # (rank 0 held as [1])
    return [gather_axis(ctx, x, indices, n.attr("axis", 0) % rank(x), index_shape)]


def _gather_elements(ctx, n):
    """GatherElements: GATHER_ELEMENTS on the ONNX axis (the provider's DmlOperatorGatherElements:
    data and indices of one rank, as ONNX has them)."""
    x, indices = as_expr(ctx, n.inputs[0]), n.inputs[1]
    axis = n.attr("axis", 0) % rank(x)
    others = [d for d in range(rank(x)) if d != axis and indices.shape[d] != x.shape[d]]
    if others:
        raise NotMapped(f"indices {list(indices.shape)} differ from data {list(x.shape)} on axes {others} "
                        "(DirectML's GATHER_ELEMENTS: every dimension but the axis equal)")
    return [ctx.fn("gather_elements")(x, indices, axis)]


def _gather_nd(ctx, n):
    """GatherND: GATHER_ND1, data and indices right-aligned to one DimensionCount (the output's
    too, where it has more), InputDimensionCount and IndicesDimensionCount their ONNX ranks,
    BatchDimensionCount batch_dims (the provider's DmlOperatorGatherNd)."""
    x, indices = as_expr(ctx, n.inputs[0]), n.inputs[1]
    b = n.attr("batch_dims", 0)
    r, q, t = rank(x), len(indices.shape), indices.shape[-1]
    out = list(indices.shape[:-1]) + list(x.shape[b + t:])
    full = max(r, q, len(out))
    if full > 8:
        raise NotMapped(f"rank {full}: DirectML tensors have at most 8 dimensions")
    xs = reshape(ctx, x, [1] * (full - r) + list(x.shape))
    idx = reshape(ctx, indices, [1] * (full - q) + list(indices.shape))
    y = ctx.fn("gather_nd")(xs, idx, b, input_dimension_count=r, indices_dimension_count=q)
    return [reshape(ctx, y, out or [1])]


def _tile(ctx, n):
    return [ctx.fn("tile")(as_expr(ctx, n.inputs[0]), _ints(n.constant(1, "repeats")))]


# ------------------------------------------------------------------------------ scatters, one-hot (issue 44)
def _scatter_elements(ctx, n):
    """Scatter (opsets 9-10) and ScatterElements: SCATTER_ELEMENTS (== SCATTER) on `axis`,
    as the provider's DmlOperatorScatter.cpp; `reduction` (opset 16+) is gpudml's extension
    of the operator (the provider registers ScatterElements without it). Empty indices: x."""
    x, indices, updates = as_expr(ctx, n.inputs[0]), n.inputs[1], n.inputs[2]
    if rank(x) > 8:
        raise NotMapped(f"rank {rank(x)}: DirectML tensors have at most 8 dimensions")
    if math.prod(indices.shape) == 0:
        return [x]
    axis = n.attr("axis", 0) % rank(x)
    if any(a != b for d, (a, b) in enumerate(zip(indices.shape, x.shape)) if d != axis):
        raise NotMapped(f"indices {list(indices.shape)} differ from data {list(x.shape)} off axis {axis}: "
                        f"DirectML's SCATTER takes the input's sizes there")
    return [ctx.fn("scatter_elements")(x, indices, as_expr(ctx, updates), axis, reduction=n.attr("reduction", "none"))]


def _scatter_nd(ctx, n):
    """ScatterND: SCATTER_ND with InputDimensionCount and IndicesDimensionCount the
    original ranks, the three tensors padded with leading 1s to one DimensionCount (the
    provider's DmlOperatorScatterNd); `reduction` (opset 16+) is gpudml's extension. Empty
    indices: x."""
    x, indices, updates = as_expr(ctx, n.inputs[0]), n.inputs[1], as_expr(ctx, n.inputs[2])
    q, p, u = rank(x), rank(indices), rank(updates)
    r = max(q, p, u)
    if r > 8:
        raise NotMapped(f"rank {r}: DirectML tensors have at most 8 dimensions")
    if math.prod(indices.shape) == 0:
        return [x]
    pad = lambda t: reshape(ctx, t, [1] * (r - rank(t)) + list(t.shape))  # noqa: E731
    y = ctx.fn("scatter_nd")(pad(x), pad(indices), pad(updates), input_dimension_count=q,
                             indices_dimension_count=p, reduction=n.attr("reduction", "none"))
    return [reshape(ctx, y, x.shape)]


def _one_hot(ctx, n):
    """OneHot: ONE_HOT, the indices unsqueezed on `axis` and `values` [off, on] shaped to the
    output's DimensionCount (the provider's DmlOperatorOneHot); indices of a float type
    (which ONNX allows) are CAST to INT64 first (truncated, as ONNX's reference casts)."""
    indices, values = n.inputs[0], as_expr(ctx, n.inputs[2])
    depth = int(np.asarray(n.constant(1, "depth")).reshape(-1)[0])
    out_rank = rank(indices) + 1
    if out_rank > 8:
        raise NotMapped(f"rank {out_rank}: DirectML tensors have at most 8 dimensions")
    axis = n.attr("axis", -1) % out_rank
    if _dtype(indices).kind == "f":
        indices = ctx.fn("cast")(as_expr(ctx, indices), np.int64)
    sizes = list(indices.shape)
    sizes.insert(axis, 1)
    return [ctx.fn("one_hot")(reshape(ctx, indices, sizes), reshape(ctx, values, [1] * (out_rank - 1) + [2]),
                              depth, axis)]


# ------------------------------------------------------------------------------ space-depth (issue 43)
def _depth_to_space(ctx, n):
    """DepthToSpace: DEPTH_TO_SPACE1, `mode` DCR (the default) or CRD as its Order (the
    provider's DmlOperatorDepthToSpace.cpp)."""
    return [ctx.fn("depth_to_space")(as_expr(ctx, n.inputs[0]), n.attr("blocksize"), n.attr("mode", "DCR"))]


def _space_to_depth(ctx, n):
    """SpaceToDepth: SPACE_TO_DEPTH1 in DEPTH_COLUMN_ROW order (ONNX's only one)."""
    return [ctx.fn("space_to_depth")(as_expr(ctx, n.inputs[0]), n.attr("blocksize"), "depth_column_row")]


# ------------------------------------------------------------------------------ generators (issue 44)
#: INT32's limits: DIAGONAL_MATRIX(1)'s INT fields.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

#: Op types whose DirectML operator reads no tensor on the GPU (FILL_VALUE_CONSTANT,
#: FILL_VALUE_SEQUENCE): a session folds such a node where its inputs are constants of the
#: model (as onnxruntime's constant folding does before any provider) and records it as a
#: graph node (a generator, no operand) where they derive from the graph's inputs (value
#: inputs: computed on the host per build).
GENERATORS = frozenset({"ConstantOfShape", "Range"})


def generate(ctx, name: str, *args, **attributes):
    """The output of the generator `name` (a functional form called with no tensor): a node
    of no operand on the session's graph, or, eagerly, run at once (a numpy array)."""
    if ctx.graph is None:
        return ctx.fn(name)(*args, **attributes)
    spec = spec_named(name)
    call = spec.functional(*args, **attributes)
    return ctx.graph.record(spec, None, call.tensors, call.attributes)


def _constant_of_shape(ctx, n):
    """ConstantOfShape: FILL_VALUE_CONSTANT (the provider's DmlOperatorConstantOfShape.cpp: the
    `value` attribute's bytes, zeros by default), over the elements as [1, 1, 1, N] (its
    page's 4 dimensions) viewed as the shape. FILL_VALUE_CONSTANT's page lists no 64-bit
    type: INT64, UINT64 and DOUBLE fill through DIAGONAL_MATRIX1 over [1, N] with the span
    of every diagonal (its page's 11 types), the same bits."""
    sizes = _ints(n.constant(0, "shape"))
    value = n.attr("value")
    value = np.zeros(1, np.float32) if value is None else onnx.numpy_helper.to_array(value).reshape(-1)
    if value.dtype == np.bool_:
        value = value.astype(np.uint8)
    if 0 in sizes:  # an empty result: a host value, no dispatch (DirectML sizes are at least 1)
        return [np.zeros(sizes, value.dtype)]
    count = math.prod(sizes)
    if value.dtype.itemsize == 8:
        out = generate(ctx, "diagonal_matrix", shape=[1, count], dtype=value.dtype, value=value[0].item(),
                       diagonal_fill_begin=INT32_MIN, diagonal_fill_end=INT32_MAX)
    else:
        out = generate(ctx, "fill_value_constant", [1, 1, 1, count], value[0].item(), value.dtype)
    return [reshape(ctx, out, sizes or [1])]


def _range(ctx, n):
    """Range: FILL_VALUE_SEQUENCE of max(ceil((limit - start) / delta), 0) elements (the
    provider's DmlOperatorRange.cpp: every input on the CPU), start + i * delta."""
    start, limit, delta = (np.asarray(n.constant(k, what)).reshape(-1)[0]
                           for k, what in enumerate(("start", "limit", "delta")))
    if delta == 0:
        raise NotMapped("Range with delta 0: no element count (ONNX leaves it undefined)")
    if start.dtype.kind in "iu":
        count = max(-((int(start) - int(limit)) // int(delta)), 0)
    else:  # (limit - start in the inputs' type, then divided in double, as onnxruntime's Range counts)
        with np.errstate(all="ignore"):
            span = float(np.subtract(limit, start, dtype=start.dtype))
        if not math.isfinite(span / float(delta)):
            raise NotMapped(f"Range of start {start}, limit {limit}, delta {delta}: no finite element count")
        count = max(math.ceil(span / float(delta)), 0)
    if count == 0:  # an empty result: a host value, no dispatch
        return [np.zeros([0], start.dtype)]
    return [generate(ctx, "fill_value_sequence", [count], start.item(), delta.item(), start.dtype)]


def _diagonal_offset(k: int) -> int:
    """A diagonal's offset as an INT: beyond INT32's range no element of a tensor (fewer than
    2^31 rows and columns) lies on it, as on INT32_MAX - 1 or INT32_MIN + 1."""
    return min(max(int(k), INT32_MIN + 1), INT32_MAX - 1)


def _eye_like(ctx, n):
    """EyeLike: DIAGONAL_MATRIX over [1, 1, rows, columns] (the provider's DmlOperatorEyeLike.cpp:
    Offset k, Value 1), of `dtype` (else the input's type); DIAGONAL_MATRIX's page lists no
    64-bit type: those through DIAGONAL_MATRIX1 (Begin k, End k + 1: its page's
    equivalence). BOOL is UINT8."""
    sizes = shape(n.inputs[0])
    if len(sizes) != 2:
        raise NotMapped(f"EyeLike of {len(sizes)} dimensions: ONNX's EyeLike takes a 2-D input")
    to = n.attr("dtype")
    dtype = _dtype(n.inputs[0]) if to is None else np.dtype(onnx.helper.tensor_dtype_to_np_dtype(to))
    dtype = np.dtype(np.uint8) if dtype == np.bool_ else dtype
    k = _diagonal_offset(n.attr("k", 0))
    if dtype.itemsize == 8:
        out = generate(ctx, "diagonal_matrix", shape=sizes, dtype=dtype, value=1, diagonal_fill_begin=k,
                       diagonal_fill_end=k + 1)
        return [out]
    return [reshape(ctx, generate(ctx, "diagonal_matrix0", [1, 1, *sizes], k, 1.0, dtype), sizes)]


def _trilu(ctx, n):
    """Trilu: DIAGONAL_MATRIX1 of the input, Value 0 (the provider's DmlOperatorTrilu.cpp):
    upper keeps x - y >= k (DiagonalFillBegin INT32_MIN, End k), lower x - y <= k (Begin
    k + 1, End INT32_MAX); 2 to 4 dimensions."""
    x = as_expr(ctx, n.inputs[0])
    if rank(x) > 4:
        raise NotMapped(f"Trilu of {rank(x)} dimensions: DIAGONAL_MATRIX1 takes 2 to 4 (the provider refuses more "
                        f"than 4 too)")
    k = 0 if n.input(1) is None else _diagonal_offset(np.asarray(n.constant(1, "k")).reshape(-1)[0])
    if n.attr("upper", 1):
        begin, end = INT32_MIN, k
    else:
        begin, end = k + 1, INT32_MAX
    return [ctx.fn("diagonal_matrix")(x, value=0, diagonal_fill_begin=begin, diagonal_fill_end=end)]


# ------------------------------------------------------------------------------ Einsum (issue 44)
def _strided(ctx, x, sizes, strides):
    """x's elements read through `sizes` and element `strides` (0: broadcast; a sum of two
    axes' strides: their diagonal): a graph view, or, eagerly, numpy's."""
    if isinstance(x, Expression):
        return ctx.graph.view(x, list(sizes), list(strides))
    x = np.ascontiguousarray(x)
    return np.lib.stride_tricks.as_strided(x, tuple(sizes), tuple(s * x.itemsize for s in strides), writeable=False)


def _element_strides(x) -> list[int]:
    if isinstance(x, Expression):
        return list(x.desc.effective_strides)
    x = np.asarray(x)
    return [s // x.itemsize for s in x.strides]


def _einsum_terms(equation: str, count: int) -> tuple[list[str], str]:
    """(each input's labels, the output's): numpy's rule for an implicit output (the labels
    seen once, in alphabetical order); NotMapped for what the provider leaves to its CPU."""
    equation = equation.replace(" ", "")
    if "." in equation:
        raise NotMapped("Einsum with an ellipsis (...): the provider's EinSumHelper leaves it to another provider")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != count:
        raise NotMapped(f"Einsum equation {equation!r} names {len(terms)} inputs, the node has {count}")
    if count > 2:
        raise NotMapped(f"Einsum of {count} inputs: the provider's DirectML operators take one or two (it runs more "
                        f"on the CPU)")
    if not arrow:
        letters = "".join(terms)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if not all(c.isalpha() for c in "".join(terms) + rhs) or len(set(rhs)) != len(rhs):
        raise NotMapped(f"Einsum equation {equation!r}: labels are letters, each once in the output")
    return terms, rhs


def _einsum(ctx, n):
    """Einsum as the provider's DmlOperatorEinSum.cpp builds it: each input reprojected onto the
    product of every label (a view: permuted strides, stride 0 for a label it lacks, the sum
    of a repeated label's strides for a diagonal), then one input: ELEMENT_WISE_IDENTITY
    (a transpose) or REDUCE SUM over the labels the output lacks; two: ELEMENT_WISE_MULTIPLY,
    a GEMM where the equation is a (batched) matrix product (one label summed, at most one
    of A's and one of B's, at most two batch labels, floats), else ELEMENT_WISE_MULTIPLY
    into the product tensor and REDUCE SUM; the result's axes permuted to the output's."""
    xs = [as_expr(ctx, x) for x in n.inputs]
    terms, out = _einsum_terms(n.attr("equation"), len(xs))
    labels = list(dict.fromkeys("".join(terms) + out))
    size: dict[str, int] = {}
    for x, term in zip(xs, terms):
        own = shape(x) if term else []
        if len(own) != len(term) and not (term == "" and shape(x) == [1]):
            raise InvalidArgumentError(f"Einsum: input of shape {shape(x)} for the labels {term!r}")
        for c, m in zip(term, own):
            if size.setdefault(c, m) != m:
                raise InvalidArgumentError(f"Einsum: label {c!r} has sizes {size[c]} and {m}")
    if any(c not in size for c in out):
        raise InvalidArgumentError(f"Einsum: output label(s) {[c for c in out if c not in size]} name no input axis")
    summed = [c for c in labels if c not in out]

    def onto(x, term, axes):  # x over `axes` (labels; None: an axis of 1)
        strides = _element_strides(x)
        return _strided(ctx, x, [1 if c is None else size[c] for c in axes],
                        [sum(strides[i] for i, t in enumerate(term) if t == c) for c in axes])

    def ordered(y, axes):  # y over `axes` (product order) with the output's axes, in the output's order
        y = transpose(ctx, y, [axes.index(c) for c in out]) if out else y
        return reshape(ctx, y, [size[c] for c in out] or [1])

    kept = [c for c in labels if c in out]
    if not labels:  # (scalars alone: one element each)
        return [ctx.fn("identity")(xs[0]) if len(xs) == 1 else ctx.fn("multiply")(*xs)]
    if len(xs) == 1:
        if not summed:
            return [ctx.fn("identity")(onto(xs[0], terms[0], list(out)))]
        y = ctx.fn("reduce")(onto(xs[0], terms[0], labels), "sum", [labels.index(c) for c in summed])
        return [ordered(reshape(ctx, y, [size[c] for c in kept] or [1]), kept)]
    (ta, tb), (a, b) = terms, xs
    if not summed:
        return [ctx.fn("multiply")(onto(a, ta, list(out)), onto(b, tb, list(out)))]
    batch = [c for c in out if c in ta and c in tb]
    rows, cols = [c for c in out if c in ta and c not in tb], [c for c in out if c in tb and c not in ta]
    plain = all(len(set(t)) == len(t) for t in terms)
    if (len(summed) == 1 and summed[0] in ta and summed[0] in tb and len(rows) <= 1 and len(cols) <= 1
            and len(batch) <= 2 and plain and _dtype(a).kind == "f"):
        k = summed[0]
        a2 = onto(a, ta, [*batch, rows[0] if rows else None, k])
        b2 = onto(b, tb, [*batch, cols[0] if cols else None, k])
        y = ctx.fn("gemm")(a2, b2, trans_b=True)
        return [ordered(reshape(ctx, y, [size[c] for c in batch + rows + cols] or [1]), batch + rows + cols)]
    product = ctx.fn("multiply")(onto(a, ta, labels), onto(b, tb, labels))
    y = ctx.fn("reduce")(product, "sum", [labels.index(c) for c in summed])
    return [ordered(reshape(ctx, y, [size[c] for c in kept] or [1]), kept)]


def _cumsum(ctx, n):
    x = as_expr(ctx, n.inputs[0])
    axis = int(np.asarray(n.constant(1, "axis")).reshape(-1)[0]) % rank(x)
    direction = "decreasing" if n.attr("reverse", 0) else "increasing"
    return [ctx.fn("cumulative_sum")(x, axis, axis_direction=direction, exclusive=bool(n.attr("exclusive", 0)))]


def _reverse_sequence(ctx, n):
    x, lengths = as_expr(ctx, n.inputs[0]), n.inputs[1]
    batch, time = n.attr("batch_axis", 1), n.attr("time_axis", 0)
    sizes = [1] * rank(x)
    sizes[batch] = x.shape[batch]
    if isinstance(lengths, Expression) and lengths.dtype.numpy.kind == "i":  # INT64 lengths: UINT32, as the
        lengths = ctx.fn("cast")(lengths, np.uint32)                             # lengths tensor's type table has
    return [ctx.fn("reverse_subsequences")(x, reshape(ctx, lengths, sizes), time)]


def _quantize(ctx, n):
    """QuantizeLinear / DequantizeLinear: per tensor or per axis (the scale broadcast along it:
    ELEMENT_WISE_(DE)QUANTIZE_LINEAR, as the provider's DmlOperatorElementwiseQLinear); a
    blocked QuantizeLinear (block_size, opset 21 on) runs DML_OPERATOR_QUANTIZE (FL 6_3), the
    scale and zero point x's shape but x.shape[axis] / block_size along `axis`. `saturate`
    (opset 19 on) concerns float8 outputs only: the integer outputs always saturate."""
    out = np.dtype(_quantize_type(n, n.input(2)))
    if n.op_type == "QuantizeLinear" and out.name in ("int4", "uint4"):  # (DML_OPERATOR_QUANTIZE's 4-bit output)
        if n.proto.domain not in ("", "ai.onnx"):
            raise NotMapped(f"com.microsoft QuantizeLinear to {out.name.upper()}: it runs as ONNX's of opset 13, "
                            f"8-bit (ELEMENT_WISE_QUANTIZE_LINEAR); ONNX's QuantizeLinear (opset 21 on) takes 4-bit")
        return [quantize_linear4(ctx, n, out)]
    x, scale, zero = as_expr(ctx, n.inputs[0]), n.inputs[1], n.input(2)
    block = n.attr("block_size", 0)
    if block and n.op_type == "QuantizeLinear":
        return [ctx.fn("quantize")(x, scale, zero, dtype=_quantize_type(n, zero), axis=n.attr("axis", 1),
                                   block_size=block)]
    if block:
        raise NotMapped("blocked quantization (block_size): DirectML quantizes per tensor or per axis")
    if rank(scale) == 1 and scale.shape[0] > 1:
        sizes = [1] * rank(x)
        sizes[n.attr("axis", 1) % rank(x)] = scale.shape[0]
        scale = reshape(ctx, scale, sizes)
        zero = None if zero is None else reshape(ctx, zero, sizes)
    scale = reshape(ctx, scale, list(scale.shape) or [1])
    zero = None if zero is None else reshape(ctx, zero, list(zero.shape) or [1])
    if n.op_type == "QuantizeLinear":
        kwargs = {} if zero is not None else {"output_data_type": _quantize_type(n, None)}
        return [ctx.fn("quantize_linear")(x, scale, zero, **kwargs)]
    return [ctx.fn("dequantize_linear")(x, scale, zero)]


def _quantize_type(n, zero):
    """QuantizeLinear's output type: the zero point's, else `output_dtype` (opset 21 on), else UINT8."""
    if zero is not None:
        return _dtype(zero)
    to = n.attr("output_dtype", 0)
    return onnx.helper.tensor_dtype_to_np_dtype(to) if to else np.uint8


def _dynamic_quantize_linear(ctx, n):
    """DynamicQuantizeLinear: DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR (UINT8), as the provider's
    DmlOperatorDynamicQuantizeLinear; the scale and zero point ONNX's scalars."""
    y, scale, zero = ctx.fn("dynamic_quantize_linear")(as_expr(ctx, n.inputs[0]), dtype=np.uint8)
    return [y, reshape(ctx, scale, [1]), reshape(ctx, zero, [1])]


# ------------------------------------------------------------------------------ shapes as views
def _reshape(ctx, n):
    x = n.inputs[0]
    if n.opset >= 5:
        target = _ints(n.constant(1, "shape"))
    else:
        target = n.attr("shape")
    allowzero = n.attr("allowzero", 0)
    sizes = [int(d) if d != 0 or allowzero else int(x.shape[i]) for i, d in enumerate(target)]
    if -1 in sizes:
        known = int(np.prod([s for s in sizes if s != -1]))
        sizes[sizes.index(-1)] = int(np.prod(x.shape)) // max(known, 1)
    return [reshape(ctx, x, sizes)]


def _flatten(ctx, n):
    x = n.inputs[0]
    axis = n.attr("axis", 1)
    axis = axis + rank(x) if axis < 0 else axis
    return [reshape(ctx, x, [int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:]))])]


def _squeeze(ctx, n):
    x = n.inputs[0]
    axes = n.constant(1, "axes") if n.opset >= 13 else n.attr("axes")
    axes = {a % rank(x) for a in _ints(axes)} if axes is not None else {i for i, s in enumerate(x.shape) if s == 1}
    return [reshape(ctx, x, [s for i, s in enumerate(x.shape) if i not in axes])]


def _unsqueeze(ctx, n):
    x = n.inputs[0]
    axes = _ints(n.constant(1, "axes") if n.opset >= 13 else n.attr("axes"))
    out_rank = rank(x) + len(axes)
    axes = {a % out_rank for a in axes}
    dims, it = [], iter(x.shape)
    for i in range(out_rank):
        dims.append(1 if i in axes else next(it))
    return [reshape(ctx, x, dims)]


def _transpose(ctx, n):
    x = n.inputs[0]
    perm = n.attr("perm", list(range(rank(x)))[::-1])
    return [transpose(ctx, x, perm)]


def _expand(ctx, n):
    x = n.inputs[0]
    target = _ints(n.constant(1, "shape"))
    sizes = list(np.broadcast_shapes(tuple(x.shape), tuple(target)))
    return [broadcast(ctx, x, sizes)]


def _identity(ctx, n):
    return [n.inputs[0]]


# ------------------------------------------------------------------------------ convolution, pooling
def _pads(n, sizes, window, strides, dilations) -> tuple[list[int], list[int]]:
    """(start, end) paddings per spatial axis, as DirectML's execution provider computes them:
    `pads`, or auto_pad's: SAME_UPPER / SAME_LOWER (the output ceil(size / stride), the
    padding split with the odd one at the end / the start), VALID (none)."""
    d = len(window)
    auto = n.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        start, end = [], []
        for i, k, s, dl in zip(sizes, window, strides, dilations):
            total = max(0, (-(-i // s) - 1) * s + (k - 1) * dl + 1 - i)
            start.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
            end.append(total - start[-1])
        return start, end
    if auto == "VALID":
        return [0] * d, [0] * d
    pads = list(n.attr("pads", [0] * 2 * d))
    return pads[:d], pads[d:]


def _transpose_pads(n, sizes, window, strides, dilations) -> tuple[list[int], list[int], list[int]]:
    """ConvTranspose's (start, end, output) paddings: `pads` and `output_padding`, or
    `output_shape` (given, or auto_pad SAME_*'s size * stride) as ONNX's formulas pad it: the
    total padding split (SAME_UPPER: the odd one at the end; otherwise at the start), and an
    output_shape past the padded size is OutputPadding."""
    d = len(window)
    auto, adjust = n.attr("auto_pad", "NOTSET"), list(n.attr("output_padding", [0] * d))
    target = n.attr("output_shape")
    if target is None and auto in ("SAME_UPPER", "SAME_LOWER"):
        target = [i * s for i, s in zip(sizes, strides)]
    if target is None:
        return (*_pads(n, sizes, window, strides, dilations), adjust)
    start, end, padding = [], [], []
    for i, k, s, dl, a, o in zip(sizes, window, strides, dilations, adjust, list(target)[-d:]):
        full = (i - 1) * s + a + (k - 1) * dl + 1
        total = max(0, full - o)
        start.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
        end.append(total - start[-1])
        padding.append(o - (full - a - total))
    return start, end, padding


def _to_2d(ctx, x):
    """A 1-D spatial tensor (rank 3) as 2-D (rank 4, a height of 1), as the provider runs it."""
    return reshape(ctx, x, list(x.shape[:2]) + [1] + list(x.shape[2:]))


def _conv(ctx, n):
    """Conv and ConvTranspose: DML_OPERATOR_CONVOLUTION, CROSS_CORRELATION, FORWARD and
    BACKWARD (1-D as 2-D over a height of 1); the bias [C_out] as it is."""
    x, w, b = as_expr(ctx, n.inputs[0]), n.inputs[1], n.input(2)
    d = rank(x) - 2
    window = list(w.shape[2:])
    strides, dilations = list(n.attr("strides", [1] * d)), list(n.attr("dilations", [1] * d))
    transposed = n.op_type == "ConvTranspose"
    if transposed:
        start, end, padding = _transpose_pads(n, list(x.shape[2:]), window, strides, dilations)
    else:
        (start, end), padding = _pads(n, list(x.shape[2:]), window, strides, dilations), [0] * d
    if d == 1:
        x, w = _to_2d(ctx, x), _to_2d(ctx, w)
        strides, dilations = [1, *strides], [1, *dilations]
        start, end, padding = [0, *start], [0, *end], [0, *padding]
    y = ctx.fn("convolution")(x, as_expr(ctx, w), None if b is None else as_expr(ctx, b), strides=strides,
                              dilations=dilations, start_padding=start, end_padding=end, output_padding=padding,
                              group_count=n.attr("group", 1), direction="backward" if transposed else "forward")
    return [reshape(ctx, y, [y.shape[0], y.shape[1], y.shape[3]]) if d == 1 else y]


def _forward_conv(ctx, n, x, w):
    """(x, w, the geometry arguments, the spatial axes) of a forward convolution node (Conv's
    attributes: strides, dilations, pads or auto_pad, group) on DirectML's 2-D form: 1-D as
    2-D over a height of 1 (x and w reshaped); 3-D refused (the integer convolutions' pages
    take 4-D tensors)."""
    d = rank(x) - 2
    if d not in (1, 2):
        raise NotMapped(f"{d} spatial axes: DirectML's integer convolutions take 4-D tensors (1-D runs as 2-D)")
    window = list(w.shape[2:])
    strides, dilations = list(n.attr("strides", [1] * d)), list(n.attr("dilations", [1] * d))
    start, end = _pads(n, list(x.shape[2:]), window, strides, dilations)
    if d == 1:
        x, w = _to_2d(ctx, x), _to_2d(ctx, w)
        strides, dilations, start, end = [1, *strides], [1, *dilations], [0, *start], [0, *end]
    return x, w, {"strides": strides, "dilations": dilations, "start_padding": start, "end_padding": end,
                  "group_count": n.attr("group", 1)}, d


def _from_2d(ctx, y, d: int):
    return reshape(ctx, y, [y.shape[0], y.shape[1], y.shape[3]]) if d == 1 else y


def _quantization(ctx, v):
    """A scale, zero point or bias input (rank 0 or 1: one value or one per channel) as the
    forms take it: None stays None."""
    return None if v is None else as_expr(ctx, v)


def _conv_integer(ctx, n):
    """ConvInteger: DML_OPERATOR_CONVOLUTION_INTEGER (DmlOperatorConvInteger.cpp: x and w with
    their optional zero points, w's per output channel [M]); 1-D as 2-D."""
    x, w, args, d = _forward_conv(ctx, n, as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1]))
    y = ctx.fn("convolution_integer")(x, _quantization(ctx, n.input(2)), filter=w,
                                      filter_zero_point=_quantization(ctx, n.input(3)), **args)
    return [_from_2d(ctx, y, d)]


def _qlinear_conv(ctx, n):
    """QLinearConv: DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION (DmlOperatorQLinearConv.cpp: x,
    x_scale, x_zero_point, w, w_scale (per tensor or [M]), w_zero_point, y_scale, y_zero_point,
    the INT32 bias B); 1-D as 2-D."""
    q = [_quantization(ctx, n.input(k)) for k in range(9)]
    x, w, args, d = _forward_conv(ctx, n, as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[3]))
    y = ctx.fn("quantized_linear_convolution")(x, q[1], q[2], filter=w, filter_scale=q[4], filter_zero_point=q[5],
                                               bias=q[8], output_scale=q[6], output_zero_point=q[7], **args)
    return [_from_2d(ctx, y, d)]


def _qlinear_average_pool(ctx, n):
    """com.microsoft's QLinearAveragePool and QLinearGlobalAveragePool:
    DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING (DmlOperatorQLinearAveragePooling.cpp: X,
    x_scale, x_zero_point, y_scale, y_zero_point; count_include_pad as IncludePadding;
    channels_last as NCHW strides of the NHWC tensors), the window as AveragePool's."""
    x = as_expr(ctx, n.inputs[0])
    last = bool(n.attr("channels_last", 0))
    r = rank(x)
    if last:  # NHWC: the NCHW view (strides), and the output back
        x = transpose(ctx, x, [0, r - 1, *range(1, r - 1)])
    d = r - 2
    q = [_quantization(ctx, n.input(k)) for k in range(5)]
    x, window, args = _pool_window(ctx, n, x, "AveragePool")
    y = ctx.fn("quantized_linear_average_pooling")(x, q[1], q[2], output_scale=q[3], output_zero_point=q[4],
                                                   window_size=window,
                                                   include_padding=bool(n.attr("count_include_pad", 0)), **args)
    y = _from_2d(ctx, y, d)
    return [transpose(ctx, y, [0, *range(2, r), 1]) if last else y]


def _pool_window(ctx, n, x, kind: str):
    """(x, the window, the strides, paddings and dilations) of a pooling node over x [N, C,
    spatial...] as the provider builds them: a Global form's window is the spatial sizes;
    auto_pad and ceil_mode (ONNX's output size, the last window starting inside the input or
    its start padding) as start and end paddings; 1-D as 2-D over a height of 1 (x reshaped)."""
    d = rank(x) - 2
    sizes = list(x.shape[2:])
    if n.op_type.startswith(("Global", "QLinearGlobal")):
        window, strides, dilations, start, end = sizes, [1] * d, [1] * d, [0] * d, [0] * d
    else:
        window = list(n.attr("kernel_shape"))
        strides, dilations = list(n.attr("strides", [1] * d)), list(n.attr("dilations", [1] * d))
        start, end = _pads(n, sizes, window, strides, dilations)
        if n.attr("auto_pad", "NOTSET") in ("NOTSET", "") and n.attr("ceil_mode", 0):
            for i in range(d):
                extent, padded = (window[i] - 1) * dilations[i] + 1, sizes[i] + start[i] + end[i]
                out = -(-(padded - extent) // strides[i]) + 1
                if (out - 1) * strides[i] >= sizes[i] + start[i]:
                    out -= 1  # (the last window must start inside the input or its start padding)
                extra = max(0, (out - 1) * strides[i] + extent - padded)
                if extra and kind == "AveragePool" and n.attr("count_include_pad", 0):
                    raise NotMapped("ceil_mode with count_include_pad=1: IncludePadding would count the positions "
                                    "ceil_mode adds past the end padding, which ONNX leaves out of the divisor")
                end[i] += extra
    if d == 1:
        x = _to_2d(ctx, x)
        window, strides, dilations = [1, *window], [1, *strides], [1, *dilations]
        start, end = [0, *start], [0, *end]
    return x, window, {"strides": strides, "start_padding": start, "end_padding": end, "dilations": dilations}


def _pool(ctx, n):
    """MaxPool, AveragePool, LpPool and their Global forms: MAX_POOLING2, AVERAGE_POOLING and
    LP_POOLING, as the provider builds them: 1-D pooling as 2-D over a height of 1; auto_pad
    and ceil_mode (ONNX's output size, the last window starting inside the input or its start
    padding) as start and end paddings; MaxPool's Indices (row-major flat indices over NCHW,
    DirectML's OutputIndicesTensor) as UINT64, cast to ONNX's INT64."""
    x = as_expr(ctx, n.inputs[0])
    kind = n.op_type.removeprefix("Global")
    if n.attr("storage_order", 0) == 1:
        raise NotMapped("storage_order=1 (column-major indices): DirectML's indices are row-major")
    d = rank(x) - 2
    x, window, args = _pool_window(ctx, n, x, kind)
    indices = kind == "MaxPool" and len(n.outputs_wanted) > 1 and n.outputs_wanted[1]
    if kind == "MaxPool":
        outs = ctx.fn("max_pooling")(x, window, output_indices=np.uint64, **args) if indices else \
            [ctx.fn("max_pooling")(x, window, **args)]
    elif kind == "AveragePool":
        outs = [ctx.fn("average_pooling")(x, window, include_padding=bool(n.attr("count_include_pad", 0)), **args)]
    else:
        outs = [ctx.fn("lp_pooling")(x, window, p=int(n.attr("p", 2)), **args)]
    if indices:
        outs = [outs[0], ctx.fn("cast")(outs[1], np.int64)]
    return [reshape(ctx, y, [y.shape[0], y.shape[1], y.shape[3]]) if d == 1 else y for y in outs]


# ------------------------------------------------------------------------------ normalization
def _batch_norm(ctx, n):
    """BatchNormalization in inference mode: BATCH_NORMALIZATION, scale, B, mean and var [C]
    (per channel, as the functional form takes them)."""
    if n.attr("training_mode", 0) or any(n.outputs_wanted[1:]):
        raise NotMapped("training_mode: the batch's own mean and variance and the running statistics "
                        "(DML_BATCH_NORMALIZATION_TRAINING's), not inference")
    x = as_expr(ctx, n.inputs[0])
    scale, bias, mean, var = (as_expr(ctx, v) for v in n.inputs[1:5])
    return [ctx.fn("batch_normalization")(x, mean, var, scale, bias, epsilon=n.attr("epsilon", 1e-5))]


def _layer_norm(ctx, n):
    """LayerNormalization: MEAN_VARIANCE_NORMALIZATION1 over the axes from `axis` on (Scale
    and B broadcast as numpy does); its optional Mean and InvStdDev outputs, where read, as
    DirectML operators compute them: REDUCE's AVERAGE of x and of (x - Mean)^2, then
    1 / sqrt(variance + epsilon) (ELEMENT_WISE_ADD, SQRT, RECIP)."""
    x = as_expr(ctx, n.inputs[0])
    axes = list(range(n.attr("axis", -1) % rank(x), rank(x)))
    eps = n.attr("epsilon", 1e-5)
    scale, bias = (None if v is None else as_expr(ctx, v) for v in (n.input(1), n.input(2)))
    y = ctx.fn("mean_variance_normalization")(x, scale, bias, axes=axes, normalize_variance=True, epsilon=eps)
    if not any(n.outputs_wanted[1:]):
        return [y]
    mean = ctx.fn("reduce")(x, "average", axes)
    centered = ctx.fn("subtract")(x, mean)
    var = ctx.fn("reduce")(ctx.fn("multiply")(centered, centered), "average", axes)
    epsilon = np.full([1] * rank(x), eps, _dtype(x))
    return [y, mean, ctx.fn("recip")(ctx.fn("sqrt")(ctx.fn("add")(var, epsilon)))]


def _per_channel(ctx, v, r: int):
    """A [C] tensor as [C, 1, ...] (numpy's broadcast over [N, C, spatial...] of rank r)."""
    return as_expr(ctx, reshape(ctx, v, [v.shape[0]] + [1] * (r - 2)))


def _instance_norm(ctx, n):
    x = as_expr(ctx, n.inputs[0])
    r = rank(x)
    scale, bias = _per_channel(ctx, n.inputs[1], r), _per_channel(ctx, n.inputs[2], r)
    return [ctx.fn("mean_variance_normalization")(x, scale, bias, axes=list(range(2, r)), normalize_variance=True,
                                                  epsilon=n.attr("epsilon", 1e-5))]


def _mvn(ctx, n):
    """MeanVarianceNormalization: MEAN_VARIANCE_NORMALIZATION1 over `axes` (default 0, 2, 3),
    Epsilon ONNX's 1e-9 (ONNX adds it to the standard deviation, DirectML to the variance:
    the same result but where the variance is below about 1e-9)."""
    x = as_expr(ctx, n.inputs[0])
    axes = sorted(a % rank(x) for a in n.attr("axes", [0, 2, 3]))
    return [ctx.fn("mean_variance_normalization")(x, axes=axes, normalize_variance=True, epsilon=1e-9)]


def _lp_norm(ctx, n):
    """LpNormalization: x / max(norm, 1e-5) (DirectML's Epsilon at the page's recommended
    value: ONNX divides by the norm, and gives 0 for a zero row)."""
    x = as_expr(ctx, n.inputs[0])
    return [ctx.fn("lp_normalization")(x, axis=n.attr("axis", -1) % rank(x), p=n.attr("p", 2), epsilon=1e-5)]


def _lrn(ctx, n):
    """LRN: LOCAL_RESPONSE_NORMALIZATION across channels (ONNX's only region)."""
    return [ctx.fn("local_response_normalization")(as_expr(ctx, n.inputs[0]), cross_channel=True,
                                                   local_size=n.attr("size"), alpha=n.attr("alpha", 1e-4),
                                                   beta=n.attr("beta", 0.75), bias=n.attr("bias", 1.0))]


# ------------------------------------------------------------------------------ resampling (Resize, Upsample)
#: ONNX Resize's modes -> dml.resample's (DML_INTERPOLATION_MODE; "cubic" is gpudml's extension).
_RESIZE_MODES = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic"}

#: nearest_mode -> (DML_AXIS_DIRECTION, what is added to every input pixel offset), as the
#: provider's DmlOperatorResize maps it: DirectML rounds the input coordinate toward the
#: direction (ceil or floor), so ONNX's rounding of halves is an offset of a half pixel.
_NEAREST_MODES = {"round_prefer_floor": ("increasing", 0.5), "round_prefer_ceil": ("decreasing", -0.5),
                  "floor": ("decreasing", 0.0), "ceil": ("increasing", 0.0)}

_COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                     "tf_half_pixel_for_nn", "tf_crop_and_resize")

#: The largest float32: the scale of an axis whose every output maps to one input coordinate.
_FLT_MAX = float(np.finfo(np.float32).max)


def _g(values) -> str:
    """Floats as %g (float32 values without their float64 tails), or None."""
    return "None" if values is None else "[" + ", ".join(f"{v:g}" for v in values) + "]"


def _floats(a) -> list[float] | None:
    """A constant input as floats; None where omitted or empty (ONNX's "not given")."""
    if a is None or np.asarray(a).size == 0:
        return None
    return [float(v) for v in np.asarray(a, np.float32).reshape(-1)]


def _resize_request(n, in_shape: list[int]):
    """(output sizes, ONNX's scales, roi as [starts..., ends...] or None) of a Resize or
    Upsample node over every axis: `scales` or `sizes` (opset 18's `axes` naming the axes they
    cover, the others kept), `keep_aspect_ratio_policy`; the output sizes as the provider's
    ResizeHelper computes them (floor(size * scale) in float32; from `sizes`, the scales are
    sizes / input sizes)."""
    r = len(in_shape)
    legacy = n.op_type == "Upsample" or n.opset < 11
    roi = sizes = None
    if n.op_type == "Upsample" and n.opset < 9:
        scales = [float(s) for s in n.attr("scales", [])]
    elif legacy:
        scales = _floats(n.constant(1, "scales" if n.op_type == "Upsample" else "roi (scales before opset 11)"))
    else:
        roi, scales = _floats(n.constant(1, "roi (scales before opset 11)")), _floats(n.constant(2, "scales"))
        sizes = n.constant(3, "sizes")
        sizes = None if sizes is None or np.asarray(sizes).size == 0 else _ints(sizes)
    where = f"{n.op_type}-{n.opset}"
    if (scales is None) == (sizes is None):
        raise InvalidArgumentError(f"{where}: exactly one of scales and sizes must be given (scales {_g(scales)}, "
                                   f"sizes {sizes})")
    axes = n.attr("axes") if n.opset >= 18 else None
    axes = list(range(r)) if axes is None else [a + r if a < 0 else a for a in axes]
    if sorted(axes) != sorted(set(axes)) or any(not 0 <= a < r for a in axes):
        raise InvalidArgumentError(f"{where}: axes {n.attr('axes')} must be distinct axes of the input's rank {r}")
    given = scales if sizes is None else sizes
    if len(given) != len(axes):
        raise InvalidArgumentError(f"{where}: {'scales' if sizes is None else 'sizes'} has {len(given)} values, "
                                   f"one per axis of {axes} needs {len(axes)}")
    if roi is not None:
        if len(roi) != 2 * len(axes):
            raise InvalidArgumentError(f"{where}: roi has {len(roi)} values, starts and ends of the axes {axes} "
                                       f"need {2 * len(axes)}")
        full = [0.0] * r + [1.0] * r
        for k, a in enumerate(axes):
            full[a], full[a + r] = roi[k], roi[k + len(axes)]
        roi = full
    out, onnx_scales = list(in_shape), [1.0] * r
    if sizes is None:
        for a, s in zip(axes, scales):
            if not s > 0:
                raise InvalidArgumentError(f"{where}: scales must be positive, scales[{axes.index(a)}] is {s:g}")
            if n.op_type == "Upsample" and s < 1:
                raise InvalidArgumentError(f"{where}: Upsample's scales must be at least 1, scales[{axes.index(a)}] "
                                           f"is {s:g}")
            onnx_scales[a] = s
            out[a] = int(math.floor(np.float32(in_shape[a]) * np.float32(s)))
        return out, onnx_scales, roi
    policy = n.attr("keep_aspect_ratio_policy", "stretch")
    if policy == "stretch":  # the scales in float32, as the provider's ResizeHelper divides
        for a, s in zip(axes, sizes):
            out[a], onnx_scales[a] = s, float(np.float32(s) / np.float32(in_shape[a]))
    elif policy in ("not_larger", "not_smaller"):  # one scale for every axis named; sizes rounded half up,
        ratios = [s / in_shape[a] for a, s in zip(axes, sizes)]  # in float64 as ONNX's reference (the
        scale = min(ratios) if policy == "not_larger" else max(ratios)  # provider ignores the policy)
        for a in axes:
            out[a], onnx_scales[a] = int(scale * in_shape[a] + 0.5), scale
    else:
        raise InvalidArgumentError(f"{where}: keep_aspect_ratio_policy {policy!r} is not one of stretch, "
                                   f"not_larger, not_smaller")
    return out, onnx_scales, roi


def _axis_mapping(mode: str, size: int, out: int, scale: float, roi) -> tuple[float, float, float]:
    """(DirectML's scale, InputPixelOffset, OutputPixelOffset) of one axis for ONNX's
    coordinate_transformation_mode `mode`, so that DirectML's rule, input = (output -
    OutputPixelOffset) / Scale - InputPixelOffset, is ONNX's formula (the provider's
    ComputePixelOffsetsAndScales, but where ONNX and the provider differ: ONNX's
    "length_resized > 1" tests the output's size (the provider, the input's); align_corners'
    length_resized is scale * size, fractional where the scale is (ONNX's reference and node
    tests; the provider and onnxruntime's CPU provider take the integer output size); and
    tf_crop_and_resize's scale is (out - 1) / ((end - start) (size - 1)) however small the crop
    (the provider clamps the denominator at 1))."""
    if mode in ("half_pixel", "pytorch_half_pixel"):
        if mode == "pytorch_half_pixel" and out == 1:
            return scale, 0.0, 0.0  # x_original = 0
        return scale, 0.5, -0.5
    if mode == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / (scale * size))
        return scale, 0.5 - offset, -0.5
    if mode == "align_corners":  # x_original = x * (size - 1) / (length - 1), or 0 where out is 1
        length = scale * size  # ONNX's length_resized: from the scale, fractional where the scale is
        return (scale, 0.0, 0.0) if out == 1 or size == 1 else ((length - 1) / (size - 1), 0.0, 0.0)
    if mode == "asymmetric":
        return scale, 0.0, 0.0
    if mode == "tf_half_pixel_for_nn":
        return scale, 0.0, -0.5
    start, end = roi
    if out == 1:  # x_original = (start + end) / 2 * (size - 1)
        return scale, -(start + end) / 2 * (size - 1), 0.0
    span = (end - start) * (size - 1)
    if span < 0:
        raise NotMapped(f"a roi whose end {end:g} is below its start {start:g} (a flipped crop): DirectML's scales "
                        f"are positive")
    return (out - 1) / span if span > 0 else _FLT_MAX, -start * (size - 1), 0.0


def _crop_outside(size: int, out: int, roi) -> np.ndarray:
    """tf_crop_and_resize: which outputs of an axis map outside the input (ONNX's x_original
    < 0 or > size - 1), where ONNX writes extrapolation_value."""
    start, end = roi
    x = np.arange(out, dtype=np.float64)
    original = (np.full(out, (end - start) * (size - 1) / 2) if out == 1
                else x * (end - start) * (size - 1) / (out - 1)) + start * (size - 1)
    return (original < 0) | (original > size - 1)


def _resize(ctx, n):
    """Resize and Upsample: dml.resample (DML_OPERATOR_RESAMPLE3), as the provider's
    DmlOperatorResize builds it, in ONNX's exact semantics where the provider stops short:
    cubic through gpudml's cubic extension (cubic_coeff_a), exclude_outside through its
    extension too (linear and cubic); antialias through its antialias_scales extension (ONNX's
    filter scale min(scale, 1) per axis, whatever the coordinate mapping: DirectML widens the
    linear filter only where 1 / scale > 2, by its coordinate scale); tf_crop_and_resize's extrapolation_value through
    ELEMENT_WISE_IF of a constant mask (DirectML clamps coordinates to the edge);
    keep_aspect_ratio_policy and axes as ONNX's reference computes them. Upsample and
    Resize-10 are ONNX's asymmetric mapping, rounding nearest down where an axis upsamples and
    up where it downsamples (as onnxruntime runs them). Axes that keep their size and mapping
    are merged with their neighbours (DirectML resamples at most 4 dimensions: the provider
    squeezes the sizes of 1)."""
    x = as_expr(ctx, n.inputs[0])
    in_shape = shape(x)
    out_shape, onnx_scales, roi = _resize_request(n, in_shape)
    if min(out_shape) < 1:  # an empty result: a host value, no dispatch
        return [np.zeros(out_shape, _dtype(x))]
    mode, coordinate = _resize_modes(n, roi)
    crop = roi if coordinate == "tf_crop_and_resize" else None
    scales, in_offsets, out_offsets = _axis_mappings(coordinate, in_shape, out_shape, onnx_scales, crop)
    antialias = bool(n.attr("antialias", 0)) and mode != "nearest"  # (nearest has no filter: ONNX ignores it)
    kwargs = {"mode": _RESIZE_MODES[mode], "antialiased": antialias}
    if antialias:  # ONNX's filter scale, min(scale, 1) per axis: gpudml's antialias_scales extension
        kwargs["antialias_scales"] = [min(float(s), 1.0) for s in onnx_scales]
    if mode != "nearest":  # exclude_outside: gpudml's extension of RESAMPLE3 (the provider refuses it)
        kwargs["exclude_outside"] = bool(n.attr("exclude_outside", 0))
    if mode == "cubic":
        kwargs["cubic_coeff_a"] = float(n.attr("cubic_coeff_a", -0.75))
    y = x
    for args, axes, offsets in _resize_passes(n, mode, kwargs, in_shape, out_shape, onnx_scales, scales,
                                              in_offsets, out_offsets):
        chosen = [a in axes for a in range(len(in_shape))]
        y = _resample(ctx, y, [out_shape[a] if c else shape(y)[a] for a, c in enumerate(chosen)],
                      [s if c else 1.0 for s, c in zip(scales, chosen)],
                      [o if c else 0.0 for o, c in zip(offsets, chosen)],
                      [o if c else 0.0 for o, c in zip(out_offsets, chosen)], args)
    return [y if crop is None else _extrapolate(ctx, n, y, in_shape, out_shape, crop)]


def _legacy(n) -> bool:
    """Upsample and Resize-10: no coordinate_transformation_mode, nearest_mode, cubic."""
    return n.op_type == "Upsample" or n.opset < 11


def _resize_modes(n, roi) -> tuple[str, str]:
    """(mode, coordinate_transformation_mode) of the node, checked."""
    legacy = _legacy(n)
    mode = n.attr("mode", "nearest")
    if mode not in _RESIZE_MODES or legacy and mode == "cubic":
        raise NotMapped(f"mode {mode!r}: ONNX's {n.op_type}-{n.opset} has nearest and linear"
                        + ("" if legacy else " and cubic"))
    coordinate = "asymmetric" if legacy else n.attr("coordinate_transformation_mode", "half_pixel")
    if coordinate not in _COORDINATE_MODES:
        raise NotMapped(f"coordinate_transformation_mode {coordinate!r}: not one of ONNX's {_COORDINATE_MODES}")
    if coordinate == "tf_crop_and_resize" and roi is None:
        raise InvalidArgumentError(f"{n.op_type}-{n.opset}: tf_crop_and_resize needs roi (input 1)")
    return mode, coordinate


def _axis_mappings(coordinate: str, in_shape, out_shape, onnx_scales, crop) -> tuple[list, list, list]:
    """DirectML's (Scales, InputPixelOffsets, OutputPixelOffsets); an axis that keeps its size
    at scale 1 (and the whole roi) is the identity whatever the mode (ONNX's reference skips it)."""
    r = len(in_shape)
    mappings = []
    for a in range(r):
        axis_roi = None if crop is None else (crop[a], crop[a + r])
        if in_shape[a] == out_shape[a] and onnx_scales[a] == 1 and axis_roi in (None, (0.0, 1.0)):
            mappings.append((1.0, 0.0, 0.0))
        else:
            mappings.append(_axis_mapping(coordinate, in_shape[a], out_shape[a], onnx_scales[a], axis_roi))
    return [list(m) for m in zip(*mappings)]


def _resize_passes(n, mode, kwargs, in_shape, out_shape, onnx_scales, scales, in_offsets, out_offsets) -> list:
    """The resamples to run: (arguments, the axes each resamples, its InputPixelOffsets). One,
    but where Upsample or Resize-10's nearest rounds down on some axes (those that grow) and up
    on others (those that shrink): one per direction (nearest selects per axis: exact). With
    nearest_mode, the provider's direction and half-pixel adjustment of the input offsets."""
    r = len(in_shape)
    if mode != "nearest":
        return [(kwargs, list(range(r)), in_offsets)]
    identity = [s == 1.0 and i == 0.0 and o == 0.0 and in_shape[a] == out_shape[a]
                for a, (s, i, o) in enumerate(zip(scales, in_offsets, out_offsets))]
    if _legacy(n):
        up = [a for a in range(r) if not identity[a] and onnx_scales[a] >= 1]
        down = [a for a in range(r) if not identity[a] and onnx_scales[a] < 1]
        passes = [({**kwargs, "rounding_direction": d}, axes, in_offsets)
                  for d, axes in (("decreasing", up), ("increasing", down)) if axes]
        return passes or [({**kwargs, "rounding_direction": "decreasing"}, [], in_offsets)]
    nearest = n.attr("nearest_mode", "round_prefer_floor")
    if nearest not in _NEAREST_MODES:
        raise NotMapped(f"nearest_mode {nearest!r}: not one of {tuple(_NEAREST_MODES)}")
    direction, adjustment = _NEAREST_MODES[nearest]
    adjusted = [o if identity[a] else o + adjustment for a, o in enumerate(in_offsets)]
    return [({**kwargs, "rounding_direction": direction}, list(range(r)), adjusted)]


def _extrapolate(ctx, n, y, in_shape, out_shape, crop):
    """tf_crop_and_resize: extrapolation_value where some axis's x_original falls outside the
    input, through ELEMENT_WISE_IF of a constant UINT8 mask (size 1 on the axes not cropped)."""
    r = len(in_shape)
    outside = np.zeros([1] * r, bool)
    for a in range(r):
        mask = _crop_outside(in_shape[a], out_shape[a], (crop[a], crop[a + r]))
        outside = outside | mask.reshape([1] * a + [out_shape[a]] + [1] * (r - a - 1))
    if not outside.any():
        return y
    value = np.full([1] * r, n.attr("extrapolation_value", 0.0), _dtype(y))
    return ctx.fn("if_")(as_expr(ctx, outside.astype(np.uint8)), as_expr(ctx, value), y)


def _resample(ctx, x, out_shape: list[int], scales, in_offsets, out_offsets, kwargs):
    """dml.resample of x to out_shape, each run of adjacent identity axes (the same size,
    scale 1, no offsets) merged into one (a view, no copy), so that at most 4 axes remain where
    possible."""
    in_shape = shape(x)
    stretch = kwargs.get("antialias_scales")  # per axis (full rank), picked as the scales are
    groups: list[list[int]] = []
    previous = False
    for a in range(len(in_shape)):
        same = (in_shape[a] == out_shape[a] and scales[a] == 1.0 and in_offsets[a] == 0.0 and out_offsets[a] == 0.0
                and (stretch is None or stretch[a] >= 1.0))
        if same and previous:
            groups[-1].append(a)
        else:
            groups.append([a])
        previous = same
    if len(groups) > 4:
        raise NotMapped(f"{len(groups)} axes to resample after merging those kept as they are (sizes {in_shape} to "
                        f"{out_shape}): DirectML resamples at most 4")
    merged_in = [int(np.prod([in_shape[a] for a in g])) for g in groups]
    merged_out = [int(np.prod([out_shape[a] for a in g])) for g in groups]
    pick = [g[0] for g in groups]
    if stretch is not None:
        kwargs = {**kwargs, "antialias_scales": [stretch[a] for a in pick]}
    y = ctx.fn("resample")(reshape(ctx, x, merged_in), [scales[a] for a in pick], output_sizes=merged_out,
                           input_pixel_offsets=[in_offsets[a] for a in pick],
                           output_pixel_offsets=[out_offsets[a] for a in pick], **kwargs)
    return reshape(ctx, y, out_shape)


# ------------------------------------------------------------------------------ the table
def _u(op_type: str, name: str, directml: str) -> Mapping:
    return Mapping(op_type, directml, _unary(name), (name,))


def _col2im(ctx, n):
    """Col2Im (opset 18) as the provider's DmlOperatorCol2Im: one FOLD whose window is
    block_shape and whose output's spatial sizes are image_shape (both constants), with the
    strides, dilations and pads (begins, then ends) per spatial axis. The provider passes
    the pads' begins as both StartPadding and EndPadding (one pointer for both); gpudml
    passes the ends as EndPadding, as ONNX defines them: the same wherever they are
    symmetric (every node test), and the only reading where they are not."""
    image, block = _ints(n.constant(1, "image_shape")), _ints(n.constant(2, "block_shape"))
    count = len(block)
    pads = n.attr("pads", [0] * 2 * count)
    return [ctx.fn("fold")(as_expr(ctx, n.inputs[0]), image, block, strides=n.attr("strides", [1] * count),
                           dilations=n.attr("dilations", [1] * count), start_padding=pads[:count],
                           end_padding=pads[count:])]


# ------------------------------------------------------------------------------ recurrent networks (issue 45)
#: ONNX's activation names (RNN, GRU, LSTM's `activations`) -> (gpudml's fused activation, the
#: attributes it takes from the activation_alpha and activation_beta stacks, in that order,
#: with the provider's defaults: ActivationHelper::GetDefaultAlpha/Beta, which
#: DmlOperatorRecurrentNeuralNetwork.cpp calls). Affine (alpha*x + beta), which the provider
#: refuses, is DirectML's ACTIVATION_LINEAR; Softplus DirectML's with Steepness 1 (ONNX's).
RNN_ACTIVATIONS: dict[str, tuple[str, tuple[tuple[str, float], ...]]] = {
    "Relu": ("relu", ()), "Tanh": ("tanh", ()), "Sigmoid": ("sigmoid", ()), "Softsign": ("softsign", ()),
    "Softplus": ("softplus", ()), "LeakyRelu": ("leaky_relu", (("alpha", 0.01),)),
    "ThresholdedRelu": ("thresholded_relu", (("alpha", 1.0),)),
    "ScaledTanh": ("scaled_tanh", (("alpha", 1.0), ("beta", 1.0))),
    "HardSigmoid": ("hard_sigmoid", (("alpha", 0.2), ("beta", 0.5))),
    "Elu": ("elu", (("alpha", 1.0),)), "Affine": ("linear", (("alpha", 1.0), ("beta", 0.0))),
}

#: op type -> (gates, default activations of one direction, the functional form).
RECURRENT = {"RNN": (1, ("Tanh",), "rnn"), "GRU": (3, ("Sigmoid", "Tanh"), "gru"),
             "LSTM": (4, ("Sigmoid", "Tanh", "Tanh"), "lstm")}

_DIRECTIONS = {"forward": "forward", "reverse": "backward", "bidirectional": "bidirectional"}


def _rnn_activations(n, directions: int) -> list:
    """The node's activations as gpudml's FusedActivation list, one direction's then the
    other's, as the provider reads them: none given, the op's defaults per direction; the
    alpha and beta lists consumed in order by the functions that take them (stacks), each
    missing value the provider's default. A list of another length than the functions of
    every direction is refused (the provider pads a short list with empty names, which it
    refuses, and drops the rest of a long one; onnxruntime's CPU provider refuses both)."""
    _, defaults, _ = RECURRENT[n.op_type]
    names = list(n.attr("activations", []) or [])
    per = len(defaults)
    if not names:
        names = list(defaults) * directions
    if len(names) != per * directions:
        raise InvalidArgumentError(
            f"{n.op_type}-{n.opset} {n.name!r}: activations must name {per} function(s) per direction "
            f"({per * directions} for direction {n.attr('direction', 'forward')!r}), got {len(names)}: {names}")
    alphas, betas = list(n.attr("activation_alpha", []) or []), list(n.attr("activation_beta", []) or [])
    made = []
    for name in names:
        if name not in RNN_ACTIVATIONS:
            raise InvalidArgumentError(f"{n.op_type}-{n.opset} {n.name!r}: activation {name!r} is not one of "
                                       f"{', '.join(RNN_ACTIVATIONS)}")
        fused, params = RNN_ACTIVATIONS[name]
        values = {}
        for key, default in params:
            stack = alphas if key == "alpha" else betas
            values[key] = float(stack.pop(0)) if stack else default
        made.append(FusedActivation(fused, **values))
    return made


def _recurrent(ctx, n):
    """RNN, GRU, LSTM (opsets 7, 14, 22) as the provider's DmlOperatorRecurrentNeuralNetwork.cpp:
    one DML_OPERATOR_RNN / GRU / LSTM whose tensors are ONNX's, viewed at DirectML's 4-D sizes
    (X [1, seq, batch, input], W [1, dirs, gates*hidden, input], R [1, dirs, gates*hidden,
    hidden], B [1, 1, dirs, 2*gates*hidden], initial_h / initial_c [1, dirs, batch, hidden],
    sequence_lens [1, 1, 1, batch] read as UINT32 (the provider's ForceUnsignedDataType), P
    [1, 1, dirs, 3*hidden]); ONNX's gate orders are DirectML's (LSTM iofc, GRU zrh: the
    provider passes the weights as they are). direction forward / reverse / bidirectional:
    FORWARD / BACKWARD / BIDIRECTIONAL. LSTM's `clip` (present: UseClipThreshold) and
    input_forget (CoupleInputForget); GRU's linear_before_reset. `layout` 1 (opset 14 on:
    batch first) as strides: X, initial_h and initial_c read transposed, Y and Y_h / Y_c
    returned as transposed views (the provider reads hidden_size only and ignores layout).
    GRU's and RNN's `clip` has no DirectML field: refused (the provider drops it). Only the
    outputs read are asked of the operator (the provider passes a null desc for the others)."""
    gates, _, form = RECURRENT[n.op_type]
    where = f"{n.op_type}-{n.opset} {n.name!r}"
    direction = n.attr("direction", "forward")
    if direction not in _DIRECTIONS:
        raise InvalidArgumentError(f"{where}: direction {direction!r} is not one of forward, reverse, bidirectional")
    dirs = 2 if direction == "bidirectional" else 1
    layout = int(n.attr("layout", 0)) if n.opset >= 14 else 0
    if layout not in (0, 1):
        raise InvalidArgumentError(f"{where}: layout {layout} is not 0 (sequence first) or 1 (batch first)")
    if n.op_type != "LSTM" and n.attr("clip") is not None:
        raise NotMapped(f"clip on {n.op_type}: DML_{n.op_type}_OPERATOR_DESC has no clip threshold")
    x, w, r = n.inputs[:3]
    for k, what in enumerate(("X", "W", "R")):
        if len(np.shape(n.inputs[k])) != 3:
            raise InvalidArgumentError(f"{where}: {what} must have rank 3, got shape {list(np.shape(n.inputs[k]))}")
    if layout:
        x = transpose(ctx, x, [1, 0, 2])
    seq, batch, inputs = (int(s) for s in np.shape(x))
    hidden = int(np.shape(r)[-1])
    if n.attr("hidden_size") is not None and int(n.attr("hidden_size")) != hidden:
        raise InvalidArgumentError(f"{where}: hidden_size {n.attr('hidden_size')} but R has shape {list(np.shape(r))} "
                                   f"(R: [num_directions, {gates}*hidden_size, hidden_size])")
    expected = {"W": (w, [dirs, gates * hidden, inputs]), "R": (r, [dirs, gates * hidden, hidden])}
    optional = {3: ("B", [dirs, 2 * gates * hidden]), 4: ("sequence_lens", [batch]),
                5: ("initial_h", [batch, dirs, hidden] if layout else [dirs, batch, hidden])}
    if n.op_type == "LSTM":
        optional[6] = ("initial_c", optional[5][1])
        optional[7] = ("P", [dirs, 3 * hidden])
    for k, (what, sizes) in optional.items():
        if n.input(k) is not None:
            expected[what] = (n.input(k), sizes)
    for what, (value, sizes) in expected.items():
        if list(np.shape(value)) != sizes:
            raise InvalidArgumentError(f"{where}: {what} must have shape {sizes} (X {list(np.shape(n.inputs[0]))}, "
                                       f"layout {layout}, direction {direction!r}, {gates} gate(s) of hidden size "
                                       f"{hidden}), got {list(np.shape(value))}")
    lengths = n.input(4)
    if lengths is not None and not isinstance(lengths, Expression):
        values = np.asarray(lengths).reshape(-1)
        if values.size and (values.min() < 0 or values.max() > seq):
            raise InvalidArgumentError(f"{where}: sequence_lens must lie in [0, {seq}] (the sequence length), "
                                       f"got {values.tolist()}")

    def four_d(value, sizes):
        return None if value is None else as_expr(ctx, reshape(ctx, as_expr(ctx, value), sizes))

    def state(k):
        value = n.input(k)
        if value is None:
            return None
        return four_d(transpose(ctx, value, [1, 0, 2]) if layout else value, [1, dirs, batch, hidden])

    kwargs = {"hidden_init": state(5), "direction": _DIRECTIONS[direction],
              "activations": _rnn_activations(n, dirs),
              "sequence_lengths": None if lengths is None else four_d(as_unsigned(ctx, lengths), [1, 1, 1, batch])}
    if n.op_type == "LSTM":
        clip = n.attr("clip")
        kwargs.update(cell_init=state(6), peephole=four_d(n.input(7), [1, 1, dirs, 3 * hidden]),
                      clip=None if clip is None else float(clip), use_clip=clip is not None,
                      couple_input_forget=bool(n.attr("input_forget", 0)))
    if n.op_type == "GRU":
        kwargs["linear_before_reset"] = bool(n.attr("linear_before_reset", 0))
    count = 3 if n.op_type == "LSTM" else 2
    wanted = [k < len(n.outputs_wanted) and n.outputs_wanted[k] for k in range(count)]
    if not any(wanted):  # nothing reads the node (the provider refuses a node with no output; a dead one is none)
        return [None] * count
    flags = dict(zip(("output_sequence", "output_single", "output_cell_single")[:count], wanted))
    made = ctx.fn(form)(four_d(x, [1, seq, batch, inputs]), four_d(w, [1, dirs, gates * hidden, inputs]),
                        four_d(r, [1, dirs, gates * hidden, hidden]),
                        four_d(n.input(3), [1, 1, dirs, 2 * gates * hidden]), **kwargs, **flags)
    made = iter(made if isinstance(made, tuple) else (made,))
    results = []
    for k, asked in enumerate(wanted):
        value = next(made) if asked else None
        if value is not None and k == 0:
            value = transpose(ctx, value, [2, 0, 1, 3]) if layout else value
        elif value is not None:
            value = reshape(ctx, value, [dirs, batch, hidden])
            value = transpose(ctx, value, [1, 0, 2]) if layout else value
        results.append(value)
    return results


# ------------------------------------------------------------------------------ random numbers (issue 44)
#: The random ops: never folded on the host (their values are drawn when the graph runs).
RANDOM = ("RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike", "Bernoulli", "Multinomial")
_MANTISSA = np.array([0x7FFFFF], np.uint32)
_TWO_PI = 2 * math.pi


def _seed_state(n) -> np.ndarray:
    """The generator's first state for a random node: the key the `seed` attribute (a FLOAT,
    taken as the provider's static_cast<uint64_t>(seed): truncated, modulo 2^64), else one
    drawn from the operating system's entropy (ONNX: "auto generated"; a session keeps the
    first build's); the counter 0."""
    seed = n.attr("seed")
    if seed is None:
        seed = int(np.random.default_rng().integers(0, 2**63))
    elif not math.isfinite(seed):
        raise InvalidArgumentError(f"{n.op_type}: seed = {seed} is not a finite number")
    return philox_state(int(seed) % (1 << 64))


def _random_bits(ctx, n, sizes):
    """UINT32 Philox bits of `sizes` (4 sizes: DML_RANDOM_GENERATOR's output) from the node's
    state (`Context.random_state`: a session's advances from run to run)."""
    blocks = -(-int(np.prod(sizes)) // 4)
    state = ctx.random_state(n.proto.output[0], _seed_state(n), blocks)
    return ctx.fn("random_generator")(as_expr(ctx, state), list(sizes), output_state=False)


def _unit(ctx, bits, scale: float = 1.0, bias: float = 0.0):
    """The bits' low 23 as a FLOAT32 in [0, 1) (the provider's mantissa: (bits & 0x7FFFFF) *
    2^-23, exactly, as its BIT_AND, BIT_OR 1.0's exponent and minus 1), then * scale + bias
    (one ScaleBias)."""
    mantissa = ctx.fn("cast")(ctx.fn("bit_and")(bits, _MANTISSA), np.float32)
    return ctx.fn("identity")(mantissa, scale_bias=ScaleBias(scale * 2.0**-23, bias))


def _random_shape_dtype(ctx, n) -> tuple[list[int], np.dtype]:
    """The output's shape and type: the `shape` attribute (RandomUniform, RandomNormal) or the
    input's shape (the *Like ops); the `dtype` attribute, else FLOAT32 (or the input's type)."""
    if n.op_type.endswith("Like") or n.op_type == "Bernoulli":
        x = n.inputs[0]
        sizes, default = list(x.shape), _dtype(x)
    else:
        sizes, default = [int(v) for v in n.attr("shape", [])], np.dtype(np.float32)
    dtype = n.attr("dtype")
    dtype = default if dtype is None else np.dtype(onnx.helper.tensor_dtype_to_np_dtype(dtype))
    if any(s < 1 for s in sizes):
        raise NotMapped(f"an empty tensor (sizes {sizes}): DirectML sizes are at least 1")
    if dtype.kind != "f" and n.op_type != "Bernoulli":
        raise NotMapped(f"a random {dtype} tensor: ONNX's random ops draw floats")
    return sizes, dtype


def _finish(ctx, y, sizes, count: int, dtype):
    """The first `count` elements of y (FLOAT32, packed) as `sizes`, cast to `dtype`."""
    flat = reshape(ctx, y, [int(np.prod(y.shape))])
    if flat.shape[0] != count:
        flat = ctx.fn("slice")(flat, [0], [count])
    y = reshape(ctx, flat, sizes or [1])
    return y if dtype == np.float32 else ctx.fn("cast")(y, dtype)


def _random_uniform(ctx, n):
    """low + (high - low) u, u in [0, 1) from the bits' low 23 (the provider's conversion)."""
    sizes, dtype = _random_shape_dtype(ctx, n)
    count = int(np.prod(sizes))
    low, high = float(n.attr("low", 0.0)), float(n.attr("high", 1.0))
    span = float(np.float32(high) - np.float32(low))
    y = _unit(ctx, _random_bits(ctx, n, [1, 1, 1, count]), span, low)
    return [_finish(ctx, y, sizes, count, dtype)]


def _random_normal(ctx, n):
    """Box-Muller as ONNX Runtime's DirectML execution provider composes it
    (DmlOperatorRandomNormalLike.cpp): bits [1, 1, m / 2, 2] (m the count rounded up to
    even) made u in [0, 1), split into u1 (column 0) and u2 (column 1); r = sqrt(-2 log(clip(u1,
    1e-7, FLT_MAX))); elements 2i, 2i + 1 = r sin(2 pi u2), r cos(2 pi u2); then scale *
    z + mean; the last element dropped for an odd count."""
    sizes, dtype = _random_shape_dtype(ctx, n)
    count = int(np.prod(sizes))
    half = -(-count // 2)
    u = _unit(ctx, _random_bits(ctx, n, [1, 1, half, 2]))
    u1, u2 = ctx.fn("split")(u, 3, [1, 1])
    clipped = ctx.fn("clip")(u1, 1.0e-7, float(np.finfo(np.float32).max))
    r = ctx.fn("sqrt")(ctx.fn("log")(clipped), scale_bias=ScaleBias(-2.0, 0.0))
    sin = ctx.fn("multiply")(ctx.fn("sin")(u2, scale_bias=ScaleBias(_TWO_PI, 0.0)), r)
    cos = ctx.fn("multiply")(ctx.fn("cos")(u2, scale_bias=ScaleBias(_TWO_PI, 0.0)), r)
    z = ctx.fn("join")([sin, cos], 3)
    y = ctx.fn("identity")(z, scale_bias=ScaleBias(float(n.attr("scale", 1.0)), float(n.attr("mean", 0.0))))
    return [_finish(ctx, y, sizes, count, dtype)]


def _bernoulli(ctx, n):
    """1 where u < p (u in [0, 1) as RandomUniformLike's), so that P(1) = p as ONNX's text
    and onnxruntime's CPU kernel say (ONNX's function body compares Greater(u, p), which
    gives 1 - p: its slip); p read in FLOAT32; the result in `dtype` (default: p's type)."""
    x = as_expr(ctx, n.inputs[0])
    sizes, dtype = _random_shape_dtype(ctx, n)
    if dtype.kind not in "fiu" and dtype != np.bool_:
        raise NotMapped(f"a {dtype} output: not a DirectML data type")
    count = int(np.prod(sizes))
    p = x if _dtype(x) == np.float32 else ctx.fn("cast")(x, np.float32)
    u = reshape(ctx, _unit(ctx, _random_bits(ctx, n, [1, 1, 1, count])), sizes or [1])
    ones = ctx.fn("logical_less_than")(u, p)
    return [ones if dtype in (np.uint8, np.bool_) else ctx.fn("cast")(ones, dtype)]


def _multinomial(ctx, n):
    """Multinomial(x [B, C] unnormalized log-probabilities, sample_size S): sample s of batch b
    is the number of classes whose cumulative probability lies below u * total (u in [0, 1)
    as RandomUniformLike's, total the last cumulative one): the first class c with u * total
    < cdf[c], as inverse transform sampling (onnxruntime's CPU kernel's). As DirectML
    operators: ACTIVATION_SOFTMAX1 over the classes (float32), CUMULATIVE_SUMMATION, the
    comparison of every class with every sample (LOGICAL_LESS_THAN, UINT32 0/1, broadcast by
    strides over [B, S, C]) summed by REDUCE (SUM), at most C - 1 (MIN), CAST to `dtype`
    (INT32 by default, or INT64)."""
    x = as_expr(ctx, n.inputs[0])
    if rank(x) != 2:
        raise NotMapped(f"an input of rank {rank(x)}: Multinomial's is [batch_size, class_size]")
    batch, classes = (int(v) for v in x.shape)
    samples = int(n.attr("sample_size", 1))
    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(n.attr("dtype", onnx.TensorProto.INT32)))
    if samples < 1:
        raise NotMapped(f"sample_size = {samples}: an empty tensor (DirectML sizes are at least 1)")
    logits = x if _dtype(x) == np.float32 else ctx.fn("cast")(x, np.float32)
    cdf = ctx.fn("cumulative_sum")(ctx.fn("softmax")(logits, [1]), 1)
    total = ctx.fn("slice")(cdf, [0, classes - 1], [batch, 1])
    u = reshape(ctx, _unit(ctx, _random_bits(ctx, n, [1, 1, 1, batch * samples])), [batch, samples])
    target = ctx.fn("multiply")(u, broadcast(ctx, total, [batch, samples]))
    grid = [batch, samples, classes]
    below = ctx.fn("logical_less_than")(broadcast(ctx, reshape(ctx, cdf, [batch, 1, classes]), grid),
                                        broadcast(ctx, reshape(ctx, target, [batch, samples, 1]), grid),
                                        output_data_type="UINT32")
    index = ctx.fn("reduce")(below, "sum", [2])
    index = ctx.fn("min")(index, np.array([classes - 1], np.uint32))
    return [reshape(ctx, ctx.fn("cast")(index, dtype), [batch, samples])]
def as_unsigned(ctx, x):
    """Integer indices as the unsigned type of their width, bit for bit: the provider's
    ForceUnsignedDataType (an INT64 tensor bound as UINT64; a negative index is a huge one).
    Eagerly a numpy view; in a graph one CAST (integers wrap: the same bits), as a graph
    value keeps its data type."""
    unsigned = {np.dtype(np.int64): np.uint64, np.dtype(np.int32): np.uint32}
    if not isinstance(x, Expression):
        x = np.asarray(x)
        return x.view(unsigned[x.dtype]) if x.dtype in unsigned else x
    kind = np.dtype(x.dtype.numpy)
    return ctx.fn("cast")(x, unsigned[kind]) if kind in unsigned else x


def _roi_align(ctx, n):
    """RoiAlign (opsets 10, 16) as the provider's DmlOperatorRoiAlign: one ROI_ALIGN1 with
    SpatialScaleX = SpatialScaleY = spatial_scale, OutOfBoundsInputValue 0, the samples per
    output sampling_ratio (0: Minimum 1, Maximum UINT32_MAX, i.e. ceil(region / output)),
    `mode` avg or max as AVERAGE or MAX, LINEAR interpolation, InputPixelOffset 0.5 for
    half_pixel (opset 16's default) and 0 for output_half_pixel (opset 10's only), and
    OutputPixelOffset -0.5; batch_indices (INT64) read as UINT64.

    output_half_pixel takes a region at least one input pixel wide and high, as ONNX's
    reference and onnxruntime's CPU kernel do (max(x2 * s - x1 * s, 1): "malformed ROIs"
    forced to 1x1, the legacy mode's rule); ROI_ALIGN1's page has no such floor and the
    provider passes the regions as they are, which differs from onnxruntime wherever a
    region is under a pixel (torchvision's Faster R-CNN proposals, thin boxes at an image
    edge): the regions' ends are raised to x1 + 1/s, y1 + 1/s first (element-wise, before the
    ROI_ALIGN1)."""
    mode = n.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise NotMapped(f"mode {mode!r}: DirectML's ROI_ALIGN1 reduces by AVERAGE or MAX")
    transform = n.attr("coordinate_transformation_mode", "half_pixel") if n.opset >= 16 else "output_half_pixel"
    if transform not in ("half_pixel", "output_half_pixel"):
        raise NotMapped(f"coordinate_transformation_mode {transform!r}: half_pixel or output_half_pixel only")
    ratio = int(n.attr("sampling_ratio", 0))
    if ratio < 0:
        raise InvalidArgumentError(f"RoiAlign: sampling_ratio = {ratio} must be 0 or positive")
    x, rois = as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1])
    indices = as_unsigned(ctx, as_expr(ctx, n.inputs[2]))
    scale = float(n.attr("spatial_scale", 1.0))
    if transform == "output_half_pixel":  # (x1, y1, max(x2, x1 + 1/s), max(y2, y1 + 1/s))
        count = rois.shape[0]
        start, end = ctx.fn("slice")(rois, [0, 0], [count, 2]), ctx.fn("slice")(rois, [0, 2], [count, 2])
        end = ctx.fn("max")(end, ctx.fn("identity")(start, scale_bias=(1.0, 1.0 / scale)))
        rois = ctx.fn("join")([start, end], 1)
    return [ctx.fn("roi_align")(x, rois, indices, scale,
                                (int(n.attr("output_height", 1)), int(n.attr("output_width", 1))),
                                reduction_function="max" if mode == "max" else "average",
                                interpolation_mode="linear",
                                input_pixel_offset=0.5 if transform == "half_pixel" else 0.0,
                                output_pixel_offset=-0.5, out_of_bounds_input_value=0.0,
                                minimum_samples_per_output=ratio or 1,
                                maximum_samples_per_output=ratio or 2**32 - 1)]


def _max_roi_pool(ctx, n):
    """MaxRoiPool (opset 1) as the provider's DmlOperatorRoiPooling: one ROI_POOLING with
    pooled_shape and spatial_scale; the rois [num_rois, 5] as DirectML's {1, 1, NumROIs, 5}
    (a view)."""
    x, rois = as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1])
    pooled = _ints(n.attr("pooled_shape"))
    rois = reshape(ctx, rois, [1, 1, *shape(rois)]) if rank(rois) == 2 else rois
    return [ctx.fn("roi_pooling")(x, rois, pooled, float(n.attr("spatial_scale", 1.0)))]


def _max_unpool(ctx, n):
    """MaxUnpool (opsets 9, 11) as the provider's DmlOperatorMaxUnpool: one MAX_UNPOOLING of
    X and I (INT64 read as UINT64) into the shape the attributes infer, (in - 1) * stride +
    kernel - pads per spatial axis, whose flat positions the indices are (ONNX's definition);
    an output_shape (a constant input) larger than that pads it with zeros at the end of
    each axis (DML_PADDING, as ONNX's reference and onnxruntime's CPU kernel place it). A
    tensor of other than 2 spatial axes runs as 4-D (its leading spatial axes merged: the
    flat row-major indices are the same)."""
    x, indices = as_expr(ctx, n.inputs[0]), as_unsigned(ctx, as_expr(ctx, n.inputs[1]))
    spatial = shape(x)[2:]
    kernel = _ints(n.attr("kernel_shape"))
    strides = n.attr("strides", [1] * len(kernel))
    pads = n.attr("pads", [0] * 2 * len(kernel))
    inferred = [*shape(x)[:2], *((s - 1) * st + k - a - b for s, st, k, a, b in
                                 zip(spatial, strides, kernel, pads[:len(kernel)], pads[len(kernel):]))]
    out = _ints(n.constant(2, "output_shape")) if n.input(2) is not None else inferred
    if len(out) != rank(x) or any(o < i for o, i in zip(out, inferred)):
        raise NotMapped(f"output_shape {out}: it must have X's {rank(x)} dimensions and hold the inferred shape "
                        f"{inferred}")

    def as_4d(sizes):
        return [*sizes[:2], math.prod(sizes[2:-1]), sizes[-1]] if len(sizes) >= 3 else [*sizes, 1, 1][:4]

    if rank(x) != 4:
        x, indices = reshape(ctx, x, as_4d(shape(x))), reshape(ctx, indices, as_4d(shape(indices)))
    y = reshape(ctx, ctx.fn("max_unpooling")(x, indices, as_4d(inferred)), inferred)
    if out != inferred:
        y = ctx.fn("pad")(y, [0] * len(out), [o - i for o, i in zip(out, inferred)])
    return [y]


TABLE: tuple[Mapping, ...] = tuple(Mapping(*row) for row in sequences.ROWS) + tuple([
    # element-wise and activations (gpudml/ops/elementwise/)
    Mapping("Add", "ELEMENT_WISE_ADD1 (floats), ELEMENT_WISE_ADD (integers)", _binary("add", ints="add0"),
            ("add", "add0")),
    Mapping("Sub", "ELEMENT_WISE_SUBTRACT", _binary("subtract"), ("subtract",)),
    Mapping("Mul", "ELEMENT_WISE_MULTIPLY", _binary("multiply"), ("multiply",)),
    Mapping("Div", "ELEMENT_WISE_DIVIDE", _binary("divide"), ("divide",)),
    Mapping("Pow", "ELEMENT_WISE_POW", _pow, ("pow",)),
    Mapping("Max", "ELEMENT_WISE_MAX (folded over the inputs)", _variadic("max"), ("max",)),
    Mapping("Min", "ELEMENT_WISE_MIN (folded over the inputs)", _variadic("min"), ("min",)),
    Mapping("Sum", "ELEMENT_WISE_ADD1 (folded over the inputs)", _variadic("add", ints="add0"), ("add",)),
    Mapping("Mean", "ELEMENT_WISE_MEAN; ADD folded, then IDENTITY's ScaleBias 1/N", _mean, ("mean", "add")),
    _u("Abs", "abs", "ELEMENT_WISE_ABS"), _u("Neg", "negate", "ELEMENT_WISE_NEGATE"),
    _u("Sqrt", "sqrt", "ELEMENT_WISE_SQRT"), _u("Exp", "exp", "ELEMENT_WISE_EXP"),
    _u("Log", "log", "ELEMENT_WISE_LOG"), _u("Sin", "sin", "ELEMENT_WISE_SIN"), _u("Cos", "cos", "ELEMENT_WISE_COS"),
    _u("Tan", "tan", "ELEMENT_WISE_TAN"), _u("Tanh", "tanh", "ELEMENT_WISE_TANH"),
    _u("Asin", "asin", "ELEMENT_WISE_ASIN"), _u("Acos", "acos", "ELEMENT_WISE_ACOS"),
    _u("Atan", "atan", "ELEMENT_WISE_ATAN"), _u("Sinh", "sinh", "ELEMENT_WISE_SINH"),
    _u("Cosh", "cosh", "ELEMENT_WISE_COSH"), _u("Asinh", "asinh", "ELEMENT_WISE_ASINH"),
    _u("Acosh", "acosh", "ELEMENT_WISE_ACOSH"), _u("Atanh", "atanh", "ELEMENT_WISE_ATANH"),
    _u("Reciprocal", "recip", "ELEMENT_WISE_RECIP"), _u("Ceil", "ceil", "ELEMENT_WISE_CEIL"),
    _u("Floor", "floor", "ELEMENT_WISE_FLOOR"), _u("Round", "round", "ELEMENT_WISE_ROUND"),
    _u("Erf", "erf", "ELEMENT_WISE_ERF"), _u("Sign", "sign", "ELEMENT_WISE_SIGN"),
    _u("IsNaN", "is_nan", "ELEMENT_WISE_IS_NAN"),
    Mapping("IsInf", "ELEMENT_WISE_IS_INFINITY", _is_inf, ("is_infinity",)),
    _u("Relu", "relu", "ACTIVATION_RELU"), _u("Sigmoid", "sigmoid", "ACTIVATION_SIGMOID"),
    _u("Softplus", "softplus", "ACTIVATION_SOFTPLUS"), _u("Softsign", "softsign", "ACTIVATION_SOFTSIGN"),
    _u("HardSwish", "hard_swish", "ACTIVATION_HARD_SWISH"),
    Mapping("LeakyRelu", "ACTIVATION_LEAKY_RELU", _with_attrs("leaky_relu", alpha=("alpha", 0.01)), ("leaky_relu",)),
    Mapping("Elu", "ACTIVATION_ELU", _with_attrs("elu", alpha=("alpha", 1.0)), ("elu",)),
    Mapping("Celu", "ACTIVATION_CELU", _with_attrs("celu", alpha=("alpha", 1.0)), ("celu",)),
    Mapping("Selu", "ACTIVATION_SCALED_ELU",
            _with_attrs("scaled_elu", alpha=("alpha", 1.67326319217681884765625),
                        gamma=("gamma", 1.05070102214813232421875)), ("scaled_elu",)),
    Mapping("HardSigmoid", "ACTIVATION_HARD_SIGMOID",
            _with_attrs("hard_sigmoid", alpha=("alpha", 0.2), beta=("beta", 0.5)), ("hard_sigmoid",)),
    Mapping("ThresholdedRelu", "ACTIVATION_THRESHOLDED_RELU",
            _with_attrs("thresholded_relu", alpha=("alpha", 1.0)), ("thresholded_relu",)),
    Mapping("Shrink", "ACTIVATION_SHRINK", _with_attrs("shrink", bias=("bias", 0.0), lambd=("threshold", 0.5)),
            ("shrink",)),
    Mapping("Swish", "ACTIVATION_SWISH", _with_attrs("swish", alpha=("sigmoid_input_scale", 1.0)), ("swish",)),
    Mapping("PRelu", "ACTIVATION_PARAMETERIZED_RELU", _binary("parameterized_relu"), ("parameterized_relu",)),
    Mapping("Gelu", "ACTIVATION_GELU (erf); the tanh form as MULTIPLY, ADD and TANH", _gelu,
            ("gelu", "multiply", "add", "tanh")),
    Mapping("Clip", "ELEMENT_WISE_CLIP1", _clip, ("clip",)),
    Mapping("Equal", "ELEMENT_WISE_LOGICAL_EQUALS", _binary("logical_equals"), ("logical_equals",)),
    Mapping("Greater", "ELEMENT_WISE_LOGICAL_GREATER_THAN", _binary("logical_greater_than"),
            ("logical_greater_than",)),
    Mapping("Less", "ELEMENT_WISE_LOGICAL_LESS_THAN", _binary("logical_less_than"), ("logical_less_than",)),
    Mapping("GreaterOrEqual", "ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL",
            _binary("logical_greater_than_or_equal"), ("logical_greater_than_or_equal",)),
    Mapping("LessOrEqual", "ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL", _binary("logical_less_than_or_equal"),
            ("logical_less_than_or_equal",)),
    Mapping("And", "ELEMENT_WISE_LOGICAL_AND", _binary("logical_and"), ("logical_and",)),
    Mapping("Or", "ELEMENT_WISE_LOGICAL_OR", _binary("logical_or"), ("logical_or",)),
    Mapping("Xor", "ELEMENT_WISE_LOGICAL_XOR", _binary("logical_xor"), ("logical_xor",)),
    Mapping("Not", "ELEMENT_WISE_LOGICAL_NOT", _unary("logical_not"), ("logical_not",)),
    Mapping("BitwiseAnd", "ELEMENT_WISE_BIT_AND", _binary("bit_and"), ("bit_and",)),
    Mapping("BitwiseOr", "ELEMENT_WISE_BIT_OR", _binary("bit_or"), ("bit_or",)),
    Mapping("BitwiseXor", "ELEMENT_WISE_BIT_XOR", _binary("bit_xor"), ("bit_xor",)),
    Mapping("BitwiseNot", "ELEMENT_WISE_BIT_NOT", _unary("bit_not"), ("bit_not",)),
    Mapping("BitShift", "ELEMENT_WISE_BIT_SHIFT_LEFT / _RIGHT", _bitshift, ("bit_shift_left", "bit_shift_right")),
    Mapping("Mod", "ELEMENT_WISE_MODULUS_FLOOR (fmod=0) / _TRUNCATE (fmod=1)", _mod,
            ("modulus_floor", "modulus_truncate")),
    Mapping("Where", "ELEMENT_WISE_IF", _where, ("if_",)),
    Mapping("Cast", "CAST (to BOOL: LOGICAL_EQUALS 0, LOGICAL_NOT)", _cast, ("cast",)),
    Mapping("CastLike", "CAST", _cast_like, ("cast",)),
    Mapping("Identity", "none: the same buffer", _identity, ()),
    Mapping("Dropout", "none: the same buffer (inference)", _dropout, ()),
    Mapping("QuantizeLinear", "ELEMENT_WISE_QUANTIZE_LINEAR; blocked (block_size) and INT4/UINT4 outputs: QUANTIZE "
            "(a 4-bit zero point computed at run time: DEQUANTIZE, CAST)", _quantize,
            ("quantize_linear", "quantize", "dequantize", "cast")),
    Mapping("DynamicQuantizeLinear", "DYNAMIC_QUANTIZE_LINEAR", _dynamic_quantize_linear, ("dynamic_quantize_linear",)),
    Mapping("DequantizeLinear", "ELEMENT_WISE_DEQUANTIZE_LINEAR; from opset 21 (8- and 4-bit inputs, blocked) "
            "DEQUANTIZE (opset 25's output_dtype: CAST)", functools.partial(dequantize_linear, linear=_quantize),
            ("dequantize_linear", "dequantize", "cast")),
    # GEMM
    Mapping("MatMul", "GEMM (batched over the leading axes, broadcast by strides)", _matmul, ("gemm",)),
    Mapping("MatMulInteger", "MATRIX_MULTIPLY_INTEGER (batched as MatMul)", _matmul_integer,
            ("matrix_multiply_integer",)),
    Mapping("QLinearMatMul", "QUANTIZED_LINEAR_MATRIX_MULTIPLY (batched as MatMul)", _qlinear_matmul,
            ("quantized_linear_matrix_multiply",)),
    Mapping("Gemm", "GEMM", _gemm, ("gemm",)),
    # softmax family
    Mapping("Softmax", "ACTIVATION_SOFTMAX1 (axes from `axis` on before opset 13)", _softmax("softmax"),
            ("softmax",)),
    Mapping("LogSoftmax", "ACTIVATION_LOG_SOFTMAX1", _softmax("log_softmax"), ("log_softmax",)),
    Mapping("Hardmax", "ACTIVATION_HARDMAX1", _softmax("hardmax"), ("hardmax",)),
    # reductions
    *[Mapping(t, f"REDUCE ({f.upper()})", _reduce, ("reduce",)) for t, f in REDUCE.items()],
    Mapping("ArgMax", "ARGMAX", _arg, ("argmax",)), Mapping("ArgMin", "ARGMIN", _arg, ("argmin",)),
    # indexing and sorting (issue #44)
    Mapping("TopK", "TOP_K1 (largest: the axis direction; sorted=0 answered sorted; Indices: UINT64, then CAST to "
            "INT64)", _top_k, ("top_k", "cast")),
    # data movement
    Mapping("Pad", "PADDING1 (negative pads: SLICE1 first)", _pad, ("pad", "slice")),
    Mapping("Slice", "SLICE1 (from the start of every axis, of a value no fusion computes in its readers: a "
            "view, no dispatch)", _slice, ("slice",)),
    Mapping("Concat", "JOIN", _concat, ("join",)),
    Mapping("Split", "SPLIT", _split, ("split",)),
    Mapping("Gather", "GATHER", _gather, ("gather",)),
    Mapping("Tile", "TILE", _tile, ("tile",)),
    # indexing (issue 44)
    Mapping("GatherElements", "GATHER_ELEMENTS", _gather_elements, ("gather_elements",)),
    Mapping("GatherND", "GATHER_ND1 (batch_dims: BatchDimensionCount)", _gather_nd, ("gather_nd",)),
    Mapping("CumSum", "CUMULATIVE_SUMMATION", _cumsum, ("cumulative_sum",)),
    Mapping("ReverseSequence", "REVERSE_SUBSEQUENCES (INT64 lengths: CAST to UINT32 first)", _reverse_sequence,
            ("reverse_subsequences", "cast")),
    # space-depth (issue 43)
    Mapping("DepthToSpace", "DEPTH_TO_SPACE1 (mode DCR: DEPTH_COLUMN_ROW, CRD: COLUMN_ROW_DEPTH)", _depth_to_space,
            ("depth_to_space",)),
    Mapping("SpaceToDepth", "SPACE_TO_DEPTH1 (DEPTH_COLUMN_ROW)", _space_to_depth, ("space_to_depth",)),
    # generators (issue #44): graph nodes of no operand where their inputs derive from graph inputs
    Mapping("ConstantOfShape", "FILL_VALUE_CONSTANT (64-bit types: DIAGONAL_MATRIX1 over every diagonal)",
            _constant_of_shape, ("fill_value_constant", "diagonal_matrix")),
    Mapping("Range", "FILL_VALUE_SEQUENCE", _range, ("fill_value_sequence",)),
    Mapping("EyeLike", "DIAGONAL_MATRIX (64-bit types: DIAGONAL_MATRIX1)", _eye_like,
            ("diagonal_matrix0", "diagonal_matrix")),
    Mapping("Trilu", "DIAGONAL_MATRIX1 (Value 0 outside the kept triangle)", _trilu, ("diagonal_matrix",)),
    Mapping("Einsum", "one input: ELEMENT_WISE_IDENTITY or REDUCE (SUM) of the reprojected input; two: "
            "ELEMENT_WISE_MULTIPLY, GEMM (a batched matrix product) or ELEMENT_WISE_MULTIPLY then REDUCE (SUM)",
            _einsum, ("identity", "reduce", "multiply", "gemm")),
    # scatters, one-hot (issue 44)
    Mapping("Scatter", "SCATTER_ELEMENTS (== SCATTER)", _scatter_elements, ("scatter_elements",)),
    Mapping("ScatterElements", "SCATTER_ELEMENTS (reduction: gpudml's extension)", _scatter_elements,
            ("scatter_elements",)),
    Mapping("ScatterND", "SCATTER_ND (reduction: gpudml's extension)", _scatter_nd, ("scatter_nd",)),
    Mapping("OneHot", "ONE_HOT (float indices: CAST to INT64 first)", _one_hot, ("one_hot", "cast")),
    # shapes: views (tensor descs), no operator
    Mapping("Reshape", "none: the same buffer, other sizes", _reshape, ()),
    Mapping("Flatten", "none: the same buffer, other sizes", _flatten, ()),
    Mapping("Squeeze", "none: the same buffer, other sizes", _squeeze, ()),
    Mapping("Unsqueeze", "none: the same buffer, other sizes", _unsqueeze, ()),
    Mapping("Transpose", "strides of the reading operator (ELEMENT_WISE_IDENTITY where written)", _transpose, ()),
    Mapping("Expand", "stride 0 of the reading operator (ELEMENT_WISE_IDENTITY where written)", _expand, ()),
    # convolution, pooling, normalization (API.md section 12)
    Mapping("Conv", "CONVOLUTION (forward; 1-D as 2-D)", _conv, ("convolution",)),
    Mapping("ConvTranspose", "CONVOLUTION (backward; output_shape as paddings)", _conv, ("convolution",)),
    Mapping("MaxPool", "MAX_POOLING2 (Indices: UINT64, then CAST to INT64)", _pool, ("max_pooling", "cast")),
    Mapping("AveragePool", "AVERAGE_POOLING1", _pool, ("average_pooling",)),
    Mapping("ConvInteger", "CONVOLUTION_INTEGER (1-D as 2-D)", _conv_integer, ("convolution_integer",)),
    Mapping("QLinearConv", "QUANTIZED_LINEAR_CONVOLUTION (1-D as 2-D; w_scale, w_zero_point per tensor or per "
            "output channel)", _qlinear_conv, ("quantized_linear_convolution",)),
    Mapping("LpPool", "LP_POOLING1", _pool, ("lp_pooling",)),
    Mapping("GlobalMaxPool", "MAX_POOLING2 (the whole spatial window)", _pool, ("max_pooling",)),
    Mapping("GlobalAveragePool", "AVERAGE_POOLING1 (the whole spatial window)", _pool, ("average_pooling",)),
    Mapping("GlobalLpPool", "LP_POOLING1 (the whole spatial window)", _pool, ("lp_pooling",)),
    Mapping("BatchNormalization", "BATCH_NORMALIZATION (inference)", _batch_norm, ("batch_normalization",)),
    Mapping("LayerNormalization", "MEAN_VARIANCE_NORMALIZATION1 (axes from `axis` on); Mean and InvStdDev: "
            "REDUCE (AVERAGE), SUBTRACT, MULTIPLY, ADD, SQRT, RECIP", _layer_norm,
            ("mean_variance_normalization", "reduce", "subtract", "multiply", "add", "sqrt", "recip")),
    Mapping("InstanceNormalization", "MEAN_VARIANCE_NORMALIZATION1 (the spatial axes)", _instance_norm,
            ("mean_variance_normalization",)),
    Mapping("MeanVarianceNormalization", "MEAN_VARIANCE_NORMALIZATION1 (`axes`)", _mvn,
            ("mean_variance_normalization",)),
    Mapping("LpNormalization", "LP_NORMALIZATION", _lp_norm, ("lp_normalization",)),
    Mapping("LRN", "LOCAL_RESPONSE_NORMALIZATION", _lrn, ("local_response_normalization",)),
    # resampling and space-depth (issue #43): Col2Im
    Mapping("Col2Im", "FOLD", _col2im, ("fold",)),
    # indexing (issue #44): data-dependent output sizes (the session splits its graph there)
    Mapping("NonZero", "NONZERO_COORDINATES, its count read back, then the rows it counts (a view) as CAST to "
            "INT64", _nonzero, ("nonzero_coordinates", "cast")),
    Mapping("NonMaxSuppression", "none: gpudml's extension NON_MAX_SUPPRESSION (the provider runs it on the CPU), "
            "its count read back, then the rows it counts (a view)", _nms, ("non_max_suppression",)),
    # resampling: RESAMPLE3 (cubic: gpudml's extension); tf_crop_and_resize's extrapolation: ELEMENT_WISE_IF
    Mapping("Resize", "RESAMPLE3 (scales and pixel offsets per coordinate_transformation_mode; cubic, "
            "exclude_outside and antialias's filter scales: gpudml's extensions; extrapolation_value: "
            "ELEMENT_WISE_IF of a constant mask)", _resize, ("resample", "if_")),
    Mapping("Upsample", "RESAMPLE3 (asymmetric; nearest rounds down where an axis grows, up where it shrinks)",
            _resize, ("resample",)),
    # random numbers (issue #44): DML_RANDOM_GENERATOR and element-wise operators
    Mapping("RandomUniform", "RANDOM_GENERATOR (PHILOX_4X32_10), BIT_AND, CAST, IDENTITY (ScaleBias)", _random_uniform,
            ("random_generator", "bit_and", "cast", "identity")),
    Mapping("RandomUniformLike", "RANDOM_GENERATOR (PHILOX_4X32_10), BIT_AND, CAST, IDENTITY (ScaleBias)",
            _random_uniform, ("random_generator", "bit_and", "cast", "identity")),
    Mapping("RandomNormal", "RANDOM_GENERATOR, then Box-Muller as the provider's RandomNormalLike: BIT_AND, CAST, "
            "SPLIT, CLIP, LOG, SQRT, SIN, COS, MULTIPLY, JOIN, IDENTITY (ScaleBias)", _random_normal,
            ("random_generator", "bit_and", "cast", "split", "clip", "log", "sqrt", "sin", "cos", "multiply", "join",
             "identity")),
    Mapping("RandomNormalLike", "RANDOM_GENERATOR, then Box-Muller (DmlOperatorRandomNormalLike.cpp's graph)",
            _random_normal, ("random_generator", "bit_and", "cast", "split", "clip", "log", "sqrt", "sin", "cos",
                             "multiply", "join", "identity")),
    Mapping("Bernoulli", "RANDOM_GENERATOR, BIT_AND, CAST, IDENTITY, LOGICAL_LESS_THAN (u < p), CAST", _bernoulli,
            ("random_generator", "bit_and", "cast", "identity", "logical_less_than")),
    Mapping("Multinomial", "RANDOM_GENERATOR, BIT_AND, CAST, IDENTITY; ACTIVATION_SOFTMAX1, CUMULATIVE_SUMMATION, "
            "SLICE1, MULTIPLY, LOGICAL_LESS_THAN (every class against every sample), REDUCE (SUM), MIN, CAST",
            _multinomial, ("random_generator", "bit_and", "cast", "identity", "softmax", "cumulative_sum", "slice",
                           "multiply", "logical_less_than", "reduce", "min")),
    # regions (issue #44)
    Mapping("RoiAlign", "ROI_ALIGN1 (pixel offsets per coordinate_transformation_mode; batch_indices as UINT64; "
                        "output_half_pixel's regions at least a pixel: SLICE, ELEMENT_WISE_IDENTITY, ELEMENT_WISE_MAX, "
                        "JOIN)", _roi_align, ("roi_align", "cast", "slice", "identity", "max", "join")),
    Mapping("MaxRoiPool", "ROI_POOLING (rois as {1, 1, NumROIs, 5})", _max_roi_pool, ("roi_pooling",)),
    Mapping("MaxUnpool", "MAX_UNPOOLING (I as UINT64; other than 2 spatial axes as 4-D); a larger output_shape: "
            "PADDING", _max_unpool, ("max_unpooling", "cast", "pad")),
    # recurrent networks (issue 45): ONNX's tensors at DirectML's 4-D sizes (views); layout 1 as strides
    Mapping("RNN", "RNN (sequence_lens: CAST to UINT32 where computed; layout 1: transposed views)", _recurrent,
            ("rnn", "cast")),
    Mapping("GRU", "GRU (LinearBeforeReset; sequence_lens: CAST to UINT32 where computed; layout 1: transposed "
            "views)", _recurrent, ("gru", "cast")),
    Mapping("LSTM", "LSTM (clip: UseClipThreshold; input_forget: CoupleInputForget; sequence_lens: CAST to UINT32 "
            "where computed; layout 1: transposed views)", _recurrent, ("lstm", "cast")),
])

#: The inputs (index: what) that DirectML needs when the graph is built, per op type: a
#: session computes such an input on the host (from its value inputs where the model
#: computes it from graph inputs: analysis.analyze), or refuses the model at construction
#: (the execution provider's registrations say the same: requiredConstantCpuInputs in
#: DmlExecutionProvider/src/Operators/OperatorRegistration.cpp).
CONSTANT_INPUTS: dict[str, dict[int, str]] = {
    "Clip": {1: "min", 2: "max"}, "Dropout": {1: "ratio", 2: "training_mode"},
    **{t: {1: "axes"} for t in REDUCE}, "Pad": {1: "pads", 2: "constant_value", 3: "axes"},
    "Slice": {1: "starts", 2: "ends", 3: "axes", 4: "steps"}, "Split": {1: "split"}, "Tile": {1: "repeats"},
    "CumSum": {1: "axis"}, "Reshape": {1: "shape"}, "Squeeze": {1: "axes"}, "Unsqueeze": {1: "axes"},
    "Expand": {1: "shape"}, "ConstantOfShape": {0: "shape"}, "Range": {0: "start", 1: "limit", 2: "delta"},
    "Trilu": {1: "k"}, "TopK": {1: "k"},
    "Col2Im": {1: "image_shape", 2: "block_shape"}, "MaxUnpool": {2: "output_shape"},
    "Resize": {1: "roi (scales before opset 11)", 2: "scales", 3: "sizes"}, "Upsample": {1: "scales"},
    "NonMaxSuppression": {2: "max_output_boxes_per_class", 3: "iou_threshold", 4: "score_threshold"},
    "OneHot": {1: "depth"}, **sequences.CONSTANT_INPUTS,
    "GroupQueryAttention": {6: "total_sequence_length"},
}

#: The inputs read for their type alone, per op type (their contents never: an empty one is
#: no empty tensor reaching an operator).
TYPE_INPUTS: dict[str, set[int]] = {"CastLike": {1}}

#: The inputs a contrib row reads empty, per op type (a decoder's first past: no past).
EMPTY_INPUTS: dict[str, set[int]] = {"GroupQueryAttention": {3, 4}}

#: Folded at load, never run: their values are known when the graph is built.
FOLDED = {
    "Constant": "its value", "Shape": "the input's sizes", "Size": "the input's element count",
}

TABLE += tuple(Mapping(*r) for r in ONNX_ROWS + ONNX_ATTENTION_ROWS)

#: The contrib rows (domain com.microsoft: gpudml/onnx/contrib.py).
QUANTIZED_POOL_ROWS: tuple[tuple, ...] = (
    ("QLinearAveragePool", "QUANTIZED_LINEAR_AVERAGE_POOLING (count_include_pad: IncludePadding; channels_last: "
     "strides)", _qlinear_average_pool, ("quantized_linear_average_pooling",)),
    ("QLinearGlobalAveragePool", "QUANTIZED_LINEAR_AVERAGE_POOLING (the whole spatial window; channels_last: "
     "strides)", _qlinear_average_pool, ("quantized_linear_average_pooling",)),
)
_MS_DEQUANTIZE = ("DequantizeLinear", "ELEMENT_WISE_DEQUANTIZE_LINEAR (per tensor or per axis); 4-bit inputs: "
                  "DEQUANTIZE", functools.partial(dequantize_linear, linear=_quantize, contrib=True),
                  ("dequantize_linear", "dequantize"))
CONTRIB_TABLE: tuple[Mapping, ...] = tuple(Mapping(*r, domain=MS) for r in CONTRIB_ROWS + ATTENTION_ROWS + NBITS_ROWS
                                           + QUANTIZED_ROWS + QUANTIZED_POOL_ROWS
                                           + (_MS_DEQUANTIZE,)) + (
    # (onnxruntime's QuantizeLinear of its contrib domain: ONNX's of opset 13, per tensor or per axis)
    Mapping("QuantizeLinear", "ELEMENT_WISE_QUANTIZE_LINEAR", _quantize, ("quantize_linear",), domain=MS),
)
CONTRIB_TABLE += (Mapping("MatMulIntegerToFloat", "MATRIX_MULTIPLY_INTEGER_TO_FLOAT; A and B of different types: "
                          "MATRIX_MULTIPLY_INTEGER, CAST, ELEMENT_WISE_MULTIPLY, ELEMENT_WISE_ADD",
                          _matmul_integer_to_float, ("matrix_multiply_integer_to_float", "matrix_multiply_integer",
                                                     "cast", "multiply", "add"), domain=MS),
                  Mapping("DynamicQuantizeLSTM", "LSTM (W and R dequantized on the host)", _dynamic_quantize_lstm,
                          ("lstm",), domain=MS),
                  Mapping("QGemm", "MATRIX_MULTIPLY_INTEGER, ELEMENT_WISE_ADD (C), CAST, ELEMENT_WISE_MULTIPLY (alpha "
                          "a_scale b_scale / y_scale), ELEMENT_WISE_QUANTIZE_LINEAR (y quantized)", _qgemm,
                          ("matrix_multiply_integer", "add0", "cast", "multiply", "quantize_linear"), domain=MS),
                  Mapping("DynamicQuantizeMatMul", "DYNAMIC_QUANTIZE_LINEAR (A into B's type), "
                          "MATRIX_MULTIPLY_INTEGER_TO_FLOAT", _dynamic_quantize_matmul,
                          ("dynamic_quantize_linear", "matrix_multiply_integer_to_float"), domain=MS))
BY_TYPE: dict[str, Mapping] = {m.op_type: m for m in TABLE}

#: onnxruntime's contrib ops (domain com.microsoft) that its DirectML execution provider runs, op type -> row.
CONTRIB: dict[str, Mapping] = {m.op_type: m for m in CONTRIB_TABLE}


def row(op_type: str, domain: str) -> Mapping | None:
    """The mapping row of `op_type` in `domain` ("" and "ai.onnx": ONNX's; MS: onnxruntime's
    contrib ops), None where gpudml has none."""
    if domain in ("", "ai.onnx"):
        return BY_TYPE.get(op_type)
    return CONTRIB.get(op_type) if domain == MS else None


def markdown_table() -> str:
    """The table as docs/onnx.md shows it (tests/test_onnx_session.py checks the page has it)."""
    lines = ["| ONNX op | domain | opsets | DirectML operator(s) | gpudml forms |", "|---|---|---|---|---|"]
    for m in sorted(TABLE, key=lambda m: m.op_type):
        forms = ", ".join(f"`{n}`" for n in m.needs) or "none"
        lines.append(f"| {m.op_type} | ai.onnx | {m.opsets} | {m.directml} | {forms} |")
    for op, what in FOLDED.items():
        opsets = f"{max(7, FIRST_VERSION[op])}-{NEWEST}"
        lines.append(f"| {op} | ai.onnx | {opsets} | none: folded at load ({what}) | none |")
    for m in sorted(CONTRIB_TABLE, key=lambda m: m.op_type):
        forms = ", ".join(f"`{n}`" for n in m.needs) or "none"
        lines.append(f"| {m.op_type} | {MS} | {m.opsets} | {m.directml} | {forms} |")
    return "\n".join(lines)


def refusal(op_type: str, domain: str, opset: int) -> str | None:
    """Why a node of `op_type` in `domain` at `opset` has no row to run it (None: it has one)."""
    if domain not in ("", "ai.onnx", MS):
        return f"domain {domain!r}: gpudml maps the ONNX domain (ai.onnx) and onnxruntime's {MS} only"
    if row(op_type, domain) is None:
        return "no DirectML mapping in gpudml (see docs/onnx.md for the mapped ops)"
    if domain == MS:
        return None  # (the provider registers version 1 of each contrib op, the domain's only one)
    if opset < BY_TYPE[op_type].since:
        return f"opset {opset} is older than the mapping's first, {BY_TYPE[op_type].since}"
    return None


__all__ = ["BY_TYPE", "CONSTANT_INPUTS", "CONTRIB", "CONTRIB_TABLE", "EMPTY_INPUTS", "FOLDED", "GENERATORS", "MS",
           "NEWEST",
           "ORT_ONNX_DOMAIN", "RANDOM", "REDUCE", "TABLE", "TYPE_INPUTS",
           "Context", "DataDependent", "Mapping", "Node", "NotMapped", "as_unsigned", "data_dependent", "generate",
           "markdown_table", "refusal", "row", "view_strides",
           # (gpudml/onnx/values.py's, read here by the session and control flow)
           "as_expr", "broadcast", "materialize", "rank", "reshape", "shape", "transpose"]
