"""ONNX control flow at run time: If on a condition computed on the GPU, Loop, Scan.

An InferenceSession's build (session._Built) splits its graph at such a node as it does at a
data-dependent one: the part before is compiled to compute the node's inputs and the outer
values its subgraphs read, and runs with its results left on the device; `run` then runs
the node on the host, each subgraph a graph of its own (session._Scope: built and compiled
per input shapes, cached in the build, with the same machinery as the main graph, so that
subgraphs nest at any depth); the part after is built per the node's output shapes (cached)
with the node's outputs as its inputs. Values are device Tensors or host numpy arrays (the
ones a subgraph folds): a Tensor passes from one graph to the next as it is, never copied
nor read back, except where the host needs its value:

- If: the condition, read back once (one readback per run of the If); the taken branch
  runs, reading the outer values as its inputs.
- Loop: the trip count M and the initial condition, read back once where computed on the
  GPU; then per iteration the body runs on the carried values of the iteration before. Its
  condition output is read back per iteration (one readback per iteration) only where the
  Loop has a condition input and the body computes its condition from data: a condition
  output that is the condition input (passed through, Identity included) or a constant
  needs none, nor does a Loop without a condition input (ONNX ignores the body's then).
  Scan outputs are stacked on the device once the loop ends (a join of the iterations'
  Tensors: `stack`).
- Scan: each scanned input cut into its slices on the device once (a split), the body run
  per slice in its direction, the states carried as a Loop's, the scan outputs stacked
  in their direction and moved to their axis.

Limits: a Loop with neither M nor a condition is refused at construction (analysis); one
whose iterations would pass the session's `loop_iteration_limit` stops with an
InvalidArgumentError naming the node (a trip count known above it when the graph is built
is refused then).
"""

from __future__ import annotations

import numpy as np
import onnx

from ..errors import InvalidArgumentError
from ..graph import Expression, Graph
from ..runtime.tensor import Tensor
from . import analysis, mapping

#: The most Tensors one join of the stacking reads (a tree of joins past it).
JOIN_WIDTH = 64


def key(values: list) -> tuple:
    """What the build after control flow depends on: each output's shape and type (a
    Tensor's) or value (a host array's)."""
    out = []
    for v in values:
        if isinstance(v, Tensor):
            out.append(("tensor", tuple(v.shape), v.data_type.name))
        elif v is None:
            out.append(None)
        else:
            a = np.asarray(v)
            out.append(("host", a.dtype.str, a.shape, a.tobytes()))
    return tuple(out)


def host(value) -> np.ndarray:
    """A value on the host: a Tensor read back (one readback)."""
    return value.numpy() if isinstance(value, Tensor) else np.asarray(value)


def _where(built, proto) -> str:
    return f"InferenceSession.run: {proto.op_type} {proto.name or '(unnamed)'!r}"


def check_trips(built, proto, inputs: list) -> None:
    """A Loop whose trip count is known when the graph is built, above the session's
    loop_iteration_limit, refused then (a NotMapped: listed at construction)."""
    if proto.op_type != "Loop" or not inputs or inputs[0] is None or not isinstance(inputs[0], np.ndarray):
        return
    trips = int(np.asarray(inputs[0]).reshape(-1)[0])
    cond_given = len(inputs) > 1 and inputs[1] is not None
    limit = built.session.loop_iteration_limit
    if trips > limit and not cond_given:
        raise mapping.NotMapped(f"its trip count M is {trips}, past the session's loop_iteration_limit {limit} "
                                f"(gpudml.onnx.session.LOOP_ITERATION_LIMIT)")


def run(built, proto, env: dict, tally: list, fed: dict | None = None) -> list:
    """The outputs of control-flow node `proto` (Tensors or host arrays; None for an output
    left unnamed), its inputs and outer values from `env` (by name). `fed`: the arrays fed
    from the host of those of its inputs that are graph inputs: a scalar the host needs
    (an If's condition, a Loop's M and cond) is read from there, not read back."""
    fed = fed or {}
    inputs = [env.get(name) if name else None for name in proto.input]
    scalars = [fed.get(name, v) for name, v in zip(proto.input, inputs)]
    outer = {name: env[name] for name in sorted(analysis.node_outer_names(proto)) if name in env}
    if proto.op_type == "If":
        return _if(built, proto, scalars[:1], outer, tally)
    if proto.op_type == "Loop":
        return _loop(built, proto, [*scalars[:2], *inputs[2:]], outer, tally)
    return _scan(built, proto, inputs, outer, tally)


