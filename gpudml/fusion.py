"""Fusion of a graph's data-movement chains into single kernels (API.md section 8).

A chain of data-movement nodes (operators whose spec has `chain_stage`: Slice1, Padding,
ReverseSubsequences, and any added later) maps each output coordinate back to one element
of the chain's source, or to a padding constant: it runs as one kernel of the same
templates as the operators alone (shaders/movement.wgsl.j2 over the stages of
shaders/lib/chain.wgsl.j2), with no intermediate tensor. An operator that can read its
input through such a chain (its spec has `read_through`: Reduce) does so instead of
reading a tensor.

The rules (`plan`): a value is *materialized* (written to a tensor) when it is a graph
output, a graph input or constant, the output of an operator that is not data movement,
or read by a node that cannot take it through a chain (a non-movement operator without
`read_through`, or a data-movement operator's other inputs, such as ReverseSubsequences'
lengths). Every other value, a data-movement node's output, is never written: each
materialized data-movement value is one kernel that walks its chain back to the nearest
materialized value (its source), and each node that reads through a chain is one kernel
(a chain read by several consumers is recomputed in each). Any other node is one kernel
of its own. A chain of one node is that operator's own kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ops import movement, spec_for
from .tensor_desc import TensorDesc


# ---------------------------------------------------------------------------- fused descs
@dataclass(frozen=True)
class FusedMovementDesc:
    """A chain of data-movement operator descs (`nodes`, the source's side first) read from
    `input_tensor`, with the extra tensors its stages read (`read_tensors`, in the chain's
    binding order: ops.movement.chain), written to `output_tensor` (the last node's)."""

    input_tensor: TensorDesc
    read_tensors: tuple[TensorDesc, ...]
    output_tensor: TensorDesc
    nodes: tuple


@dataclass(frozen=True)
class FusedReadDesc:
    """`consumer` (a desc whose spec has read_through) reading its first input through the
    chain `nodes` from `input_tensor` (and `read_tensors`), written to `output_tensor`."""

    input_tensor: TensorDesc
    read_tensors: tuple[TensorDesc, ...]
    output_tensor: TensorDesc
    nodes: tuple
    consumer: object


def _chain(nodes, source: TensorDesc) -> movement.Chain:
    """The chain of `nodes` (source side first) read from `source`."""
    return movement.chain([spec_for(n).chain_stage(n) for n in reversed(nodes)], source.effective_strides)


def _reads(nodes) -> tuple[TensorDesc, ...]:
    return tuple(t for n in reversed(nodes) for t in spec_for(n).chain_stage(n).reads)


def _name(nodes, consumer=None) -> str:
    names = [spec_for(n).name for n in nodes] + ([spec_for(consumer).name] if consumer is not None else [])
    return "Fused(" + ">".join(names) + ")"


@dataclass(frozen=True)
class FusedSpec:
    """What the compiler needs of a fused desc's operator (compiler.compile's `spec`)."""

    name: str
    strategies: tuple[str, ...]
    strategies_for: object
    plan: object
    options: tuple[str, ...] = ()
    sample = None  # (autotuning's sample inputs: random bits)
    variants = None  # (autotuning: its strategies with their own plans; no plan options)


def movement_spec(desc: FusedMovementDesc) -> FusedSpec:
    def strategies_for(d, caps):
        return movement.strategies_for(d.output_tensor, caps)

    def plan(d, caps, strategy):
        from .builder import KernelPlan

        the_chain = _chain(d.nodes, d.input_tensor)
        run = movement.CHAIN_RUN_CPU if caps.is_software and len(the_chain.stages) > 1 else movement.RUN
        return KernelPlan((movement.movement_dispatch(strategy, d.output_tensor, the_chain, run=run),))

    return FusedSpec(_name(desc.nodes), movement.STRATEGIES, strategies_for, plan)


def read_spec(desc: FusedReadDesc) -> FusedSpec:
    through = spec_for(desc.consumer).read_through

    def strategies_for(d, caps):
        return through.strategies_for(d.consumer, caps)

    def plan(d, caps, strategy):
        return through.plan(d.consumer, caps, strategy, _chain(d.nodes, d.input_tensor))

    return FusedSpec(_name(desc.nodes, desc.consumer), spec_for(desc.consumer).strategies, strategies_for, plan)


# ---------------------------------------------------------------------------- planning
@dataclass(frozen=True)
class Group:
    """One kernel of a fused graph: `desc` (an operator's own, or a fused one) with its
    `spec`, reading values `inputs` and writing values `outputs` (in the desc's order)."""

    desc: object
    spec: object
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    nodes: tuple[int, ...]  # the graph nodes it computes (indices), the source's side first


#: Bindings of a chain's kernel besides its stages' extra tensors: the output, the source,
#: the source again as 16-byte chunks, and a scratch buffer (a Reduce's partial results).
FIXED_BINDINGS = 4


def plan(nodes, outputs, value_descs, max_bindings: int | None = None) -> list[Group]:
    """The kernels computing `outputs` (value ids) from graph `nodes` (each with .desc,
    .spec, .inputs and .outputs as value ids, in recording order, so that producers come
    first), following the rules above. `value_descs[v]` is value v's TensorDesc. Groups
    come in an order that runs producers first. `max_bindings`: the storage buffers a
    kernel may bind (Caps.max_storage_buffers_per_shader_stage); a chain whose stages read
    more extra tensors (ReverseSubsequences' lengths) than fit is cut where it would
    overflow (that value is materialized)."""
    producer = {v: i for i, node in enumerate(nodes) for v in node.outputs}
    needed = _needed(nodes, producer, outputs)
    movement_node = {i: nodes[i].spec.chain_stage is not None and len(nodes[i].outputs) == 1 for i in needed}
    materialized = set(outputs)
    for i in needed:
        node = nodes[i]
        for k, v in enumerate(node.inputs):
            data_path = k == 0 and (movement_node[i] or node.spec.read_through is not None)
            if v not in producer or not movement_node[producer[v]] or not data_path:
                materialized.add(v)
        if not movement_node[i]:
            materialized.update(node.outputs)
    if max_bindings is not None:
        _fit_bindings(nodes, needed, movement_node, materialized, max_bindings - FIXED_BINDINGS)
    groups = []
    for i in sorted(needed):
        node = nodes[i]
        if movement_node[i]:
            if node.outputs[0] in materialized:
                groups.append(_movement_group(nodes, producer, materialized, i, value_descs))
        elif node.spec.read_through is not None and node.inputs[0] not in materialized:
            groups.append(_read_group(nodes, producer, materialized, i, value_descs))
        else:
            groups.append(Group(node.desc, node.spec, tuple(node.inputs), tuple(node.outputs), (i,)))
    return groups


def _needed(nodes, producer, outputs) -> set[int]:
    needed, todo = set(), [producer[v] for v in outputs if v in producer]
    while todo:
        i = todo.pop()
        if i not in needed:
            needed.add(i)
            todo += [producer[v] for v in nodes[i].inputs if v in producer]
    return needed


def _fit_bindings(nodes, needed, movement_node, materialized: set, budget: int) -> None:
    """Materialize the data input of a node whose chain (with the node's own extra inputs)
    would bind more than `budget` extra tensors: the chain is cut there (producers first,
    so each chain keeps as many stages as fit)."""
    extra: dict[int, int] = {}  # non-materialized movement value -> extra tensors of its chain
    for i in sorted(needed):
        node = nodes[i]
        if not (movement_node[i] or node.spec.read_through is not None):
            continue
        source = node.inputs[0]
        count = (0 if source in materialized else extra.get(source, 0)) + len(node.inputs) - 1
        if count > budget and source not in materialized:
            materialized.add(source)
            count = len(node.inputs) - 1
        if movement_node[i]:
            extra[node.outputs[0]] = count


def _walk(nodes, producer, materialized, last: int) -> tuple[list[int], int]:
    """The chain ending at node `last`: its nodes (source side first) and its source value."""
    chain = [last]
    while True:
        v = nodes[chain[-1]].inputs[0]
        if v in materialized:
            return chain[::-1], v
        chain.append(producer[v])


def _extra_inputs(nodes, chain: list[int]) -> tuple[int, ...]:
    """The values the chain's stages read besides the data, in the chain's binding order."""
    return tuple(v for i in reversed(chain) for v in nodes[i].inputs[1:])


def _movement_group(nodes, producer, materialized, last: int, value_descs) -> Group:
    chain, source = _walk(nodes, producer, materialized, last)
    if len(chain) == 1:
        node = nodes[last]
        return Group(node.desc, node.spec, tuple(node.inputs), tuple(node.outputs), (last,))
    descs = tuple(nodes[i].desc for i in chain)
    desc = FusedMovementDesc(value_descs[source], _reads(descs), value_descs[nodes[last].outputs[0]], descs)
    return Group(desc, movement_spec(desc), (source,) + _extra_inputs(nodes, chain), tuple(nodes[last].outputs),
                 tuple(chain))


def _read_group(nodes, producer, materialized, i: int, value_descs) -> Group:
    node = nodes[i]
    chain, source = _walk(nodes, producer, materialized, producer[node.inputs[0]])
    descs = tuple(nodes[k].desc for k in chain)
    desc = FusedReadDesc(value_descs[source], _reads(descs), node.desc.output_tensor, descs, node.desc)
    return Group(desc, read_spec(desc), (source,) + _extra_inputs(nodes, chain), tuple(node.outputs),
                 tuple(chain) + (i,))
