"""gpudml's folder of files worth keeping between processes (rendered WGSL).

GPUDML_CACHE_DIR names it ("off" or an empty value: no disk cache); else
$XDG_CACHE_HOME/gpudml, else ~/.cache/gpudml. Everything in it can be deleted at any
time. A folder that cannot be read or written is as good as none: gpudml then works
without it, never fails because of it.
"""

from __future__ import annotations

import os
from pathlib import Path

OFF = ("", "0", "off", "none", "false")


def folder() -> Path | None:
    """The cache folder, or None when the cache is off."""
    value = os.environ.get("GPUDML_CACHE_DIR")
    if value is not None:
        return None if value.strip().lower() in OFF else Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpudml"


def read(kind: str, name: str) -> str | None:
    """The text stored under kind/name, or None."""
    root = folder()
    if root is None:
        return None
    try:
        return (root / kind / name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def write(kind: str, name: str, text: str) -> None:
    """Store `text` under kind/name, atomically (a reader sees all of it or nothing);
    silently nothing where the folder cannot be written."""
    import tempfile

    root = folder()
    if root is None:
        return
    target = root / kind
    try:
        target.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, target / name)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