def _scope(built, proto, attr: str, formal: list, outer: dict):
    """The subgraph `attr` of `proto` as a session._Scope for these formal inputs ((name,
    numpy dtype, ONNX rank)) and outer values (cached in `built`, whose outer values are the
    same on every run)."""
    types = tuple((np.dtype(d).str, r) for _, d, r in formal)
    where = tuple((n, isinstance(v, Tensor), v.data_type.name if isinstance(v, Tensor) else np.asarray(v).dtype.str)
                  for n, v in outer.items())
    k = (id(proto), attr, types, where)
    scope = built.scopes.get(k)
    if scope is None:
        (graph,) = [g for a, g in analysis.subgraphs(proto) if a == attr]
        ranks = {n: rank(built, n, v) for n, v in outer.items()}
        scope = built.scopes[k] = (built.subgraph(graph, formal, outer, ranks), proto)  # (the proto kept: its id)
    return scope[0]


def rank(built, name: str, value) -> int:
    """The ONNX rank of value `name` of `built`'s graph: a host array's; a Tensor's, but 0
    where ONNX gives the value rank 0 (held as one element)."""
    if not isinstance(value, Tensor):
        return np.ndim(value)
    r = built.session.onnx_rank(name)
    return 0 if r == 0 and value.size == 1 else len(value.shape)


def run_scope(scope, feeds: dict, tally: list) -> tuple[list, list]:
    """(the subgraph's outputs, Tensors or host arrays; their ONNX shapes) for `feeds` ({input
    name: Tensor or array}: its formal inputs and the outer Tensors)."""
    values = [feeds[v.name] for v in scope._inputs]
    shapes = tuple(tuple(v.shape) if isinstance(v, Tensor) else np.shape(v) for v in values)
    given_host = {}
    given = {}
    for v, value in zip(scope._inputs, values):
        if not isinstance(value, Tensor):
            value = np.asarray(value)
            if value.size == 0:
                given_host[v.name] = value
                continue
        if v.name in scope.value_inputs:  # (a Tensor read back: one readback per run of the subgraph)
            array = host(value)
            given_host[v.name] = array.astype(np.bool_) if v.type.tensor_type.elem_type == onnx.TensorProto.BOOL \
                else array
        if isinstance(value, Tensor):
            given[v.name] = value
        else:
            array = value.astype(np.uint8) if value.dtype == np.bool_ else value
            given[v.name] = array.reshape(array.shape or (1,))
    built = scope._built(shapes, given_host)
    if built._runs:
        final, results = built._computed({**built.random_states(), **given}, False, tally)
    else:
        final, results = built, []
    computed = iter(results)
    out = [next(computed) if isinstance(r, Expression) else np.asarray(r) for r in final.results]
    return out, list(final.out_shapes)


def _if(built, proto, inputs: list, outer: dict, tally: list) -> list:
    cond = bool(host(inputs[0]).reshape(-1)[0])  # (a host value where the If runs as control for its branch)
    attr = "then_branch" if cond else "else_branch"
    scope = _scope(built, proto, attr, [], outer)
    outs, _ = run_scope(scope, {n: v for n, v in outer.items() if isinstance(v, Tensor)}, tally)
    return [o if name else None for o, name in zip(outs, proto.output)]


def _passes_condition(body) -> bool:
    """The body's condition output is its condition input (directly or through Identity):
    the Loop's condition then stays as it is, with no readback per iteration. (A condition
    the body folds, a constant, is a host value: read with no readback either.)"""
    producers = {o: n for n in body.node for o in n.output}
    name = body.output[0].name
    while name != body.input[1].name:
        node = producers.get(name)
        if node is None or node.op_type != "Identity":
            return False
        name = node.input[0]
    return True


def _formal_types(graph, values: list, ranks: list) -> list:
    """The subgraph's inputs as (name, numpy dtype, ONNX rank): the declared type, else the
    value's; the ranks as the values have them."""
    formal = []
    for v, value, r in zip(graph.input, values, ranks):
        elem = v.type.tensor_type.elem_type if v.type.HasField("tensor_type") else 0
        if elem:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
        else:
            dtype = value.dtype if isinstance(value, Tensor) else np.asarray(value).dtype
        formal.append((v.name, dtype, r))
    return formal


