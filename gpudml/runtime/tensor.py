"""Tensor: a GPU buffer plus the TensorDesc that reads it; host<->device transfers."""

from __future__ import annotations

import weakref
from contextlib import contextmanager

import numpy as np

from ..errors import InvalidArgumentError
from ..tensor_desc import MAX_DIMENSIONS, TensorDesc
from ..types import DataType
from .guard import guarded


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


def checked_array(x, where: str, empty: bool = False) -> np.ndarray:
    """`x` as a numpy array of a DirectML type, native byte order, 1..8 dimensions, not
    empty unless `empty` (a functional call's or a graph constant's tensor);
    InvalidArgumentError naming `where` otherwise."""
    x = native_array(x, where)
    if not 1 <= x.ndim <= MAX_DIMENSIONS:
        raise InvalidArgumentError(
            f"{where} has {x.ndim} dimensions (shape {list(x.shape)}); DirectML tensors have 1..{MAX_DIMENSIONS}")
    if x.size == 0 and not empty:
        raise InvalidArgumentError(f"{where} has shape {list(x.shape)}; every size must be >= 1")
    return x


@contextmanager
def staged_inputs(device, items, descs, what: str = "an operator"):
    """The buffers of an execute's inputs, for the block: a Tensor's own, a host array
    uploaded into a pooled buffer, given back when the block ends (recorded work that names
    it keeps the pool's hold)."""
    ctx = device._ctx
    staged = []
    try:
        buffers = []
        for item, desc in zip(items, descs):
            if isinstance(item, Tensor):
                buffers.append(item.buffer)
            else:
                buf = ctx.pool.acquire(desc.buffer_bytes, device.caps,
                                       f"an input ({desc.data_type.name} {list(desc.sizes)}) uploaded for {what}")
                staged.append(buf)
                ctx.transfers.upload(buf, item)
                buffers.append(buf)
        yield buffers
    finally:
        for buf in staged:
            ctx.pool.release(buf)


def execute_results(results: list, outputs, inputs) -> list:
    """What an execute returns: its output Tensors where outputs were given or every input is a
    Tensor, else their arrays (the Tensors freed)."""
    if outputs is not None or all(isinstance(x, Tensor) for x in inputs):
        return results
    arrays = [t.numpy() for t in results]
    for t in results:
        t.free()
    return arrays


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


def raw_from_logical(x: np.ndarray, desc: TensorDesc) -> np.ndarray:
    """The buffer contents (`required_elements`, gaps zero) that hold the logical array `x`
    (shape = sizes) in `desc`'s layout: logical_from_raw's inverse. Where the layout maps
    several elements to one address (a stride 0), the last one written stays."""
    if desc.is_packed:
        return np.ascontiguousarray(x).reshape(-1)
    raw = np.zeros(desc.required_elements, dtype=x.dtype)
    item = raw.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(raw, shape=desc.sizes, strides=[s * item for s in desc.effective_strides])
    view[...] = x
    return raw


