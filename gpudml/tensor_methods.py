"""numpy's and PyTorch's array methods on Tensors and Expressions, computed by gpudml's
operators on the GPU (docs/using.md has the table: each method, its numpy meaning, how gpudml
computes it, view or copy).

- **Views** (`reshape`, `T`, `transpose`, `squeeze`, `expand_dims`/`unsqueeze`, `expand`,
  basic indexing whose window starts at the first element, `flatten` of a packed tensor): the
  same buffer read through another TensorDesc (sizes and non-negative strides, 0 for a
  broadcast); a Tensor's view is `Tensor.with_desc` (it keeps the buffer's owner alive), an
  Expression's `Graph.view`. No kernel runs.
- **Copies**: what a TensorDesc cannot express (a window that starts past the first
  element, a negative step) is DML_OPERATOR_SLICE1 (`gpudml.slice`); a reshape that no
  strides express is a packed copy (SLICE1 of the whole tensor) re-described; integer-array
  indexing is DML_OPERATOR_GATHER; `astype` is DML_OPERATOR_CAST; the reductions are
  DML_OPERATOR_REDUCE, ARGMAX and ARGMIN.
- `__float__`, `__int__`, `__bool__`, `__index__`, `item` and `tolist` read a Tensor back
  (they are host values by definition); an Expression has no values to give.

A Tensor or an Expression has 1 to 8 dimensions (DirectML's): where numpy gives a 0-d result
(`t[0]` of a 1-D tensor, a reduction of every axis) gpudml gives shape (1,), as the reducing
functional forms' keepdims=False does. The functional forms are looked up in the registry
(gpudml.functional.FUNCTIONS) when a method runs, as python_operators.py does.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from . import functional, promotion
from .errors import InvalidArgumentError, OutOfBoundsError, UnsupportedError
from .graph import Expression
from .runtime import Tensor
from .tensor_desc import MAX_DIMENSIONS, TensorDesc, as_int_tuple, packed_strides, view_strides
from .types import DataType

F64, I64, U64 = DataType.FLOAT64, DataType.INT64, DataType.UINT64
#: The types numpy's sum and prod give each integer type (the platform's int64/uint64).
WIDENED = {DataType.INT8: I64, DataType.INT16: I64, DataType.INT32: I64,
           DataType.UINT8: U64, DataType.UINT16: U64, DataType.UINT32: U64}


# ---------------------------------------------------------------------------- shared pieces
def _where(x, method: str) -> str:
    return f"{type(x).__name__}.{method}"


def _data_type(x) -> DataType:
    return x.desc.data_type


def _form(name: str):
    return functional.FUNCTIONS[name]


def _check_sizes(sizes, where: str) -> tuple[int, ...]:
    """`sizes` of a result: 1..8 dimensions (0-d becomes (1,)), every size at least 1."""
    sizes = tuple(sizes) or (1,)
    if len(sizes) > MAX_DIMENSIONS:
        raise UnsupportedError(f"{where}: the result would have {len(sizes)} dimensions (shape {list(sizes)}); "
                               f"DirectML tensors have 1..{MAX_DIMENSIONS}")
    if 0 in sizes:
        raise UnsupportedError(f"{where}: the result would be empty (shape {list(sizes)}); DirectML tensors have "
                               f"no size 0")
    return sizes


def _view(x, sizes, strides, where: str):
    """`x`'s buffer read through `sizes` and `strides` (None: packed): no copy, no kernel."""
    sizes = _check_sizes(sizes, where)
    if strides is not None:
        strides = tuple(strides) or (0,)
        if all(s == p for n, s, p in zip(sizes, strides, packed_strides(sizes)) if n > 1):
            strides = None  # (a packed layout is described as one: the same compiled operators)
    if isinstance(x, Expression):
        return x.graph.view(x, sizes, strides)
    return x.with_desc(TensorDesc(x.desc.data_type, sizes, strides))


def _fresh(result, sizes, where: str):
    """A kernel's new packed result described with `sizes` (the same element count): a
    Tensor's desc replaced (only this call holds it: it stays the buffer's owner), an
    Expression viewed."""
    if isinstance(result, Expression):
        return _view(result, sizes, None, where)
    result.desc = TensorDesc(result.desc.data_type, _check_sizes(sizes, where))
    return result


