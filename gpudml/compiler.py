"""The pure compiler: `compile(desc, caps) -> Program`, the WGSL sources, bindings, uniforms
and dispatch sizes of one operator description on an adapter with capabilities `caps`.

No wgpu: the runtime only turns a Program into pipelines and runs it, and `gpudml shader`
prints one on a machine with no adapter at all (caps from a named profile, gpudml.caps).
The description must be valid (Device.create_operator or the spec's `validate` checked
it); what a valid description cannot get on this adapter (a binding or a grid above its
limits, a reduction no combine pass can merge) is an UnsupportedError.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from . import builder, templates
from .builder import Kernel
from .caps import Caps
from .errors import InvalidArgumentError, UnsupportedError
from .ops import spec_for, tensor_fields
from .tensor_desc import TensorDesc


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
            template_path=None, spec=None) -> Program:
    """Plan `desc` under `strategy` (None: the operator's choice for `caps`) and build its
    kernels. `options`: the operator's plan knobs for experiments (OpSpec.options).
    `template_path`: folders of templates searched before GPUDML_TEMPLATE_PATH and the
    packaged ones (templates.search_path). `spec`: the desc's spec (default: the registered
    operator's; a graph's fused kernels bring their own, gpudml/fusion.py)."""
    spec = spec if spec is not None else spec_for(desc)
    options = dict(options or {})
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        known = ", ".join(spec.options) or "none"
        raise InvalidArgumentError(f"{spec.name}: unknown plan option(s) {', '.join(unknown)} (options: {known})")
    inputs, outputs = tensor_fields(desc)
    _check_bindings(spec.name, inputs + outputs, caps)
    eligible = tuple(spec.strategies_for(desc, caps, **options))
    if strategy is None:
        strategy = eligible[0]
    elif strategy not in eligible:
        raise InvalidArgumentError(
            f"{spec.name}: strategy {strategy!r} cannot run this description; eligible: {', '.join(eligible)} "
            f"(strategies of {spec.name}: {', '.join(spec.strategies)})")
    plan = spec.plan(desc, caps, strategy, **options)
    search_path = templates.search_path(template_path)
    _check_binding_count(spec.name, plan.dispatches, caps)
    kernels = tuple(builder.build(d, caps.max_workgroups_per_dimension, search_path) for d in plan.dispatches)
    return Program(spec.name, strategy, eligible, kernels, tuple(plan.scratch_bytes), tuple(inputs), tuple(outputs),
                   templates.digest(search_path))


def _check_bindings(op: str, tensors, caps: Caps) -> None:
    limit = caps.max_storage_binding_size
    for name, desc in tensors:
        if desc.buffer_bytes > limit:
            raise UnsupportedError(
                f"{op}: {name} needs a {desc.buffer_bytes}-byte binding, above the adapter's "
                f"max-storage-buffer-binding-size {limit} ({caps.name}); gpudml does not split a tensor "
                f"across bindings: split the work along an outer axis")


def _check_binding_count(op: str, dispatches, caps: Caps) -> None:
    """Each kernel binds at most the adapter's storage buffers per shader stage (an operator
    with many tensors, JOIN's or SPLIT's, plans several dispatches instead)."""
    limit = caps.max_storage_buffers_per_shader_stage
    for i, d in enumerate(dispatches):
        if len(d.buffers) > limit:
            raise UnsupportedError(
                f"{op}: dispatch {i} ({d.template}) binds {len(d.buffers)} storage buffers, above the adapter's "
                f"max-storage-buffers-per-shader-stage {limit} ({caps.name})")
