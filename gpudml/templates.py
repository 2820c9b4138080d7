"""Where the WGSL templates are, and the Jinja2 environment that renders them.

The templates live in the project's top-level `shaders/` folder. The wheel ships them as
the package data folder `gpudml/shaders` (pyproject.toml maps `gpudml.shaders` to
`shaders/`); a checkout and an editable install find the folder beside the package.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jinja2

from .errors import InternalError

_HERE = Path(__file__).resolve().parent
#: The packaged templates: inside an installed wheel, or beside the package in a checkout.
_CANDIDATES = (_HERE / "shaders", _HERE.parent / "shaders")
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


def search_path() -> tuple[str, ...]:
    """Template folders, searched in order."""
    return (str(packaged_dir()),)


@functools.lru_cache(maxsize=8)
def environment(search_path: tuple[str, ...]) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(list(search_path)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def names() -> list[str]:
    """Every packaged template, relative to the templates folder (e.g. 'lib/common.wgsl.j2')."""
    root = packaged_dir()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.j2"))
