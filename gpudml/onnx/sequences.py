"""ONNX's sequences and optionals in a gpudml session: values that are not tensors (issue #45).

A *sequence* at recording time is a `Sequence`: a tuple of the session's recorded values
(Expressions of its Graph, or numpy arrays known on the host) and the element type; an
*optional* is an `OptionalValue` (its value, or None where it is empty). Both are plain,
immutable data: a node that reads one reads its items, a graph output that is one returns
its items as a Python list (None for an empty optional), as onnxruntime's Python API does.
What a Loop body carries from one iteration to the next (issue #45's control flow) can be
such a value as it is: its items are the Expressions the body recorded, so carrying a
sequence is carrying each of its items (`leaves`), plus the sequence's length, which the
build knows.

How each op runs (ONNX Runtime's DirectML execution provider registers the CPU kernels of
the sequence ops, SequenceAt's, SequenceInsert's and SequenceErase's positions read in CPU
memory, SequenceLength's output written there, and runs ConcatFromSequence with
DML_OPERATOR_JOIN; SplitToSequence and Optional fall back to the CPU provider):

- SequenceConstruct, SequenceEmpty, SequenceAt, SequenceInsert, SequenceErase, Identity,
  Optional, OptionalGetElement: no dispatch, the list is rebuilt when the graph is built
  (the tensors stay where they are: an item of a sequence is the Expression itself);
- SequenceLength, OptionalHasElement: host values (known when the graph is built);
- ConcatFromSequence: DML_OPERATOR_JOIN of the items (`dml.join`), new_axis=1 each item a
  view with a 1 inserted at the axis first; empty items left out (as Concat's);
- SplitToSequence: DML_OPERATOR_SPLIT (`dml.split`), keepdims=0 a view dropping the axis.

Positions (SequenceAt, SequenceInsert, SequenceErase) and SplitToSequence's split are
build-time values (mapping.CONSTANT_INPUTS): constants, or computed on the host from the
value inputs (analysis.analyze), as the provider reads them in CPU memory; a position
computed from what gpudml cannot run is refused at construction. One out of range is an
OutOfBoundsError naming the node, the input, the range and the value, when the graph is built.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from ..errors import InvalidArgumentError, OutOfBoundsError
from ..graph import Expression
from ..runtime.tensor import Tensor


class BadValue(InvalidArgumentError):
    """What onnxruntime fails a run for (an empty sequence to concatenate, a split of 0): the
    session raises it as it is, not as a node it cannot run."""


class BadPosition(BadValue, OutOfBoundsError):
    """A position or an axis out of its range."""


@dataclass(frozen=True)
class Sequence:
    """An ONNX sequence of tensors while a graph is recorded (or eagerly): `items`, each an
    Expression or a numpy array; `dtype`, the element type (numpy's; BOOL is bool)."""

    items: tuple
    dtype: np.dtype

    def __len__(self) -> int:
        return len(self.items)


@dataclass(frozen=True)
class OptionalValue:
    """An ONNX optional: `value` (a tensor or a Sequence), None where the optional is empty."""

    value: object = None


def is_container(value) -> bool:
    """A sequence or an optional, not a tensor."""
    return isinstance(value, (Sequence, OptionalValue))


def leaves(value) -> list:
    """The tensors a value holds, in order (a tensor: itself; an empty optional: none)."""
    if isinstance(value, Sequence):
        return [leaf for item in value.items for leaf in leaves(item)]
    if isinstance(value, OptionalValue):
        return [] if value.value is None else leaves(value.value)
    return [value]


def map_leaves(value, fn):
    """`value` with `fn` applied to each tensor it holds, in the order of `leaves`."""
    if isinstance(value, Sequence):
        return Sequence(tuple(map_leaves(item, fn) for item in value.items), value.dtype)
    if isinstance(value, OptionalValue):
        return value if value.value is None else OptionalValue(map_leaves(value.value, fn))
    return fn(value)


def _label(n) -> str:
    return f"{n.op_type} {n.name or '(unnamed)'!r}"


def _sequence(n, k: int) -> Sequence:
    value = n.input(k)
    if isinstance(value, OptionalValue):
        value = value.value
    if not isinstance(value, Sequence):
        raise BadValue(f"{_label(n)}: input {k} is not a sequence (got {type(value).__name__})")
    return value


def _position(n, k: int, length: int, insert: bool = False, default: int | None = None) -> int:
    """Input k, a position in a sequence of `length` items: [-length, length - 1] (insert:
    [-length, length]), negative counting from the end, as onnxruntime checks it; the index
    it names."""
    value = n.constant(k, "position")
    if value is None:
        return default
    value = np.asarray(value)
    if value.size != 1:
        raise BadValue(f"{_label(n)}: position (input {k}) must be a scalar, got shape "
                                   f"{list(value.shape)}")
    p = int(value.reshape(-1)[0])
    hi = length if insert else length - 1
    if not -length <= p <= hi:
        raise BadPosition(f"{_label(n)}: position (input {k}) must be in [{-length}, {hi}] for a sequence of "
                               f"{length} tensor{'s' if length != 1 else ''} (onnxruntime: invalid sequence index), "
                               f"got {p}")
    return p + length if p < 0 else p


def _dtype_of(value) -> np.dtype:
    return value.dtype.numpy if isinstance(value, Expression) else np.asarray(value).dtype


# ------------------------------------------------------------------------------ the ops
def _construct(ctx, n):
    items = tuple(n.inputs)
    return [Sequence(items, _dtype_of(items[0]))]


def _empty(ctx, n):
    elem = n.attr("dtype", onnx.TensorProto.FLOAT)
    return [Sequence((), np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem)))]


