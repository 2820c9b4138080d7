"""Where the WGSL templates are, and rendering them (with Jinja2, imported on first need).

The templates live in the project's top-level `shaders/` folder. The wheel ships them as
the package data folder `gpudml/shaders` (pyproject.toml maps `gpudml.shaders` to
`shaders/`); a checkout and an editable install find the folder beside the package.

Rendered kernel bodies are kept on disk (gpudml/cache.py), keyed by a digest of every
template and by the compile-time parameters: a process that finds its kernels there
never imports Jinja2 (about 35 ms) nor compiles a template (about 50 ms for the first).
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from .. import cache
from ..errors import InternalError, InvalidArgumentError

_HERE = Path(__file__).resolve().parent  # gpudml/kernels
#: The packaged templates: inside an installed wheel, or beside the package in a checkout.
_CANDIDATES = (_HERE.parent / "shaders", _HERE.parent.parent / "shaders")
_MARKER = Path("lib") / "common.wgsl.j2"


@functools.lru_cache(maxsize=1)
def packaged_dir() -> Path:
    """The folder of gpudml's own templates."""
    for candidate in _CANDIDATES:
        if (candidate / _MARKER).is_file():
            return candidate
    raise InternalError(
        f"gpudml's WGSL templates are missing: none of {', '.join(map(str, _CANDIDATES))} holds {_MARKER} "
        f"(a broken installation: reinstall gpudml)")


def search_path(extra=()) -> tuple[str, ...]:
    """Template folders, searched in order: `extra` (a Device's template_path), then
    GPUDML_TEMPLATE_PATH (folders separated by os.pathsep), then gpudml's own. A template
    in an earlier folder shadows those of the same name (lib/... included) after it."""
    folders = list(parse_path(extra, "template_path")) + list(
        parse_path(os.environ.get("GPUDML_TEMPLATE_PATH", ""), "GPUDML_TEMPLATE_PATH"))
    return tuple(folders) + (str(packaged_dir()),)


def parse_path(value, field: str) -> tuple[str, ...]:
    """Folders from a string (os.pathsep-separated), a path, or a list of them; each must exist."""
    if value is None:
        return ()
    if isinstance(value, (str, os.PathLike)):
        value = [v for v in str(value).split(os.pathsep) if v]
    elif not isinstance(value, (list, tuple)):
        raise InvalidArgumentError(f"{field}: expected a folder, an os.pathsep-separated string of folders or a "
                                   f"list of them, got {type(value).__name__}")
    folders = []
    for item in value:
        if not isinstance(item, (str, os.PathLike)):
            raise InvalidArgumentError(f"{field}: {item!r} is not a folder name")
        path = Path(item).expanduser().resolve()
        if not path.is_dir():
            raise InvalidArgumentError(f"{field}: {str(item)!r} is not a folder")
        folders.append(str(path))
    return tuple(folders)


def names() -> list[str]:
    """Every packaged template, relative to the templates folder (e.g. 'lib/common.wgsl.j2')."""
    root = packaged_dir()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.j2"))


@functools.lru_cache(maxsize=8)
def digest(search_path: tuple[str, ...]) -> str:
    """A digest of every template the search path offers (names and contents)."""
    h = hashlib.sha256()
    for folder in search_path:
        root = Path(folder)
        for path in sorted(root.rglob("*.j2")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def render(template: str, params: tuple, search_path: tuple[str, ...]) -> str:
    """Template `template` rendered with `params` ((name, value) pairs), from the disk
    cache when it has it."""
    key = hashlib.sha256(repr((digest(search_path), template, params)).encode()).hexdigest()
    text = cache.read("wgsl", f"{key}.wgsl")
    if text is None:
        text = environment(search_path).get_template(template).render(**dict(params))
        cache.write("wgsl", f"{key}.wgsl", text)
    return text


@functools.lru_cache(maxsize=8)
def environment(search_path: tuple[str, ...]):
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(list(search_path)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
