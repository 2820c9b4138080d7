"""ONNX's own node tests through gpudml's functional forms: outside vectors.

The onnx wheel (a test dependency, 1.22.0) ships a model, inputs and expected outputs for
every ONNX operator under onnx/backend/test/data/node/test_*. Each test here loads one of
them, maps its single node to the gpudml functional form(s) DirectML's execution provider
would use (MAPPINGS: ONNX attributes and constant inputs become functional arguments,
keepdims=0 and Gather's index ranks become reshapes), runs it on the test adapter and
compares with ONNX's expected outputs: bit-exact for integers, within ONNX's own backend
tolerance for floats (rtol 1e-3, atol 1e-7: onnx/backend/test/runner) unless the operator
documents a wider one.

Every node test of a mapped ONNX operator either passes or is listed in NOT_DIRECTML with
the reason it is outside DirectML's semantics (a type DirectML lacks, an empty tensor, an
ONNX-only feature); a listed test must raise or be unmappable, so the list cannot go
stale: when gpudml gains what a test needs, the test fails until it is taken off the list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import gpudml as dml
from gpudml.errors import InvalidArgumentError

NODE_TESTS = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"


#: numpy's dtypes of DirectML's data types (ONNX's bfloat16, float8 and int4 tests are not DirectML's).
_DIRECTML_DTYPES = {np.dtype(t.numpy) for t in dml.DataType}


class NotDirectML(Exception):
    """The node uses something DirectML's operator does not have (the message says what)."""


@dataclass
class Node:
    name: str           # the test folder's name
    op_type: str
    opset: int
    attrs: dict
    inputs: list        # numpy arrays, None for an omitted optional input
    outputs: list       # the expected numpy arrays

    def attr(self, key, default=None):
        return self.attrs.get(key, default)

    def input(self, k):
        return self.inputs[k] if k < len(self.inputs) else None


def load(name: str) -> Node:
    folder = NODE_TESTS / name
    model = onnx.load(str(folder / "model.onnx"))
    (node,) = model.graph.node
    for value in list(model.graph.input) + list(model.graph.output):
        kind = value.type.WhichOneof("value")
        if kind != "tensor_type":
            raise NotDirectML(f"a {kind.removesuffix('_type')} value ({value.name}): DirectML has tensors only")
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=1)
    data = folder / "test_data_set_0"
    given = [_read(p) for p in sorted(data.glob("input_*.pb"), key=_index)]
    # Node inputs left empty ('') are omitted optional inputs; the graph's inputs are the others, in order.
    inputs, it = [], iter(given)
    for name_in in node.input:
        inputs.append(next(it) if name_in else None)
    outputs = [_read(p) for p in sorted(data.glob("output_*.pb"), key=_index)]
    for a in given + outputs:
        if a.dtype.kind in "USO":
            raise NotDirectML(f"{a.dtype} tensors: DirectML has numeric types only")
        if a.dtype != np.bool_ and a.dtype not in _DIRECTML_DTYPES:
            raise NotDirectML(f"{a.dtype} tensors: not a DirectML data type")
    attrs = {a.name: _attr(onnx.helper.get_attribute_value(a)) for a in node.attribute}
    return Node(name, node.op_type, opset, attrs, inputs, outputs)


def _index(path: Path) -> int:
    return int(path.stem.split("_")[1])


