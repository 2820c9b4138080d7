"""Render a Dispatch of a KernelPlan into WGSL from the Jinja2 templates in shaders/.

A template is specialized only by compile-time facts (rank, element width,
strategy, workgroup size); sizes, strides and offsets arrive in the uniform
buffer. The rendered source is the pipeline-cache key.
"""

from __future__ import annotations

import functools
from importlib import resources

import jinja2

from .ops.base import Dispatch


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    root = resources.files("gpudml") / "shaders"
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    return env


def uniform_fields(dispatch: Dispatch) -> list[tuple[str, int]]:
    """(name, number of vec4<u32>) for each uniform field."""
    return [(name, max(1, (len(values) + 3) // 4)) for name, values in dispatch.uniforms]


def uniform_bytes(dispatch: Dispatch) -> bytes:
    """The uniform buffer contents: each field padded to whole vec4<u32>s, little-endian."""
    out = bytearray()
    for name, count in uniform_fields(dispatch):
        values = dict(dispatch.uniforms)[name]
        words = [int(v) & 0xFFFFFFFF for v in values] + [0] * (count * 4 - len(values))
        for w in words:
            out += w.to_bytes(4, "little")
    return bytes(out)


@functools.lru_cache(maxsize=512)
def _render(template: str, params_key: tuple, bindings: tuple, fields: tuple, workgroup_size: int) -> str:
    context = dict(params_key)
    context.update(bindings=bindings, uniform_fields=fields, workgroup_size=workgroup_size)
    return _environment().get_template(template).render(**context)


def render(dispatch: Dispatch) -> str:
    params_key = tuple(sorted(dispatch.params.items()))
    return _render(dispatch.template, params_key, dispatch.bindings,
                   tuple(uniform_fields(dispatch)), dispatch.workgroup_size)
