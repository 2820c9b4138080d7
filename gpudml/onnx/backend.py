"""ONNX's backend interface (`onnx.backend.base.Backend`) over gpudml's InferenceSession
(API.md section 16): `prepare`, `run_model`, `run_node`, `supports_device`, `is_compatible`,
as module functions (how ONNX's backend test runner takes a backend) and as the class
`GpudmlBackend`.

    import gpudml.onnx.backend as backend
    rep = backend.prepare(model)             # an InferenceSession inside a BackendRep
    outputs = rep.run([x])                   # inputs by position (or a dict by name)
    backend.run_node(node, [x, y])           # one node, as a model of its own

The device: ONNX's runner names "CPU" and "CUDA". gpudml runs every model on a gpudml
Device, whatever the string: "CPU" (and "GPU") run on gpudml's default Device (the adapter
GPUDML_ADAPTER or the system picks: a software adapter on a machine with no GPU), and a
gpudml.Device given as `device` runs there; "CUDA" is not supported (gpudml runs on
Vulkan, Metal, D3D12 and OpenGL, never CUDA), so the runner skips its CUDA tests.
`tests/test_onnx_backend.py` runs ONNX's runner over the node tests of the pinned onnx
release (docs/onnx.md gives the figures).
"""

from __future__ import annotations

import keyword

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, namedtupledict

from ..device import Device
from ..errors import InvalidArgumentError
from . import analysis
from .session import InferenceSession, load_model

#: ONNX's device strings gpudml runs (on its Device, whatever the string names).
DEVICES = ("CPU", "GPU")


class GpudmlBackendRep(BackendRep):
    """A prepared model: `run(inputs)` gives its outputs, in the model's order, as a
    namedtuple of numpy arrays (by position and by output name)."""

    def __init__(self, session: InferenceSession):
        self.session = session
        self._names = [a.name for a in session.get_inputs()]
        self._outputs = [a.name for a in session.get_outputs()]

    def run(self, inputs, **kwargs) -> tuple:
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            inputs = list(inputs)
            if len(inputs) != len(self._names):
                raise InvalidArgumentError(f"gpudml.onnx.backend: the model takes {len(self._names)} inputs "
                                           f"({', '.join(map(repr, self._names))}), given {len(inputs)}")
            feeds = dict(zip(self._names, inputs))
        # (a sequence is a list of arrays, an empty optional None: given as they are)
        outputs = self.session.run(None, {k: v if isinstance(v, (list, tuple)) or v is None else np.asarray(v)
                                          for k, v in feeds.items()})
        fields = [_field(n, k) for k, n in enumerate(self._outputs)]
        if len(set(fields)) < len(fields):
            fields = [f"output_{k}" for k in range(len(fields))]
        return namedtupledict("Outputs", fields)(*outputs)


class GpudmlBackend(Backend):
    """onnx.backend.base.Backend on gpudml (the module's functions are its class methods)."""

    @classmethod
    def is_compatible(cls, model, device: str = "CPU", **kwargs) -> bool:
        """True where gpudml runs every node of `model` (the analysis InferenceSession makes
        at construction finds nothing to refuse) on `device`."""
        if not cls.supports_device(device):
            return False
        proto = load_model(model, "gpudml.onnx.backend.is_compatible")
        opset = max((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), default=0)
        initializers = {t.name for t in proto.graph.initializer}
        inputs = [v.name for v in proto.graph.input if v.name not in initializers]
        problems, _ = analysis.analyze(proto.graph, opset, initializers, inputs)
        return not problems

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs) -> GpudmlBackendRep:
        """`model` (an onnx.ModelProto, bytes or a path) as an InferenceSession on `device`
        ("CPU"/"GPU": gpudml's default Device; or a gpudml.Device); `kwargs` go to
        InferenceSession (fuse, sess_options, build_cache_size, ...)."""
        return GpudmlBackendRep(InferenceSession(model, device=_device(device, "prepare"), **kwargs))

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs) -> tuple:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs, device="CPU", outputs_info=None, **kwargs) -> tuple:
        """`node` run on `inputs` (numpy arrays, by position; None for an omitted optional
        input), as a model of its own at opset `kwargs["opset_version"]` (default: the
        newest onnx knows); `outputs_info` ((dtype, shape) per output) types the outputs
        where shape inference cannot."""
        if not isinstance(node, onnx.NodeProto):
            raise InvalidArgumentError(f"gpudml.onnx.backend.run_node: node must be an onnx.NodeProto, got "
                                       f"{type(node).__name__}")
        opset = int(kwargs.pop("opset_version", onnx.defs.onnx_opset_version()))
        if isinstance(inputs, dict):
            inputs = [inputs.get(name) if name else None for name in node.input]
        inputs = list(inputs)
        if len(inputs) > len(node.input):
            raise InvalidArgumentError(f"gpudml.onnx.backend.run_node: {node.op_type} has {len(node.input)} inputs, "
                                       f"given {len(inputs)}")
        graph_inputs, feeds = [], {}
        for name, value in zip(node.input, inputs):
            if not name or value is None:
                continue
            value = np.asarray(value)
            graph_inputs.append(onnx.helper.make_tensor_value_info(
                name, onnx.helper.np_dtype_to_tensor_dtype(value.dtype), list(value.shape)))
            feeds[name] = value
        outputs = []
        for k, name in enumerate(n for n in node.output if n):
            if outputs_info is not None and k < len(outputs_info):
                dtype, shape = outputs_info[k]
                outputs.append(onnx.helper.make_tensor_value_info(
                    name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), list(shape)))
            else:
                outputs.append(onnx.helper.make_empty_tensor_value_info(name))
        model = onnx.helper.make_model(onnx.helper.make_graph([node], f"run_node_{node.op_type}", graph_inputs,
                                                              outputs),
                                       opset_imports=[onnx.helper.make_opsetid(node.domain or "", opset)])
        return cls.prepare(model, device, **kwargs).run(feeds)

    @classmethod
    def supports_device(cls, device) -> bool:
        """"CPU" and "GPU" (gpudml's default Device) and a gpudml.Device; not "CUDA"."""
        if isinstance(device, Device):
            return True
        return str(device).split(":")[0].upper() in DEVICES


def _device(device, where: str) -> Device | None:
    if isinstance(device, Device):
        return device
    if not GpudmlBackend.supports_device(device):
        raise InvalidArgumentError(f"gpudml.onnx.backend.{where}: device {device!r} is not one gpudml runs on "
                                   f"(\"CPU\" or \"GPU\": gpudml's default Device, or a gpudml.Device; gpudml "
                                   f"never runs on CUDA)")
    return None  # the session's default Device


def _field(name: str, k: int) -> str:
    """A namedtuple field for output `name` (an identifier), else its position."""
    return name if name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_") else f"output_{k}"


is_compatible = GpudmlBackend.is_compatible
prepare = GpudmlBackend.prepare
run_model = GpudmlBackend.run_model
run_node = GpudmlBackend.run_node
supports_device = GpudmlBackend.supports_device

__all__ = ["DEVICES", "GpudmlBackend", "GpudmlBackendRep", "is_compatible", "prepare", "run_model", "run_node",
           "supports_device"]