def _packed(x):
    """`x` itself where packed, else its elements copied into a packed tensor (SLICE1 of
    the whole tensor: data movement, bit-exact for every type)."""
    if x.desc.is_packed:
        return x
    sizes = list(x.desc.sizes)
    return _form("slice")(x, [0] * len(sizes), sizes)


def _reshaped(x, sizes, where: str):
    """`x` with `sizes` (the same element count): a view where strides express it, else a
    packed copy re-described."""
    desc = x.desc
    if desc.is_packed:
        return _view(x, sizes, None, where)
    strides = view_strides(desc.sizes, desc.effective_strides, sizes)
    if strides is not None:
        return _view(x, sizes, strides, where)
    return _fresh(_packed(x), sizes, where)


def _axis(axis, rank: int, where: str, field: str = "axis") -> int:
    """One axis as numpy takes it (negative from the end); numpy's AxisError otherwise."""
    if isinstance(axis, (bool, np.bool_)):
        raise InvalidArgumentError(f"{where}: {field} must be an integer, got {axis!r}")
    try:
        a = operator.index(axis)
    except TypeError:
        raise InvalidArgumentError(f"{where}: {field} must be an integer, got {axis!r}") from None
    if not -rank <= a < rank:
        raise OutOfBoundsError(f"{where}: {field} {a} is out of bounds for array of dimension {rank}")
    return a % rank


def _axes(axis, rank: int, where: str) -> tuple[int, ...]:
    """numpy's `axis` of a reduction: None (every axis), an int or a tuple of ints, each once."""
    if axis is None:
        return tuple(range(rank))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(_axis(a, rank, where) for a in items)
    if len(set(axes)) != len(axes):
        raise InvalidArgumentError(f"{where}: duplicate value in 'axis' ({axis!r})")
    return axes


def _shape_args(args, where: str) -> tuple:
    """`reshape(2, 3)` and `reshape((2, 3))` alike (numpy's and PyTorch's spellings)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return as_int_tuple(args, f"{where}: shape")


def _check_keepdims(keepdims, where: str) -> bool:
    if not isinstance(keepdims, (bool, np.bool_)):
        raise InvalidArgumentError(f"{where}: keepdims must be True or False, got {keepdims!r}")
    return bool(keepdims)


def _check_out(out, where: str) -> None:
    if out is not None:
        raise InvalidArgumentError(f"{where}: out must be None (gpudml's methods return a new Tensor), got "
                                   f"{type(out).__name__}")


# ---------------------------------------------------------------------------- shape methods
def reshape(self, *shape, order="C"):
    """numpy's `reshape` (PyTorch's too): one size may be -1 (inferred). A view where the
    layout allows it (always for a packed tensor), else a packed copy (SLICE1) re-described."""
    where = _where(self, "reshape")
    if order != "C":
        raise InvalidArgumentError(f"{where}: order must be 'C' (gpudml tensors are row-major), got {order!r}")
    return _reshaped(self, _new_shape(self, _shape_args(shape, where), where), where)


def _new_shape(x, shape: tuple, where: str) -> tuple:
    size = x.desc.element_count
    unknown = [i for i, n in enumerate(shape) if n == -1]
    if len(unknown) > 1:
        raise InvalidArgumentError(f"{where}: can only specify one unknown dimension (shape {list(shape)})")
    for i, n in enumerate(shape):
        if n < -1:
            raise InvalidArgumentError(f"{where}: shape[{i}] = {n} must be >= -1 (shape {list(shape)})")
    known = math.prod(n for n in shape if n != -1)
    if unknown and known and size % known == 0:
        shape = tuple(size // known if n == -1 else n for n in shape)
    if math.prod(shape) != size or -1 in shape:
        raise InvalidArgumentError(f"{where}: cannot reshape array of size {size} into shape {tuple(shape)}")
    return shape


def view(self, *shape):
    """PyTorch's `view(*shape)`: `reshape` that never copies; InvalidArgumentError where no
    strides express the new shape (use `reshape`, which copies then)."""
    where = _where(self, "view")
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int, np.integer)):
        raise UnsupportedError(f"{where}: {shape[0]!r} is not a shape; gpudml does not reinterpret a tensor's "
                               f"bytes as another dtype (astype converts the values)")
    sizes = _new_shape(self, _shape_args(shape, where), where)
    desc = self.desc
    strides = None if desc.is_packed else view_strides(desc.sizes, desc.effective_strides, sizes)
    if strides is None and not desc.is_packed:
        raise InvalidArgumentError(
            f"{where}: shape {list(sizes)} is not a view of sizes {list(desc.sizes)} with strides "
            f"{list(desc.effective_strides)} (the merged axes are not contiguous); use reshape(), which copies")
    return _view(self, sizes, strides, where)


def transpose(self, *axes):
    """numpy's `transpose(*axes)`: the axes permuted (None or nothing: reversed). A view."""
    where = _where(self, "transpose")
    desc = self.desc
    rank = desc.rank
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    axes = tuple(reversed(range(rank))) if axes is None or axes == () else tuple(
        _axis(a, rank, where, "axes") for a in axes)
    if len(axes) != rank:
        raise InvalidArgumentError(f"{where}: axes don't match array (axes {list(axes)} for {rank} dimensions)")
    if len(set(axes)) != rank:
        raise InvalidArgumentError(f"{where}: repeated axis in transpose (axes {list(axes)})")
    strides = desc.effective_strides
    return _view(self, [desc.sizes[a] for a in axes], [strides[a] for a in axes], where)


