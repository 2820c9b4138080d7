"""Storage: a tensor's memory in several wgpu buffers, for tensors larger than one buffer
may be (the adapter's max-buffer-size, or a lower forced one: Caps.buffer_bytes).

Everything in the runtime passes a tensor's memory around as one object: a wgpu buffer,
or a Storage of parts. Only the leaves look inside: binding (`storage_range`), uploads
and downloads (transfers.py), copies and clears (batching.py), the pool (pool.py). Every
part but the last holds `part_bytes` (Caps.part_bytes: a whole number of the largest
segments a kernel binds), so that no binding straddles two parts.
"""

from __future__ import annotations

from ..errors import InternalError, InvalidArgumentError


class Storage:
    """Parts (pooled wgpu buffers) holding consecutive byte ranges of one tensor."""

    def __init__(self, parts: list, part_bytes: int, serial: int):
        self.parts = parts
        self.part_bytes = part_bytes
        self.size = sum(p.size for p in parts)
        self._gpudml_serial = serial

    def __repr__(self) -> str:
        return f"Storage({len(self.parts)} parts of {self.part_bytes} bytes, {self.size} bytes)"


def parts_of(storage) -> list:
    """The wgpu buffers of a storage (a wgpu buffer is its own single part)."""
    return storage.parts if isinstance(storage, Storage) else [storage]


def pieces(storage, offset: int, nbytes: int):
    """(wgpu buffer, offset in it, bytes) for the byte range [offset, offset + nbytes) of
    `storage` (a wgpu buffer or a Storage), in order."""
    if not isinstance(storage, Storage):
        yield storage, offset, nbytes
        return
    end = offset + nbytes
    while offset < end:
        k = offset // storage.part_bytes
        if k >= len(storage.parts):
            raise InternalError(f"gpudml: byte {offset} lies past {storage!r}")
        within = offset - k * storage.part_bytes
        n = min(end - offset, storage.parts[k].size - within)
        yield storage.parts[k], within, n
        offset += n


def storage_range(storage, offset: int, nbytes: int) -> dict:
    """A binding resource for bytes [offset, offset + nbytes) of `storage`; the range must
    lie in one part (segments are planned so: Caps.part_bytes)."""
    buffer, within, n = next(pieces(storage, offset, nbytes))
    if n < nbytes:
        raise InvalidArgumentError(
            f"gpudml: a binding of {nbytes} bytes at {offset} straddles two parts of {storage!r}; the Tensor was "
            f"made under other buffer limits (Device max_buffer_bytes) than the operator was compiled for")
    return {"buffer": buffer, "offset": within, "size": nbytes}
