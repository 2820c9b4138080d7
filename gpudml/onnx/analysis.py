"""What of an ONNX model is known when gpudml builds its graph, and which nodes it cannot run.

An InferenceSession builds its gpudml Graph once per set of input shapes. When it does,
every value of the model is one of:

- KNOWN: its value is known: initializers, Constant, Shape and Size of a value whose sizes
  are known (SequenceLength of a sequence and OptionalHasElement of an optional likewise:
  gpudml/onnx/sequences.py), and what a node computes from KNOWN values alone (evaluated on
  the host, or, for an If whose condition is KNOWN, its branch recorded in its place);
- TENSOR: a tensor computed at run time whose sizes are known: the graph inputs (once
  their shapes are given), what DirectML's operators compute from them, and the outputs of
  control flow run at run time (an If on a TENSOR condition, a Loop or a Scan of TENSOR
  inputs: gpudml/onnx/control.py);
- UNKNOWN: neither: what a node gpudml cannot run computes (a data-dependent shape such as
  NonZero's included), and what is computed from that.

`analyze` walks the model in this order before anything is built, subgraphs of If, Loop and
Scan included, and lists every node gpudml cannot run, whatever the input shapes, so that a
model that constructs never fails later for such a reason: a node with no mapping (and
not folded), an input that DirectML needs when the graph is built
(mapping.CONSTANT_INPUTS) or an If's condition UNKNOWN, a Loop or Scan whose inputs are
UNKNOWN, and what `control_refusal` refuses whatever the inputs (an If whose branches give
other element types, a Loop with neither M nor cond). A subgraph node is named
with its path ("If 'cond_if' then_branch / ...").

A build-time input (an axes, a shape, an If's condition that is a graph input) that is a
TENSOR is no refusal:
its value is computed on the host when the graph is built, from the values of the graph
inputs it derives from, which `analyze` returns as the model's *value inputs*: the session
then builds per distinct value of those inputs as it builds per shape (a graph input that
is also data stays a tensor on the GPU besides). A generator (mapping.GENERATORS:
ConstantOfShape, Range) whose inputs are such values is a TENSOR: a graph node of no operand,
its parameters computed on the host per build (as DirectML's provider runs FILL_VALUE_* on
the GPU where onnxruntime's constant folding leaves the node).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import onnx

from . import mapping, sequences

KNOWN, TENSOR, UNKNOWN = "known", "tensor", "unknown"

#: Control-flow op types: their GRAPH attributes are subgraphs.
CONTROL_FLOW = ("If", "Loop", "Scan")


@dataclass(frozen=True)
class Unsupported:
    """One node gpudml cannot run, and why; `path` places a subgraph's node ("If 'cond_if'
    then_branch"), "" a node of the main graph."""

    name: str
    op_type: str
    opset: int
    reason: str
    path: str = ""

    def __str__(self) -> str:
        where = f"{self.path} / " if self.path else ""
        return f"{where}{self.name or '(unnamed)'} ({self.op_type}, opset {self.opset}): {self.reason}"


def is_fixed(d) -> bool:
    """A fixed dimension: a dim_value of at least 1. A dim_param, no value, -1 (paddle2onnx's
    dynamic dimension) and 0 (allowed by onnx.checker) are dynamic, as onnxruntime reads them."""
    return isinstance(d, int) and d > 0


def shape_error(what: str, name: str, shape, dims) -> str | None:
    """Why a value of `shape` cannot be the model's `what` ("input", "output") `name` of
    `dims` (as the model writes them; None: no shape, anything goes): its rank, or a fixed
    dimension it differs from; None where it fits."""
    if dims is None:
        return None
    shape = list(shape)
    if len(shape) != len(dims):
        return (f"{what} {name!r} has shape {shape}, the model's is {dims}: rank {len(shape)}, the model's is "
                f"{len(dims)}")
    for axis, (d, size) in enumerate(zip(dims, shape)):
        if is_fixed(d) and d != size:
            return (f"{what} {name!r} has shape {shape}, the model's is {dims}: axis {axis} is {size}, the model "
                    f"fixes it at {d}")
    return None


