"""gpudml: Microsoft DirectML operator semantics on any GPU, through WGSL and wgpu.

The operators' functional forms (`gpudml.slice`, `gpudml.pad`, ...) come from
gpudml/functional.py and their desc classes (`gpudml.Slice1OperatorDesc`, ...) from the
operator specs (gpudml/ops/); graphs (`gpudml.Graph`) from gpudml/graph.py.

`import gpudml` loads only the errors and the version: the rest of the public names (the
registry of 177 operators' specs, the device, numpy) loads on the first use of any of them
(`gpudml.add`, `gpudml.Device`, `from gpudml import Tensor`, `dir(gpudml)`; PEP 562's module
`__getattr__`), all at once, so an `import gpudml` that a program (or a pytest plugin entry
point) does without computing costs what importing a small package does. A submodule
imported directly (`gpudml.onnx`, `gpudml.device`) loads what it needs itself.
"""

from __future__ import annotations

import os
import threading

# (public names: __all__ lists them once the rest is loaded)
from .errors import (  # noqa: F401
    DeviceLostError,
    DMLError,
    GpuError,
    InternalError,
    InvalidArgumentError,
    OutOfBoundsError,
    OutOfMemoryError,
    UnsupportedError,
)
from .version import __version__  # noqa: F401

#: The public names that are not operators or enums (those come from the registry).
_NAMED = [
    "CompiledGraph", "CompiledOperator", "DMLError", "Device", "DeviceLostError",
    "Expression", "FusedActivation", "GpuError", "Graph", "InternalError", "InvalidArgumentError",
    "Kernel", "Operator", "OutOfBoundsError", "OutOfMemoryError", "ScaleBias", "Tensor", "TensorDesc",
    "UnsupportedError", "__version__", "calc_buffer_tensor_size", "default_device", "unpack4",
]
_LOCK = threading.RLock()
_LOADING = threading.local()  # set while this thread runs _load: its imports' own lookups
# (`from . import functional` asks the package for the submodule first) must not load again


def _load() -> None:
    """Import the rest of the public names into this module (once; any thread)."""
    with _LOCK:
        if "__all__" in globals() or getattr(_LOADING, "active", False):
            return
        _LOADING.active = True
        try:
            _import_public_names()
        finally:
            _LOADING.active = False


def _import_public_names() -> None:
    # (imported for what they install: Tensor's and Expression's Python operators and numpy
    # ufuncs, as numpy 2 computes them, `t + 1` is np.add; and their array methods, `t[0]`,
    # `t.sum()`, `t.reshape(...)`)
    from . import python_operators, tensor_methods  # noqa: F401
    from .device import CompiledOperator, Device, Operator, default_device
    from .functional import FUNCTIONS
    from .graph import CompiledGraph, Expression, Graph
    from .kernel import Kernel
    from .ops import EXTENSIONS, SPECS
    from .ops.dequantize import four_values  # (gpudml.unpack4: the values of 4-bit bytes)
    from .ops.elementwise import FusedActivation, ScaleBias
    from .runtime import Tensor
    from .tensor_desc import TensorDesc, calc_buffer_tensor_size
    from .types import ENUMS

    operators = {**FUNCTIONS, **{spec.desc.__name__: spec.desc for spec in (*SPECS, *EXTENSIONS)}}
    named = dict(CompiledGraph=CompiledGraph, CompiledOperator=CompiledOperator, Device=Device,
                 Expression=Expression, FusedActivation=FusedActivation, Graph=Graph, Kernel=Kernel,
                 Operator=Operator, ScaleBias=ScaleBias, Tensor=Tensor, TensorDesc=TensorDesc,
                 calc_buffer_tensor_size=calc_buffer_tensor_size, default_device=default_device,
                 unpack4=four_values, FUNCTIONS=FUNCTIONS, SPECS=SPECS, ENUMS=ENUMS)  # (the last three: not in __all__)
    globals().update(named, **operators)
    globals().update(ENUMS)  # DataType, FeatureLevel, ReduceFunction, ... (every enum of types.py)
    globals()["__all__"] = _NAMED + list(ENUMS) + list(operators)


def _submodule(name: str) -> bool:
    """Whether `name` is one of the package's modules (`from . import compiler` asks the package
    for it before importing it: that lookup must not load the public names)."""
    return any(os.path.exists(os.path.join(path, name + suffix)) for path in __path__ for suffix in (".py", ""))


def __getattr__(name: str):
    if (name.startswith("__") and name != "__all__") or _submodule(name):  # __path__, __wrapped__, ...
        raise AttributeError(f"module 'gpudml' has no attribute {name!r}")
    _load()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module 'gpudml' has no attribute {name!r}") from None


def __dir__() -> list[str]:
    _load()
    return sorted(set(globals()) | set(globals()["__all__"]))
