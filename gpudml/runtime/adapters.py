"""Adapter discovery and choice: hardware first, then software Vulkan, then GL.

`GPUDML_ADAPTER` (or `adapter=`) picks one: "vulkan", "gl"/"opengl", "metal",
"d3d12", or a case-insensitive substring of the adapter's summary.
"""

from __future__ import annotations

import os
import tempfile
import threading

from .. import caps
from ..errors import InvalidArgumentError, UnsupportedError

#: The lock every gpudml wgpu call runs under, one for the whole process (all adapters):
#: wgpu's OpenGL backend shares one EGL context between every adapter object that
#: enumeration returns, each with a mutex of its own; two threads using it at once abort
#: the process (EGL BadAccess, or a wait of more than a second for the context: wgpu-hal
#: panics). Enumerating adapters touches that context too. Contexts (context.py) use it.
WGPU_LOCK = threading.RLock()

BACKEND_ALIASES = {
    "vulkan": "vulkan", "vk": "vulkan",
    "gl": "opengl", "opengl": "opengl", "gles": "opengl",
    "metal": "metal", "d3d12": "d3d12", "dx12": "d3d12",
}
HARDWARE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2}
#: The Debian packages of each software adapter, by wgpu backend.
SOFTWARE_ADAPTERS = {
    "vulkan": "`apt-get install mesa-vulkan-drivers libvulkan1` (Vulkan, lavapipe)",
    "opengl": "`apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri` (OpenGL, llvmpipe)",
}
INSTALL_HINT = (
    f"on Debian/Ubuntu install the software adapters with {SOFTWARE_ADAPTERS['vulkan']} and "
    f"{SOFTWARE_ADAPTERS['opengl']}; the README's set-up step does this"
)


def install_hint(found: list) -> str:
    """What to install for the backends none of `found` offers ("" if every one is there)."""
    have = {backend_of(a) for a in found}
    missing = [text for backend, text in SOFTWARE_ADAPTERS.items() if backend not in have]
    if not missing:
        return ""
    return f"on Debian/Ubuntu install {' and '.join(missing)}; the README's set-up step does this"


def _quiet_gl_environment() -> None:
    # Mesa's drivers probe Wayland while enumerating and print
    # "XDG_RUNTIME_DIR is invalid or not set" on headless machines. A private,
    # empty runtime dir makes that probe fail quietly; a set one is left alone.
    if os.environ.get("XDG_RUNTIME_DIR"):
        return
    path = os.path.join(tempfile.gettempdir(), f"gpudml-runtime-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        return
    os.environ["XDG_RUNTIME_DIR"] = path


#: The adapters, enumerated once per process and kept: enumerating touches the OpenGL
#: backend's EGL context, and so does releasing an adapter object, outside gpudml's lock
#: (see WGPU_LOCK); Device() used to enumerate (and drop) them every time.
_FOUND: list | None = None


def enumerate_adapters() -> list:
    _quiet_gl_environment()
    try:
        import wgpu
    except Exception as exc:  # not installed, or its native library cannot load
        raise UnsupportedError(
            f"gpudml: the wgpu package cannot be imported ({exc}); `pip install 'wgpu>=0.32,<0.33'`, "
            f"then {INSTALL_HINT}") from exc
    global _FOUND
    try:
        with WGPU_LOCK:
            if _FOUND is None:
                _FOUND = list(wgpu.gpu.enumerate_adapters_sync())
            return list(_FOUND)
    except Exception as exc:  # wgpu-native failing to load or to enumerate
        raise UnsupportedError(f"gpudml: could not enumerate GPU adapters ({exc}); {INSTALL_HINT}") from exc


def describe(adapter) -> str:
    return adapter.summary


def listing(found: list) -> list[str]:
    """One line per adapter found: what `gpudml info` lists, and what the error of an adapter
    request that matches none lists (the same lines)."""
    return [describe(a) for a in found]


def backend_of(adapter) -> str:
    return str(adapter.info.get("backend_type", "")).lower()


def choose_adapter(request: str | None = None):
    """The adapter for `request` (None: GPUDML_ADAPTER, else the default order)."""
    source = ""
    if request is None:
        request = os.environ.get("GPUDML_ADAPTER") or None
        source = ", from GPUDML_ADAPTER,"
    if request is not None and not isinstance(request, str):
        raise InvalidArgumentError(
            f"Device: adapter must be a string (\"vulkan\", \"gl\" or part of an adapter name) or None, "
            f"got {type(request).__name__} {request!r}")
    adapters = enumerate_adapters()
    if request is None:
        candidates = sorted(adapters, key=_default_rank)
        if not candidates:
            raise UnsupportedError(f"gpudml: no GPU adapter found; {INSTALL_HINT}")
        return candidates[0]
    key = request.strip().lower()
    backend = BACKEND_ALIASES.get(key)
    if backend is not None:
        matches = [a for a in adapters if backend_of(a) == backend]
    else:
        matches = [a for a in adapters if key in describe(a).lower()]
    if not matches:
        hint = install_hint(adapters)
        found = "".join(f"\n  - {line}" for line in listing(adapters)) or " none"
        backends = ", ".join(sorted(set(BACKEND_ALIASES) - {"vk", "gles", "dx12"}))
        raise UnsupportedError(
            f"gpudml: no adapter matches {request!r}{source}; name one by backend ({backends}) or by part of its "
            f"name. The adapters found, as `gpudml info` lists them:{found}" + (f"\n{hint}" if hint else ""))
    return sorted(matches, key=_default_rank)[0]


def _default_rank(adapter) -> tuple[int, int]:
    kind = str(adapter.info.get("adapter_type", ""))
    hardware = 4 if caps.is_software(kind, describe(adapter)) else HARDWARE_RANK.get(kind, 3)
    backend = {"vulkan": 0, "metal": 0, "d3d12": 1, "opengl": 3}.get(backend_of(adapter), 2)
    return (hardware, backend)