def subgraphs(node: onnx.NodeProto) -> list[tuple[str, onnx.GraphProto]]:
    """The node's GRAPH attributes (If's then_branch and else_branch, Loop's and Scan's body)."""
    found = []
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            found.append((a.name, a.g))
        elif a.type == onnx.AttributeProto.GRAPHS:
            found.extend((f"{a.name}[{k}]", g) for k, g in enumerate(a.graphs))
    return found


def outer_names(graph: onnx.GraphProto) -> set[str]:
    """The values a subgraph (and the subgraphs in it) reads from the scopes around it."""
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    read: set[str] = set()
    for node in graph.node:
        read.update(name for name in node.input if name and name not in defined)
        for _, g in subgraphs(node):
            read.update(name for name in outer_names(g) if name not in defined)
        defined.update(node.output)
    read.update(v.name for v in graph.output if v.name not in defined)
    return read


def node_outer_names(node: onnx.NodeProto) -> set[str]:
    """The values of the enclosing scopes that a control-flow node's subgraphs read."""
    names: set[str] = set()
    for _, g in subgraphs(node):
        names |= outer_names(g)
    return names


def runtime_input(what: str, k: int) -> str:
    """The reason given for an input DirectML needs when the graph is built, computed from
    what is not known even when the input values are given (a node gpudml cannot run)."""
    return (f"{what} (input {k}) is computed from what gpudml cannot run; DirectML needs it when the graph "
            f"is built")


IF_AT_RUN_TIME = "its condition (input 0) is computed from what gpudml cannot run"


def loop_at_run_time(op_type: str) -> str:
    return f"its inputs or the outer values its body reads are computed from what gpudml cannot run ({op_type})"


def control_refusal(node: onnx.NodeProto, opset: int) -> str | None:
    """Why gpudml refuses a control-flow node whatever its inputs, or None: an If whose
    branches give different element types, a Loop with neither a trip count nor a condition
    (ONNX's infinite loop)."""
    op = node.op_type
    if op == "If":
        branches = dict(subgraphs(node))
        then, other = branches.get("then_branch"), branches.get("else_branch")
        if then is None or other is None:
            return "an If needs both then_branch and else_branch"
        if len(then.output) != len(other.output):
            return (f"then_branch gives {len(then.output)} outputs, else_branch {len(other.output)}: an If's "
                    f"branches give the same outputs")
        for k, (a, b) in enumerate(zip(then.output, other.output)):
            ka, kb = a.type.WhichOneof("value"), b.type.WhichOneof("value")
            if ka == kb == "tensor_type" and a.type.tensor_type.elem_type and b.type.tensor_type.elem_type \
                    and a.type.tensor_type.elem_type != b.type.tensor_type.elem_type:
                name = onnx.TensorProto.DataType.Name
                return (f"output {k}: then_branch gives {name(a.type.tensor_type.elem_type)} ({a.name!r}), "
                        f"else_branch {name(b.type.tensor_type.elem_type)} ({b.name!r}): an If's branches give the "
                        f"same element types")
    if op == "Loop":
        given = [k < len(node.input) and bool(node.input[k]) for k in (0, 1)]
        if not any(given):
            return ("neither a trip count M (input 0) nor a condition (input 1): ONNX's infinite loop, which gpudml "
                    "refuses (give M, or a condition the body computes)")
    return None


#: A graph input of at most this many elements, of an integer or boolean type, is a parameter
#: (analyze): an If's condition computed from parameters alone is computed on the host.
PARAMETER_ELEMENTS = 16
_PARAMETER_TYPES = frozenset({onnx.TensorProto.BOOL, onnx.TensorProto.INT8, onnx.TensorProto.INT16,
                              onnx.TensorProto.INT32, onnx.TensorProto.INT64, onnx.TensorProto.UINT8,
                              onnx.TensorProto.UINT16, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64})


def parameter_inputs(inputs) -> list[str]:
    """The names of the graph inputs (ValueInfoProtos) that are parameters: tensors of an
    integer or boolean type whose sizes are fixed, PARAMETER_ELEMENTS elements at most."""
    found = []
    for v in inputs:
        t = v.type.tensor_type if v.type.WhichOneof("value") == "tensor_type" else None
        if t is None or t.elem_type not in _PARAMETER_TYPES or not t.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in t.shape.dim]
        if None not in dims and math.prod(dims) <= PARAMETER_ELEMENTS:
            found.append(v.name)
    return found


