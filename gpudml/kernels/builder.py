"""The kernel builder: from a plan's Dispatch to a Kernel (WGSL source, bindings, uniform
bytes, workgroup grid). Pure: no wgpu.

A plan states what a kernel needs in its own terms: the buffers it binds by role (input k,
output k, scratch k) with the element width and the access it makes (words, 16-byte
blocks, element-wise stores), its named uniforms (a scalar, or one value per axis), its
template with the compile-time parameters, and how many invocations it runs. The builder
owns everything a template would otherwise repeat: the WGSL binding declarations and their
types, the uniform struct and its byte layout, and the entry point, which folds more than
65,535 workgroups into a 2-D grid and calls the template's `fn kernel(gid: u32)`.

The builder also emits the one 64-bit integer library, lib/int64.wgsl.j2 (W64 and the
w64_* functions, native u64 or exact u32 pairs), into the kernels whose Dispatch.int64
asks for it: no template imports it.

Templates (shaders/) hold only their own kernel logic, as WGSL: what decides a template's
structure (loops unrolled over a tile, which loads a variant makes) is Python's, a
function registered with `parts(template)` that turns the compile-time parameters into
WGSL snippets the template substitutes as `{{ code.NAME }}` (kernels/gemm.py's
wgsl_parts). A uniform scalar is `uni.NAME`; value
d of a per-axis uniform is `{{ c.u("NAME", d) }}` (lib/common.wgsl.j2).

Templates never index a buffer variable: they call its accessors, which the builder
writes next to the declarations: `NAME_at(i)` reads word (or block) i, `NAME_set(i, v)`
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
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InternalError, UnsupportedError
from ..tensor_desc import bound_bytes
from . import templates

INPUT, OUTPUT, SCRATCH = "input", "output", "scratch"

#: How a kernel reads or writes a buffer, and the WGSL type that gives it.
#:   words     array<u32>: 32-bit words (8/16-bit elements packed in them, 64-bit ones as pairs)
#:   blocks    array<vec4<u32>>: 16-byte blocks (buffers are allocated in whole blocks)
#:   stores    element-wise stores: array<atomic<u32>> for 8/16-bit elements, which share a
#:             word with other elements (atomic read-modify-write), else array<u32>
#:   atomics   array<atomic<u32>> of 32-bit words that several invocations update: NAME_at
#:             (atomicLoad), NAME_set (atomicStore) and NAME_min (atomicMin, whose result no
#:             order of the invocations changes: a deterministic scatter's claim)
#:   wide      array<vec4<u64>>: 32-byte units, read only (64-bit units: see `unit_access`):
#:             on a CPU adapter each storage read is a loop over the SIMD lanes whatever its
#:             width, and a 32-byte read costs about 1.4 16-byte ones (dequantize_gemm's gemv)
#:   blocks64  array<vec2<u64>>: 16-byte blocks as two 64-bit words (64-bit units: see
#:             `unit_access`): lavapipe loops over the lanes once per component of a
#:             store, half as often as for a vec4<u32> block (kernels/resample.py)
ACCESSES = ("words", "blocks", "stores", "atomics", "wide", "blocks64")
#: The accesses whose unit is not a 32-bit word, and their WGSL element types.
UNITS = {"blocks": "vec4<u32>", "wide": "vec4<u64>", "blocks64": "vec2<u64>"}
#: Bytes of one unit of each access in UNITS (any other access: a 4-byte word).
UNIT_BYTES = {"blocks": 16, "wide": 32, "blocks64": 16}
#: The accesses whose unit is made of 64-bit words (unit_access decides them).
U64_ACCESSES = ("wide", "blocks64")


def u64_units(caps) -> bool:
    """Whether kernels may bind storage as 64-bit units (the U64_ACCESSES): the adapter has
    shader-int64, WGSL's u64 (lavapipe has; GL has no 64-bit types at all). No caps (a
    plan made for no adapter): no. (Whether a kernel computes in u64, Dispatch.int64, is
    another decision: its arithmetic, not its loads and stores.)"""
    return caps is not None and caps.has("shader-int64")


def units_fit(access: str, nbytes: int) -> bool:
    """Whether a tensor of `nbytes` (TensorDesc.buffer_bytes; bound as bound_bytes, whole
    16-byte blocks) binds as whole units of `access`: at least one unit (a binding of a
    runtime-sized array shorter than its element is a validation error: the fuzz's two INT64
    indices under a 32-byte unit) and a whole number of them, so that every byte of the
    tensor lies in a unit the binding's array reaches (a unit across its end would be read
    past the binding: robust access clamps it to another unit or zeros) and so does every
    segment's (segments are powers of two of at least 16 bytes, the last one the rest). A
    kernel reads only units that lie in the tensor (its plan's arithmetic: each kernel
    says how)."""
    unit = UNIT_BYTES.get(access, 4)
    bound = bound_bytes(nbytes)
    return bound >= unit and bound % unit == 0


def unit_access(caps, accesses: tuple[str, ...], *nbytes: int) -> str:
    """The access a plan binds its tensors of `nbytes` with: the first of `accesses` (those
    its template handles, widest first, e.g. ("wide", "blocks64", "blocks")) that the
    adapter gives (64-bit units need `u64_units`) and whose units each of the tensors
    binds whole (`units_fit`); the last is the fallback, and must fit any tensor (a plain
    `blocks` or `words`). The builder checks what a plan asks for (`check_units`)."""
    last = accesses[-1]
    if last in U64_ACCESSES:
        raise InternalError(f"unit_access: the fallback {last!r} of {accesses} does not bind every tensor")
    for access in accesses[:-1]:
        if (access not in U64_ACCESSES or u64_units(caps)) and all(units_fit(access, n) for n in nbytes):
            return access
    return last


def check_units(op: str, dispatch: Dispatch, nbytes: Mapping[tuple[str, int], int], caps) -> None:
    """InternalError where `dispatch` (its buffers segmented: compiler._segment) binds a
    buffer as 64-bit units on an adapter without them, or as units one of its bindings does
    not hold whole (`units_fit`, per binding: a segment, or the whole tensor): a plan that
    did not ask `unit_access`. `nbytes`: each buffer's bytes by key (Buffer.key)."""
    for b in dispatch.buffers:
        if b.access not in UNIT_BYTES:
            continue
        if b.access in U64_ACCESSES and not u64_units(caps):
            raise InternalError(f"{op}: {dispatch.template} binds {b.name} as {b.access} ({UNITS[b.access]} units) "
                                f"on {getattr(caps, 'name', caps)}, which has no shader-int64")
        bound = bound_bytes(nbytes[b.key])
        if b.segments == 1 and not b.of_segments:
            sizes = [bound]
        else:
            sizes = [min(b.segment_bytes, bound - k * b.segment_bytes)
                     for k in range(b.first_segment, b.first_segment + b.segments)]
        bad = [n for n in sizes if not units_fit(b.access, n)]
        if bad:
            raise InternalError(f"{op}: {dispatch.template} binds {b.name} ({b.role} {b.index}, {nbytes[b.key]} "
                                f"bytes) as {b.access}, {UNIT_BYTES[b.access]}-byte units, in bindings of {sizes} "
                                f"bytes: {bad} not a whole number of units (the plan must take unit_access)")


