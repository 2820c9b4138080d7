"""The numpy-level API: every operator's functional form, derived from
its spec.

An operator module declares its functional form's signature and docstring as a function
that returns a `Call` (ops/spec.py); `public` wraps it into the public function
(`gpudml.slice`, `gpudml.pad`, ...), which hands the call to `call`: numpy in -> numpy
out, Tensor in -> Tensor out (no readback), an Expression in -> a graph node recorded
(graph.record) and nothing run. A call is keyed by its input descs and arguments, so that a
repeated call neither rebuilds nor revalidates its desc: the Device keeps the compiled
operators (Device.cached_operator).
"""

from __future__ import annotations

import dataclasses
import enum
import functools

import numpy as np

from .device import Device, default_device
from .errors import InvalidArgumentError
from .graph import Expression, record
from .ops import EXTENSIONS, SPECS
from .ops.spec import Call, OpSpec, flat_tensors, grouped_outputs, one_by_one_outputs, per_argument
from .runtime import Tensor
from .runtime.tensor import checked_array
from .tensor_desc import TensorDesc
from .types import DataType


def public(spec: OpSpec, signature) -> callable:
    """The public function of `signature` (spec.functional or one of its aliases): its
    name, signature and docstring, running the Call it returns."""
    @functools.wraps(signature)
    def function(*args, **kwargs):
        c = signature(*args, **kwargs)
        return call(spec, c.device, c.tensors, c.attributes, c.keepdims)
    return function


def call(spec: OpSpec, device, tensors: list[tuple], attributes: dict, keepdims=True):
    """Run `spec`'s operator on `tensors` (a Call's) with `attributes` (infer_output's
    keywords). The first tensor decides what comes back: a Tensor in gives Tensors out
    (numpy inputs beside it are uploaded), numpy in gives numpy out, and so does a call of
    no tensor (a generator's: FILL_VALUE_CONSTANT, on the default device unless given); an operator with
    several outputs returns them as its desc groups them (SPLIT: a list). An Expression
    among the inputs records a graph node instead (graph.record): nothing runs.
    `keepdims=False` (a reducing operator's: its desc has `axes`): the result without the
    reduced axes (`without_reduced_axes`)."""
    if keepdims is not True:
        _check_keepdims(spec, keepdims)  # (before any work, as every argument is)
    flat, counts = flat_tensors(spec, tensors)
    found = None  # the first Tensor among the inputs
    resident = True  # every input a Tensor
    for item in flat:
        kind = type(item[1])
        if kind is Tensor:
            if found is None:  # (not `found or ...`: a Tensor's truth value is its element's, as numpy's)
                found = item[1]
        elif kind is Expression:
            result = record(spec, device, tensors, attributes)
            return result if keepdims else without_reduced_axes(result, result.graph.nodes[result.node].desc.axes)
        else:
            resident = False
    fn = spec.functional_name
    if device is None:
        device = found.device if found is not None else default_device()
    elif not isinstance(device, Device):
        raise InvalidArgumentError(f"{fn}: device must be a gpudml.Device or None, got {type(device).__name__}")
    if resident and flat:  # the device-resident call: Tensors in, Tensors out, nothing to convert
        values = [item[1] for item in flat]
        for name_value, value in zip(flat, values):
            _check_device(fn, name_value[0], value, device)
        compiled = _compiled(device, spec, [t.desc for t in values], counts, attributes)
        result = compiled.grouped(compiled.run(values))
        return result if keepdims else without_reduced_axes(result, compiled.desc.axes)
    tensor_out = bool(flat) and type(flat[0][1]) is Tensor  # (no tensor in, a generator's call: numpy out)
    if any(isinstance(item[1], np.ndarray) and item[1].size == 0 for item in flat):
        return _with_empty(spec, device, flat, counts, attributes, keepdims, tensor_out)
    values, descs = [], []
    for item in flat:
        name, value = item[0], item[1]
        if type(value) is Tensor:
            _check_device(fn, name, value, device)
            desc = value.desc
        else:
            if len(item) > 2:
                value = item[2](value)
            value = checked_array(value, f"{fn}: {name}")
            desc = TensorDesc(DataType.from_numpy(value.dtype), value.shape)
            if tensor_out:
                value = device.tensor(value)  # Tensor in -> Tensor out: everything stays on the GPU
        values.append(value)
        descs.append(desc)
    compiled = _compiled(device, spec, descs, counts, attributes)
    outputs = compiled.execute(values)
    if not flat:  # a generator's call (no tensor in): its results read back, as numpy in gives numpy out
        outputs = _read_back(outputs)
    result = compiled.grouped(outputs)
    return result if keepdims else without_reduced_axes(result, compiled.desc.axes)


def _check_device(fn: str, name: str, tensor: Tensor, device: Device) -> None:
    """InvalidArgumentError where argument `name`, a Tensor, lives on another device."""
    if tensor.device is not device and not device.shares_memory_with(tensor.device):
        raise InvalidArgumentError(
            f"{fn}: {name} lives on {tensor.device.adapter_name}, device is {device.adapter_name}")