def check(graph: onnx.GraphProto, opset: int, initializers, inputs) -> list[Unsupported]:
    """Every node of `graph` (subgraphs included) gpudml cannot run, for any input shapes;
    `initializers` and `inputs` are the names of the KNOWN values and of the graph inputs."""
    return analyze(graph, opset, initializers, inputs)[0]


def analyze(graph: onnx.GraphProto, opset: int, initializers, inputs,
            parameters=()) -> tuple[list[Unsupported], set[str]]:
    """(every node gpudml cannot run, for any input shapes; the value inputs: the graph
    inputs whose values a build needs, for a parameter DirectML needs when the graph is built
    or an If's condition computed from them). `parameters`: the graph inputs that are small
    integer or boolean tensors (`parameter_inputs`: a sample rate, a flag, a step count): an
    If whose condition is one of the graph inputs or is computed from parameters alone takes
    its branch when the graph is built (per value: value inputs); any other condition
    computed at run time is read back (the graph split at the If)."""
    w = _Walk(opset)
    w.status.update({name: KNOWN for name in initializers})
    w.status.update({name: TENSOR for name in inputs})
    w.deps.update({name: frozenset([name]) for name in inputs})
    w.graph_inputs = frozenset(inputs)
    w.parameters = frozenset(parameters)
    w.graph(graph, "")
    return w.problems, w.needed