def f32_bits(value: float) -> int:
    """The bits of a float32 (uniforms are u32 words; the kernel bitcasts them): `value`
    rounded to float32 (to nearest even), as an unsigned 32-bit integer."""
    return struct.unpack("<I", struct.pack("<f", float(value)))[0]

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
    #: The blocks buffer (of the same tensor, bound in segments) whose bindings this words
    #: buffer reads and writes through, instead of bindings of its own: one set of bindings
    #: per tensor, half as many (`share_segments`).
    via: str = ""
    #: One pass of several (compiler._passes): of the buffer's `of_segments` segments,
    #: only `segments` from `first_segment` (uniform NAME_first) on are bound; a read of another sets the
    #: kernel's private `seg_miss` (its pass does not write that element) and reads 0, a
    #: write to another is skipped (another pass writes it).
    first_segment: int = 0
    of_segments: int = 0

    @property
    def unit_bytes(self) -> int:
        """Bytes of one array element of the binding: a word, a 16-byte block or a 32-byte unit."""
        return UNIT_BYTES.get(self.access, 4)

    @property
    def atomic(self) -> bool:
        return (self.access == "stores" and self.writable and self.bits < 32) or self.access == "atomics"

    @property
    def wgsl_type(self) -> str:
        if self.access in UNITS:
            return f"array<{UNITS[self.access]}>"
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


