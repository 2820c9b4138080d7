"""DML_REDUCE_OPERATOR_DESC (seed 004): its DirectML semantics. The kernels, their
strategies and cost model are the reduction family's (kernels/reduction.py).

Semantics beyond the page, as implemented (and tested against the reference):

- float16 is read as float32, accumulated in float32 and rounded once at the end;
  a result beyond float16's range becomes +-inf. float32 sums add subtotals of 64
  elements separately before adding the subtotals (and long reductions go through
  partial results), so their error grows far slower than one running sum's.
- Integer SUM, MULTIPLY, L1 and SUM_SQUARE wrap modulo 2^bits in the input type
  (L1 of INT_MIN is INT_MIN's bit pattern, i.e. 2^(bits-1) modulo 2^bits).
  INT64/UINT64 are exact: native 64-bit integers where the adapter has
  shader-int64, exact 32-bit pairs where it has not.
- LOG_SUM_EXP is max-shifted, max + log(sum(exp(x - max))): inputs around 1000
  give finite results; any +inf gives +inf, all -inf gives -inf.
- LOG_SUM of a sum <= 0 is log's value there (-inf for 0, NaN below).
- L2 squares in float32: |x| above ~1.8e19 overflows to +inf.
- NaN: SUM-like functions propagate it through arithmetic. MAX, MIN, ARGMAX and
  ARGMIN propagate it as numpy does: any NaN makes MAX/MIN NaN, and ARGMAX/ARGMIN
  return the index of the first NaN. Otherwise ARGMAX/ARGMIN return the first
  occurrence of the extreme value. (WGSL's min/max may drop NaN; the kernels
  compare explicitly.)
- ARGMAX/ARGMIN over several axes return the flat row-major index into the reduced
  sub-tensor, the reduced axes taken in increasing order whatever order `axes`
  lists them in. The index is written into the output type (I32, U32, I64, U64).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.reduction import REDUCE
from ..tensor_desc import TensorDesc, as_int_tuple, check_same_rank, check_tensor_desc
from ..types import TYPES_8, DataType, FeatureLevel, ReduceFunction
from .base import check_reduced_shape, normalize_axes
from .spec import Call, Cli, CliArg, Example, OpSpec, random_buffer, support_table

OP = "Reduce"
F = ReduceFunction
T = DataType
_FL = FeatureLevel

_FLOATS = {T.FLOAT32, T.FLOAT16}
_ARITH_5_0 = {T.FLOAT32, T.FLOAT16, T.INT64, T.INT32, T.UINT64, T.UINT32}
_ALL_BUT_F64 = TYPES_8 | {T.INT64, T.UINT64}
_INDEX_TYPES = {T.INT64, T.INT32, T.UINT64, T.UINT32}
_F32_F16_I32_U32 = {T.FLOAT32, T.FLOAT16, T.INT32, T.UINT32}
_TENSORS = ("input_tensor", "output_tensor")

#: The seed page's tables, one per group of functions: (level, ranks, input types, output types).
_GROUP_ROWS = {
    (F.ARGMIN, F.ARGMAX): [
        (_FL.FL_4_1, (1, 8), _ALL_BUT_F64, _INDEX_TYPES),
        (_FL.FL_3_0, (1, 8), TYPES_8, _INDEX_TYPES),
        (_FL.FL_2_1, {4}, TYPES_8, {T.UINT32}),
        (_FL.FL_1_0, {4}, _FLOATS, {T.UINT32}),
    ],
    (F.AVERAGE, F.L2, F.LOG_SUM, F.LOG_SUM_EXP): [
        (_FL.FL_3_0, (1, 8), _FLOATS),
        (_FL.FL_1_0, {4}, _FLOATS),
    ],
    (F.L1, F.SUM_SQUARE): [
        (_FL.FL_5_0, (1, 8), _ARITH_5_0),
        (_FL.FL_3_0, (1, 8), _FLOATS),
        (_FL.FL_1_0, {4}, _FLOATS),
    ],
    (F.MIN, F.MAX): [
        (_FL.FL_5_0, (1, 8), _ALL_BUT_F64),
        (_FL.FL_3_0, (1, 8), TYPES_8),
        (_FL.FL_2_1, {4}, _F32_F16_I32_U32),
        (_FL.FL_1_0, {4}, _FLOATS),
    ],
    (F.MULTIPLY, F.SUM): [
        (_FL.FL_5_0, (1, 8), _ARITH_5_0),
        (_FL.FL_3_0, (1, 8), _F32_F16_I32_U32),
        (_FL.FL_2_1, {4}, _F32_F16_I32_U32),
        (_FL.FL_1_0, {4}, _FLOATS),
    ],
}

#: The seed page's support tables, one per function (rows shared within a function group).
SUPPORT: dict[ReduceFunction, object] = {
    function: support_table(f"{OP} ({function.name})", _TENSORS, rows)
    for group, rows in _GROUP_ROWS.items() for function in group
}

ARG_FUNCTIONS = frozenset({F.ARGMAX, F.ARGMIN})


@dataclass(frozen=True)
class ReduceOperatorDesc:
    function: ReduceFunction
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    axes: tuple[int, ...]

    def __post_init__(self):
        object.__setattr__(self, "function", ReduceFunction.coerce(self.function, f"{OP}: function"))
        object.__setattr__(self, "axes", as_int_tuple(self.axes, f"{OP}: axes"))


def infer_output(input_tensor: TensorDesc, function, axes=None, output_data_type=None) -> ReduceOperatorDesc:
    """The desc of `reduce(x, function, axes, output_data_type=)`: the output keeps the rank
    with size 1 on each reduced axis; its type is the input's, except ARGMAX/ARGMIN
    (`output_data_type`, default UINT32). A given `output_data_type` for another function
    must equal the input's type (validation says so otherwise). `axes` as numpy takes
    them: None (every axis), one int or a list, negative ones counted from the end (the
    desc itself takes DirectML's axes only)."""
    function = ReduceFunction.coerce(function, "reduce: function")
    axes = normalize_axes(axes, input_tensor.rank, "reduce: axes")
    if output_data_type is not None:
        out_type = DataType.parse(output_data_type, "reduce: output_data_type")
    elif function in ARG_FUNCTIONS:
        out_type = DataType.UINT32
    else:
        out_type = input_tensor.data_type
    out_sizes = tuple(1 if i in axes else n for i, n in enumerate(input_tensor.sizes))
    return ReduceOperatorDesc(function, input_tensor, TensorDesc(out_type, out_sizes), axes)


def validate(desc: ReduceOperatorDesc, feature_level: FeatureLevel) -> None:
    check_tensor_desc(OP, "input_tensor", desc.input_tensor)
    check_tensor_desc(OP, "output_tensor", desc.output_tensor, is_output=True)
    inp, out, fn = desc.input_tensor, desc.output_tensor, desc.function
    rank = check_same_rank(OP, {"input_tensor": inp, "output_tensor": out})
    if fn not in ARG_FUNCTIONS and out.data_type != inp.data_type:
        raise InvalidArgumentError(
            f"{OP}: output_tensor.data_type {out.data_type.name} must equal input_tensor.data_type "
            f"{inp.data_type.name} (only ARGMAX and ARGMIN change the type; function is {fn.name})")
    SUPPORT[fn].check(feature_level, rank, {"input_tensor": inp.data_type, "output_tensor": out.data_type})
    check_reduced_shape(OP, inp, out, desc.axes)


# ---------------------------------------------------------------------------- reference
_FLOAT_ONLY = {F.AVERAGE, F.L2, F.LOG_SUM, F.LOG_SUM_EXP}


def reference(x, function, axes=None, output_data_type=None) -> np.ndarray:
    """Reduce `axes` (None = all; one int or a list, negative ones counting from the end;
    any order; no duplicates), keeping the rank: every reduced axis has size 1 in the result.

    Float inputs (float16/32/64): SUM, AVERAGE, MULTIPLY, L1, L2, SUM_SQUARE, LOG_SUM and
    LOG_SUM_EXP are computed in float64 and rounded once to the input type; the GPU's
    float32 accumulation must land within a tolerance of this. LOG_SUM_EXP is
    max-shifted, so inputs around 1000 give finite results. MIN/MAX work in the input
    type (exact) and propagate NaN (np.max semantics).

    Integer inputs: SUM, MULTIPLY, L1, SUM_SQUARE wrap modulo 2^bits in the input type
    (computed in uint64, whose arithmetic wraps mod 2^64, then truncated: exact even for
    int64 products, no float anywhere). MIN/MAX are exact. AVERAGE, L2, LOG_SUM,
    LOG_SUM_EXP have no integer definition in DirectML and raise ValueError.

    ARGMAX/ARGMIN: the first occurrence (ties and NaN like np.argmax: a row holding NaN
    gives its first NaN); over several axes the flat row-major index into the reduced
    sub-tensor, axes taken in ascending order whatever order they are given. The result
    type is `output_data_type` (DataType, name, value or numpy dtype), default UINT32.
    For other functions `output_data_type` must be None or the input's type (DirectML:
    output type equals input type).
    """
    x = np.asarray(x)
    function = ReduceFunction.coerce(function)
    axes = _reduce_axes(axes, x.ndim)
    kept = [a for a in range(x.ndim) if a not in axes]
    rows = np.transpose(x, kept + axes).reshape([x.shape[a] for a in kept] + [int(np.prod([x.shape[a] for a in axes]))])
    out_shape = [1 if a in axes else n for a, n in enumerate(x.shape)]
    empty_set = rows.shape[-1] == 0  # (an empty input: the layer above DirectML's sizes, functional.py)
    if function in ARG_FUNCTIONS:
        if empty_set:
            raise ValueError(f"{function.name} over an empty set has no result (axes {axes} of shape {list(x.shape)})")
        pick = np.argmax if function == F.ARGMAX else np.argmin
        index_type = np.dtype(np.uint32) if output_data_type is None else DataType.parse(output_data_type).numpy
        return pick(rows, axis=-1).astype(index_type).reshape(out_shape)
    if output_data_type is not None and DataType.parse(output_data_type).numpy != x.dtype:
        raise ValueError(f"{function.name}: output type must equal the input type {x.dtype}")
    if function in (F.MIN, F.MAX):
        if empty_set:  # ONNX's identity: +-inf, or the integer type's extreme
            if x.dtype.kind == "f":
                extreme = np.inf if function == F.MIN else -np.inf
            else:
                extreme = np.iinfo(x.dtype).max if function == F.MIN else np.iinfo(x.dtype).min
            return np.full(out_shape, extreme, x.dtype)
        return (np.min if function == F.MIN else np.max)(rows, axis=-1).reshape(out_shape)
    if x.dtype.kind == "f":
        with np.errstate(over="ignore"):  # beyond the type's range rounds to +-inf, as wanted
            return _float_reduce(rows, function).astype(x.dtype).reshape(out_shape)
    if function in _FLOAT_ONLY:
        raise ValueError(f"{function.name} is defined for float tensors only, not {x.dtype}")
    return _wrapping_reduce(rows, function, x.dtype).reshape(out_shape)


def _reduce_axes(axes, rank: int) -> list[int]:
    """Sorted axes (numpy-style: negative ones count from the end); ValueError for
    out-of-range, duplicate or empty axes."""
    if axes is None:
        return list(range(rank))
    axes = [int(a) for a in np.asarray(axes).reshape(-1)]
    if not axes or any(not -rank <= a < rank for a in axes):
        raise ValueError(f"axes {axes}: need at least one, each in [{-rank}, {rank})")
    axes = [a % rank for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"axes {axes}: an axis appears twice")
    return sorted(axes)


def _float_reduce(rows: np.ndarray, function: ReduceFunction) -> np.ndarray:
    """Float reductions over the last axis, computed in float64 (not yet rounded)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # invalid: also a signaling NaN's cast
        v = rows.astype(np.float64)
        if function == F.SUM:
            return v.sum(axis=-1)
        if function == F.AVERAGE:
            return v.sum(axis=-1) / v.shape[-1]
        if function == F.MULTIPLY:
            return v.prod(axis=-1)
        if function == F.L1:
            return np.abs(v).sum(axis=-1)
        if function == F.L2:
            return np.sqrt((v * v).sum(axis=-1))
        if function == F.SUM_SQUARE:
            return (v * v).sum(axis=-1)
        if function == F.LOG_SUM:
            return np.log(v.sum(axis=-1))
        return _log_sum_exp(v)


def _log_sum_exp(v: np.ndarray) -> np.ndarray:
    """max + log(sum(exp(x - max))): finite for large inputs; an infinite max (all -inf, or
    any +inf) is left unshifted so the result is -inf / +inf, not NaN."""
    if v.shape[-1] == 0:  # an empty set: log(0)
        return np.full(v.shape[:-1], -np.inf)
    m = v.max(axis=-1, keepdims=True)
    shift = np.where(np.isfinite(m), m, 0.0)
    return (shift + np.log(np.exp(v - shift).sum(axis=-1, keepdims=True)))[..., 0]


def _wrapping_reduce(rows: np.ndarray, function: ReduceFunction, dtype: np.dtype) -> np.ndarray:
    """Integer SUM/MULTIPLY/L1/SUM_SQUARE modulo 2^bits, in the input type. Everything is
    done in uint64 (numpy array arithmetic wraps silently mod 2^64); two's complement makes
    the low `bits` bits of that result the wrapped result for signed and unsigned types."""
    if function == F.L1 and dtype.kind == "i":
        # |INT_MIN| overflows int64 only for int64 itself, and wraps to 2^63 there,
        # which is the right value mod 2^64.
        rows = np.abs(rows.astype(np.int64))
    u = rows.astype(np.uint64)
    if function in (F.SUM, F.L1):
        total = u.sum(axis=-1, dtype=np.uint64)
    elif function == F.MULTIPLY:
        total = u.prod(axis=-1, dtype=np.uint64)
    elif function == F.SUM_SQUARE:
        total = (u * u).sum(axis=-1, dtype=np.uint64)
    else:
        raise ValueError(f"{function.name} is not an integer reduction")
    bits = 8 * dtype.itemsize
    low = total & np.uint64((1 << bits) - 1)
    return low.astype(np.dtype(f"u{dtype.itemsize}")).view(dtype)


#: Relative rounding bound of one float result (float32 accumulation, one rounding to the type).
_EPS = {np.dtype(np.float32): 2e-6, np.dtype(np.float16): 1e-3, np.dtype(np.float64): 2e-6}


def tolerance(expected: np.ndarray, inputs, arguments: dict):
    """The documented precision of a result against the reference: integers and ARGMAX/ARGMIN
    indices bit-exact (None); float MIN/MAX exact in value (0); the other float functions
    within 4 x eps x the magnitude involved (eps 2e-6 for float32 results, 1e-3 for float16):
    the larger of |result| and the same reduction of |x| for SUM, AVERAGE, L1, SUM_SQUARE
    and L2, |result| + 1 for LOG_SUM and LOG_SUM_EXP, |result| for MULTIPLY."""
    if expected.dtype.kind != "f":
        return None
    function = ReduceFunction.coerce(arguments["function"])
    if function in (F.MIN, F.MAX):
        return 0.0
    scale = np.abs(expected.astype(np.float64))
    if function in (F.SUM, F.AVERAGE, F.L1, F.SUM_SQUARE, F.L2):
        magnitude = reference(np.abs(np.asarray(inputs[0])), function, arguments.get("axes"))
        scale = np.maximum(scale, magnitude.astype(np.float64))
    elif function in (F.LOG_SUM, F.LOG_SUM_EXP):
        scale = scale + 1.0
    return 4 * _EPS[expected.dtype] * scale + 1e-30


# ---------------------------------------------------------------------------- API
def reduce(x, function, axes=None, *, output_data_type=None, keepdims=True, device=None):
    """DML_REDUCE: `function` (a ReduceFunction or its name, any case) over `axes` (None: all;
    one int or a list; negative axes count from the end, as in numpy). The result keeps the
    rank, size 1 on the reduced axes (DirectML's semantics); `keepdims=False` drops those
    axes, as numpy does (the same elements re-described, no copy; a numpy result of every
    axis reduced is 0-d, a Tensor's or an Expression's has shape (1,): DirectML tensors have
    at least one dimension). `output_data_type` (a DataType, its name or a numpy dtype) is
    the index type of ARGMAX/ARGMIN (default UINT32); other functions keep the input's type."""
    return Call([("x", x)], {"function": function, "axes": axes, "output_data_type": output_data_type}, device,
                keepdims)


def arguments(desc: ReduceOperatorDesc) -> dict:
    return {"function": desc.function, "axes": desc.axes, "output_data_type": desc.output_tensor.data_type}


def sample_values(rng, data_type: DataType, function, count: int) -> np.ndarray:
    """`count` input elements worth reducing with `function`: any bits for integers (they
    wrap); floats in a range the function keeps finite (MULTIPLY near 1, LOG_SUM positive)."""
    if not data_type.is_float:
        return random_buffer(TensorDesc(data_type, [count]), rng)
    low, high = {F.MULTIPLY: (0.7, 1.3), F.LOG_SUM: (0.1, 2.0)}.get(ReduceFunction.coerce(function), (-3.0, 3.0))
    return rng.uniform(low, high, count).astype(data_type.numpy)


def sample(desc: ReduceOperatorDesc, rng) -> list:
    inp = desc.input_tensor
    return [sample_values(rng, inp.data_type, desc.function, inp.required_elements)]


def from_cli(x: TensorDesc, a: dict) -> ReduceOperatorDesc:
    return infer_output(x, a["function"], a["axes"], a["output_data_type"])


_SOURCE = "004_39588914205b92fc.txt"
_INPUT = np.array([[1, 2, 3], [3, 0, 4], [2, 4, 2]], np.float32)

SPEC = OpSpec(
    name=OP, key="reduce", desc=ReduceOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate, tolerance=tolerance,
    reference=reference, functional=reduce, tensors=("x",), arguments=arguments, sample=sample, planner=REDUCE,
    cli=Cli((CliArg("--function", "ReduceFunction name, any case", "str", "SUM"),
             CliArg("--axes", "reduced axes, comma-separated (default all)"),
             CliArg("--output-data-type", "ARGMAX/ARGMIN index type (default UINT32)", "str")),
            from_cli, "--function sum --axes 1 --shape 4096,4096"),
    page="DML_REDUCE_OPERATOR_DESC",
    # The page has only these three SUM examples (no ARGMAX/ARGMIN or other function).
    examples=(
        Example("reduce-1", _INPUT, {"function": F.SUM, "axes": [0]},
                np.array([[6, 6, 9]], np.float32), _SOURCE),
        Example("reduce-2", _INPUT, {"function": F.SUM, "axes": [1]},
                np.array([[6], [7], [8]], np.float32), _SOURCE),
        # The page's comment lists a 5 where the input holds a 4; its sum, 21, is right.
        Example("reduce-3", _INPUT, {"function": F.SUM, "axes": [0, 1]},
                np.array([[21]], np.float32), _SOURCE),
    ),
)