def _T(self):
    """numpy's `T`: the axes reversed (a view)."""
    return transpose(self)


def squeeze(self, axis=None):
    """numpy's `squeeze(axis=None)`: the size-1 axes (or those named, each of size 1)
    dropped; shape (1,) where every axis goes. A view."""
    where = _where(self, "squeeze")
    desc = self.desc
    if axis is None:
        drop = {i for i, n in enumerate(desc.sizes) if n == 1}
    else:
        drop = set(_axes(axis, desc.rank, where))
        for a in sorted(drop):
            if desc.sizes[a] != 1:
                raise InvalidArgumentError(
                    f"{where}: cannot select an axis to squeeze out which has size not equal to one (axis {a} has "
                    f"size {desc.sizes[a]}, shape {list(desc.sizes)})")
    kept = [i for i in range(desc.rank) if i not in drop]
    strides = desc.effective_strides
    return _view(self, [desc.sizes[i] for i in kept], [strides[i] for i in kept], where)


def expand_dims(self, axis):
    """numpy's `expand_dims(a, axis)`: size-1 axes inserted at `axis` (an int or a tuple,
    counted in the result's dimensions). A view."""
    where = _where(self, "expand_dims")
    desc = self.desc
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    rank = desc.rank + len(items)
    new = _axes(tuple(items), rank, where)
    sizes, strides = iter(desc.sizes), iter(desc.effective_strides)
    out = [(1, 0) if i in new else (next(sizes), next(strides)) for i in range(rank)]
    return _view(self, [n for n, _ in out], [s for _, s in out], where)


def unsqueeze(self, dim):
    """PyTorch's `unsqueeze(dim)`: one size-1 axis inserted at `dim` (in [-ndim-1, ndim]). A view."""
    return expand_dims(self, dim)


def expand(self, *sizes):
    """PyTorch's `expand(*sizes)`: size-1 axes (and new leading ones) broadcast to `sizes`
    with stride 0; -1 keeps an axis's size. A view: no element is copied."""
    where = _where(self, "expand")
    sizes = _shape_args(sizes, where)
    desc = self.desc
    lead = len(sizes) - desc.rank
    if lead < 0:
        raise InvalidArgumentError(f"{where}: the number of sizes provided ({len(sizes)}) must be greater or equal "
                                   f"to the number of dimensions in the tensor ({desc.rank})")
    out_sizes, out_strides = [], []
    for i, n in enumerate(sizes):
        if i < lead:
            if n < 1:
                raise InvalidArgumentError(f"{where}: the expanded size {n} of new leading dimension {i} must be "
                                           f">= 1 (sizes {list(sizes)})")
            out_sizes.append(n)
            out_strides.append(0)
            continue
        own, stride = desc.sizes[i - lead], desc.effective_strides[i - lead]
        if n == -1 or n == own:
            out_sizes.append(own)
            out_strides.append(stride)
        elif own == 1 and n >= 1:
            out_sizes.append(n)
            out_strides.append(0)
        else:
            raise InvalidArgumentError(
                f"{where}: the expanded size of the tensor ({n}) must match the existing size ({own}) at "
                f"non-singleton dimension {i}. Target sizes: {list(sizes)}. Tensor sizes: {list(desc.sizes)}")
    return _view(self, out_sizes, out_strides, where)