def _loop(built, proto, inputs: list, outer: dict, tally: list) -> list:
    (body,) = [g for a, g in analysis.subgraphs(proto) if a == "body"]
    where = _where(built, proto)
    trips = None if inputs[0] is None else int(host(inputs[0]).reshape(-1)[0])
    cond_given = len(inputs) > 1 and inputs[1] is not None
    cond = bool(host(inputs[1]).reshape(-1)[0]) if cond_given else True
    carried = list(inputs[2:])
    n = len(carried)
    ranks = [rank(built, name, v) for name, v in zip(proto.input[2:], carried)]
    limit = built.session.loop_iteration_limit
    if trips is not None and trips > limit and not cond_given:
        raise InvalidArgumentError(f"{where}: its trip count M is {trips}, past the session's loop_iteration_limit "
                                   f"{limit}")
    read_cond = cond_given and not _passes_condition(body)
    names = [v.name for v in body.input]
    device_outer = {k: v for k, v in outer.items() if isinstance(v, Tensor)}
    scans: list[list] = [[] for _ in range(len(body.output) - 1 - n)]
    shapes: list = [None] * len(scans)
    true = None  # the condition fed to the body, true while it runs: a Tensor uploaded once per run
    i = 0
    while (trips is None or i < trips) and cond:
        if i >= limit:
            raise InvalidArgumentError(f"{where}: {i} iterations ran and its condition is still true: past the "
                                       f"session's loop_iteration_limit {limit} (a body that never ends?)")
        values = [np.array(i, np.int64), np.array(cond), *carried]
        scope = _scope(built, proto, "body", _formal_types(body, values, [0, 0, *ranks]), outer)
        if names[1] not in scope.value_inputs:  # (an upload flushes the work recorded: once, not per iteration)
            if true is None:
                true = built.session.device.tensor(np.ones(1, np.uint8))
            values[1] = true
        outs, out_shapes = run_scope(scope, {**dict(zip(names, values)), **device_outer}, tally)
        if read_cond:  # (one readback per iteration, where the body computes it on the device)
            cond = bool(host(outs[0]).reshape(-1)[0])
        carried = outs[1:1 + n]
        ranks = [len(s) for s in out_shapes[1:1 + n]]
        for k, (part, sizes) in enumerate(zip(outs[1 + n:], out_shapes[1 + n:])):
            scans[k].append(part)
            if shapes[k] is not None and tuple(sizes) != shapes[k]:
                raise InvalidArgumentError(f"{where}: scan output {k} ({body.output[1 + n + k].name!r}) has shape "
                                           f"{list(sizes)} in iteration {i}, {list(shapes[k])} before: the "
                                           f"iterations' scan outputs are stacked, so their shapes must agree")
            shapes[k] = tuple(sizes)
        i += 1
    stacked = [stack(built, parts, sizes, body.output[1 + n + k], 0, False, tally)
               for k, (parts, sizes) in enumerate(zip(scans, shapes))]
    return [v if name else None for v, name in zip([*carried, *stacked], proto.output)]


def _scan(built, proto, inputs: list, outer: dict, tally: list) -> list:
    (body,) = [g for a, g in analysis.subgraphs(proto) if a == "body"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in proto.attribute}
    m = int(attrs["num_scan_inputs"])
    if built.session.opset < 9:
        return _scan8(built, proto, body, attrs, inputs, outer, tally)
    states = list(inputs[:len(inputs) - m])
    scanned = inputs[len(inputs) - m:]
    n = len(states)
    k_out = len(body.output) - n
    ranks = [rank(built, name, v) for name, v in zip(proto.input, states)]
    ranks += [rank(built, name, v) - 1 for name, v in zip(proto.input[n:], scanned)]
    states, _, stacked, _ = _scan_over(
        built, proto, body, states, scanned, ranks, list(attrs.get("scan_input_axes", [0] * m)),
        list(attrs.get("scan_input_directions", [0] * m)), list(attrs.get("scan_output_axes", [0] * k_out)),
        list(attrs.get("scan_output_directions", [0] * k_out)), outer, tally)
    return [v if name else None for v, name in zip([*states, *stacked], proto.output)]