def _at(ctx, n):
    seq = _sequence(n, 0)
    return [seq.items[_position(n, 1, len(seq))]]


def _insert(ctx, n):
    seq = _sequence(n, 0)
    k = _position(n, 2, len(seq), insert=True, default=len(seq))
    return [Sequence(seq.items[:k] + (n.input(1),) + seq.items[k:], seq.dtype)]


def _erase(ctx, n):
    seq = _sequence(n, 0)
    if not len(seq):
        raise BadPosition(f"{_label(n)}: input 0 is an empty sequence: there is nothing to erase "
                               f"(onnxruntime fails too)")
    k = _position(n, 1, len(seq), default=len(seq) - 1)
    return [Sequence(seq.items[:k] + seq.items[k + 1:], seq.dtype)]


def _length(ctx, n):
    return [np.array(len(_sequence(n, 0)), np.int64)]


def _host(ctx, values) -> bool:
    """Computed on the host: a session's values that are all known there (eagerly, every
    value is an array and the operators run on the device)."""
    return ctx.graph is not None and not any(isinstance(v, Expression) for v in values)


def _concat(ctx, n):
    """ConcatFromSequence: JOIN of the items along `axis` (new_axis=1: each item viewed with
    a 1 inserted there first), the empty items left out; every item's other sizes must be
    the first's (new_axis=1: every size), as onnxruntime checks."""
    seq = _sequence(n, 0)
    if not len(seq):
        raise BadValue(f"{_label(n)}: input 0 is an empty sequence: a concatenation needs at least one "
                                   f"tensor (onnxruntime: must have 1 or more inputs)")
    new_axis = int(n.attr("new_axis", 0))
    shapes = [list(np.shape(x)) if not isinstance(x, Expression) else list(x.shape) for x in seq.items]
    r = len(shapes[0])
    if "axis" not in n.attrs:
        raise BadValue(f"{_label(n)}: the axis attribute is required")
    axis = int(n.attr("axis"))
    out_rank = r + new_axis
    if not -out_rank <= axis < out_rank:
        raise BadPosition(f"{_label(n)}: axis must be in [{-out_rank}, {out_rank - 1}] for items of rank {r}"
                               f"{' and new_axis=1' if new_axis else ''}, got {axis}")
    axis %= out_rank
    for k, s in enumerate(shapes):
        if len(s) != r or any(a != b for d, (a, b) in enumerate(zip(s, shapes[0])) if new_axis or d != axis):
            rule = "every item's shape must be the first's (new_axis=1)" if new_axis else \
                f"every item's sizes but axis {axis} must be the first's"
            raise BadValue(f"{_label(n)}: {rule}: item 0 is {shapes[0]}, item {k} is {s}")
    items = list(seq.items)
    if new_axis:
        shapes = [s[:axis] + [1] + s[axis:] for s in shapes]
        items = [ctx.reshape(x, s) if not _empty_value(x) else np.reshape(x, s) for x, s in zip(items, shapes)]
    kept = [x for x in items if not _empty_value(x)]
    if _host(ctx, kept) or not kept:
        return [np.concatenate([np.asarray(x) for x in items], axis=axis)]
    if len(kept) == 1:
        return [kept[0]]
    return [ctx.fn("join")([ctx.as_expr(x) for x in kept], axis)]