def flatten(self):
    """One axis of every element, in row-major order: a view of a packed tensor, a packed
    copy (SLICE1) of a strided one (PyTorch's flatten; numpy's always copies)."""
    return _reshaped(self, (self.desc.element_count,), _where(self, "flatten"))


def ravel(self, order="C"):
    """numpy's `ravel()`: as `flatten` (a view where it can be one)."""
    if order != "C":
        raise InvalidArgumentError(f"{_where(self, 'ravel')}: order must be 'C', got {order!r}")
    return flatten(self)


def astype(self, dtype, copy=True):
    """numpy's `astype(dtype)`: the elements converted by DML_OPERATOR_CAST (floats to
    integers truncated toward zero and saturated, NaN 0; to floats rounded to nearest even;
    integers to integers wrap; to bool `x != 0`, a bool tensor's 0/1 from UINT8: promotion.cast).
    The same dtype gives a copy (Tensor.copy), or with `copy=False` the tensor itself, as
    numpy's; an Expression is never copied."""
    where = _where(self, "astype")
    if dtype is None:
        raise InvalidArgumentError(f"{where}: dtype: None is not a data type (a numpy dtype, DataType or its name)")
    target = promotion.BOOL if _is_bool_dtype(dtype) else DataType.parse(dtype, f"{where}: dtype").numpy
    if target == promotion.operand_dtype(self):
        return self.copy() if copy and isinstance(self, Tensor) else self
    return promotion.cast(self, target)


def _is_bool_dtype(dtype) -> bool:
    try:
        return not isinstance(dtype, DataType) and np.dtype(dtype) == np.bool_
    except TypeError:
        return False


