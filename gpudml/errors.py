"""Error classes of the public API."""


class DMLError(Exception):
    """Base class of every error gpudml raises on purpose."""


class InvalidArgumentError(DMLError, ValueError):
    """What DirectML rejects with E_INVALIDARG: names the field, the rule and the values."""


class OutOfBoundsError(InvalidArgumentError, IndexError):
    """An index or an axis outside a tensor's bounds (`t[5]` of 3 rows, `t.sum(axis=2)` of a
    2-D tensor): an InvalidArgumentError, and an IndexError as numpy raises there."""


class UnsupportedError(DMLError, NotImplementedError):
    """A valid description that the chosen adapter cannot run."""


class GpuError(DMLError, RuntimeError):
    """The adapter failed while running valid work (out of memory, or an error wgpu reported
    that gpudml did not foresee); names the adapter. wgpu's own exception is its __cause__."""


class OutOfMemoryError(GpuError, MemoryError):
    """The device could not allocate a buffer (or the memory an upload needs): names the
    allocation (bytes, what it was for), the device's limits (max-buffer-size,
    max-storage-buffer-binding-size) and what gpudml holds on the device. Also a MemoryError,
    so code that handles the host's running out of memory handles this too. The device
    stays usable: free Tensors, or work on smaller pieces, and call again."""


class DeviceLostError(GpuError):
    """The adapter's device is gone (driver reset, device destroyed): its Tensors and compiled
    operators are unusable; a new Device opens a fresh one."""


class InternalError(DMLError, RuntimeError):
    """A gpudml bug, never the user's: e.g. generated WGSL that the adapter rejects (the
    message prints the numbered source). Please report it."""
