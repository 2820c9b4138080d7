"""Device: an adapter at a feature level (IDMLDevice)."""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict

import numpy as np

from .. import compiler
from ..caps import MIN_FORCED_LIMIT, class_from_env, limits_from_env, parse_class, parse_limit
from ..errors import InvalidArgumentError, UnsupportedError
from ..kernels import templates
from ..ops import spec_for
from ..runtime import profiler
from ..runtime.context import get_context
from ..runtime.guard import gpu_errors, guarded
from ..runtime.tensor import Tensor, host_buffer, native_array
from ..tensor_desc import MAX_DIMENSIONS, TensorDesc, check_tensor_desc
from ..types import HIGHEST_FEATURE_LEVEL, TYPES_11, DataType, FeatureLevel
from . import tuning
from .compiled import CompiledOperator, Operator


class Device:
    """DirectML device semantics on one wgpu adapter.

    `feature_level`: the level descriptions are validated against (default: the
    highest gpudml implements). `adapter`: "vulkan", "gl", or an adapter-name
    substring (default: `GPUDML_ADAPTER`, else hardware, else software Vulkan, else GL).
    `template_path`: folders of WGSL templates searched before GPUDML_TEMPLATE_PATH and
    gpudml's own (a template there shadows the packaged one of the same name).
    `autotune`: time the eligible strategies of each kind of description the first time it
    is compiled and keep the fastest (device/tuning.py; default: GPUDML_AUTOTUNE, off).
    `adapter_class`: "cpu" or "gpu", the family of kernel strategies its operators prefer
    (default: GPUDML_ADAPTER_CLASS, else detected from the adapter: software adapters are
    "cpu"); see docs/using.md, "Kernel strategies and adapters".
    `max_binding_bytes`, `max_buffer_bytes`: lower the storage-binding and buffer limits
    gpudml plans against (default: GPUDML_MAX_BINDING_BYTES, GPUDML_MAX_BUFFER_BYTES, else
    the adapter's own), so that the segmented paths of large tensors run on small ones (a
    tensor above the binding limit is bound in segments, one above the buffer limit lives
    in several buffers); see docs/limits.md.
    """

    def __init__(self, feature_level=None, adapter: str | None = None, *, template_path=None, autotune=None,
                 adapter_class=None, max_binding_bytes=None, max_buffer_bytes=None):
        level = HIGHEST_FEATURE_LEVEL if feature_level is None else FeatureLevel.coerce(feature_level)
        if level > HIGHEST_FEATURE_LEVEL:
            raise InvalidArgumentError(
                f"Device: feature_level {level.name} is above the highest implemented, {HIGHEST_FEATURE_LEVEL.name}")
        self.feature_level = level
        self.template_path = templates.parse_path(template_path, "Device: template_path")
        self.autotune = tuning.enabled(autotune)
        chosen = parse_class(adapter_class, "Device: adapter_class") if adapter_class is not None else class_from_env()
        self._ctx = get_context(adapter)
        binding, buffer = limits_from_env()
        if max_binding_bytes is not None:
            binding = parse_limit(max_binding_bytes, "Device: max_binding_bytes", MIN_FORCED_LIMIT)
        if max_buffer_bytes is not None:
            buffer = parse_limit(max_buffer_bytes, "Device: max_buffer_bytes", MIN_FORCED_LIMIT)
        self._caps = self._ctx.caps.with_class(chosen).with_limits(binding, buffer)
        self._operators: OrderedDict = OrderedDict()  # cached_operator's, most recent last
        self._operators_lock = threading.Lock()
        profiler.profile_process(self._ctx)  # GPUDML_PROFILE=1

    # -- what the device is ------------------------------------------------------------
    @property
    def caps(self):
        """The adapter's Caps, with this device's adapter class."""
        return self._caps

    @property
    def adapter_class(self) -> str:
        """"cpu" or "gpu": the family of kernel strategies this device's operators prefer."""
        return self._caps.adapter_class

    @property
    def adapter_name(self) -> str:
        return self._ctx.caps.name

    @property
    def pipeline_cache_stats(self):
        """Hits, misses and compile seconds of the adapter's pipeline cache."""
        return self._ctx.stats

    def shares_memory_with(self, other: Device) -> bool:
        """True when `other` runs on the same wgpu device (its Tensors are usable here)."""
        return isinstance(other, Device) and other._ctx is self._ctx

    def supports_data_type(self, data_type) -> bool:
        """DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT: every DirectML type moves bit-exactly on every adapter."""
        return DataType.coerce(data_type) in TYPES_11

    # -- operators ---------------------------------------------------------------------
    def create_operator(self, desc) -> Operator:
        """IDMLDevice::CreateOperator: `desc` validated at this device's feature level."""
        spec = spec_for(desc)
        spec.validate(desc, self.feature_level)
        return Operator(self, desc, spec)

    @guarded(lambda self: self._ctx)
    def compile_operator(self, operator: Operator, strategy: str | None = None, *,
                         options: dict | None = None) -> CompiledOperator:
        """IDMLDevice::CompileOperator. `strategy` forces one of the operator's named kernel
        strategies (None: the operator's choice for this adapter; one the description
        cannot use is an InvalidArgumentError listing the eligible ones). `options`: the
        operator's plan knobs, for experiments (Planner.options). With autotuning on and
        neither given, the kind's tuned strategy and options (device/tuning.py)."""
        if not isinstance(operator, Operator) or operator.device is not self:
            raise InvalidArgumentError("compile_operator: expected an Operator created by this device")
        if strategy is not None and not isinstance(strategy, str):
            raise InvalidArgumentError(
                f"compile_operator: strategy must be a strategy name or None, got {type(strategy).__name__}")
        if strategy is None and self.autotune and not options:
            program = compiler.compile(operator.desc, self.caps, template_path=self.template_path,
                                       operation=operator.spec)
            strategy, options = tuning.tuner_for(self._ctx).choose(self, operator, program)
            if options:
                try:
                    return CompiledOperator(self, operator, strategy, options)
                except (InvalidArgumentError, UnsupportedError):
                    options = None  # the kind's tuned options do not fit this description: its strategy's plan
        return CompiledOperator(self, operator, strategy, options)

    def cached_operator(self, key, make, *args) -> CompiledOperator:
        """The compiled operator kept under `key` (any hashable; the functional API's key
        of a call), made by `make(*args)` when it is not kept (or `key` is None: then not
        kept either). The OPERATOR_CACHE_SIZE most recently used ones are kept, so that a
        repeated functional call neither rebuilds nor revalidates its desc."""
        if key is None:
            return make(*args)
        with self._operators_lock:
            compiled = self._operators.get(key)
            if compiled is not None:
                self._operators.move_to_end(key)
                return compiled
        compiled = make(*args)
        with self._operators_lock:
            self._operators[key] = compiled
            while len(self._operators) > OPERATOR_CACHE_SIZE:
                self._operators.popitem(last=False)
        return compiled

    # -- tensors -----------------------------------------------------------------------
    @guarded(lambda self: self._ctx)
    def tensor(self, array, desc: TensorDesc | None = None) -> Tensor:
        """Upload a numpy array. Without `desc` it becomes a packed tensor of its shape;
        with one, the array's elements (C order) are the buffer contents the desc reads. A
        numpy bool array becomes a bool Tensor (`is_bool`: UINT8 0 and 1, as DirectML has
        no bool type)."""
        flag = isinstance(array, (np.ndarray, np.bool_)) and array.dtype == np.bool_
        if flag:
            array = np.asarray(array).astype(np.uint8)
        if desc is None:
            array = native_array(array, "tensor")
            if not 1 <= array.ndim <= MAX_DIMENSIONS:
                raise InvalidArgumentError(
                    f"tensor: a numpy array of {array.ndim} dimensions (shape {list(array.shape)}); "
                    f"DirectML tensors have 1..{MAX_DIMENSIONS}")
            desc = TensorDesc(DataType.from_numpy(array.dtype), array.shape)
        check_tensor_desc("tensor", "desc", desc)
        flat = host_buffer(array, desc, "tensor")
        ctx = self._ctx
        what = f"Device.tensor's {desc.data_type.name} {list(desc.sizes)}"
        t = Tensor(self, ctx.pool.acquire(desc.buffer_bytes, self._caps, what), desc)
        if flat.nbytes < t.nbytes:  # bytes past the data start zeroed, not as the pool left them
            ctx.recorder.record([], clears=[t.buffer])
        ctx.transfers.upload(t.buffer, flat)
        t.is_bool = flag
        return t

    @guarded(lambda self: self._ctx)
    def empty(self, desc: TensorDesc) -> Tensor:
        """A zero-filled tensor for `desc` (an output to execute into)."""
        check_tensor_desc("empty", "desc", desc)
        t = Tensor(self, self._ctx.pool.acquire(desc.buffer_bytes, self._caps,
                                                f"Device.empty's {desc.data_type.name} {list(desc.sizes)}"), desc)
        self._ctx.recorder.record([], clears=[t.buffer])
        return t

    @contextlib.contextmanager
    def batch(self):
        """Submit the work recorded inside the block as one command buffer, at its end (or
        earlier, where the host reads or writes GPU memory). Outside a batch, work is
        recorded the same way and submitted when the host needs a result or a threshold of
        recorded work is crossed (runtime/batching.py)."""
        with gpu_errors(self._ctx):
            self._ctx.recorder.begin_batch()
        try:
            yield self
        finally:
            with gpu_errors(self._ctx):
                self._ctx.recorder.end_batch()

    @contextlib.contextmanager
    def profile(self):
        """`with device.profile() as prof:` times every dispatch this Device records inside the
        block (GPU timestamps; the wall clock, submit to completion, on adapters without
        them): `prof.rows` (operator, strategy, dispatch, gpu_ms, bytes, clock), and
        `prof.summary()`. Each dispatch gets a compute pass of its own meanwhile."""
        prof = profiler.Profile(self)
        recorder = self._ctx.recorder
        with gpu_errors(self._ctx):
            recorder.profiler.attach(prof)
        try:
            yield prof
        finally:
            with gpu_errors(self._ctx):
                recorder.profiler.detach(prof)

    @guarded(lambda self: self._ctx)
    def synchronize(self) -> None:
        """Submit the recorded work and block, on the calling thread, until all submitted GPU
        work has finished."""
        self._ctx.recorder.flush()
        self._ctx.wait_idle()

    def __repr__(self) -> str:
        return f"Device({self.adapter_name!r}, feature_level={self.feature_level.name})"


#: Compiled operators a Device keeps for repeated functional calls (Device.cached_operator).
OPERATOR_CACHE_SIZE = 256

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