def _keeps_bool(method):
    """A data-movement method: its result is a bool Tensor or Expression when `self` is one
    (the same UINT8 0/1 elements, moved)."""
    def moved(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        return promotion.mark_bool(result) if promotion.is_bool(self) and result is not self else result
    moved.__name__, moved.__doc__ = method.__name__, method.__doc__
    return moved


# ---------------------------------------------------------------------------- reductions
def _reduce(x, method: str, function: str, axis, keepdims, out, dtype=None, widen=False):
    """REDUCE's `function` over numpy's `axis`, keepdims as numpy's; the input cast to
    `dtype` first (or, with `widen`, integers below 64 bits to INT64/UINT64: numpy's sum)."""
    where = _where(x, method)
    _check_out(out, where)
    keepdims = _check_keepdims(keepdims, where)
    axes = _axes(axis, x.desc.rank, where)
    stays_bool = promotion.is_bool(x) and dtype is None and not widen  # max, min of bools: bools
    if promotion.is_bool(x) and dtype is None and widen:  # numpy: a sum or product of bools is int64
        dtype = I64
    source = _data_type(x)
    target = DataType.parse(dtype, f"{where}: dtype") if dtype is not None else (
        WIDENED.get(source, source) if widen else source)
    if target != source:
        x = _form("cast")(x, target)
    if not axes:  # numpy's axis=(): nothing reduced, the elements in the result's type
        result = x if target != source else astype(x, target)
    else:
        result = _form("reduce")(x, function, list(axes), keepdims=keepdims)
    return promotion.mark_bool(result) if stays_bool else result


def _sum(self, axis=None, dtype=None, out=None, keepdims=False):
    """numpy's `sum`: REDUCE SUM. Integers below 64 bits are summed as INT64/UINT64 (numpy's
    result type: exact, cast first); float16 and float32 keep their type. `dtype` casts first."""
    return _reduce(self, "sum", "sum", axis, keepdims, out, dtype, widen=True)


def _prod(self, axis=None, dtype=None, out=None, keepdims=False):
    """numpy's `prod`: REDUCE MULTIPLY, result types as `sum`'s (wrapping as numpy's do)."""
    return _reduce(self, "prod", "multiply", axis, keepdims, out, dtype, widen=True)


def _mean(self, axis=None, dtype=None, out=None, keepdims=False):
    """numpy's `mean`: REDUCE AVERAGE. float16 and float32 keep their type; integers are
    averaged as FLOAT32 (numpy gives float64, which DirectML's REDUCE and arithmetic lack)."""
    if dtype is None and _data_type(self) not in (DataType.FLOAT32, DataType.FLOAT16, F64):
        dtype = DataType.FLOAT32
    return _reduce(self, "mean", "average", axis, keepdims, out, dtype)


def _max(self, axis=None, out=None, keepdims=False):
    """numpy's `max`: REDUCE MAX in the tensor's type (NaN propagates)."""
    return _reduce(self, "max", "max", axis, keepdims, out)


def _min(self, axis=None, out=None, keepdims=False):
    """numpy's `min`: REDUCE MIN in the tensor's type (NaN propagates)."""
    return _reduce(self, "min", "min", axis, keepdims, out)


def _arg(x, method: str, axis, out, keepdims):
    where = _where(x, method)
    _check_out(out, where)
    keepdims = _check_keepdims(keepdims, where)
    axes = None if axis is None else [_axis(axis, x.desc.rank, where)]
    return _form(method)(x, axes, output_data_type=I64, keepdims=keepdims)


def argmax(self, axis=None, out=None, *, keepdims=False):
    """numpy's `argmax`: ARGMAX, INT64 indices (numpy's intp), the first of equal elements;
    `axis=None` is the flat row-major index."""
    return _arg(self, "argmax", axis, out, keepdims)


def argmin(self, axis=None, out=None, *, keepdims=False):
    """numpy's `argmin`: ARGMIN, as `argmax`."""
    return _arg(self, "argmin", axis, out, keepdims)


# ---------------------------------------------------------------------------- host values
def _one(self, method: str):
    """The single element, read back, as a Python number."""
    if self.desc.element_count != 1:
        raise TypeError(f"{_where(self, method)}: only one-element tensors can be converted to Python scalars "
                        f"(shape {self.shape})")
    return self.numpy().reshape(-1)[0].item()


def item(self, *args):
    """numpy's `item()`: the single element as a Python number (read back); `item(i)` the
    flat element i, `item(i, j, ...)` the element at those coordinates."""
    if not args and self.desc.element_count != 1:
        raise InvalidArgumentError(f"{_where(self, 'item')}: can only convert an array of size 1 to a Python "
                                   f"scalar (shape {self.shape})")
    return self.numpy().item(*args)


def tolist(self):
    """numpy's `tolist()`: the elements read back as nested Python lists."""
    return self.numpy().tolist()


def _float(self):
    return float(_one(self, "__float__"))


def _int(self):
    return int(_one(self, "__int__"))


def _bool(self):
    if self.desc.element_count != 1:
        raise InvalidArgumentError(
            f"{_where(self, '__bool__')}: The truth value of an array with more than one element is ambiguous. Use "
            f"a.any() or a.all() (shape {self.shape})")
    return bool(_one(self, "__bool__"))


def _index(self):
    if self.desc.data_type.is_float or self.desc.element_count != 1:
        raise TypeError(f"{_where(self, '__index__')}: only integer scalar arrays can be converted to a scalar index "
                        f"(a one-element integer tensor; this one is {self.dtype} of shape {self.shape})")
    return int(_one(self, "__index__"))


# ---------------------------------------------------------------------------- indexing
#: numpy's message for an index of no valid kind.
_VALID_INDICES = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean "
                  "arrays are valid indices")
