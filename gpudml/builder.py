"""The kernel builder: from a plan's Dispatch to a Kernel (WGSL source, bindings, uniform
bytes, workgroup grid). Pure: no wgpu.

A plan states what a kernel needs in its own terms: the buffers it binds by role (input k,
output k, scratch k) with the element width and the access it makes (words, 16-byte
chunks, element-wise stores), its named uniforms (a scalar, or one value per axis), its
template with the compile-time parameters, and how many invocations it runs. The builder
owns everything a template would otherwise repeat: the WGSL binding declarations and their
types, the uniform struct and its byte layout, and the entry point, which folds more than
65,535 workgroups into a 2-D grid and calls the template's `fn kernel(gid: u32)`.

Templates (shaders/) hold only their own kernel logic. A uniform scalar is `uni.NAME`; value
d of a per-axis uniform is `{{ c.u("NAME", d) }}` (lib/common.wgsl.j2).

Templates never index a buffer variable: they call its accessors, which the builder
writes next to the declarations: `NAME_at(i)` reads word (or chunk) i, `NAME_set(i, v)`
writes it, `NAME_at2(i)` / `NAME_set2(i, v)` read and write 64-bit element i as a word
pair (its word index 2i may pass 2^32 in a tensor above 16 GiB; i does not), and
`NAME_and(i, m)` / `NAME_or(i, m)` are the atomic read-modify-writes of an element-wise
8/16-bit output. A tensor larger than one storage binding may hold is
bound as several segments (`segment`): bindings NAME_0, NAME_1, ... of a power-of-two
size each, and the accessors pick the segment from the index's high bits. Templates are
the same either way.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from . import templates
from .errors import InternalError, UnsupportedError

INPUT, OUTPUT, SCRATCH = "input", "output", "scratch"

#: How a kernel reads or writes a buffer, and the WGSL type that gives it.
#:   words     array<u32>: 32-bit words (8/16-bit elements packed in them, 64-bit ones as pairs)
#:   chunks    array<vec4<u32>>: 16-byte chunks (buffers are allocated in whole chunks)
#:   elements  element-wise stores: array<atomic<u32>> for 8/16-bit elements, which share a
#:             word with other elements (atomic read-modify-write), else array<u32>
ACCESSES = ("words", "chunks", "elements")


@dataclass(frozen=True)
class Buffer:
    """One storage binding: tensor `index` of the operator's inputs or outputs, or scratch
    buffer `index` of the plan, as WGSL variable `name`."""

    name: str
    role: str
    index: int = 0
    access: str = "words"
    bits: int = 32  # element width of the tensor (decides the type of element-wise stores)
    writable: bool = False
    #: Bytes of each binding the buffer is split into (a power of two), and how many: set
    #: by the compiler (`segment`) for a tensor larger than one binding may be; 1 otherwise.
    segment_bytes: int = 0
    segments: int = 1
    #: The chunks buffer (of the same tensor, bound in segments) whose bindings this words
    #: buffer reads and writes through, instead of bindings of its own: one set of bindings
    #: per tensor, half as many (`share_segments`).
    via: str = ""

    @property
    def unit_bytes(self) -> int:
        """Bytes of one array element of the binding: a word or a 16-byte chunk."""
        return 16 if self.access == "chunks" else 4

    @property
    def atomic(self) -> bool:
        return self.access == "elements" and self.writable and self.bits < 32

    @property
    def wgsl_type(self) -> str:
        if self.access == "chunks":
            return "array<vec4<u32>>"
        if self.atomic:
            return "array<atomic<u32>>"
        return "array<u32>"

    @property
    def key(self) -> tuple[str, int]:
        return self.role, self.index

    @property
    def bindings(self) -> tuple[str, ...]:
        """The WGSL variables of its bindings, in binding order."""
        if self.via:
            return ()
        if self.segments == 1:
            return (self.name,)
        return tuple(f"{self.name}_{k}" for k in range(self.segments))


def segment(buffer: Buffer, nbytes: int, segment_bytes: int) -> Buffer:
    """`buffer`, bound as ceil(nbytes / segment_bytes) segments of `segment_bytes` (a power
    of two, a multiple of 16) when `nbytes` exceeds it."""
    count = -(-nbytes // segment_bytes)
    if count <= 1:
        return buffer
    return replace(buffer, segment_bytes=segment_bytes, segments=count)


def share_segments(buffers: tuple[Buffer, ...]) -> tuple[Buffer, ...]:
    """A tensor bound in segments both as words and as chunks is bound once: its words
    buffer reads (and writes) word i as component i % 4 of chunk i / 4 of the chunks
    buffer's segments. (Not the atomic element-wise stores of 8/16-bit outputs.)"""
    out = []
    for b in buffers:
        twin = next((c for c in buffers if c.key == b.key and c.access == "chunks" and c.segments > 1
                     and c.writable == b.writable), None)
        if b.access != "chunks" and b.segments > 1 and not b.atomic and twin is not None:
            b = replace(b, via=twin.name, segments=twin.segments, segment_bytes=twin.segment_bytes)
        out.append(b)
    return tuple(out)