def _scan8(built, proto, body, attrs: dict, inputs: list, outer: dict, tally: list) -> list:
    """Scan of opset 8: a batch axis 0 before the scanned axis 1 of every input (and of its
    outputs), the states per batch row; each row scanned as opset 9's Scan, the rows stacked.
    sequence_lens (input 0) may only give every row the whole sequence."""
    where = _where(built, proto)
    m = int(attrs["num_scan_inputs"])
    lens, rest = inputs[0], list(inputs[1:])
    states, scanned = rest[:len(rest) - m], rest[len(rest) - m:]
    n = len(states)
    k_out = len(body.output) - n
    everything = [*states, *scanned]
    if not everything:
        raise InvalidArgumentError(f"{where}: no state and no scanned input")
    batch = everything[0].shape[0] if isinstance(everything[0], Tensor) else np.shape(everything[0])[0]
    length = (scanned[0].shape[1] if isinstance(scanned[0], Tensor) else np.shape(scanned[0])[1]) if scanned else 0
    if lens is not None:
        given = host(lens).reshape(-1)
        if np.any(given != length):
            raise InvalidArgumentError(f"{where}: sequence_lens {given.tolist()}: gpudml runs Scan-8 over whole "
                                       f"sequences only (each {length})")
    rows = [_slices(built, x, 0, batch, tally) for x in everything]
    names = [name for name in proto.input[1:]]
    ranks = [rank(built, name, v) - 1 for name, v in zip(names, everything)]
    ranks[n:] = [r - 1 for r in ranks[n:]]
    per_row = []
    for b in range(batch):
        values = [r[b] for r in rows]
        row_states, state_shapes, stacked, stacked_shapes = _scan_over(
            built, proto, body, values[:n], values[n:], list(ranks), [0] * m, list(attrs.get("directions", [0] * m)),
            [0] * k_out, [0] * k_out, outer, tally)
        per_row.append(([*row_states, *stacked], [*state_shapes, *stacked_shapes]))
    results = []
    for k in range(n + k_out):
        parts = [values[k] for values, _ in per_row]
        sizes = per_row[0][1][k] if per_row else ()
        results.append(stack(built, parts, sizes, body.output[k], 0, False, tally))
    return [v if name else None for v, name in zip(results, proto.output)]


def _scan_over(built, proto, body, states: list, scanned: list, ranks: list, in_axes: list, in_dirs: list,
               out_axes: list, out_dirs: list, outer: dict, tally: list) -> tuple[list, list, list, list]:
    """Scan's iterations (opset 9 on): (the final states, their ONNX shapes, the scan outputs
    stacked, their ONNX shapes)."""
    where = _where(built, proto)
    n = len(states)
    k_out = len(body.output) - n
    lengths = set()
    for j, x in enumerate(scanned):
        r = len(x.shape) if isinstance(x, Tensor) else np.ndim(x)
        if not -r <= in_axes[j] < r:
            raise InvalidArgumentError(f"{where}: scan_input_axes[{j}] is {in_axes[j]}, scanned input {j} has rank "
                                       f"{r}")
        in_axes[j] %= r
        lengths.add(x.shape[in_axes[j]] if isinstance(x, Tensor) else np.shape(x)[in_axes[j]])
    if len(lengths) > 1:
        raise InvalidArgumentError(f"{where}: its scanned inputs have lengths {sorted(lengths)} along their scan "
                                   f"axes: they must agree")
    steps = lengths.pop() if lengths else 0
    if steps > built.session.loop_iteration_limit:
        raise InvalidArgumentError(f"{where}: {steps} iterations, past the session's loop_iteration_limit "
                                   f"{built.session.loop_iteration_limit}")
    slices = [_slices(built, x, in_axes[j], steps, tally) for j, x in enumerate(scanned)]
    names = [v.name for v in body.input]
    device_outer = {k: v for k, v in outer.items() if isinstance(v, Tensor)}
    parts: list[list] = [[] for _ in range(k_out)]
    shapes: list = [None] * k_out
    state_shapes = [tuple(v.shape) if isinstance(v, Tensor) and r else np.shape(v) if r else ()
                    for v, r in zip(states, ranks)]
    for t in range(steps):
        values = [*states, *(s[steps - 1 - t if in_dirs[j] else t] for j, s in enumerate(slices))]
        scope = _scope(built, proto, "body", _formal_types(body, values, ranks), outer)
        outs, out_shapes = run_scope(scope, {**dict(zip(names, values)), **device_outer}, tally)
        states, state_shapes = outs[:n], [tuple(s) for s in out_shapes[:n]]
        ranks[:n] = [len(s) for s in state_shapes]
        for k, (part, sizes) in enumerate(zip(outs[n:], out_shapes[n:])):
            parts[k].append(part)
            if shapes[k] is not None and tuple(sizes) != shapes[k]:
                raise InvalidArgumentError(f"{where}: scan output {k} has shape {list(sizes)} in iteration {t}, "
                                           f"{list(shapes[k])} before: their shapes must agree")
            shapes[k] = tuple(sizes)
    stacked = [stack(built, parts[k], shapes[k], body.output[n + k], out_axes[k], bool(out_dirs[k]), tally)
               for k in range(k_out)]
    stacked_shapes = []
    for k in range(k_out):
        sizes = [steps, *(shapes[k] or ())]
        axis = out_axes[k] % len(sizes)
        stacked_shapes.append(tuple(sizes[1:axis + 1] + [steps] + sizes[axis + 1:]))
    return states, state_shapes, stacked, stacked_shapes