#: The index types of DML_OPERATOR_GATHER; smaller integer index tensors are cast to INT32.
_INDEX_TYPES = frozenset({DataType.INT32, DataType.UINT32, I64, U64})
_NEW, _INT, _SLICE, _ARRAY, _DEVICE = "new", "int", "slice", "array", "device"


def _entry(item, x, where: str) -> tuple:
    """One index of a key, classified: (kind, value)."""
    if item is None:
        return (_NEW, None)
    if item is Ellipsis:
        return (Ellipsis, None)
    if isinstance(item, slice):
        return (_SLICE, item)
    if isinstance(item, (bool, np.bool_)) or (isinstance(item, np.ndarray) and item.dtype == np.bool_
                                                and item.ndim == 0):
        raise UnsupportedError(f"{where}: a bool scalar index ({item!r}) is not supported (numpy reads it as a 0-d "
                               f"mask); use None to insert an axis")
    if isinstance(item, (Tensor, Expression)):
        return (_DEVICE, _device_index(item, x, where))
    if isinstance(item, (int, np.integer)):
        return (_INT, int(item))
    if isinstance(item, (list, tuple, np.ndarray)):
        array = np.asarray(item)
        if array.dtype == np.bool_:
            return ("mask", array)
        if array.size == 0 and array.dtype == np.float64:  # (an empty list: numpy takes it as integers)
            array = array.astype(np.int64)
        if array.dtype.kind not in "iu":
            raise InvalidArgumentError(f"{where}: arrays used as indices must be of integer (or boolean) type, got "
                                       f"{array.dtype}")
        return (_INT, int(array)) if array.ndim == 0 else (_ARRAY, array)
    try:
        return (_INT, operator.index(item))
    except TypeError:
        raise InvalidArgumentError(f"{where}: {_VALID_INDICES}, got {type(item).__name__} {item!r}") from None


def _device_index(index, x, where: str):
    """An index Tensor (of a Tensor) or Expression (of an Expression): integer indices that
    stay on the device, for GATHER."""
    if type(index) is not type(x):
        raise InvalidArgumentError(f"{where}: a device index must be of the indexed value's kind "
                                   f"({type(x).__name__}), got {type(index).__name__}; numpy arrays index both")
    data_type = index.desc.data_type
    if data_type.is_float:
        raise InvalidArgumentError(f"{where}: arrays used as indices must be of integer (or boolean) type, got "
                                   f"{data_type.name}")
    if data_type.size == 1:
        raise UnsupportedError(
            f"{where}: an index {type(x).__name__} of {data_type.name} is refused: gpudml's comparisons give "
            f"{data_type.name} masks, and indexing by a mask on the device has a data-dependent shape. Read a mask "
            f"back (np.asarray(mask).astype(bool)) to index with it; cast integer indices to INT32 or INT64")
    return index


def _entries(x, key, where: str) -> list[tuple]:
    """The key as one entry per result piece: None (a new axis), or one per axis of `x`
    (int, slice, integer array, device index); Ellipsis expanded, masks turned into integer
    arrays (numpy's nonzero, on the host: a mask is host data)."""
    sizes = x.desc.sizes
    raw = [_entry(item, x, where) for item in (key if isinstance(key, tuple) else (key,))]
    if sum(kind is Ellipsis for kind, _ in raw) > 1:
        raise InvalidArgumentError(f"{where}: an index can only have a single ellipsis ('...')")
    used = 0
    for kind, value in raw:
        used += value.ndim if kind == "mask" else kind in (_INT, _SLICE, _ARRAY, _DEVICE)
    if used > len(sizes):
        raise OutOfBoundsError(f"{where}: too many indices for array: array is {len(sizes)}-dimensional, but {used} "
                               f"were indexed")
    fill = [(_SLICE, slice(None))] * (len(sizes) - used)
    at = next((i for i, (kind, _) in enumerate(raw) if kind is Ellipsis), len(raw))
    raw = raw[:at] + fill + raw[at + 1:]
    entries, axis = [], 0
    for kind, value in raw:
        if kind == "mask":
            for j, m in enumerate(value.shape):
                if m != sizes[axis + j]:
                    raise OutOfBoundsError(
                        f"{where}: boolean index did not match indexed array along axis {axis + j}; size of axis is "
                        f"{sizes[axis + j]} but size of corresponding boolean axis is {m}")
            entries += [(_ARRAY, a) for a in np.nonzero(value)]
            axis += value.ndim
        else:
            entries.append((kind, value))
            axis += kind != _NEW
    return entries


