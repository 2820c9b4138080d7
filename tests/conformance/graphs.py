"""Random graphs over every chainable operator (and consumers reading through the
chains): fused results equal the unfused ones (`run_random_graph`)."""

from __future__ import annotations

import functools

import numpy as np
from conftest import assert_bits_equal, random_bits

import gpudml as dml
from gpudml.ops import SPECS, spec_named, tensor_fields
from gpudml.ops.spec import tensor_arguments
from gpudml.runtime.tensor import logical_from_raw
from gpudml.testing import assert_within

from .cases import draw_case
from .draws import HIGHEST, RandomDraw, T
from .layouts import padded_strides
from .tables import accepts, table_fields, tables

#: Elements a value of a random graph may hold.
GRAPH_ELEMENTS = 20000


def chainable(spec) -> bool:
    """Whether the operator is a stage of data-movement chains (its planner gives a stage for a drawn desc)."""
    case = draw_case(spec, RandomDraw(np.random.default_rng(0)), level=HIGHEST, rank=3, data_type=T.FLOAT32,
                     layout="packed")
    return spec.planner.stage(case.desc) is not None


@functools.cache
def chainable_specs() -> tuple:
    """The operators that are stages of data-movement chains."""
    return tuple(s for s in SPECS if chainable(s))


@functools.cache
def every_type_chainable_specs() -> tuple:
    """The chainable operators whose table takes every data type (at some rank, at the
    highest level): a random graph's values (any type) reach them often enough for every
    shard of test_random_graphs_fused_match_unfused to fuse each. The resampling operators
    (four types) are drawn too, but fused for sure in chains of their own tests
    (tests/test_resample.py)."""
    return tuple(s for s in chainable_specs() if all(
        any(accepts(t, HIGHEST, rank, {table_fields(t)[0]: data_type}) for t in tables(s).values()
            for rank in range(1, 9)) for data_type in T))


def consumer_specs() -> tuple:
    """The operators that read their first input through a chain (Reduce, ArgMax, ArgMin,
    the scans) whose table takes FLOAT32 at every rank (the resampling operators, ranks 1-4,
    read through chains too: tests/test_resample.py's graphs)."""
    return tuple(s for s in SPECS if s.planner.prologue and _wide(s))


def _wide(spec) -> bool:
    return all(accepts(t, HIGHEST, rank, {table_fields(t)[0]: T.FLOAT32}) for t in tables(spec).values()
               for rank in range(1, 9))


#: Element-wise rows a random graph mixes into its chains: exact in any order of evaluation
#: (no product a compiler could contract with a sum), so fused equals unfused bit for bit.
EXACT_ROWS = ("identity", "abs", "negate", "relu", "add0", "subtract", "max", "min")


def elementwise_specs() -> tuple:
    """The element-wise rows of EXACT_ROWS."""
    return tuple(spec_named(key) for key in EXACT_ROWS)


