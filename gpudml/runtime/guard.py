"""wgpu's exceptions, translated at the runtime boundary into gpudml errors.

Every public runtime entry point (Device, CompiledOperator.execute, Tensor reads) runs
its wgpu calls inside `gpu_errors(ctx)`. A user then sees a DMLError that names the
adapter and says what to do, never a bare wgpu traceback (wgpu's exception stays
attached as __cause__):

- the device is lost (wgpu says "device is lost", or the context was marked lost
  before): DeviceLostError. The context is marked lost and dropped from the shared
  table, so a new `Device()` (and `default_device()`) opens a fresh wgpu device;
- wgpu ran out of memory (a GPUOutOfMemoryError, or what wgpu-native reports as a
  validation error reading "Not enough memory left": lavapipe's failed allocation):
  OutOfMemoryError. Allocations name themselves (`out_of_memory`, called by the pool and
  the transfers with the bytes and what they were for);
- any other wgpu error (a validation error means a gpudml bug): GpuError.

gpudml's own errors and non-wgpu exceptions pass through unchanged.
"""

from __future__ import annotations

import contextlib
import functools

from ..errors import DeviceLostError, DMLError, GpuError, OutOfMemoryError
from . import adapters

#: What wgpu's messages say when an allocation failed (wgpu-core's DeviceError::OutOfMemory
#: reads "Not enough memory left."; wgpu-native reports it under any error type).
_MEMORY_MARKERS = ("not enough memory", "out of memory", "outofmemory")
_LOST_MARKERS = ("device is lost", "device lost", "devicelost", "device was lost", "device has been lost")


def is_lost_message(text: str) -> bool:
    text = text.lower()
    return any(marker in text for marker in _LOST_MARKERS)


def is_out_of_memory(exc: BaseException) -> bool:
    """Did wgpu (or the driver under it) fail for lack of memory?"""
    text = str(exc).lower()
    return type(exc).__name__ == "GPUOutOfMemoryError" or any(marker in text for marker in _MEMORY_MARKERS)


def out_of_memory(ctx, exc: BaseException, nbytes: int | None = None, what: str = "",
                  during: str = "") -> OutOfMemoryError:
    """The OutOfMemoryError of a failed allocation of `nbytes` for `what` (unknown: None),
    naming the device's limits and what gpudml holds on it."""
    caps = ctx.caps
    if nbytes is not None:
        asked = f"allocating {nbytes} bytes ({_mib(nbytes)}) for {what or 'a buffer'}"
    else:
        asked = f"while it ran {during}" if during else "on an allocation wgpu made"
    pool = getattr(ctx, "pool", None)
    held = ""
    if pool is not None:
        count, lent = pool.lent_totals()
        held = (f"; gpudml holds {lent} bytes ({_mib(lent)}) in {count} buffer{'s' if count != 1 else ''} lent to "
                f"Tensors and compiled operators, and {pool.pooled_bytes} idle bytes in its pool")
    return OutOfMemoryError(
        f"gpudml: {caps.name} ran out of memory {asked} (wgpu: {_reason(str(exc))}). The device allows buffers of "
        f"at most {caps.max_buffer_size} bytes (max-buffer-size; larger tensors are split) and bindings of at most "
        f"{caps.max_storage_binding_size} bytes (max-storage-buffer-binding-size); its memory is the limit here"
        f"{held}. Free the Tensors you no longer need (Tensor.free(), or drop them) or work on smaller pieces "
        f"(a smaller batch), then call again: the device stays usable")


def _mib(nbytes: int) -> str:
    """Bytes as a reader counts them: KiB, MiB or GiB."""
    for unit, shift in (("GiB", 30), ("MiB", 20)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.1f} {unit}"
    return f"{nbytes / 1024:.1f} KiB"


def is_wgpu_error(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] == "wgpu"


def lost_error(ctx, detail: str = "", during: str = "") -> DeviceLostError:
    why = f" ({_reason(detail)})" if detail else ""
    when = f" while it ran {during}" if during else ""
    return DeviceLostError(
        f"gpudml: the GPU device on {ctx.caps.name} was lost{when}{why}. Its Tensors and compiled operators "
        f"are gone: create a new gpudml.Device (or call gpudml.default_device() again) to continue. "
        f"If this keeps happening, the driver may be broken; {adapters.INSTALL_HINT}")


def translate(ctx, exc: BaseException, during: str = "") -> DMLError:
    """The gpudml error for a wgpu exception raised by a call on `ctx`'s device; `during`
    says what the call was running where that is not the caller's own work (a submission
    of recorded work: "the work recorded by Slice1 (2 dispatches)")."""
    text = str(exc)
    if ctx.lost or is_lost_message(text):
        ctx.mark_lost(text)
        return lost_error(ctx, ctx.lost_reason or text, during)
    where = f" while it ran {during}" if during else ""
    if is_out_of_memory(exc):
        return out_of_memory(ctx, exc, during=during)
    return GpuError(f"gpudml: {ctx.caps.name} reported an error gpudml did not expect{where} "
                    f"(please report it as a gpudml bug): {type(exc).__name__}: {text.strip()}")


@contextlib.contextmanager
def gpu_errors(ctx):
    """Run wgpu calls on `ctx`; raise DeviceLostError at once if it is known to be lost."""
    if ctx.lost:
        raise lost_error(ctx, ctx.lost_reason)
    try:
        yield
    except DMLError:
        raise
    except Exception as exc:
        if is_wgpu_error(exc) or ctx.lost:
            raise translate(ctx, exc) from exc
        raise


def guarded(get_ctx):
    """Decorator: the method's wgpu errors translated as in gpu_errors(get_ctx(self)).
    (A plain try costs nothing when nothing is raised; hot paths use this form.)"""
    def wrap(method):
        @functools.wraps(method)
        def inner(self, *args, **kwargs):
            ctx = get_ctx(self)
            if ctx.lost:
                raise lost_error(ctx, ctx.lost_reason)
            try:
                return method(self, *args, **kwargs)
            except DMLError:
                raise
            except Exception as exc:
                if is_wgpu_error(exc) or ctx.lost:
                    raise translate(ctx, exc) from exc
                raise
        return inner
    return wrap


def _reason(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    # wgpu's messages read "Validation Error / Caused by: / In X / <the reason>": keep the reason.
    return lines[-1] if lines else ""