def _empty_value(x) -> bool:
    return not isinstance(x, Expression) and np.size(x) == 0


def _split(ctx, n):
    """SplitToSequence: SPLIT of the input along `axis` into parts of `split`'s sizes (a
    scalar: parts of that size, the last one smaller; absent: parts of 1, keepdims=0
    dropping the axis as a view), as onnxruntime cuts them."""
    x = n.input(0)
    sizes_in = list(x.shape) if isinstance(x, Expression) else list(np.shape(x))
    r = len(sizes_in)
    axis = int(n.attr("axis", 0))
    if not -r <= axis < r:
        raise BadPosition(f"{_label(n)}: axis must be in [{-r}, {r - 1}] for an input of rank {r}, got {axis}")
    axis %= r
    dim = sizes_in[axis]
    split = n.constant(1, "split")
    if split is None:
        sizes = [1] * dim
    else:
        split = np.asarray(split)
        if split.ndim == 0:
            part = int(split)
            if part <= 0:
                raise BadValue(f"{_label(n)}: split (input 1), a scalar, must be > 0, got {part}")
            sizes = [min(part, dim - k) for k in range(0, dim, part)]
        elif split.ndim == 1:
            sizes = [int(s) for s in split]
            if any(s < 0 for s in sizes) or sum(sizes) != dim:
                raise BadValue(f"{_label(n)}: split (input 1) must hold sizes >= 0 adding up to the "
                                           f"input's size on axis {axis}, {dim}; got {sizes}")
        else:
            raise BadValue(f"{_label(n)}: split (input 1) must be a scalar or 1-D, got shape "
                                       f"{list(split.shape)}")
    dtype = _dtype_of(x)
    parts = [s for s in sizes if s]
    if _host(ctx, [x]):
        cut = iter(np.split(np.asarray(x), np.cumsum(parts)[:-1], axis=axis) if parts else [])
    else:
        cut = iter(list(ctx.fn("split")(ctx.as_expr(x), axis, parts)) if len(parts) > 1 else [x])
    items = []
    for s in sizes:
        shape = sizes_in[:axis] + [s] + sizes_in[axis + 1:]
        item = next(cut) if s else np.zeros(shape, dtype)
        if split is None and not n.attr("keepdims", 1):
            item = ctx.reshape(item, shape[:axis] + shape[axis + 1:]) if isinstance(item, Expression) \
                else np.reshape(item, shape[:axis] + shape[axis + 1:])
        items.append(item)
    return [Sequence(tuple(items), np.dtype(dtype))]


def _optional(ctx, n):
    value = n.input(0)
    return [OptionalValue(value.value if isinstance(value, OptionalValue) else value)]


def _has_element(ctx, n):
    value = n.input(0)
    present = value is not None and not (isinstance(value, OptionalValue) and value.value is None)
    return [np.array(present)]


def _get_element(ctx, n):
    value = n.input(0)
    if isinstance(value, OptionalValue):
        if value.value is None:
            raise BadValue(f"{_label(n)}: input 0 is an empty optional: there is no element to get "
                                       f"(onnxruntime fails too)")
        return [value.value]
    return [value]