def binding_count(buffers) -> int:
    """Storage bindings a kernel with these buffers takes."""
    return sum(len(b.bindings) for b in buffers)


def input_buffer(index: int, name: str, access: str = "words") -> Buffer:
    return Buffer(name, INPUT, index, access)


def output_buffer(index: int, name: str, bits: int, access: str = "words") -> Buffer:
    return Buffer(name, OUTPUT, index, access, bits, writable=True)


def scratch_buffer(index: int, name: str, *, writable: bool) -> Buffer:
    return Buffer(name, SCRATCH, index, "words", 32, writable)


@dataclass(frozen=True)
class Dispatch:
    """One compute dispatch of a plan. `uniforms` maps each name to one value (a scalar)
    or a tuple (one value per axis: its length must follow from compile-time facts, the
    rank, so that a new shape needs no new source). Negative values are stored as two's
    complement; the kernel reads every value as u32."""

    template: str
    params: Mapping[str, Any]
    buffers: tuple[Buffer, ...]
    uniforms: Mapping[str, int | tuple[int, ...]]
    invocations: int
    workgroup_size: int = 64


@dataclass(frozen=True)
class KernelPlan:
    dispatches: tuple[Dispatch, ...]
    scratch_bytes: tuple[int, ...] = field(default=())


@dataclass(frozen=True)
class Kernel:
    """A Dispatch built: what the runtime needs to make a pipeline and run it."""

    template: str
    params: Mapping[str, Any]
    source: str
    buffers: tuple[Buffer, ...]  # binding i is buffers[i]; the uniform buffer follows them
    uniform_bytes: bytes
    invocations: int
    workgroup_size: int
    workgroups: tuple[int, int]  # the grid (x, y)


def build(dispatch: Dispatch, max_workgroups_per_dimension: int, search_path: tuple[str, ...] | None = None) -> Kernel:
    """The Kernel of `dispatch`, its template taken from `search_path` (default: the
    packaged templates, after GPUDML_TEMPLATE_PATH); UnsupportedError if its grid exceeds
    the adapter's limit."""
    for b in dispatch.buffers:
        if b.access not in ACCESSES or b.role not in (INPUT, OUTPUT, SCRATCH):
            raise InternalError(f"{dispatch.template}: buffer {b} has an unknown role or access")
    arrays, scalars = _uniform_fields(dispatch)
    source = _render(dispatch.template, tuple(sorted(dispatch.params.items())), dispatch.buffers,
                     tuple((name, len(values)) for name, values in arrays), tuple(name for name, _ in scalars),
                     dispatch.workgroup_size, search_path or templates.search_path())
    return Kernel(dispatch.template, dispatch.params, source, dispatch.buffers, _uniform_bytes(arrays, scalars),
                  dispatch.invocations, dispatch.workgroup_size,
                  workgroup_grid(dispatch.invocations, dispatch.workgroup_size, max_workgroups_per_dimension))