#: A buffer of at most this many segments also gets its accessors pinned to each segment
#: (NAME_at_K, ...), and templates may write loops once per segment (lib/common's
#: `pinned`); beyond, the code would grow more than such loops gain.
PINNED_SEGMENTS = 8


def pinned_segments(b: Buffer) -> int:
    """The segments templates may pin `b`'s loops to (`bound_segments`); 1: none."""
    return b.segments if 1 < b.segments <= PINNED_SEGMENTS and not b.of_segments else 1


def segment(buffer: Buffer, nbytes: int, segment_bytes: int) -> Buffer:
    """`buffer`, bound as ceil(nbytes / segment_bytes) segments of `segment_bytes` (a power
    of two, a multiple of 16) when `nbytes` exceeds it."""
    count = -(-nbytes // segment_bytes)
    if count <= 1:
        return buffer
    return replace(buffer, segment_bytes=segment_bytes, segments=count)


def share_segments(buffers: tuple[Buffer, ...]) -> tuple[Buffer, ...]:
    """A tensor bound in segments both as words and as blocks is bound once: its words
    buffer reads (and writes) word i as component i % 4 of block i / 4 of the blocks
    buffer's segments. (Not the atomic element-wise stores of 8/16-bit outputs.)"""
    out = []
    for b in buffers:
        twin = next((c for c in buffers if c.key == b.key and c.access == "blocks" and c.segments > 1
                     and c.writable == b.writable), None)
        if b.access not in UNITS and b.segments > 1 and not b.atomic and twin is not None:
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


def scratch_buffer(index: int, name: str, *, writable: bool, access: str = "words") -> Buffer:
    return Buffer(name, SCRATCH, index, access, 32, writable)


#: Dispatch.int64: the kernel's 64-bit integers ("": none).
INT64_MODES = ("", "native", "emulated")


def int64_mode(needed: bool, native: bool) -> str:
    """Dispatch.int64 of a kernel that computes on 64-bit integers where `needed`, natively
    where `native` (the adapter has shader-int64 and the plan takes it)."""
    return ("native" if native else "emulated") if needed else ""


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
    #: The kernel uses subgroup operations (the adapter has the feature "subgroup"): the
    #: template sees `subgroups` true and reads `sg_size`, see `_entry`.
    subgroups: bool = False
    #: The kernel computes on 64-bit integers (`int64_mode`): "native" (W64 is u64: the
    #: adapter has shader-int64) or "emulated" (exact u32 pairs); the builder emits the
    #: 64-bit library (lib/int64.wgsl.j2) once, before the template's code. "": none.
    int64: str = ""


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
    #: The uniform struct's fields in order: (name, values, per-axis array or scalar); the
    #: HLSL interface of a custom kernel (`gpudml shader OP --interface hlsl`) declares them.
    uniforms: tuple[tuple[str, int, bool], ...] = ()


def build(dispatch: Dispatch, max_workgroups_per_dimension: int, search_path: tuple[str, ...] | None = None) -> Kernel:
    """The Kernel of `dispatch`, its template taken from `search_path` (default: the
    packaged templates, after GPUDML_TEMPLATE_PATH); UnsupportedError if its grid exceeds
    the adapter's limit."""
    if dispatch.int64 not in INT64_MODES:
        raise InternalError(f"{dispatch.template}: int64 = {dispatch.int64!r} is none of {INT64_MODES}")
    for b in dispatch.buffers:
        if b.access not in ACCESSES or b.role not in (INPUT, OUTPUT, SCRATCH):
            raise InternalError(f"{dispatch.template}: buffer {b} has an unknown role or access")
    arrays, scalars = _uniform_fields(dispatch)
    source = _render(dispatch.template, tuple(sorted(dispatch.params.items())), dispatch.buffers,
                     tuple((name, len(values)) for name, values in arrays), tuple(name for name, _ in scalars),
                     dispatch.workgroup_size, dispatch.subgroups, dispatch.int64,
                     search_path or templates.search_path())
    return Kernel(dispatch.template, dispatch.params, source, dispatch.buffers, _uniform_bytes(arrays, scalars),
                  dispatch.invocations, dispatch.workgroup_size,
                  workgroup_grid(dispatch.invocations, dispatch.workgroup_size, max_workgroups_per_dimension),
                  tuple((name, len(v), True) for name, v in arrays) + tuple((name, 1, False) for name, _ in scalars))


def workgroup_grid(invocations: int, workgroup_size: int, limit: int) -> tuple[int, int]:
    """Workgroups as (x, y): more than `limit` per dimension fold into rows."""
    groups = max(1, -(-invocations // workgroup_size))
    x = min(groups, limit)
    y = -(-groups // x)
    if y > limit:
        raise UnsupportedError(f"gpudml: {invocations} invocations need {groups} workgroups, more than {limit}^2 "
                               f"(the adapter's max-compute-workgroups-per-dimension {limit}, squared: one dispatch's "
                               f"grid). Give fewer elements per call (at most {limit * limit * workgroup_size} "
                               f"invocations' worth) or split the tensor into several calls")
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
    if any(b.of_segments for b in buffers):
        lines.append("var<private> seg_miss: bool = false;")
    for b in buffers:
        lines += _accessors(b)
    return "\n".join(lines) + "\n"


def _accessors(b: Buffer) -> list[str]:
    """The accessors of buffer `b` (see the module's doc). A buffer bound in segments also
    gets, up to PINNED_SEGMENTS of them, `NAME_seg(i)` / `NAME_seg2(i)` (the segment of unit
    i / of 64-bit element i) and each accessor pinned to segment K, `NAME_at_K(i)` etc.
    (no choice to make: a template
    calls those inside lib/common's `pinned`, for a loop whose whole range it has checked
    lies in segment K)."""
    item = UNITS.get(b.access, "u32")
    ops = []  # (name, parameters, result, body with {var} for the binding, j for the index)
    if b.access == "atomics":
        ops += [("at", "", " -> u32", "return atomicLoad(&{var}[j]);"),
                ("set", ", v: u32", "", "atomicStore(&{var}[j], v);"),
                ("min", ", v: u32", "", "atomicMin(&{var}[j], v);")]
    elif b.atomic:
        ops += [("and", ", m: u32", "", "atomicAnd(&{var}[j], m);"), ("or", ", m: u32", "", "atomicOr(&{var}[j], m);")]
    else:
        ops.append(("at", "", f" -> {item}", "return {var}[j];"))
        if b.writable:
            ops.append(("set", f", v: {item}", "", "{var}[j] = v;"))
    pairs = []
    if b.access not in UNITS and not b.atomic:
        pairs.append(("at2", "", " -> vec2<u32>", "return vec2<u32>({var}[j], {var}[j + 1u]);"))
        if b.writable:
            pairs.append(("set2", ", v: vec2<u32>", "", "{var}[j] = v.x;\n{var}[j + 1u] = v.y;"))
    segmented = b.segments > 1 or b.of_segments > 0
    variables = tuple(f"{b.via}_{k}" for k in range(b.segments)) if b.via else b.bindings
    # (index prelude, segment expression) for a unit i and for a 64-bit element i
    shift = ((b.segment_bytes // 16 if b.via else b.segment_bytes // b.unit_bytes).bit_length() - 1) if segmented \
        else 0
    if b.via:  # word i: component i % 4 of block i / 4; element i: components 2(i % 2), +1 of block i / 2
        unit = ([f"let j = (i >> 2u) & {(1 << shift) - 1}u;"], f"(i >> 2u) >> {shift}u")
        pair = ([f"let j = (i >> 1u) & {(1 << shift) - 1}u;", "let c = (i & 1u) * 2u;"], f"i >> {shift + 1}u")
        ops = [(n, a, r, t.replace("{var}[j]", "{var}[j][i & 3u]")) for n, a, r, t in ops]
        pairs = [(n, a, r, t.replace("{var}[j]", "{var}[j][c]").replace("{var}[j + 1u]", "{var}[j][c + 1u]"))
                 for n, a, r, t in pairs]
    elif segmented:
        unit = ([f"let j = i & {(1 << shift) - 1}u;"], f"i >> {shift}u")
        pair = ([f"let j = (i & {(1 << (shift - 1)) - 1}u) * 2u;"], f"i >> {shift - 1}u")
    else:
        unit, pair = (["let j = i;"], ""), (["let j = 2u * i;"], "")
    lines = []
    for group, (prelude, seg) in ((ops, unit), (pairs, pair)):
        for name, params, result, body in group:
            returns = "return" in body
            head = f"fn {b.name}_{name}(i: u32{params}){result} {{"
            lines += [head] + ["    " + x for x in prelude]
            if b.of_segments:  # one pass's segments: another's read is a miss, its write not ours
                zero = "vec2<u32>(0u)" if "vec2" in result else ("vec4<u32>(0u)" if "vec4" in result else "0u")
                miss = ["        seg_miss = true;", f"        return {zero};"] if returns else ["        return;"]
                lines += [f"    let s = ({seg}) - uni.{b.name}_first;", f"    if (s >= {b.segments}u) {{"] + miss
                lines += ["    }"]
                lines += _pick(variables, 0, b.segments, body, "    ", returns)
            elif not segmented:
                lines += ["    " + x for x in body.format(var=b.name).split("\n")]
            else:
                lines.append(f"    let s = {seg};")
                lines += _pick(variables, 0, b.segments, body, "    ", returns)
            lines.append("}")
            for k, var in enumerate(variables if pinned_segments(b) > 1 else ()):
                lines += [f"fn {b.name}_{name}_{k}(i: u32{params}){result} {{"] + ["    " + x for x in prelude]
                lines += ["    " + x for x in body.format(var=var).split("\n")] + ["}"]
        if pinned_segments(b) > 1 and group is ops:
            lines += [f"fn {b.name}_seg(i: u32) -> u32 {{", f"    return {seg};", "}"]
        if pinned_segments(b) > 1 and group is pairs and pairs:
            lines += [f"fn {b.name}_seg2(i: u32) -> u32 {{", f"    return {seg};", "}"]
    return lines


def _pick(variables, lo: int, hi: int, body: str, indent: str, returns: bool) -> list[str]:
    """Statements running `body` on the binding of segment `s` among variables[lo:hi]: a
    binary tree of comparisons; in a read function each lower half returns inside its
    `if`, so that the function's last statement is a return."""
    if hi - lo == 1:
        return [indent + x for x in body.format(var=variables[lo]).split("\n")]
    mid = (lo + hi) // 2
    left = _pick(variables, lo, mid, body, indent + "    ", returns)
    if not returns:  # if / else: an early return costs CPU adapters a return mask on what follows
        right = _pick(variables, mid, hi, body, indent + "    ", returns)
        return [f"{indent}if (s < {mid}u) {{"] + left + [f"{indent}}} else {{"] + right + [f"{indent}}}"]
    return [f"{indent}if (s < {mid}u) {{"] + left + [f"{indent}}}"] + _pick(variables, mid, hi, body, indent, returns)


def _entry(buffers: tuple[Buffer, ...], workgroup_size: int, subgroups: bool) -> str:
    """The entry point: calls the template's kernel(gid) with the invocation's flat index.

    With `subgroups`, a workgroup's invocations are numbered subgroup by subgroup
    (subgroup_id * subgroup_size + subgroup_invocation_id), so that a subgroup holds
    consecutive indices whatever the hardware's own numbering, and the private `sg_size`
    tells the template how many: a power of two, and a subgroup's invocations are the
    indices that differ only in the bits below it (subgroupShuffleXor with a mask under
    sg_size stays inside it). Where the workgroup's subgroups are not all full, or their size
    is no power of two, the numbering is local_invocation_index and sg_size is 1: the
    template then runs no subgroup operation. (The WGSL has no `enable subgroups;`: naga,
    wgpu-native's compiler, rejects the directive and accepts the built-ins without it.)"""
    # Every binding is used by the entry point (`_ = &x;` costs nothing), so that the
    # pipeline's automatic layout holds all of them.
    uses = "".join(f"    _ = &{var};\n" for b in buffers for var in b.bindings) + "    _ = &uni;\n"
    builtins, numbering, local = "", "", "lid"
    if subgroups:
        builtins = (", @builtin(subgroup_id) sgid: u32,\n        @builtin(num_subgroups) nsg: u32, "
                    "@builtin(subgroup_size) sgs: u32,\n        @builtin(subgroup_invocation_id) sgi: u32")
        numbering = (f"    let full = nsg * sgs == {workgroup_size}u && (sgs & (sgs - 1u)) == 0u;\n"
                     "    sg_size = select(1u, sgs, full);\n")
        local = "select(lid, sgid * sgs + sgi, full)"
    return (
        ("\nvar<private> sg_size: u32 = 1u;\n" if subgroups else "")
        + f"\n@compute @workgroup_size({workgroup_size})\n"
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
        f"        @builtin(local_invocation_index) lid: u32{builtins}) {{\n"
        f"{uses}{numbering}"
        f"    kernel((wid.y * nwg.x + wid.x) * {workgroup_size}u + {local});\n"
        "}\n"
    )


#: template -> fn(params) -> {NAME: WGSL}: the parts a template substitutes as `code.NAME`.
_PARTS: dict[str, Callable[[dict], Mapping[str, str]]] = {}


def parts(template: str):
    """Decorator: `fn(params) -> {NAME: WGSL}` writes the parts of `template` that its
    compile-time parameters decide; the template reads them as `{{ code.NAME }}` (a part's
    text has no trailing newline). The parts are part of the rendering's cache key."""
    def register(fn):
        _PARTS[template] = fn
        return fn
    return register


@functools.lru_cache(maxsize=1024)
def _render(template: str, params: tuple, buffers: tuple[Buffer, ...], arrays: tuple, scalars: tuple,
            workgroup_size: int, subgroups: bool, int64: str, search_path: tuple[str, ...]) -> str:
    # The segments each buffer's loops may be pinned to (lib/common's `pinned`; 1: none).
    params = params + (("bound_segments", tuple((b.name, pinned_segments(b)) for b in buffers)),
                       ("subgroups", subgroups))
    if template in _PARTS:
        params = params + (("code", dict(sorted(_PARTS[template](dict(params)).items()))),)
    body = templates.render(template, params, search_path)
    # The 64-bit library: one, the builder's, whatever the template's parts compute with.
    wide = templates.render("lib/int64.wgsl.j2", (("native", int64 == "native"),), search_path) if int64 else ""
    return called_only(_header(buffers, arrays, scalars) + wide + body + _entry(buffers, workgroup_size, subgroups))


#: What the scan of a kernel's top level reads: comments (skipped), braces, `fn NAME`.
_TOKENS = re.compile(r"//[^\n]*|/\*.*?\*/|[{}]|\bfn\s+([A-Za-z_]\w*)", re.S)
_CALLS = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def called_only(source: str) -> str:
    """`source` without the functions its entry point `main` never calls, directly or not:
    the libraries a template includes (the element-wise table's helpers an epilogue may
    call, the 64-bit library) bring a hundred functions of which a kernel calls a few, and
    every one costs wgpu's WGSL front end and the driver's compiler at pipeline creation
    (docs/performance.md, a model's cold start). Top-level `fn` declarations only, found by
    brace depth (comments skipped; WGSL has no strings); everything else stays."""
    spans, depth, opened = {}, 0, None
    for m in _TOKENS.finditer(source):
        token = m.group(0)
        if token[0] == "/":
            continue
        if m.group(1) is not None:
            if depth == 0:
                opened = (m.group(1), m.start())
        elif token == "{":
            depth += 1
        else:
            depth -= 1
            if depth == 0 and opened is not None:
                spans[opened[0]] = (opened[1], m.end())
                opened = None
    if "main" not in spans:
        return source
    kept, todo = set(), ["main"]
    while todo:
        name = todo.pop()
        if name in kept:
            continue
        kept.add(name)
        start, end = spans[name]
        todo.extend(c for c in _CALLS.findall(source, start + 2, end) if c in spans and c not in kept)
    out, at = [], 0
    for name, (start, end) in sorted(spans.items(), key=lambda item: item[1][0]):
        if name not in kept:
            out.append(source[at:start])
            at = end + (source[end:end + 1] == "\n")
    out.append(source[at:])
    return "".join(out)
