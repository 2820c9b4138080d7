"""Tensor: a GPU buffer plus the TensorDesc that reads it; host<->device transfers."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError, UnsupportedError
from ..tensor_desc import TensorDesc
from ..types import DataType

STORAGE_USAGE = None  # set lazily: wgpu.BufferUsage.STORAGE | COPY_SRC | COPY_DST


def _storage_usage():
    global STORAGE_USAGE
    if STORAGE_USAGE is None:
        import wgpu

        STORAGE_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    return STORAGE_USAGE


def native_array(x, where: str) -> np.ndarray:
    """A numpy array of a DirectML type in native byte order (values and bits unchanged)."""
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if not isinstance(x, np.ndarray):
        raise InvalidArgumentError(f"{where}: expected a numpy array or gpudml.Tensor, got {type(x).__name__}")
    DataType.from_numpy(x.dtype, where)
    if x.dtype.byteorder == ">" or (x.dtype.byteorder == "=" and not np.little_endian):
        x = x.astype(x.dtype.newbyteorder("<"))
    return x


def host_buffer(x: np.ndarray, desc: TensorDesc, where: str) -> np.ndarray:
    """The buffer contents a numpy input stands for: its elements in C order, which must
    cover the desc's implied span (for a packed desc: an array of the desc's shape)."""
    x = native_array(x, where)
    dt = DataType.from_numpy(x.dtype, where)
    if dt != desc.data_type:
        raise InvalidArgumentError(
            f"{where}: numpy dtype {x.dtype} is {dt.name}, the desc says {desc.data_type.name}")
    flat = np.ascontiguousarray(x).reshape(-1)
    if flat.size < desc.required_elements:
        raise InvalidArgumentError(
            f"{where}: {flat.size} elements (shape {list(x.shape)}) do not cover the tensor's "
            f"{desc.required_elements} buffer elements (sizes {list(desc.sizes)}, strides "
            f"{list(desc.effective_strides)})")
    return flat


def logical_from_raw(raw: np.ndarray, desc: TensorDesc) -> np.ndarray:
    """The tensor's elements (shape = sizes) gathered from its buffer contents."""
    if desc.is_packed:
        return raw[: desc.element_count].reshape(desc.sizes).copy()
    item = raw.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(
        raw, shape=desc.sizes, strides=[s * item for s in desc.effective_strides], writeable=False)
    return np.array(view)


class Tensor:
    """A device-resident tensor: a storage buffer and the desc that reads it."""

    def __init__(self, device, buffer, desc: TensorDesc):
        self.device = device
        self.buffer = buffer
        self.desc = desc

    @property
    def shape(self) -> tuple[int, ...]:
        return self.desc.sizes

    @property
    def data_type(self) -> DataType:
        return self.desc.data_type

    @property
    def dtype(self) -> np.dtype:
        return self.desc.data_type.numpy

    @property
    def nbytes(self) -> int:
        return self.buffer.size

    def raw(self) -> np.ndarray:
        """The whole buffer as 1-D elements of the tensor's dtype (gaps of strided descs included)."""
        data = self.device._download(self.buffer)
        item = self.desc.data_type.size
        return np.frombuffer(data, dtype=self.dtype, count=len(data) // item).copy()

    def numpy(self) -> np.ndarray:
        """Read back: a new numpy array of shape `sizes`."""
        return logical_from_raw(self.raw(), self.desc)

    def __repr__(self) -> str:
        return f"Tensor({self.desc!r}, device={self.device.adapter_name!r})"


def new_buffer(ctx, nbytes: int, data: np.ndarray | None = None):
    """A zero-filled storage buffer of nbytes (rounded up to 4), optionally holding `data`'s bytes."""
    size = max(4, (nbytes + 3) & ~3)
    if size > ctx.caps.max_buffer_size:
        raise UnsupportedError(
            f"gpudml: a buffer of {size} bytes exceeds the adapter's max-buffer-size "
            f"{ctx.caps.max_buffer_size} ({ctx.caps.name})")
    usage = _storage_usage()
    if data is None:
        return ctx.device.create_buffer(size=size, usage=usage)
    payload = data.view(np.uint8).reshape(-1)
    if payload.size != size:
        padded = np.zeros(size, dtype=np.uint8)
        padded[: min(payload.size, size)] = payload[:size]
        payload = padded
    return ctx.device.create_buffer_with_data(data=payload, usage=usage)
