"""Fusion of a graph's nodes into single kernels (gpudml.Graph).

A chain of data-movement nodes (operators whose planner gives a chain stage: Slice1,
Slice0, Padding, Padding1, Tile, Gather, ReverseSubsequences, and any added later) maps
each output coordinate back to one element of the chain's source, or to a padding
constant: it runs as one kernel of the same templates as the operators alone
(shaders/movement.wgsl.j2 over the stages of shaders/lib/chain.wgsl.j2), with no
intermediate tensor. Element-wise nodes (every element-wise and activation operator of one
formula) compute each output element from the elements at the same coordinate: a tree of
them is one kernel of the element-wise family (kernels/elementwise.py, one step per node).
The two mix: an element-wise node reads a data-movement value through its chain, and data
movement over an element-wise value computes the expression at the coordinate the chain
maps to (or takes the padding's constant where the chain lands on one): one kernel (the
element-wise family's coordinate mode, shaders/lib/fused.wgsl.j2). That is the load side.
An operator whose planner has the prologue (Reduce, ArgMax, ArgMin, CumulativeSummation,
CumulativeProduct) reads its first input through such a chain or expression instead of a
tensor. On the store side, an operator whose planner has the epilogue (Reduce, ArgMax,
ArgMin, GEMM, CONVOLUTION, the softmax family, MEAN_VARIANCE_NORMALIZATION, LP_NORMALIZATION,
the scans) applies the element-wise nodes reading its value in its store (kernels/epilogue.py). A
fused kernel is run by a FusedSpec: a planner of the kernel layer's protocol, and the
nodes' semantics composed.

The rules (`group_nodes`). Load side: a value is *virtual* (computed inside the kernel that reads
it, never written) when it is a data-movement or element-wise node's value, no graph
output, and every node reading it can compute it: a data-movement node as its data (not as
ReverseSubsequences' lengths or Gather's indices), an operator with the prologue as its
first input, an element-wise node reading it as it is (its sizes, packed, its type: no
broadcast) in the kind it computes in; none through a view (Graph.view). A value that
computes (an element-wise value, or data movement over one) must be read once: read twice
it is written, so that nothing is computed twice; pure data movement read by several nodes
is recomputed in each. FLOAT64 element-wise nodes neither fuse nor read fused values (nor
does QUANTIZED_LINEAR_ADD, an operator of two steps). A kernel binds at most the adapter's
storage buffers (`max_bindings`): its output, up to two of its own in any kernel but the
element-wise one (the source again as 16-byte blocks, a scratch buffer) and the tensors its
fused values read (sources, stages' other tensors); where a node's inputs would bind more,
an input is written instead (producers first, so each kernel keeps as many nodes as fit).

Store side (`_epilogue_producers`): a written element-wise value's kernel (the element-wise
nodes computed in it) runs in the store of the node producing one of its inputs where the
kernel reads no data movement; the producer's planner has the epilogue and the producer
has one output (it may read its input through a prologue as well: `sigmoid(reduce(pad(x)))`
and `tanh(cumulative_sum(exp(x)))` are one kernel each); its value is no graph output, is
read exactly once (by that kernel) as it is (its own sizes, packed, not re-described: no
broadcast, no layout change) or through a reshape view (Graph.view with other sizes, packed:
ONNX's 1-D Conv run as 2-D then its Relu; then every tensor of the kernel must be packed with
the value's element count, and the kernel is described at the producer's sizes:
`_redescribed`) and the kernel's output is packed, so that an output
element's offset is its index for every tensor the kernel reads (those read through their
own strides at the element's coordinates, broadcast included); every tensor of the kernel
and the value are at most 32 bits wide (no FLOAT64 step, no 64-bit integers: a producer's
kernel picks its own 64-bit representation; ArgMax's default INT64 output is not fused);
and the producer's kernel with the epilogue's tensors fits the adapter's storage bindings;
and no step of the kernel is one NOT_IN_STORE lists (QUANTIZE_LINEAR: its element-wise
kernel is written instead).
One producer per kernel (the first input that qualifies: `add(gemm1, gemm2)` runs in
gemm1's store, gemm2 is written).

Every other value is *materialized*: each is one kernel computing it from the virtual
values it reads (a data-movement chain over a written value: the movement kernel; anything
else with an element-wise value among them: the element-wise kernel, or its epilogue
producer's kernel), each prologue consumer of a virtual value one kernel (or its passes),
and any other node one kernel of its own. A chain of one node is that operator's own
kernel. Results equal the unfused graph's: data movement and integer steps bit for bit,
float steps within a compiler's contraction (each step's result passes through its tensor
type's bits, as between kernels; an epilogue's producer value is rounded to its type before
the steps, as a tensor would be), prologue consumers within their documented precision
(they read element by element).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .fusion_operand import BINDINGS as OPERAND_BINDINGS
from .fusion_operand import SPEC as OPERAND_SPEC
from .fusion_operand import FusedDequantizeGemmDesc, dequantized_operands, fused_desc
from .kernels import elementwise
from .kernels.base import Planner, ProblemPlanner
from .kernels.builder import KernelPlan
from .kernels.chain import Chain, chain
from .kernels.epilogue import Epilogue
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


class FusedMovementPlanner(ProblemPlanner):
    """A chain of data-movement nodes as one movement kernel: a ProblemPlanner of the
    movement family (its problem, the chain into the last node's output; RUN output
    elements per invocation, CHAIN_RUN_CPU on CPU adapters for chains of several stages).
    No plan options nor variants of its own (the operators' `block` stays theirs)."""

    def __init__(self):
        super().__init__(self.movement, movement.FAMILY)
        self.options = ()

    @staticmethod
    def movement(desc: FusedMovementDesc) -> movement.Movement:
        return movement.Movement(desc.output_tensor, _chain(desc.nodes, desc.input_tensor))

    def variants(self, desc, caps, strategy: str) -> tuple[dict, ...]:
        return ()


class FusedReadPlanner(Planner):
    """A consumer reading through a chain: its planner's prologue (and its epilogue, where
    element-wise nodes follow it: the epilogue hook here is the consumer's)."""

    def __init__(self, consumer_planner: Planner):
        self.consumer = consumer_planner
        self.strategies = consumer_planner.strategies
        self.epilogue = consumer_planner.epilogue

    def strategies_for(self, desc, caps) -> tuple[str, ...]:
        return self.consumer.strategies_through(desc.consumer, caps)

    def plan(self, desc, caps, strategy: str) -> KernelPlan:
        return self.consumer.plan_through(desc.consumer, caps, strategy, self.source(desc))

    def strategies_with_epilogue(self, desc, caps, epilogue) -> tuple[str, ...]:
        own = self.consumer.strategies_with_epilogue(desc.consumer, caps, epilogue)
        return tuple(s for s in self.strategies_for(desc, caps) if s in own)

    def plan_with_epilogue(self, desc, caps, strategy: str, epilogue) -> KernelPlan:
        return self.consumer.plan_through(desc.consumer, caps, strategy, self.source(desc), epilogue)

    @staticmethod
    def source(desc: FusedReadDesc):
        """What the consumer reads its input through (Planner.plan_through's `chain`)."""
        return _chain(desc.nodes, desc.input_tensor)


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
    j's result, ("move", m) for move m's value), the tensors read as the kernel reads them
    (the output's sizes, their own strides: 0 where a node broadcasts them), written to
    `output_tensor` (the last node's).

    With data-movement nodes fused in: input k is read through `paths[k]` (data-movement
    node descs, the source's side first; () none), `input_tensors[k]` then being the
    path's source as it is laid out; move m, `moves[m]` = (data-movement node descs, j),
    is those nodes applied to node j's result; `result` ("move", m) says the kernel writes
    move m's value (None: the last node's result); `read_tensors` are the data-movement
    nodes' other tensors (lengths, indices), the paths' in input order, then the moves',
    each path's output side first."""

    input_tensors: tuple[TensorDesc, ...]
    output_tensor: TensorDesc
    nodes: tuple
    args: tuple
    read_tensors: tuple[TensorDesc, ...] = ()
    paths: tuple = ()
    moves: tuple = ()
    result: tuple | None = None


@dataclass(frozen=True)
class FusedElementWiseReadDesc(FusedElementWiseDesc):
    """`consumer` (a desc whose planner has the prologue) reading its first input as the
    value of the fused nodes (a FusedElementWiseDesc's, without its output_tensor: the
    consumer's is written)."""

    consumer: object = None


def _rules(path) -> tuple:
    """The stages of data-movement node descs `path` (the source's side first), output side first."""
    return tuple(spec_for(n).planner.stage(n) for n in reversed(path))


class FusedElementWisePlanner(ProblemPlanner):
    """Element-wise nodes as one kernel of the element-wise family (kernels/elementwise.py:
    a FusedProblem, one step per node, data movement as paths and moves): a ProblemPlanner
    of elementwise.FAMILY. No plan options of its own (the operators' `run` stays theirs)."""

    def __init__(self):
        super().__init__(self.problem, elementwise.FAMILY)
        self.options = ()

    @staticmethod
    def problem(desc: FusedElementWiseDesc) -> elementwise.FusedProblem:
        steps = tuple(elementwise.Step(spec_for(n).planner.problem(n), a) for n, a in zip(desc.nodes, desc.args))
        output = desc.output_tensor
        if isinstance(desc, FusedElementWiseReadDesc):  # the value the consumer reads, packed
            output = TensorDesc(desc.consumer.input_tensor.data_type, desc.consumer.input_tensor.sizes)
        return elementwise.FusedProblem(
            _name(desc.nodes), desc.input_tensors, output, steps, tuple(_rules(path) for path in desc.paths),
            tuple(elementwise.Move(_rules(path), j) for path, j in desc.moves), desc.result, desc.read_tensors)


class FusedElementWiseReadPlanner(FusedReadPlanner):
    """A consumer reading fused element-wise (and data-movement) nodes: its planner's
    prologue, handed the nodes' FusedProblem."""

    def strategies_for(self, desc: FusedElementWiseReadDesc, caps) -> tuple[str, ...]:
        elementwise.FAMILY.strategies_for(self.source(desc), caps)  # (what it cannot compute: UnsupportedError)
        return self.consumer.strategies_through(desc.consumer, caps)

    @staticmethod
    def source(desc: FusedElementWiseReadDesc):
        return FusedElementWisePlanner.problem(desc)


class FusedElementWiseSpec(FusedSpec):
    """The semantics of fused element-wise nodes: each node's reference in turn (a path's
    or a move's data-movement nodes' too); precision: the last node's, at its exact
    inputs (the earlier nodes' errors reach it as they reach the unfused kernels), its
    largest where data movement rearranges its result; a consumer's, at the value it reads."""

    def sample_buffers(self, desc, rng: np.random.Generator) -> list[np.ndarray]:
        samples = []
        for k, leaf in enumerate(desc.input_tensors):
            node, position = _reader(desc, k)
            drawn = spec_for(node).sample_buffers(node, rng)[position]
            samples.append(_resized(drawn, leaf, rng))
        for path in _read_paths(desc):  # the data-movement nodes' other tensors (lengths, indices)
            for node in reversed(path):
                samples += spec_for(node).sample_buffers(node, rng)[1:]
        return samples

    def _values(self, desc, logical_inputs):
        """The last node's arguments and, per path and move, the movement nodes' other tensors."""
        count = len(desc.input_tensors)
        inputs, extras = list(logical_inputs[:count]), list(logical_inputs[count:])
        per_path = []
        for path in _read_paths(desc):
            tensors = {}
            for node in reversed(path):
                n = len(tensor_fields(node)[0]) - 1
                tensors[id(node)], extras = extras[:n], extras[n:]
            per_path.append(tensors)
        split = len(desc.paths)
        paths, moved = desc.paths or ((),) * count, per_path[split:]
        inputs = [_moved(path, tensors, value) for path, tensors, value in
                  zip(paths, per_path[:split] or [{}] * count, inputs)]
        results = []
        for node, args in zip(desc.nodes, desc.args):
            given = [inputs[k] if kind == "input" else results[k] if kind == "step" else
                     _moved(desc.moves[k][0], moved[k], results[desc.moves[k][1]]) for kind, k in args]
            results.append(given)
            if len(results) < len(desc.nodes):
                results[-1] = spec_for(node).reference_outputs(node, given)[0]
        return results[-1], moved

    def expected_outputs(self, desc, logical_inputs) -> tuple[list[np.ndarray], list]:
        given, moved = self._values(desc, logical_inputs)
        (value,), (tolerance,) = spec_for(desc.nodes[-1]).expected_outputs(desc.nodes[-1], given)
        if desc.result is not None:  # data movement of the last node's result
            path, _ = desc.moves[desc.result[1]]
            value = _moved(path, moved[desc.result[1]], value)
            tolerance = None if tolerance is None else float(np.max(tolerance, initial=0.0))
        if isinstance(desc, FusedElementWiseReadDesc):
            return spec_for(desc.consumer).expected_outputs(desc.consumer, [value])
        return [value], [tolerance]

    def traffic(self, desc) -> int:
        inputs, outputs = tensor_fields(desc)
        return sum(d.element_count * d.data_type.size for _, d in inputs + outputs)


def _read_paths(desc) -> tuple:
    """The data-movement paths whose other tensors a fused element-wise desc reads, in its
    read_tensors' order: the inputs' paths, then the moves'."""
    return tuple(desc.paths) + tuple(path for path, _ in desc.moves)


def _moved(path, tensors: dict, value: np.ndarray) -> np.ndarray:
    """`value` through the data-movement node descs `path` (the source's side first), each
    with its other tensors (`tensors`: by id of the node)."""
    for node in path:
        value = spec_for(node).reference_outputs(node, [value, *tensors[id(node)]])[0]
    return value


def _reader(desc: FusedElementWiseDesc, k: int):
    """A node reading input k, and which of its inputs that is."""
    for node, args in zip(desc.nodes, desc.args):
        if ("input", k) in args:
            return node, args.index(("input", k))
    raise AssertionError(f"no node reads input {k}")


_ELEMENTWISE = FusedElementWisePlanner()


def _all_nodes(desc: FusedElementWiseDesc) -> list:
    """Every node a fused element-wise desc computes, producers first: the paths' nodes,
    then each element-wise node followed by the moves of its result."""
    nodes = [n for path in desc.paths for n in path]
    for j, node in enumerate(desc.nodes):
        nodes += [node] + [n for path, step in desc.moves if step == j for n in path]
    return nodes


def elementwise_spec(desc: FusedElementWiseDesc) -> FusedSpec:
    if isinstance(desc, FusedElementWiseReadDesc):
        return FusedElementWiseSpec(_name(_all_nodes(desc), desc.consumer),
                                    FusedElementWiseReadPlanner(spec_for(desc.consumer).planner))
    return FusedElementWiseSpec(_name(_all_nodes(desc)), _ELEMENTWISE)


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
#: Any fused kernel keeps FIXED_BINDINGS - 1 of them besides the tensors it reads.
FIXED_BINDINGS = 4


def group_nodes(nodes, outputs, value_descs, max_bindings: int | None = None) -> list[Group]:
    """The kernels computing `outputs` (value ids) from graph `nodes` (each with .desc,
    .spec, .inputs and .outputs as value ids, in recording order, so that producers come
    first), following the rules above. `value_descs[v]` is value v's TensorDesc. Groups
    come in an order that runs producers first. `max_bindings`: the storage buffers a
    kernel may bind (Caps.max_storage_buffers_per_shader_stage); a kernel whose fused
    reads would bind more tensors (sources, ReverseSubsequences' lengths, ...) than fit is
    cut where it would overflow (that value is materialized)."""
    producer = {v: i for i, node in enumerate(nodes) for v in node.outputs}
    needed = _needed(nodes, producer, outputs)
    movement_node = {i: len(nodes[i].outputs) == 1 and nodes[i].spec.planner.stage(nodes[i].desc) is not None
                     for i in needed}
    virtual, computing = _virtual(nodes, producer, needed, movement_node, set(outputs), value_descs)
    if max_bindings is not None:
        _fit_bindings(nodes, needed, virtual, max_bindings)
    computing &= virtual
    for i in sorted(needed):  # a movement value over an element-wise value cut above computes no more
        node = nodes[i]
        if movement_node[i] and node.outputs[0] in computing and node.inputs[0] not in computing:
            computing.discard(node.outputs[0])
    materialized = set(value_descs) - virtual
    epilogues = _epilogue_producers(nodes, producer, needed, outputs, value_descs, max_bindings, virtual, computing,
                                    movement_node, materialized)
    # GEMM -> the DEQUANTIZE of its B (fusion_operand): one kernel, an epilogue producer's too
    operands = dequantized_operands(nodes, producer, needed, set(outputs), value_descs, max_bindings, set(epilogues))
    for root, (p, made, tree) in list(epilogues.items()):
        if p in operands:
            if max_bindings is not None and OPERAND_BINDINGS + len(tree.inputs) - 1 > max_bindings:
                del operands[p]  # (the DEQUANTIZE is written; the GEMM keeps its epilogue)
                continue
            desc, inputs = fused_desc(nodes[p], nodes[operands[p]])
            epilogues[root] = (p, Group(desc, OPERAND_SPEC, inputs, made.outputs, (operands[p], p)), tree)
    stored = {p: root for root, (p, _, _) in epilogues.items()}  # producer -> the root its kernel stores
    groups = []
    for i in sorted(needed):
        node = nodes[i]
        if i in stored or i in operands.values():
            continue  # its kernel is the root's group, or the GEMM's that reads its value
        if i in operands:
            desc, inputs = fused_desc(node, nodes[operands[i]])
            groups.append(Group(desc, OPERAND_SPEC, inputs, tuple(node.outputs), (operands[i], i)))
            continue
        if i in epilogues:
            groups.append(_epilogue_group(nodes, i, *epilogues[i]))
            continue
        data = node.inputs[0] if node.inputs else None
        if len(node.outputs) == 1 and node.outputs[0] in virtual:
            continue  # computed inside its reader's kernel
        if movement_node[i] and data in computing or _is_elementwise(node) and virtual.intersection(node.inputs):
            groups.append(_expression_group(nodes, producer, virtual, movement_node, i, value_descs))
        elif movement_node[i]:
            groups.append(_movement_group(nodes, producer, materialized, i, value_descs))
        else:
            groups.append(_own_group(nodes, producer, virtual, computing, movement_node, materialized, i, value_descs))
    return groups


def _needed(nodes, producer, outputs) -> set[int]:
    needed, todo = set(), [producer[v] for v in outputs if v in producer]
    while todo:
        i = todo.pop()
        if i not in needed:
            needed.add(i)
            todo += [producer[v] for v in nodes[i].inputs if v in producer]
    return needed


def _virtual(nodes, producer, needed, movement_node, outputs: set, value_descs) -> tuple[set, set]:
    """The values computed inside the kernels that read them instead of written (the rules
    of the module doc, producers first), and those of them that compute (an element-wise
    value, or data movement over one)."""
    readers: dict[int, list[tuple[int, int]]] = {}
    for i in sorted(needed):
        for k, v in enumerate(nodes[i].inputs):
            readers.setdefault(v, []).append((i, k))
    virtual, computing = set(), {}  # computing: value -> the kind its element-wise source computes in
    for i in sorted(needed):
        node = nodes[i]
        v = node.outputs[0] if len(node.outputs) == 1 else None
        ew = _is_elementwise(node) and not _computes_f64(node)
        if v is None or v in outputs or v not in readers or not (movement_node[i] or ew) \
                or _value_of(node.desc).sizes != value_descs[v].sizes:  # (re-described: Graph.redescribe)
            continue
        kind = _problem(node).out_kind if ew else computing.get(node.inputs[0])
        if kind is not None and len(readers[v]) > 1:
            continue  # what computes is computed once
        if all(_reads_through(nodes, movement_node, r, k, value_descs[v], kind) for r, k in readers[v]):
            virtual.add(v)
            if kind is not None:
                computing[v] = kind
    return virtual, set(computing)


def _reads_through(nodes, movement_node, r: int, k: int, value: TensorDesc, kind) -> bool:
    """Can node r take its input k, `value` (a data-movement value, or one computing in
    `kind`), inside its own kernel? A data-movement node as its data; a node with the
    prologue as its first input (an element-wise value in its own layout); an element-wise
    node (not computing FLOAT64) reading it as it is (its sizes, packed, its type; no
    broadcast), in the kind it computes in. Never an input read through a view (Graph.view:
    another desc of the value's buffer)."""
    reader = nodes[r]
    if r not in movement_node or k in getattr(reader, "viewed", ()):
        return False  # (a node the outputs do not need; a view)
    if movement_node[r]:
        return k == 0
    if reader.spec.planner.prologue:
        return k == 0 and (kind is None or _as_is(reader.desc.input_tensor, value))
    if not _is_elementwise(reader) or _computes_f64(reader):
        return False
    problem = _problem(reader)
    return _as_is(problem.inputs[k], value) and kind in (None, problem.kinds[k])


def _as_is(read: TensorDesc, value: TensorDesc) -> bool:
    return (read.sizes == value.sizes and read.effective_strides == value.effective_strides
            and read.data_type == value.data_type and value.is_packed)


def _fit_bindings(nodes, needed, virtual: set, max_bindings: int) -> None:
    """Materialize values read inside a kernel whose reads (the tensors they bind: sources,
    data-movement nodes' other tensors) would exceed its budget (`max_bindings` less its
    output's binding in an element-wise node's kernel, less FIXED_BINDINGS - 1 in any
    other): producers first, each node's inputs in order, so each kernel keeps as many
    fused nodes as fit."""
    cost: dict[int, int] = {}  # virtual value -> the tensors computing it reads
    for i in sorted(needed):
        node = nodes[i]
        budget = max_bindings - (1 if _is_elementwise(node) else FIXED_BINDINGS - 1)
        count = 0
        for k, v in enumerate(node.inputs):
            if v in virtual:
                if count + cost[v] + len(node.inputs) - k - 1 <= budget:
                    count += cost[v]
                    continue
                virtual.discard(v)
            count += 1
        if len(node.outputs) == 1:
            cost[node.outputs[0]] = count


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


def _expression_group(nodes, producer, virtual, movement_node, root: int, value_descs) -> Group:
    """The kernel of node `root` (element-wise, data movement over an element-wise value, or a
    consumer reading one through its prologue) with the virtual values it reads computed
    inside: element-wise nodes as steps (producers first), data movement over a written
    value as the path its input is read through, data movement over an element-wise value
    as a move of that step's result."""
    order: list[int] = []
    leaves: list[tuple] = []  # (value, the desc it is read through, the kind, the path's nodes)
    moves: list[tuple] = []  # (the path's nodes, the step it moves)
    args: dict[int, tuple] = {}

    def down(v: int) -> tuple[list[int], int]:
        """The virtual data-movement nodes producing v (the source's side first), and the value under them."""
        path = []
        while v in virtual and movement_node[producer[v]]:
            path.append(producer[v])
            v = nodes[producer[v]].inputs[0]
        return path[::-1], v

    def under(path: list[int], u: int) -> tuple:
        """The step computing virtual element-wise value u, moved by `path`."""
        visit(producer[u])
        if not path:
            return "step", order.index(producer[u])
        moves.append((tuple(path), order.index(producer[u])))
        return "move", len(moves) - 1

    def read(v: int, desc: TensorDesc, kind: str) -> tuple:
        path, u = down(v)
        if u in virtual:
            return under(path, u)
        key = (u, _source_desc(nodes[path[0]], u, value_descs) if path else desc, kind, tuple(path))
        if key not in leaves:
            leaves.append(key)
        return "input", leaves.index(key)

    def visit(i: int) -> None:
        node = nodes[i]
        p = _problem(node)
        args[i] = tuple(read(v, p.inputs[k], p.kinds[k]) for k, v in enumerate(node.inputs))
        order.append(i)

    node = nodes[root]
    members, result, consumer = [], None, None  # (members: besides the steps and the paths)
    if _is_elementwise(node):
        visit(root)
        output = _problem(node).output
    else:
        path, u = down(node.inputs[0])
        if movement_node[root]:
            path, output = path + [root], node.desc.output_tensor
        else:
            members, consumer, output = [root], node.desc, node.desc.output_tensor
        result = under(path, u)
        result = None if result[0] == "step" else result
    paths = [path for _, _, _, path in leaves] + [path for path, _ in moves]
    members += order + [i for path in paths for i in path]
    extras = tuple(v for path in paths for i in reversed(path) for v in nodes[i].inputs[1:])
    fields = dict(input_tensors=tuple(d for _, d, _, _ in leaves), output_tensor=output,
                  nodes=tuple(nodes[i].desc for i in order), args=tuple(args[i] for i in order),
                  read_tensors=_reads([nodes[i].desc for path in reversed(paths) for i in path]),
                  paths=tuple(tuple(nodes[i].desc for i in path) for _, _, _, path in leaves)
                  if any(path for _, _, _, path in leaves) else (),
                  moves=tuple((tuple(nodes[i].desc for i in path), j) for path, j in moves), result=result)
    desc = (FusedElementWiseDesc(**fields) if consumer is None else
            FusedElementWiseReadDesc(**fields, consumer=consumer))
    return Group(desc, elementwise_spec(desc), tuple(v for v, _, _, _ in leaves) + extras, tuple(node.outputs),
                 tuple(sorted(members)))


def computed_in_readers(node) -> bool:
    """Can a graph node's value be computed inside the kernels that read it (a data-movement
    or element-wise node of one output: the load side's rules above), so that reading it
    through a view (which writes it) would cost a kernel?"""
    return len(node.outputs) == 1 and (node.spec.planner.stage(node.desc) is not None or _is_elementwise(node))


# ---------------------------------------------------------------------------- element-wise nodes
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


# ---------------------------------------------------------------------------- store epilogues
@dataclass(frozen=True)
class FusedEpilogueDesc:
    """`producer` (an operator's desc whose planner has the epilogue) whose kernels store,
    instead of its output value, the result of the element-wise `nodes` (producers first)
    on it: each node's arguments (`args`, per node: ("input", 0) the producer's value,
    ("input", k) `read_tensors[k - 1]`, ("step", j) node j's result). `input_tensors` are
    the producer's own inputs (in its order), the read tensors are read as the kernel reads
    them (the output's sizes, their own strides: 0 where a node broadcasts them),
    `output_tensor` is the last node's."""

    input_tensors: tuple[TensorDesc, ...]
    read_tensors: tuple[TensorDesc, ...]
    output_tensor: TensorDesc
    producer: object
    nodes: tuple
    args: tuple


def _producer_spec(producer):
    """What runs a producer desc: its operator's spec, or the FusedSpec of a consumer reading
    through a prologue."""
    if isinstance(producer, FusedReadDesc):
        return read_spec(producer)
    if isinstance(producer, FusedElementWiseReadDesc):
        return elementwise_spec(producer)
    if isinstance(producer, FusedDequantizeGemmDesc):
        return OPERAND_SPEC
    return spec_for(producer)


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
    made = _producer_spec(desc.producer)
    return FusedEpilogueSpec(f"Fused({_inner(made.name)}>{_inner(_name(desc.nodes))})",
                             FusedEpiloguePlanner(made.planner))


def _inner(name: str) -> str:
    """A kernel's name without its Fused( ): the names of the nodes it computes."""
    return name[len("Fused("):-1] if name.startswith("Fused(") else name


#: Element-wise operators whose steps never run in a producer's store: QUANTIZE_LINEAR's exact
#: round(x / scale) (then a long division: tens of instructions) inlined in every store of a GEMM's
#: or convolution's register tile (128 outputs an invocation) made one kernel that LLVM-based
#: adapters (lavapipe, llvmpipe) compiled in minutes; its element-wise kernel compiles in a
#: second, at the cost of one dispatch and the producer's float value written and read again.
NOT_IN_STORE = frozenset({"quantize_linear"})


def _epilogue_producers(nodes, producer, needed, outputs, value_descs, max_bindings, virtual: set, computing: set,
                        movement_node, materialized: set) -> dict[int, tuple[int, Group, Group]]:
    """{element-wise root node: (the node whose kernel computes the root's nodes in its
    store, that node's kernel without them, the root's element-wise Group)}: the root's
    value is written, its kernel has no data movement inside (no path, no move), and the
    producer's value is no graph output, read once, by a node of the root's kernel, as it
    is (its own sizes, packed, not re-described) or through a reshape view (the kernel then
    described at the producer's sizes: `_redescribed`), every tensor of the kernel and the value
    at most 32 bits wide, the root's output packed; the producer is an operator whose
    planner has the epilogue (reading its input through a prologue or not); and the
    kernel's tensors fit the adapter's storage bindings. One producer per root: the first
    such value it reads."""
    readers: dict[int, int] = {}
    for i in needed:
        for v in nodes[i].inputs:
            readers[v] = readers.get(v, 0) + 1
    found: dict[int, tuple[int, Group, Group]] = {}
    for root in sorted(needed):
        node = nodes[root]
        if not _is_elementwise(node) or node.outputs[0] in virtual or not _problem(node).output.is_packed:
            continue
        tree = _expression_group(nodes, producer, virtual, movement_node, root, value_descs)
        if tree.desc.paths or tree.desc.moves or any(_wide(nodes[i]) or nodes[i].spec.key in NOT_IN_STORE
                                                     for i in tree.nodes):
            continue
        for v, read in zip(tree.inputs, tree.desc.input_tensors):
            p = producer.get(v)
            if p is None or v in outputs or readers.get(v) != 1 or len(nodes[p].outputs) != 1 or _is_elementwise(
                    nodes[p]):
                continue
            own = value_descs[v]
            if not ((_as_is(read, own) or _reshape_of(read, own)) and own.data_type.size <= 4):
                continue
            if not nodes[p].spec.planner.epilogue or _value_of(nodes[p].desc).sizes != own.sizes:
                continue  # (re-described: Graph.redescribe)
            stored = tree if _as_is(read, own) else _redescribed(  # (a reshape view: at the producer's sizes)
                nodes, producer, virtual, movement_node, root, value_descs, tree, own.sizes)
            if stored is None:
                continue
            made = _own_group(nodes, producer, virtual, computing, movement_node, materialized, p, value_descs)
            if max_bindings is not None and 2 * len(made.inputs) + 2 + len(stored.inputs) - 1 > max_bindings:
                continue
            found[root] = (p, made, stored)
            break
    return found


def _reshape_of(read: TensorDesc, value: TensorDesc) -> bool:
    """Is `read` a reshape of packed `value` (Graph.view with other sizes, packed: every
    element at its own offset)?"""
    return (read.is_packed and value.is_packed and read.data_type == value.data_type
            and read.element_count == value.element_count)


def _redescribed(nodes, producer, virtual, movement_node, root: int, value_descs, tree: Group, sizes) -> Group | None:
    """`tree` (the element-wise Group of `root`, reading its producer's value through a
    reshape view) with every tensor of its nodes described with the producer's `sizes`,
    where each is packed with their element count (no broadcast, no layout change: an
    element's offset is its index in either description, so the store computes the same
    elements); None otherwise. The root's value is then written at those sizes (the same
    bytes: its readers read it through their own descs, a CompiledGraph returns it at its
    own sizes)."""
    count = int(np.prod(sizes))
    changed, descs = {}, dict(value_descs)
    for i in tree.nodes:
        node = nodes[i]
        fields = [f for side in tensor_fields(node.desc) for f in side]
        if any(not d.is_packed or d.element_count != count or "[" in name for name, d in fields):
            return None
        desc = replace(node.desc, **{name: TensorDesc(d.data_type, sizes) for name, d in fields})
        changed[i] = replace(node, desc=desc, viewed=frozenset())
        descs.update((v, TensorDesc(descs[v].data_type, sizes)) for v in node.outputs)
    return _expression_group([changed.get(i, n) for i, n in enumerate(nodes)], producer, virtual, movement_node, root,
                             descs)


def _wide(node) -> bool:
    """Does an element-wise node compute on a tensor wider than 32 bits?"""
    p = _problem(node)
    return any(d.data_type.size > 4 for d in p.inputs + (p.output,))


def _own_group(nodes, producer, virtual, computing, movement_node, materialized, p: int, value_descs) -> Group:
    """The kernel of node `p` (neither data movement nor an element-wise node reading virtual
    values), without an epilogue: a consumer reading through its prologue, or its own."""
    node = nodes[p]
    if node.spec.planner.prologue and node.inputs[0] in computing:
        return _expression_group(nodes, producer, virtual, movement_node, p, value_descs)
    if node.spec.planner.prologue and node.inputs[0] in virtual:
        return _read_group(nodes, producer, materialized, p, value_descs)
    return Group(node.desc, node.spec, tuple(node.inputs), tuple(node.outputs), (p,))


def _epilogue_group(nodes, root: int, p: int, made: Group, tree: Group) -> Group:
    """The kernel of producer node `p` (`made`: its kernel without the epilogue) storing
    element-wise root `root`'s nodes (`tree`, their element-wise Group): the producer's value
    is the epilogue's input 0, the root's other inputs follow."""
    value = nodes[p].outputs[0]
    leaves = list(zip(tree.inputs, tree.desc.input_tensors))
    first = next(k for k, (v, _) in enumerate(leaves) if v == value)
    rest = [k for k in range(len(leaves)) if k != first]
    index = {first: 0, **{k: j + 1 for j, k in enumerate(rest)}}
    node_args = tuple(tuple(("input", index[k]) if kind == "input" else (kind, k) for kind, k in args)
                      for args in tree.desc.args)
    desc = FusedEpilogueDesc(tuple(d for _, d in tensor_fields(made.desc)[0]), tuple(leaves[k][1] for k in rest),
                             tree.desc.output_tensor, made.desc, tree.desc.nodes, node_args)
    return Group(desc, epilogue_spec(desc), made.inputs + tuple(leaves[k][0] for k in rest),
                 tuple(nodes[root].outputs), made.nodes + tree.nodes)
