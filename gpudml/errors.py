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


class DeviceLostError(GpuError):
    """The adapter's device is gone (driver reset, device destroyed): its Tensors and compiled
    operators are unusable; a new Device opens a fresh one."""


class InternalError(DMLError, RuntimeError):
    """A gpudml bug, never the user's: e.g. generated WGSL that the adapter rejects (the
    message prints the numbered source). Please report it."""
