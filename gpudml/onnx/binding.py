"""IOBinding: a session's inputs and outputs bound to gpudml Tensors, which stay on the device
(onnxruntime's IOBinding, API.md section 16).

`bind_input(name, tensor)` keeps the Tensor and reads it at each run; a numpy array is
uploaded once, when bound. `bind_cpu_input(name, array)` keeps the array and uploads it at
each run. `bind_output(name)` asks for an output, given back by `get_outputs()` as a new
Tensor per run; `bind_output(name, tensor)` has each run write it into that Tensor (one GPU
copy). So the outputs of one run bound as the inputs of the next move no byte through the
host (a transformer's KV cache). Everything a binding holds is checked against the model when
bound and again when it runs, before any GPU work: an InvalidArgumentError names the input or
output and the rule.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..errors import InvalidArgumentError
from ..runtime.tensor import Tensor
from . import analysis

#: onnxruntime's device types: bind_output(name, "cuda") is accepted and means the session's
#: device (outputs are gpudml Tensors wherever they are bound).
DEVICE_TYPES = ("cpu", "cuda", "dml", "webgpu", "gpudml", "gpu")


class IOBinding:
    """Inputs and outputs of one InferenceSession bound to Tensors (session.io_binding())."""

    def __init__(self, session):
        self._session_ref = weakref.ref(session)
        self._inputs: dict[str, Tensor | np.ndarray] = {}  # Tensors, and bind_cpu_input's arrays
        self._outputs: dict[str, Tensor | None] = {}  # None: a new Tensor per run
        self._results: list[Tensor] = []
        self._shapes: list[tuple] = []  # the results' ONNX shapes (a rank-0 output: (), its Tensor [1])

    # -- binding ------------------------------------------------------------------------
    def bind_input(self, name: str, value, *ort_args) -> None:
        """Bind input `name` to a gpudml Tensor (read at each run, never copied) or a numpy
        array (uploaded now, once). onnxruntime's form with a raw device pointer
        (name, device_type, device_id, element_type, shape, buffer_ptr) is refused."""
        session = self._session("bind_input")
        if ort_args or isinstance(value, str):
            raise InvalidArgumentError(f"IOBinding.bind_input: input {name!r}: gpudml binds a gpudml Tensor or a numpy "
                                       f"array, not onnxruntime's (device_type, device_id, element_type, shape, "
                                       f"buffer_ptr) raw pointer")
        if isinstance(value, Tensor):
            self._inputs[self._check_tensor(session, name, value, "bind_input")] = value
            return
        array = self._check_array(session, name, value, "bind_input")
        self._inputs[name] = session.device.tensor(array.reshape(array.shape or (1,)))

    def bind_cpu_input(self, name: str, array) -> None:
        """Bind input `name` to a numpy array, kept and uploaded at each run (as onnxruntime's
        bind_cpu_input, it reads what the array holds then)."""
        session = self._session("bind_cpu_input")
        self._inputs[name] = self._check_array(session, name, array, "bind_cpu_input", empty_ok=True)

    def bind_ortvalue_input(self, name: str, value) -> None:
        """onnxruntime's name for bind_input with a value: the same (a Tensor or a numpy array)."""
        self.bind_input(name, value)

    def bind_output(self, name: str, tensor=None, device_id: int = 0, element_type=None, shape=None,
                    buffer_ptr=None) -> None:
        """Ask for output `name`: a new Tensor per run, or written into `tensor` (a gpudml
        Tensor of the output's dtype and shape). onnxruntime's device type in its place
        ("cuda", "cpu", ...) is accepted: outputs are gpudml Tensors on the session's device
        either way (`copy_outputs_to_cpu()` reads them back); a raw `buffer_ptr` is refused."""
        session = self._session("bind_output")
        if buffer_ptr is not None:
            raise InvalidArgumentError(f"IOBinding.bind_output: output {name!r}: gpudml writes into a gpudml Tensor "
                                       f"(bind_output(name, tensor)), not into a raw buffer_ptr")
        if isinstance(tensor, str):
            if tensor.lower() not in DEVICE_TYPES:
                raise InvalidArgumentError(f"IOBinding.bind_output: output {name!r}: unknown device type {tensor!r} "
                                           f"(accepted: {', '.join(map(repr, DEVICE_TYPES))}, or a gpudml Tensor)")
            tensor = None
        spec = session._value(name, output=True)
        if spec is None:
            raise InvalidArgumentError(f"IOBinding.bind_output: the model has no output {name!r} (its outputs: "
                                       f"{', '.join(repr(o.name) for o in session.get_outputs())})")
        if tensor is not None:
            if not isinstance(tensor, Tensor):
                raise InvalidArgumentError(f"IOBinding.bind_output: output {name!r}: a preallocated output must be a "
                                           f"gpudml Tensor, got {type(tensor).__name__}")
            self._check_tensor(session, name, tensor, "bind_output", output=True)
        self._outputs[name] = tensor

    def bind_ortvalue_output(self, name: str, tensor) -> None:
        """onnxruntime's name for bind_output with a preallocated value: the same."""
        self.bind_output(name, tensor)

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results, self._shapes = [], []

    def synchronize_inputs(self) -> None:
        """Wait for the device (inputs bound as Tensors are written by recorded GPU work)."""
        self._session("synchronize_inputs").device.synchronize()

    def synchronize_outputs(self) -> None:
        """Wait for the device: the last run's outputs are written when this returns."""
        self._session("synchronize_outputs").device.synchronize()

    # -- results ------------------------------------------------------------------------
    def get_outputs(self) -> list[Tensor]:
        """The last run's outputs, in the order they were bound: gpudml Tensors on the device
        (a preallocated one is that Tensor; a rank-0 output is a Tensor of shape [1])."""
        return list(self._results)

    def copy_outputs_to_cpu(self) -> list[np.ndarray]:
        """The last run's outputs read back as numpy arrays, in the order they were bound."""
        return [t.numpy().reshape(shape) for t, shape in zip(self._results, self._shapes)]

    # -- what the session's run_with_iobinding asks ---------------------------------------
    def _prepare(self, session) -> tuple[list, tuple, list[str]]:
        """(the values of the model's inputs in its order: Tensors, or numpy arrays to upload;
        the key of their ONNX shapes; the output names bound), all checked again, no GPU work."""
        owner = self._session_ref()
        if owner is not session:
            raise InvalidArgumentError("InferenceSession.run_with_iobinding: the binding belongs to "
                                       + ("a session that is gone" if owner is None else "another session")
                                       + "; bind with this session's io_binding()")
        values, key = [], []
        for name in session._input_names:
            value = self._inputs.get(name)
            if value is None:
                arg = next(a for a in session.get_inputs() if a.name == name)
                raise InvalidArgumentError(f"InferenceSession.run_with_iobinding: input {name!r} is not bound "
                                           f"({arg.type} {arg.shape}); bind_input it first")
            if isinstance(value, Tensor):
                key.append(self._check_tensor(session, name, value, "run_with_iobinding", shape_only=True))
            else:
                key.append(tuple(value.shape))
                value = value.astype(np.uint8) if value.dtype == np.bool_ else value
                value = value.reshape(value.shape or (1,))
            values.append(value)
        if not self._outputs:
            raise InvalidArgumentError("InferenceSession.run_with_iobinding: no output is bound; bind_output(name) "
                                       "the outputs wanted")
        return values, tuple(key), list(self._outputs)

    def _check_built(self, shapes: dict[str, tuple]) -> None:
        """The preallocated outputs against the output shapes of this run (before it runs)."""
        for name, tensor in self._outputs.items():
            if tensor is None:
                continue
            if tensor.buffer is None:
                raise InvalidArgumentError(f"InferenceSession.run_with_iobinding: the Tensor bound to output "
                                           f"{name!r} was freed")
            want = shapes[name] or (1,)
            if tuple(tensor.shape) != tuple(want):
                raise InvalidArgumentError(f"InferenceSession.run_with_iobinding: output {name!r} has shape "
                                           f"{list(shapes[name])} for these inputs; the Tensor bound to it has "
                                           f"{list(tensor.shape)}")

    def _finish(self, names: list[str], results: list[Tensor], shapes: dict[str, tuple]) -> None:
        kept = []
        for name, t in zip(names, results):
            target = self._outputs[name]
            if target is not None:
                target.copy_from(t)
                t.free()
                t = target
            kept.append(t)
        self._results, self._shapes = kept, [shapes[name] for name in names]

    # -- checks -------------------------------------------------------------------------
    def _session(self, where: str):
        session = self._session_ref()
        if session is None:
            raise InvalidArgumentError(f"IOBinding.{where}: the binding's session is gone (a binding is used with "
                                       f"the session whose io_binding() made it, while it lives)")
        return session

    def _check_array(self, session, name: str, value, where: str, empty_ok: bool = False) -> np.ndarray:
        """`value` as a numpy array fitting input `name`; an empty one only with `empty_ok`
        (bind_cpu_input: kept on the host, as session.run takes it, e.g. a decoder's empty past
        key/value at its first step; a Tensor is never empty)."""
        spec = self._input(session, name, where)
        array = np.asarray(value)
        self._check_like(name, array.dtype, tuple(array.shape), spec, where, empty_ok=empty_ok)
        return array

    def _check_tensor(self, session, name: str, t: Tensor, where: str, output: bool = False,
                      shape_only: bool = False):
        """`name` if Tensor `t` fits input (or output) `name`; the ONNX shape it stands for
        with `shape_only` (a rank-0 value's Tensor has shape [1])."""
        spec = session._value(name, output=True) if output else self._input(session, name, where)
        what = "output" if output else "input"
        prefix = _prefix(where)
        if not isinstance(t, Tensor):
            raise InvalidArgumentError(f"{prefix}: {what} {name!r}: expected a gpudml Tensor or a numpy array, got "
                                       f"{type(t).__name__}")
        if t.buffer is None:
            raise InvalidArgumentError(f"{prefix}: the Tensor bound to {what} {name!r} was freed")
        if not session.device.shares_memory_with(t.device):
            raise InvalidArgumentError(f"{prefix}: {what} {name!r}: the Tensor lives on {t.device.adapter_name}, the "
                                       f"session's device is {session.device.adapter_name}; copy it over with "
                                       f"session.device.tensor(t.numpy())")
        if not t.desc.is_packed:
            raise InvalidArgumentError(f"{prefix}: {what} {name!r}: the Tensor is a strided view ({t.desc!r}); the "
                                       f"model's tensors are packed (bind a packed Tensor)")
        dtype, dims = spec
        shape = tuple(t.shape)
        if dims is not None and len(dims) == 0 and shape == (1,):
            shape = ()
        self._check_like(name, t.dtype, shape, spec, where, what)
        return shape if shape_only else name

    @staticmethod
    def _input(session, name: str, where: str):
        spec = session._value(name)
        if spec is None:
            prefix = _prefix(where)
            raise InvalidArgumentError(f"{prefix}: the model has no input {name!r} (its inputs: "
                                       f"{', '.join(repr(a.name) for a in session.get_inputs())})")
        return spec

    @staticmethod
    def _check_like(name: str, dtype, shape: tuple, spec, where: str, what: str = "input",
                    empty_ok: bool = False) -> None:
        want, dims = spec
        prefix = _prefix(where)
        if np.dtype(dtype) != want:
            raise InvalidArgumentError(f"{prefix}: {what} {name!r} has dtype {np.dtype(dtype)}, the model's is {want} "
                                       f"(of shape {dims}); nothing is cast")
        problem = analysis.shape_error(what, name, shape, dims)
        if problem:
            raise InvalidArgumentError(f"{prefix}: {problem}")
        if 0 in shape and not empty_ok:
            raise InvalidArgumentError(f"{prefix}: {what} {name!r} is an empty tensor (shape {list(shape)}); "
                                       f"a Tensor has sizes of at least 1; bind_cpu_input takes an empty array")


def _prefix(where: str) -> str:
    """What opens a message: the binding's method, or the session's run."""
    return "InferenceSession.run_with_iobinding" if where == "run_with_iobinding" else f"IOBinding.{where}"


__all__ = ["IOBinding"]