def _sequence_map(ctx, n):
    """SequenceMap: its body once per item of the first input (every sequence input of that
    length, a tensor input the same in each), the body's outputs collected into sequences.
    In a session the body is recorded in the graph per item, as an inlined If branch is
    (`ctx.subgraph`: fused with the rest, no dispatch of its own); eagerly, its nodes run
    per item through their rows on the context's device (mapping.Context.subgraph)."""
    body = n.attrs["body"]
    count = len(_sequence(n, 0))
    for k, v in enumerate(n.inputs):
        if isinstance(v, Sequence) and len(v) != count:
            raise BadValue(f"{_label(n)}: every sequence input must have input 0's length, {count}: input {k} "
                           f"has {len(v)}")
    outs = [[] for _ in body.output]
    for i in range(count):
        bound = {g.name: (v.items[i] if isinstance(v, Sequence) else v) for g, v in zip(body.input, n.inputs)}
        made = ctx.subgraph(body, bound, f"SequenceMap {n.name!r} body[{i}]", n.opset)
        for collected, value in zip(outs, made):
            collected.append(value)
    return [Sequence(tuple(items), elem_dtype(v.type) or (_dtype_of(items[0]) if items else np.dtype(np.float32)))
            for items, v in zip(outs, body.output)]


#: The ops of this module, as rows of the mapping table (mapping.TABLE makes them mapping.Mapping
#: rows): (op type, what DirectML's execution provider runs, build(ctx, node), gpudml forms called).
ROWS: tuple = (
    ("SequenceConstruct", "none: a list of the inputs (the provider's CPU kernel)", _construct, ()),
    ("SequenceEmpty", "none: an empty list (the provider's CPU kernel)", _empty, ()),
    ("SequenceAt", "none: the item itself (the provider's CPU kernel; position on the host)", _at, ()),
    ("SequenceInsert", "none: a list with the tensor itself (the provider's CPU kernel; position on the host)",
     _insert, ()),
    ("SequenceErase", "none: a list without the item (the provider's CPU kernel; position on the host)", _erase, ()),
    ("SequenceLength", "none: a host value (the provider's CPU kernel, output in CPU memory)", _length, ()),
    ("ConcatFromSequence", "JOIN (new_axis: each item a view with a 1 inserted)", _concat, ("join",)),
    ("SplitToSequence", "SPLIT (keepdims=0: views dropping the axis)", _split, ("split",)),
    ("SequenceMap", "none itself: its body's operators, recorded once per item", _sequence_map, ()),
    ("Optional", "none: the value itself (the CPU provider's kernel)", _optional, ()),
    ("OptionalHasElement", "none: a host value (the provider's CPU kernel)", _has_element, ()),
    ("OptionalGetElement", "none: the value itself (the provider's CPU kernel)", _get_element, ()),
)

#: The op types of ROWS: a session records them even where their inputs are all known on
#: the host (onnx's reference evaluator is not asked to fold a sequence).
OPS = frozenset(row[0] for row in ROWS)

#: Build-time inputs (index: what), mapping.CONSTANT_INPUTS takes them.
CONSTANT_INPUTS = {"SequenceAt": {1: "position"}, "SequenceInsert": {2: "position"},
                   "SequenceErase": {1: "position"}, "SplitToSequence": {1: "split"}}

#: Op types whose outputs are known when the graph is built once their inputs' kinds are
#: (not their data): analysis.analyze takes them as it takes Shape.
KNOWN_AT_BUILD = ("SequenceLength", "OptionalHasElement")


def handles(op_type: str, inputs: list) -> bool:
    """The session records this node through TABLE (or Identity of a sequence) rather than
    fold it or look for empty tensors in its inputs."""
    return op_type in OPS or (op_type == "Identity" and any(is_container(v) for v in inputs))


# ------------------------------------------------------------------------------ graph inputs and outputs
def type_string(t: onnx.TypeProto) -> str:
    """onnxruntime's NodeArg.type of an ONNX type: "tensor(float)", "seq(tensor(float))",
    "optional(seq(tensor(int64)))"."""
    kind = t.WhichOneof("value")
    if kind == "sequence_type":
        return f"seq({type_string(t.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({type_string(t.optional_type.elem_type)})"
    if kind == "tensor_type":
        name = onnx.helper.tensor_dtype_to_string(t.tensor_type.elem_type).removeprefix("TensorProto.").lower()
        return f"tensor({name})"
    return "unknown"