def _slices(built, x, axis: int, steps: int, tally: list) -> list:
    """x's `steps` slices along `axis` (that axis removed): cut on the device at once (one
    split, compiled per shape and cached), or numpy's for a host value."""
    if not isinstance(x, Tensor):
        return [np.take(x, t, axis=axis) for t in range(steps)]
    if steps == 0:
        return []
    sizes = list(x.shape)
    rest = sizes[:axis] + sizes[axis + 1:]

    def make(g, ins):
        ctx = mapping.Context(built.session.device, g)
        if steps == 1:
            return [mapping.materialize(ctx, mapping.reshape(ctx, ins[0], rest))]
        return [g.view(p, rest or [1]) for p in ctx.fn("split")(ins[0], axis, [1] * steps)]

    return _run_helper(built, ("slices", tuple(sizes), x.data_type.name, axis), make, [x], tally)


def _run_helper(built, k: tuple, make, tensors: list, tally: list) -> list:
    """A small graph of the session's (a split, a join) compiled once per `k` and cached in
    `built`, run on `tensors` (left on the device)."""
    k = (*k, tuple(t.desc.strides for t in tensors))  # (a view is read as it is laid out)
    compiled = built.scopes.get(k)
    if compiled is None:
        g = Graph(built.session.device)
        ins = [g.input(list(t.shape), t.data_type, name=f"part{j}", strides=t.desc.strides)
               for j, t in enumerate(tensors)]
        outs = make(g, ins)
        compiled = built.scopes[k] = g.compile(outs, fuse=built.session.fuse)
    tally[0] += compiled.dispatch_count
    return list(compiled({f"part{j}": t for j, t in enumerate(tensors)}, readback=False))


def stack(built, parts: list, sizes, value_info, axis: int, reverse: bool, tally: list):
    """The iterations' scan outputs `parts` (each of ONNX shape `sizes`) stacked along a new
    axis 0 (in reverse order for `reverse`), then moved to `axis` (ONNX's scan_output_axes:
    negative counts from the end): on the device (a join, a tree of joins past JOIN_WIDTH
    parts, and a transpose written packed), or numpy's where every part is a host value.
    No iteration: an empty host array of the body's declared shape (its unknown sizes 0)."""
    if not parts:
        t = value_info.type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type) if t.elem_type else np.float32
        dims = [d.dim_value if d.HasField("dim_value") else 0 for d in t.shape.dim] if t.HasField("shape") else []
        return np.zeros([0, *dims], dtype)
    parts = parts[::-1] if reverse else list(parts)
    rank = len(sizes) + 1
    axis %= rank
    perm = list(range(1, axis + 1)) + [0] + list(range(axis + 1, rank))
    if all(not isinstance(p, Tensor) for p in parts):
        return np.transpose(np.stack([np.asarray(p).reshape(sizes) for p in parts]), perm)
    tensors = [p if isinstance(p, Tensor) else built.session.device.tensor(np.asarray(p).reshape(sizes or (1,)))
               for p in parts]
    dtype = tensors[0].data_type.name

    def make(g, ins):
        ctx = mapping.Context(built.session.device, g)
        rows = [g.view(i, [1, *sizes]) for i in ins]
        while len(rows) > 1:
            rows = [ctx.fn("join")(rows[j:j + JOIN_WIDTH], 0) if len(rows[j:j + JOIN_WIDTH]) > 1 else rows[j]
                    for j in range(0, len(rows), JOIN_WIDTH)]
        out = rows[0]
        if axis:
            out = mapping.materialize(ctx, mapping.transpose(ctx, out, perm))
        elif len(ins) == 1:
            out = mapping.materialize(ctx, out)
        return [out]

    k = ("stack", len(tensors), tuple(tensors[0].shape), tuple(sizes), dtype, axis)
    (out,) = _run_helper(built, k, make, tensors, tally)
    return out


__all__ = ["JOIN_WIDTH", "check_trips", "key", "run", "run_scope", "stack"]
