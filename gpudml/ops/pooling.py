"""DirectML's pooling operators, one table: DML_MAX_POOLING (max_pooling0), MAX_POOLING1 (its
optional OutputIndicesTensor), MAX_POOLING2 (Dilations: `dml.max_pooling`),
DML_AVERAGE_POOLING (average_pooling0), AVERAGE_POOLING1 (Dilations: `dml.average_pooling`),
DML_LP_POOLING (lp_pooling0) and LP_POOLING1 (Dilations: `dml.lp_pooling`). A version is its
successor with fewer fields; every row runs the pooling kernel family (kernels/pooling.py,
shaders/pooling.wgsl.j2). docs/operators/max_pooling2.md says the same for users.

What the pages say (the sdk-api and windows-ai-docs pages named by each row), as implemented:

- InputTensor is { BatchCount, ChannelCount, [Depth], Height, Width } (DimensionCount 4 or
  5); DimensionCount (the desc's field) is the number of spatial axes, 2 or 3, and Strides,
  WindowSize, StartPadding, EndPadding (and Dilations) have that many entries. The output
  keeps BatchCount and ChannelCount; spatial axis i is
  (Sizes[i + 2] + StartPadding[i] + EndPadding[i] - ((WindowSize[i] - 1) Dilations[i] + 1))
  / Strides[i] + 1 (the pages' formula, the window's extent dilated as the Dilations field
  says: an element every Dilations[i] positions).
- MAX: the largest element in the window, padding ignored; OutputIndicesTensor (optional,
  UINT32, or UINT64 from FL 5_0) holds the index of that element "treating the input tensor
  as a contiguous one-dimensional array": the row-major flat index over InputTensor's
  sizes (batch and channel included), "the first value encountered" where several are
  equal (window positions in row-major order). NaN counts as the largest (the first NaN
  wins); the output is the element's own bits. The input's types by level, the integer
  types included, are the pages'.
- AVERAGE: the mean of the window's input elements; with IncludePadding the padded positions
  count in the divisor (the window's element count), without it only the input's.
- LP: (|X1|^P + ... + |Xn|^P)^(1/P) over the window's input elements (the page writes Xi^P;
  the absolute value is ONNX LpPool's definition, which DirectML's execution provider maps
  to it, and the only reading that is a norm for odd P). P is a UINT of at least 1.

gpudml's own rules beside the pages' (DirectML's validator says no more than its pages): a
Stride, WindowSize or Dilation of 0 is an error, the dilated window may not be larger than
the padded input, and every window must hold at least one input element (a window over
padding only has no value: no maximum, no average of nothing).

The functional forms take DirectML's layouts (4-D or 5-D inputs) and per-axis lists or one
int for every spatial axis; `window_size=None` is global pooling (the window is the input's
spatial size: ONNX's GlobalMaxPool, GlobalAveragePool, GlobalLpPool), also spelled
`dml.global_max_pooling(x)`, `dml.global_average_pooling(x)`, `dml.global_lp_pooling(x, p=2)`
(aliases of the newest versions). `max_pooling(..., output_indices=True)` returns (y,
indices): UINT32 indices, or `output_indices=` a DataType or numpy dtype for UINT64.

Precision (`tolerance`), against the float64 reference: MAX is bit-exact (a selection).
AVERAGE sums in float32 (FLOAT16 read exactly into float32) in window order, chunks added in
order: with u = 2^-24, n input elements and divisor m, within 1.01 (n + 1) u sum|x| / m of the
exact mean, plus one rounding of the result (0.5 ULP of float32, 1 ULP of float16) and the
subnormals an adapter may flush (2^-126 per term). LP: the terms |x|^P (exact for P = 1,
0.5 ULP for P = 2, WGSL's pow bound otherwise: exp2(P log2|x|)), the float32 sum's
1.01 (n + 1) u, then the root (none for P = 1, sqrt's 5 ULP for P = 2, exp2(log2(S) / P)
otherwise), the sum's relative error divided by P; plus (n 2^-126)^(1/P) for flushed
subnormals and the result's rounding. Where the sum passes float32's range: any value.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import pooling as family
from ..kernels.base import ProblemPlanner
from ..kernels.pooling import Problem
from ..tensor_desc import (
    MAX_ELEMENTS,
    TensorDesc,
    as_int,
    as_int_tuple,
    check_same_rank,
    check_tensor_desc,
    check_window_fields,
)
from ..types import TYPES_11, DataType, FeatureLevel
from .precision import pow_ulps
from .spec import Call, Cli, CliArg, OpSpec, desc_class, signature_functional, support_table

FL, T = FeatureLevel, DataType
FLOATS = frozenset({T.FLOAT32, T.FLOAT16})
FLOATS_INT8 = FLOATS | {T.INT8, T.UINT8}
NUMBERS = TYPES_11 - {T.FLOAT64}
WINDOW_FIELDS = ("strides", "window_size", "start_padding", "end_padding")


@dataclass(frozen=True)
class Row:
    """One operator of the table: DirectML's name (`op`: the desc class and messages), its key
    and functional name, the function its kernel computes, whether it has Dilations and
    OutputIndicesTensor, its extra field (`include_padding`, `p` or None), its stored page
    and its support rows (the page's, by level)."""

    op: str
    key: str
    functional_name: str
    function: str
    dilations: bool
    indices: bool
    extra: str | None
    page_file: str
    support: tuple

    @property
    def enum(self) -> str:
        return self.page_file.removeprefix("ns-directml-dml_").removesuffix("_operator_desc.md").upper()

    @property
    def tensors(self) -> tuple[str, ...]:
        return ("input_tensor", "output_tensor") + (("output_indices_tensor",) if self.indices else ())


def _max_rows(introduced):
    if introduced is None:
        return ((FL.FL_5_0, (4, 5), NUMBERS), (FL.FL_3_0, (4, 5), FLOATS_INT8), (FL.FL_1_0, (4, 5), FLOATS))
    return ((FL.FL_5_0, (4, 5), NUMBERS, NUMBERS, {T.UINT64, T.UINT32}),
            (FL.FL_3_0, (4, 5), FLOATS_INT8, FLOATS_INT8, {T.UINT32}),
            (introduced, (4, 5), FLOATS, FLOATS, {T.UINT32}))


def _page(name: str) -> str:
    return f"ns-directml-dml_{name}_operator_desc.md"


TABLE: tuple[Row, ...] = (
    Row("MaxPooling", "max_pooling0", "max_pooling0", "MAX", False, False, None, _page("max_pooling"),
        _max_rows(None)),
    Row("MaxPooling1", "max_pooling1", "max_pooling1", "MAX", False, True, None, _page("max_pooling1"),
        _max_rows(FL.FL_2_0)),
    Row("MaxPooling2", "max_pooling2", "max_pooling", "MAX", True, True, None, _page("max_pooling2"),
        _max_rows(FL.FL_2_1)),
    Row("AveragePooling", "average_pooling0", "average_pooling0", "AVERAGE", False, False, "include_padding",
        _page("average_pooling"), ((FL.FL_1_0, (4, 5), FLOATS),)),
    Row("AveragePooling1", "average_pooling1", "average_pooling", "AVERAGE", True, False, "include_padding",
        _page("average_pooling1"), ((FL.FL_6_2, (4, 5), FLOATS),)),
    Row("LpPooling", "lp_pooling0", "lp_pooling0", "LP", False, False, "p", _page("lp_pooling"),
        ((FL.FL_1_0, (4, 5), FLOATS),)),
    Row("LpPooling1", "lp_pooling1", "lp_pooling", "LP", True, False, "p", _page("lp_pooling1"),
        ((FL.FL_6_2, (4, 5), FLOATS),)),
)


# ============================================================================ descs
class PoolingDesc:
    """What every pooling desc class shares (each row's class: its fields in DirectML's order,
    `ROW` its row): normalizing the fields."""

    ROW: Row

    def __post_init__(self):
        op = self.ROW.op
        object.__setattr__(self, "dimension_count", as_int(self.dimension_count, f"{op}: dimension_count"))
        for name in WINDOW_FIELDS + (("dilations",) if self.ROW.dilations else ()):
            object.__setattr__(self, name, as_int_tuple(getattr(self, name), f"{op}: {name}"))
        if self.ROW.extra == "include_padding":
            value = self.include_padding
            if not isinstance(value, (bool, np.bool_)):
                raise InvalidArgumentError(f"{op}: include_padding must be True or False (a BOOL), got {value!r}")
            object.__setattr__(self, "include_padding", bool(value))
        elif self.ROW.extra == "p":
            object.__setattr__(self, "p", as_int(self.p, f"{op}: p"))

    @property
    def effective_dilations(self) -> tuple[int, ...]:
        return self.dilations if self.ROW.dilations else (1,) * len(self.window_size)


def _desc_class(row: Row) -> type:
    fields = [("input_tensor", "TensorDesc"), ("output_tensor", "TensorDesc")]
    if row.indices:
        fields.append(("output_indices_tensor", "TensorDesc | None"))
    fields += [("dimension_count", "int")] + [(f, "tuple[int, ...]") for f in WINDOW_FIELDS]
    if row.dilations:
        fields.append(("dilations", "tuple[int, ...]"))
    if row.extra == "include_padding":
        fields.append(("include_padding", "bool"))
    elif row.extra == "p":
        fields.append(("p", "int"))
    namespace = {"ROW": row}
    if row.indices:
        namespace["OPTIONAL_TENSORS"] = ("output_indices_tensor",)
    what = {"MAX": "the maximum (and, optionally, its flat index)", "AVERAGE": "the average",
            "LP": "the Lp norm"}[row.function]
    return desc_class(f"{row.op}OperatorDesc", __name__, base=PoolingDesc, fields=fields,
                      doc=f"DML_{row.enum}_OPERATOR_DESC: {what} of the elements in a window sliding over the "
                          f"spatial axes. `output_indices_tensor` is optional (None)." if row.indices else
                          f"DML_{row.enum}_OPERATOR_DESC: {what} of the elements in a window sliding over the "
                          f"spatial axes.", **namespace)


# ============================================================================ shapes and validation
def _extent(window: int, dilation: int) -> int:
    return (window - 1) * dilation + 1


def output_size(n: int, window: int, stride: int, start: int, end: int, dilation: int) -> int:
    """The pages' formula: (n + start + end - dilated window) / stride + 1 (floor)."""
    return (n + start + end - _extent(window, dilation)) // stride + 1


def _empty_window(n: int, window: int, stride: int, start: int, dilation: int, count: int) -> int | None:
    """The first output position (of `count`) whose window holds no input position, or None.
    Only windows starting in the start padding, or at or past n, can miss the input."""
    lead = min(count, -(-start // stride))
    o = np.arange(lead, dtype=np.int64)
    s = o * stride - start
    k = -(s // dilation)  # the first window position at or past 0 (s < 0 here)
    bad = (k >= window) | (s + k * dilation >= n)
    if bad.any():
        return int(o[np.argmax(bad)])
    last = (count - 1) * stride - start
    return count - 1 if last >= n else None


def validate(row: Row, support, desc, level: FeatureLevel) -> None:
    """The pages' rules (module docstring) and gpudml's: valid tensors (the indices
    optional), one DimensionCount, the input's type for the output, the support row,
    DimensionCount = the spatial axes, the arrays' lengths, strides, windows and dilations of
    at least 1, P of at least 1, windows within the padded input, the output's sizes (and the
    indices'), and no window over padding only."""
    op = row.op
    named = {"input_tensor": desc.input_tensor, "output_tensor": desc.output_tensor}
    if row.indices and desc.output_indices_tensor is not None:
        named["output_indices_tensor"] = desc.output_indices_tensor
    for field, td in named.items():
        check_tensor_desc(op, field, td, is_output=field != "input_tensor")
    rank = check_same_rank(op, named)
    inp, out = desc.input_tensor, desc.output_tensor
    if out.data_type != inp.data_type:
        raise InvalidArgumentError(f"{op}: output_tensor.data_type {out.data_type.name} must equal "
                                   f"input_tensor.data_type {inp.data_type.name}")
    support.check(level, rank, {f: td.data_type for f, td in named.items()})
    spatial = rank - 2
    if desc.dimension_count != spatial:
        raise InvalidArgumentError(f"{op}: dimension_count = {desc.dimension_count} must be input_tensor's "
                                   f"DimensionCount - 2 = {spatial} (the spatial axes)")
    arrays = WINDOW_FIELDS + (("dilations",) if row.dilations else ())
    check_window_fields(op, desc, arrays, spatial, "dimension_count")
    if row.extra == "p" and not 1 <= desc.p <= MAX_ELEMENTS:
        raise InvalidArgumentError(f"{op}: p = {desc.p} must be in [1, {MAX_ELEMENTS}] (a UINT of at least 1)")
    check_windows(op, desc, inp, desc.effective_dilations,
                  {f: named[f] for f in ("output_tensor", "output_indices_tensor") if f in named})


def check_windows(op: str, desc, inp: TensorDesc, dil, outputs: dict) -> None:
    """The window rules of a pooling desc (the module docstring; QUANTIZED_LINEAR_AVERAGE_POOLING's
    too): each dilated window within the padded input, the `outputs`' sizes (field: desc) by
    the pages' formula, no window over padding only."""
    want = window_output_sizes(op, inp.sizes, desc.window_size, desc.strides, desc.start_padding, desc.end_padding,
                               dil)
    for field, td in outputs.items():
        if list(td.sizes) != want:
            raise InvalidArgumentError(
                f"{op}: {field}.sizes {list(td.sizes)} must be {want} (batch and channel of input_tensor, then "
                f"(size + start_padding + end_padding - dilated window) / strides + 1 per spatial axis)")
    check_no_empty_window(op, inp.sizes, want, desc.window_size, desc.strides, desc.start_padding, desc.end_padding,
                          dil)


def window_output_sizes(op: str, sizes, window, strides, start_padding, end_padding, dilations,
                        field: str = "input_tensor") -> list[int]:
    """The forward output's sizes for an input of `sizes` ([N, C, spatial...], the tensor
    `field`): N, C, then the pages' formula per spatial axis; InvalidArgumentError where a
    dilated window is larger than the padded input (the fields' lengths and least values
    checked before)."""
    want = list(sizes[:2])
    for i in range(len(sizes) - 2):
        n, w, s, a, b, d = sizes[i + 2], window[i], strides[i], start_padding[i], end_padding[i], dilations[i]
        if _extent(w, d) > n + a + b:
            raise InvalidArgumentError(
                f"{op}: window_size[{i}] = {w} (dilated: (window_size - 1) * dilations + 1 = {_extent(w, d)}) is "
                f"larger than the padded input: {field}.sizes[{i + 2}] + start_padding + end_padding = "
                f"{n} + {a} + {b} = {n + a + b}")
        want.append(output_size(n, w, s, a, b, d))
    return want


def check_no_empty_window(op: str, sizes, out_sizes, window, strides, start_padding, end_padding, dilations) -> None:
    """gpudml's rule: every window holds at least one input element (InvalidArgumentError
    naming the output position, the axis and the fields)."""
    for i in range(len(sizes) - 2):
        o = _empty_window(sizes[i + 2], window[i], strides[i], start_padding[i], dilations[i], out_sizes[i + 2])
        if o is not None:
            start = o * strides[i] - start_padding[i]
            raise InvalidArgumentError(
                f"{op}: the window of output position {o} on spatial axis {i} covers padding only (input positions "
                f"{start} + k * {dilations[i]} for k < {window[i]}, none in [0, {sizes[i + 2]})): "
                f"start_padding {start_padding[i]}, end_padding {end_padding[i]}, strides "
                f"{strides[i]}; such a window has no value")


# ============================================================================ the functional forms
def per_axis(value, spatial: int, field: str, default: int, where: str) -> tuple:
    """A functional form's per-axis argument: None (the default on every axis), one int (the
    same on every axis) or one entry per spatial axis."""
    if value is None:
        return (default,) * spatial
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return (int(value),) * spatial
    return as_int_tuple(value, f"{where}: {field}")


def _indices_type(value, where: str) -> DataType | None:
    if value is None or value is False or (isinstance(value, np.bool_) and not value):
        return None
    if value is True or isinstance(value, np.bool_):
        return T.UINT32
    try:
        if isinstance(value, (DataType, str)):
            return DataType.coerce(value, f"{where}: output_indices")
        return DataType.from_numpy(np.dtype(value), f"{where}: output_indices")
    except (InvalidArgumentError, TypeError):
        raise InvalidArgumentError(f"{where}: output_indices must be False, True (UINT32 indices) or the indices' "
                                   f"data type (UINT32 or UINT64), got {value!r}") from None


def _infer(row: Row, desc_cls, x: TensorDesc, window_size=None, *, strides=None, start_padding=None,
           end_padding=None, dilations=None, output_indices=False, include_padding=False, p=2):
    """The desc of the row's functional call: window_size None is the input's spatial sizes
    (global pooling); output sizes by the pages' formula (where it gives less than 1, 1:
    validation names the window that does not fit)."""
    where = row.functional_name
    spatial = max(0, x.rank - 2)
    window = tuple(x.sizes[2:]) if window_size is None else per_axis(window_size, spatial, "window_size", 1, where)
    fields = {"strides": per_axis(strides, spatial, "strides", 1, where), "window_size": window,
              "start_padding": per_axis(start_padding, spatial, "start_padding", 0, where),
              "end_padding": per_axis(end_padding, spatial, "end_padding", 0, where)}
    dil = per_axis(dilations, spatial, "dilations", 1, where)
    out = list(x.sizes[:2])
    for i in range(spatial):
        try:
            out.append(max(1, output_size(x.sizes[i + 2], window[i], fields["strides"][i], fields["start_padding"][i],
                                          fields["end_padding"][i], dil[i])))
        except (IndexError, ZeroDivisionError):
            out.append(1)
    y = TensorDesc(x.data_type, out)
    extra = {}
    if row.indices:
        kind = _indices_type(output_indices, where)
        extra["output_indices_tensor"] = None if kind is None else TensorDesc(kind, out)
    if row.dilations:
        fields["dilations"] = dil
    if row.extra == "include_padding":
        extra["include_padding"] = include_padding
    elif row.extra == "p":
        extra["p"] = p
    return desc_cls(input_tensor=x, output_tensor=y, dimension_count=x.rank - 2, **fields, **extra)


def _arguments(row: Row, desc) -> dict:
    out = {"window_size": desc.window_size, "strides": desc.strides, "start_padding": desc.start_padding,
           "end_padding": desc.end_padding}
    if row.dilations:
        out["dilations"] = desc.dilations
    if row.indices:
        idx = desc.output_indices_tensor
        out["output_indices"] = False if idx is None else idx.data_type
    if row.extra:
        out[row.extra] = getattr(desc, row.extra)
    return out


def _signature(row: Row) -> inspect.Signature:
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("x", inspect.Parameter.POSITIONAL_OR_KEYWORD),
              inspect.Parameter("window_size", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)]
    params += [inspect.Parameter(f, kw, default=None) for f in ("strides", "start_padding", "end_padding")]
    if row.dilations:
        params.append(inspect.Parameter("dilations", kw, default=None))
    if row.indices:
        params.append(inspect.Parameter("output_indices", kw, default=False))
    if row.extra == "include_padding":
        params.append(inspect.Parameter("include_padding", kw, default=False))
    elif row.extra == "p":
        params.append(inspect.Parameter("p", kw, default=2))
    return inspect.Signature(params)


def _functional_doc(row: Row) -> str:
    what = {
        "MAX": "the largest element of each window (padding ignored; NaN counts as the largest)",
        "AVERAGE": "the mean of each window's input elements (include_padding: the padded positions count in the "
                   "divisor)",
        "LP": "(sum |x|^p)^(1/p) over each window's input elements (p an integer of at least 1)",
    }[row.function]
    extra = ""
    if row.indices:
        extra = (" output_indices=True (UINT32) or a DataType/dtype (UINT64): returns (y, indices), the row-major flat "
                 "index into x of each maximum, the first of equal ones.")
    precision = {"MAX": "Bit-exact.",
                 "AVERAGE": "Summed in float32 (float16 too): within 1.01 (n + 1) 2^-24 sum|x| / divisor.",
                 "LP": "Summed in float32 (float16 too); precision: gpudml/ops/pooling.py."}[row.function]
    return (f"DML_OPERATOR_{row.enum}: {what}, the window sliding over the spatial axes of x (4-D NCHW or 5-D "
            f"NCDHW). window_size, strides (default 1), start_padding, end_padding (default 0)"
            f"{', dilations (default 1)' if row.dilations else ''}: one int for every spatial axis or one per axis; "
            f"window_size=None: the whole spatial extent (global pooling).{extra} {precision}")


def _functional(row: Row):
    return signature_functional(_signature(row), row.functional_name, _functional_doc(row))


def global_max_pooling(x, *, output_indices=False, device=None):
    """ONNX's GlobalMaxPool as DML_OPERATOR_MAX_POOLING2: the largest element over all of x's
    spatial axes, one per batch and channel (max_pooling with window_size=None)."""
    return Call([("x", x)], {"window_size": None, "output_indices": output_indices}, device)


def global_average_pooling(x, *, device=None):
    """ONNX's GlobalAveragePool as DML_OPERATOR_AVERAGE_POOLING1: the mean over all of x's
    spatial axes, one per batch and channel (average_pooling with window_size=None)."""
    return Call([("x", x)], {"window_size": None}, device)


def global_lp_pooling(x, *, p=2, device=None):
    """ONNX's GlobalLpPool as DML_OPERATOR_LP_POOLING1: (sum |x|^p)^(1/p) over all of x's
    spatial axes, one per batch and channel (lp_pooling with window_size=None)."""
    return Call([("x", x)], {"window_size": None, "p": p}, device)


_GLOBAL = {"MAX": global_max_pooling, "AVERAGE": global_average_pooling, "LP": global_lp_pooling}


# ============================================================================ the reference
def window_elements(x: np.ndarray, window, strides, start_padding, end_padding, dilations):
    """x's window elements: an array [N, C, out..., window positions] (row-major window order),
    the flat input index of each and whether it is an input element (not padding)."""
    spatial = x.ndim - 2
    outs = [output_size(x.shape[i + 2], window[i], strides[i], start_padding[i], end_padding[i], dilations[i])
            for i in range(spatial)]
    if any(o < 1 for o in outs):
        raise ValueError(f"a window larger than the padded input ({list(x.shape)}, window {list(window)})")
    index, valid = [], np.ones([1] * (2 * spatial), dtype=bool)
    for i in range(spatial):
        pos = (np.arange(outs[i])[:, None] * strides[i] - start_padding[i]
               + np.arange(window[i])[None, :] * dilations[i])
        ok = (pos >= 0) & (pos < x.shape[i + 2])
        shape = [1] * (2 * spatial)
        shape[i], shape[spatial + i] = outs[i], window[i]
        index.append(np.clip(pos, 0, x.shape[i + 2] - 1).reshape(shape))
        valid = valid & ok.reshape(shape)
    flat = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    lead = (slice(None), slice(None))
    values = x[lead + tuple(index)]
    flats = flat[lead + tuple(index)]
    valid = np.broadcast_to(valid, values.shape[2:])
    tail = (*x.shape[:2], *outs, -1)
    return values.reshape(tail), flats.reshape(tail), valid.reshape(tail[2:])


def first_max(values, flats, valid):
    """The first maximum of each window's input elements (NaN first), its element and flat index."""
    with np.errstate(invalid="ignore"):
        if values.dtype.kind == "f":
            v = values.astype(np.float64)
            nan = np.isnan(v) & valid
            score = np.where(valid & ~np.isnan(v), v, -np.inf)
            top = score.max(axis=-1, keepdims=True)
            pick = np.where(nan.any(axis=-1, keepdims=True), nan, valid & (score == top))
        else:
            low = np.iinfo(values.dtype).min
            score = np.where(valid, values, low)
            pick = valid & (score == score.max(axis=-1, keepdims=True))
    first = np.argmax(pick, axis=-1)[..., None]
    return np.take_along_axis(values, first, -1)[..., 0], np.take_along_axis(flats, first, -1)[..., 0]


def _reference(row: Row, x, window_size=None, *, strides=None, start_padding=None, end_padding=None, dilations=None,
               output_indices=False, include_padding=False, p=2):
    x = np.asarray(x)
    spatial = x.ndim - 2
    if spatial < 1:
        raise ValueError(f"x of shape {list(x.shape)}: pooling needs [N, C, spatial...]")
    window = tuple(x.shape[2:]) if window_size is None else per_axis(window_size, spatial, "window_size", 1, "ref")
    st = per_axis(strides, spatial, "strides", 1, "reference")
    a = per_axis(start_padding, spatial, "start_padding", 0, "reference")
    b = per_axis(end_padding, spatial, "end_padding", 0, "reference")
    d = per_axis(dilations if row.dilations else None, spatial, "dilations", 1, "reference")
    values, flats, valid = window_elements(x, window, st, a, b, d)
    if row.function == "MAX":
        y, index = first_max(values, flats, valid)
        kind = _indices_type(output_indices, row.functional_name) if row.indices else None
        return y if kind is None else (y, index.astype(kind.numpy))
    with np.errstate(all="ignore"):
        v = np.where(valid, values.astype(np.float64), 0.0)
        if row.function == "AVERAGE":
            divisor = valid.shape[-1] if include_padding else valid.sum(axis=-1)
            y = v.sum(axis=-1) / divisor
        else:
            y = (np.abs(v) ** int(p)).sum(axis=-1) ** (1.0 / int(p))
        return y.astype(x.dtype)


# ============================================================================ precision
UNIT, TINY = 2.0**-24, 2.0**-126
_F32_MAX = float(np.finfo(np.float32).max)


def _ulp32(y) -> np.ndarray:
    return np.spacing(np.minimum(np.abs(y), _F32_MAX).astype(np.float32)).astype(np.float64)


def _tolerance(row: Row, expected: np.ndarray, inputs, arguments: dict):
    """The documented precision (module docstring), per element; None (bit-exact) for MAX."""
    if row.function == "MAX":
        return None
    x = np.asarray(inputs[0])
    spatial = x.ndim - 2
    window = tuple(x.shape[2:]) if arguments.get("window_size") is None else per_axis(
        arguments["window_size"], spatial, "window_size", 1, "tolerance")
    st = per_axis(arguments.get("strides"), spatial, "strides", 1, "tolerance")
    a = per_axis(arguments.get("start_padding"), spatial, "start_padding", 0, "tolerance")
    b = per_axis(arguments.get("end_padding"), spatial, "end_padding", 0, "tolerance")
    d = per_axis(arguments.get("dilations") if row.dilations else None, spatial, "dilations", 1, "tolerance")
    values, _, valid = window_elements(x, window, st, a, b, d)
    with np.errstate(all="ignore"):
        v = np.where(valid, np.abs(values.astype(np.float64)), 0.0)
        n = valid.sum(axis=-1)
        if row.function == "AVERAGE":
            divisor = valid.shape[-1] if arguments.get("include_padding") else n
            total = v.sum(axis=-1)
            y = np.where(valid, values.astype(np.float64), 0.0).sum(axis=-1) / divisor
            e = (1.01 * (n + 1) * UNIT * total + TINY * (n + 1)) / divisor
            e = np.where(total > _F32_MAX, np.inf, e)
        else:
            p = int(arguments.get("p", 2))
            terms = v**p
            total = terms.sum(axis=-1)
            term_ulps = 0.0 if p == 1 else 0.5 if p == 2 else pow_ulps(v, float(p))
            term_error = (term_ulps * _ulp32(terms) * valid).sum(axis=-1)
            y = total ** (1.0 / p)
            relative = np.where(total > 0, (term_error + 1.01 * (n + 1) * UNIT * total) / np.where(total > 0, total, 1),
                                0.0)
            root_ulps = 0.0 if p == 1 else 5.0 if p == 2 else pow_ulps(total, 1.0 / p) + 3.0
            e = y * relative / p + root_ulps * _ulp32(y) + (n * TINY) ** (1.0 / p)
            e = np.where(~np.isfinite(total) | (total > _F32_MAX), np.inf, e)
        e = e + 0.5 * _ulp32(y)
        if expected.dtype == np.float16:
            e = e + np.spacing(np.minimum(np.abs(y), 65504).astype(np.float16)).astype(np.float64)
        e = np.where(np.abs(y) + e >= float(np.finfo(expected.dtype).max), np.inf, np.nan_to_num(e, nan=np.inf))
    return np.broadcast_to(e, expected.shape)


def _sample(row: Row, desc, rng) -> list:
    """MAX: random bits (NaN, infinities and -0.0 included: a selection is bit-exact on
    them); AVERAGE and LP: uniform values in [-1, 1]."""
    td = desc.input_tensor
    if row.function == "MAX":
        raw = rng.integers(0, 256, size=td.required_elements * td.data_type.size, dtype=np.uint8)
        return [raw.view(td.data_type.numpy)]
    return [rng.uniform(-1.0, 1.0, td.required_elements).astype(td.data_type.numpy)]


def _traffic(desc) -> int:
    """The input and every output element once (windows that overlap read no more)."""
    tds = [desc.input_tensor, desc.output_tensor, getattr(desc, "output_indices_tensor", None)]
    return sum(t.element_count * t.data_type.size for t in tds if t is not None)


# ============================================================================ the planner's problem
def problem(desc) -> Problem:
    row = desc.ROW
    return Problem(row.op, row.function, desc.input_tensor, desc.output_tensor,
                   getattr(desc, "output_indices_tensor", None), desc.window_size, desc.strides, desc.start_padding,
                   desc.effective_dilations, bool(getattr(desc, "include_padding", False)), int(getattr(desc, "p", 2)))


PLANNER = ProblemPlanner(problem, family.FAMILY)


# ============================================================================ the command line
def _cli_args(row: Row) -> tuple:
    args = (CliArg("--window", "the window per spatial axis, comma-separated (default 3 per axis)"),
            CliArg("--strides", "the window's strides per spatial axis (default 1)"),
            CliArg("--pads", "start and end padding, one value for every spatial axis (default 0)"))
    if row.dilations:
        args += (CliArg("--dilations", "dilations per spatial axis (default 1)"),)
    if row.indices:
        args += (CliArg("--indices", "none, uint32 or uint64: the optional indices output", "str"),)
    if row.extra == "include_padding":
        args += (CliArg("--include-padding", "1: the padding counts in the divisor", "number"),)
    if row.extra == "p":
        args += (CliArg("--p", "P (default 2)", "number"),)
    return args


def _from_cli(row: Row, infer):
    def build(x: TensorDesc, o: dict):
        spatial = max(0, x.rank - 2)
        pad = int(o["pads"][0]) if o.get("pads") else 0
        kwargs = {"strides": o.get("strides") or None, "start_padding": pad, "end_padding": pad}
        if row.dilations:
            kwargs["dilations"] = o.get("dilations") or None
        if row.indices:
            kwargs["output_indices"] = {"none": False, "": False}.get((o.get("indices") or "none").lower(),
                                                                        o.get("indices"))
        if row.extra == "include_padding":
            kwargs["include_padding"] = bool(o.get("include_padding") or 0)
        if row.extra == "p":
            kwargs["p"] = int(o["p"]) if o.get("p") is not None else 2
        return infer(x, o.get("window") or (3,) * spatial, **kwargs)
    return build


# ============================================================================ the specs
def spec(row: Row) -> OpSpec:
    desc = _desc_class(row)
    support = support_table(row.op, row.tensors, row.support)

    def infer(x, window_size=None, **kwargs):
        return _infer(row, desc, x, window_size, **kwargs)

    def ref(x, window_size=None, **kwargs):
        return _reference(row, x, window_size, **kwargs)

    ref.__name__ = ref.__qualname__ = row.functional_name
    ref.__signature__ = _signature(row)
    ref.__doc__ = (f"DML_OPERATOR_{row.enum} on numpy arrays ({row.functional_name}'s arguments), in float64 and "
                   f"rounded once to x's type (MAX: the element itself).")
    newest = row.functional_name in ("max_pooling", "average_pooling", "lp_pooling")
    return OpSpec(
        name=row.op, key=row.key, desc=desc, support=support,
        infer_output=infer, validate=lambda d, level: validate(row, support, d, level),
        reference=ref, functional=_functional(row), tensors=("x",), arguments=lambda d: _arguments(row, d),
        planner=PLANNER,
        cli=Cli(_cli_args(row), _from_cli(row, infer), "--shape 8,64,56,56 --window 3,3 --strides 2,2"),
        page=f"DML_{row.enum}_OPERATOR_DESC", aliases=(_GLOBAL[row.function],) if newest else (),
        tolerance=None if row.function == "MAX" else (lambda e, i, a: _tolerance(row, e, i, a)),
        traffic=_traffic, sample=lambda d, rng: _sample(row, d, rng),
    )


SPECS = tuple(spec(row) for row in TABLE)
(MaxPoolingOperatorDesc, MaxPooling1OperatorDesc, MaxPooling2OperatorDesc, AveragePoolingOperatorDesc,
 AveragePooling1OperatorDesc, LpPoolingOperatorDesc, LpPooling1OperatorDesc) = (s.desc for s in SPECS)
__all__ = ["SPECS", "TABLE", "global_average_pooling", "global_lp_pooling", "global_max_pooling"]