def is_tensor_type(t: onnx.TypeProto) -> bool:
    """A tensor's type, or no type at all (a subgraph's outputs may leave theirs out: tensors
    unless a sequence or optional type says otherwise)."""
    return t.WhichOneof("value") in ("tensor_type", None)


def elem_dtype(t: onnx.TypeProto) -> np.dtype | None:
    """The numpy dtype of the tensors a type holds (None: not known)."""
    kind = t.WhichOneof("value")
    if kind == "tensor_type":
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.tensor_type.elem_type)) \
            if t.tensor_type.elem_type else None
    if kind == "sequence_type":
        return elem_dtype(t.sequence_type.elem_type)
    if kind == "optional_type":
        return elem_dtype(t.optional_type.elem_type)
    return None


def check_feed(name: str, t: onnx.TypeProto, value, where: str = "InferenceSession.run"):
    """A feed of a graph input of non-tensor type `t`: a sequence, a list (or tuple) of numpy
    arrays of its element type; an optional, None (empty) or its element's feed. The feed as
    the session keeps it (lists of arrays, None)."""
    kind = t.WhichOneof("value")
    if kind == "optional_type":
        return None if value is None else check_feed(name, t.optional_type.elem_type, value, where)
    if kind == "tensor_type":
        array = np.asarray(value)
        want = elem_dtype(t)
        if array.dtype != want:
            raise InvalidArgumentError(f"{where}: input {name!r}: a tensor of dtype {array.dtype}, the model's is "
                                       f"{want}; convert with astype first")
        return array
    if kind != "sequence_type":
        raise InvalidArgumentError(f"{where}: input {name!r} has the type {type_string(t)}, which gpudml does not "
                                   f"take")
    if not isinstance(value, (list, tuple)):
        raise InvalidArgumentError(f"{where}: input {name!r} is a sequence ({type_string(t)}): feed a list of numpy "
                                   f"arrays, got {type(value).__name__}")
    return [check_feed(f"{name}[{k}]", t.sequence_type.elem_type, v, where) for k, v in enumerate(value)]


def shape_key(value):
    """What a build depends on of a checked non-tensor feed: its structure and shapes."""
    if value is None:
        return ("none",)
    if isinstance(value, list):
        return ("seq", tuple(shape_key(v) for v in value))
    return tuple(np.shape(value))


def graph_input(graph, name: str, t: onnx.TypeProto, key):
    """The recorded value of graph input `name` of non-tensor type `t` fed with the
    structure `key` (shape_key, or `structure` for a value control flow passes): each tensor
    of a sequence a graph input of its own (`name[k]`, BOOL as UINT8, rank 0 as [1]), an
    empty one a host value, as is one given by value (a "host" key)."""
    if key and key[0] == "host":
        return np.frombuffer(key[3], np.dtype(key[1])).reshape(key[2]).copy()
    kind = t.WhichOneof("value")
    if kind == "optional_type":
        return OptionalValue(None if key == ("none",) else graph_input(graph, name, t.optional_type.elem_type, key))
    if kind == "sequence_type":
        dtype = elem_dtype(t)
        return Sequence(tuple(graph_input(graph, f"{name}[{k}]", t.sequence_type.elem_type, sub)
                              for k, sub in enumerate(key[1])), dtype)
    dtype = elem_dtype(t)
    if 0 in key:
        return np.zeros(key, dtype)
    return graph.input(list(key) or [1], np.uint8 if dtype == np.bool_ else dtype, name=name)


def feeds(name: str, t: onnx.TypeProto, value) -> dict:
    """The arrays a run gives the graph inputs of a non-tensor feed ({graph input name: array})."""
    kind = t.WhichOneof("value")
    if kind == "optional_type":
        return {} if value is None else feeds(name, t.optional_type.elem_type, value)
    if kind == "sequence_type":
        found = {}
        for k, v in enumerate(value):
            found.update(feeds(f"{name}[{k}]", t.sequence_type.elem_type, v))
        return found
    array = np.asarray(value)
    if array.size == 0:
        return {}
    array = array.astype(np.uint8) if array.dtype == np.bool_ else array
    return {name: array.reshape(array.shape or (1,))}