class _Basic:
    """Basic indexing of one desc (ints, slices, new axes): the result's sizes, and either
    its view strides (the window starts at element 0, steps a desc can take) or SLICE1's
    window (offsets, sizes, strides: a copy)."""

    def __init__(self, desc: TensorDesc, entries: list[tuple], where: str):
        sizes, strides = desc.sizes, desc.effective_strides
        offsets, window, steps, counts = [], [], [], []
        self.sizes, view = [], []  # the result's sizes; its strides as a view
        self.axes = []  # the result's axis of each entry that keeps one (None for a dropped int)
        axis = 0
        for kind, value in entries:
            if kind == _NEW:
                self.axes.append(len(self.sizes))
                self.sizes.append(1)
                view.append(0)
                continue
            n = sizes[axis]
            if kind == _INT:
                if not -n <= value < n:
                    raise OutOfBoundsError(f"{where}: index {value} is out of bounds for axis {axis} with size {n}")
                start, count, step = value % n, 1, 1
                self.axes.append(None)
            else:
                start, stop, step = value.indices(n) if kind == _SLICE else (0, n, 1)
                count = len(range(start, stop, step))
                self.axes.append(len(self.sizes))
                self.sizes.append(count)
                view.append(strides[axis] * step)
            offsets.append(start + (count - 1) * step if step < 0 else start)
            window.append((count - 1) * abs(step) + 1)
            steps.append(step)
            counts.append(count)
            axis += 1
        _check_sizes(self.sizes, where)
        first = sum(start * s for start, s in zip((o if st > 0 else o + w - 1 for o, w, st in
                                                   zip(offsets, window, steps)), strides))
        self.view = view if first == 0 and all(st > 0 or s == 0 or c == 1 for st, s, c in
                                               zip(steps, strides, counts)) else None
        self.window = (offsets, window, steps)

    def apply(self, x, where: str):
        if self.view is not None:
            return _view(x, self.sizes, self.view, where)
        offsets, window, steps = self.window
        return _fresh(_form("slice")(x, offsets, window, steps), self.sizes, where)


def getitem(self, key):
    """numpy's indexing (`t[0]`, `t[-1]`, `t[:, 1:3]`, `t[::-1]`, `t[..., 0]`, `t[None]`,
    `t[[0, 2]]`, `t[mask]`): basic indexing is a view where the window starts at the first
    element and the steps are positive, else SLICE1; integer arrays (and the nonzero
    coordinates of a numpy boolean mask) are GATHER, as numpy combines them with slices. An
    integer Tensor (of a Tensor) or Expression (of an Expression) index stays on the device:
    GATHER's rules, negative indices counting from the end and out-of-range ones clamped."""
    where = f"{type(self).__name__}[{_key_text(key)}]"
    entries = _entries(self, key, where)
    if not any(kind in (_ARRAY, _DEVICE) for kind, _ in entries):
        return _Basic(self.desc, entries, where).apply(self, where)
    return _advanced(self, entries, where)


def _key_text(key) -> str:
    items = key if isinstance(key, tuple) else (key,)
    def one(item):
        if isinstance(item, slice):
            return ":".join("" if v is None else str(v) for v in (item.start, item.stop, item.step)).rstrip(":") or ":"
        if item is Ellipsis:
            return "..."
        if isinstance(item, (Tensor, Expression)):
            return type(item).__name__
        if isinstance(item, np.ndarray):
            return f"array{list(item.shape)}"
        text = repr(item)
        return text if len(text) <= 30 else text[:26] + " ..."
    return ", ".join(one(i) for i in items)


