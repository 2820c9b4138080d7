"""The numpy-level API (API.md section 1), for every operator alike.

Each operator's public function (declared in its ops module, e.g. `ops.slice1.slice`)
hands its tensor arguments and attributes to `call`: numpy in -> numpy out, Tensor in ->
Tensor out (no readback). A call is keyed by its input descs and arguments, so a repeated
call neither rebuilds nor revalidates its desc: the compiled operator is cached per Device,
here (the runtime knows nothing of the functional API).
"""

from __future__ import annotations

import enum
import functools
import threading
import weakref
from collections import OrderedDict

import numpy as np

from .errors import InvalidArgumentError
from .tensor_desc import MAX_DIMENSIONS, TensorDesc
from .types import DataType

#: Compiled operators kept per Device for repeated calls.
CACHE_SIZE = 256
_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def call(spec, device, inputs: list[tuple], **attributes):
    """Run `spec`'s operator on `inputs` with `attributes` (the functional arguments that
    `spec.infer_output` takes). `inputs` are (argument name, numpy array or Tensor), or
    (name, value, convert) where `convert` turns a value that is not a Tensor into the
    numpy array to send, in the desc's input order; an argument of `spec.tensor_lists`
    holds a list of them (each its own input). The first tensor decides what comes back:
    a Tensor in gives Tensors out (numpy inputs beside it are uploaded), numpy in gives
    numpy out; an operator with several outputs returns them as its desc groups them
    (SPLIT: a list). An Expression among the inputs records a graph node instead
    (graph.record): nothing runs."""
    flat, counts = expand(spec, inputs)
    graph = _graph()
    if any(isinstance(item[1], graph.Expression) for item in flat):
        return graph.record(spec, device, inputs, attributes)
    Device, Tensor, default_device = _runtime()
    fn = spec.functional_name
    if device is None:
        device = next((item[1].device for item in flat if isinstance(item[1], Tensor)), None) or default_device()
    elif not isinstance(device, Device):
        raise InvalidArgumentError(f"{fn}: device must be a gpudml.Device or None, got {type(device).__name__}")
    resident = isinstance(flat[0][1], Tensor)
    values, descs = [], []
    for item in flat:
        name, value = item[0], item[1]
        if isinstance(value, Tensor):
            if value.device is not device and not device.shares_memory_with(value.device):
                raise InvalidArgumentError(
                    f"{fn}: {name} lives on {value.device.adapter_name}, device is {device.adapter_name}")
            desc = value.desc
        else:
            if len(item) > 2:
                value = item[2](value)
            value = checked_array(value, f"{fn}: {name}")
            desc = TensorDesc(DataType.from_numpy(value.dtype), value.shape)
            if resident:
                value = device.tensor(value)  # Tensor in -> Tensor out: everything stays on the GPU
        values.append(value)
        descs.append(desc)
    compiled = _compiled(device, spec, descs, counts, attributes)
    return compiled.grouped(compiled.execute(values))


def expand(spec, items: list[tuple]) -> tuple[list[tuple], list[int | None]]:
    """(one item per tensor, counts): an argument of `spec.tensor_lists` (a list or tuple
    of tensors) becomes one item per element, named `name[i]` (with the argument's
    convert, if any); `counts` holds, per argument, None (one tensor) or its list's
    length. InvalidArgumentError for a list argument that is not a non-empty list."""
    flat, counts = [], []
    for item in items:
        name, value = item[0], item[1]
        if name not in spec.tensor_lists:
            flat.append(item)
            counts.append(None)
            continue
        if not isinstance(value, (list, tuple)):
            raise InvalidArgumentError(f"{spec.functional_name}: {name} must be a list of numpy arrays, Tensors or "
                                       f"Expressions, got {type(value).__name__}")
        if not value:
            raise InvalidArgumentError(f"{spec.functional_name}: {name} is an empty list; it takes at least one tensor")
        flat += [(f"{name}[{i}]", v, *item[2:]) for i, v in enumerate(value)]
        counts.append(len(value))
    return flat, counts


def group(values: list, counts: list[int | None]) -> list:
    """Per-tensor `values` (expand's order) back into one value per argument: a list for a
    list argument (what infer_output takes)."""
    out, k = [], 0
    for count in counts:
        out.append(values[k] if count is None else list(values[k:k + count]))
        k += 1 if count is None else count
    return out


@functools.cache
def _graph():
    """gpudml.graph, imported on first use (it imports the runtime)."""
    from . import graph

    return graph


@functools.cache
def _runtime():
    """(Device, Tensor, default_device): imported on first use (the runtime imports the
    operator modules, which import this module)."""
    from .runtime import Device, Tensor, default_device

    return Device, Tensor, default_device


def checked_array(x, where: str) -> np.ndarray:
    """`x` as a numpy array of a DirectML type, native byte order, 1..8 dimensions, not
    empty; InvalidArgumentError naming `where` otherwise."""
    from .runtime.tensor import native_array

    x = native_array(x, where)
    if not 1 <= x.ndim <= MAX_DIMENSIONS:
        raise InvalidArgumentError(
            f"{where} has {x.ndim} dimensions (shape {list(x.shape)}); DirectML tensors have 1..{MAX_DIMENSIONS}")
    if x.size == 0:
        raise InvalidArgumentError(f"{where} has shape {list(x.shape)}; every size must be >= 1")
    return x


def _compiled(device, spec, descs: list[TensorDesc], counts: list, attributes: dict):
    """The compiled operator of this call, from the device's cache when the call was seen."""
    try:  # an operator's functional form passes its attributes in one order: values suffice
        key = (spec.key, tuple(counts), *descs, *map(_freeze, attributes.values()))
    except _Uncacheable:
        key = None
    with _CACHES_LOCK:
        cache = _CACHES.get(device)
        if cache is None:
            cache = _CACHES[device] = OrderedDict()
        compiled = cache.get(key) if key is not None else None
        if compiled is not None:
            cache.move_to_end(key)
            return compiled
    compiled = device.compile_operator(device.create_operator(spec.infer_output(*group(descs, counts), **attributes)))
    if key is not None:
        with _CACHES_LOCK:
            cache[key] = compiled
            while len(cache) > CACHE_SIZE:
                cache.popitem(last=False)
    return compiled


_INT = frozenset([int])


class _Uncacheable(Exception):
    pass


def _freeze(value):
    """A hashable stand-in for an argument that equals another's only when both build the
    same desc (so 1.0 never hits the entry built for 1, nor -0.0 the one for 0.0)."""
    kind = type(value)
    if kind is int or value is None or kind is TensorDesc:
        return value
    if kind in (list, tuple):
        if _INT.issuperset(map(type, value)):  # (the usual list of ints, at once)
            return tuple(value)
        return tuple(_freeze(v) for v in value)
    if kind is float:
        return ("float", value.hex())
    if kind is str or isinstance(value, enum.Enum):
        return (kind.__name__, str(value))
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.dtype):
        return ("dtype", value.str)
    raise _Uncacheable