def workgroup_grid(invocations: int, workgroup_size: int, limit: int) -> tuple[int, int]:
    """Workgroups as (x, y): more than `limit` per dimension fold into rows."""
    groups = max(1, -(-invocations // workgroup_size))
    x = min(groups, limit)
    y = -(-groups // x)
    if y > limit:
        raise UnsupportedError(f"gpudml: {invocations} invocations need {groups} workgroups, more than {limit}^2")
    return x, y


# ---------------------------------------------------------------------------- uniforms
def _uniform_fields(dispatch: Dispatch):
    """(per-axis arrays, scalars) as (name, u32 words), in the plan's order."""
    arrays, scalars = [], []
    for name, value in dispatch.uniforms.items():
        values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        words = []
        for v in values:
            v = int(v)
            if not -(2**31) <= v < 2**32:
                raise InternalError(f"{dispatch.template}: uniform {name} value {v} does not fit 32 bits")
            words.append(v & 0xFFFFFFFF)
        (arrays if isinstance(value, (tuple, list)) else scalars).append((name, tuple(words)))
    return arrays, scalars


def _uniform_bytes(arrays, scalars) -> bytes:
    """The uniform buffer in the struct's layout (_header): per-axis arrays first, as
    array<vec4<u32>, ceil(n / 4)> (16-byte aligned), then the scalars; padded to 16."""
    words: list[int] = []
    for _, values in arrays:
        words += list(values) + [0] * (4 * _vec4s(len(values)) - len(values))
    for _, values in scalars:
        words += list(values)
    words += [0] * (4 * _vec4s(len(words)) - len(words))
    return b"".join(w.to_bytes(4, "little") for w in words)


def _vec4s(count: int) -> int:
    return max(1, -(-count // 4))


# ---------------------------------------------------------------------------- source
def _header(buffers: tuple[Buffer, ...], arrays, scalars) -> str:
    lines, binding = [], 0
    for b in buffers:
        access = "read_write" if b.writable else "read"
        for var in b.bindings:
            lines.append(f"@group(0) @binding({binding}) var<storage, {access}> {var}: {b.wgsl_type};")
            binding += 1
    lines.append("struct Uniforms {")
    lines += [f"    {name}: array<vec4<u32>, {_vec4s(count)}>," for name, count in arrays]
    lines += [f"    {name}: u32," for name in scalars]
    if not arrays and not scalars:
        lines.append("    unused: u32,")
    lines.append("}")
    lines.append(f"@group(0) @binding({binding}) var<uniform> uni: Uniforms;")
    for b in buffers:
        lines += _accessors(b)
    return "\n".join(lines) + "\n"


def _accessors(b: Buffer) -> list[str]:
    """NAME_at / NAME_set / NAME_at2 / NAME_set2, or NAME_and / NAME_or for an atomic
    buffer (see the module's doc)."""
    item = "vec4<u32>" if b.access == "chunks" else "u32"
    if b.atomic:
        ops = [("and", "m: u32", "atomicAnd(&{var}[{i}], m);"), ("or", "m: u32", "atomicOr(&{var}[{i}], m);")]
    else:
        ops = [("at", "", "return {var}[{i}];")]
        if b.writable:
            ops.append(("set", f"v: {item}", "{var}[{i}] = v;"))
    variables = tuple(f"{b.via}_{k}" for k in range(b.segments)) if b.via else b.bindings
    lines = []
    for op, arg, body in ops:
        result = f" -> {item}" if op == "at" else ""
        lines.append(f"fn {b.name}_{op}(i: u32{', ' + arg if arg else ''}){result} {{")
        index = "i"
        if b.via:  # word i: component i % 4 of chunk i / 4
            lines.append("    let q = i >> 2u;")
            index = "q"
            body = body.replace("{var}[{i}]", "{var}[{i}][i & 3u]")
        if b.segments == 1:
            lines.append("    " + body.format(var=b.name, i=index))
        else:
            shift = (b.segment_bytes // 16 if b.via else b.segment_bytes // b.unit_bytes).bit_length() - 1
            lines.append(f"    let j = {index} & {(1 << shift) - 1}u;")
            lines.append(f"    let s = {index} >> {shift}u;")
            lines += _pick(variables, 0, b.segments, body, "    ", op == "at")
        lines.append("}")
    if b.access != "chunks" and not b.atomic:
        lines += _pair_accessors(b, variables)
    return lines


def _pair_accessors(b: Buffer, variables) -> list[str]:
    """NAME_at2(i) -> vec2<u32> and NAME_set2(i, v): 64-bit element i, words 2i and 2i + 1,
    with the segment found from i itself (2i may not fit 32 bits)."""
    ops = [("at2", "", "-> vec2<u32> ", "return vec2<u32>({var}[{i}], {var}[{i} + 1u]);")]
    if b.writable:
        ops.append(("set2", ", v: vec2<u32>", "", "{var}[{i}] = v.x;\n{var}[{i} + 1u] = v.y;"))
    lines = []
    for op, arg, result, body in ops:
        lines.append(f"fn {b.name}_{op}(i: u32{arg}) {result}{{")
        if b.via:  # element i: components 2(i % 2), 2(i % 2) + 1 of chunk i / 2
            body = body.replace("{var}[{i}]", "{var}[{i}][c]").replace("{var}[{i} + 1u]", "{var}[{i}][c + 1u]")
            lines.append("    let c = (i & 1u) * 2u;")
            if b.segments == 1:
                lines.append("    let j = i >> 1u;")
            else:
                shift = (b.segment_bytes // 16).bit_length() - 1
                lines.append(f"    let j = (i >> 1u) & {(1 << shift) - 1}u;")
                lines.append(f"    let s = i >> {shift + 1}u;")
        elif b.segments == 1:
            lines.append("    let j = 2u * i;")
        else:
            shift = (b.segment_bytes // 8).bit_length() - 1  # elements per segment: 2^shift
            lines.append(f"    let j = (i & {(1 << shift) - 1}u) * 2u;")
            lines.append(f"    let s = i >> {shift}u;")
        if b.segments == 1:
            lines += ["    " + line for line in body.format(var=variables[0] if b.via else b.name, i="j").split("\n")]
        else:
            for line in _pick(variables, 0, b.segments, body.replace("\n", "\x00"), "    ", op == "at2"):
                lines += line.replace("\x00", "\n" + " " * (len(line) - len(line.lstrip()))).split("\n")
        lines.append("}")
    return lines


def _pick(variables, lo: int, hi: int, body: str, indent: str, returns: bool) -> list[str]:
    """Statements running `body` on the binding of segment `s` among variables[lo:hi]: a
    binary tree of comparisons, each lower half returning inside its `if`, so that the
    last statement of a read function is a return."""
    if hi - lo == 1:
        return [indent + body.format(var=variables[lo], i="j")]
    mid = (lo + hi) // 2
    left = _pick(variables, lo, mid, body, indent + "    ", returns)
    return ([f"{indent}if (s < {mid}u) {{"] + left + ([] if returns else [indent + "    return;"]) + [f"{indent}}}"]
            + _pick(variables, mid, hi, body, indent, returns))


def _entry(buffers: tuple[Buffer, ...], workgroup_size: int) -> str:
    # Every binding is used by the entry point (`_ = &x;` costs nothing), so that the
    # pipeline's automatic layout holds all of them.
    uses = "".join(f"    _ = &{var};\n" for b in buffers for var in b.bindings) + "    _ = &uni;\n"
    return (
        f"\n@compute @workgroup_size({workgroup_size})\n"
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
        "        @builtin(local_invocation_index) lid: u32) {\n"
        f"{uses}"
        f"    kernel((wid.y * nwg.x + wid.x) * {workgroup_size}u + lid);\n"
        "}\n"
    )


@functools.lru_cache(maxsize=1024)
def _render(template: str, params: tuple, buffers: tuple[Buffer, ...], arrays: tuple, scalars: tuple,
            workgroup_size: int, search_path: tuple[str, ...]) -> str:
    body = templates.render(template, params, search_path)
    return _header(buffers, arrays, scalars) + body + _entry(buffers, workgroup_size)