class _Walk:
    """One walk of a model: each value's status and, for a TENSOR, the graph inputs
    it is computed from (`deps`); the problems found and the value inputs needed."""

    def __init__(self, opset: int):
        self.opset = opset
        self.status: dict[str, str] = {}
        self.deps: dict[str, frozenset] = {}
        self.problems: list[Unsupported] = []
        self.needed: set[str] = set()
        self.graph_inputs: frozenset = frozenset()  # the top graph's inputs (an If on one is inlined per value)
        self.parameters: frozenset = frozenset()  # those that are small integer or boolean tensors (analyze)

    def scoped(self):
        """A copy for a subgraph's walk (its names do not leak out), sharing the findings."""
        w = _Walk(self.opset)
        w.status, w.deps, w.problems, w.needed = dict(self.status), dict(self.deps), self.problems, self.needed
        w.graph_inputs, w.parameters = self.graph_inputs, self.parameters
        return w

    def graph(self, graph, path: str) -> None:
        for t in graph.initializer:
            self.status[t.name] = KNOWN
        for node in graph.node:
            statuses = self.node(node, path)
            deps = frozenset().union(*(self.deps.get(n, frozenset()) for n in [*node.input,
                                                                                 *node_outer_names(node)] if n))
            for name, s in zip(node.output, statuses):
                if name:
                    self.status[name] = s
                    self.deps[name] = deps if s == TENSOR else frozenset()  # (Shape: no input's value)

    def condition_on_host(self, name: str) -> bool:
        """An If's condition `name` is known when the graph is built: KNOWN, a graph input, or
        computed from parameters (small integer or boolean graph inputs) alone."""
        s = self.status.get(name, UNKNOWN)
        deps = self.deps.get(name, frozenset())
        return s == KNOWN or name in self.graph_inputs or (s == TENSOR and bool(deps) and deps <= self.parameters)

    def need(self, name: str) -> bool:
        """Input `name` is wanted when the graph is built: True where it can be (KNOWN, or
        computed from graph inputs whose values the build then takes)."""
        s = self.status.get(name, UNKNOWN)
        if s == TENSOR:
            self.needed.update(self.deps.get(name, ()))
        return s != UNKNOWN

    def node(self, node, path: str) -> list[str]:
        status = self.status
        ins = [status.get(name, UNKNOWN) if name else None for name in node.input]
        present = [s for s in ins if s is not None]
        op, standard, count = node.op_type, node.domain in ("", "ai.onnx"), len(node.output)
        here = f"{path} / " if path else ""
        if standard and op == "Constant":
            return [KNOWN]
        if standard and op in ("Shape", "Size"):
            return [UNKNOWN if present[0] == UNKNOWN else KNOWN]
        if standard and op in sequences.KNOWN_AT_BUILD:  # (a sequence's length, an optional's presence)
            return [UNKNOWN if UNKNOWN in present else KNOWN]
        if standard and op in CONTROL_FLOW:
            refused = control_refusal(node, self.opset)
            if refused is not None:
                self.problems.append(Unsupported(node.name, op, self.opset, refused, path))
                return [UNKNOWN] * count
        if standard and op == "If" and ins[0] != UNKNOWN:
            # A condition KNOWN, or a graph input (its value is on the host: a value input), is known when the graph
            # is built: the taken branch is recorded in its place. One computed on the GPU is read back at run time
            # (the graph split at the If). Either branch may be taken.
            on_host = self.condition_on_host(node.input[0])
            if on_host:
                self.need(node.input[0])
            branches = []
            for attr, g in subgraphs(node):
                scope = self.scoped()
                scope.graph(g, f"{here}If {node.name!r} {attr}")
                branches.append([scope.status.get(v.name, UNKNOWN) for v in g.output])
            outs = [_worst(*outs) for outs in zip(*branches)] if branches else [UNKNOWN] * count
            return [TENSOR if s == KNOWN and not on_host else s for s in outs]
        if standard and op == "SequenceMap":  # its body, recorded per item: what in it gpudml cannot run
            for attr, g in subgraphs(node):
                scope = self.scoped()
                scope.status.update({v.name: _worst(*present) for v in g.input})
                scope.graph(g, f"{here}SequenceMap {node.name!r} {attr}")
        outer = node_outer_names(node)
        generated = standard and op in mapping.GENERATORS and any(s != KNOWN for s in present)
        if (standard and op != "Dropout" and not generated and all(s == KNOWN for s in present)
                and all(status.get(name) == KNOWN for name in outer)):
            return [KNOWN] * count  # folded on the host
        reasons = []
        if standard and op in ("Loop", "Scan") and UNKNOWN not in present \
                and all(status.get(name) != UNKNOWN for name in outer):
            # Run at run time: the body compiled once per input shapes, run per iteration (session.py).
            for attr, g in subgraphs(node):
                scope = self.scoped()
                scope.status.update({v.name: TENSOR for v in g.input})
                scope.graph(g, f"{here}{op} {node.name!r} {attr}")
                if any(scope.status.get(v.name, UNKNOWN) == UNKNOWN for v in g.output):
                    return [UNKNOWN] * count
            return [TENSOR] * count
        if standard and op == "If":
            reasons.append(IF_AT_RUN_TIME)
        elif standard and op in CONTROL_FLOW:
            reasons.append(loop_at_run_time(op))
        else:
            reason = None if standard and op in mapping.FOLDED else mapping.refusal(op, node.domain, self.opset)
            if reason is not None:
                reasons.append(reason)
            else:
                for k, what in mapping.CONSTANT_INPUTS.get(op, {}).items():
                    if k < len(ins) and ins[k] is not None and not self.need(node.input[k]):
                        reasons.append(runtime_input(what, k))
        if not reasons and not standard:  # (a contrib op: a TENSOR, even of constants, which the build may fold
            # on the device: session._folds_contrib; a build-time input is never read from one)
            return [TENSOR] * count
        if not reasons:  # (a generator of host-computed values, ConstantOfShape's or Range's: a TENSOR)
            return [_worst(*present)] * count  # KNOWN for Dropout of constants: the input itself
        self.problems.append(Unsupported(node.name, op, self.opset, "; ".join(reasons), path))
        for attr, g in subgraphs(node):  # what in its subgraphs gpudml could not run either
            scope = self.scoped()
            scope.status.update({v.name: TENSOR for v in g.input})
            scope.graph(g, f"{here}{op} {node.name!r} {attr}")
        return [UNKNOWN] * count


def _worst(*statuses: str) -> str:
    for s in (UNKNOWN, TENSOR):
        if s in statuses:
            return s
    return KNOWN


__all__ = ["CONTROL_FLOW", "KNOWN", "TENSOR", "UNKNOWN", "Unsupported", "analyze", "check", "node_outer_names",
           "outer_names", "subgraphs"]
