"""gpudml: Microsoft DirectML operator semantics on any GPU, through WGSL and wgpu.

The operators' functional forms (`gpudml.slice`, `gpudml.pad`, ...) come from
gpudml/functional.py and their desc classes (`gpudml.Slice1OperatorDesc`, ...) from the
operator specs (gpudml/ops/); graphs (`gpudml.Graph`) from gpudml/graph.py.
"""

# (Imported for what they install: Tensor's and Expression's Python operators, `t + 1` is
# gpudml.add; and their array methods, `t[0]`, `t.sum()`, `t.reshape(...)`.)
from . import python_operators, tensor_methods  # noqa: F401
from .device import CompiledOperator, Device, Operator, default_device
from .errors import (
    DeviceLostError,
    DMLError,
    GpuError,
    InternalError,
    InvalidArgumentError,
    OutOfBoundsError,
    OutOfMemoryError,
    UnsupportedError,
)
from .functional import FUNCTIONS
from .graph import CompiledGraph, Expression, Graph
from .kernel import Kernel
from .ops import SPECS
from .ops.elementwise import FusedActivation, ScaleBias
from .runtime import Tensor
from .tensor_desc import TensorDesc, calc_buffer_tensor_size
from .types import ENUMS
from .version import __version__

_OPERATORS = {**FUNCTIONS, **{spec.desc.__name__: spec.desc for spec in SPECS}}
globals().update(_OPERATORS)
globals().update(ENUMS)  # DataType, FeatureLevel, ReduceFunction, ... (every enum of types.py)

__all__ = [
    "CompiledGraph", "CompiledOperator", "DMLError", "Device", "DeviceLostError",
    "Expression", "FusedActivation", "GpuError", "Graph", "InternalError", "InvalidArgumentError",
    "Kernel", "Operator", "OutOfBoundsError", "OutOfMemoryError", "ScaleBias", "Tensor", "TensorDesc",
    "UnsupportedError", "__version__", "calc_buffer_tensor_size", "default_device",
]
__all__ += list(ENUMS) + list(_OPERATORS)