def _with_empty(spec: OpSpec, device: Device, flat: list, counts: list, attributes: dict, keepdims, tensor_out: bool):
    """A call with an empty numpy input (a size of 0), as DirectML's execution provider
    handles one: DirectML's sizes are at least 1 (its descriptions stay that strict), so the
    layer above runs no operator. The call is validated as any call, on stand-in descs whose
    empty sizes read 1 (types, ranks, attributes, feature level), and its result is the
    operator's reference on the host: an empty result (an element-wise operator, a slice,
    a join's empty part left out) with no dispatch, a reduction over an empty set its
    identity (0 for sums, 1 for products, -inf/+inf or the type's extreme for max/min).
    What has no result (an arg-reduction over an empty set) is an InvalidArgumentError. A
    Tensor in gives a Tensor out, which cannot be empty."""
    fn = spec.functional_name
    arrays, descs = [], []
    for item in flat:
        name, value = item[0], item[1]
        if type(value) is Tensor:
            _check_device(fn, name, value, device)
            array, desc = value.numpy(), value.desc
        else:
            array = checked_array(item[2](value) if len(item) > 2 else value, f"{fn}: {name}", empty=True)
            desc = TensorDesc(DataType.from_numpy(array.dtype), [max(1, n) for n in array.shape])
        arrays.append(array)
        descs.append(desc)
    desc = spec.infer_output(*per_argument(descs, counts), **attributes)
    device.create_operator(desc)  # every rule of the operator's page, as for any call
    empty = ", ".join(f"{item[0]} has shape {list(np.shape(a))}" for item, a in zip(flat, arrays) if a.size == 0)
    try:
        with np.errstate(all="ignore"):
            result = spec.reference(*per_argument(arrays, counts), **attributes)
    except ValueError as exc:
        raise InvalidArgumentError(f"{fn}: {empty}: {exc}") from None
    results = one_by_one_outputs(desc, result)
    if tensor_out:
        if any(np.size(r) == 0 for r in results):
            raise InvalidArgumentError(f"{fn}: {empty}, and the result is empty: a Tensor cannot be (DirectML sizes "
                                       f"are at least 1); pass numpy arrays for a numpy result")
        results = [device.tensor(np.asarray(r)) for r in results]
    result = grouped_outputs(desc, results)
    return result if keepdims else without_reduced_axes(result, desc.axes)
def _read_back(tensors: list) -> list[np.ndarray]:
    """Output Tensors as numpy arrays, the Tensors freed."""
    arrays = [t.numpy() for t in tensors]
    for t in tensors:
        t.free()
    return arrays


def _check_keepdims(spec: OpSpec, keepdims) -> None:
    fn = spec.functional_name
    if not isinstance(keepdims, (bool, np.bool_)):
        raise InvalidArgumentError(f"{fn}: keepdims must be True or False, got {keepdims!r}")
    if "axes" not in {f.name for f in dataclasses.fields(spec.desc)}:
        raise InvalidArgumentError(f"{fn}: keepdims=False is for the reducing operators (reduce, argmax, argmin)")


def without_reduced_axes(result, axes):
    """`result` (a numpy array, Tensor or Expression: a reducing operator's packed output)
    without the size-1 `axes`, as numpy's keepdims=False gives it: a reshape of the same
    elements, no copy and no kernel. A numpy result of every axis reduced is 0-d; a Tensor
    or an Expression keeps one axis of size 1 (DirectML tensors have 1..8 dimensions)."""
    kept = tuple(n for i, n in enumerate(result.shape) if i not in axes)
    if isinstance(result, np.ndarray):
        return result.reshape(kept)
    kept = kept or (1,)
    if isinstance(result, Expression):
        return result.graph.redescribe(result, kept)
    result.desc = TensorDesc(result.desc.data_type, kept)  # (a new Tensor: only this call holds it)
    return result


def _compiled(device: Device, spec: OpSpec, descs: list[TensorDesc], counts: list, attributes: dict):
    """The compiled operator of this call, from the device's cache when the call was seen."""
    try:  # an operator's functional form passes its attributes in one order: values suffice
        key = (spec.key, tuple(counts), *descs, *map(_freeze, attributes.values()))
    except _Uncacheable:
        key = None
    return device.cached_operator(key, _compile, device, spec, descs, counts, attributes)


def _compile(device: Device, spec: OpSpec, descs: list[TensorDesc], counts: list, attributes: dict):
    """The compiled operator of a call the device's cache does not keep."""
    desc = spec.infer_output(*per_argument(descs, counts), **attributes)
    return device.compile_operator(device.create_operator(desc))


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


#: Every operator's functional form and its aliases, by name: what gpudml exports.
FUNCTIONS = {f.__name__: public(spec, f) for spec in (*SPECS, *EXTENSIONS) for f in (spec.functional, *spec.aliases)}

__all__ = ["Call", "FUNCTIONS", "call", "public"]