class Tensor:
    """A device-resident tensor: a storage buffer and the desc that reads it.

    The buffer goes back to the device's pool when the Tensor is garbage-collected
    or `free()`d (BufferPool.release: from any thread, never waiting for the lock; work
    recorded before then still reads it, only work recorded after may reuse it).

    A view (`with_desc`) reads another Tensor's buffer through its own desc: its `base` is
    the Tensor that owns the buffer, kept alive by the view; the view never gives the
    buffer back, and freeing the base leaves its views unusable too.

    `is_bool`: the elements are numpy bools, carried as DirectML has them, UINT8 0 and 1 (a
    comparison's result, or a bool array uploaded): `dtype` is then numpy's bool and
    `numpy()` gives a bool array, while `data_type` stays UINT8.
    """

    #: The Tensor whose buffer this one reads (a view's), None for a Tensor that owns its
    #: buffer (as numpy's `ndarray.base`). A class default: a view sets its own.
    base: Tensor | None = None
    _views = None  # a base's live views (a WeakSet, made with the first view)
    is_bool = False  # (a class default: set on the instance by whoever makes a bool Tensor)

    def __init__(self, device, buffer, desc: TensorDesc):
        self.device = device
        self.buffer = buffer
        self.desc = desc

    def __del__(self):
        # (__del__ rather than weakref.finalize: a Tensor is made per call, and a finalize
        # object costs four times the rest of its making. The pool holds the buffer
        # meanwhile (BufferPool._lent), so a Tensor collected in a cycle leaves it intact.)
        buffer = self.__dict__.get("buffer")
        if buffer is not None and self.__dict__.get("base") is None:
            try:
                self.device._ctx.pool.release(buffer)
            except Exception:  # at interpreter exit the pool may be gone with the device
                pass

    @property
    def shape(self) -> tuple[int, ...]:
        """The sizes, a tuple as numpy's `shape` is."""
        return self.desc.sizes

    @property
    def ndim(self) -> int:
        return len(self.desc.sizes)

    @property
    def size(self) -> int:
        """The number of elements (numpy's `size`)."""
        return self.desc.element_count

    @property
    def data_type(self) -> DataType:
        """The DirectML data type (`dml.DataType.FLOAT32`, ...)."""
        return self.desc.data_type

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of the elements (`data_type` is the DirectML one; a bool
        Tensor's is numpy's bool, its data_type UINT8)."""
        return np.dtype(np.bool_) if self.is_bool else self.desc.data_type.numpy

    def __len__(self) -> int:
        """The size of the first axis, as for a numpy array."""
        if not self.desc.sizes:
            raise TypeError("len() of a 0-d Tensor")
        return self.desc.sizes[0]

    @property
    def nbytes(self) -> int:
        return self._live().size

    @guarded(lambda self: self.device._ctx)
    def raw(self) -> np.ndarray:
        """The tensor's buffer bytes (total_tensor_size_in_bytes, rounded up to 4) as 1-D
        elements of its dtype: gaps of strided descs included (a partial last element,
        e.g. 12 bytes of int64, is left out)."""
        data = self.device._ctx.transfers.download(self._live(), self.desc.buffer_bytes)
        return data[: data.size - data.size % self.desc.data_type.size].view(self.desc.data_type.numpy)

    @guarded(lambda self: self.device._ctx)
    def numpy(self) -> np.ndarray:
        """Read back: a new numpy array of shape `sizes` (of bools for a bool Tensor: its
        UINT8 elements != 0)."""
        if self.desc.is_packed:
            nbytes = self.desc.element_count * self.desc.data_type.size
            data = self.device._ctx.transfers.download(self._live(), nbytes)
            array = data[:nbytes].view(self.desc.data_type.numpy).reshape(self.desc.sizes)
        else:
            array = logical_from_raw(self.raw(), self.desc)
        return array.astype(np.bool_) if self.is_bool else array

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """numpy's protocol: `np.asarray(tensor)` reads the tensor back (numpy()), as
        `dtype` when one is asked for. The array is always a new one (copy=False cannot be
        honoured: the elements live on the device)."""
        if copy is False:
            raise ValueError("Tensor: the elements live on the device; np.asarray(tensor) makes a copy")
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    @guarded(lambda self: self.device._ctx)
    def copy(self) -> Tensor:
        """A new Tensor with this one's desc and a copy of its buffer (gaps included), made
        on the GPU in order with the recorded dispatches (inside `device.batch()`, as part
        of the batch)."""
        source, ctx = self._live(), self.device._ctx
        nbytes = self.desc.buffer_bytes  # a multiple of 4, as buffer copies need
        t = Tensor(self.device, ctx.pool.acquire(nbytes, self.device.caps, "Tensor.copy"), self.desc)
        t.is_bool = self.is_bool
        ctx.recorder.copy(source, t.buffer, nbytes)
        return t

    @guarded(lambda self: self.device._ctx)
    def copy_from(self, source: Tensor) -> None:
        """Overwrite this Tensor's buffer with `source`'s (the same data type, sizes and
        strides, on the same wgpu device), on the GPU in order with the recorded dispatches:
        an output written into a buffer the caller allocated (an IOBinding's bound output)."""
        if not isinstance(source, Tensor):
            raise InvalidArgumentError(f"Tensor.copy_from: source must be a Tensor, got {type(source).__name__}")
        target, data = self._live(), source._live()
        if source.device._ctx is not self.device._ctx:
            raise InvalidArgumentError(f"Tensor.copy_from: the source lives on {source.device.adapter_name}, this "
                                       f"Tensor on {self.device.adapter_name}")
        a, b = source.desc, self.desc
        if (a.data_type, a.sizes) != (b.data_type, b.sizes) or not (
                (a.is_packed and b.is_packed) or a.effective_strides == b.effective_strides):
            raise InvalidArgumentError(f"Tensor.copy_from: the source is {source.desc!r}, this Tensor {self.desc!r} "
                                       f"(a copy keeps the data type, sizes and strides)")
        self.device._ctx.recorder.copy(data, target, self.desc.buffer_bytes)

    def with_desc(self, desc: TensorDesc) -> Tensor:
        """A view: a new Tensor that reads this one's buffer through `desc` (the same data
        type; any sizes and strides whose elements lie within this Tensor's buffer bytes),
        with no copy and no GPU work. It keeps the buffer's owner alive (`base`)."""
        buffer = self._live()
        if not isinstance(desc, TensorDesc):
            raise InvalidArgumentError(f"Tensor.with_desc: desc must be a TensorDesc, got {type(desc).__name__}")
        if desc.data_type != self.desc.data_type:
            raise InvalidArgumentError(f"Tensor.with_desc: desc.data_type {desc.data_type.name} differs from the "
                                       f"tensor's {self.desc.data_type.name} (a view reads the same elements)")
        if desc.buffer_bytes > self.desc.buffer_bytes:
            raise InvalidArgumentError(
                f"Tensor.with_desc: sizes {list(desc.sizes)} strides {desc.strides} span {desc.buffer_bytes} "
                f"bytes; the tensor's buffer has {self.desc.buffer_bytes}")
        base = self if self.base is None else self.base
        view = Tensor(self.device, buffer, desc)
        view.base = base
        if base._views is None:
            base._views = weakref.WeakSet()
        base._views.add(view)
        return view

    def free(self) -> None:
        """Give the buffer back now; the Tensor is unusable afterwards, and so are its views.
        A view's free() only lets go of its base (the buffer stays with it)."""
        buffer, self.buffer = self.buffer, None
        if buffer is None:
            return
        if self.base is not None:
            self.base = None
            return
        for view in self._views or ():
            view.buffer = None
        self.device._ctx.pool.release(buffer)

    def _live(self):
        if self.buffer is None:
            raise InvalidArgumentError("Tensor: used after free()")
        return self.buffer

    def __repr__(self) -> str:
        layout = "" if self.desc.strides is None else f", strides={list(self.desc.strides)}"
        freed = ", freed" if self.buffer is None else ""
        view = ", view" if self.base is not None else ""
        return (f"Tensor(shape={self.shape}, dtype={self.dtype}{layout}, data_type={self.data_type.name}, "
                f"device={self.device.adapter_name!r}{view}{freed})")