class RandomGraph:
    """A random graph on `device`: chains of the chainable operators and of element-wise
    rows (EXACT_ROWS; each node's call drawn by its rule for the value it reads), some values
    read by a consumer (which reads through the chain), the feed for a call, and the
    outputs to compile. A node's operator is one not yet in `drawn` (the specs drawn by
    the graphs that share it) where one takes its input. `nodes[expr]` is the
    (spec, desc, the Expression it reads, the values of its other tensors) of each node."""

    def __init__(self, device, rng: np.random.Generator, nodes: int, drawn: set | None = None):
        self.rng, self.d = rng, RandomDraw(rng)
        # The element-wise rows are drawn from a generator of their own, so that the chains
        # the main one draws stay what they were.
        self.mix = np.random.default_rng(rng.bit_generator.seed_seq.spawn(1)[0])
        self.g = dml.Graph(device)
        self.feed, self.nodes, self.consumed = {}, {}, []
        self.drawn = set() if drawn is None else drawn  # the specs drawn so far
        data_type = T(rng.choice(sorted(T)))
        # Ranks 1-8, 4 five times as often: the operators of 4-D tensors only (DepthToSpace,
        # SpaceToDepth) chain there.
        rank = int(rng.choice([1, 2, 3, 4, 4, 4, 4, 4, 5, 6, 7, 8]))
        budget_ = max(1, int(600 ** (1 / rank)))  # elements stay in the thousands
        sizes = [int(n) for n in rng.integers(1, budget_ + 2, size=rank)]
        self.tame = rng.random() < 0.5  # finite values the reductions keep finite
        x = self._input("x", data_type, sizes, rng.choice(["packed", "strided", "broadcast"], p=[0.6, 0.2, 0.2]))
        movable, made = [x], []
        for _ in range(nodes):
            source = movable[int(rng.integers(len(movable)))] if rng.random() < 0.3 else movable[-1]
            if self.mix.random() < 0.35:  # an element-wise row between the source and its reader
                source = self._node(source, consume=False, elementwise=True) or source
            value = self._node(source, consume=rng.random() < 0.15)
            if value is None:
                continue
            made.append(value)
            if value not in self.consumed:
                movable.append(value)
        tail = [v for v in made if v not in self.consumed]
        picks = [v for v in made if rng.random() < 0.25]
        self.outputs = list(dict.fromkeys(([tail[-1]] if tail else [x]) + picks + self.consumed))

    def _values(self, data_type: T, count) -> np.ndarray:
        if data_type.is_float and self.tame:
            return (self.rng.standard_normal(count) * 2).astype(data_type.numpy)
        return random_bits(self.rng, data_type.numpy, count)

    def _input(self, name: str, data_type: T, sizes, layout: str = "packed") -> dml.Expression:
        strides = None if layout == "packed" else padded_strides(sizes, self.rng, broadcast=layout == "broadcast")
        expr = self.g.input(sizes, dtype=data_type, name=name, strides=strides)
        self.feed[name] = self._values(data_type, [expr.desc.required_elements] if strides is not None else sizes)
        return expr

    def _node(self, x: dml.Expression, consume: bool, elementwise: bool = False):
        """A node of a random chainable operator (a consumer, an element-wise row) reading
        `x`, or None where the one drawn does not take x's rank and type or would make too
        large a value."""
        specs = consumer_specs() if consume else elementwise_specs() if elementwise else chainable_specs()
        rng, draw = (self.mix, RandomDraw(self.mix)) if elementwise else (self.rng, self.d)
        specs = [s for s in specs if any(accepts(t, HIGHEST, len(x.shape), {table_fields(t)[0]: x.dtype})
                                         for t in tables(s).values())] or specs  # those that take x
        unused = [s for s in specs if s not in self.drawn]
        if not unused:  # each once before any twice (over the graphs that share `drawn`)
            self.drawn.difference_update(specs)
        specs = unused or specs
        self.drawn.add(spec := specs[int(rng.integers(len(specs)))])
        options = [k for k, t in tables(spec).items() if accepts(t, HIGHEST, len(x.shape), {
            table_fields(t)[0]: x.dtype})]
        if not options:
            return None
        case = draw_case(spec, draw, level=HIGHEST, data_type=x.dtype, key=options[int(rng.integers(
            len(options)))], sizes=x.shape, layout="packed")
        desc = case.desc
        if not case.accepted or any(d.element_count > GRAPH_ELEMENTS for _, d in tensor_fields(desc)[1]):
            return None
        others, values = [], []
        for (field, td), contents in zip(tensor_fields(desc)[0][1:], case.buffers(rng)[1:], strict=True):
            values.append(logical_from_raw(contents, td))
            if rng.random() < 0.3:  # a tensor the call feeds
                name = f"{field}{len(self.feed)}"
                others.append(self.g.input(td.sizes, dtype=td.data_type, name=name))
                self.feed[name] = values[-1]
            else:
                others.append(values[-1])
        args, kwargs = tensor_arguments(spec, desc, [x, *others])  # (by name after an optional one left out)
        value = dml.FUNCTIONS[spec.functional_name](*args, **kwargs, **spec.arguments(desc))
        self.nodes[value] = (spec, desc, x, values)
        if consume:
            self.consumed.append(value)
        return value

    def fused_names(self, compiled) -> set[str]:
        """The operators inside the fused steps of a compiled graph."""
        names = set()
        for step in compiled.steps:
            name = step.compiled.name
            if name.startswith("Fused("):
                names |= set(name[len("Fused("):-1].split(">"))
        return names


def run_random_graph(device, seed: int, nodes: int, drawn: set | None = None):
    """A random graph compiled fused and node by node: the values it outputs fused equal
    the unfused ones bit for bit; a consumer's, the reference on its (unfused) input within
    the spec's documented precision; the fused graph dispatches no more kernels. Returns
    (the graph, its fused compilation)."""
    graph = RandomGraph(device, np.random.default_rng(seed), nodes, drawn)
    read = [graph.nodes[c][2] for c in graph.consumed]
    fused = graph.g.compile(graph.outputs)
    unfused = graph.g.compile(graph.outputs + read, fuse=False)
    got, want = fused(graph.feed), unfused(graph.feed)
    materialized = dict(zip(read, want[len(graph.outputs):]))
    for expr, g, w in zip(graph.outputs, got, want):
        if expr in graph.consumed:
            spec, desc, x, values = graph.nodes[expr]
            expected, tolerances = spec.expected_outputs(desc, [materialized[x], *values])
            assert_within(g, expected[0], tolerances[0], f"{spec.name} through a chain")
        else:
            assert_bits_equal(g, w)
    assert fused.dispatch_count <= graph.g.compile(graph.outputs, fuse=False).dispatch_count
    return graph, fused