# ------------------------------------------------------------------------------ across control flow
def structure(value):
    """What the build of a graph fed with run-time value `value` (a Sequence or OptionalValue
    whose tensors are device Tensors or host arrays, as control flow passes them) depends on,
    in the form `shape_key` gives a checked feed and `graph_input` reads: an empty optional
    ("none",), a sequence ("seq", its items'), a device tensor its shape, a host tensor its
    value ("host", dtype, shape, bytes: a constant of the graph, as host values are, its rank
    kept)."""
    if isinstance(value, OptionalValue):
        return ("none",) if value.value is None else structure(value.value)
    if isinstance(value, Sequence):
        return ("seq", tuple(structure(item) for item in value.items))
    if isinstance(value, Tensor):
        return tuple(value.shape)
    a = np.asarray(value)
    return ("host", a.dtype.str, a.shape, a.tobytes())


def type_of(value, declared: onnx.TypeProto | None = None) -> onnx.TypeProto:
    """The ONNX type of run-time value `value`: `declared` where it declares a sequence or an
    optional, else made from the value (a sequence of tensors of its element type; an empty
    optional of a tensor, its element type unknown)."""
    if declared is not None and declared.WhichOneof("value") in ("sequence_type", "optional_type"):
        return declared
    if isinstance(value, OptionalValue):
        inner = onnx.helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, None) if value.value is None \
            else type_of(value.value)
        return onnx.helper.make_optional_type_proto(inner)
    if isinstance(value, Sequence):
        elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(value.dtype))
        inner = type_of(value.items[0]) if value.items and is_container(value.items[0]) \
            else onnx.helper.make_tensor_type_proto(elem, None)
        return onnx.helper.make_sequence_type_proto(inner)
    return onnx.helper.make_tensor_type_proto(onnx.helper.np_dtype_to_tensor_dtype(_leaf_dtype(value)), None)


def _leaf_dtype(value) -> np.dtype:
    return np.dtype(value.data_type.numpy) if isinstance(value, Tensor) else np.asarray(value).dtype


def leaf_feeds(name: str, value) -> dict:
    """What a graph made by `graph_input` for graph input `name` is given for run-time value
    `value` ({graph input name: a device Tensor, bound as it is}), under the names graph_input
    gives its tensors; a host tensor is given none (a constant of that graph: `structure`)."""
    if isinstance(value, OptionalValue):
        return {} if value.value is None else leaf_feeds(name, value.value)
    if isinstance(value, Sequence):
        found = {}
        for k, item in enumerate(value.items):
            found.update(leaf_feeds(f"{name}[{k}]", item))
        return found
    return {name: value} if isinstance(value, Tensor) else {}  # (a device Tensor: bound as it is)


def output(value, computed, is_bool: bool, t: onnx.TypeProto | None = None):
    """A graph output (of type `t`) that is a sequence or an optional, as onnxruntime's Python
    API returns it: a list of numpy arrays, None for an empty optional; `computed` gives the
    compiled graph's results in the order of `leaves`. An item of one element is rank 0 where
    the type declares its tensors so (DirectML's rank-0 stand-in is [1])."""
    kind = t.WhichOneof("value") if t is not None else None
    if isinstance(value, Sequence):
        inner = t.sequence_type.elem_type if kind == "sequence_type" else None
        return [output(item, computed, is_bool, inner) for item in value.items]
    if isinstance(value, OptionalValue):
        inner = t.optional_type.elem_type if kind == "optional_type" else None
        return None if value.value is None else output(value.value, computed, is_bool, inner)
    array = next(computed) if isinstance(value, Expression) else np.array(value)
    scalar = kind == "tensor_type" and t.tensor_type.HasField("shape") and not t.tensor_type.shape.dim
    if scalar and array.size == 1:
        array = array.reshape(())
    return array.astype(np.bool_) if is_bool else array


__all__ = ["CONSTANT_INPUTS", "KNOWN_AT_BUILD", "OPS", "ROWS", "BadPosition", "BadValue", "OptionalValue",
           "Sequence", "check_feed", "feeds", "graph_input", "handles", "is_container", "leaves", "map_leaves",
           "leaf_feeds", "output", "shape_key", "structure", "type_of", "type_string"]
