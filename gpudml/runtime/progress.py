"""Progress of long host <-> device transfers on a terminal (an 8 GiB upload takes minutes on
a software adapter): one line on stderr, redrawn with carriage returns at most every
REDRAW_SECONDS, only for transfers of at least PROGRESS_BYTES and only where stderr is a
terminal, so that pipes, logs and tests get nothing."""

from __future__ import annotations

import sys
import time

#: Transfers at least this large show their progress (where stderr is a terminal).
PROGRESS_BYTES = 256 << 20
#: A large transfer goes in chunks of this many bytes, the progress advancing after each.
CHUNK_BYTES = 64 << 20
#: The line is redrawn at most this often (seconds); the last state is always drawn.
REDRAW_SECONDS = 0.25



def _size(nbytes: float, unit: float) -> str:
    return f"{nbytes / unit:.2f}"


def _unit(total: int) -> tuple[float, str]:
    """GiB for a transfer of a GiB or more, MiB below."""
    return (float(1 << 30), "GiB") if total >= 1 << 30 else (float(1 << 20), "MiB")


def is_terminal(stream) -> bool:
    """Whether `stream` is a terminal (a file, a pipe or a closed stream is not)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class TransferProgress:
    """`with TransferProgress("upload", nbytes) as progress: ... progress.advance(n)`: the
    line `gpudml: upload 1.25 / 8.00 GiB (15%), 0.95 GB/s`, then `gpudml: upload 8.00 GiB in
    9.1 s, 0.94 GB/s` and a newline when done (MiB below a GiB); nothing off a terminal."""

    def __init__(self, what: str, total: int, stream=None):
        self.what, self.total, self.done = what, total, 0
        self.stream = sys.stderr if stream is None else stream
        self.shown = is_terminal(self.stream)
        self.unit, self.unit_name = _unit(total)
        self.start = self.drawn = time.perf_counter()

    def __enter__(self) -> TransferProgress:
        if self.shown:
            self._draw(f"gpudml: {self.what} 0.00 / {self._of(self.total)} (0%)")
        return self

    def advance(self, nbytes: int) -> None:
        self.done += nbytes
        now = time.perf_counter()
        if not self.shown or now - self.drawn < REDRAW_SECONDS:
            return
        self.drawn = now
        rate = self.done / max(now - self.start, 1e-9) / 1e9
        self._draw(f"gpudml: {self.what} {_size(self.done, self.unit)} / {self._of(self.total)} "
                   f"({100 * self.done // max(self.total, 1)}%), {rate:.2f} GB/s")

    def __exit__(self, kind, value, traceback) -> None:
        if not self.shown:
            return
        seconds = time.perf_counter() - self.start
        rate = f"{self.done / max(seconds, 1e-9) / 1e9:.2f} GB/s"
        if kind is None:
            self._draw(f"gpudml: {self.what} {self._of(self.total)} in {seconds:.1f} s, {rate}", "\n")
        else:
            self._draw(f"gpudml: {self.what} of {self._of(self.total)} stopped at {_size(self.done, self.unit)} "
                       f"after {seconds:.1f} s ({value.__class__.__name__})", "\n")

    def _of(self, nbytes: int) -> str:
        return f"{_size(nbytes, self.unit)} {self.unit_name}"

    def _draw(self, text: str, end: str = "") -> None:
        self.stream.write(f"\r{text}\033[K{end}")  # \033[K: clear what a longer line left
        self.stream.flush()


class _Quiet:
    """A transfer's progress where none is shown (most transfers): no clock, no stream."""

    def __enter__(self) -> _Quiet:
        return self

    def advance(self, nbytes: int) -> None:
        pass

    def __exit__(self, kind, value, traceback) -> None:
        pass


_QUIET = _Quiet()


def transfer_progress(what: str, total: int) -> TransferProgress | _Quiet:
    """The progress of a transfer of `total` bytes: shown on stderr where it is a terminal
    and the transfer at least PROGRESS_BYTES, else a no-op (the readback of a small result
    pays nothing for it)."""
    if total < PROGRESS_BYTES or not is_terminal(sys.stderr):
        return _QUIET
    return TransferProgress(what, total)


__all__ = ["CHUNK_BYTES", "PROGRESS_BYTES", "REDRAW_SECONDS", "TransferProgress", "is_terminal", "transfer_progress"]
