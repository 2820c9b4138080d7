"""Device: an adapter at a feature level (IDMLDevice)."""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict

from ..errors import InvalidArgumentError
from ..ops import module_for
from ..tensor_desc import MAX_DIMENSIONS, TensorDesc, check_tensor_desc
from ..types import HIGHEST_FEATURE_LEVEL, TYPES_11, DataType, FeatureLevel
from .compiled import CompiledOperator, Operator
from .context import get_context
from .guard import gpu_errors, guarded
from .tensor import Tensor, host_buffer, native_array

COMPILED_CACHE_SIZE = 256


class Device:
    """DirectML device semantics on one wgpu adapter.

    `feature_level`: the level descriptions are validated against (default: the
    highest gpudml implements). `adapter`: "vulkan", "gl", or an adapter-name
    substring (default: `GPUDML_ADAPTER`, else hardware, else software Vulkan, else GL).
    """

    def __init__(self, feature_level=None, adapter: str | None = None):
        level = HIGHEST_FEATURE_LEVEL if feature_level is None else FeatureLevel.coerce(feature_level)
        if level > HIGHEST_FEATURE_LEVEL:
            raise InvalidArgumentError(
                f"Device: feature_level {level.name} is above the highest implemented, {HIGHEST_FEATURE_LEVEL.name}")
        self.feature_level = level
        self._ctx = get_context(adapter)
        self._compiled: OrderedDict = OrderedDict()
        self._compiled_lock = threading.Lock()

    # -- what the device is ------------------------------------------------------------
    @property
    def caps(self):
        return self._ctx.caps

    @property
    def adapter_name(self) -> str:
        return self._ctx.caps.name

    @property
    def pipeline_cache_stats(self):
        """Hits, misses and compile seconds of the adapter's pipeline cache."""
        return self._ctx.stats

    def supports_data_type(self, data_type) -> bool:
        """DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT: every DirectML type moves bit-exactly on every adapter."""
        return DataType.coerce(data_type) in TYPES_11

    # -- operators ---------------------------------------------------------------------
    def create_operator(self, desc) -> Operator:
        module = module_for(desc)
        module.validate(desc, self.feature_level)
        return Operator(self, desc, module)

    @guarded(lambda self: self._ctx)
    def compile_operator(self, operator: Operator) -> CompiledOperator:
        if not isinstance(operator, Operator) or operator.device is not self:
            raise InvalidArgumentError("compile_operator: expected an Operator created by this device")
        return CompiledOperator(self, operator)

    def _run(self, key, build_desc, inputs):
        """The functional API's path: compile `build_desc()` once per call key (None: no
        caching), then execute."""
        compiled = None
        if key is not None:
            with self._compiled_lock:
                compiled = self._compiled.get(key)
                if compiled is not None:
                    self._compiled.move_to_end(key)
        if compiled is None:
            compiled = self.compile_operator(self.create_operator(build_desc()))
            if key is not None:
                with self._compiled_lock:
                    self._compiled[key] = compiled
                    while len(self._compiled) > COMPILED_CACHE_SIZE:
                        self._compiled.popitem(last=False)
        return compiled.execute(inputs)

    # -- tensors -----------------------------------------------------------------------
    @guarded(lambda self: self._ctx)
    def tensor(self, array, desc: TensorDesc | None = None) -> Tensor:
        """Upload a numpy array. Without `desc` it becomes a packed tensor of its shape;
        with one, the array's elements (C order) are the buffer contents the desc reads."""
        if desc is None:
            array = native_array(array, "tensor")
            if not 1 <= array.ndim <= MAX_DIMENSIONS:
                raise InvalidArgumentError(
                    f"tensor: a numpy array of {array.ndim} dimensions (shape {list(array.shape)}); "
                    f"DirectML tensors have 1..{MAX_DIMENSIONS}")
            desc = TensorDesc(DataType.from_numpy(array.dtype), array.shape)
        check_tensor_desc("tensor", "desc", desc)
        flat = host_buffer(array, desc, "tensor")
        memory = self._ctx.memory
        t = Tensor(self, memory.acquire(desc.buffer_bytes), desc)
        if flat.nbytes < t.nbytes:  # bytes past the data start zeroed, not as the pool left them
            memory.record([], clears=[t.buffer])
        memory.upload(t.buffer, flat)
        return t

    @guarded(lambda self: self._ctx)
    def empty(self, desc: TensorDesc) -> Tensor:
        """A zero-filled tensor for `desc` (an output to execute into)."""
        check_tensor_desc("empty", "desc", desc)
        t = Tensor(self, self._ctx.memory.acquire(desc.buffer_bytes), desc)
        self._ctx.memory.record([], clears=[t.buffer])
        return t

    @contextlib.contextmanager
    def batch(self):
        """Record every execute inside the block into one command buffer, submitted once at
        the end (or earlier, when the host reads or writes GPU memory)."""
        with gpu_errors(self._ctx):
            self._ctx.memory.begin_batch()
        try:
            yield self
        finally:
            with gpu_errors(self._ctx):
                self._ctx.memory.end_batch()

    @guarded(lambda self: self._ctx)
    def synchronize(self) -> None:
        """Submit anything batched and block until all submitted GPU work has finished."""
        self._ctx.memory.flush()
        self._ctx.wait_idle()

    def __repr__(self) -> str:
        return f"Device({self.adapter_name!r}, feature_level={self.feature_level.name})"


_DEFAULT: Device | None = None
_DEFAULT_LOCK = threading.Lock()


def default_device() -> Device:
    """The process-wide Device (default adapter, highest feature level), made on first use
    (and again after its device was lost)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None or _DEFAULT._ctx.lost:
            _DEFAULT = Device()
        return _DEFAULT