def _read(path: Path) -> np.ndarray:
    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def _attr(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [v.decode() if isinstance(v, bytes) else v for v in value]
    return value


def _no_bool(*arrays):
    for a in arrays:
        if a is not None and a.dtype == np.bool_:
            raise NotDirectML("BOOL tensors: DirectML has no boolean type (its logical operators use UINT8)")


def _not_empty(*arrays):
    for a in arrays:
        if a is not None and a.size == 0:
            raise NotDirectML(f"an empty tensor (sizes {list(a.shape)}): DirectML sizes are at least 1")


def _ints(a) -> list[int]:
    return [int(v) for v in np.asarray(a).reshape(-1)]


# ------------------------------------------------------------------------------ the mappings
_REDUCE = {"ReduceSum": "sum", "ReduceMean": "average", "ReduceMax": "max", "ReduceMin": "min",
           "ReduceProd": "multiply", "ReduceL1": "l1", "ReduceL2": "l2", "ReduceLogSum": "log_sum",
           "ReduceLogSumExp": "log_sum_exp", "ReduceSumSquare": "sum_square"}


def _reduce(n: Node, device):
    x = n.inputs[0]
    _no_bool(x)
    _not_empty(x)
    axes = n.input(1) if n.opset >= 18 or n.op_type == "ReduceSum" and n.opset >= 13 else None
    axes = _ints(axes) if axes is not None else n.attr("axes")
    if axes is not None and len(axes) == 0:
        axes = None
    if axes is None and n.attr("noop_with_empty_axes", 0):
        raise NotDirectML("noop_with_empty_axes: an identity, not a DirectML Reduce")
    y = dml.reduce(x, _REDUCE[n.op_type], axes, device=device)
    return [_keepdims(n, y, axes, x.ndim)]


def _keepdims(n: Node, y, axes, rank):
    if n.attr("keepdims", 1):
        return y
    kept = range(rank) if axes is None else {a % rank for a in axes}
    return y.reshape([s for i, s in enumerate(y.shape) if i not in kept])


def _arg(n: Node, device):
    x = n.inputs[0]
    _no_bool(x)
    axis = n.attr("axis", 0)
    direction = "decreasing" if n.attr("select_last_index", 0) else "increasing"
    fn = dml.argmax if n.op_type == "ArgMax" else dml.argmin
    y = fn(x, [axis], axis_direction=direction, output_data_type="INT64", device=device)
    return [_keepdims(n, y, [axis], x.ndim)]


_PAD_MODES = {"constant": "constant", "reflect": "reflection", "edge": "edge", "wrap": "wrap"}


def _pad(n: Node, device):
    x = n.inputs[0]
    _no_bool(x)
    if n.opset >= 11:
        pads, value, axes = n.input(1), n.input(2), n.input(3)
        pads = _ints(pads)
    else:
        pads, value, axes = n.attr("pads"), n.attr("value"), None
    axes = list(range(x.ndim)) if axes is None else [a % x.ndim for a in _ints(axes)]
    start, end = [0] * x.ndim, [0] * x.ndim
    for k, a in enumerate(axes):
        start[a], end[a] = pads[k], pads[k + len(axes)]
    if min(start + end) < 0:
        raise NotDirectML("negative pads (cropping): DML_PADDING's paddings are unsigned")
    value = 0.0 if value is None else float(np.asarray(value).reshape(-1)[0])
    return [dml.pad(x, start, end, mode=_PAD_MODES[n.attr("mode", "constant")], value=value, device=device)]


def _slice(n: Node, device):
    x = n.inputs[0]
    starts, ends = _ints(n.input(1)), _ints(n.input(2))
    axes = list(range(len(starts))) if n.input(3) is None else _ints(n.input(3))
    steps = [1] * len(starts) if n.input(4) is None else _ints(n.input(4))
    offsets, sizes, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    for a, start, end, step in zip(axes, starts, ends, steps):
        a %= x.ndim
        picked = range(*slice(start, end, step).indices(x.shape[a]))
        if not picked:
            raise NotDirectML("an empty slice: DirectML sizes are at least 1")
        lo, hi = min(picked[0], picked[-1]), max(picked[0], picked[-1])
        offsets[a], sizes[a], strides[a] = lo, hi - lo + 1, step
    return [dml.slice(x, offsets, sizes, strides, device=device)]


def _concat(n: Node, device):
    _no_bool(*n.inputs)
    return [dml.join(list(n.inputs), n.attr("axis"), device=device)]


def _split(n: Node, device):
    x = n.inputs[0]
    axis = n.attr("axis", 0) % x.ndim
    sizes = n.input(1) if n.opset >= 13 else None
    sizes = _ints(sizes) if sizes is not None else n.attr("split")
    if sizes is None:
        count = n.attr("num_outputs", len(n.outputs))
        part = -(-x.shape[axis] // count)
        sizes = [min(part, x.shape[axis] - k * part) for k in range(count)]
    if 0 in sizes:
        raise NotDirectML("a zero-size part: DirectML sizes are at least 1")
    return list(dml.split(x, axis, sizes, device=device))


def _gather(n: Node, device):
    x, indices = n.inputs
    axis = n.attr("axis", 0) % x.ndim
    r, q = x.ndim, indices.ndim
    rank = max(r + q - 1, r)
    if rank > 8:
        raise NotDirectML(f"rank {rank}: DirectML tensors have at most 8 dimensions")
    xs = x.reshape((1,) * (rank - r) + x.shape)
    idx = indices.reshape((1,) * (rank - max(q, 1)) + (indices.shape or (1,)))
    y = dml.gather(xs, idx, axis + rank - r, index_dimensions=max(q, 1), device=device)
    return [y.reshape(n.outputs[0].shape)]


def _tile(n: Node, device):
    return [dml.tile(n.inputs[0], _ints(n.inputs[1]), device=device)]


def _cumsum(n: Node, device):
    x, axis = n.inputs
    direction = "decreasing" if n.attr("reverse", 0) else "increasing"
    return [dml.cumulative_sum(x, int(np.asarray(axis).reshape(-1)[0]), axis_direction=direction,
                               exclusive=bool(n.attr("exclusive", 0)), device=device)]


def _reverse_sequence(n: Node, device):
    x, lengths = n.inputs
    batch, time = n.attr("batch_axis", 1), n.attr("time_axis", 0)
    shape = [1] * x.ndim
    shape[batch] = x.shape[batch]
    return [dml.reverse_subsequences(x, lengths.reshape(shape), time, device=device)]


def _u8(x):
    """A BOOL tensor as DirectML's execution provider passes it: UINT8 0/1."""
    return x.astype(np.uint8) if x is not None and x.dtype == np.bool_ else x


def _unary(name: str):
    def run(n: Node, device):
        _no_bool(n.inputs[0])
        return [getattr(dml, name)(n.inputs[0], device=device)]
    return run


def _binary(name: str, ints: str | None = None):
    """`name` (or `ints` for integer inputs: ADD1 takes floats only, ADD every type)."""
    def run(n: Node, device):
        a, b = n.inputs
        _no_bool(a, b)
        fn = getattr(dml, ints if ints is not None and a.dtype.kind in "iu" else name)
        return [fn(a, b, device=device)]
    return run


def _logical(name: str):
    def run(n: Node, device):
        return [getattr(dml, name)(*map(_u8, n.inputs), device=device)]
    return run


def _variadic(name: str, ints: str | None = None):
    """ONNX's Max/Min/Sum of any number of inputs: DirectML's binary operator folded."""
    def run(n: Node, device):
        _no_bool(*n.inputs)
        fn = getattr(dml, ints if ints is not None and n.inputs[0].dtype.kind in "iu" else name)
        value = n.inputs[0]
        if len(n.inputs) == 1:
            return [dml.identity(value, device=device)]
        for other in n.inputs[1:]:
            value = fn(value, other, device=device)
        return [value]
    return run


def _mean(n: Node, device):
    """Mean of N inputs as DirectML's execution provider runs it: the sum, scaled by 1/N
    (DML_SCALE_BIAS of an IDENTITY); two inputs are ELEMENT_WISE_MEAN."""
    if len(n.inputs) == 2:
        return [dml.mean(*n.inputs, device=device)]
    total = _variadic("add")(n, device)[0]
    return [dml.identity(total, scale_bias=(1.0 / len(n.inputs), 0.0), device=device)]


def _clip(n: Node, device):
    """Clip through CLIP1 (`dml.clip`: min and max in the tensor's own type, None its ends)."""
    x = n.inputs[0]
    if n.opset >= 11:
        low, high = n.input(1), n.input(2)
    else:
        low, high = n.attr("min"), n.attr("max")
    kwargs = {}
    if low is not None:
        kwargs["min"] = np.asarray(low).item()
    if high is not None:
        kwargs["max"] = np.asarray(high).item()
    if low is not None and high is not None and kwargs["min"] > kwargs["max"]:
        raise NotDirectML("min > max: ONNX's Clip gives max there, DirectML's CLIP1 (max(Min, min(x, Max))) min")
    return [dml.clip(x, **kwargs, device=device)]


def _is_inf(n: Node, device):
    """IsInf: detect_negative and detect_positive as DML_IS_INFINITY_MODE."""
    negative, positive = n.attr("detect_negative", 1), n.attr("detect_positive", 1)
    if not (negative or positive):
        raise NotDirectML("IsInf detecting neither sign: no DML_IS_INFINITY_MODE (all false)")
    mode = (dml.IsInfinityMode.EITHER if negative and positive else
            dml.IsInfinityMode.NEGATIVE if negative else dml.IsInfinityMode.POSITIVE)
    return [dml.is_infinity(n.inputs[0], mode, device=device)]


def _pow(n: Node, device):
    """Pow: the exponent of its own type (POW's, from FL_3_0); a scalar one element, broadcast."""
    x, exponent = n.inputs
    _no_bool(x, exponent)
    return [dml.pow(x, exponent.reshape(exponent.shape or (1,)), device=device)]


def _prelu(n: Node, device):
    return [dml.parameterized_relu(*n.inputs, device=device)]


def _with_attrs(name: str, **names):
    """An activation whose attributes are the node's (ONNX name -> gpudml keyword, default)."""
    def run(n: Node, device):
        kwargs = {kw: n.attr(onnx_name, default) for onnx_name, (kw, default) in names.items()}
        return [getattr(dml, name)(n.inputs[0], **kwargs, device=device)]
    return run


def _gelu(n: Node, device):
    if n.attr("approximate", "none") != "none":
        raise NotDirectML("Gelu's tanh approximation: DML_ACTIVATION_GELU is the erf form")
    return [dml.gelu(n.inputs[0], device=device)]


def _softmax(name: str):
    """Softmax, LogSoftmax, Hardmax: from opset 13 along `axis` (default -1); before, over
    every axis from `axis` on (default 1: the input coerced to 2-D), DirectML's axes either way."""
    def run(n: Node, device):
        x = n.inputs[0]
        if n.opset >= 13:
            axes = [n.attr("axis", -1)]
        else:
            axis = n.attr("axis", 1) % x.ndim
            axes = list(range(axis, x.ndim))
        return [getattr(dml, name)(x, axes, device=device)]
    return run


def _bitshift(n: Node, device):
    a, b = n.inputs
    fn = dml.bit_shift_left if n.attr("direction") == "LEFT" else dml.bit_shift_right
    return [fn(a, b, device=device)]


def _mod(n: Node, device):
    """Mod: fmod=1 truncates (C's fmod), fmod=0 floors (Python's %): MODULUS_TRUNCATE and
    MODULUS_FLOOR."""
    fn = dml.modulus_truncate if n.attr("fmod", 0) else dml.modulus_floor
    return [fn(*n.inputs, device=device)]


def _where(n: Node, device):
    condition, a, b = n.inputs
    _no_bool(a, b)
    return [dml.if_(_u8(condition), a, b, device=device)]


def _cast(n: Node, device):
    x = n.inputs[0]
    _no_bool(x)
    to = onnx.helper.tensor_dtype_to_np_dtype(n.attr("to"))
    if to == np.bool_:
        raise NotDirectML("BOOL tensors: DirectML has no boolean type (its logical operators use UINT8)")
    if n.attr("saturate", 1) != 1 or to.kind not in "fiu":
        raise NotDirectML(f"a cast to {to}: not a DirectML type")
    return [dml.cast(x, to, device=device)]


def _quantize(n: Node, device):
    x, scale, zero = n.inputs[0], n.input(1), n.input(2)
    if n.attr("block_size", 0):
        raise NotDirectML("blocked quantization (block_size): DirectML quantizes per tensor or per axis")
    if scale.ndim == 1 and scale.size > 1:  # per axis (ONNX's axis, default 1): broadcast along it
        shape = [1] * x.ndim
        shape[n.attr("axis", 1) % x.ndim] = scale.size
        scale = scale.reshape(shape)
        zero = None if zero is None else zero.reshape(shape)
    scale = scale.reshape(scale.shape or (1,))  # a scalar: one element, broadcast
    zero = None if zero is None else zero.reshape(zero.shape or (1,))
    for a in (x, scale, zero):
        if a is not None and a.dtype.kind not in "fiu":
            raise NotDirectML(f"{a.dtype} tensors: not a DirectML type")
    if n.op_type == "QuantizeLinear":
        kwargs = {} if zero is not None else {"output_data_type": n.outputs[0].dtype}
        return [dml.quantize_linear(x, scale, zero, **kwargs, device=device)]
    return [dml.dequantize_linear(x, scale, zero, device=device)]


def _matmul(n: Node, device):
    """MatMul: a vector operand is a matrix of one row (A) or one column (B), the axis
    dropped from the result, as numpy's matmul (and DirectML's execution provider) do."""
    a, b = n.inputs
    y = dml.gemm(a.reshape(1, -1) if a.ndim == 1 else a, b.reshape(-1, 1) if b.ndim == 1 else b, device=device)
    return [np.asarray(y).reshape(n.outputs[0].shape)]


def _gemm(n: Node, device):
    a, b, c = n.inputs[0], n.inputs[1], n.input(2)
    c = None if c is None else c.reshape(c.shape or (1,))  # a scalar: one element, broadcast
    return [dml.gemm(a, b, c, trans_a=bool(n.attr("transA", 0)), trans_b=bool(n.attr("transB", 0)),
                     alpha=n.attr("alpha", 1.0), beta=n.attr("beta", 1.0), device=device)]


def _pool(n: Node, device):
    """MaxPool, AveragePool, LpPool and their Global forms as DML_MAX_POOLING2,
    AVERAGE_POOLING1 and LP_POOLING1, as DirectML's execution provider builds them: 1-D
    pooling as 2-D over a height of 1, auto_pad (SAME_UPPER / SAME_LOWER: the output
    ceil(size / stride), the padding split with the odd one at the end / the start; VALID:
    none) and ceil_mode (ONNX's output size, the last window starting inside the input or
    its start padding) computed into start and end paddings; MaxPool's Indices (row-major
    flat indices over NCHW, DirectML's OutputIndicesTensor) as UINT64, read as INT64."""
    x = n.inputs[0]
    spatial = x.ndim - 2
    sizes = list(x.shape[2:])
    if n.op_type.startswith("Global"):
        window, strides, dil, begin, end = sizes, [1] * spatial, [1] * spatial, [0] * spatial, [0] * spatial
    else:
        window = list(n.attr("kernel_shape"))
        strides = list(n.attr("strides", [1] * spatial))
        dil = list(n.attr("dilations", [1] * spatial))
        pads = list(n.attr("pads", [0] * 2 * spatial))
        begin, end = pads[:spatial], pads[spatial:]
        auto = n.attr("auto_pad", "NOTSET")
        extent = [(w - 1) * d + 1 for w, d in zip(window, dil)]
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            for i in range(spatial):
                out = -(-sizes[i] // strides[i])
                total = max(0, (out - 1) * strides[i] + extent[i] - sizes[i])
                small, large = total // 2, total - total // 2
                begin[i], end[i] = (small, large) if auto == "SAME_UPPER" else (large, small)
        elif auto == "VALID":
            begin, end = [0] * spatial, [0] * spatial
        elif n.attr("ceil_mode", 0):
            for i in range(spatial):
                padded = sizes[i] + begin[i] + end[i]
                out = -(-(padded - extent[i]) // strides[i]) + 1
                if (out - 1) * strides[i] >= sizes[i] + begin[i]:
                    out -= 1  # (the last window must start inside the input or its start padding)
                extra = max(0, (out - 1) * strides[i] + extent[i] - padded)
                if extra and n.op_type == "AveragePool" and n.attr("count_include_pad", 0):
                    raise NotDirectML("ceil_mode with count_include_pad=1: IncludePadding would count the positions "
                                      "ceil_mode adds past the end padding, which ONNX leaves out of the divisor")
                end[i] += extra
    if n.attr("storage_order", 0) == 1:
        raise NotDirectML("storage_order=1 (column-major indices): DirectML's indices are row-major")
    if spatial == 1:  # 1-D pooling: 2-D over a height of 1
        x = x[:, :, None, :]
        window, strides, dil, begin, end = [1, *window], [1, *strides], [1, *dil], [0, *begin], [0, *end]
    args = {"strides": strides, "start_padding": begin, "end_padding": end, "dilations": dil, "device": device}
    kind = n.op_type.removeprefix("Global")
    if kind == "MaxPool":
        if len(n.outputs) == 2:
            y, index = dml.max_pooling(x, window, output_indices=np.uint64, **args)
            got = [np.asarray(y), np.asarray(index).view(np.int64)]
        else:
            got = [np.asarray(dml.max_pooling(x, window, **args))]
    elif kind == "AveragePool":
        got = [np.asarray(dml.average_pooling(x, window, include_padding=bool(n.attr("count_include_pad", 0)),
                                              **args))]
    else:
        got = [np.asarray(dml.lp_pooling(x, window, p=int(n.attr("p", 2)), **args))]
    return [g.reshape(w.shape) for g, w in zip(got, n.outputs)]
def _instance_norm(n: Node, device):
    """InstanceNormalization: MEAN_VARIANCE_NORMALIZATION1 over the spatial axes, scale and
    bias per channel."""
    x, scale, bias = n.inputs
    shape = (-1,) + (1,) * (x.ndim - 2)
    return [dml.mean_variance_normalization(x, scale.reshape(shape), bias.reshape(shape), axes=list(range(2, x.ndim)),
                                            epsilon=n.attr("epsilon", 1e-5), device=device)]


def _layer_norm(n: Node, device):
    """LayerNormalization: MEAN_VARIANCE_NORMALIZATION1 over the axes from `axis` on; its
    optional Mean and InvStdDev outputs as DirectML computes them: REDUCE's AVERAGE of x and
    of (x - Mean)^2, then 1 / sqrt(variance + epsilon) (element-wise operators)."""
    x, scale, bias = n.inputs[0], n.input(1), n.input(2)
    axes = list(range(n.attr("axis", -1) % x.ndim, x.ndim))
    eps = n.attr("epsilon", 1e-5)
    y = dml.mean_variance_normalization(x, scale, bias, axes=axes, epsilon=eps, device=device)
    if len(n.outputs) == 1:
        return [y]
    mean = dml.reduce(x, "average", axes, device=device)
    d = dml.subtract(x, mean, device=device)
    var = dml.reduce(dml.multiply(d, d, device=device), "average", axes, device=device)
    inv = dml.recip(dml.sqrt(dml.add(var, np.full((1,) * x.ndim, eps, x.dtype), device=device), device=device),
                    device=device)
    return [y, mean, inv][:len(n.outputs)]


def _mvn(n: Node, device):
    return [dml.mean_variance_normalization(n.inputs[0], axes=n.attr("axes", [0, 2, 3]), epsilon=1e-9,
                                            device=device)]


def _lp_norm(n: Node, device):
    """LpNormalization: x / max(norm, 1e-5) (DirectML's Epsilon at the page's recommended
    value: ONNX divides by the norm, and gives 0 for a zero row)."""
    return [dml.lp_normalization(n.inputs[0], n.attr("axis", -1), p=n.attr("p", 2), epsilon=1e-5, device=device)]


def _lrn(n: Node, device):
    """LRN: LOCAL_RESPONSE_NORMALIZATION across channels (ONNX's only region)."""
    return [dml.local_response_normalization(n.inputs[0], n.attr("size"), cross_channel=True,
                                             alpha=n.attr("alpha", 1e-4), beta=n.attr("beta", 0.75),
                                             bias=n.attr("bias", 1.0), device=device)]
def _batch_normalization(n: Node, device):
    """BatchNormalization in inference mode: scale, B, mean and var are [C] (per channel, as
    dml.batch_normalization takes them); training mode computes the batch's statistics and
    returns running ones (DML_BATCH_NORMALIZATION_TRAINING's, not an element-wise operator)."""
    if n.attr("training_mode", 0):
        raise NotDirectML("training_mode: the batch's own mean and variance (DML_BATCH_NORMALIZATION_TRAINING)")
    x, scale, bias, mean, var = n.inputs
    return [dml.batch_normalization(x, mean, var, scale, bias, epsilon=n.attr("epsilon", 1e-5), device=device)]
def _conv_pads(n: Node, x, w, strides, dilations) -> tuple[list[int], list[int]]:
    """Conv's start and end paddings: `pads`, or auto_pad's (SAME_UPPER: the odd one at the
    end, SAME_LOWER: at the start; VALID: none), as DirectML's execution provider computes them."""
    spatial = x.ndim - 2
    auto = n.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        start, end = [], []
        for i, k, s, d in zip(x.shape[2:], w.shape[2:], strides, dilations):
            total = max(0, (-(-i // s) - 1) * s + (k - 1) * d + 1 - i)
            start.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
            end.append(total - start[-1])
        return start, end
    pads = [0] * (2 * spatial) if auto == "VALID" else list(n.attr("pads", [0] * (2 * spatial)))
    return pads[:spatial], pads[spatial:]


def _conv(n: Node, device):
    """Conv and ConvTranspose: DML_OPERATOR_CONVOLUTION, CROSS_CORRELATION, FORWARD and
    BACKWARD; auto_pad and ConvTranspose's output_shape become paddings (ONNX's formulas,
    as DirectML's execution provider computes them: an output_shape past the padded size is
    OutputPadding)."""
    x, w, b = n.inputs[0], n.inputs[1], n.input(2)
    spatial = x.ndim - 2
    strides = list(n.attr("strides", [1] * spatial))
    dilations = list(n.attr("dilations", [1] * spatial))
    kwargs = {"strides": strides, "dilations": dilations, "group_count": n.attr("group", 1)}
    if n.op_type == "Conv":
        start, end = _conv_pads(n, x, w, strides, dilations)
        return [dml.convolution(x, w, b, start_padding=start, end_padding=end, **kwargs, device=device)]
    auto, adjust = n.attr("auto_pad", "NOTSET"), list(n.attr("output_padding", [0] * spatial))
    shape = n.attr("output_shape")
    if shape is None and auto in ("SAME_UPPER", "SAME_LOWER"):
        shape = [i * s for i, s in zip(x.shape[2:], strides)]
    if shape is None:
        start, end = _conv_pads(n, x, w, strides, dilations) if auto != "VALID" else ([0] * spatial, [0] * spatial)
        padding = adjust
    else:
        start, end, padding = [], [], []
        for i, k, s, d, a, o in zip(x.shape[2:], w.shape[2:], strides, dilations, adjust, shape[-spatial:]):
            full = (i - 1) * s + a + (k - 1) * d + 1
            total = max(0, full - o)
            start.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
            end.append(total - start[-1])
            padding.append(o - (full - a - total))
    return [dml.convolution(x, w, b, start_padding=start, end_padding=end, output_padding=padding,
                            direction="backward", **kwargs, device=device)]


#: ONNX op type -> the functional form(s) DirectML's execution provider would run for it.
MAPPINGS = {
    **dict.fromkeys(_REDUCE, _reduce),
    "ArgMax": _arg, "ArgMin": _arg,
    "Pad": _pad, "Slice": _slice, "Concat": _concat, "Split": _split, "Gather": _gather,
    "Tile": _tile, "CumSum": _cumsum, "ReverseSequence": _reverse_sequence,
    # element-wise and activations (ops/elementwise.py)
    "Add": _binary("add", ints="add0"), "Sub": _binary("subtract"), "Mul": _binary("multiply"),
    "Div": _binary("divide"), "Max": _variadic("max"), "Min": _variadic("min"), "Sum": _variadic("add", ints="add0"),
    "Mean": _mean, "Abs": _unary("abs"), "Neg": _unary("negate"), "Sqrt": _unary("sqrt"), "Exp": _unary("exp"),
    "Log": _unary("log"), "Sin": _unary("sin"), "Cos": _unary("cos"), "Tanh": _unary("tanh"),
    "Reciprocal": _unary("recip"), "Identity": _unary("identity"), "Clip": _clip,
    "Equal": _logical("logical_equals"), "Greater": _logical("logical_greater_than"),
    "Less": _logical("logical_less_than"), "And": _logical("logical_and"), "Not": _logical("logical_not"),
    "Relu": _unary("relu"), "Sigmoid": _unary("sigmoid"), "Gelu": _gelu,
    "LeakyRelu": _with_attrs("leaky_relu", alpha=("alpha", 0.01)), "Elu": _with_attrs("elu", alpha=("alpha", 1.0)),
    "Softplus": _unary("softplus"),
    "Or": _logical("logical_or"), "Xor": _logical("logical_xor"),
    "GreaterOrEqual": _logical("logical_greater_than_or_equal"), "LessOrEqual": _logical("logical_less_than_or_equal"),
    "BitwiseAnd": _binary("bit_and"), "BitwiseOr": _binary("bit_or"), "BitwiseXor": _binary("bit_xor"),
    "BitwiseNot": _unary("bit_not"), "BitShift": _bitshift, "Mod": _mod, "Where": _where, "Cast": _cast,
    "QuantizeLinear": _quantize, "DequantizeLinear": _quantize,
    "MatMul": _matmul, "Gemm": _gemm, "BatchNormalization": _batch_normalization,
    "Conv": _conv, "ConvTranspose": _conv,
    "Softmax": _softmax("softmax"), "LogSoftmax": _softmax("log_softmax"), "Hardmax": _softmax("hardmax"),
    # the float math rows (ew-math)
    "Acos": _unary("acos"), "Asin": _unary("asin"), "Atan": _unary("atan"), "Acosh": _unary("acosh"),
    "Asinh": _unary("asinh"), "Atanh": _unary("atanh"), "Cosh": _unary("cosh"), "Sinh": _unary("sinh"),
    "Tan": _unary("tan"), "Ceil": _unary("ceil"), "Floor": _unary("floor"),
    "Round": _unary("round"),  # ONNX rounds halves to even: RoundingMode.HALVES_TO_NEAREST_EVEN, the default
    "Erf": _unary("erf"), "Sign": _unary("sign"), "IsNaN": _unary("is_nan"), "IsInf": _is_inf, "Pow": _pow,
    "HardSigmoid": _with_attrs("hard_sigmoid", alpha=("alpha", 0.2), beta=("beta", 0.5)),
    "Selu": _with_attrs("scaled_elu", alpha=("alpha", 1.67326319217681884765625),
                        gamma=("gamma", 1.05070102214813232421875)),
    "Softsign": _unary("softsign"), "ThresholdedRelu": _with_attrs("thresholded_relu", alpha=("alpha", 1.0)),
    "Shrink": _with_attrs("shrink", bias=("bias", 0.0), lambd=("threshold", 0.5)),
    "Celu": _with_attrs("celu", alpha=("alpha", 1.0)),
    "HardSwish": _unary("hard_swish"),  # ONNX's alpha 1/6 and beta 0.5: DirectML's defaults
    "Swish": _with_attrs("swish", alpha=("sigmoid_input_scale", 1.0)), "PRelu": _prelu,
    # pooling (ops/pooling.py)
    **dict.fromkeys(("MaxPool", "AveragePool", "LpPool", "GlobalMaxPool", "GlobalAveragePool"), _pool),  # (no GlobalLpPool test)
    # normalization (ops/normalization.py)
    "InstanceNormalization": _instance_norm, "LayerNormalization": _layer_norm, "MeanVarianceNormalization": _mvn,
    "LpNormalization": _lp_norm, "LRN": _lrn,
}

#: Node tests of mapped operators that are outside DirectML's semantics, and why.
NOT_DIRECTML = {
    "test_equal_string": "tensors: DirectML has numeric types only",
    "test_equal_string_broadcast": "tensors: DirectML has numeric types only",
    "test_gelu_tanh_1": "Gelu's tanh approximation",
    "test_gelu_tanh_2": "Gelu's tanh approximation",
    "test_identity_opt": "DirectML has tensors only",
    "test_identity_sequence": "DirectML has tensors only",
    "test_max_float64": "FLOAT64: not in the operator's support table",
    "test_mod_mixed_sign_float64": "FLOAT64: not in the operator's support table",
    "test_quantizelinear_int16": "INT16: not in the operator's support table",
    "test_quantizelinear_uint16": "UINT16: not in the operator's support table",
    "test_dequantizelinear_blocked": "blocked quantization",
    "test_quantizelinear_blocked_asymmetric": "blocked quantization",
    "test_quantizelinear_blocked_symmetric": "blocked quantization",
    "test_min_float64": "FLOAT64: not in the operator's support table",
    "test_reduce_max_bool_inputs": "BOOL tensors",
    "test_reduce_min_bool_inputs": "BOOL tensors",
    "test_reduce_sum_empty_axes_input_noop": "noop_with_empty_axes",
    "test_reduce_sum_empty_axes_input_noop_example": "noop_with_empty_axes",
    "test_reduce_l1_empty_set": "an empty tensor",
    "test_reduce_l2_empty_set": "an empty tensor",
    "test_reduce_log_sum_empty_set": "an empty tensor",
    "test_reduce_log_sum_exp_empty_set": "an empty tensor",
    "test_reduce_max_empty_set": "an empty tensor",
    "test_reduce_min_empty_set": "an empty tensor",
    "test_reduce_prod_empty_set": "an empty tensor",
    "test_reduce_sum_empty_set": "an empty tensor",
    "test_reduce_sum_square_empty_set": "an empty tensor",
    "test_reduce_sum_empty_set_non_reduced_axis_zero": "an empty tensor",
    "test_slice_start_out_of_bounds": "an empty slice",
    "test_split_zero_size_splits_opset13": "a zero-size part",
    "test_split_zero_size_splits_opset18": "a zero-size part",
    "test_cumsum_1d": "FLOAT64: not in the operator's support table",
    "test_cumsum_1d_exclusive": "FLOAT64: not in the operator's support table",
    "test_cumsum_1d_reverse": "FLOAT64: not in the operator's support table",
    "test_cumsum_1d_reverse_exclusive": "FLOAT64: not in the operator's support table",
    "test_cumsum_2d_axis_0": "FLOAT64: not in the operator's support table",
    "test_cumsum_2d_axis_1": "FLOAT64: not in the operator's support table",
    "test_cumsum_2d_negative_axis": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_default_axes_keepdims_example": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_default_axes_keepdims_random": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_do_not_keepdims_example": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_do_not_keepdims_random": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_keepdims_example": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_keepdims_random": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_negative_axes_keepdims_example": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_negative_axes_keepdims_random": "FLOAT64: not in the operator's support table",
    "test_clip_min_greater_than_max": "min > max: ONNX's Clip gives max there",
    "test_pow_types_float32_int64": "INT64: not in the operator's support table",
    "test_pow_types_float32_uint64": "UINT64: not in the operator's support table",
    "test_pow_types_int64_float32": "INT64: not in the operator's support table",
    "test_pow_types_int64_int64": "INT64: not in the operator's support table",
    "test_maxpool_with_argmax_2d_precomputed_strides": "storage_order=1 (column-major indices)",
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True":
        "ceil_mode with count_include_pad=1",
    "test_batchnorm_epsilon_training_mode": "training_mode: the batch's own mean and variance",
    "test_batchnorm_example_training_mode": "training_mode: the batch's own mean and variance",
}


def _node_tests() -> list[str]:
    names = []
    for folder in sorted(NODE_TESTS.glob("test_*")):
        if not (folder / "model.onnx").exists() or folder.name.endswith("_expanded"):
            continue
        model = onnx.load(str(folder / "model.onnx"), load_external_data=False)
        if len(model.graph.node) == 1 and model.graph.node[0].op_type in MAPPINGS:
            if _foreign_types(model):
                FOREIGN.append(folder.name)
            else:
                names.append(folder.name)
    return names


#: Node tests of mapped operators whose tensors have types DirectML lacks (bfloat16, the
#: float8 and float4 formats, 2- and 4-bit integers): not collected.
FOREIGN: list[str] = []


def _foreign_types(model) -> bool:
    for value in list(model.graph.input) + list(model.graph.output):
        if value.type.WhichOneof("value") != "tensor_type":
            continue
        elem = value.type.tensor_type.elem_type
        if elem == onnx.TensorProto.STRING:
            continue  # (string tensors: listed in NOT_DIRECTML)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
        if dtype != np.bool_ and dtype not in _DIRECTML_DTYPES:
            return True
    return False


NODE_NAMES = _node_tests()


@pytest.mark.parametrize("name", NODE_NAMES)
def test_onnx_node(name, device):
    try:
        n = load(name)
        try:
            got = MAPPINGS[n.op_type](n, device)
        except InvalidArgumentError as e:  # a type the operator's DirectML support table lacks
            found = re.search(r"data_type (\w+) is not supported at (\w+) \(", str(e))
            if not found:
                raise
            raise NotDirectML(f"{found[1]}: not in the operator's support table at {found[2]} ({e})") from e
    except NotDirectML as e:
        assert name in NOT_DIRECTML, f"{name}: {e}: map it, or list it in NOT_DIRECTML with this reason"
        assert NOT_DIRECTML[name] in str(e), f"{name}: listed for {NOT_DIRECTML[name]!r}, raised {e}"
        return
    assert name not in NOT_DIRECTML, f"{name} runs now: take it off NOT_DIRECTML"
    assert len(got) == len(n.outputs)
    for k, (g, want) in enumerate(zip(got, n.outputs)):
        g = np.asarray(g)
        assert g.shape == want.shape, f"{name}: output {k} shape {g.shape}, ONNX {want.shape}"
        if want.dtype == np.bool_:  # DirectML's logical operators answer UINT8 0/1
            assert g.dtype == np.uint8 and set(np.unique(g)) <= {0, 1}, f"{name}: output {k}: {g.dtype} {g}"
            g = g.astype(np.bool_)
        assert g.dtype == want.dtype, f"{name}: output {k} dtype {g.dtype}, ONNX {want.dtype}"
        if np.issubdtype(want.dtype, np.floating):
            np.testing.assert_allclose(g, want, rtol=1e-3, atol=1e-7, err_msg=f"{name}: output {k}")
        else:
            np.testing.assert_array_equal(g, want, err_msg=f"{name}: output {k}")


def test_every_mapped_operator_has_node_tests():
    """The mapping table and the wheel's tests agree: no mapped op type without a node test
    (a misspelt op type would map nothing), and the wheel is the one the docs name."""
    assert onnx.__version__ == "1.22.0"
    found = {onnx.load(str(NODE_TESTS / name / "model.onnx")).graph.node[0].op_type for name in NODE_NAMES}
    assert found == set(MAPPINGS), sorted(set(MAPPINGS) - found)
    assert set(NOT_DIRECTML) <= set(NODE_NAMES), sorted(set(NOT_DIRECTML) - set(NODE_NAMES))
    assert all(name.startswith(("test_cast", "test_quantizelinear", "test_dequantizelinear")) for name in FOREIGN)
