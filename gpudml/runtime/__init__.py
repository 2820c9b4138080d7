"""The only package that touches wgpu, and it knows no operator, template or compiler:
adapters, one wgpu device per adapter and its pipeline cache (context.py), buffers
(pool.py, storage.py), transfers, recorded submission (batching.py), waits, Tensors and
the executor of a list of steps. Devices and compiled operators lie above it
(gpudml/device/).

Threading: one Device may be used from several threads at once; every wgpu call runs
under one process-wide lock, adapters.WGPU_LOCK (docs/threading.md). wgpu's exceptions
are translated into gpudml errors at this package's boundary (guard.py)."""

from .tensor import Tensor

__all__ = ["Tensor"]