def _advanced(x, entries: list[tuple], where: str):
    """numpy's advanced indexing: the basic entries applied first (advanced axes kept whole),
    then the advanced axes (integer arrays, and the ints among them, broadcast together)
    merged into one and gathered with their flat indices; the broadcast shape takes their
    place where they are adjacent, else it comes first (numpy's rule)."""
    advanced = [i for i, (kind, _) in enumerate(entries) if kind in (_ARRAY, _DEVICE, _INT)]
    device = [entries[i][1] for i in advanced if entries[i][0] == _DEVICE]
    if device and len(advanced) > 1:
        raise UnsupportedError(f"{where}: a device index ({type(x).__name__}) combines with slices, None and "
                               f"Ellipsis only, not with other integer or array indices")
    basic = _Basic(x.desc, [(_SLICE, slice(None)) if i in advanced else e for i, e in enumerate(entries)], where)
    places = [basic.axes[i] for i in advanced]  # each advanced axis's place in the basic result
    extents = [basic.sizes[p] for p in places]
    if device:
        shape, flat = device[0].desc.sizes, None
    else:
        shape, flat = _flat_indices(x, entries, advanced, extents, where)
    adjacent = places == list(range(places[0], places[0] + len(places)))
    at = places[0] if adjacent else 0
    rest = [n for p, n in enumerate(basic.sizes) if p not in places]
    final = _check_sizes(rest[:at] + list(shape) + rest[at:], where)
    y = basic.apply(x, where)
    if not adjacent:  # the advanced axes first, in order (a view)
        y = transpose(y, places + [p for p in range(len(basic.sizes)) if p not in places])
    merged = rest[:at] + [math.prod(extents)] + rest[at:]
    if len(places) > 1:
        y = _reshaped(y, merged, where)
    count = math.prod(shape)
    lead = [1] * (len(merged) - 1)
    if device:
        indices = _reshaped(device[0], lead + [count], where)
        if indices.desc.data_type not in _INDEX_TYPES:
            indices = _form("cast")(indices, DataType.INT32)
    else:
        indices = flat.reshape(lead + [count])
    return _fresh(_form("gather")(y, indices, at), final, where)


def _flat_indices(x, entries, advanced, extents, where: str):
    """(the broadcast shape of the host indices, their flat indices into the merged axes as
    UINT32); numpy's IndexError for an index out of bounds, its message for shapes that do
    not broadcast."""
    axes = [sum(kind != _NEW for kind, _ in entries[:i]) for i in advanced]  # each one's axis of x
    arrays = []
    for i, axis, n in zip(advanced, axes, extents):
        a = np.asarray(entries[i][1])
        bad = (a < -n) | (a >= n)
        if bad.any():
            raise OutOfBoundsError(f"{where}: index {a[bad].flat[0]} is out of bounds for axis {axis} with size {n}")
        arrays.append(np.where(a < 0, a.astype(np.int64) + n, a).astype(np.int64))
    try:
        arrays = np.broadcast_arrays(*arrays)
    except ValueError:
        listed = " ".join(str(tuple(np.shape(entries[i][1]))) for i in advanced)
        raise OutOfBoundsError(f"{where}: shape mismatch: indexing arrays could not be broadcast together with "
                               f"shapes {listed}") from None
    flat = np.ravel_multi_index(arrays, extents) if len(arrays) > 1 else arrays[0]
    return arrays[0].shape, np.asarray(flat, dtype=np.uint32)


#: Methods for both Tensors and Expressions.
SHARED = {
    **{name: _keeps_bool(method) for name, method in dict(
        __getitem__=getitem, reshape=reshape, view=view, transpose=transpose, squeeze=squeeze,
        expand_dims=expand_dims, unsqueeze=unsqueeze, expand=expand, flatten=flatten, ravel=ravel).items()},
    "T": property(_keeps_bool(_T)), "astype": astype, "sum": _sum, "prod": _prod, "mean": _mean, "max": _max,
    "min": _min, "argmax": argmax, "argmin": argmin,
}
#: Methods for Tensors only: they read values back.
HOST = {"item": item, "tolist": tolist, "__float__": _float, "__int__": _int, "__bool__": _bool,
        "__index__": _index}


def install(cls, methods: dict) -> None:
    for name, method in methods.items():
        setattr(cls, name, method)


install(Tensor, {**SHARED, **HOST})
install(Expression, SHARED)

__all__ = ["HOST", "SHARED", "install"]
