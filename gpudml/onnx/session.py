"""gpudml.onnx.InferenceSession: an ONNX model as a compiled gpudml Graph (API.md section 13).

Load: the model is checked (onnx.checker), every node is looked up in the mapping table
(gpudml/onnx/mapping.py), and every node gpudml cannot run, for any input shapes, is
listed in one UnsupportedError (name, op type, opset, why; subgraphs included:
gpudml/onnx/analysis.py says what is known when the graph is built). Build: per distinct
set of input shapes, the nodes are recorded on a gpudml Graph in order; a node whose inputs
are all known (initializers, Constant, Shape of a tensor of known sizes, and anything
computed from those) is evaluated on the host with onnx's reference evaluator (folded:
shape arithmetic never reaches the GPU), an If whose condition is known replaced by its
taken branch; an If on a condition computed on the GPU, a Loop and a Scan split the graph
and run as control flow (control.py); the others become DirectML operators or views.
Dimensions: a dim_value of at least 1 is fixed; a dim_param, -1, 0, no value or no shape
at all is dynamic. The Graph is compiled once with fusion, its constants (the initializers
it reads) uploaded once; repeated runs take pooled buffers and allocate nothing new. A
model whose inputs have fixed sizes is built at construction; one with dynamic dimensions
is built at the first run of each distinct shape and cached. A parameter DirectML needs
when the graph is built (axes, a shape, an If's condition that is a graph input) computed
from graph inputs makes those inputs value inputs (analysis.analyze): the builds are then
per distinct shapes and values, computed on the host, kept in a bounded cache
(build_cache_size).

BOOL tensors are UINT8 0/1, as DirectML's execution provider passes them: feeds are
converted, outputs given back as numpy bools. Rank-0 tensors are one element ([1]).
Sequences and optionals (gpudml/onnx/sequences.py) are tuples of recorded values while the
graph is built; as graph inputs and outputs, Python lists of arrays (None: an empty
optional), a fed sequence's items graph inputs of their own.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from ..device import Device
from ..errors import InvalidArgumentError, UnsupportedError
from ..graph import Expression, Graph
from ..ops.dequantize import FOUR_BYTES, four_bytes, four_values
from ..ops.random_generator import counter_value, counter_words
from ..runtime.tensor import Tensor
from . import analysis, control, mapping, options, qdq, sequences
from .analysis import Unsupported
from .binding import IOBinding
from .mapping import NotMapped
from .nbits import check_reader
from .profiling import SessionProfile
from .values import Packed4

#: The documented precision of a whole model against onnxruntime's CPU provider (or onnx's
#: reference evaluator): float outputs within this fraction of the largest reference
#: magnitude (each operator's own bound, accumulated through float32 networks of tens of
#: layers); integer and BOOL outputs exact.
TOLERANCE = 1e-4

#: How many builds (one per distinct input shapes and, for a model with value inputs, their
#: values) a session keeps by default, the least recently used dropped first.
BUILD_CACHE_SIZE = 16

#: How many iterations a Loop (or Scan) may run in one run, by default (the session's
#: `loop_iteration_limit`): a body whose condition never turns false stops with an
#: InvalidArgumentError naming the node there, rather than running on.
LOOP_ITERATION_LIMIT = 1 << 16

#: ONNX element type -> onnxruntime's type string (NodeArg.type).
_ORT_TYPES = {
    onnx.TensorProto.FLOAT: "tensor(float)", onnx.TensorProto.FLOAT16: "tensor(float16)",
    onnx.TensorProto.DOUBLE: "tensor(double)", onnx.TensorProto.INT8: "tensor(int8)",
    onnx.TensorProto.INT16: "tensor(int16)", onnx.TensorProto.INT32: "tensor(int32)",
    onnx.TensorProto.INT64: "tensor(int64)", onnx.TensorProto.UINT8: "tensor(uint8)",
    onnx.TensorProto.UINT16: "tensor(uint16)", onnx.TensorProto.UINT32: "tensor(uint32)",
    onnx.TensorProto.UINT64: "tensor(uint64)", onnx.TensorProto.BOOL: "tensor(bool)",
    onnx.TensorProto.INT4: "tensor(int4)", onnx.TensorProto.UINT4: "tensor(uint4)",
}


@dataclass(frozen=True)
class NodeArg:
    """An input or output of the model, as onnxruntime's NodeArg: name, shape (ints, and
    the symbolic name or None of a dynamic dimension), type ("tensor(float)")."""

    name: str
    shape: list
    type: str


def unsupported_error(nodes: list[Unsupported]) -> UnsupportedError:
    listed = "\n".join(f"  {u}" for u in nodes)
    return UnsupportedError(f"gpudml cannot run {len(nodes)} node{'s' if len(nodes) > 1 else ''} of this model:\n"
                            f"{listed}")


class _Builds:
    """What a graph that builds per input shapes has: the session's main graph, or a
    subgraph of If, Loop or Scan run at run time (_Scope). Needs device, opset, fuse,
    build_cache_size, model (its .graph), initializers, _inputs, _outputs, value_inputs,
    producers, random_states, random_lock, loop_iteration_limit and _compiled."""

    def _built(self, shapes: tuple, host: dict[str, np.ndarray]) -> _Built:
        """The build for these input shapes and values of the value inputs (`host`): the
        cached one, or a new one (the least recently used dropped past build_cache_size)."""
        key = (shapes, tuple((name, a.dtype.str, a.shape, a.tobytes()) for name, a in sorted(host.items())))
        built = self._compiled.get(key)
        if built is not None:
            self._compiled.move_to_end(key)
            return built
        built = _Built(self, shapes, host)
        self._compiled[key] = built
        while len(self._compiled) > self.build_cache_size:
            self._compiled.popitem(last=False)
        return built

    def onnx_dtype(self, name: str) -> np.dtype:
        if self._types is None:
            self._types = _value_types(self.model)
        return onnx.helper.tensor_dtype_to_np_dtype(self._types[name])

    def onnx_rank(self, name: str) -> int | None:
        """The rank ONNX gives value `name` (declared, or by shape inference), None where
        unknown: the session's tensors hold rank 0 as one element, control flow needs the
        rank of what it stacks (control.py)."""
        if getattr(self, "_ranks", None) is None:
            self._ranks = _value_ranks(self.model)
        return self._ranks.get(name)


class InferenceSession(_Builds):
    """An ONNX model on a gpudml Device, with onnxruntime's calls: `run(output_names,
    input_feed)`, `get_inputs()`, `get_outputs()`, `io_binding()` and `run_with_iobinding()`,
    `get_modelmeta()`, `get_providers()`, `get_provider_options()`, `get_session_options()`,
    `end_profiling()`; `dispatch_count` (compute dispatches per run of the last compiled shape,
    after fusion; `fuse=False` runs one kernel per node).

    `sess_options` (a gpudml.onnx.SessionOptions or an onnxruntime.SessionOptions),
    `providers` and `provider_options` are onnxruntime's, accepted for drop-in use
    (options.py; docs/onnx.md says what each honours)."""

    def __init__(self, model, sess_options=None, providers=None, device: Device | None = None, fuse: bool = True,
                 *, provider_options=None, build_cache_size: int = BUILD_CACHE_SIZE):
        if isinstance(sess_options, Device) and device is None:  # InferenceSession(model, device): before section 16
            sess_options, device = None, sess_options
        self.device, self._provider_options = options.session_device(device, sess_options, providers,
                                                                      provider_options, "InferenceSession")
        self.model = load_model(model, "InferenceSession")
        self.fuse = bool(fuse) and not options.optimization_disabled(sess_options)
        if self.fuse and not options.optimization_basic(sess_options):  # (QDQ groups as the provider gets them)
            self.model = qdq.fuse(self.model, qdq.int8_allowed(sess_options))
        self._sess_options = sess_options
        self._profile = (SessionProfile(self.device, getattr(sess_options, "profile_file_prefix",
                                                             "onnxruntime_profile_"), options.PROVIDER)
                         if getattr(sess_options, "enable_profiling", False) else None)
        graph = self.model.graph
        self.opset = _opset(self.model)
        self.initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self._types: dict[str, int] | None = None  # element types of every value (CastLike), when asked
        self._inputs = [v for v in graph.input if v.name not in self.initializers]
        self._outputs = list(graph.output)
        self._specs: dict = {}  # (name, is an output): _value's answer
        #: The names of get_inputs(), in its order (what a run's checks walk, no NodeArg made).
        self._input_names = tuple(v.name for v in self._inputs)
        self.output_names = frozenset(v.name for v in self._outputs)
        problems, needed = analysis.analyze(graph, self.opset, self.initializers, [v.name for v in self._inputs],
                                            analysis.parameter_inputs(self._inputs))
        if problems:
            raise unsupported_error(problems)
        #: The inputs whose values a build needs (a Reshape's shape, a reduction's axes, an If's
        #: condition computed from them: analysis.analyze), in the model's order.
        self.value_inputs = [v.name for v in self._inputs if v.name in needed]
        for v in self._inputs:
            if v.name in needed and not sequences.is_tensor_type(v.type):
                raise UnsupportedError(f"InferenceSession: a value DirectML needs when the graph is built is computed "
                                       f"from input {v.name!r}, a {sequences.type_string(v.type)}: gpudml computes "
                                       f"such values on the host from tensor inputs only")
        #: Each value's producing node, for computing what the value inputs give on the host.
        self.producers = _producers(graph) if self.value_inputs else {}
        if isinstance(build_cache_size, bool) or not isinstance(build_cache_size, int) or build_cache_size < 1:
            raise InvalidArgumentError(f"InferenceSession: build_cache_size must be an int >= 1 (the builds kept, one "
                                       f"per distinct input shapes and values), got {build_cache_size!r}")
        self.build_cache_size = build_cache_size
        #: The random nodes' generator states for the next run, by graph input name (_Built.random_states),
        #: taken and advanced under their lock: runs from several threads draw disjoint blocks.
        self.random_states: dict[str, np.ndarray] = {}
        self.random_lock = threading.Lock()
        #: The most iterations a Loop or Scan runs in one run (LOOP_ITERATION_LIMIT): past it the run stops with
        #: an InvalidArgumentError naming the node; a trip count known above it is refused when the graph is built.
        self.loop_iteration_limit = LOOP_ITERATION_LIMIT
        self._compiled: collections.OrderedDict[tuple, _Built] = collections.OrderedDict()
        self._last: _Built | None = None
        self._last_dispatches: int | None = None  # the last run's, where it ran control flow (dispatch_count)
        shapes = [_static_shape(v) for v in self._inputs]
        if all(s is not None for s in shapes) and not self.value_inputs:
            self._last = self._built(tuple(tuple(s) for s in shapes), {})

    # -- onnxruntime's interface --------------------------------------------------------
    def get_inputs(self) -> list[NodeArg]:
        return [_node_arg(v) for v in self._inputs]

    def get_outputs(self) -> list[NodeArg]:
        return [_node_arg(v) for v in self._outputs]

    def get_providers(self) -> list[str]:
        """The one provider that runs the model, whatever names `providers` gave."""
        return [options.PROVIDER]

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        """{provider: its options, as strings}: the options given to it, and what the session
        runs on (adapter, feature_level, adapter_class, fuse)."""
        own = dict(self._provider_options)
        own.update(adapter=self.device.adapter_name, feature_level=self.device.feature_level.name,
                   adapter_class=self.device.adapter_class, fuse=str(int(self.fuse)))
        return {options.PROVIDER: own}

    def get_session_options(self):
        """The sess_options given (the same object), or a gpudml.onnx.SessionOptions saying
        what the session does (graph_optimization_level ORT_DISABLE_ALL where it does not fuse)."""
        if self._sess_options is not None:
            return self._sess_options
        level = options.GraphOptimizationLevel
        return options.SessionOptions(graph_optimization_level=level.ORT_ENABLE_ALL if self.fuse
                                      else level.ORT_DISABLE_ALL)

    def get_modelmeta(self) -> options.ModelMetadata:
        """The model's producer_name, graph_name, domain, description, graph_description,
        version and custom_metadata_map, as onnxruntime.ModelMetadata has them."""
        return options.ModelMetadata.of(self.model)

    def end_profiling(self) -> str:
        """With SessionOptions.enable_profiling: stop profiling, write the profile of the runs
        so far (onnxruntime's JSON trace format; profiling.py) and return its file name; ""
        where the session does not profile (as onnxruntime)."""
        if self._profile is None:
            return ""
        profile, self._profile = self._profile, None
        return profile.end()

    def get_profiling_start_time_ns(self) -> int:
        """time.monotonic_ns() when profiling started (0 where the session does not profile)."""
        return self._profile.start_ns if self._profile is not None else 0

    def io_binding(self) -> IOBinding:
        """A new IOBinding of this session: inputs and outputs that stay on the GPU (binding.py)."""
        for v in [*self._inputs, *self._outputs]:
            if not sequences.is_tensor_type(v.type):
                raise UnsupportedError(f"InferenceSession.io_binding: {v.name!r} is a {sequences.type_string(v.type)}: "
                                       f"an IOBinding binds tensors; run() takes and returns sequences as lists")
            if v.type.tensor_type.elem_type in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4):
                kind = _ORT_TYPES[v.type.tensor_type.elem_type]
                raise UnsupportedError(f"InferenceSession.io_binding: {v.name!r} is a {kind}: an IOBinding binds "
                                       f"gpudml Tensors, which have no 4-bit type; run() takes and returns 4-bit "
                                       f"values as ml_dtypes int4/uint4 arrays")
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None) -> None:
        """Run with the inputs `iobinding` holds; its outputs are then `iobinding.get_outputs()`
        (Tensors on the device) or `iobinding.copy_outputs_to_cpu()`. Everything bound is
        checked before any GPU work; a failed run leaves the session and the binding usable."""
        if not isinstance(iobinding, IOBinding):
            raise InvalidArgumentError(f"InferenceSession.run_with_iobinding: expected an IOBinding (session."
                                       f"io_binding()), got {type(iobinding).__name__}")
        values, shapes, names = iobinding._prepare(self)
        host = {v.name: _host_copy(value, v, shape) for v, value, shape in zip(self._inputs, values, shapes)
                if v.name in self.value_inputs or 0 in shape}
        built = self._built(shapes, host)
        self._last = built
        if built.split is None:  # (where the graph splits, the output shapes are known after the run)
            iobinding._check_built({v.name: s for v, s in zip(self._outputs, built.out_shapes)})
        tally = [0]
        with self._profiling("run_with_iobinding"):
            results, shapes = built.run_tensors(dict(zip([v.name for v in self._inputs], values)), names, tally)
        self._last_dispatches = tally[0]
        if built.split is not None:
            try:
                iobinding._check_built(shapes)
            except InvalidArgumentError:
                for t in results:
                    t.free()
                raise
        iobinding._finish(names, results, shapes)

    def _profiling(self, name: str):
        return self._profile.run(name) if self._profile is not None else contextlib.nullcontext()

    def _value(self, name: str, output: bool = False) -> tuple[np.dtype, list | None] | None:
        """The numpy dtype and dims (None: unknown rank) of input (or output) `name`; None
        where the model has no such input (output)."""
        specs = self._specs  # (each worked out once: a run's binding checks ask for every input and output)
        key = (name, output)
        if key not in specs:
            specs[key] = next((
                (onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type), _dims(v))
                for v in (self._outputs if output else self._inputs) if v.name == name), None)
        return specs[key]

    @property
    def dispatch_count(self) -> int:
        """Compute dispatches per run (the last shape compiled), after fusion. A model that
        ran control flow at run time (an If on a condition computed on the GPU, a Loop, a
        Scan): the dispatches its last run made, all parts and iterations counted (a Loop's:
        its body's per iteration times the iterations, plus the stacking of its scan outputs)."""
        if self._last is None:
            raise InvalidArgumentError("InferenceSession.dispatch_count: the model has dynamic dimensions and has "
                                       "not run yet (it compiles per input shape)")
        if self._last_dispatches is not None and self._last.runs_control:
            return self._last_dispatches
        return self._last.dispatch_count

    def run(self, output_names, input_feed, run_options=None) -> list[np.ndarray]:
        """The outputs named (None: every output, in the model's order) for `input_feed`
        ({input name: numpy array}; a sequence input a list of arrays, an optional one None
        where empty), as numpy arrays (a sequence output a list of them)."""
        if not isinstance(input_feed, dict):
            raise InvalidArgumentError(f"InferenceSession.run: input_feed must be a dict of input name -> numpy "
                                       f"array, got {type(input_feed).__name__}")
        known = [v.name for v in self._outputs]
        names = known if output_names is None else list(output_names)
        for name in names:
            if name not in known:
                raise InvalidArgumentError(f"InferenceSession.run: unknown output name {name!r} (the model's "
                                           f"outputs: {', '.join(map(repr, known))})")
        feeds = self._check_feed(input_feed)
        tensor = [sequences.is_tensor_type(v.type) for v in self._inputs]
        host = {v.name: f for v, f, t in zip(self._inputs, feeds, tensor) if t and (v.name in self.value_inputs
                                                                                    or f.size == 0)}
        built = self._built(tuple(tuple(f.shape) if t else sequences.shape_key(f) for f, t in zip(feeds, tensor)),
                            host)
        self._last = built
        tally = [0]
        with self._profiling("model_run"):
            results = built.run(feeds, names, tally)
        self._last_dispatches = tally[0]
        return results

    # -- checks -------------------------------------------------------------------------
    def _check_feed(self, input_feed: dict) -> list[np.ndarray]:
        wanted = {v.name for v in self._inputs}
        for name in input_feed:
            if name not in wanted:
                raise InvalidArgumentError(f"InferenceSession.run: unknown input name {name!r} (the model's inputs: "
                                           f"{', '.join(sorted(map(repr, wanted)))})")
        feeds = []
        for v in self._inputs:
            if v.name not in input_feed:
                raise InvalidArgumentError(f"InferenceSession.run: missing input {v.name!r} ({_describe(v)})")
            if not sequences.is_tensor_type(v.type):  # a sequence (a list of arrays) or an optional
                feeds.append(sequences.check_feed(v.name, v.type, input_feed[v.name]))
                continue
            array = np.asarray(input_feed[v.name])
            want = onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type)
            if array.dtype != want:
                raise InvalidArgumentError(f"InferenceSession.run: input {v.name!r} has dtype {array.dtype}, the "
                                           f"model's is {want} ({_describe(v)}); convert with astype first")
            _check_dims(v, array)
            feeds.append(array)
        return feeds

    # -- building -----------------------------------------------------------------------
    def input_dtype(self, name: str) -> np.dtype:
        """The numpy dtype a feed of input `name` must have."""
        (v,) = [v for v in self._inputs if v.name == name]
        return onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type)


class _Poisoned(Exception):
    """An inlined branch read what a node gpudml cannot run computes (listed already)."""


class _SplitInBranch(Exception):
    """An inlined If branch reached a node that splits the graph (control flow at run time,
    a data-dependent output size): the If then runs as control flow, its branch a graph of
    its own that splits there (control.py)."""


@dataclass(frozen=True)
class _Control:
    """What `_Built._node` returns for control flow run at run time: an If on a condition
    computed on the GPU (or one whose branch splits), a Loop, a Scan (control.py runs it)."""

    proto: onnx.NodeProto
    path: str


class _Built:
    """The model recorded and compiled for one set of input shapes."""

    def __init__(self, session: InferenceSession, shapes: tuple, host: dict[str, np.ndarray],
                 resume: _Resume | None = None):
        self.session = session
        self.host = dict(host)  # the value inputs' values, then what is computed from them on the host
        self.graph = Graph(session.device)
        self.ctx = mapping.Context(session.device, self.graph, session.onnx_dtype, session.onnx_rank)
        values: dict[str, object] = {"": None}
        values.update(session.initializers)
        self.bool_inputs = []
        nodes = list(session.model.graph.node)
        if resume is None:
            for v, sizes in zip(session._inputs, shapes):
                if not sequences.is_tensor_type(v.type):  # its tensors, graph inputs of their own
                    self.bool_inputs.append(False)
                    values[v.name] = sequences.graph_input(self.graph, v.name, v.type, sizes)
                    continue
                dtype = onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type)
                self.bool_inputs.append(dtype == np.bool_)
                if v.name in host and host[v.name].size == 0:  # an empty feed (axes, CastLike's like): a host value
                    values[v.name] = host[v.name]
                    continue
                if dtype.name in FOUR_BYTES:  # (its bytes, packed on the host: _feed)
                    data = self.graph.input(_four_sizes(sizes), FOUR_BYTES[dtype.name], name=v.name)
                    values[v.name] = Packed4(data, sizes, dtype)
                    continue
                values[v.name] = self.graph.input(list(sizes) or [1], np.uint8 if dtype == np.bool_ else dtype,
                                                  name=v.name)
            first = 0
        else:  # the part after a split: what the part before (and the control flow) computed, as inputs
            values.update(resume.host_values)
            for name, (sizes, dtype) in resume.tensors.items():
                values[name] = self.graph.input(list(sizes), dtype, name=name)
            for name, container in resume.containers.items():
                values[name] = _rebuilt(name, container, values)
            if resume.pending is not None:  # (control flow's outputs are among the tensors and host values)
                carried = tuple(values[name] for name in resume.carried)
                outs = resume.pending.finish(self.ctx, resume.count, carried)
                values.update({name: value for name, value in zip(resume.proto.output, outs) if name})
            first = resume.index + 1
        self.readers = _readers(session.model.graph)
        self.problems: list[Unsupported] = []
        self.poisoned: set[str] = set()
        #: Where the graph splits (a node whose output sizes depend on the data), or None.
        self.split: _Split | None = None
        #: The subgraphs this build runs at run time (control.py), by node, branch and input types.
        self.scopes: dict = {}
        self._record(nodes[first:], values, "", first=first)
        if self.problems:
            raise unsupported_error(self.problems)
        if self.split is not None:
            self._compile_split(values, nodes)
            return
        self.results = [values[v.name] for v in session._outputs]
        self.bool_outputs = [sequences.elem_dtype(v.type) == np.bool_ for v in session._outputs]
        self.out_shapes = [None if sequences.is_container(r) or not sequences.is_tensor_type(v.type)
                           and v.type.WhichOneof("value") else _out_shape(v, r)
                           for v, r in zip(session._outputs, self.results)]
        exprs = []
        seen = set()

        def packed(r):
            if isinstance(r, Packed4):  # (its bytes are the output, unpacked when read back: run)
                return Packed4(packed(r.data), r.shape, r.dtype)
            if isinstance(r, Expression):
                own = self.graph.values[r.value_id]
                if r.desc != own.desc and not (r.desc.is_packed and own.desc.is_packed
                                               and r.value_id not in seen and own.kind != "input"):
                    r = mapping.materialize(self.ctx, r)  # a strided view as an output: written packed
                seen.add(r.value_id)
                exprs.append(r)
            return r
        # (a sequence's tensors are outputs each: sequences.leaves' order)
        self.results = [sequences.map_leaves(r, packed) for r in self.results]
        self.compiled = self.graph.compile(exprs, fuse=session.fuse) if exprs else None

    def _record(self, nodes, values: dict, path: str, first: int | None = None) -> None:
        """Records `nodes` in order, their outputs into `values`; what a node cannot run is a
        problem (its outputs poisoned: the nodes reading them are skipped). `first`: `nodes`
        are the model's graph from node `first` on; a node whose output sizes depend on the
        data (mapping.DataDependent) ends the recording there (`self.split`), as long as no
        problem was found before it; inside an inlined If branch (`first` None) it is a problem."""
        opset = self.session.opset
        for k, proto in enumerate(nodes):
            if any(name in self.poisoned for name in [*proto.input, *analysis.node_outer_names(proto)]):
                self.poisoned.update(proto.output)
                continue
            try:
                results = self._node(proto, values, path)
                if isinstance(results, (mapping.DataDependent, _Control)):
                    if first is None:  # (the If whose branch this is runs as control flow: its branch splits)
                        raise _SplitInBranch
                    if not self.problems:
                        self.split = _Split(first + k, proto, results)
                        return
                    self.poisoned.update(proto.output)
                    continue
            except _Poisoned:
                self.poisoned.update(proto.output)
                continue
            except NotMapped as exc:
                self.problems.append(Unsupported(proto.name, proto.op_type, opset, str(exc), path))
                self.poisoned.update(proto.output)
                continue
            except sequences.BadValue:  # what onnxruntime fails the run for (a position out of range)
                raise
            except InvalidArgumentError as exc:  # what DirectML's operator rejects (a type, a rank)
                self.problems.append(Unsupported(proto.name, proto.op_type, opset, f"DirectML: {exc}", path))
                self.poisoned.update(proto.output)
                continue
            for name, value in zip(proto.output, results):
                if name:
                    values[name] = value

    def _branch(self, proto, cond, values: dict, path: str) -> list:
        """An If whose condition is known when the graph is built: its taken branch recorded
        in its place, reading the outer values it names."""
        taken = "then_branch" if bool(np.asarray(cond).reshape(-1)[0]) else "else_branch"
        (branch,) = [g for attr, g in analysis.subgraphs(proto) if attr == taken]
        where = f"{path} / " if path else ""
        return self._inline(branch, values, {}, f"{where}If {proto.name!r} {taken}")

    def _inline(self, graph, values: dict, bound: dict, path: str) -> list:
        """A subgraph recorded in place (an If's taken branch; SequenceMap's body, once per item): its inputs `bound`,
        reading the outer `values` it names; its outputs."""
        scope = {**values, **{t.name: numpy_helper.to_array(t) for t in graph.initializer}, **bound}
        self._record(graph.node, scope, path)
        if any(v.name in self.poisoned for v in graph.output):
            raise _Poisoned
        return [scope[v.name] for v in graph.output]

    def _node(self, proto, values: dict, path: str) -> list:
        s = self.session
        inputs = [values[name] if name else None for name in proto.input]
        standard = proto.domain in ("", "ai.onnx")
        if not standard:  # (onnxruntime's contrib ops: their rows build them, no control flow)
            row = mapping.row(proto.op_type, proto.domain)
            if row is None:
                raise NotMapped(mapping.refusal(proto.op_type, proto.domain, s.opset))
            if any(_empty(v) for k, v in enumerate(inputs) if k not in mapping.EMPTY_INPUTS.get(proto.op_type, ())):
                raise NotMapped("an empty input: DirectML sizes are at least 1")
            check_reader(proto.op_type, inputs, proto.input)
            node = mapping.Node(proto, s.opset, inputs, self._wanted(proto))
            if _folds_contrib(proto, inputs):  # run once now, eagerly on the device: its outputs host values
                return row.build(mapping.Context(s.device, None, s.onnx_dtype, s.onnx_rank), node)
            return row.build(self.ctx, node)
        if proto.op_type == "If":
            cond = inputs[0]
            if isinstance(cond, Expression):  # on the host when computed from value inputs (analysis: parameters)
                try:
                    cond = self._host_value(proto.input[0], values)
                except NotMapped:  # computed from data on the GPU: read back at run time
                    return _Control(proto, path)
            try:
                return self._branch(proto, cond, values, path)
            except _SplitInBranch:
                return _Control(proto, path)
        wanted = mapping.CONSTANT_INPUTS.get(proto.op_type, {})
        derived = False  # (a build-time input computed from the graph's inputs)
        for k in wanted:  # a value DirectML needs when the graph is built, computed on the host from the inputs'
            if k < len(inputs) and isinstance(inputs[k], Expression):
                inputs[k] = self._host_value(proto.input[k], values)
                derived = True
        if sequences.handles(proto.op_type, inputs):  # sequences and optionals (never folded: plain lists)
            node = mapping.Node(proto, s.opset, inputs, [bool(name) for name in proto.output])
            where = f"{path} / " if path else ""
            self.ctx.subgraph = lambda g, bound, label, opset: self._inline(g, values, bound, f"{where}{label}")
            return mapping.BY_TYPE[proto.op_type].build(self.ctx, node)
        outer = {name: values[name] for name in analysis.node_outer_names(proto) if name in values}
        if proto.op_type in analysis.CONTROL_FLOW and any(sequences.is_container(v)
                                                          for v in [*inputs, *outer.values()]):
            control.check_trips(self, proto, inputs)  # (a sequence or an optional carried or read: never folded)
            return _Control(proto, path)
        if any(sequences.is_container(v) for v in inputs):
            raise NotMapped("it reads a sequence or an optional: gpudml runs the sequence and optional ops (and "
                            "Identity, If, Loop) on them")
        if proto.op_type == "Constant":
            return [_constant_attr(proto)]
        if proto.op_type in ("Shape", "Size"):
            sizes = list(inputs[0].shape) if isinstance(inputs[0], Expression) else list(np.shape(inputs[0]))
            if proto.op_type == "Size":
                return [np.array(int(np.prod(sizes)), np.int64)]
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in proto.attribute}
            start, end = attrs.get("start", 0), attrs.get("end", None)
            return [np.array(sizes[start:end], np.int64)]
        check_reader(proto.op_type, inputs, proto.input)
        generated = derived and proto.op_type in mapping.GENERATORS  # (a generator node, as the provider runs it)
        if all(not isinstance(v, (Expression, Packed4)) for v in [*inputs, *outer.values()] if v is not None) \
                and proto.op_type != "Dropout" and proto.op_type not in mapping.RANDOM and not generated:
            try:
                return _fold(proto, inputs, s.opset, outer)
            except NoHostImplementation:  # (run on the device as any node: its constant inputs uploaded)
                if proto.op_type not in mapping.BY_TYPE:
                    raise
        if proto.op_type in analysis.CONTROL_FLOW:  # (Loop, Scan) run at run time, iteration by iteration
            control.check_trips(self, proto, inputs)
            return _Control(proto, path)
        if any(_empty(v) for k, v in enumerate(inputs)
               if k not in wanted and k not in mapping.TYPE_INPUTS.get(proto.op_type, ())):
            return self._with_empty(proto, inputs, outer)
        if proto.op_type not in mapping.BY_TYPE:
            raise NotMapped(mapping.refusal(proto.op_type, proto.domain, s.opset))
        node = mapping.Node(proto, s.opset, inputs, self._wanted(proto))
        return mapping.BY_TYPE[proto.op_type].build(self.ctx, node)

    def _wanted(self, proto) -> list[bool]:
        """Per output of `proto`: whether a later node or a graph output reads it."""
        return [bool(name) and (self.readers.get(name, 0) > 0 or name in self.session.output_names)
                for name in proto.output]

    def _with_empty(self, proto, inputs: list, outer: dict) -> list:
        """A node that reads an empty tensor (a host value) beside data computed on the GPU,
        as DirectML's execution provider handles empties (DirectML sizes are at least 1): a
        Concat leaves the empty parts out; a scatter of no update is its data; any other node
        whose outputs are all empty yields them with no dispatch (their shapes as ONNX's
        reference computes them from the inputs' shapes, Gather's by numpy where the reference
        errs: the GPU's data is never read); a non-empty output computed from GPU
        data and an empty tensor is refused with the node named."""
        s = self.session
        if proto.op_type == "Concat":
            kept = [k for k, v in enumerate(inputs) if not _empty(v)]
            if len(kept) == 1 and isinstance(inputs[kept[0]], Expression):
                return [inputs[kept[0]]]
            node = onnx.NodeProto()
            node.CopyFrom(proto)
            del node.input[:]
            node.input.extend(proto.input[k] for k in kept)
            return self._node(node, {**{n: inputs[k] for k, n in zip(kept, node.input)}, "": None}, "")
        if proto.op_type in ("Scatter", "ScatterElements", "ScatterND") and not _empty(inputs[0]):
            return [inputs[0]]  # no index, no update (ONNX gives both the same shape): the data
        stand_ins = [np.zeros(v.shape, s.onnx_dtype(name)) if isinstance(v, Expression) else v
                     for name, v in zip(proto.input, inputs)]
        results = _fold(proto, stand_ins, s.opset, outer)
        full = [(name, np.shape(r)) for name, r in zip(proto.output, results) if name and np.size(r) > 0]
        if full:
            empty = [f"{name!r} {list(np.shape(v))}" for name, v in zip(proto.input, inputs) if _empty(v)]
            raise NotMapped(f"the empty input {', '.join(empty)} beside data computed on the GPU gives the non-empty "
                            f"output {full[0][0]!r} {list(full[0][1])}: DirectML sizes are at least 1")
        return results

    def _host_value(self, name: str, values: dict):
        """The value of `name` computed on the host (onnx's reference evaluator, as folding)
        from the value inputs' values: its producer and theirs, each once."""
        value = values.get(name)
        if value is not None and not isinstance(value, Expression):
            return value
        if name not in self.host:
            proto = self.session.producers.get(name)
            if proto is None:  # analysis.analyze named every graph input a value derives from
                raise NotMapped(f"the value of {name!r} is needed when the graph is built, and is not known")
            held = [n for n in proto.input if sequences.is_container(values.get(n))]
            if held:  # (a sequence's tensors on the device: never read back for a build-time value)
                raise NotMapped(f"the value of {name!r} is needed when the graph is built, and is computed from the "
                                f"sequence or optional {held[0]!r}, whose tensors are on the device: gpudml computes "
                                f"such values on the host from host values and tensor inputs only")
            inputs = [self._host_value(n, values) if n else None for n in proto.input]
            outer = {n: self._host_value(n, values) for n in analysis.node_outer_names(proto)}
            for out, result in zip(proto.output, _fold(proto, inputs, self.session.opset, outer)):
                if out:
                    self.host[out] = result
        return self.host[name]

    # -- a graph split at a data-dependent node ------------------------------------------
    def _compile_split(self, values: dict, nodes: list) -> None:
        """The graph up to the split compiled to compute the node's count, its carried
        tensors and every tensor a later node or a graph output reads (`live`); the values
        known on the host go to the part after as they are. That part is built per count
        (`_after`)."""
        split, s = self.split, self.session
        later = set()
        for proto in nodes[split.index + 1:]:
            later.update(n for n in [*proto.input, *analysis.node_outer_names(proto)] if n)
        later.update(v.name for v in s._outputs)
        later.difference_update(split.proto.output)
        # (a sequence or an optional holding recorded tensors: each such tensor passed on as one, `_leaf_name`s,
        # the container rebuilt from them where it is read: `self.containers` by the part after, the control flow's
        # `self.control_containers`)
        read = [n for n in [*split.proto.input, *sorted(analysis.node_outer_names(split.proto))] if n and n in values] \
            if isinstance(split.pending, _Control) else []
        passed = {n: values[n] for n in sorted({*later, *read}) if sequences.is_container(values.get(n))
                  and any(isinstance(leaf, Expression) for leaf in sequences.leaves(values[n]))}
        for n, container in passed.items():
            values.update(_leaf_names(n, container))
        self.containers = {n: c for n, c in passed.items() if n in later}
        self.control_containers = {n: c for n, c in passed.items() if n in read}
        leaf_names = {n: list(_leaf_names(n, v)) for n, v in passed.items()}
        later = [m for n in sorted(later) for m in leaf_names.get(n, [n])]
        self.live = [n for n in later if isinstance(values.get(n), Expression)]
        self.host_values = {n: values[n] for n in later if n in values and not isinstance(values[n], Expression)
                            and values[n] is not None}
        if isinstance(split.pending, _Control):  # what the control flow reads: its inputs and outer values
            read = [m for n in read for m in leaf_names.get(n, [n])]
            self.control_live = [n for n in dict.fromkeys(read) if isinstance(values[n], Expression)]
            self.control_host = {n: values[n] for n in read if not isinstance(values[n], Expression)}
            self.carried_names = []
            for n in [*self.control_live, *self.live]:  # (a view passed on: written packed, as graph inputs are)
                if not values[n].desc.is_packed:
                    values[n] = mapping.materialize(self.ctx, values[n])
            exprs = [*(values[n] for n in self.control_live), *(values[n] for n in self.live)]
            self.tensors = {name: (tuple(values[name].shape), values[name].dtype.numpy) for name in self.live}
        else:
            carried = [f"{split.proto.output[0] or split.proto.name}#carried{k}"
                       for k in range(len(split.pending.carried))]
            self.carried_names = carried
            exprs = [split.pending.count, *split.pending.carried, *(values[n] for n in self.live)]
            self.tensors = {name: (tuple(e.shape), e.dtype.numpy) for name, e in zip(carried + self.live, exprs[1:])}
        self.compiled = self.graph.compile(exprs, fuse=s.fuse) if exprs else None
        self._after: collections.OrderedDict[object, _Built] = collections.OrderedDict()
        self.results = self.bool_outputs = self.out_shapes = None

    def subgraph(self, graph, formal: list, outer: dict, ranks: dict) -> _Scope:
        """A subgraph of control flow this build runs, as a graph of its own (control.py)."""
        return _Scope(self, graph, formal, outer, ranks)

    @property
    def runs_control(self) -> bool:
        """The build splits at control flow run at run time (here or in a part after)."""
        return self.split is not None and (isinstance(self.split.pending, _Control)
                                           or any(b.runs_control for b in self._after.values()))

    def after(self, count: int, outputs: list | None = None) -> _Built:
        """The build of the part after the split for `count` rows, or, after control flow,
        for its `outputs` (Tensors and host values; `count` then their key: control.key),
        cached as the session's builds are (the least recently used dropped past
        build_cache_size)."""
        built = self._after.get(count)
        if built is not None:
            self._after.move_to_end(count)
            return built
        split = self.split
        if outputs is None:
            resume = _Resume(split.index, split.proto, split.pending, count, self.carried_names, self.tensors,
                             self.host_values, self.containers)
        else:
            named = [(n, v) for n, v in zip(split.proto.output, outputs) if n]
            containers = {**self.containers, **{n: v for n, v in named if sequences.is_container(v)}}
            named = [(m, t) for n, v in named for m, t in
                     (_leaf_names(n, v).items() if sequences.is_container(v) else [(n, v)])]
            tensors = {**self.tensors, **{n: (tuple(v.shape), v.data_type.numpy) for n, v in named
                                          if isinstance(v, Tensor)}}
            hosted = {**self.host_values, **{n: v for n, v in named if not isinstance(v, Tensor)}}
            resume = _Resume(split.index, split.proto, None, None, [], tensors, hosted, containers)
        built = _Built(self.session, (), self.host, resume)
        self._after[count] = built
        while len(self._after) > self.session.build_cache_size:
            self._after.popitem(last=False)
        return built

    def _computed(self, given: dict, readback: bool, tally: list | None = None) -> tuple[_Built, list]:
        """(the build whose graph computes the outputs, what its compiled graph returns) for
        `given` ({input name: array or Tensor}): through every split, the part before run
        with its results left on the device, the count read back (one readback per split),
        or the control flow run (control.py). `tally`: [dispatches so far], counted on."""
        tally = [0] if tally is None else tally
        made = []
        if self.compiled is not None:
            used = self.__dict__.get("_used")
            if used is None:  # (the compiled graph's input names: the same every run)
                used = self._used = frozenset(e.name for e in self.compiled.inputs)
            tally[0] += self.compiled.dispatch_count
            if self.split is None:
                return self, list(self.compiled({k: a for k, a in given.items() if k in used}, readback=readback))
            made = self.compiled({k: a for k, a in given.items() if k in used}, readback=False)
        outputs = []
        try:
            if isinstance(self.split.pending, _Control):
                n = len(self.control_live)
                env = {**self.control_host, **dict(zip(self.control_live, made[:n]))}
                env.update({name: _rebuilt(name, c, env) for name, c in self.control_containers.items()})
                # (what was fed from the host as it was: a Loop's M and cond, an If's condition, read with no readback)
                fed = {k: given[k] for k in self.control_live if isinstance(given.get(k), np.ndarray)}
                outputs = control.run(self, self.split.proto, env, tally, fed)
                after = self.after(control.key(outputs), outputs)
                inner = dict(zip(self.live, made[n:]))
                for name, v in zip(self.split.proto.output, outputs):
                    named = _leaf_names(name, v) if sequences.is_container(v) else {name: v}
                    inner.update({m: t for m, t in named.items() if name and isinstance(t, Tensor)})
            else:
                count = int(made[0].numpy().reshape(-1)[0])
                after = self.after(count)
                inner = dict(zip(self.carried_names + self.live, made[1:]))
            if not after._runs:
                return after, []
            return after._computed({**after.random_states(), **inner}, readback, tally)
        finally:
            count_tensor = None if isinstance(self.split.pending, _Control) else made[0]
            for t in [*made, *(leaf for v in outputs for leaf in sequences.leaves(v))]:
                if isinstance(t, Tensor) and (readback or t is count_tensor):
                    t.free()

    @property
    def dispatch_count(self) -> int:
        return self.compiled.dispatch_count if self.compiled is not None else 0

    def random_states(self) -> dict[str, np.ndarray]:
        """The random nodes' generator states for this run (graph inputs of their own, by
        name), each advanced in the session for the next run by the blocks this one draws
        (mapping.Context.random_state): the first build that names a node sets its start."""
        states = self.session.random_states
        given = {}
        with self.session.random_lock:
            for name, initial, blocks in self.ctx.random_states:
                state = states.setdefault(name, initial)
                given[name] = state
                states[name] = advanced_state(state, blocks)
        return given

    def run(self, feeds: list[np.ndarray], names: list[str], tally: list | None = None) -> list[np.ndarray]:
        given = self.random_states()
        for v, array, is_bool in zip(self.session._inputs, feeds, self.bool_inputs):
            if not sequences.is_tensor_type(v.type):
                given.update(sequences.feeds(v.name, v.type, array))
                continue
            array = array.astype(np.uint8) if is_bool else array
            given[v.name] = four_bytes(array).reshape(_four_sizes(array.shape)) if array.dtype.name in FOUR_BYTES \
                else array.reshape(array.shape or (1,))
        final, results = self._computed(given, True, tally) if self._runs else (self, [])
        computed = iter(results)
        out = {}
        for v, r, is_bool, sizes in zip(self.session._outputs, final.results, final.bool_outputs, final.out_shapes):
            if sizes is None:  # a sequence (a list of arrays) or an optional (None where empty)
                out[v.name] = sequences.output(r, computed, is_bool, v.type)
                continue
            value = next(computed) if isinstance(r, (Expression, Packed4)) else np.array(r)
            if isinstance(r, Packed4):  # (its bytes read back, as the ml_dtypes values)
                value = four_values(value.reshape(_four_sizes(r.shape)), r.dtype.name, (r.shape or (1,))[-1])
            value = value.reshape(sizes)
            out[v.name] = value.astype(np.bool_) if is_bool else value
        return [out[name] for name in names]

    @property
    def _runs(self) -> bool:
        """Anything runs on the device (a compiled graph, or control flow after a split)."""
        return self.compiled is not None or self.split is not None

    def run_tensors(self, given: dict, names: list[str], tally: list | None = None
                    ) -> tuple[list[Tensor], dict[str, tuple]]:
        """(the outputs named, as Tensors on the device; every output's ONNX shape) for
        `given` ({input name: Tensor, or numpy array of the graph input's dtype and sizes}):
        nothing is read back (but a split's count). An output the model computes on the host
        (folded) is uploaded; a rank-0 output is a Tensor of shape [1]."""
        given = {**self.random_states(), **given}
        final, results = self._computed(given, False, tally) if self._runs else (self, [])
        computed = iter(results)
        out = {}
        for v, r, is_bool in zip(self.session._outputs, final.results, final.bool_outputs):
            if isinstance(r, Expression):
                t = next(computed)
            else:
                value = np.array(r)
                if value.size == 0:  # (a data-dependent count of 0)
                    for made in [*out.values(), *computed]:
                        made.free()
                    raise InvalidArgumentError(f"InferenceSession.run_with_iobinding: output {v.name!r} is an empty "
                                               f"tensor for these inputs (shape {list(value.shape)}); DirectML sizes "
                                               f"are at least 1: InferenceSession.run returns it")
                t = self.session.device.tensor(value.reshape(value.shape or (1,)))
            t.is_bool = t.is_bool or is_bool
            out[v.name] = t
        for name in set(out) - set(names):  # computed with the others, not asked for
            out[name].free()
        shapes = {v.name: s for v, s in zip(self.session._outputs, final.out_shapes)}
        return [out[name] for name in names], shapes


class _Scope(_Builds):
    """A subgraph of an If, Loop or Scan run at run time (control.py): built and compiled
    per input shapes (and values of its value inputs) as the session's graph is, with the
    same machinery (_Built: folding, inlined Ifs, splits, control flow inside, at any
    depth). Its inputs: the subgraph's own (`formal`: Loop's iteration_num, cond and carried
    values; Scan's states and one slice of each scanned input; none for an If's branch),
    then the outer values it reads that live on the device (Tensors, bound as they are: no
    copy); the outer values known on the host are its constants, as initializers."""

    def __init__(self, parent: _Built, graph, formal: list[tuple[str, np.dtype, int | None]], outer: dict,
                 ranks: dict):
        up = self._up = parent.session
        self.device, self.opset, self.fuse, self.build_cache_size = up.device, up.opset, up.fuse, up.build_cache_size
        self.random_states, self.random_lock = up.random_states, up.random_lock
        self.initializers = {n: np.asarray(v) for n, v in outer.items() if not control.passed(v)}
        self.initializers.update({t.name: numpy_helper.to_array(t) for t in graph.initializer})

        def info(name: str, dtype, shape=None) -> onnx.ValueInfoProto:
            if isinstance(dtype, onnx.TypeProto):  # a sequence or an optional (sequences.graph_input makes it)
                return onnx.helper.make_value_info(name, dtype)
            if isinstance(shape, int):  # a rank: symbolic sizes
                shape = [f"{name}#{k}" for k in range(shape)]
            return onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                                                      shape)

        def outer_dtype(name: str, t: Tensor) -> np.dtype:
            try:
                return up.onnx_dtype(name)
            except (KeyError, NotMapped):
                return t.dtype

        self._inputs = [info(n, d, r) for n, d, r in formal]
        self._inputs += [info(n, sequences.type_of(v) if sequences.is_container(v) else outer_dtype(n, v), ranks.get(n))
                         for n, v in outer.items() if control.passed(v)]
        known = [info(n, v.dtype, list(v.shape)) for n, v in self.initializers.items()]
        g = onnx.helper.make_graph(list(graph.node), graph.name or "subgraph", self._inputs, list(graph.output),
                                   value_info=[*graph.value_info, *known])
        self.model = onnx.helper.make_model(g, opset_imports=list(up.model.opset_import))
        self._types = self._ranks = None
        self._outputs = []  # each output's shape: declared, else the rank shape inference gives it
        for v in graph.output:
            rank = self.onnx_rank(v.name)
            if _dims(v) is None and rank is not None:
                with contextlib.suppress(KeyError, NotMapped):
                    v = info(v.name, self.onnx_dtype(v.name), rank)
            self._outputs.append(v)
        self.output_names = frozenset(v.name for v in self._outputs)
        problems, needed = analysis.analyze(g, self.opset, self.initializers, [v.name for v in self._inputs])
        if problems:
            raise unsupported_error(problems)
        self.value_inputs = [v.name for v in self._inputs if v.name in needed]
        self.producers = _producers(g) if self.value_inputs else {}
        self._compiled: collections.OrderedDict[tuple, _Built] = collections.OrderedDict()

    @property
    def loop_iteration_limit(self) -> int:
        """The session's, as it is now."""
        return self._up.loop_iteration_limit


@dataclass(frozen=True)
class _Split:
    """Where a build's graph ends: node `index` of the model's graph (`proto`), whose output
    sizes depend on the data (`pending`: mapping.DataDependent), or control flow run at run
    time (`pending`: _Control)."""

    index: int
    proto: onnx.NodeProto
    pending: mapping.DataDependent


@dataclass(frozen=True)
class _Resume:
    """What the build of the part after a split starts from: the split (index, proto,
    pending), the count read back, the names of the pending node's carried tensors, every
    tensor the part before computed for it ({name: (sizes, numpy dtype)}: its graph inputs)
    and the values known on the host."""

    index: int
    proto: onnx.NodeProto
    pending: mapping.DataDependent
    count: int
    carried: list
    tensors: dict
    host_values: dict
    containers: dict  # {name: a sequence or optional whose recorded tensors are passed as `_leaf_names` (tensors)}


# ------------------------------------------------------------------------------ helpers
def _leaf_names(name: str, container) -> dict:
    """The tensors of a sequence or optional `container` that pass from one part of a split
    graph to the next (recorded Expressions, or the device Tensors control flow gave), each
    under a name of its own ({"name#leaf<k>": tensor}, k its place in sequences.leaves)."""
    return {f"{name}#leaf{k}": leaf for k, leaf in enumerate(sequences.leaves(container))
            if isinstance(leaf, (Expression, Tensor))}


def _rebuilt(name: str, container, values: dict):
    """`container` with each tensor _leaf_names named replaced by `values`' value of that name."""
    names = iter(_leaf_names(name, container))
    return sequences.map_leaves(container, lambda leaf: values[next(names)] if isinstance(leaf, (Expression, Tensor))
                                else leaf)


def advanced_state(state: np.ndarray, blocks: int) -> np.ndarray:
    """A PHILOX_4X32_10 state with its 128-bit counter (words 0-3, the least significant
    first) advanced by `blocks`, the key kept: DML_RANDOM_GENERATOR's output state."""
    words = state.reshape(-1)
    return np.concatenate([counter_words(counter_value(words[:4]) + blocks), words[4:]]).reshape(state.shape)


def _producers(graph, found: dict | None = None) -> dict[str, onnx.NodeProto]:
    """Each value's producing node, in subgraphs too (ONNX's names are unique in a model)."""
    found = {} if found is None else found
    for node in graph.node:
        found.update({name: node for name in node.output if name})
        for _, g in analysis.subgraphs(node):
            _producers(g, found)
    return found


def _host_copy(value, v, shape: tuple) -> np.ndarray:
    """A bound value input's value on the host, as a feed of ONNX shape `shape` (BOOL as
    bool): a bound Tensor read back (one readback per run: docs/onnx.md)."""
    array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    if v.type.tensor_type.elem_type == onnx.TensorProto.BOOL:
        array = array.astype(np.bool_)
    return array.reshape(shape)


def load_model(model, where: str = "gpudml.onnx.load_model") -> onnx.ModelProto:
    """An ONNX model (a path, bytes or an onnx.ModelProto, which is never changed) read,
    parsed and checked as onnxruntime loads one: graph outputs with no type or shape take
    the ones shape inference gives (onnxruntime infers them too), then onnx.checker runs.
    A file that cannot be read, bytes that are no ONNX model and what the checker refuses
    are InvalidArgumentErrors naming the file (or the node or value) and the reason; `where`
    opens the message."""
    if isinstance(model, onnx.ModelProto):
        proto, source = model, "the model"
    elif isinstance(model, (bytes, bytearray)):
        source = "the model given as bytes"
        proto = _parse(bytes(model), source, where)
    elif isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        source = f"model file {path!r}"
        proto = _parse(_read(path, where), source, where)
        folder = os.path.dirname(os.path.abspath(path))
        external = _external_files(proto, folder, source, where)
        # The checks see the graph without its external data (a model over protobuf's 2 GiB is
        # never serialized whole), then the data is read.
        proto = _with_inferred_outputs(proto)
        _checked(_external_as_inputs(proto) if external else proto, source, where)
        if external:
            try:
                onnx.load_external_data_for_model(proto, folder)
            except (OSError, ValueError) as exc:
                raise InvalidArgumentError(f"{where}: {source}: its external data cannot be read ({exc})") from None
        return proto
    else:
        raise InvalidArgumentError(f"{where}: model must be a path, bytes or an onnx.ModelProto, got "
                                   f"{type(model).__name__}")
    for t in proto.graph.initializer:
        if onnx.external_data_helper.uses_external_data(t):
            location = onnx.external_data_helper.ExternalDataInfo(t).location
            raise InvalidArgumentError(f"{where}: {source}: initializer {t.name!r} is stored in the external data "
                                       f"file {location!r}, which only a model loaded from its path can find; give "
                                       f"the model's path (the data file beside it), or onnx.load(path) it first")
    return _checked(_with_inferred_outputs(proto), source, where)


def _checked(proto: onnx.ModelProto, source: str, where: str) -> onnx.ModelProto:
    try:
        onnx.checker.check_model(_checkable(proto))
    except onnx.checker.ValidationError as exc:
        raise InvalidArgumentError(f"{where}: {source} fails onnx.checker{_culprit(_checkable(proto))}: "
                                   f"{_first_line(exc)}") from None
    return proto


def _external_as_inputs(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `proto` whose initializers stored in external data are graph inputs of their
    type and shape, for onnx.checker: checking a ModelProto, it looks for the data files in
    the working directory (the files are checked to exist beside the model, and read, apart)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    kept = []
    for t in copy.graph.initializer:
        if onnx.external_data_helper.uses_external_data(t):
            if t.name not in {v.name for v in copy.graph.input}:
                copy.graph.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        else:
            kept.append(t)
    del copy.graph.initializer[:]
    copy.graph.initializer.extend(kept)
    return copy


def _external_files(proto: onnx.ModelProto, folder: str, source: str, where: str) -> list[str]:
    """The external data files the model's initializers are stored in (locations relative to
    the model's folder, as ONNX has them), each checked to exist."""
    files = []
    for t in proto.graph.initializer:
        if not onnx.external_data_helper.uses_external_data(t):
            continue
        location = onnx.external_data_helper.ExternalDataInfo(t).location
        if location not in files:
            full = os.path.join(folder, location)
            if not os.path.isfile(full):
                raise InvalidArgumentError(f"{where}: {source}: initializer {t.name!r} is stored in the external "
                                           f"data file {location!r}, which is missing (no file {full!r}); keep the "
                                           f"data files beside the model")
            files.append(location)
    return files


def _read(path: str, where: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise InvalidArgumentError(f"{where}: no such model file {path!r}") from None
    except IsADirectoryError:
        raise InvalidArgumentError(f"{where}: {path!r} is a directory, not a model file (.onnx)") from None
    except OSError as exc:
        raise InvalidArgumentError(f"{where}: cannot read model file {path!r}: {exc.strerror or exc}") from None


def _parse(data: bytes, source: str, where: str) -> onnx.ModelProto:
    """The ModelProto in `data`; InvalidArgumentError where it holds none (empty, truncated,
    another kind of file), as onnxruntime refuses it."""
    if not data:
        raise InvalidArgumentError(f"{where}: {source} is empty (0 bytes), not an ONNX model")
    try:
        proto = onnx.load_model_from_string(data)
    except Exception as exc:  # noqa: BLE001  (protobuf's DecodeError, or a RuntimeError from its C++ parser)
        raise InvalidArgumentError(f"{where}: {source} is not an ONNX model: protobuf cannot parse its {len(data)} "
                                   f"bytes ({_first_line(exc)}); a truncated download or another kind of file?") \
            from None
    if not proto.HasField("graph"):
        raise InvalidArgumentError(f"{where}: {source} is not an ONNX model: its {len(data)} bytes parse, but hold "
                                   f"no graph (ir_version {proto.ir_version}); another kind of file?")
    return proto


def _with_inferred_outputs(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`proto`, or a copy whose graph outputs lacking a type or a shape have the ones shape
    inference gives (where it gives one): onnxruntime accepts such outputs and infers them."""
    lacking = [k for k, v in enumerate(proto.graph.output)
               if not v.type.HasField("tensor_type") or not v.type.tensor_type.HasField("shape")]
    if not lacking:
        return proto
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception:  # noqa: BLE001  (the checker then says what is wrong)
        return proto
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for k in lacking:
        found = inferred.graph.output[k]
        if found.type.HasField("tensor_type") and found.type.tensor_type.elem_type:
            copy.graph.output[k].type.CopyFrom(found.type)
    return copy


def _checkable(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`proto`, or a copy for onnx.checker whose graph inputs and outputs with no shape (one
    computed from an input with none) have an empty one: the checker requires the field,
    onnxruntime takes such a value as of any shape (and so does the session, which keeps
    `proto`)."""
    def shapeless(v) -> bool:
        return v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")

    def unschemed(graph) -> list:  # onnxruntime's ops of the ONNX domain that onnx has no schema for
        found = []
        for node in graph.node:
            if node.domain in ("", "ai.onnx") and node.op_type in mapping.ORT_ONNX_DOMAIN:
                found.append(node)
            for attr in node.attribute:
                for g in [attr.g] if attr.HasField("g") else list(attr.graphs):
                    found += unschemed(g)
        return found

    if not any(shapeless(v) for v in [*proto.graph.input, *proto.graph.output]) and not unschemed(proto.graph):
        return proto
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for v in [*copy.graph.input, *copy.graph.output]:
        if shapeless(v):
            v.type.tensor_type.shape.SetInParent()
    # SimplifiedLayerNormalization: onnxruntime registers it in the ONNX domain (its transformer optimizer writes
    # it there), onnx has no schema for it: the checker sees it in onnxruntime's contrib domain, whose ops it skips.
    for node in unschemed(copy.graph):
        node.domain = mapping.MS
    if unschemed(proto.graph) and all(o.domain != mapping.MS for o in copy.opset_import):
        copy.opset_import.append(onnx.helper.make_opsetid(mapping.MS, 1))
    return copy


def _culprit(proto: onnx.ModelProto) -> str:
    """Where the checker's complaint lies, checked piece by piece: " at graph output 'y'",
    " at node 'add' (Add)", or "" (the model as a whole)."""
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = proto.ir_version
    ctx.opset_imports = {o.domain: o.version for o in proto.opset_import}
    pieces = [(f"graph input {v.name!r}", onnx.checker.check_value_info, v) for v in proto.graph.input]
    pieces += [(f"graph output {v.name!r}", onnx.checker.check_value_info, v) for v in proto.graph.output]
    pieces += [(f"initializer {t.name!r}", onnx.checker.check_tensor, t) for t in proto.graph.initializer]
    pieces += [(f"node {n.name or '(unnamed)'!r} ({n.op_type}, output {n.output[0] if n.output else ''!r})",
                onnx.checker.check_node, n) for n in proto.graph.node]
    for label, check, piece in pieces:
        try:
            check(piece, ctx)
        except Exception:  # noqa: BLE001
            return f" at {label}"
    return ""


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return " ".join(lines[:3]) if lines else type(exc).__name__


def _opset(model) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    raise InvalidArgumentError("InferenceSession: the model imports no ai.onnx opset")


def _value_types(model) -> dict[str, int]:
    types = {}
    for v in list(model.graph.input) + list(model.graph.output) + list(model.graph.value_info):
        if v.type.HasField("tensor_type"):
            types[v.name] = v.type.tensor_type.elem_type
    for t in model.graph.initializer:
        types[t.name] = t.data_type
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
        for v in inferred.graph.value_info:
            if v.type.HasField("tensor_type"):
                types.setdefault(v.name, v.type.tensor_type.elem_type)
    except Exception:  # noqa: BLE001  (inference is a help for CastLike only)
        pass
    return types


def _value_ranks(model) -> dict[str, int]:
    """Each value's rank, where declared or given by shape inference (main graph values)."""
    ranks = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # noqa: BLE001  (what is declared then)
        inferred = model.graph
    for v in [*inferred.input, *inferred.output, *inferred.value_info]:
        dims = _dims(v) if v.type.HasField("tensor_type") else None
        if dims is not None:
            ranks.setdefault(v.name, len(dims))
    for t in model.graph.initializer:
        ranks[t.name] = len(t.dims)
    return ranks


def _readers(graph, count: dict[str, int] | None = None) -> dict[str, int]:
    """How many nodes read each value, in subgraphs too (a subgraph's outputs count as read)."""
    count = {} if count is None else count
    for node in graph.node:
        for name in node.input:
            count[name] = count.get(name, 0) + 1
        for _, g in analysis.subgraphs(node):
            for v in g.output:
                count[v.name] = count.get(v.name, 0) + 1
            _readers(g, count)
    return count


def _dims(v) -> list | None:
    """The value's dimensions as the model writes them: an int
    (dim_value), the dim_param's name, None where neither is set; None: no shape at all."""
    t = v.type.tensor_type
    if not t.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim]


def _static_shape(v) -> list[int] | None:
    dims = _dims(v)
    if dims is None or not all(analysis.is_fixed(d) for d in dims):
        return None
    return dims


def _check_dims(v, array: np.ndarray) -> None:
    """A feed against the model's shape of its input: the rank, and each fixed dimension."""
    problem = analysis.shape_error("input", v.name, array.shape, _dims(v))
    if problem:
        raise InvalidArgumentError(f"InferenceSession.run: {problem}")


def _describe(v) -> str:
    if not sequences.is_tensor_type(v.type):
        return sequences.type_string(v.type)
    dtype = onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type)
    dims = _dims(v)
    return f"{dtype} of shape {dims}" if dims is not None else f"{dtype} of any shape"


def _node_arg(v) -> NodeArg:
    """onnxruntime's NodeArg: a negative dim_value (-1) reads None, no shape []."""
    if not sequences.is_tensor_type(v.type):  # onnxruntime's: "seq(tensor(float))", shape []
        return NodeArg(v.name, [], sequences.type_string(v.type))
    dims = [None if isinstance(d, int) and d < 0 else d for d in _dims(v) or []]
    return NodeArg(v.name, dims, _ORT_TYPES.get(v.type.tensor_type.elem_type, "tensor(unknown)"))


def _four_sizes(shape) -> list[int]:
    """A 4-bit tensor's bytes' sizes (pack4's layout): the last (n + 1) // 2 (rank 0: [1])."""
    shape = list(shape) or [1]
    return shape[:-1] + [(shape[-1] + 1) // 2]


def _out_shape(v, result) -> tuple:
    """An output's shape: the result's, or () where the model declares a scalar and the
    result is one element (DirectML's rank-0 stand-in is [1]). A result that differs from the
    declared shape otherwise keeps its own shape, as onnxruntime's lenient merge does."""
    dims = _dims(v)
    shape = tuple(result.shape) if isinstance(result, Expression) else np.shape(result)
    if dims is not None and len(dims) == 0 and int(np.prod(shape)) == 1:
        return ()
    return shape


def _empty(value) -> bool:
    """A host value with no element (an Expression never is one)."""
    return value is not None and not isinstance(value, Expression) and np.size(value) == 0


def _constant_attr(proto) -> np.ndarray:
    (attr,) = proto.attribute
    value = onnx.helper.get_attribute_value(attr)
    if attr.name == "value":
        return numpy_helper.to_array(value)
    if attr.name in ("value_float", "value_int"):
        return np.array(value, np.float32 if attr.name == "value_float" else np.int64)
    if attr.name in ("value_floats", "value_ints"):
        return np.array(value, np.float32 if attr.name == "value_floats" else np.int64)
    raise NotMapped(f"Constant's {attr.name}: not a numeric tensor")


def _fold_empty(proto, inputs: list) -> list | None:
    """What onnx's reference evaluator (1.23.2) gets wrong of an empty tensor, folded by
    numpy: a Gather of no index (it answers shape (0,) whatever the data's rank), a Flatten
    of no element (its reshape to (n, -1) is ambiguous there); None for any other node."""
    axis = next((a.i for a in proto.attribute if a.name == "axis"), None)
    if proto.op_type == "Gather" and np.size(inputs[1]) == 0:
        return [np.take(np.asarray(inputs[0]), np.asarray(inputs[1], np.int64), axis=axis or 0)]
    if proto.op_type == "Flatten" and np.size(inputs[0]) == 0:
        x = np.asarray(inputs[0])
        cut = (1 if axis is None else axis) % (x.ndim + 1)
        return [x.reshape(int(np.prod(x.shape[:cut])), int(np.prod(x.shape[cut:])))]
    return None


#: Operators whose older versions onnx's reference evaluator (1.23) has no implementation of,
#: folded by its implementation of a later version that computes the same for every input the
#: older schema admits (ONNX's Changelog): DequantizeLinear-10 and -13 (what onnxruntime's
#: quantization tool writes at opsets below 19) by -19, which added float8 inputs and
#: float16/bfloat16 scales only.
FOLD_AS = {"DequantizeLinear": 19}


def _folds_contrib(proto, inputs: list) -> bool:
    """Whether a contrib node is folded when the graph is built: every input known (no
    Expression), as onnxruntime's constant folding folds a node of constant inputs with its CPU
    kernel whatever provider the rest runs on (a transformer optimizer's SkipLayerNormalization
    of the decoder's zero queries in DETR: tests/test_onnx_models.py), DequantizeLinear aside
    (onnxruntime leaves it to its QDQ handling). gpudml runs such a node's row eagerly on the
    device (onnx's reference evaluator, which folds the standard ops, has no contrib ops)."""
    return proto.op_type != "DequantizeLinear" and not any(isinstance(v, Expression) for v in inputs)


class NoHostImplementation(NotMapped):
    """onnx's reference evaluator has no implementation of the node's operator at its version:
    the node is not folded on the host but run on the device (its constant inputs uploaded)."""


def _host_implemented(proto, opset: int) -> bool:
    """Whether onnx's reference evaluator implements `proto`'s operator at `opset` (a function
    operator, expanded by the evaluator, counts; a contrib domain does not)."""
    from onnx.reference.ops import load_op

    if proto.domain not in ("", "ai.onnx"):
        return False
    try:
        load_op("", proto.op_type, opset)
    except Exception:  # noqa: BLE001 (the evaluator's own error for "no implementation")
        schema = onnx.defs.get_schema(proto.op_type, opset) if onnx.defs.has(proto.op_type) else None
        return schema is not None and schema.has_function
    return True


def _fold(proto, inputs: list, opset: int, outer: dict | None = None) -> list:
    """A node whose inputs are all known, evaluated on the host (onnx's reference evaluator);
    `outer`: the values of the enclosing graph its subgraphs read (Loop, Scan), by name.
    NoHostImplementation where the evaluator has no implementation of it (FOLD_AS aside)."""
    from onnx.reference import ReferenceEvaluator

    opset = max(opset, FOLD_AS.get(proto.op_type, 0)) if proto.domain in ("", "ai.onnx") else opset
    if not _host_implemented(proto, opset):
        raise NoHostImplementation(f"onnx's reference evaluator has no {proto.op_type} at opset {opset}")

    outer = outer or {}
    empty = _fold_empty(proto, inputs)
    if empty is not None:
        return empty
    if proto.op_type == "Loop" and (len(inputs) < 2 or inputs[1] is None):  # an omitted cond is true (the
        inputs = [inputs[0], np.array(True), *inputs[2:]]                    # reference evaluator's: false)
    prefix = "_"  # the outer names stay theirs (the subgraphs read them so): the node's own differ
    while any(n.startswith(prefix) for n in outer):
        prefix += "_"
    names = [f"{prefix}i{k}" if v is not None else "" for k, v in enumerate(inputs)]
    node = onnx.NodeProto()
    node.CopyFrom(proto)
    del node.input[:]
    node.input.extend(names)
    outs = [f"{prefix}o{k}" if name else "" for k, name in enumerate(proto.output)]
    del node.output[:]
    node.output.extend(outs)
    given = {**{n: np.asarray(v) for n, v in zip(names, inputs) if n}, **{n: np.asarray(v) for n, v in outer.items()}}
    graph_inputs = [onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(v.dtype), None)
                    for n, v in given.items()]
    graph_outputs = [onnx.helper.make_empty_tensor_value_info(o) for o in outs if o]
    model = onnx.helper.make_model(onnx.helper.make_graph([node], "fold", graph_inputs, graph_outputs),
                                   opset_imports=[onnx.helper.make_opsetid("", opset)])
    try:
        results = ReferenceEvaluator(model).run(None, given)
    except Exception as exc:  # noqa: BLE001
        raise NotMapped(f"folding it on the host (its inputs are constants) failed: {exc}") from exc
    it = iter(results)
    return [np.asarray(next(it)) if o else None for o in outs]


__all__ = ["TOLERANCE", "InferenceSession", "NodeArg", "Unsupported", "load_model"]
