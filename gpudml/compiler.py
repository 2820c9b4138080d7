"""The pure compiler: `compile(desc, caps) -> Program`, the WGSL sources, bindings, uniforms
and dispatch sizes of one operator description on an adapter with capabilities `caps`.

No wgpu: the runtime only turns a Program into pipelines and runs it, and `gpudml shader`
prints one on a machine with no adapter at all (caps from a named profile, gpudml.caps).
The description must be valid (Device.create_operator or the spec's `validate` checked
it); what a valid description cannot get on this adapter (more bindings or a grid above
its limits, a reduction no combine pass can merge) is an UnsupportedError.

A tensor (or scratch buffer) larger than one storage binding may be is bound as several
segments (`_segment`; builder.py's accessors pick the segment), so plans never see the
binding limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from .caps import Caps, floor_pow2
from .errors import InvalidArgumentError, UnsupportedError
from .kernels import builder, templates
from .kernels.builder import INPUT, OUTPUT, Kernel
from .ops import spec_for, tensor_fields
from .ops.spec import Operation
from .tensor_desc import TensorDesc, bound_bytes


@dataclass(frozen=True)
class Program:
    """One operator description compiled for one adapter."""

    operator: str  # the spec's name, e.g. "Slice1"
    strategy: str  # the strategy the kernels implement
    strategies: tuple[str, ...]  # every strategy that could run the description, the chosen one first
    kernels: tuple[Kernel, ...]  # dispatched in order
    scratch_bytes: tuple[int, ...]  # scratch buffers the kernels bind by index
    inputs: tuple[tuple[str, TensorDesc], ...]  # (desc field, tensor) per input, in execute order
    outputs: tuple[tuple[str, TensorDesc], ...]
    templates: str  # a digest of the templates the kernels came from (templates.digest)

    @property
    def wgsl(self) -> list[str]:
        return [k.source for k in self.kernels]


def compile(desc, caps: Caps, *, strategy: str | None = None, options: Mapping | None = None,  # noqa: A001
            template_path=None, operation: Operation | None = None) -> Program:
    """Plan `desc` under `strategy` (None: the operator's choice for `caps`) and build its
    kernels. `options`: the operator's plan knobs for experiments (Planner.options).
    `template_path`: folders of templates searched before GPUDML_TEMPLATE_PATH and the
    packaged ones (templates.search_path). `operation`: what runs the desc (default: the
    registered operator's spec; a graph's fused kernels bring their own, gpudml/fusion.py)."""
    operation = operation if operation is not None else spec_for(desc)
    planner = operation.planner
    options = dict(options or {})
    unknown = sorted(set(options) - set(planner.options))
    if unknown:
        known = ", ".join(planner.options) or "none"
        raise InvalidArgumentError(f"{operation.name}: unknown plan option(s) {', '.join(unknown)} (options: {known})")
    inputs, outputs = tensor_fields(desc)
    eligible = tuple(planner.strategies_for(desc, caps, **options))
    if strategy is None:
        strategy = eligible[0]
    elif strategy not in eligible:
        raise InvalidArgumentError(
            f"{operation.name}: strategy {strategy!r} cannot run this description; eligible: {', '.join(eligible)} "
            f"(strategies of {operation.name}: {', '.join(planner.strategies)})")
    plan = planner.plan(desc, caps, strategy, **options)
    search_path = templates.search_path(template_path)
    sizes = {(INPUT, i): d.buffer_bytes for i, (_, d) in enumerate(inputs)}
    sizes.update({(OUTPUT, i): d.buffer_bytes for i, (_, d) in enumerate(outputs)})
    sizes.update({(builder.SCRATCH, i): n for i, n in enumerate(plan.scratch_bytes)})
    dispatches = [s for i, d in enumerate(plan.dispatches) for s in _segment(operation.name, i, d, sizes, caps)]
    for d in dispatches:  # 64-bit and 16/32-byte units: bindings that hold them whole (builder.unit_access)
        builder.check_units(operation.name, d, sizes, caps)
    kernels = tuple(builder.build(d, caps.max_workgroups_per_dimension, search_path) for d in dispatches)
    return Program(operation.name, strategy, eligible, kernels, tuple(plan.scratch_bytes), tuple(inputs),
                   tuple(outputs), templates.digest(search_path))


#: Bindings one kernel takes at most, whatever the adapter allows (524,288 on an H100): a
#: forced small binding limit there would otherwise pick among thousands of segments per
#: access. Real tensors need far fewer (a 32 GiB tensor is 32 segments of 1 GiB).
MAX_BINDINGS = 128


def _passes(dispatch: builder.Dispatch, sizes, seg: int, allowed: int) -> list[builder.Dispatch]:
    """A data-movement kernel (shaders/movement.wgsl.j2) whose tensors take more bindings
    than the adapter has, as several passes: each binds a group of the source's segments
    and a group of the output's, and writes the output elements of its group read from
    its source group (the strided kernel, element-wise stores; an element read from
    another group is another pass's to write, a fill is written by every pass of its output
    group). Slow (each pass walks every output element) but within the limits. [] where
    the kernel is not one, or the other tensors leave fewer than two bindings."""
    if dispatch.template != "movement.wgsl.j2":
        return []
    buffers = []
    for b in dispatch.buffers:
        if b.key == (INPUT, 0) and b.access == "blocks":
            continue  # the strided kernel reads the source as words only
        if b.role == OUTPUT:
            b = replace(b, access="stores")
        buffers.append(builder.segment(b, bound_bytes(sizes[b.key]), seg))
    source = next((b for b in buffers if b.key == (INPUT, 0) and b.name == "input"), None)
    output = next((b for b in buffers if b.role == OUTPUT), None)
    if source is None or output is None:
        return []
    budget = allowed - builder.binding_count(b for b in buffers if b is not source and b is not output)
    if budget < 2:
        return []
    out_group = min(output.segments, max(1, budget // 2))
    in_group = min(source.segments, budget - out_group)
    out_group = min(output.segments, budget - in_group)
    params = {**dict(dispatch.params), "strategy": "strided", "passes": True}
    passes = []
    for out_first in range(0, output.segments, out_group):
        for in_first in range(0, source.segments, in_group):
            group, firsts = {id(b): b for b in buffers}, {}
            for b, first, size in ((source, in_first, in_group), (output, out_first, out_group)):
                if b.segments > size:  # (the first segment a uniform: passes of one size share a kernel)
                    group[id(b)] = replace(b, segment_bytes=seg, first_segment=first,
                                           segments=min(size, b.segments - first), of_segments=b.segments)
                    firsts[f"{b.name}_first"] = first
            passes.append(replace(dispatch, params=params, buffers=tuple(group[id(b)] for b in buffers),
                                  uniforms={**dict(dispatch.uniforms), **firsts}))
    return passes


def _segment(op: str, number: int, dispatch: builder.Dispatch, sizes, caps: Caps) -> list[builder.Dispatch]:
    """`dispatch` with every buffer larger than one binding may be split into segments
    (a list of one; of several passes where `_passes` splits a data-movement kernel).

    Segments are the largest power of two within the binding limit (caps.binding_bytes,
    which a forced limit lowers); where that would take more bindings than the adapter
    has per kernel, segments double, up to the adapter's own limits (caps.largest_segment).
    Where even those take too many bindings, a data-movement kernel runs in several passes
    (`_passes`); any other is an UnsupportedError. (Indices stay within 32 bits:
    element offsets are below 2^32 (tensor_desc), words of a 64-bit element are found from
    its element index (builder's NAME_at2), block indices are a quarter of word indices.)"""
    limit = caps.binding_bytes
    seg = max(caps.segment_quantum, floor_pow2(limit))
    allowed = min(caps.max_storage_buffers_per_shader_stage, MAX_BINDINGS)
    while True:
        buffers = builder.share_segments(tuple(
            builder.segment(b, bound_bytes(sizes[b.key]), seg) if bound_bytes(sizes[b.key]) > limit else b
            for b in dispatch.buffers))
        count = builder.binding_count(buffers)
        if count <= allowed:
            return [replace(dispatch, buffers=buffers)]
        if seg * 2 > caps.largest_segment:
            passes = _passes(dispatch, sizes, seg, allowed)
            if passes:
                return passes
            total = sum(bound_bytes(sizes[k]) for k in {b.key for b in dispatch.buffers})
            raise UnsupportedError(
                f"{op}: dispatch {number} ({dispatch.template}) needs {count} storage bindings ("
                + ", ".join(f"{b.role} {b.index}: {len(b.bindings)}" for b in buffers if b.bindings)
                + f" segments of at most {seg} bytes), above {allowed}, the adapter's "
                f"max-storage-buffers-per-shader-stage {caps.max_storage_buffers_per_shader_stage} ({caps.name}) "
                f"or gpudml's own cap of {MAX_BINDINGS}: its tensors take "
                f"{total} bytes, one dispatch reaches about "
                f"{allowed * seg} bytes. Use a smaller batch (a call's tensors within that) or split the work "
                f"into several calls")
        seg *= 2
        limit = seg
