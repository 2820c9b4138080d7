"""Graphs (the shape of DirectMLX and of the `directml` package).

- **Recording.** `Graph.input` and `Graph.constant` make Expressions. Every operator's
  functional form, handed an Expression, records a node instead of running
  (gpudml.functional.call calls `record`): the spec infers the node's desc and the graph's
  Device validates it at its feature level there and then, so an error names the node
  where it was written. Numpy arrays and Tensors beside an Expression become constants.
- **Planning.** `plan_steps` turns the nodes that the outputs need into Steps
  (runtime/executor.py): fused kernels (gpudml/fusion.py) or one per node.
- **Running.** A CompiledGraph checks a call's inputs, uploads the numpy ones and runs the
  steps with `runtime.executor.run_steps`: recorded work, pooled buffers.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from . import fusion
from .device import Device, Operator, default_device
from .errors import InvalidArgumentError
from .ops.spec import flat_tensors, grouped_outputs, per_argument, tensor_fields
from .runtime import Tensor, executor
from .runtime.executor import Step
from .runtime.tensor import checked_array, logical_from_raw, native_array, raw_from_logical
from .tensor_desc import TensorDesc, as_int_tuple, check_tensor_desc, positive_sizes
from .types import DataType

INPUT, CONSTANT, NODE = "input", "constant", "node"


class Expression:
    """One tensor of a Graph: an input, a constant or a node's output. Equal only to itself
    (usable as a dict key, e.g. in a compiled graph's inputs). `is_bool`: its elements are
    numpy bools (a comparison's result), UINT8 0 and 1 as DirectML has them; `dtype` stays
    the DataType (UINT8) and a compiled graph returns the output as a bool array (a bool
    Tensor with readback=False)."""

    __slots__ = ("graph", "desc", "name", "kind", "node", "value_id", "is_bool")

    def __init__(self, graph: Graph, value_id: int, desc: TensorDesc, kind: str, name=None, node=None):
        self.graph = graph
        self.value_id = value_id  # its index among the graph's values
        self.desc = desc
        self.kind = kind  # INPUT, CONSTANT or NODE
        self.name = name  # inputs only
        self.node = node  # the producing node's index (NODE only)
        self.is_bool = False

    @property
    def shape(self) -> list[int]:
        return list(self.desc.sizes)

    @property
    def dtype(self) -> DataType:
        return self.desc.data_type

    @property
    def ndim(self) -> int:
        """The number of dimensions (numpy's `ndim`)."""
        return self.desc.rank

    @property
    def size(self) -> int:
        """The number of elements (numpy's `size`)."""
        return self.desc.element_count

    @property
    def ref(self) -> str:
        """How reprs name it: an input's name, else %value_id."""
        return self.name if self.kind == INPUT else f"%{self.value_id}"

    def __repr__(self) -> str:
        if self.kind == INPUT:
            what = f"input {self.name!r}"
        elif self.kind == CONSTANT:
            what = f"constant %{self.value_id}"
        else:
            node = self.graph.nodes[self.node]
            args = ", ".join(self.graph.values[v].ref for v in node.inputs)
            what = f"%{self.value_id} = {node.spec.name}({args}), node {self.node}"
        strides = "" if self.desc.strides is None else f" strides {list(self.desc.strides)}"
        return f"Expression({what}: {self.dtype.name} {self.shape}{strides})"


@dataclass(frozen=True)
class Node:
    """One recorded operator: its desc (validated at the graph device's level when it was
    recorded) reads the values `inputs` and writes the values `outputs` (value ids)."""

    index: int
    spec: object  # the operator's OpSpec
    desc: object
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    viewed: frozenset = frozenset()  # positions k of inputs read through a view (Graph.view): another desc


class _Opaque:
    """The planner of a custom kernel's node as fusion.group_nodes asks it: no chain stage, no
    prologue, no epilogue (nothing fuses across the node)."""

    prologue = False
    epilogue = False

    @staticmethod
    def stage(desc):
        return None


@dataclass(frozen=True)
class CustomSpec:
    """The spec of a custom kernel's node (Graph.record_custom): its name and its call (a
    device.custom.KernelCall, compiled when recorded: the node's step as it is)."""

    name: str
    call: object
    planner = _Opaque()


class Graph:
    """A graph of operators on one Device (None: `default_device()`), built by calling the
    functional forms on its Expressions and compiled with `compile(outputs)`. Recording
    may happen from several threads (a lock keeps the value and node lists whole)."""

    def __init__(self, device=None):
        if device is None:
            device = default_device()
        elif not isinstance(device, Device):
            raise InvalidArgumentError(f"Graph: device must be a gpudml.Device or None, got {type(device).__name__}")
        self.device = device
        self.values: list[Expression] = []
        self.nodes: list[Node] = []
        self.constants: dict[int, np.ndarray] = {}  # value id -> read-only host copy
        self._inputs: dict[str, Expression] = {}
        self._lock = threading.Lock()

    @property
    def inputs(self) -> list[Expression]:
        """The graph's inputs, in the order they were made."""
        return list(self._inputs.values())

    def input(self, sizes, dtype=np.float32, name=None, strides=None) -> Expression:
        """A graph input: a tensor of `sizes` and `dtype` (a numpy dtype, a DataType or its
        name), laid out by `strides` (None: packed; any layout a TensorDesc allows, broadcast
        included). `name` (default input0, input1, ...) keys it in a call's inputs."""
        if name is not None and (not isinstance(name, str) or not name):
            raise InvalidArgumentError(f"Graph.input: name must be a non-empty str or None, got {name!r}")
        where = f"Graph.input {name!r}" if name else "Graph.input"
        if dtype is None:  # (numpy would read None as float64)
            raise InvalidArgumentError(f"{where}: dtype: None is not a DataType nor a numpy dtype")
        data_type = DataType.parse(dtype, f"{where}: dtype")
        sizes = positive_sizes(as_int_tuple(sizes, f"{where}: sizes"), f"Graph.input: {name or 'input'}.sizes")
        strides = None if strides is None else as_int_tuple(strides, f"{where}: strides")
        desc = TensorDesc(data_type, sizes, strides)
        check_tensor_desc("Graph.input", name or "input", desc)
        with self._lock:
            if name is None:
                name = next(f"input{i}" for i in range(len(self._inputs) + 1) if f"input{i}" not in self._inputs)
            elif name in self._inputs:
                raise InvalidArgumentError(f"Graph.input: name {name!r} is taken by another input of this graph")
            expr = self._add(desc, INPUT, name=name)
            self._inputs[name] = expr
        return expr

    def constant(self, array) -> Expression:
        """A constant: `array` (a numpy array, or a Tensor read back) is copied now and
        uploaded once, when a graph that needs it is compiled."""
        array = _host_copy(array, "Graph.constant: array", self.device)
        with self._lock:
            return self._add_constant(array)

    def compile(self, outputs, *, fuse: bool = True) -> CompiledGraph:
        """The graph compiled to compute `outputs` (a list of this graph's Expressions, in
        the order a call returns them; inputs and constants may be among them, the same
        Expression more than once too). Only the nodes the outputs need are compiled.
        `fuse=False` runs one kernel per node (no fusion: for comparisons)."""
        if not isinstance(fuse, (bool, np.bool_)):
            raise InvalidArgumentError(f"Graph.compile: fuse must be True or False, got {fuse!r}")
        return CompiledGraph(self, self._check_outputs(outputs), bool(fuse))

    def __repr__(self) -> str:
        return (f"Graph({len(self._inputs)} inputs, {len(self.constants)} constants, {len(self.nodes)} nodes, "
                f"device={self.device!r})")

    # -- recording ---------------------------------------------------------------------
    def record(self, spec, device, items: list[tuple], attributes: dict):
        """Record `spec`'s operator as the functional call with these tensor arguments
        (a Call's: (name, value) or (name, value, convert); a list of
        values for an argument of `spec.tensor_lists`) and attributes would run it. Returns
        its output Expressions as the eager call returns arrays (one Expression, or a list
        for an operator with several outputs: SPLIT's)."""
        number = len(self.nodes)
        try:
            if device is not None and device is not self.device:
                raise InvalidArgumentError(
                    f"{spec.functional_name}: device={device!r} is not the graph's device {self.device!r}")
            flat, counts = flat_tensors(spec, items)
            operands = [self._operand(spec, item) for item in flat]
            descs = [o.desc if isinstance(o, Expression) else _packed_desc(o) for o in operands]
            desc = spec.infer_output(*per_argument(descs, counts), **attributes)
            self.device.create_operator(desc)  # validated at the device's feature level
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(f"graph node {number} ({spec.name}): {exc}") from exc
        with self._lock:
            ids = tuple(o.value_id if isinstance(o, Expression) else self._add_constant(o).value_id for o in operands)
            index = len(self.nodes)
            outputs = [self._add(d, NODE, node=index) for _, d in tensor_fields(desc)[1]]
            viewed = frozenset(k for k, o in enumerate(operands)
                               if isinstance(o, Expression) and o.desc != self.values[o.value_id].desc)
            self.nodes.append(Node(index, spec, desc, ids, tuple(o.value_id for o in outputs), viewed))
        return grouped_outputs(desc, outputs)

    def record_custom(self, call, operands: list[Expression]) -> list[Expression]:
        """Record a custom kernel's call (gpudml/kernel.py: an HLSL kernel bound to the
        operands' descs, its outputs, grid and constants; checked already) reading `operands`
        (Expressions of this graph). An opaque node: nothing fuses across it. Returns its
        output Expressions, in order."""
        spec = CustomSpec(call.name, call)
        with self._lock:
            index = len(self.nodes)
            outputs = [self._add(d, NODE, node=index) for _, d in call.outputs]
            self.nodes.append(Node(index, spec, call, tuple(e.value_id for e in operands),
                                   tuple(o.value_id for o in outputs)))
        return outputs

    def redescribe(self, expr: Expression, sizes) -> Expression:
        """`expr`, a node's packed output just recorded (and not yet read by another node),
        described with other `sizes` of the same element count: a reshape that costs
        nothing when the graph runs (what keepdims=False of the reducing functional forms
        makes). Nodes that read it later see the new sizes; a compiled graph returns it so."""
        sizes = as_int_tuple(sizes, "Graph.redescribe: sizes")
        desc = expr.desc
        new = TensorDesc(desc.data_type, sizes)
        if expr.kind != NODE or not desc.is_packed or new.element_count != desc.element_count:
            raise InvalidArgumentError(f"Graph.redescribe: {expr!r} as sizes {list(sizes)}: only a node's packed "
                                       f"output, with the same element count, can be re-described")
        with self._lock:
            if any(expr.value_id in node.inputs for node in self.nodes[expr.node + 1:]):
                raise InvalidArgumentError(f"Graph.redescribe: {expr!r} is read by a later node already")
            expr.desc = new
        return expr

    def view(self, expr: Expression, sizes, strides=None) -> Expression:
        """`expr`'s elements read through another TensorDesc of its data type: `sizes` and
        `strides` (None: packed) over the same buffer, as DirectML expresses a reshape, a
        transpose or a broadcast (stride 0) in a reading operator's tensor desc. Nothing is
        recorded and nothing runs: nodes that read the view read `expr`'s value through its
        desc (such a value is materialized: fusion.group_nodes), and a compiled graph returns a
        packed view of a packed value as those sizes."""
        if not isinstance(expr, Expression) or expr.graph is not self:
            raise InvalidArgumentError(f"Graph.view: {expr!r} is not an Expression of this graph")
        sizes = as_int_tuple(sizes, "Graph.view: sizes")
        strides = None if strides is None else as_int_tuple(strides, "Graph.view: strides")
        desc = TensorDesc(expr.desc.data_type, sizes, strides)
        check_tensor_desc("Graph.view", "view", desc)
        own = self.values[expr.value_id].desc
        if desc.buffer_bytes > own.buffer_bytes:
            raise InvalidArgumentError(f"Graph.view: sizes {list(sizes)} strides {desc.strides} read "
                                       f"{desc.buffer_bytes} bytes; {expr!r} has {own.buffer_bytes}")
        view = Expression(self, expr.value_id, desc, expr.kind, name=expr.name, node=expr.node)
        view.is_bool = expr.is_bool
        return view

    def _operand(self, spec, item: tuple):
        """An Expression of this graph, or the host copy of a value to make a constant of."""
        name, value = item[0], item[1]
        if isinstance(value, Expression):
            return value  # (record_node checked that it is this graph's)
        if not isinstance(value, Tensor) and len(item) > 2:
            value = item[2](value)
        return _host_copy(value, f"{spec.functional_name}: {name}", self.device)

    def _add(self, desc: TensorDesc, kind: str, **where) -> Expression:
        """A new value (under the lock)."""
        expr = Expression(self, len(self.values), desc, kind, **where)
        self.values.append(expr)
        return expr

    def _add_constant(self, array: np.ndarray) -> Expression:
        expr = self._add(_packed_desc(array), CONSTANT)
        self.constants[expr.value_id] = array
        return expr

    def _check_outputs(self, outputs) -> tuple[Expression, ...]:
        if isinstance(outputs, Expression):
            raise InvalidArgumentError("Graph.compile: outputs must be a list of Expressions, got one Expression "
                                       "(write compile([expression]))")
        if not isinstance(outputs, (list, tuple)):
            raise InvalidArgumentError(
                f"Graph.compile: outputs must be a list of Expressions, got {type(outputs).__name__}")
        if not outputs:
            raise InvalidArgumentError("Graph.compile: outputs is empty; name at least one Expression to compute")
        for i, expr in enumerate(outputs):
            if not isinstance(expr, Expression):
                raise InvalidArgumentError(
                    f"Graph.compile: outputs[{i}] is a {type(expr).__name__}, not an Expression")
            if expr.graph is not self:
                raise InvalidArgumentError(
                    f"Graph.compile: outputs[{i}] {expr!r} is an Expression of another graph ({expr.graph!r}), "
                    f"not of this one ({self!r})")
        return tuple(outputs)


def record(spec, device, items: list[tuple], attributes: dict):
    """The graph node of a functional call whose tensor arguments include an Expression
    (gpudml.functional.call hands it over): every Expression must belong to one graph."""
    first = None
    for item in flat_tensors(spec, items)[0]:
        if not isinstance(item[1], Expression):
            continue
        if first is None:
            first = item
        elif item[1].graph is not first[1].graph:
            raise InvalidArgumentError(
                f"{spec.functional_name}: {first[0]} is an Expression of {first[1].graph!r} and {item[0]} one of "
                f"{item[1].graph!r}; the Expressions of one node come from one graph")
    return first[1].graph.record(spec, device, items, attributes)


def _host_copy(value, where: str, device) -> np.ndarray:
    """A read-only, packed host copy of a constant's value (a Tensor is read back)."""
    if isinstance(value, Tensor):
        if value.buffer is None:
            raise InvalidArgumentError(f"{where}: the Tensor was freed")
        if not device.shares_memory_with(value.device):
            raise InvalidArgumentError(
                f"{where}: the Tensor lives on {value.device.adapter_name}, the graph's device is "
                f"{device.adapter_name}")
        value = value.numpy()
    if isinstance(value, np.ndarray) and value.dtype == np.bool_:
        value = value.astype(np.uint8)  # (a bool constant: UINT8 0 and 1, as DirectML has bools)
    array = np.array(checked_array(value, where), order="C")  # a copy: later edits do not leak in
    array.flags.writeable = False
    return array


def _packed_desc(array: np.ndarray) -> TensorDesc:
    return TensorDesc(DataType.from_numpy(array.dtype), array.shape)


# ---------------------------------------------------------------------------- planning
def plan_steps(graph: Graph, outputs, device, fuse: bool = True) -> list[Step]:
    """The steps that compute `outputs` (Expressions of `graph`) on `device`, in an order
    that runs producers first (runtime/executor.py says what a step provides;
    `executor.check_steps` checks a plan at compile). With `fuse`, data-movement and
    element-wise nodes run inside the kernels that read their values, a Reduce's, an
    ArgMax's or a scan's loads included, and element-wise nodes in the store of the
    Reduce, ArgMax, GEMM, softmax, normalization or scan producing their input
    (gpudml/fusion.py has the rules); without, one step per node the outputs need."""
    if not fuse:
        return [Step(_compiled(device, node.spec, node.desc, validate=True), node.inputs, node.outputs)
                for node in needed_nodes(graph, outputs)]
    groups = fusion.group_nodes(graph.nodes, [e.value_id for e in outputs], {v.value_id: v.desc for v in graph.values},
                         device.caps.max_storage_buffers_per_shader_stage)
    return [Step(_compiled(device, g.spec, g.desc), g.inputs, g.outputs) for g in groups]


def _compiled(device, spec, desc, validate: bool = False):
    """A node's (or fused group's) compiled operator; a custom kernel's call as it was recorded."""
    if isinstance(spec, CustomSpec):
        return spec.call.graph_step()
    operator = device.create_operator(desc) if validate else Operator(device, desc, spec)
    return device.compile_operator(operator)


def needed_nodes(graph: Graph, outputs) -> list[Node]:
    """The nodes whose outputs `outputs` depend on, in recording order."""
    needed: set[int] = set()
    pending = [expr.value_id for expr in outputs]
    while pending:
        value = graph.values[pending.pop()]
        if value.kind == NODE and value.node not in needed:
            needed.add(value.node)
            pending.extend(graph.nodes[value.node].inputs)
    return [graph.nodes[i] for i in sorted(needed)]


# ---------------------------------------------------------------------------- running
class CompiledGraph:
    """A graph compiled for some outputs: call it with a dict of inputs.

    `steps` are recorded per call (runtime/executor.py); constants were uploaded at
    compile. Threads: a call keeps all its state (uploads, intermediates, results) to
    itself and the compiled operators record under the runtime's lock, so several threads
    may call one CompiledGraph at once with no lock of its own (docs/threading.md); each
    call's dispatches stay in order."""

    def __init__(self, graph: Graph, outputs: tuple[Expression, ...], fuse: bool = True):
        self.graph = graph
        self.device = graph.device
        self.outputs = outputs
        with graph._lock:  # a snapshot: recording may go on in other threads
            self._known = dict(graph._inputs)
        self.steps = plan_steps(graph, outputs, self.device, fuse)
        used = {v for step in self.steps for v in step.inputs} | {e.value_id for e in outputs}
        #: The graph inputs this compiled graph reads (a call must give each).
        self.inputs = tuple(e for e in self._known.values() if e.value_id in used)
        self._constants = {v: self.device.tensor(graph.constants[v]) for v in sorted(used & graph.constants.keys())}
        sources = {e.value_id: e.desc for e in self.inputs} | {v: t.desc for v, t in self._constants.items()}
        executor.check_steps(self.steps, sources, [e.value_id for e in outputs])
        self._output_ids = [e.value_id for e in outputs]
        self._plan = executor.Plan(self.steps, self._output_ids)  # (each call records it: nothing worked out again)

    @property
    def dispatch_count(self) -> int:
        """Compute dispatches per call."""
        return sum(step.dispatches for step in self.steps)

    def __call__(self, inputs, readback: bool = True) -> list:
        """Run once. `inputs`: {input name or input Expression: numpy array or Tensor}, one
        for each input in `self.inputs` (inputs of the graph these outputs do not need may
        be given too: checked, not used). A numpy input has the input's dtype (no casts)
        and its shape; for a strided input, its buffer contents (required_elements
        elements, as CompiledOperator.execute takes them) are accepted too. A Tensor must
        have the input's data type, sizes and strides. Returns the outputs in compile's
        order: numpy arrays, or with `readback=False` new Tensors."""
        if not isinstance(readback, (bool, np.bool_)):
            raise InvalidArgumentError(f"CompiledGraph: readback must be True or False, got {readback!r}")
        given = self._bind(inputs)
        sources = dict(self._constants)
        staged = []
        try:
            for expr in self.inputs:
                value = given[expr]
                if not isinstance(value, Tensor):
                    value = executor.upload(self.device, value, expr.desc, f"the graph's input {expr.name!r}")
                    staged.append(value)
                sources[expr.value_id] = value
            results = self._plan.run(self.device, sources)
        finally:
            for t in reversed(staged):
                t.free()
        for t, expr in zip(results, self.outputs):
            if t.desc.sizes != expr.desc.sizes:  # a re-described node output (keepdims=False): same bytes
                t.desc = expr.desc
            t.is_bool = expr.is_bool
        if not readback:
            return results
        return [_read(t) for t in results]

    def __repr__(self) -> str:
        names = ", ".join(repr(e.name) for e in self.inputs)
        return (f"CompiledGraph(inputs [{names}], {len(self.outputs)} outputs, {len(self.steps)} steps, "
                f"{self.dispatch_count} dispatches)")

    # -- inputs ------------------------------------------------------------------------
    def _bind(self, inputs) -> dict:
        """{input Expression: Tensor or buffer contents} for each given input, checked."""
        if not isinstance(inputs, Mapping):
            raise InvalidArgumentError(
                f"CompiledGraph: inputs must be a dict keyed by input names or input Expressions, "
                f"got {type(inputs).__name__}")
        bound = {}
        for key, value in inputs.items():
            expr = self._input_for(key)
            if expr in bound:
                raise InvalidArgumentError(f"CompiledGraph: input {expr.name!r} is given twice (by its name and "
                                           f"by its Expression)")
            bound[expr] = _input_value(expr, value, self.device)
        missing = [e for e in self.inputs if e not in bound]
        if missing:
            listed = ", ".join(f"{e.name!r} ({_expected(e.desc)})" for e in missing)
            raise InvalidArgumentError(f"CompiledGraph: missing input{'s' if len(missing) > 1 else ''} {listed}")
        return bound

    def _names(self) -> str:
        """The graph's input names, for messages."""
        return ", ".join(map(repr, self._known)) or "none"

    def _input_for(self, key) -> Expression:
        if isinstance(key, str):
            expr = self._known.get(key)
            if expr is None:
                raise InvalidArgumentError(f"CompiledGraph: unknown input name {key!r} (the graph's inputs: "
                                           f"{self._names()})")
            return expr
        names = self._names()
        if not isinstance(key, Expression):
            raise InvalidArgumentError(f"CompiledGraph: input keys are input names or input Expressions, got "
                                       f"{type(key).__name__} {key!r}")
        if key.graph is not self.graph:
            raise InvalidArgumentError(f"CompiledGraph: {key!r} is an Expression of another graph "
                                       f"({key.graph!r}); the graph's inputs: {names}")
        if key.kind != INPUT:
            kind = "a constant" if key.kind == CONSTANT else f"the output of node {key.node}"
            raise InvalidArgumentError(f"CompiledGraph: {key!r} is {kind}, not an input (the graph's inputs: "
                                       f"{names})")
        if self._known.get(key.name) is not key:
            raise InvalidArgumentError(f"CompiledGraph: {key!r} was added to the graph after it was compiled "
                                       f"(the compiled graph's inputs: {names})")
        return key


def _input_value(expr: Expression, value, device):
    """A checked call input: the Tensor itself, or a numpy array as buffer contents."""
    where = f"CompiledGraph: input {expr.name!r}"
    desc = expr.desc
    if isinstance(value, Tensor):
        _check_tensor(value, desc, where, device)
        return value
    array = native_array(value, where)
    data_type = DataType.from_numpy(array.dtype, where)
    if data_type != desc.data_type:
        raise InvalidArgumentError(f"{where}: dtype {array.dtype} ({data_type.name}) differs from the input's "
                                   f"{desc.data_type.name}; graphs do not cast (convert with astype first)")
    if array.shape == desc.sizes:
        contents = raw_from_logical(array, desc)
        if not desc.is_packed and not _same_bits(logical_from_raw(contents, desc), array):
            raise InvalidArgumentError(
                f"{where}: elements that the input's strides {list(desc.strides)} place at one address differ "
                f"(a stride 0 broadcasts one element); pass equal values there, or the buffer contents "
                f"({desc.required_elements} elements)")
        return contents
    if not desc.is_packed and array.size == desc.required_elements:
        return np.ascontiguousarray(array).reshape(-1)
    raise InvalidArgumentError(f"{where}: shape {list(array.shape)}, expected {_expected(desc)}")


def _check_tensor(t: Tensor, desc: TensorDesc, where: str, device) -> None:
    if not device.shares_memory_with(t.device):
        raise InvalidArgumentError(
            f"{where}: the Tensor lives on {t.device.adapter_name}, the graph's device is {device.adapter_name}")
    if t.buffer is None:
        raise InvalidArgumentError(f"{where}: the Tensor was freed")
    got = t.desc
    same = (got.data_type == desc.data_type and got.sizes == desc.sizes
            and all(a == b for n, a, b in zip(desc.sizes, got.effective_strides, desc.effective_strides) if n > 1))
    if not same:
        raise InvalidArgumentError(f"{where}: a Tensor of {got!r}, expected {desc!r} (the same data type, sizes "
                                   f"and strides; graphs do not cast nor relayout)")


def _expected(desc: TensorDesc) -> str:
    text = f"{desc.data_type.name} of shape {list(desc.sizes)}"
    if desc.is_packed:
        return text
    return (f"{text}, or its buffer contents in the layout strides {list(desc.strides)}: "
            f"{desc.required_elements} elements")


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


def _read(t: Tensor) -> np.ndarray:
    """The Tensor's elements as a new numpy array; its buffer goes back to the pool."""
    try:
        return t.numpy()
    finally:
        t.free()


__all__ = ["CompiledGraph", "Expression", "Graph", "Node", "Step", "needed_nodes", "plan_steps", "record"]
