"""Fusion of a graph's data-movement chains into single kernels (gpudml.Graph).

A chain of data-movement nodes (operators whose planner gives a chain stage: Slice1,
Slice0, Padding, Padding1, Tile, Gather, ReverseSubsequences, and any added later) maps
each output coordinate back to one element of the chain's source, or to a padding
constant: it runs as one kernel of the same templates as the operators alone
(shaders/movement.wgsl.j2 over the stages of shaders/lib/chain.wgsl.j2), with no
intermediate tensor. An operator whose planner has the prologue (Reduce, ArgMax, ArgMin)
reads its input through such a chain instead of reading a tensor. A fused kernel is run by
a FusedSpec: a planner of the kernel layer's protocol, and the nodes' semantics composed.

The rules (`plan`): a value is *materialized* (written to a tensor) when it is a graph
output, a graph input or constant, the output of an operator that is not data movement,
or read by a node that cannot take it through a chain (an operator without the prologue,
or a data-movement operator's other inputs, such as ReverseSubsequences' lengths). Every
other value, a data-movement node's output, is never written: each
materialized data-movement value is one kernel that walks its chain back to the nearest
materialized value (its source), and each node that reads through a chain is one kernel
(a chain read by several consumers is recomputed in each). Any other node is one kernel
of its own. A chain of one node is that operator's own kernel.

Element-wise nodes fuse into one element-wise kernel (`_inline_elementwise`), and into the
store of the kernel that computes their input, its *epilogue* (kernels/epilogue.py; the
planners' `epilogue` hook: Reduce, ArgMax, ArgMin, GEMM, the softmax family, the scans, and
data-movement chains through the movement kernel's `strided` strategy). The epilogue rules
(`_epilogue_producers`): the value of such a producer is not written, and the element-wise
chain reading it (an element-wise root and the nodes inlined into it) is computed in the
producer's kernel, where the value
- is no graph output, is read exactly once (by a node of the chain), and the producer
  has that one output;
- is read as it is (its own sizes, packed: no broadcast, no layout change) and the chain's
  output is packed, so that an output element's offset is its index for every tensor the
  chain reads (those read through their own strides at the element's coordinates,
  broadcast included);
- and every tensor of the chain is at most 32 bits wide (no FLOAT64 step, no 64-bit
  integers: a producer's kernel picks its own 64-bit representation; ArgMax's default INT64
  output is not fused);
- the producer does not itself read through a chain (a Reduce's prologue: one or the other);
- the kernel's tensors fit the adapter's storage bindings.
One producer per chain (the first value that qualifies: `add(gemm1, gemm2)` runs in
gemm1's store, gemm2 is written). Results equal the unfused graph: the producer's value is
rounded to its type before the steps, as a tensor would be; integer and movement steps are
bit-exact, float steps within their rows' tolerance (a compiler may contract).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .kernels import elementwise
from .kernels.base import Planner
from .kernels.builder import KernelPlan
from .kernels.chain import Chain, chain
from .kernels.epilogue import Epilogue, attach, check
from .kernels.movement import family as movement
from .ops import spec_for
from .ops.spec import random_buffer, tensor_fields
from .tensor_desc import TensorDesc
from .types import DataType


# ---------------------------------------------------------------------------- fused descs
@dataclass(frozen=True)
class FusedMovementDesc:
    """A chain of data-movement operator descs (`nodes`, the source's side first) read from
    `input_tensor`, with the extra tensors its stages read (`read_tensors`, in the chain's
    binding order: kernels.chain.chain), written to `output_tensor` (the last node's)."""

    input_tensor: TensorDesc
    read_tensors: tuple[TensorDesc, ...]
    output_tensor: TensorDesc
    nodes: tuple


@dataclass(frozen=True)
class FusedReadDesc:
    """`consumer` (a desc whose planner has the prologue) reading its first input through
    the chain `nodes` from `input_tensor` (and `read_tensors`), written to `output_tensor`."""

    input_tensor: TensorDesc
    read_tensors: tuple[TensorDesc, ...]
    output_tensor: TensorDesc
    nodes: tuple
    consumer: object


def _chain(nodes, source: TensorDesc) -> Chain:
    """The chain of `nodes` (source side first) read from `source`."""
    return chain([spec_for(n).planner.stage(n) for n in reversed(nodes)], source.effective_strides)


def _reads(nodes) -> tuple[TensorDesc, ...]:
    return tuple(t for n in reversed(nodes) for t in spec_for(n).planner.stage(n).reads)


class FusedMovementPlanner(Planner):
    """A chain of data-movement nodes as one movement kernel."""

    strategies = movement.STRATEGIES

    def strategies_for(self, desc: FusedMovementDesc, caps) -> tuple[str, ...]:
        return movement.strategies_for(desc.output_tensor, caps)

    def plan(self, desc: FusedMovementDesc, caps, strategy: str) -> KernelPlan:
        the_chain = _chain(desc.nodes, desc.input_tensor)
        run = movement.CHAIN_RUN_CPU if caps.is_software and len(the_chain.stages) > 1 else movement.RUN
        return KernelPlan((movement.movement_dispatch(strategy, desc.output_tensor, the_chain, run=run),))

    epilogue = True

    def strategies_with_epilogue(self, desc: FusedMovementDesc, caps, epilogue) -> tuple[str, ...]:
        """`strided` only: the others store 16-byte blocks assembled from several elements."""
        return ("strided",)

    def plan_with_epilogue(self, desc: FusedMovementDesc, caps, strategy: str, epilogue) -> KernelPlan:
        check(epilogue, desc.output_tensor)
        return attach(self.plan(desc, caps, strategy), epilogue, 1 + len(desc.read_tensors))


class FusedReadPlanner(Planner):
    """A consumer reading through a chain: its planner's prologue."""

    def __init__(self, consumer_planner: Planner):
        self.consumer = consumer_planner
        self.strategies = consumer_planner.strategies

    def strategies_for(self, desc: FusedReadDesc, caps) -> tuple[str, ...]:
        return self.consumer.strategies_through(desc.consumer, caps)

    def plan(self, desc: FusedReadDesc, caps, strategy: str) -> KernelPlan:
        return self.consumer.plan_through(desc.consumer, caps, strategy, _chain(desc.nodes, desc.input_tensor))


_MOVEMENT = FusedMovementPlanner()


@dataclass(frozen=True)
class FusedSpec:
    """What runs a fused desc (an ops.spec.Operation, as an operator's OpSpec is): its name
    ("Fused(Padding>Slice1>Reduce)"), its planner, and its semantics composed from the
    nodes' own: sample inputs and expected outputs (so that autotuning checks a fused
    kernel's variants against the references of its nodes, as it checks an operator's)."""

    name: str
    planner: Planner

    def sample_buffers(self, desc, rng: np.random.Generator) -> list[np.ndarray]:
        """The chain's source as its first node samples its input (a consumer's own sample
        where the chain's nodes take any bits: a Reduce's values stay finite), the extra
        tensors as their nodes sample them (lengths, indices)."""
        first = desc.nodes[0]
        source_spec = spec_for(first)
        if isinstance(desc, FusedReadDesc) and spec_for(desc.consumer).sample is not None:
            source = _as_input_of(desc.consumer, desc.input_tensor)
            source_spec, first = spec_for(desc.consumer), source
        else:
            source = first
        buffers = [_resized(source_spec.sample_buffers(first, rng)[0], desc.input_tensor, rng)]
        for node in reversed(desc.nodes):  # the extra tensors, output side first (the binding order)
            buffers += spec_for(node).sample_buffers(node, rng)[1:]
        return buffers

    def expected_outputs(self, desc, logical_inputs) -> tuple[list[np.ndarray], list]:
        """Each node's reference applied in turn (the source's side first), then the
        consumer's; precision: the consumer's (data movement is bit-exact)."""
        value, extras = logical_inputs[0], list(logical_inputs[1:])
        per_node = {}
        for node in reversed(desc.nodes):  # the extra tensors come output side first
            count = len(tensor_fields(node)[0]) - 1
            per_node[id(node)], extras = extras[:count], extras[count:]
        for node in desc.nodes:
            value = spec_for(node).reference_outputs(node, [value, *per_node[id(node)]])[0]
        if isinstance(desc, FusedReadDesc):
            return spec_for(desc.consumer).expected_outputs(desc.consumer, [value])
        return [value], [None]

    def traffic(self, desc) -> int:
        """The source and the extra tensors read once, the output written once."""
        inputs, outputs = tensor_fields(desc)
        return sum(d.element_count * d.data_type.size for _, d in inputs + outputs)


def _as_input_of(consumer, source: TensorDesc):
    """`consumer` (a desc with an input_tensor) with `source` in its input's place: the desc
    whose sample draws the chain's source (the consumer's rules for values, the source's
    size)."""
    return replace(consumer, input_tensor=source)


def _resized(buffer: np.ndarray, desc: TensorDesc, rng) -> np.ndarray:
    """`buffer` with exactly `desc.required_elements` elements: a sample drawn for a desc of
    another size is cut or filled up with more random bits."""
    need = desc.required_elements
    if buffer.size >= need:
        return buffer[:need]
    return np.concatenate([buffer, random_buffer(TensorDesc(desc.data_type, [need - buffer.size]), rng)])


def _name(nodes, consumer=None) -> str:
    names = [spec_for(n).name for n in nodes] + ([spec_for(consumer).name] if consumer is not None else [])
    return "Fused(" + ">".join(names) + ")"


def movement_spec(desc: FusedMovementDesc) -> FusedSpec:
    return FusedSpec(_name(desc.nodes), _MOVEMENT)


def read_spec(desc: FusedReadDesc) -> FusedSpec:
    return FusedSpec(_name(desc.nodes, desc.consumer), FusedReadPlanner(spec_for(desc.consumer).planner))


@dataclass(frozen=True)
class FusedElementWiseDesc:
    """Element-wise nodes (`nodes`, producers first) computed in one kernel: each node's
    arguments (`args`, per node: ("input", k) for `input_tensors[k]`, ("step", j) for node
    j's result), the tensors read as the kernel reads them (the output's sizes, their own
    strides: 0 where a node broadcasts them), written to `output_tensor` (the last node's)."""

    input_tensors: tuple[TensorDesc, ...]
    output_tensor: TensorDesc
    nodes: tuple
    args: tuple


class FusedElementWisePlanner(Planner):
    """Element-wise nodes as one kernel of the element-wise family (kernels/elementwise.py:
    a FusedProblem, one step per node)."""

    strategies = elementwise.STRATEGIES

    @staticmethod
    def problem(desc: FusedElementWiseDesc) -> elementwise.FusedProblem:
        steps = tuple(elementwise.Step(spec_for(n).planner.problem(n), a) for n, a in zip(desc.nodes, desc.args))
        return elementwise.FusedProblem(_name(desc.nodes), desc.input_tensors, desc.output_tensor, steps)

    def strategies_for(self, desc: FusedElementWiseDesc, caps) -> tuple[str, ...]:
        return elementwise.strategies_for(self.problem(desc), caps)

    def plan(self, desc: FusedElementWiseDesc, caps, strategy: str) -> KernelPlan:
        return elementwise.plan(self.problem(desc), caps, strategy)


class FusedElementWiseSpec(FusedSpec):
    """The semantics of fused element-wise nodes: each node's reference in turn; precision:
    the last node's, at its exact inputs (the earlier nodes' errors reach it as they reach
    the unfused kernels)."""

    def sample_buffers(self, desc, rng: np.random.Generator) -> list[np.ndarray]:
        samples = []
        for k, leaf in enumerate(desc.input_tensors):
            node, position = _reader(desc, k)
            drawn = spec_for(node).sample_buffers(node, rng)[position]
            samples.append(_resized(drawn, leaf, rng))
        return samples

    def _values(self, desc, logical_inputs):
        results = []
        for node, args in zip(desc.nodes, desc.args):
            given = [logical_inputs[k] if kind == "input" else results[k] for kind, k in args]
            results.append(given)
            if len(results) < len(desc.nodes):
                results[-1] = spec_for(node).reference_outputs(node, given)[0]
        return results[-1]

    def expected_outputs(self, desc, logical_inputs) -> tuple[list[np.ndarray], list]:
        return spec_for(desc.nodes[-1]).expected_outputs(desc.nodes[-1], self._values(desc, logical_inputs))

    def traffic(self, desc) -> int:
        inputs, outputs = tensor_fields(desc)
        return sum(d.element_count * d.data_type.size for _, d in inputs + outputs)


def _reader(desc: FusedElementWiseDesc, k: int):
    """A node reading input k, and which of its inputs that is."""
    for node, args in zip(desc.nodes, desc.args):
        if ("input", k) in args:
            return node, args.index(("input", k))
    raise AssertionError(f"no node reads input {k}")


_ELEMENTWISE = FusedElementWisePlanner()


def elementwise_spec(desc: FusedElementWiseDesc) -> FusedSpec:
    return FusedElementWiseSpec(_name(desc.nodes), _ELEMENTWISE)


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
#: the source again as 16-byte blocks, and a scratch buffer (a Reduce's partial results).
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
    movement_node = {i: len(nodes[i].outputs) == 1 and nodes[i].spec.planner.stage(nodes[i].desc) is not None
                     for i in needed}
    materialized = set(outputs)
    for i in needed:
        node = nodes[i]
        for k, v in enumerate(node.inputs):
            data_path = k == 0 and (movement_node[i] or node.spec.planner.prologue)
            viewed = k in getattr(node, "viewed", ())  # read through another desc (Graph.view): written
            if v not in producer or not movement_node[producer[v]] or not data_path or viewed:
                materialized.add(v)
        if not movement_node[i]:
            materialized.update(node.outputs)
    if max_bindings is not None:
        _fit_bindings(nodes, needed, movement_node, materialized, max_bindings - FIXED_BINDINGS)
    inlined = _inline_elementwise(nodes, producer, needed, outputs, value_descs, max_bindings)
    materialized -= inlined
    epilogues = _epilogue_producers(nodes, producer, needed, outputs, value_descs, max_bindings, materialized,
                                    inlined, movement_node)
    stored = {epilogues[root]: root for root in epilogues}  # producer -> the root its kernel stores
    groups = []
    for i in sorted(needed):
        node = nodes[i]
        if i in stored:
            continue  # its kernel is the root's group
        if i in epilogues:
            groups.append(_epilogue_group(nodes, producer, inlined, materialized, i, epilogues[i], movement_node,
                                          value_descs))
            continue
        if _is_elementwise(node):
            if node.outputs[0] in inlined:
                continue  # computed inside its consumer's kernel
            if any(v in inlined for v in node.inputs):
                groups.append(_elementwise_group(nodes, producer, inlined, i, value_descs))
                continue
        if movement_node[i]:
            if node.outputs[0] in materialized:
                groups.append(_movement_group(nodes, producer, materialized, i, value_descs))
        elif node.spec.planner.prologue and node.inputs[0] not in materialized:
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
        if not (movement_node[i] or node.spec.planner.prologue):
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


def _source_desc(first, source: int, value_descs) -> TensorDesc:
    """How a chain's first node reads its source: the source's own desc, or the view it
    reads it through (Graph.view: a reshape, transpose or broadcast of a materialized value)."""
    if 0 in getattr(first, "viewed", ()):
        return tensor_fields(first.desc)[0][0][1]
    return value_descs[source]


def _extra_inputs(nodes, chain: list[int]) -> tuple[int, ...]:
    """The values the chain's stages read besides the data, in the chain's binding order."""
    return tuple(v for i in reversed(chain) for v in nodes[i].inputs[1:])


def _movement_group(nodes, producer, materialized, last: int, value_descs) -> Group:
    chain, source = _walk(nodes, producer, materialized, last)
    if len(chain) == 1:
        node = nodes[last]
        return Group(node.desc, node.spec, tuple(node.inputs), tuple(node.outputs), (last,))
    descs = tuple(nodes[i].desc for i in chain)
    desc = FusedMovementDesc(_source_desc(nodes[chain[0]], source, value_descs), _reads(descs),
                             value_descs[nodes[last].outputs[0]], descs)
    return Group(desc, movement_spec(desc), (source,) + _extra_inputs(nodes, chain), tuple(nodes[last].outputs),
                 tuple(chain))


def _read_group(nodes, producer, materialized, i: int, value_descs) -> Group:
    node = nodes[i]
    chain, source = _walk(nodes, producer, materialized, producer[node.inputs[0]])
    descs = tuple(nodes[k].desc for k in chain)
    desc = FusedReadDesc(_source_desc(nodes[chain[0]], source, value_descs), _reads(descs),
                         node.desc.output_tensor, descs, node.desc)
    return Group(desc, read_spec(desc), (source,) + _extra_inputs(nodes, chain), tuple(node.outputs),
                 tuple(chain) + (i,))


# ---------------------------------------------------------------------------- element-wise chains
def _is_elementwise(node) -> bool:
    """An element-wise node of one formula (not one of several steps: QUANTIZED_LINEAR_ADD runs alone)."""
    return (isinstance(node.spec.planner, elementwise.ElementWisePlanner)
            and isinstance(node.spec.planner.problem(node.desc), elementwise.Problem))


def _problem(node) -> elementwise.Problem:
    """An element-wise node as its kernel reads it: the inputs it is given (an optional one
    left out is not there) with the output's sizes and their own strides, and its output."""
    return node.spec.planner.problem(node.desc)


def _computes_f64(node) -> bool:
    p = _problem(node)
    return any(d.data_type == DataType.FLOAT64 for d in p.inputs + (p.output,))


def _inline_elementwise(nodes, producer, needed, outputs, value_descs, max_bindings) -> set[int]:
    """The values of element-wise nodes computed inside their consumer's kernel instead of
    written: a value of an element-wise node that is no graph output, read once, by an
    element-wise node, as it is (its own sizes and packed strides: no broadcast, no layout
    change), neither node computing FLOAT64, while the fused kernel's inputs fit the
    adapter's storage bindings."""
    readers: dict[int, list[tuple[int, int]]] = {}
    for i in needed:
        for k, v in enumerate(nodes[i].inputs):
            readers.setdefault(v, []).append((i, k))
    inlined: set[int] = set()
    budget = None if max_bindings is None else max_bindings - 1  # the output's binding
    leaves: dict[int, int] = {}  # element-wise node -> the inputs of the kernel it would head
    for i in sorted(needed):
        node = nodes[i]
        if not _is_elementwise(node) or _computes_f64(node):
            continue
        count = 0
        for k, v in enumerate(node.inputs):
            if v in producer and producer[v] in leaves and _inlinable(nodes, producer[v], v, i, k, readers, outputs,
                                                                         value_descs):
                extra = leaves[producer[v]]
                if budget is None or count + extra + len(node.inputs) - k - 1 <= budget:
                    inlined.add(v)
                    count += extra
                    continue
            count += 1
        leaves[i] = count
    return inlined


def _inlinable(nodes, p: int, v: int, consumer: int, k: int, readers, outputs, value_descs) -> bool:
    if v in outputs or len(readers.get(v, ())) != 1 or len(nodes[p].outputs) != 1:
        return False
    read = _problem(nodes[consumer]).inputs[k]
    own = value_descs[v]
    if not (read.sizes == own.sizes and read.effective_strides == own.effective_strides
            and read.data_type == own.data_type and own.is_packed):
        return False
    # The consumer computes in the kind the producer's result has (not a bit operation
    # reading a float's bits, say): the step passes its value on as it is.
    return _problem(nodes[consumer]).kinds[k] == _problem(nodes[p]).out_kind


def _elementwise_group(nodes, producer, inlined, root: int, value_descs) -> Group:
    """The kernel of element-wise node `root` with the nodes inlined into it: its steps in
    order (producers first), its inputs the values they read that are written."""
    order, leaves, args = _tree(nodes, producer, inlined, root)
    descs = tuple(nodes[i].desc for i in order)
    desc = FusedElementWiseDesc(tuple(read for _, read, _ in leaves), _problem(nodes[root]).output, descs,
                                tuple(args[i] for i in order))
    return Group(desc, elementwise_spec(desc), tuple(v for v, _, _ in leaves), tuple(nodes[root].outputs),
                 tuple(order))


def _tree(nodes, producer, inlined, root: int):
    """The element-wise nodes computed in `root`'s kernel, producers first, the values they
    read that are written (leaves: (value, the desc it is read through, the kind it is read
    in)), and each node's arguments (("input", leaf), ("step", position in the order))."""
    order: list[int] = []
    leaves: list[tuple[int, object]] = []  # (value, the desc it is read through)
    args: dict[int, tuple] = {}

    def visit(i: int) -> None:
        node = nodes[i]
        refs = []
        for k, v in enumerate(node.inputs):
            if v in inlined:
                visit(producer[v])
                refs.append(("step", order.index(producer[v])))
            else:
                read = _problem(node).inputs[k]
                key = (v, read, _problem(node).kinds[k])  # (read as the step computes)
                if key not in leaves:
                    leaves.append(key)
                refs.append(("input", leaves.index(key)))
        order.append(i)
        args[i] = tuple(refs)

    visit(root)
    return order, leaves, args


# ---------------------------------------------------------------------------- store epilogues
@dataclass(frozen=True)
class FusedEpilogueDesc:
    """`producer` (an operator's desc whose planner has the epilogue, or a
    FusedMovementDesc) whose kernels store, instead of its output value, the result of the
    element-wise `nodes` (producers first) on it: each node's arguments (`args`, per node:
    ("input", 0) the producer's value, ("input", k) `read_tensors[k - 1]`, ("step", j) node
    j's result). `input_tensors` are the producer's own inputs (in its order), the read
    tensors are read as the kernel reads them (the output's sizes, their own strides: 0
    where a node broadcasts them), `output_tensor` is the last node's."""

    input_tensors: tuple[TensorDesc, ...]
    read_tensors: tuple[TensorDesc, ...]
    output_tensor: TensorDesc
    producer: object
    nodes: tuple
    args: tuple


def _producer_spec(producer):
    """What runs a producer desc: its operator's spec, or a movement chain's FusedSpec."""
    return movement_spec(producer) if isinstance(producer, FusedMovementDesc) else spec_for(producer)


def _value_of(producer) -> TensorDesc:
    """A producer's output (its first output tensor)."""
    return tensor_fields(producer)[1][0][1]


def _epilogue(desc: FusedEpilogueDesc) -> Epilogue:
    """The epilogue of `desc` as the kernel families take it (kernels/epilogue.py)."""
    steps = tuple(elementwise.Step(spec_for(n).planner.problem(n), a) for n, a in zip(desc.nodes, desc.args))
    return Epilogue(elementwise.FusedProblem(_name(desc.nodes), (_value_of(desc.producer),) + desc.read_tensors,
                                             desc.output_tensor, steps))


class FusedEpiloguePlanner(Planner):
    """A producer whose kernels apply element-wise nodes in their stores: its planner's
    epilogue hook."""

    def __init__(self, producer_planner: Planner):
        self.producer = producer_planner
        self.strategies = producer_planner.strategies

    def strategies_for(self, desc: FusedEpilogueDesc, caps) -> tuple[str, ...]:
        return self.producer.strategies_with_epilogue(desc.producer, caps, _epilogue(desc))

    def plan(self, desc: FusedEpilogueDesc, caps, strategy: str) -> KernelPlan:
        return self.producer.plan_with_epilogue(desc.producer, caps, strategy, _epilogue(desc))


class FusedEpilogueSpec(FusedSpec):
    """The semantics of a producer with an epilogue: the producer's reference, then each
    element-wise node's in turn. Precision: the last node's at its exact inputs, plus the
    producer's own tolerance carried through the nodes (the nodes evaluated at the ends and
    the middle of each half of the producer's interval: the most its error moves the result,
    for nodes monotonic on that interval)."""

    def sample_buffers(self, desc: FusedEpilogueDesc, rng: np.random.Generator) -> list[np.ndarray]:
        samples = _producer_spec(desc.producer).sample_buffers(desc.producer, rng)
        for k, read in enumerate(desc.read_tensors, start=1):
            node, position = next((n, a.index(("input", k))) for n, a in zip(desc.nodes, desc.args)
                                  if ("input", k) in a)
            samples.append(_resized(spec_for(node).sample_buffers(node, rng)[position], read, rng))
        return samples

    def _steps(self, desc: FusedEpilogueDesc, value, reads):
        results: list = []
        given = None
        for j, (node, args) in enumerate(zip(desc.nodes, desc.args)):
            given = [(value if k == 0 else reads[k - 1]) if kind == "input" else results[k] for kind, k in args]
            results.append(spec_for(node).reference_outputs(node, given)[0] if j < len(desc.nodes) - 1 else None)
        return given

    def expected_outputs(self, desc: FusedEpilogueDesc, logical_inputs) -> tuple[list[np.ndarray], list]:
        own = len(desc.input_tensors)
        values, tolerances = _producer_spec(desc.producer).expected_outputs(desc.producer, logical_inputs[:own])
        value, tolerance, reads = values[0], tolerances[0], list(logical_inputs[own:])
        last = desc.nodes[-1]
        expected, precision = spec_for(last).expected_outputs(last, self._steps(desc, value, reads))
        if tolerance is None:
            return expected, precision
        exact = expected[0].astype(np.float64)
        spread = np.zeros(exact.shape)
        with np.errstate(all="ignore"):
            for scale in (-1.0, -0.5, 0.5, 1.0):
                moved = (value.astype(np.float64) + scale * np.asarray(tolerance, np.float64)).astype(value.dtype)
                last_inputs = self._steps(desc, moved, reads)
                shifted = spec_for(last).reference_outputs(last, last_inputs)[0].astype(np.float64)
                spread = np.maximum(spread, np.nan_to_num(np.abs(shifted - exact), nan=0.0))
        base = 0.0 if precision[0] is None else precision[0]
        return expected, [base + spread]

    def traffic(self, desc) -> int:
        inputs, outputs = tensor_fields(desc)
        return sum(d.element_count * d.data_type.size for _, d in inputs + outputs)


def epilogue_spec(desc: FusedEpilogueDesc) -> FusedSpec:
    if isinstance(desc.producer, FusedMovementDesc):
        planner, producers = _MOVEMENT, desc.producer.nodes
    else:
        planner, producers = spec_for(desc.producer).planner, (desc.producer,)
    return FusedEpilogueSpec(_name(producers + desc.nodes), FusedEpiloguePlanner(planner))


def _epilogue_producers(nodes, producer, needed, outputs, value_descs, max_bindings, materialized, inlined,
                        movement_node) -> dict[int, int]:
    """{element-wise root node: the node whose kernel computes the root's chain in its store}:
    the value of a node whose planner has the epilogue (or of a data-movement chain) that is
    no graph output, read once, by an element-wise node of the root's chain, as it is (its
    own sizes, packed), every tensor of the chain and the value at most 32 bits wide, the
    root's output packed, a producer that reads no input through a chain (the prologue),
    and the kernel's tensors within the adapter's storage bindings. One producer per chain:
    the first such value it reads."""
    readers: dict[int, int] = {}
    for i in needed:
        for v in nodes[i].inputs:
            readers[v] = readers.get(v, 0) + 1
    found: dict[int, int] = {}
    for root in sorted(needed):
        node = nodes[root]
        if not _is_elementwise(node) or node.outputs[0] in inlined or not _problem(node).output.is_packed:
            continue
        order, leaves, _ = _tree(nodes, producer, inlined, root)
        if any(_wide(nodes[i]) for i in order):
            continue
        for v, read, _ in leaves:
            p = producer.get(v)
            if p is None or v in outputs or readers.get(v) != 1 or len(nodes[p].outputs) != 1 or _is_elementwise(
                    nodes[p]):
                continue
            own = value_descs[v]
            if not (own.is_packed and read.sizes == own.sizes and read.effective_strides == own.effective_strides
                    and read.data_type == own.data_type and own.data_type.size <= 4):
                continue
            if movement_node[p]:
                chain, _ = _walk(nodes, producer, materialized, p)
                own_inputs = 1 + len(_extra_inputs(nodes, chain))
            elif nodes[p].spec.planner.epilogue and not (nodes[p].spec.planner.prologue
                                                         and nodes[p].inputs[0] not in materialized):
                own_inputs = len(nodes[p].inputs)
            else:
                continue
            if max_bindings is not None and 2 * own_inputs + 2 + len(leaves) - 1 > max_bindings:
                continue
            found[root] = p
            break
    return found


def _wide(node) -> bool:
    """Does an element-wise node compute on a tensor wider than 32 bits?"""
    p = _problem(node)
    return any(d.data_type.size > 4 for d in p.inputs + (p.output,))


def _epilogue_group(nodes, producer, inlined, materialized, root: int, p: int, movement_node,
                    value_descs) -> Group:
    """The kernel of producer node `p` storing element-wise root `root`'s chain."""
    order, leaves, args = _tree(nodes, producer, inlined, root)
    value = nodes[p].outputs[0]
    first = next(k for k, (v, _, _) in enumerate(leaves) if v == value)
    rest = [k for k in range(len(leaves)) if k != first]
    index = {first: 0, **{k: j + 1 for j, k in enumerate(rest)}}
    node_args = tuple(tuple(("input", index[k]) if kind == "input" else (kind, k) for kind, k in args[i])
                      for i in order)
    if movement_node[p]:
        chain, source = _walk(nodes, producer, materialized, p)
        descs = tuple(nodes[i].desc for i in chain)
        made = FusedMovementDesc(value_descs[source], _reads(descs), value_descs[value], descs)
        own_inputs, computed = (source,) + _extra_inputs(nodes, chain), tuple(chain)
    else:
        made, own_inputs, computed = nodes[p].desc, tuple(nodes[p].inputs), (p,)
    desc = FusedEpilogueDesc(tuple(d for _, d in tensor_fields(made)[0]), tuple(leaves[k][1] for k in rest),
                             _problem(nodes[root]).output, made, tuple(nodes[i].desc for i in order), node_args)
    return Group(desc, epilogue_spec(desc), own_inputs + tuple(leaves[k][0] for k in rest),
                 tuple(nodes[root].outputs), computed + tuple(order))
