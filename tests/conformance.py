"""The conformance kit: what every operator of the registry (gpudml.ops.SPECS) must do, derived
from its spec, checked by tests/test_conformance.py.

An operator's *rule* (RULES, at the end of this module, one entry per spec key) is all the kit
needs to know of it beyond its spec:

- `call(d, ask)`: a valid call for an input of a given rank and data type (`Ask`): the
  tensor descs of the functional form's tensor arguments and infer_output's keyword
  arguments (`Drawn`), drawn through `d` (a `Draw`: seeded numpy for the sweeps, hypothesis
  for the fuzz tests, so that one function serves both). `ask.sizes`, where given, are the
  input's sizes (a value of a graph); else the rule draws them.
- `broken(desc)`, `functional(x, shape)`, `fields`, `compare`: the fuzz tests' hypothesis
  strategies for one broken field of the operator's own and for hostile functional calls.
- `free`: the support table's tensors whose data type is drawn apart from the input's
  (GATHER's indices); `fill`: buffer contents worth running (default: the spec's sample).

From the rules and the specs the kit draws valid cases (any feature level, row, rank and
type the support table lists, the layouts below), runs them (`run_case`: roomy buffers of
random bits, only the output's elements written, inputs untouched) and checks them against
`spec.expected_outputs` (bit-exact, or within the spec's documented tolerance); it parses
the stored DirectML pages (tests/data/pages, tests/data/seeds) and draws random graphs of
the chainable operators (`RandomGraph`).

Budget: the default run is CI-sized and derandomized (the same examples every run); with
GPUDML_FUZZ_EXAMPLES=N every @given test tries N fresh random examples (long runs).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from conftest import assert_bits_equal, random_bits
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.device import tuning
from gpudml.ops import SPECS, spec_named, tensor_fields
from gpudml.ops import argminmax as argminmax_op
from gpudml.ops import convolution as convolution_op
from gpudml.ops import cumulative as cumulative_op
from gpudml.ops import elementwise as elementwise_op
from gpudml.ops import gather as gather_op
from gpudml.ops import gemm as gemm_op
from gpudml.ops import padding as padding_op
from gpudml.ops import pooling as pooling_op
from gpudml.ops import reduce as reduce_op
from gpudml.ops import softmax as softmax_op
from gpudml.ops.slice1 import max_output_size
from gpudml.ops.spec import OUTPUT_FIELDS, flat_tensors, per_argument, tensor_arguments
from gpudml.runtime.tensor import logical_from_raw
from gpudml.tensor_desc import calc_buffer_tensor_size, packed_strides
from gpudml.testing import assert_within

FL, T, D = dml.FeatureLevel, dml.DataType, dml.AxisDirection
ALL_TYPES = list(T)
HIGHEST = dml.types.HIGHEST_FEATURE_LEVEL
#: Cases tried per operator and kind (GPUDML_FUZZ_REPORT=file.json writes them).
COUNTS: Counter = Counter()
#: Default examples per fuzz test (per operator, and per adapter where a test runs on each).
VALID_EXAMPLES, INVALID_EXAMPLES, EXECUTE_EXAMPLES, FUNCTIONAL_EXAMPLES = 100, 250, 100, 60
#: Largest size per axis by rank: at most a few thousand elements per tensor.
MAX_SIZE = {1: 300, 2: 40, 3: 14, 4: 7, 5: 5, 6: 4, 7: 3, 8: 3}


# ============================================================================ budget
def long_run() -> int | None:
    """GPUDML_FUZZ_EXAMPLES as a number of examples, or None (the default, CI-sized run)."""
    value = os.environ.get("GPUDML_FUZZ_EXAMPLES")
    return int(value) if value else None


def budget(examples: int) -> settings:
    """CI-sized and derandomized by default; GPUDML_FUZZ_EXAMPLES=N: N random examples."""
    n = long_run()
    return settings(
        max_examples=n or examples,
        deadline=None,
        derandomize=n is None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


# ============================================================================ draws
class Draw:
    """Where a rule's choices come from: `RandomDraw` (a seeded numpy generator: the sweeps,
    the feature-level tables, random graphs) or `HypothesisDraw` (the fuzz tests)."""

    def int(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        raise NotImplementedError

    def pick(self, options):
        """One of `options` (a sequence)."""
        raise NotImplementedError

    def real(self, lo: float | None = None, hi: float | None = None) -> float:
        """A float in [lo, hi]; without bounds any double (NaN, infinities, -0.0 included)."""
        raise NotImplementedError

    def permutation(self, n: int) -> list[int]:
        raise NotImplementedError

    def bool(self) -> bool:
        return self.int(0, 1) == 1

    def ints(self, count: int, lo: int, hi: int) -> list[int]:
        return [self.int(lo, hi) for _ in range(count)]

    def subset(self, n: int) -> list[int]:
        """A non-empty list of distinct integers of [0, n), in random order."""
        order = self.permutation(n)
        return order[:self.int(1, n)]


class RandomDraw(Draw):
    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def int(self, lo, hi):
        if -(2**63) <= lo and hi < 2**63 - 1:
            return int(self.rng.integers(lo, hi + 1))
        span = hi - lo + 1  # beyond int64: from random bytes
        return lo + int.from_bytes(self.rng.bytes(span.bit_length() // 8 + 8), "little") % span

    def pick(self, options):
        options = list(options)
        return options[int(self.rng.integers(len(options)))]

    def real(self, lo=None, hi=None):
        if lo is None:
            return float(self.rng.integers(0, 256, 8, dtype=np.uint8).view(np.float64)[0])
        return float(self.rng.uniform(lo, hi))

    def permutation(self, n):
        return [int(v) for v in self.rng.permutation(n)]


class HypothesisDraw(Draw):
    def __init__(self, draw):
        self.draw = draw

    def int(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def pick(self, options):
        return self.draw(st.sampled_from(list(options)))

    def real(self, lo=None, hi=None):
        if lo is None:
            return self.draw(st.floats(allow_nan=True, allow_infinity=True))
        return self.draw(st.floats(lo, hi))

    def permutation(self, n):
        return list(self.draw(st.permutations(range(n))))


# ============================================================================ rules
@dataclass(frozen=True)
class Ask:
    """What a rule draws a call for: a feature level, the input's rank, a data type per tensor
    of the support table (`types`, the input's first), the support table's key where the
    spec has several (Reduce: its function), and the input's sizes where they are given."""

    level: FL
    rank: int
    types: dict
    key: Any = None
    sizes: tuple | None = None

    @property
    def data_type(self) -> T:
        """The input's data type (the table's first tensor)."""
        return next(iter(self.types.values()))

    def input_sizes(self, d: Draw, top: int | None = None) -> list[int]:
        """The given sizes, or sizes of `rank` axes drawn up to `top` (MAX_SIZE) each."""
        if self.sizes is not None:
            return list(self.sizes)
        return d.ints(self.rank, 1, top or MAX_SIZE[self.rank])

    def input(self, d: Draw, top: int | None = None) -> dml.TensorDesc:
        return dml.TensorDesc(self.data_type, self.input_sizes(d, top))


class Drawn(NamedTuple):
    """A rule's call: the functional form's tensor arguments as TensorDescs (a list of them for
    a list argument) and infer_output's keyword arguments."""

    tensors: list
    attributes: dict


@dataclass(frozen=True)
class Rule:
    """An operator's rule (see the module docstring)."""

    call: Callable[[Draw, Ask], Drawn]
    broken: Callable
    functional: Callable
    fields: tuple[str, ...]
    free: tuple[str, ...] | Callable = ()
    fill: Callable | None = None
    compare: Callable | None = None
    #: Another rule runs the same kernels on every layout (a row of a table whose rows
    #: differ only in a formula: the element-wise operators), or the operator's own tests
    #: cover its shapes and its kernels are compute-bound, slow on a software adapter
    #: (GEMM: tests/test_gemm.py): the layout sweep takes each data type at one rank
    #: (rotating), the fuzz tests a quarter of the examples.
    light: bool = False

    def free_fields(self, key) -> tuple[str, ...]:
        return self.free(key) if callable(self.free) else self.free


#: Every operator's rule, by spec key (filled at the end of this module).
RULES: dict[str, Rule] = {}


def rule(key: str, **parts):
    """Register the decorated function as the `call` of `key`'s rule, with its other parts."""
    def register(call):
        RULES[key] = Rule(call, **parts)
        return call
    return register


# ============================================================================ support tables
def tables(spec) -> dict:
    """The spec's support tables by key: {None: its table}, or its dict of them (Reduce's, by function)."""
    return dict(spec.support) if isinstance(spec.support, dict) else {None: spec.support}


def table_fields(table) -> list[str]:
    return list(table.rows[0].types)


def desc_types(desc, table) -> dict:
    """The data type of each tensor the table names, in `desc` (a list field: its first)."""
    out = {}
    for field in table_fields(table):
        value = getattr(desc, field)
        if value is None:  # an optional tensor left out (GEMM's C)
            continue
        out[field] = (value[0] if isinstance(value, (list, tuple)) else value).data_type
    return out


def row_accepts(row, rank: int, types: dict) -> bool:
    return rank in row.ranks and all(t in row.types[f] for f, t in types.items())


def accepts(table, level, rank: int, types: dict) -> bool:
    """Whether the table's row at `level` takes the rank and these types."""
    if level < table.introduced:
        return False
    return row_accepts(table.row_for(level), rank, types)


def lowest_level(table, rank: int, types: dict):
    """The lowest feature level whose row takes the rank and these types, or None."""
    levels = [lv for lv in FL if accepts(table, lv, rank, types)]
    return min(levels) if levels else None


# ============================================================================ layouts
#: The layouts of the sweep: every input packed; with gaps between its rows; with gaps and
#: some axes broadcast (stride 0); the outputs with gaps (which must keep their bytes).
LAYOUTS = ("packed", "strided_input", "broadcast_input", "strided_output")


def padded_strides(sizes, rng=None, broadcast: bool = False) -> list[int]:
    """Row-major strides of a buffer one element longer on every axis (gaps between rows);
    with `broadcast`, some axes (at least one) get stride 0."""
    strides = list(packed_strides([n + 1 for n in sizes]))
    if broadcast:
        for axis in rng.choice(len(sizes), size=max(1, len(sizes) // 2), replace=False):
            strides[int(axis)] = 0
    return strides


def drawn_strides(d: Draw, sizes, kind: str) -> list[int] | None:
    """Strides of `kind` for a tensor of `sizes`: packed (None), explicit (packed, spelled
    out), padded (gaps after every axis), permuted (axes stored in another order, with
    gaps) or broadcast (padded, some axes of stride 0)."""
    rank = len(sizes)
    if kind == "packed":
        return None
    if kind == "explicit":
        return list(packed_strides(sizes))
    gaps = [d.int(1, 2) if kind != "permuted" else d.int(0, 2) for _ in sizes]
    order = d.permutation(rank) if kind == "permuted" else list(range(rank))
    strides, step = [0] * rank, 1
    for axis in reversed(order):  # order[0] outermost
        strides[axis] = step
        step *= sizes[axis] + gaps[axis]
    if kind == "broadcast":
        for axis in d.subset(rank):
            strides[axis] = 0
    return strides


def _fuzzed_tensor(d: Draw, td: dml.TensorDesc, output: bool) -> dml.TensorDesc:
    """`td` in a random layout: any kind (inputs may broadcast), any stride on a size-1
    axis, and a total size beyond DMLCalcBufferTensorSize (beyond a whole 16-byte block
    too: a kernel storing past the tensor's last block is then inside the binding, not
    dropped by the adapter's bounds checks, and seen)."""
    sizes = list(td.sizes)
    kinds = ["packed", "explicit", "padded", "permuted"] + ([] if output else ["broadcast"])
    strides = drawn_strides(d, sizes, d.pick(kinds))
    if strides is not None:
        for axis, n in enumerate(sizes):  # a size-1 axis never moves: any stride is valid
            if n == 1 and d.bool():
                strides[axis] = d.pick([0, 1, 7, 1000])
    extra = d.pick([0, 0, 0, 1, 3, 4, 8, 13, 32, 61])
    total = calc_buffer_tensor_size(td.data_type, sizes, strides) + extra
    return dml.TensorDesc(td.data_type, sizes, strides, total_tensor_size_in_bytes=total)


def laid_out(desc, d: Draw, layout: str | None):
    """`desc` with its tensors in `layout` (one of LAYOUTS), or each in a random layout (None)."""
    inputs, outputs = tensor_fields(desc)
    for side, fields in (("input", inputs), ("output", outputs)):
        for field, td in fields:
            if layout is None:
                new = _fuzzed_tensor(d, td, output=side == "output")
            else:
                kind = {"strided_input": "padded", "broadcast_input": "broadcast"}.get(layout, "packed") \
                    if side == "input" else ("padded" if layout == "strided_output" else "packed")
                new = dml.TensorDesc(td.data_type, td.sizes, drawn_strides(d, list(td.sizes), kind))
            desc = with_tensor(desc, field, new)
    return desc


def tensor_at(desc, field: str) -> dml.TensorDesc:
    """The tensor a tensor_fields name points at: `field`, or element i of `name[i]`."""
    name, _, index = field.partition("[")
    value = getattr(desc, name)
    return value[int(index[:-1])] if index else value


def with_tensor(desc, field: str, new):
    """`desc` with the tensor at `field` (as tensor_at) replaced by `new`."""
    name, _, index = field.partition("[")
    if not index:
        return dataclasses.replace(desc, **{name: new})
    items = list(getattr(desc, name))
    items[int(index[:-1])] = new
    return dataclasses.replace(desc, **{name: tuple(items)})


# ============================================================================ cases
@dataclass
class Case:
    """A description of `spec`'s operator at `level`, and whether its support table takes it
    (a sweep asks for types the table may not list)."""

    spec: Any
    level: FL
    desc: Any
    accepted: bool = True
    contents: list | None = None  # each input's buffer contents, where a test gives them

    @property
    def rule(self) -> Rule:
        return RULES[self.spec.key]

    def buffers(self, rng) -> list[np.ndarray]:
        """Contents of each input's buffer (its required elements): the given contents, else
        the rule's fill, else the spec's sample."""
        if self.contents is not None:
            return self.contents
        fill = self.rule.fill or (lambda desc, r: self.spec.sample_buffers(desc, r))
        return fill(self.desc, rng)


_ANY = object()


def draw_case(spec, d: Draw, *, level=None, rank=None, data_type=None, key=_ANY, layout=None, sizes=None) -> Case:
    """A case of `spec` drawn through `d`: the table (a key whose table takes the rank and
    type where there are several), the level (one its table knows), a rank its row lists,
    the data types (the input's as given, the rule's free tensors' from the row, the others
    the input's), the rule's call, infer_output, and `layout` (one of LAYOUTS; None: each
    tensor in a random layout)."""
    rule_ = RULES[spec.key]
    options = tables(spec)
    if key is _ANY:
        keys = [k for k, t in options.items() if takes(t, level, rank, data_type)]
        key = d.pick(keys or list(options))
    table = options[key]
    if level is None:
        level = d.pick([lv for lv in FL if lv >= table.introduced])
    row = table.row_for(max(level, table.introduced))
    if rank is None:
        rank = len(sizes) if sizes is not None else d.pick(sorted(row.ranks))
    fields = table_fields(table)
    types = {fields[0]: data_type if data_type is not None else d.pick(sorted(row.types[fields[0]]))}
    free = rule_.free_fields(key)
    for field in fields[1:]:
        types[field] = d.pick(sorted(row.types[field])) if field in free else types[fields[0]]
    drawn = rule_.call(d, Ask(level, rank, types, key, None if sizes is None else tuple(sizes)))
    desc = laid_out(spec.infer_output(*drawn.tensors, **drawn.attributes), d, layout)
    return Case(spec, level, desc, accepts(table, level, rank, desc_types(desc, table)))


def takes(table, level, rank, data_type) -> bool:
    """Whether some row of the table (the one at `level`, where given) takes the rank and the
    input's data type (each where given)."""
    rows = [table.row_for(level)] if level is not None and level >= table.introduced else \
        table.rows if level is None else []
    main = table_fields(table)[0]
    return any((rank is None or rank in row.ranks) and (data_type is None or data_type in row.types[main])
               for row in rows)


def valid_cases(spec):
    """Hypothesis: valid cases of `spec` at any level, row, rank and type its table lists, in random layouts."""
    @st.composite
    def cases(draw):
        return draw_case(spec, HypothesisDraw(draw))
    return cases()


# ============================================================================ running a case
def element_offsets(desc: dml.TensorDesc) -> np.ndarray:
    """Buffer element index of every logical element of `desc`."""
    idx = np.zeros(1, dtype=np.int64)
    for n, s in zip(desc.sizes, desc.effective_strides):
        idx = (idx[:, None] + np.arange(n, dtype=np.int64)[None, :] * s).reshape(-1)
    return idx


def _odd_layout(raw: np.ndarray, how: str) -> np.ndarray:
    """The same elements (C order) as a non-contiguous, read-only, big-endian or 2-D array."""
    if how == "strided":
        wide = np.zeros(raw.size * 2, raw.dtype)
        wide[::2] = raw
        return wide[::2]
    if how == "readonly":
        out = raw.copy()
        out.flags.writeable = False
        return out
    if how == "bigendian":
        return raw.astype(raw.dtype.newbyteorder(">")) if raw.dtype.itemsize > 1 else raw.copy()
    return raw.reshape(1, -1)


def compile_case(device, case: Case, strategy=None, options=None):
    """The case's CompiledOperator under `strategy` (None: the operator's choice) and plan options."""
    return device.compile_operator(device.create_operator(case.desc), strategy, options=options or None)


def run_case(device, case: Case, rng, compiled=None, numpy_layout: str | None = None, what: str = "") -> None:
    """Run `case` (compiled: default the operator's choice) on Tensors in buffers 16-64 bytes
    larger than the desc (a kernel storing past the tensor's last 16-byte block then writes
    inside its binding, where it is seen, rather than being dropped by the adapter's bounds
    checks), filled with random bits past the elements: every output must be within the
    spec's documented precision of the reference (bit-exact where it documents none), no
    byte of an output's buffer but its elements may change, nor any byte of an input's.
    With `numpy_layout`, the same through numpy arrays of that odd layout, which must not
    change."""
    compiled = compiled or compile_case(device, case)
    in_fields, out_fields = tensor_fields(case.desc)
    raws, logical, inputs = [], [], []
    for (_, d), contents in zip(in_fields, case.buffers(rng), strict=True):
        raw = _random_buffer(d, rng)
        raw[:contents.size] = np.asarray(contents).reshape(-1)
        raws.append(raw)
        logical.append(logical_from_raw(raw, d))
        inputs.append(device.tensor(raw, desc=_roomy(d, raw)))
    wants, tolerances = case.spec.expected_outputs(case.desc, logical)
    label = f"{case.spec.name} {compiled.strategy} {what}"
    befores = [_random_buffer(d, rng) for _, d in out_fields]
    outs = [device.tensor(b, desc=_roomy(d, b)) for (_, d), b in zip(out_fields, befores)]
    results = compiled.execute(inputs, outputs=outs)
    assert len(results) == len(outs) and all(r is t for r, t in zip(results, outs))
    for (_, d), out, before, want, tolerance in zip(out_fields, outs, befores, wants, tolerances, strict=True):
        after = out.raw()
        assert_within(logical_from_raw(after, d), want, tolerance, label)
        untouched = np.ones(after.size, dtype=bool)
        untouched[element_offsets(d)] = False
        assert_bits_equal(after[untouched], before[untouched])  # (bytes outside the output)
    for t, raw in zip(inputs, raws):
        assert_bits_equal(t.raw(), raw)  # (an input unchanged)
    if numpy_layout is not None:  # numpy in, numpy out; the arrays must not change
        arrays = [_odd_layout(raw, numpy_layout) for raw in raws]
        copies = [a.copy() for a in arrays]
        for got, want, tolerance in zip(compiled.execute(arrays), wants, tolerances, strict=True):
            assert_within(got, want, tolerance, label)
        for a, c in zip(arrays, copies):
            assert_bits_equal(a, c)


def _random_buffer(desc: dml.TensorDesc, rng) -> np.ndarray:
    """Random bits for a buffer of whole 16-byte blocks, 16-64 bytes past the desc's total size."""
    nbytes = -(-desc.total_tensor_size_in_bytes // 16) * 16 + 16 * int(rng.integers(1, 5))
    return random_bits(rng, desc.data_type.numpy, [nbytes // desc.data_type.size])


def _roomy(desc: dml.TensorDesc, buffer: np.ndarray) -> dml.TensorDesc:
    """The same tensor in a buffer of `buffer`'s size."""
    return dml.TensorDesc(desc.data_type, desc.sizes, desc.strides, total_tensor_size_in_bytes=buffer.nbytes)


def variants(device, case: Case):
    """(strategy, options) for every strategy that can run the case, with its own plan and
    with each option set its planner offers the autotuner (Planner.variants)."""
    op = device.create_operator(case.desc)
    for strategy in device.compile_operator(op).strategies:
        for options in ({},) + tuple(op.spec.planner.variants(case.desc, device.caps, strategy)):
            yield strategy, options


def compile_variant(device, case: Case, strategy: str, options: dict):
    """The case compiled under `strategy` and `options`; None where the description cannot
    take the options (the tuner drops those too)."""
    try:
        return compile_case(device, case, strategy, options)
    except (dml.InvalidArgumentError, dml.UnsupportedError):
        if not options:
            raise
        return None


def run_every_variant(device, case: Case, seed: int = 0) -> set[str]:
    """run_case under every strategy that can run the case, with its own plan and with each
    option set its planner offers the autotuner, on the same inputs (buffers drawn from
    `seed`); the strategies that ran come back."""
    ran = set()
    for strategy, options in variants(device, case):
        compiled = compile_variant(device, case, strategy, options)
        if compiled is not None:
            run_case(device, case, np.random.default_rng(seed), compiled, what=f"{strategy} {options}")
            ran.add(strategy)
    return ran


def run_random_variant(device, case: Case, seed: int, numpy_layout: str | None) -> str:
    """Run `case` under one of its eligible strategies (picked by `seed`), with its own plan
    or one of the option sets its planner offers the autotuner (one the description cannot
    take is the tuner's to drop, and is dropped here too); the variant's name comes back."""
    rng = np.random.default_rng(seed)
    offered = list(variants(device, case))
    strategy, options = offered[seed % len(offered)]
    compiled = compile_variant(device, case, strategy, options)
    if compiled is None:
        options, compiled = {}, compile_case(device, case, strategy)
    assert compiled.strategy == strategy and compiled.options == options
    run_case(device, case, rng, compiled, numpy_layout)
    return tuning.variant_name(strategy, options)


def assert_outputs_equal(got, want) -> None:
    """Bit-exact, output by output where an operator has several (`want` a list)."""
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (type(got), len(want))
        for g, w in zip(got, want):
            assert_bits_equal(g, w)
    else:
        assert_bits_equal(got, want)


# ============================================================================ limits forced low
SMALL_BINDING, SMALL_BUFFER = 256, 2048
_LIMITED: dict = {}


def limited(adapter: str, level=None, binding=SMALL_BINDING, buffer=None) -> dml.Device:
    """The process's Device on `adapter` at `level` with bindings of `binding` bytes and
    buffers of `buffer` bytes at most (Device(max_binding_bytes=, max_buffer_bytes=))."""
    key = (adapter, level, binding, buffer)
    if key not in _LIMITED:
        _LIMITED[key] = dml.Device(level, adapter, max_binding_bytes=binding, max_buffer_bytes=buffer)
    return _LIMITED[key]


def segments_of(compiled) -> dict:
    """(role, index) -> the most segments any kernel binds it as."""
    out: dict = {}
    for k in compiled.program.kernels:
        for b in k.buffers:
            out[b.key] = max(out.get(b.key, 1), b.segments)
    return out


# ============================================================================ the desc API of a call
def desc_of_call(spec, *args, **kwargs):
    """(the desc a functional call runs, its input arrays in the desc's order): the spec's
    functional form's Call, its tensors as numpy arrays, infer_output."""
    call = spec.functional(*args, **kwargs)
    flat, counts = flat_tensors(spec, call.tensors)
    arrays = [np.asarray(item[2](item[1]) if len(item) > 2 else item[1]) for item in flat]
    descs = [dml.TensorDesc(T.from_numpy(a.dtype), a.shape) for a in arrays]
    return spec.infer_output(*per_argument(descs, counts), **call.attributes), arrays


# ============================================================================ hostile descriptions and calls
def replace_fields(desc, **changes):
    return lambda: dataclasses.replace(desc, **changes)


def with_entry(values, i, value):
    values = list(values)
    values[i] = value
    return values


def broken_choice(draw, desc, choices: dict, output_sizes=None):
    """(builder, fragment, kind): one of `choices` ({kind: (field, value)}: the field set to
    the value), or (where `output_sizes` are given) "output_size": the output's sizes set
    to them."""
    kind = draw(st.sampled_from(sorted(choices) + ([] if output_sizes is None else ["output_size"])))
    if kind == "output_size":
        out = desc.output_tensor
        return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, output_sizes)), \
            "output_tensor.sizes", kind
    name, value = choices[kind]
    return replace_fields(desc, **{name: value}), name, kind


def one_more(td: dml.TensorDesc, axis: int, more: int = 1) -> dml.TensorDesc:
    """A packed tensor of td's type with `more` more elements on `axis`."""
    return dml.TensorDesc(td.data_type, with_entry(td.sizes, axis, td.sizes[axis] + more))


def _td(desc: dml.TensorDesc, **changes) -> dml.TensorDesc:
    fields = {"data_type": desc.data_type, "sizes": desc.sizes, "strides": desc.strides,
              "total_tensor_size_in_bytes": None, "flags": desc.flags,
              "guaranteed_base_offset_alignment": desc.guaranteed_base_offset_alignment}
    fields.update(changes)
    return dml.TensorDesc(fields.pop("data_type"), fields.pop("sizes"), fields.pop("strides"), **fields)


@st.composite
def broken_tensor(draw, desc, field: str):
    """(a function building the desc with tensor `field` broken, fragment the message names,
    kind); `field` is a tensor_fields name (`input_tensors[1]` for an element of a list)."""
    td: dml.TensorDesc = tensor_at(desc, field)
    rank, sizes = td.rank, list(td.sizes)
    axis = draw(st.integers(0, rank - 1))
    kinds = ["size0", "size_negative", "size_huge", "count_overflow", "rank0", "rank9", "rank_mismatch",
             "strides_length", "stride_negative", "stride_huge", "span_overflow", "total_small", "flags", "alignment",
             "not_a_desc"]
    if field.startswith(OUTPUT_FIELDS) and any(n > 1 for n in sizes):
        kinds.append("aliasing")
    kind = draw(st.sampled_from(kinds))
    if kind == "size0":
        new = lambda: _td(td, sizes=sizes[:axis] + [0] + sizes[axis + 1:])  # noqa: E731
    elif kind == "size_negative":
        new = lambda: _td(td, sizes=sizes[:axis] + [-draw(st.integers(1, 2**40))] + sizes[axis + 1:])  # noqa: E731
    elif kind == "size_huge":
        huge = draw(st.sampled_from([2**32, 2**40, 2**64, 10**30]))
        new = lambda: _td(td, sizes=sizes[:axis] + [huge] + sizes[axis + 1:], strides=None)  # noqa: E731
    elif kind == "count_overflow":  # every size fits 32 bits, the product does not
        big = [2**16 + 1] * max(rank, 2) if rank >= 2 else [2**33]
        new = lambda: _td(td, sizes=big[:rank] if rank >= 2 else big, strides=None)  # noqa: E731
    elif kind == "rank0":
        new = lambda: _td(td, sizes=[], strides=None)  # noqa: E731
    elif kind == "rank9":
        new = lambda: _td(td, sizes=[1] * 9, strides=None)  # noqa: E731
    elif kind == "rank_mismatch":  # one more or one fewer axis than the other tensors
        changed = sizes + [1] if rank == 1 or draw(st.booleans()) else sizes[:-1]
        new = lambda: _td(td, sizes=changed, strides=None)  # noqa: E731
    elif kind == "strides_length":
        new = lambda: _td(td, strides=list(packed_strides(sizes)) + [1])  # noqa: E731
    elif kind == "stride_negative":
        strides = list(packed_strides(sizes))
        strides[axis] = -draw(st.integers(1, 100))
        new = lambda: _td(td, strides=strides)  # noqa: E731
    elif kind == "stride_huge":
        strides = list(packed_strides(sizes))
        strides[axis] = draw(st.sampled_from([2**32, 2**33 + 1, 2**63]))
        new = lambda: _td(td, strides=strides)  # noqa: E731
    elif kind == "span_overflow":  # each stride fits 32 bits, sum((n - 1) * stride) does not
        grown = [max(sizes[0], 3)] + sizes[1:]
        stride = draw(st.sampled_from([2**31, 2**32 - 1, 3 * 2**30]))
        new = lambda: _td(td, sizes=grown, strides=[stride] * rank)  # noqa: E731
    elif kind == "total_small":
        minimum = calc_buffer_tensor_size(td.data_type, td.sizes, td.strides)
        total = draw(st.sampled_from([minimum - 1, minimum // 2, 0, -4]))
        new = lambda: _td(td, total_tensor_size_in_bytes=total)  # noqa: E731
    elif kind == "flags":
        new = lambda: _td(td, flags=draw(st.sampled_from([2, 4, 0x80, 0x3])))  # noqa: E731
    elif kind == "alignment":
        new = lambda: _td(td, guaranteed_base_offset_alignment=draw(st.sampled_from([1, 3, 8, 24, 100])))  # noqa: E731
    elif kind == "not_a_desc":  # (None is no tensor, which an optional one may be)
        optional = field in getattr(type(desc), "OPTIONAL_TENSORS", ())
        value = draw(st.sampled_from(([] if optional else [None]) + [3, "FLOAT32", [1, 2], np.zeros(3)]))
        new = lambda: value  # noqa: E731
    else:  # aliasing
        strides = list(td.effective_strides)
        strides[draw(st.sampled_from([i for i, n in enumerate(sizes) if n > 1]))] = 0
        new = lambda: _td(td, strides=strides)  # noqa: E731
    built = new()  # draws happen here, not inside the raises block
    return (lambda: with_tensor(desc, field, built)), f"{field}", kind


@st.composite
def hostile_inputs(draw, device, case: Case):
    """(inputs list, fragment) for CompiledOperator.execute with one input broken."""
    in_fields, _ = tensor_fields(case.desc)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    good = [random_bits(rng, d.data_type.numpy, [d.required_elements]) for _, d in in_fields]
    i = draw(st.integers(0, len(good) - 1))
    field, d = in_fields[i]
    other = T.FLOAT64 if d.data_type != T.FLOAT64 else T.INT8
    kind = draw(st.sampled_from(["count_more", "count_fewer", "not_a_list", "none", "list", "scalar",
                                 "wrong_dtype", "too_short", "tensor_wrong_dtype", "tensor_too_small",
                                 "tensor_freed", "bool_array"]))
    inputs = list(good)
    if kind == "count_more":
        return inputs + [good[0]], "inputs"
    if kind == "count_fewer":
        return inputs[:-1], "inputs"
    if kind == "not_a_list":
        return draw(st.sampled_from([good[0], None, 3, "x", {"a": 1}])), "inputs must be a list"
    if kind == "none":
        inputs[i] = None
    elif kind == "list":
        inputs[i] = good[i].tolist()
    elif kind == "scalar":
        inputs[i] = good[i].reshape(-1)[0]
        if d.required_elements == 1:  # a numpy scalar holding the one element is fine
            inputs[i] = 7
    elif kind == "wrong_dtype":
        inputs[i] = np.zeros(d.required_elements, other.numpy)
    elif kind == "too_short":
        inputs[i] = good[i][:-1] if d.required_elements > 1 else good[i][:0]
    elif kind == "bool_array":
        inputs[i] = np.zeros(d.required_elements, bool)
    elif kind == "tensor_wrong_dtype":
        inputs[i] = device.tensor(np.zeros(d.required_elements, other.numpy))
    elif kind == "tensor_too_small":
        small = dml.TensorDesc(d.data_type, [1])
        if small.buffer_bytes >= d.buffer_bytes:  # nothing smaller exists: break it otherwise
            inputs[i] = None
        else:
            inputs[i] = device.tensor(np.zeros(1, d.data_type.numpy), desc=small)
    elif kind == "tensor_freed":
        t = device.tensor(good[i], desc=d)
        t.free()
        inputs[i] = t
    return inputs, field


def hostile_arrays():
    """Objects that are not DirectML tensors: each must give InvalidArgumentError."""
    return st.sampled_from([
        None, 3, 2.5, "abc", b"\x00\x01", [1.0, 2.0], (1, 2), {"a": 1}, object(),
        np.float32(1.5), np.array(2.0, np.float32), np.zeros((0,), np.float32), np.zeros((3, 0, 2), np.int8),
        np.zeros([1] * 9, np.float32), np.array([True, False]), np.array([1 + 2j]), np.array(["a", "b"]),
        np.array([None, 1], dtype=object), np.array(["2020-01-01"], dtype="datetime64[D]"),
        np.zeros(3, dtype=[("a", np.int32), ("b", np.float32)]), np.zeros(4, np.float128) if hasattr(np, "float128")
        else np.zeros(4, np.complex64), np.zeros(4, np.uint8).view(np.void),
    ])


@st.composite
def odd_arrays(draw):
    """A valid input with an odd memory layout (non-contiguous, read-only, big-endian, Fortran)."""
    data_type = draw(st.sampled_from(ALL_TYPES))
    rank = draw(st.integers(1, 4))
    shape = [draw(st.integers(1, {1: 40, 2: 9, 3: 5, 4: 4}[rank])) for _ in range(rank)]
    x = random_bits(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), data_type.numpy, shape)
    how = draw(st.sampled_from(["plain", "strided", "readonly", "bigendian", "fortran", "reversed"]))
    if how == "strided":
        wide = np.zeros([2 * n for n in shape], x.dtype)
        wide[tuple(slice(None, None, 2) for _ in shape)] = x
        x = wide[tuple(slice(None, None, 2) for _ in shape)]
    elif how == "readonly":
        x.flags.writeable = False
    elif how == "bigendian":
        x = x.astype(x.dtype.newbyteorder(">"))
    elif how == "fortran":
        x = np.asfortranarray(x)
    elif how == "reversed":
        x = x[::-1]
    return x


def maybe_hostile(draw, good):
    """`good` most of the time, else a hostile replacement for an argument."""
    hostile = st.sampled_from([None, "1", 1.5, [1.5], [None], [[1]], {"a": 1}, -1, [-1], [2**70], [True],
                               np.array([0.5]), object()])
    return draw(st.one_of(st.just(good), hostile)) if draw(st.integers(0, 3)) == 0 else good


#: Values that are not integers, for fields that must hold integers.
NOT_INTEGERS = st.sampled_from([0.5, "1", None, 1j, True])


def pick_axis(draw, desc) -> tuple[int, int, object]:
    """(the input's rank, a random axis, a random non-integer) for breaking a field."""
    rank = desc.input_tensor.rank
    return rank, draw(st.integers(0, rank - 1)), draw(NOT_INTEGERS)


#: The ways broken_reduced_axes breaks a reducing operator's desc.
REDUCED_AXES_KINDS = ("axes_empty", "axis_out", "axis_negative", "axes_repeat", "axes_type", "reduced_size",
                      "kept_size")


def broken_reduced_axes(draw, desc, kind: str):
    """(builder, fragment the message names) with the axes or the output sizes of a reducing
    operator's desc (fields input_tensor, output_tensor, axes: Reduce, ArgMax, ArgMin) broken
    in the way `kind` (one of REDUCED_AXES_KINDS) says."""
    rank, out = desc.input_tensor.rank, desc.output_tensor
    if kind == "axes_empty":
        return replace_fields(desc, axes=[]), "axes"
    if kind == "axis_out":
        return replace_fields(desc, axes=list(desc.axes) + [rank + draw(st.integers(0, 3))]), "axes"
    if kind == "axis_negative":
        return replace_fields(desc, axes=[-1]), "axes"
    if kind == "axes_repeat":
        return replace_fields(desc, axes=list(desc.axes) + [desc.axes[0]]), "axes"
    if kind == "axes_type":
        return replace_fields(desc, axes=draw(st.sampled_from([None, 0.0, "0", [0.5]]))), "axes"
    if kind == "reduced_size":
        sizes = with_entry(out.sizes, desc.axes[0], 2)
        return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, sizes)), "output_tensor.sizes"
    kept = [a for a in range(rank) if a not in desc.axes]
    if not kept:
        return replace_fields(desc, axes=[rank]), "axes"
    a = draw(st.sampled_from(kept))
    sizes = with_entry(out.sizes, a, desc.input_tensor.sizes[a] + 1)
    return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, sizes)), "output_tensor.sizes"


@st.composite
def broken_parts(draw, desc, whole: str, parts: str, count: str):
    """(builder, fragment, kind) with one field of a JOIN- or SPLIT-shaped desc broken: its
    `axis`, its list of tensors `parts` (empty: the page's `count` is 0; not a list), or the
    tensor `whole` (its data type, or one more element on the axis or on another one)."""
    w = getattr(desc, whole)
    rank, axis = w.rank, desc.axis
    kind = draw(st.sampled_from(["axis", "empty", "not_a_list", "sum", "other_axis", "data_type"]))
    if kind == "axis":
        value = draw(st.sampled_from([rank, rank + 3, -1, 2**32, "1", None]))
        return replace_fields(desc, axis=value), "axis", kind
    if kind == "empty":
        return replace_fields(desc, **{parts: ()}), count, kind
    if kind == "not_a_list":
        return replace_fields(desc, **{parts: getattr(desc, parts)[0]}), parts, kind
    if kind == "data_type":
        other = T.INT8 if w.data_type != T.INT8 else T.UINT8
        return replace_fields(desc, **{whole: dml.TensorDesc(other, w.sizes)}), "data_type", kind
    d = axis if kind == "sum" or rank == 1 else draw(st.sampled_from([i for i in range(rank) if i != axis]))
    return replace_fields(desc, **{whole: dml.TensorDesc(w.data_type, with_entry(w.sizes, d, w.sizes[d] + 1))}), \
        f"{whole}.sizes", kind


# ============================================================================ the stored pages
DATA = Path(__file__).resolve().parent / "data"
SEEDS_DIR, PAGES_DIR = DATA / "seeds", DATA / "pages"
#: A printed tensor: `Label: (Sizes:{1, 2}, DataType:FLOAT32)` and its nested brackets.
_PRINTED = re.compile(r"(\w+(?:\[\d+\])?): \(Sizes:\{([\d, ]+)\}, DataType:(\w+)\)\s*\n\s*(\[[\d\s,.\[\]-]*\])")
#: A value printed inline: `argmax({3,2,1,2,3}) = 0`.
_INLINE = re.compile(r"\w+\(\{([\d\s,.-]+)\}\) = (-?\d+(?:\.\d+)?)")
_LEVEL = re.compile(r"DML_FEATURE_LEVEL_(\d)_(\d)")
_TYPE_NAME = re.compile(r"\b(?:FLOAT|U?INT)(?:8|16|32|64)\b")
_TENSOR_NAME = re.compile(r"^[|\s]*([A-Z][A-Za-z]*Tensors?)\b(?!:)")


def page_text(name: str) -> str:
    """A stored page: tests/data/pages/NAME, else tests/data/seeds/NAME."""
    path = PAGES_DIR / name
    return (path if path.is_file() else SEEDS_DIR / name).read_text(encoding="utf-8")


def page_blocks(text: str, marker: str) -> list[list[float]]:
    """The numbers of each bracketed block that follows `marker` on a page, with `//`
    comments removed (the pages' typos are in punctuation/comments only)."""
    blocks = []
    for m in re.finditer(re.escape(marker), text):
        rest = text[m.end():]
        start = rest.index("[")
        depth, stop = 0, start
        for stop, ch in enumerate(rest[start:], start):  # noqa: B007 (used after the loop)
            depth += {"[": 1, "]": -1}.get(ch, 0)
            if depth == 0:
                break
        body = re.sub(r"//[^\n]*", "", rest[start:stop + 1])
        blocks.append([float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", body)])
    return blocks


def page_arrays(text: str, field: str) -> list[list[int]]:
    """Each `{...}` list a page's examples give the field (`Offsets = {0, 0, 1, 2}`,
    `StartPadding: {0, 0, 1, 2}`), in page order."""
    found = re.findall(rf"^{re.escape(field)}\s*[=:]\s*\{{([^}}]*)\}}", text, re.M)
    return [[int(v) for v in item.split(",")] for item in found]


def printed_tensors(text: str) -> set[tuple]:
    """(sizes, data type name, values) of every tensor the page's examples print; of a call
    printed inline (`argmax({3,2,1,2,3}) = 0`), its argument and result with neither sizes
    nor data type (None)."""
    numbers = lambda body: tuple(float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", body))  # noqa: E731
    printed = {(tuple(int(v) for v in sizes.split(",")), data_type, numbers(body))
               for _, sizes, data_type, body in _PRINTED.findall(re.sub(r"//[^\n]*", "", text))}
    for argument, result in _INLINE.findall(text):
        printed |= {(None, None, numbers(argument)), (None, None, numbers(result))}
    return printed


def is_printed(array: np.ndarray, printed: set[tuple]) -> bool:
    """Whether the page prints the array: as a tensor of its sizes, type and values, or inline (its values)."""
    sizes, data_type, values = as_printed(array)
    return (sizes, data_type, values) in printed or (None, None, values) in printed


def as_printed(array: np.ndarray) -> tuple:
    """(sizes, data type name, values) of an array, as a page prints a tensor."""
    return tuple(array.shape), T.from_numpy(array.dtype).name, tuple(float(v) for v in array.reshape(-1))


def _listed(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def example_arrays(example) -> list[np.ndarray]:
    """Every array of an example: its inputs, its array arguments, its expected outputs."""
    return [*_listed(example.input), *[v for v in example.args.values() if isinstance(v, np.ndarray)],
            *_listed(example.expected)]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def page_tables(text: str) -> list[tuple[str, dict]]:
    """The page's "Tensor support" tables in any of the stored pages' languages and forms
    (markdown, or text copied from the rendered page): a list of groups (Reduce's pages
    hold one per group of functions), each (its heading, {level: {tensor field: (ranks,
    types)}}). A row is a line naming a tensor and its data types, its dimension counts
    between them; it belongs to the level the last line naming a feature level names (a
    page with a single table: its Availability sentence's). A group ends where a level
    comes that is not below the one before it."""
    groups: list[tuple[str, dict]] = []
    level, previous = None, ""
    for line in text.splitlines():
        types = _TYPE_NAME.findall(line)
        name = _TENSOR_NAME.search(line)
        found = _LEVEL.search(line)
        if types and name and level is not None:
            head = re.sub(r"\{[^}]*\}", "", line[name.end():_TYPE_NAME.search(line).start()])  # not the sizes' digits
            dims = [int(v) for v in re.findall(r"\d+", head)]
            ranks = frozenset(range(dims[0], dims[-1] + 1))
            groups[-1][1].setdefault(level, {})[_snake(name.group(1))] = (ranks, frozenset(T[t] for t in types))
        elif found:
            new = FL[f"FL_{found.group(1)}_{found.group(2)}"]
            if level is None or new >= level:
                groups.append((previous, {}))  # the line before it heads the group
            level = new
        elif line.strip():
            previous = line.strip()
    return [(h, rows) for h, rows in groups if rows]


def table_rows(table) -> dict:
    """A SupportTable in page_tables' terms: {level: {field: (ranks, types)}}."""
    return {row.level: {field: (row.ranks, frozenset(types)) for field, types in row.types.items()}
            for row in table.rows}


def page_of(spec) -> str:
    """The stored page the spec's examples are transcribed from; for a spec without
    examples, its page's (spec.page's) file under tests/data/pages."""
    sources = {e.source for e in spec.examples}
    assert len(sources) <= 1, (spec.key, sources)
    return sources.pop() if sources else f"ns-directml-{spec.page.lower()}.md"


# ============================================================================ random graphs
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


def consumer_specs() -> tuple:
    """The operators that read their first input through a chain (Reduce, ArgMax, ArgMin,
    the scans)."""
    return tuple(s for s in SPECS if s.planner.prologue)


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
    outputs to compile. `nodes[expr]` is the
    (spec, desc, the Expression it reads, the values of its other tensors) of each node."""

    def __init__(self, device, rng: np.random.Generator, nodes: int):
        self.rng, self.d = rng, RandomDraw(rng)
        # The element-wise rows are drawn from a generator of their own, so that the chains
        # the main one draws stay what they were.
        self.mix = np.random.default_rng(rng.bit_generator.seed_seq.spawn(1)[0])
        self.g = dml.Graph(device)
        self.feed, self.nodes, self.consumed = {}, {}, []
        data_type = T(rng.choice(sorted(T)))
        rank = int(rng.integers(1, 9))
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
        spec = specs[int(rng.integers(len(specs)))]
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


def run_random_graph(device, seed: int, nodes: int):
    """A random graph compiled fused and node by node: the values it outputs fused equal
    the unfused ones bit for bit; a consumer's, the reference on its (unfused) input within
    the spec's documented precision; the fused graph dispatches no more kernels. Returns
    (the graph, its fused compilation)."""
    graph = RandomGraph(device, np.random.default_rng(seed), nodes)
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


# ============================================================================ the rules
def _sizes_split(d: Draw, ask: Ask):
    """(input sizes, start, end) for an operator that grows each axis: the output's sizes
    drawn (MAX_SIZE) and split into input and paddings (a padding may exceed the input
    size); for given input sizes, paddings of up to 3."""
    if ask.sizes is not None:
        return list(ask.sizes), d.ints(ask.rank, 0, 3), d.ints(ask.rank, 0, 3)
    in_sizes, start, end = [], [], []
    for m in d.ints(ask.rank, 1, MAX_SIZE[ask.rank]):
        n = d.int(1, m)
        s = d.int(0, m - n)
        in_sizes.append(n)
        start.append(s)
        end.append(m - n - s)
    return in_sizes, start, end


def _modes(level) -> list:
    return [m for m in dml.PaddingMode if padding_op.MODE_INTRODUCED[m] <= level]


# ---------------------------------------------------------------------------- Slice1
@st.composite
def _slice1_broken(draw, desc):
    rank, i, not_int = pick_axis(draw, desc)
    n = desc.input_tensor.sizes[i]
    off, size = desc.input_window_offsets[i], desc.input_window_sizes[i]
    choices = {
        "offset_past_end": ("input_window_offsets", with_entry(desc.input_window_offsets, i, n)),
        "offset_negative": ("input_window_offsets", with_entry(desc.input_window_offsets, i, -1)),
        "offset_huge": ("input_window_offsets", with_entry(desc.input_window_offsets, i, 2**40)),
        "window_empty": ("input_window_sizes", with_entry(desc.input_window_sizes, i, 0)),
        "window_too_long": ("input_window_sizes", with_entry(desc.input_window_sizes, i, n - off + 1)),
        "stride_zero": ("input_window_strides", with_entry(desc.input_window_strides, i, 0)),
        "stride_int32": ("input_window_strides",
                         with_entry(desc.input_window_strides, i, draw(st.sampled_from([2**31, -2**31 - 1])))),
        "length": ("input_window_offsets", list(desc.input_window_offsets) + [0]),
        "not_int": ("input_window_sizes", with_entry(desc.input_window_sizes, i, not_int)),
        "not_a_list": ("input_window_strides", draw(st.sampled_from([None, 3, "1,1"]))),
    }
    return broken_choice(draw, desc, choices, with_entry(desc.output_tensor.sizes, i, max_output_size(
        size, desc.input_window_strides[i]) + 1))


@st.composite
def _slice1_functional(draw, x, shape):
    offsets = [draw(st.integers(0, n - 1)) for n in shape]
    sizes = [draw(st.integers(1, n - o)) for n, o in zip(shape, offsets)]
    strides = [draw(st.sampled_from([1, 2, -1, -3])) for _ in shape]
    args = {"offsets": maybe_hostile(draw, offsets), "sizes": maybe_hostile(draw, sizes),
            "strides": maybe_hostile(draw, strides)}
    return args, lambda a: reference.slice(a, args["offsets"], args["sizes"], args["strides"])


@rule("slice1", broken=_slice1_broken, functional=_slice1_functional,
      fields=("x", "input_tensor", "offsets", "sizes", "strides", "output_sizes", "input_window", "output_tensor",
              "device"))
def slice1_call(d: Draw, ask: Ask) -> Drawn:
    """A window of each axis (offset, size), a step of either sign (small, or up to the
    window), an output size up to what the window holds."""
    x = ask.input(d)
    offsets, sizes, strides, out_sizes = [], [], [], []
    for n in x.sizes:
        offset = d.int(0, n - 1)
        size = d.int(1, n - offset)
        step = (d.int(1, 3) if d.bool() else d.int(1, size + 1)) * d.pick([1, -1])
        offsets.append(offset)
        sizes.append(size)
        strides.append(step)
        out_sizes.append(d.int(1, max_output_size(size, step)))
    return Drawn([x], {"offsets": offsets, "sizes": sizes, "strides": strides, "output_sizes": out_sizes})


# ---------------------------------------------------------------------------- Padding
def _padding_value(d: Draw, data_type: T):
    """A value of DML_PADDING's FLOAT field for `data_type`: any real for a float type; for
    an integer type one whose truncation is in range."""
    how = d.int(0, 2)
    if data_type.is_float:
        return [d.real, lambda: d.int(-70000, 70000),
                lambda: d.pick([0.0, -0.0, 65504.0, 65520.0, 1e300, -1e-300])][how]()
    info = np.iinfo(data_type.numpy)
    limit = 2.0**62 if data_type.size == 8 else float(info.max)
    low = -0.99 if info.min == 0 else -limit
    edges = [int(info.min), int(info.max), 10.6, -0.0] + ([-10.6] if info.min < 0 else [])
    return [lambda: d.int(int(info.min), int(info.max)), lambda: d.real(low, limit), lambda: d.pick(edges)][how]()


@st.composite
def _padding_broken(draw, desc):
    rank, i, not_int = pick_axis(draw, desc)
    dt = desc.input_tensor.data_type
    kinds = ["start_negative", "end_huge", "output_size", "length", "not_int", "mode", "value_type"]
    if not dt.is_float:
        kinds.append("value_for_integers")
    kind = draw(st.sampled_from(kinds))
    if kind == "start_negative":
        return replace_fields(desc, start_padding=with_entry(desc.start_padding, i, -1)), "start_padding", kind
    if kind == "end_huge":
        return replace_fields(desc, end_padding=with_entry(desc.end_padding, i, 2**32)), "end_padding", kind
    if kind == "output_size":
        out = with_entry(desc.output_tensor.sizes, i, desc.output_tensor.sizes[i] + draw(st.sampled_from([1, -1])))
        if out[i] < 1:
            out[i] = desc.output_tensor.sizes[i] + 1
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out)), "output_tensor.sizes", kind
    if kind == "length":
        return replace_fields(desc, end_padding=list(desc.end_padding)[:-1]), "end_padding", kind
    if kind == "not_int":
        return replace_fields(desc, start_padding=with_entry(desc.start_padding, i, not_int)), "start_padding", kind
    if kind == "mode":
        bad = draw(st.sampled_from([5, -1, "mirror", None, 1.5]))  # 4 and "wrap" are WRAP from FL_6_4 on
        return replace_fields(desc, padding_mode=bad), "padding_mode", kind
    if kind == "value_type":
        value = draw(st.sampled_from(["0", None, 1j, True, [0.0], np.zeros(1)]))
        return replace_fields(desc, padding_value=value), "padding_value", kind
    info = np.iinfo(dt.numpy)
    value = draw(st.sampled_from([float("nan"), float("inf"), -float("inf"), int(info.max) + 1,
                                  int(info.min) - 1, 1e30, -1e30, 2.0**64]))
    return replace_fields(desc, padding_mode=dml.PaddingMode.CONSTANT, padding_value=value), "padding_value", kind


@st.composite
def _padding_functional(draw, x, shape):
    rank = len(shape)
    start, end = [draw(st.integers(0, 3)) for _ in shape], [draw(st.integers(0, 3)) for _ in range(rank)]
    mode = draw(st.sampled_from(["constant", "edge", "reflection", "symmetric", "CONSTANT", dml.PaddingMode.EDGE]))
    value = draw(st.sampled_from([0.0, 7, -3.5, float("nan"), float("inf"), 300, 2**64, -0.0]))
    args = {"start_padding": maybe_hostile(draw, start), "end_padding": maybe_hostile(draw, end),
            "mode": maybe_hostile(draw, mode), "value": value}
    return args, lambda a: reference.pad(a, args["start_padding"], args["end_padding"], args["mode"],
                                             args["value"])


@rule("padding", broken=_padding_broken, functional=_padding_functional,
      fields=("x", "input_tensor", "start_padding", "end_padding", "mode", "value", "padding_value", "output_tensor",
              "device"))
def padding_call(d: Draw, ask: Ask) -> Drawn:
    """Paddings (past the axis too: REFLECTION and SYMMETRIC fold periodically), a mode the
    level has, a value (any the type takes for CONSTANT; ignored by the others)."""
    in_sizes, start, end = _sizes_split(d, ask)
    mode = d.pick(_modes(ask.level))
    value = _padding_value(d, ask.data_type) if mode == dml.PaddingMode.CONSTANT else d.pick([0.0, 5.0, math.nan])
    return Drawn([dml.TensorDesc(ask.data_type, in_sizes)], {"start_padding": start, "end_padding": end,
                                                            "mode": mode, "value": value})


# ---------------------------------------------------------------------------- ReverseSubsequences
def _reverse_fill(desc, rng) -> list:
    """Random input bits; lengths mostly 0 to n + 2, some far beyond the axis (they clamp to
    it): near 2^32 and 2^31, and for UINT64 with high words (2^32, 2^63, 2^64 - 1)."""
    lengths = desc.sequence_lengths_tensor
    n, count = desc.input_tensor.sizes[desc.axis], lengths.required_elements
    values = rng.integers(0, n + 3, size=count).astype(np.uint64)
    huge = [2**31, 2**32 - 2, 2**32 - 1] + ([2**32, 2**32 + 1, 2**63, 2**64 - 1] if lengths.data_type.size == 8 else [])
    far = rng.random(count) < 0.1
    values[far] = np.array(huge, np.uint64)[rng.integers(0, len(huge), int(far.sum()))]
    return [random_bits(rng, desc.input_tensor.data_type.numpy, [desc.input_tensor.required_elements]),
            values.astype(lengths.data_type.numpy)]


@st.composite
def _reverse_broken(draw, desc):
    rank, i, _ = pick_axis(draw, desc)
    lengths = desc.sequence_lengths_tensor
    kind = draw(st.sampled_from(["axis_out", "axis_negative", "axis_type", "lengths_size", "lengths_type",
                                 "output_size"]))
    if kind == "axis_out":
        return replace_fields(desc, axis=rank + draw(st.integers(0, 5))), "axis", kind
    if kind == "axis_negative":
        return replace_fields(desc, axis=-draw(st.integers(1, 9))), "axis", kind
    if kind == "axis_type":
        return replace_fields(desc, axis=draw(st.sampled_from([0.0, "0", None, [0]]))), "axis", kind
    if kind == "lengths_size":
        return replace_fields(desc, sequence_lengths_tensor=one_more(lengths, i)), "sequence_lengths_tensor.sizes", kind
    if kind == "lengths_type":
        dt = draw(st.sampled_from([T.FLOAT32, T.INT32, T.UINT16, T.INT64, T.UINT8]))
        return replace_fields(desc, sequence_lengths_tensor=dml.TensorDesc(dt, lengths.sizes)), \
            "sequence_lengths_tensor.data_type", kind
    return replace_fields(desc, output_tensor=one_more(desc.output_tensor, i)), "output_tensor.sizes", kind


@st.composite
def _reverse_functional(draw, x, shape):
    rank = len(shape)
    axis = draw(st.integers(0, rank - 1))
    lengths_shape = [1 if i == axis else n for i, n in enumerate(shape)]
    lengths = np.random.default_rng(draw(st.integers(0, 999))).integers(0, shape[axis] + 2, size=lengths_shape)
    lengths = lengths.astype(draw(st.sampled_from([np.uint32, np.int64, np.uint8, np.uint64, np.int16])))
    hostile = st.sampled_from([lengths.astype(np.float32), -lengths - 1, lengths.tolist(), None, 3,
                               np.zeros([n + 1 for n in lengths_shape], np.uint32), "1"])
    lengths_arg = draw(st.one_of(st.just(lengths), hostile)) if draw(st.integers(0, 3)) == 0 else lengths
    args = {"sequence_lengths": lengths_arg, "axis": maybe_hostile(draw, axis)}
    return args, lambda a: reference.reverse_subsequences(a, np.asarray(args["sequence_lengths"]), args["axis"])


@rule("reverse_subsequences", broken=_reverse_broken, functional=_reverse_functional, fill=_reverse_fill,
      free=("sequence_lengths_tensor",), fields=("x", "input_tensor", "sequence_lengths", "axis", "device"))
def reverse_subsequences_call(d: Draw, ask: Ask) -> Drawn:
    """Any axis; the lengths tensor of the table's lengths type, size 1 on the axis."""
    x = ask.input(d)
    axis = d.int(0, ask.rank - 1)
    lengths = dml.TensorDesc(ask.types["sequence_lengths_tensor"], with_entry(x.sizes, axis, 1))
    return Drawn([x, lengths], {"axis": axis})


# ---------------------------------------------------------------------------- Reduce
@st.composite
def _reduce_broken(draw, desc):
    function, out = desc.function, desc.output_tensor
    kind = draw(st.sampled_from(REDUCED_AXES_KINDS + ("output_type", "input_float64", "function")))
    if kind in REDUCED_AXES_KINDS:
        return *broken_reduced_axes(draw, desc, kind), kind
    if kind == "output_type":
        if function in reduce_op.ARG_FUNCTIONS:
            dt = draw(st.sampled_from([T.FLOAT32, T.FLOAT16, T.INT16, T.UINT8]))
        else:
            dt = draw(st.sampled_from([t for t in T if t != desc.input_tensor.data_type]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
    if kind == "input_float64":
        new_out = out if function in reduce_op.ARG_FUNCTIONS else dml.TensorDesc(T.FLOAT64, out.sizes)
        return replace_fields(desc, input_tensor=dml.TensorDesc(T.FLOAT64, desc.input_tensor.sizes),
                              output_tensor=new_out), "input_tensor.data_type", kind
    return replace_fields(desc, function=draw(st.sampled_from([12, -1, "median", None]))), "function", kind


@st.composite
def _reduce_functional(draw, x, shape):
    rank = len(shape)
    function = draw(st.sampled_from(["max", "min", "argmax", "ARGMIN", dml.ReduceFunction.MAX, "bogus", None, 99]))
    axes = draw(st.one_of(st.none(), st.integers(-1, rank), st.lists(st.integers(0, rank - 1), min_size=1,
                                                                         max_size=rank, unique=True)))
    out_type = draw(st.sampled_from([None, None, "int64", np.uint32, T.INT32, "float32", "nonsense"]))
    args = {"function": function, "axes": maybe_hostile(draw, axes), "output_data_type": out_type}
    return args, lambda a: reference.reduce(a, args["function"], args["axes"], args["output_data_type"])


def _reduce_compare(got, want, x, args):
    """Within Reduce's documented precision (integers, MIN/MAX and indices exactly)."""
    axes = None if args["axes"] is None else np.atleast_1d(args["axes"]).tolist()
    tolerance = reduce_op.tolerance(want, [x], {"function": args["function"], "axes": axes})
    assert_within(got, want, tolerance, f"reduce {args['function']}")


@rule("reduce", broken=_reduce_broken, functional=_reduce_functional, compare=_reduce_compare,
      free=lambda function: ("output_tensor",) if function in reduce_op.ARG_FUNCTIONS else (),
      fields=("x", "input_tensor", "function", "axes", "output_data_type", "output_tensor", "device"))
def reduce_call(d: Draw, ask: Ask) -> Drawn:
    """The table's function over any axes (in any order); ARGMAX/ARGMIN write the table's index type."""
    arg = ask.key in reduce_op.ARG_FUNCTIONS
    return Drawn([ask.input(d)], {"function": ask.key, "axes": d.subset(ask.rank),
                                  "output_data_type": ask.types["output_tensor"] if arg else None})


# ---------------------------------------------------------------------------- ArgMax, ArgMin
def tie_values(rng, data_type: T, count: int) -> np.ndarray:
    """`count` elements drawn from five bit patterns: three random ones (NaN, infinities
    and -0.0 among them for floats), zero, and the sign bit alone (-0.0, or an integer
    type's most negative value / 2^(bits-1)): many ties, in every kind of value."""
    item = data_type.size
    pool = random_bits(rng, data_type.numpy, [5])
    pool[3:] = np.array([0, 1 << (8 * item - 1)], np.dtype(f"u{item}")).view(data_type.numpy)
    return pool[rng.integers(0, 5, count)]


def _arg_fill(desc, rng) -> list:
    return [tie_values(rng, desc.input_tensor.data_type, desc.input_tensor.required_elements)]


def _arg_broken(spec):
    @st.composite
    def broken(draw, desc):
        out = desc.output_tensor
        kind = draw(st.sampled_from(REDUCED_AXES_KINDS + ("output_type", "input_float64", "direction")))
        if kind in REDUCED_AXES_KINDS:
            return *broken_reduced_axes(draw, desc, kind), kind
        if kind == "output_type":
            dt = draw(st.sampled_from([t for t in T if t not in argminmax_op.INDEX_TYPES]))
            return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
        if kind == "input_float64":
            return replace_fields(desc, input_tensor=dml.TensorDesc(T.FLOAT64, desc.input_tensor.sizes)), \
                "input_tensor.data_type", kind
        bad = draw(st.sampled_from([2, -1, "sideways", None, 1.5, "INCREASING_", True]))
        return replace_fields(desc, axis_direction=bad), "axis_direction", kind
    return broken


def _mostly(draw, good: list, bad: list):
    """One of `good` about three times in four, else one of `bad`."""
    return draw(st.sampled_from(bad if draw(st.integers(0, 3)) == 3 else good))


def _arg_functional(spec):
    @st.composite
    def calls(draw, x, shape):
        rank = len(shape)
        axes = draw(st.one_of(st.none(), st.integers(-rank - 1, rank),
                              st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank)))
        direction = _mostly(draw, ["increasing", "DECREASING", D.DECREASING, 0, 1], ["sideways", None, 7, []])
        out_type = _mostly(draw, ["INT64", "int32", np.uint32, T.UINT64, 10], ["float32", "nonsense", None, "INT16"])
        args = {"axes": maybe_hostile(draw, axes), "axis_direction": direction, "output_data_type": out_type}
        return args, lambda a: spec.reference(a, **args)
    return calls


def _arg_call(d: Draw, ask: Ask) -> Drawn:
    """Any axes, either direction, the table's index type; inputs full of ties (the rule's fill)."""
    return Drawn([ask.input(d)], {"axes": d.subset(ask.rank), "axis_direction": d.pick(list(D)),
                                  "output_data_type": ask.types["output_tensor"]})


for _key in ("argmax", "argmin"):
    rule(_key, broken=_arg_broken(spec_named(_key)), functional=_arg_functional(spec_named(_key)), fill=_arg_fill,
         free=("output_tensor",),
         fields=("x", "input_tensor", "axes", "axis_direction", "output_data_type", "output_tensor", "device"),
         )(_arg_call)


# ---------------------------------------------------------------------------- Padding1
def _exact_value(d: Draw, data_type: T):
    """A value exact in `data_type`: any int in an integer type's range (whole floats too);
    any real for a float type (ints past 2^53, NaN, infinities and -0.0 included)."""
    how = d.int(0, 2)
    if data_type.is_float:
        return [d.real, lambda: d.int(-(2**70), 2**70),
                lambda: d.pick([0.0, -0.0, 65504.0, 65520.0, 2**60 + 2**36 + 1, Fraction(1, 3)])][how]()
    info = np.iinfo(data_type.numpy)
    return [lambda: d.int(int(info.min), int(info.max)),
            lambda: float(d.int(max(int(info.min), -(2**40)), min(int(info.max), 2**40))),
            lambda: d.pick([int(info.min), int(info.max)])][how]()


@st.composite
def _padding1_broken(draw, desc):
    rank, i, not_int = pick_axis(draw, desc)
    dt = desc.input_tensor.data_type
    constant = {"padding_mode": dml.PaddingMode.CONSTANT}
    choices = {
        "start_negative": ("start_padding", {"start_padding": with_entry(desc.start_padding, i, -1)}),
        "end_huge": ("end_padding", {"end_padding": with_entry(desc.end_padding, i, 2**32)}),
        "length": ("start_padding", {"start_padding": list(desc.start_padding) + [0]}),
        "not_int": ("end_padding", {"end_padding": with_entry(desc.end_padding, i, not_int)}),
        "mode": ("padding_mode", {"padding_mode": draw(st.sampled_from([5, -1, "mirror", None]))}),
        "value_type": ("padding_value", {"padding_value": draw(st.sampled_from(["0", None, 1j, False, [0]]))}),
        "value_data_type": ("padding_value_data_type", {"padding_value_data_type": draw(st.sampled_from(
            [t for t in T if t != dt] + ["FLOAT8", None, 0]))}),
    }
    if not dt.is_float:
        info = np.iinfo(dt.numpy)
        choices["value_fraction"] = ("padding_value", {**constant,
                                                       "padding_value": draw(st.sampled_from([0.5, -1.25]))})
        choices["value_range"] = ("padding_value", {**constant, "padding_value": draw(st.sampled_from(
            [int(info.max) + 1, int(info.min) - 1, math.nan, -math.inf]))})
    kind = draw(st.sampled_from(sorted(choices) + ["output_size"]))
    if kind == "output_size":
        out = with_entry(desc.output_tensor.sizes, i, desc.output_tensor.sizes[i] + 1)
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out)), "output_tensor.sizes", kind
    fragment, changes = choices[kind]
    return replace_fields(desc, **changes), fragment, kind


@st.composite
def _padding1_functional(draw, x, shape):
    start, end = [draw(st.integers(0, 3)) for _ in shape], [draw(st.integers(0, 3)) for _ in shape]
    mode = draw(st.sampled_from(["constant", "edge", "reflection", "symmetric", "wrap", dml.PaddingMode.CONSTANT]))
    value = draw(st.sampled_from([0, 7, -3, 2**63 - 1, 2**64 - 1, 0.5, float("nan"), -0.0, 2**70]))
    value_type = draw(st.sampled_from([None, None, "float32", T.INT64, "uint8"]))
    args = {"start_padding": maybe_hostile(draw, start), "end_padding": maybe_hostile(draw, end),
            "mode": maybe_hostile(draw, mode), "value": value, "value_data_type": value_type}
    return args, lambda a: reference.padding1(a, args["start_padding"], args["end_padding"], args["mode"],
                                                  args["value"], args["value_data_type"])


@rule("padding1", broken=_padding1_broken, functional=_padding1_functional,
      fields=("x", "input_tensor", "start_padding", "end_padding", "mode", "value", "padding_value",
              "value_data_type", "output_tensor", "device"))
def padding1_call(d: Draw, ask: Ask) -> Drawn:
    """Padding's paddings and modes; a value exact in the type for CONSTANT (ignored by the others)."""
    in_sizes, start, end = _sizes_split(d, ask)
    mode = d.pick(_modes(ask.level))
    value = _exact_value(d, ask.data_type) if mode == dml.PaddingMode.CONSTANT else d.pick([0, 5.5, math.nan])
    return Drawn([dml.TensorDesc(ask.data_type, in_sizes)], {"start_padding": start, "end_padding": end,
                                                            "mode": mode, "value": value})


# ---------------------------------------------------------------------------- Slice (DML_SLICE)
@st.composite
def _slice0_broken(draw, desc):
    rank, i, not_int = pick_axis(draw, desc)
    n, size = desc.input_tensor.sizes[i], desc.sizes[i]
    choices = {
        "offset_past_end": ("offsets", with_entry(desc.offsets, i, n)),
        "offset_negative": ("offsets", with_entry(desc.offsets, i, -1)),
        "offset_huge": ("offsets", with_entry(desc.offsets, i, 2**40)),
        "size_zero": ("sizes", with_entry(desc.sizes, i, 0)),
        "size_not_output": ("sizes", with_entry(desc.sizes, i, size + 1)),
        "stride_zero": ("strides", with_entry(desc.strides, i, 0)),
        "stride_negative": ("strides", with_entry(desc.strides, i, draw(st.sampled_from([-1, -2**31])))),
        "stride_huge": ("strides", with_entry(desc.strides, i, 2**32)),
        "length": ("sizes", list(desc.sizes) + [1]),
        "not_int": ("offsets", with_entry(desc.offsets, i, not_int)),
        "not_a_list": ("strides", draw(st.sampled_from([None, 3, "1,1"]))),
    }
    kind = draw(st.sampled_from(sorted(choices) + ["reads_outside"]))
    if kind == "reads_outside":  # one more element than the axis holds at this stride
        if size == 1:
            return replace_fields(desc, offsets=with_entry(desc.offsets, i, n)), "offsets", kind
        stride = (n - desc.offsets[i]) // (size - 1) + 1
        return replace_fields(desc, strides=with_entry(desc.strides, i, stride)), "strides", kind
    name, value = choices[kind]
    return replace_fields(desc, **{name: value}), name, kind


@st.composite
def _slice0_functional(draw, x, shape):
    offsets = [draw(st.integers(0, n - 1)) for n in shape]
    strides = [draw(st.sampled_from([1, 2, 3])) for _ in shape]
    sizes = [draw(st.integers(1, (n - 1 - o) // s + 1)) for n, o, s in zip(shape, offsets, strides)]
    args = {"offsets": maybe_hostile(draw, offsets), "sizes": maybe_hostile(draw, sizes),
            "strides": maybe_hostile(draw, strides)}
    return args, lambda a: reference.slice0(a, args["offsets"], args["sizes"], args["strides"])


@rule("slice0", broken=_slice0_broken, functional=_slice0_functional,
      fields=("x", "input_tensor", "offsets", "sizes", "strides", "output_tensor", "device"))
def slice0_call(d: Draw, ask: Ask) -> Drawn:
    """An offset, a stride (any UINT where one element is read), as many elements as fit."""
    x = ask.input(d)
    offsets, sizes, strides = [], [], []
    for n in x.sizes:
        offset = d.int(0, n - 1)
        stride = d.int(1, 3) if d.bool() else d.int(1, n + 1)
        size = d.int(1, (n - 1 - offset) // stride + 1)
        if size == 1 and d.bool():
            stride = d.pick([2**31, 2**32 - 1])
        offsets.append(offset)
        sizes.append(size)
        strides.append(stride)
    return Drawn([x], {"offsets": offsets, "sizes": sizes, "strides": strides})


# ---------------------------------------------------------------------------- Gather
def index_values(rng, data_type: T, n: int, count: int) -> np.ndarray:
    """Indices for an axis of n: mostly inside it (from its end too, for signed types), some
    just past either end, some at the type's extremes and around 2^32."""
    info = np.iinfo(data_type.numpy)
    values = rng.integers(-n if info.min < 0 else 0, n, size=count).astype(object)
    odd = rng.random(count) < 0.2
    hostile = [v for v in (n, n + 1, -n - 1, info.min, info.max, 2**32 - 1, 2**32, -(2**32), 2**31)
               if info.min <= v <= info.max]
    values[odd] = [hostile[i] for i in rng.integers(0, len(hostile), size=int(odd.sum()))]
    return values.astype(data_type.numpy)


def _gather_fill(desc, rng) -> list:
    inp, indices = desc.input_tensor, desc.indices_tensor
    return [random_bits(rng, inp.data_type.numpy, [inp.required_elements]),
            index_values(rng, indices.data_type, inp.sizes[desc.axis], indices.required_elements)]


def _broken_integer(draw, desc, field: str, top: int):
    """(builder, fragment, kind): `field`, an integer in [0, top], made larger, negative or not an integer."""
    how = draw(st.sampled_from(["above", "negative", "not_an_integer"]))
    if how == "above":
        value = top + 1 + draw(st.integers(0, 5))
    elif how == "negative":
        value = -draw(st.integers(1, 9))
    else:
        value = draw(st.sampled_from([1.0, "1", None, [1]]))
    return replace_fields(desc, **{field: value}), field, f"{field}_{how}"


@st.composite
def _gather_broken(draw, desc):
    rank = desc.input_tensor.rank
    kind = draw(st.sampled_from(["axis", "index_dimensions", "indices_type", "output_size", "output_type"]))
    if kind == "axis":
        return _broken_integer(draw, desc, "axis", rank - 1)
    if kind == "index_dimensions":
        return _broken_integer(draw, desc, "index_dimensions", rank)
    if kind == "indices_type":
        dt = draw(st.sampled_from([T.FLOAT32, T.FLOAT16, T.INT16, T.UINT16, T.INT8, T.UINT8, T.FLOAT64]))
        return replace_fields(desc, indices_tensor=dml.TensorDesc(dt, desc.indices_tensor.sizes)), \
            "indices_tensor.data_type", kind
    out = desc.output_tensor
    if kind == "output_type":
        dt = draw(st.sampled_from([t for t in T if t != out.data_type]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
    a = draw(st.integers(0, rank - 1))
    bad = with_entry(out.sizes, a, out.sizes[a] + draw(st.integers(1, 3)))
    return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, bad)), "output_tensor.sizes", kind


@st.composite
def _gather_functional(draw, x, shape):
    rank = len(shape)
    axis = draw(st.integers(0, rank - 1))
    k = draw(st.integers(0, min(rank, gather_op.leading_ones(shape, axis) + 1)))
    index_sizes = [1] * (rank - k) + [draw(st.integers(1, 5)) for _ in range(k)]
    dtype = draw(st.sampled_from([np.uint32, np.int64, np.int8, np.uint16, np.int32, np.uint64]))
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    # Hostile values too; cast (wrapping) to the array's own dtype, which the call keeps or widens.
    indices = index_values(rng, T.INT64, shape[axis], int(np.prod(index_sizes))).astype(dtype).reshape(index_sizes)
    hostile = st.sampled_from([indices.astype(np.float32), indices.tolist(), None, 3, indices.astype(bool),
                               np.zeros([n + 1 for n in index_sizes], np.uint32), "1", indices.reshape(-1)])
    index_arg = draw(st.one_of(st.just(indices), hostile)) if draw(st.integers(0, 3)) == 0 else indices
    args = {"indices": index_arg, "axis": maybe_hostile(draw, axis),
            "index_dimensions": draw(st.sampled_from([k, k, None]))}
    return args, lambda a: reference.gather(a, gather_op.indices_array(args["indices"]), args["axis"],
                                                args["index_dimensions"])


@rule("gather", broken=_gather_broken, functional=_gather_functional, fill=_gather_fill, free=("indices_tensor",),
      fields=("x", "input_tensor", "indices", "axis", "index_dimensions", "device"))
def gather_call(d: Draw, ask: Ask) -> Drawn:
    """Any axis and index dimension count (the input's leading 1s allowing: drawn where the
    sizes are); indices of the table's index type, hostile values among them (the fill)."""
    rank = ask.rank
    axis = d.int(0, rank - 1)
    if ask.sizes is None:
        k = d.int(0, min(rank, axis + 1))
        sizes = [1] * max(k - 1, 0) + d.ints(rank - max(k - 1, 0), 1, MAX_SIZE[rank])
    else:
        sizes = list(ask.sizes)
        k = d.int(0, min(rank, gather_op.leading_ones(sizes, axis) + 1))
    top = MAX_SIZE[min(rank + k, 8)]  # the output has rank + k - 1 dimensions' worth of elements
    indices = dml.TensorDesc(ask.types["indices_tensor"], [1] * (rank - k) + d.ints(k, 1, top))
    return Drawn([dml.TensorDesc(ask.data_type, sizes), indices], {"axis": axis, "index_dimensions": k})


# ---------------------------------------------------------------------------- Tile
@st.composite
def _tile_broken(draw, desc):
    rank, i, not_int = pick_axis(draw, desc)
    choices = {
        "zero": ("repeats", with_entry(desc.repeats, i, 0)),
        "negative": ("repeats", with_entry(desc.repeats, i, -draw(st.integers(1, 2**40)))),
        "huge": ("repeats", with_entry(desc.repeats, i, 2**32)),
        "length": ("repeats", list(desc.repeats) + [1]),
        "not_int": ("repeats", with_entry(desc.repeats, i, not_int)),
        "not_a_list": ("repeats", draw(st.sampled_from([None, 3, "1,1"]))),
    }
    return broken_choice(draw, desc, choices, one_more(desc.output_tensor, i).sizes)


@st.composite
def _tile_functional(draw, x, shape):
    args = {"repeats": maybe_hostile(draw, [draw(st.integers(1, 3)) for _ in shape])}
    return args, lambda a: reference.tile(a, args["repeats"])


@rule("tile", broken=_tile_broken, functional=_tile_functional,
      fields=("x", "input_tensor", "repeats", "output_tensor", "device"))
def tile_call(d: Draw, ask: Ask) -> Drawn:
    """Small inputs, 1-5 repeats per axis (1-3 from rank 4 on)."""
    x = ask.input(d, {1: 40, 2: 9, 3: 5, 4: 4}.get(ask.rank, 2))
    return Drawn([x], {"repeats": d.ints(ask.rank, 1, 3 if ask.rank > 3 else 5)})


# ---------------------------------------------------------------------------- Join, Split
@st.composite
def _join_functional(draw, x, shape):
    rank = len(shape)
    axis = draw(st.integers(-rank, rank - 1))
    dtype = x.dtype.newbyteorder("=") if isinstance(x, np.ndarray) and x.dtype.kind in "fiu" else np.dtype(np.float32)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    others = [random_bits(rng, dtype, [draw(st.integers(1, 4)) if d == axis % rank else n for d, n in enumerate(shape)])
              for _ in range(draw(st.integers(0, 2)))]
    args = {"axis": maybe_hostile(draw, axis)}
    return args, lambda a: reference.join([a, *others], args["axis"]), [x, *others]


@rule("join", broken=lambda desc: broken_parts(desc, "output_tensor", "input_tensors", "InputCount"),
      functional=_join_functional, fields=("xs", "input_tensors", "axis", "output_tensor", "device"))
def join_call(d: Draw, ask: Ask) -> Drawn:
    """1-4 inputs of the input's sizes but on the axis."""
    sizes = ask.input_sizes(d, {1: 60, 2: 12, 3: 6, 4: 4}.get(ask.rank, 2))
    axis = d.int(0, ask.rank - 1)
    parts = [sizes] + [with_entry(sizes, axis, d.int(1, max(1, sizes[axis]))) for _ in range(d.int(0, 3))]
    return Drawn([[dml.TensorDesc(ask.data_type, p) for p in parts]], {"axis": axis})


@st.composite
def _split_functional(draw, x, shape):
    rank = len(shape)
    axis = draw(st.integers(-rank, rank - 1))
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, shape[axis] - 1)), max_size=3)))) if shape[axis] > 1 else []
    args = {"axis": maybe_hostile(draw, axis),
            "sizes": maybe_hostile(draw, [b - a for a, b in zip([0, *cuts], [*cuts, shape[axis]])])}
    return args, lambda a: reference.split(a, args["axis"], args["sizes"])


@rule("split", broken=lambda desc: broken_parts(desc, "input_tensor", "output_tensors", "OutputCount"),
      functional=_split_functional, fields=("x", "input_tensor", "axis", "sizes", "output_tensors", "device"))
def split_call(d: Draw, ask: Ask) -> Drawn:
    """The axis cut into 1-6 pieces."""
    x = ask.input(d, {1: 60, 2: 12, 3: 6, 4: 4}.get(ask.rank, 2))
    axis = d.int(0, ask.rank - 1)
    sizes, left = [], x.sizes[axis]
    while left:
        sizes.append(d.int(1, left) if len(sizes) < 5 else left)
        left -= sizes[-1]
    return Drawn([x], {"axis": axis, "sizes": sizes})


# ---------------------------------------------------------------------------- CumulativeSummation, CumulativeProduct
@st.composite
def _cumulative_broken(draw, desc):
    rank, _, not_int = pick_axis(draw, desc)
    inp, out = desc.input_tensor, desc.output_tensor
    exclusive_field = next(f.name for f in dataclasses.fields(desc) if f.name.startswith("has_exclusive"))
    kind = draw(st.sampled_from(["axis_out", "axis_negative", "axis_type", "direction", "exclusive", "output_type",
                                 "output_sizes", "input_type"]))
    if kind == "axis_out":
        return replace_fields(desc, axis=rank + draw(st.integers(0, 3))), "axis", kind
    if kind == "axis_negative":
        return replace_fields(desc, axis=-draw(st.integers(1, 9))), "axis", kind
    if kind == "axis_type":
        return replace_fields(desc, axis=not_int), "axis", kind
    if kind == "direction":
        return replace_fields(desc, axis_direction=draw(st.sampled_from([2, -1, "sideways", None, 0.5]))), \
            "axis_direction", kind
    if kind == "exclusive":
        return replace_fields(desc, **{exclusive_field: draw(st.sampled_from([2, -1, "yes", None, 0.5]))}), \
            exclusive_field, kind
    if kind == "output_type":
        dt = draw(st.sampled_from([t for t in T if t != inp.data_type]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
    if kind == "output_sizes":
        a = draw(st.integers(0, rank - 1))
        return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, with_entry(
            out.sizes, a, out.sizes[a] + draw(st.integers(1, 3))))), "output_tensor.sizes", kind
    dt = draw(st.sampled_from([T.INT8, T.UINT8, T.INT16, T.UINT16, T.FLOAT64]))
    both = {"input_tensor": dml.TensorDesc(dt, inp.sizes), "output_tensor": dml.TensorDesc(dt, out.sizes)}
    return replace_fields(desc, **both), "input_tensor.data_type", kind


def _cumulative_functional(spec):
    @st.composite
    def calls(draw, x, shape):
        rank = len(shape)
        axis = maybe_hostile(draw, draw(st.integers(-rank - 1, rank)))
        direction = draw(st.sampled_from(["increasing", "DECREASING", D.DECREASING, 0, 1, "sideways", 7, None]))
        exclusive = draw(st.sampled_from([False, True, 0, 1, np.True_, "yes", 2, None]))
        args = {"axis": axis, "axis_direction": direction, "exclusive": exclusive}
        return args, lambda a: spec.reference(a, axis, direction, bool(exclusive))
    return calls


def _positions(shape, axis: int, direction) -> np.ndarray:
    """Each element's position along `axis` in scan order."""
    index = np.arange(shape[axis]).reshape([-1 if a == axis else 1 for a in range(len(shape))])
    if D.coerce(direction) == D.DECREASING:
        index = shape[axis] - 1 - index
    return np.broadcast_to(index, shape)


def _cumulative_compare(spec, function: str):
    """Floats within the documented precision where it promises something: where the
    running sums of |x| (sums), or every factor (products), keep float32 away from its
    range's ends; random bits make the rest overflow or underflow in float32 while the
    reference computes in float64. Integers bit-exact."""
    def compare(got, want, x, args):
        if want.dtype.kind != "f":
            assert_bits_equal(got, want)
            return
        assert got.dtype == want.dtype and got.shape == want.shape
        axis = int(args["axis"]) % x.ndim
        direction = args["axis_direction"]
        with np.errstate(invalid="ignore", over="ignore"):  # random bits: NaN, infinities
            magnitude = np.abs(x.astype(np.float64))
            if function == "sum":
                tame = cumulative_op.scan_reference(magnitude, axis, direction, False, "sum") <= 2.0**100
            else:
                wild = ~((magnitude >= 0.5) & (magnitude <= 2.0)) * 1.0
                tame = cumulative_op.scan_reference(wild, axis, direction, False, "sum") == 0
                tame &= _positions(x.shape, axis, direction) < 100
        tolerance = spec.tolerance(want, [x], {"axis": axis, "axis_direction": direction})
        assert_within(got[tame], want[tame], np.broadcast_to(tolerance, want.shape)[tame], spec.name)
    return compare


def _cumulative_call(d: Draw, ask: Ask) -> Drawn:
    """Any axis, direction and exclusive flag."""
    return Drawn([ask.input(d)], {"axis": d.int(0, ask.rank - 1), "axis_direction": d.pick(list(D)),
                                  "exclusive": d.bool()})


for _row in cumulative_op.TABLE:
    _spec = spec_named(_row.functional_name)
    rule(_spec.key, broken=_cumulative_broken, functional=_cumulative_functional(_spec),
         compare=_cumulative_compare(_spec, _row.function),
         fields=("x", "input_tensor", "axis", "axis_direction", "exclusive", "output_tensor", "device"),
         )(_cumulative_call)


# ---------------------------------------------------------------------------- softmax, log-softmax, hardmax
def _softmax_call(row):
    def call(d: Draw, ask: Ask) -> Drawn:
        """Version 1: any axes (a non-empty set, in any order, some counted from the end as
        numpy's); version 0: sizes of effective rank 2 or less (the leftmost axes of size 1;
        the last one or two drawn up to MAX_SIZE)."""
        if row.axes:
            x = ask.input(d)
            return Drawn([x], {"axes": [a - ask.rank if d.bool() else a for a in d.subset(ask.rank)]})
        if ask.sizes is not None and softmax_op.effective_rank(ask.sizes) <= 2:
            return Drawn([ask.input(d)], {})
        last = min(ask.rank, d.int(1, 2))
        sizes = [1] * (ask.rank - last) + d.ints(last, 1, MAX_SIZE[last])
        return Drawn([dml.TensorDesc(ask.data_type, sizes)], {})
    return call


def _softmax_broken(row):
    @st.composite
    def broken(draw, desc):
        inp, out = desc.input_tensor, desc.output_tensor
        kinds = ["output_sizes", "output_type"]
        if row.axes:
            kinds += ["axes_empty", "axis_out", "axis_negative", "axes_repeat", "axes_type"]
        elif inp.rank >= 3:
            kinds.append("effective_rank")
        kind = draw(st.sampled_from(kinds))
        if kind.startswith("axes") or kind.startswith("axis"):
            return *broken_reduced_axes(draw, desc, kind), kind
        if kind == "output_sizes":
            axis = draw(st.integers(0, out.rank - 1))
            sizes = with_entry(out.sizes, axis, out.sizes[axis] + draw(st.integers(1, 3)))
            return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, sizes)), "output_tensor.sizes", kind
        if kind == "output_type":
            dt = draw(st.sampled_from([t for t in T if t != out.data_type]))
            return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
        sizes = with_entry(inp.sizes, 0, 2)  # the leftmost axis no longer 1: effective rank = DimensionCount >= 3
        return replace_fields(desc, input_tensor=dml.TensorDesc(inp.data_type, sizes),
                              output_tensor=dml.TensorDesc(out.data_type, sizes)), "input_tensor.sizes", kind
    return broken


def _softmax_functional(row, spec):
    @st.composite
    def calls(draw, x, shape):
        if not row.axes:
            return {}, lambda a: spec.reference(a)
        rank = len(shape)
        axes = draw(st.one_of(st.none(), st.integers(-rank - 1, rank),
                              st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank)))
        args = {"axes": maybe_hostile(draw, axes)}
        return args, lambda a: spec.reference(a, **args)
    return calls


def _softmax_compare(spec):
    def compare(got, want, x, args):
        """Within the row's documented precision (HARDMAX bit-exact)."""
        assert_within(got, want, None if spec.tolerance is None else spec.tolerance(want, [x], args), spec.name)
    return compare


for _row in softmax_op.TABLE:
    _spec = spec_named(_row.key)
    rule(_spec.key, broken=_softmax_broken(_row), functional=_softmax_functional(_row, _spec),
         compare=_softmax_compare(_spec), light=not _row.axes,  # version 0 runs version 1's kernels
         fields=("x", "input_tensor", "axes", "output_tensor", "device"))(_softmax_call(_row))


# ---------------------------------------------------------------------------- element-wise and activation operators
def _fused(d: Draw):
    """A fused activation with drawn attributes (any real, NaN and infinities among them)."""
    name = d.pick(sorted(elementwise_op.FUSABLE))
    row = elementwise_op.FUSABLE[name]
    return dml.FusedActivation(name, **{a.name: _attribute(d, a) for a in row.attributes})


def _attribute(d: Draw, attr, level=None, data_type=None):
    """A value of a FLOAT attribute: mostly near its default (near 0 for an infinite one),
    some anywhere in float32; at least the page's minimum where it applies at `level`. An
    enum's: any member; a scalar of the tensor's type (CLIP1's): None (the type's limit) or
    a value of `data_type` (FLOAT32 where not given)."""
    if attr.kind == "enum":
        return d.pick(list(attr.enum))
    if attr.kind == "value":
        data_type = data_type or T.FLOAT32
        if d.int(0, 4) == 0:
            return None
        if data_type.is_float:
            value = d.pick([0.0, -0.0, float("nan"), float("inf"), -float("inf"), d.real(-3.0, 3.0)])
            return float(np.float64(value).astype(data_type.numpy))
        info = np.iinfo(data_type.numpy)
        return d.pick([int(info.min), int(info.max), d.int(max(int(info.min), -9), min(int(info.max), 9))])
    how = d.int(0, 3)
    if how == 0:
        value = d.pick([0.0, -0.0, 1.0, -1.5, 3.0e38, float("nan"), float("inf")])
    else:
        value = (attr.default if math.isfinite(attr.default) else 0.0) + d.real(-3.0, 3.0)
    if not math.isfinite(value) and attr.finite:
        value = attr.default
    binding = attr.minimum is not None and (level is None or attr.minimum_until is None or level < attr.minimum_until)
    if binding and not value >= attr.minimum:
        value = attr.minimum + abs(d.real(0.0, 2.0))
    return value


def _elementwise_call(row):
    def call(d: Draw, ask: Ask) -> Drawn:
        """Inputs of the input's sizes and type; attributes near their defaults; a scale and
        bias (float inputs but FLOAT64, which computes on shader-f64 adapters only), a fused
        activation (float outputs) about half the time."""
        x = ask.input(d)
        groups = row.type_groups()

        def type_of(field):  # a group of one type takes its first field's; a fixed field its one type
            if field in _DRAWN_AS_INPUT.get(row.key, ()) or any(g[0] in _DRAWN_AS_INPUT.get(row.key, ())
                                                                for g in groups if field in g):
                return ask.types[row.fields[0]]
            return _fixed_type(row, field) or ask.types[next((g[0] for g in groups if field in g), field)]
        # (a tensor of one element, QUANTIZED_LINEAR_ADD's scales: every axis 1, broadcast by infer_output)
        tensors = [x] + [dml.TensorDesc(type_of(f), [1] * ask.rank if f in row.single else x.sizes)
                         for f in row.tensors[1:]]
        attributes = {a.name: _attribute(d, a, ask.level, type_of(row.output)) for a in row.attributes}
        if row.logical:
            attributes["output_data_type"] = ask.types["output_tensor"]
        if row.cast:
            attributes["dtype"] = ask.types["output_tensor"]
        if row.key == "quantize_linear":  # the scale: FLOAT32 for an INT32 input, else the input's type
            tensors[1] = dml.TensorDesc(T.FLOAT32 if ask.data_type == T.INT32 else ask.data_type, x.sizes)
        # The optional inputs left out (a zero point: from FL_6_2 on for (DE)QUANTIZE_LINEAR, always for
        # QUANTIZED_LINEAR_ADD), each a quarter of the time.
        optional_from = FL.FL_4_0 if row.key == "quantized_linear_add" else FL.FL_6_2
        left_out = [f for f in row.optional if ask.level >= optional_from and d.int(0, 3) == 0]
        if left_out:
            attributes["given"] = tuple(f for f in row.tensors if f not in left_out)
            tensors = [t for f, t in zip(row.tensors, tensors) if f not in left_out]
            if row.out_type is not None:
                attributes["output_data_type"] = type_of(row.output)
        if row.scale_bias and ask.data_type in (T.FLOAT32, T.FLOAT16) and d.bool():
            attributes["scale_bias"] = (d.real(-2.0, 2.0), d.real(-1.0, 1.0))
        if row.fused_activation and ask.data_type.is_float and d.bool():
            attributes["fused_activation"] = _fused(d)
        return Drawn(tensors, attributes)
    return call


def _fixed_type(row, field):
    """The one type every row of the support table gives an input other than the first
    (QUANTIZED_LINEAR_ADD's scales: FLOAT32), or None: the rule does not draw it."""
    if field not in row.tensors[1:]:
        return None
    i = row.fields.index(field)
    sets = {frozenset(r[2 + i] if len(r) > 3 else r[2]) for r in row.support}
    return next(iter(next(iter(sets)))) if len(sets) == 1 and len(next(iter(sets))) == 1 else None


def _elementwise_broken(row):
    @st.composite
    def broken(draw, desc):
        inputs = desc.input_descs
        out, out_field = getattr(desc, row.output), row.output
        listed = set().union(*(types[-1] if len(types) > 1 else types[0] for _, _, *types in row.support))
        wrong = [t for t in T if t != out.data_type and (t not in listed or not (row.logical or row.cast))]
        kinds = ["output_sizes"] + (["output_type"] if wrong else []) + (["input_sizes"] if row.arity > 1 else [])
        kinds += [a.name for a in row.attributes]
        kinds += (["scale_bias"] if row.scale_bias else []) + (["fused_activation"] if row.fused_activation else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "output_sizes":
            sizes = with_entry(out.sizes, draw(st.integers(0, out.rank - 1)), draw(st.integers(1, 3)) + max(out.sizes))
            return replace_fields(desc, **{out_field: dml.TensorDesc(out.data_type, sizes)}), f"{out_field}.sizes", kind
        if kind == "output_type":
            dt = draw(st.sampled_from(wrong))
            return replace_fields(desc, **{out_field: dml.TensorDesc(dt, out.sizes)}), f"{out_field}.data_type", kind
        if kind == "input_sizes":  # the last input given
            field, last = [(f, t) for f, t in zip(row.tensors, inputs) if t is not None][-1]
            sizes = with_entry(last.sizes, 0, last.sizes[0] + 1)
            return replace_fields(desc, **{field: dml.TensorDesc(last.data_type, sizes)}), f"{field}.sizes", kind
        if kind == "scale_bias":
            value = draw(st.sampled_from(["2", (1.0,), (1.0, "x"), (1e300, 0.0), 3]))
            return replace_fields(desc, scale_bias=value), "scale_bias", kind
        if kind == "fused_activation":
            value = draw(st.sampled_from(["bogus", 7, ("relu",), elementwise_op.ScaleBias()]))
            return replace_fields(desc, fused_activation=value), "fused_activation", kind
        scalar = next(a for a in row.attributes if a.name == kind).kind == "value"  # None: the type's limit
        value = draw(st.sampled_from(["1", [1.0], 1e300, True] + ([] if scalar else [None])))
        return replace_fields(desc, **{kind: value}), kind, kind
    return broken


def _elementwise_functional(row, spec):
    @st.composite
    def calls(draw, x, shape):
        numeric = isinstance(x, np.ndarray) and x.dtype.kind in "fiu"
        dtype = x.dtype.newbyteorder("=") if numeric else np.dtype(np.float32)
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        args = {}
        others = []
        for field in row.tensors[1:]:
            cut = draw(st.integers(0, len(shape)))  # a trailing part of the shape, some axes 1: numpy broadcasting
            other_shape = [n if draw(st.booleans()) else 1 for n in shape[cut:]] or [1]
            if draw(st.integers(0, 9)) == 0:
                other_shape = [n + 1 for n in shape]  # does not broadcast
            other = random_bits(rng, dtype, other_shape)
            args[elementwise_op.argument_name(field)] = other
            others.append(other)
        try:
            value_type = dml.DataType.from_numpy(dtype)
        except dml.InvalidArgumentError:
            value_type = None
        for a in row.attributes:
            args[a.name] = maybe_hostile(draw, _attribute(HypothesisDraw(draw), a, data_type=value_type))
        if row.logical:
            args["output_data_type"] = draw(st.sampled_from(["UINT8", np.uint32, "float32", None]))
        if row.cast:
            args["dtype"] = draw(st.sampled_from(["FLOAT16", np.int8, "uint64", T.FLOAT32, "bogus", None]))
        if row.fused_activation:
            args["fused_activation"] = draw(st.sampled_from([None, "relu", dml.FusedActivation("relu"), "bogus", 3]))
        if row.scale_bias:
            args["scale_bias"] = draw(st.sampled_from([None, (2.0, 1.0), dml.ScaleBias(0.5, -1.0), "x", (1, 2, 3)]))
        return args, lambda a: spec.reference(a, **args)
    return calls


def _elementwise_compare(spec):
    def compare(got, want, x, args):
        """Within the row's documented precision (integers and logical results exactly)."""
        tensors = [x] + [v for k, v in args.items() if isinstance(v, np.ndarray)]
        attributes = {k: v for k, v in args.items() if not isinstance(v, np.ndarray)}
        if want.dtype.kind != "f":
            assert_bits_equal(got, want)
            return
        arrays = np.broadcast_arrays(*tensors)
        assert_within(got, want, spec.tolerance(want, arrays, attributes), spec.name)
    return compare


#: Tensors whose type the rule takes from the input though the table draws it apart (each free
#: tensor multiplies the feature-level test's type sets by 11): QUANTIZED_LINEAR_ADD's b (and its
#: zero point), whose other types tests/test_elementwise.py runs.
_DRAWN_AS_INPUT = {"quantized_linear_add": ("b_tensor",)}

for _row in elementwise_op.TABLE:
    _spec = spec_named(_row.key)
    _names = tuple(elementwise_op.argument_name(f) for f in _row.tensors)
    _first_group = next((g for g in _row.type_groups() if _row.fields[0] in g), (_row.fields[0],))
    rule(_spec.key, broken=_elementwise_broken(_row), functional=_elementwise_functional(_row, _spec),
         compare=_elementwise_compare(_spec), light=_row.key not in ("identity", "add0"),
         free=tuple(f for f in _row.fields[1:]  # one field per group of one type (its first), not of a fixed type
                    if f not in _first_group and all(f == g[0] for g in _row.type_groups() if f in g)
                    and _fixed_type(_row, f) is None and f not in _DRAWN_AS_INPUT.get(_row.key, ())),
         fields=_names + _row.tensors + (_row.output, "scale_bias", "fused_activation", "shapes", "device",
                                         "output_data_type", "dtype")
         + tuple(a.name for a in _row.attributes))(_elementwise_call(_row))


# ---------------------------------------------------------------------------- GEMM
def _gemm_scalar(d: Draw) -> float:
    """Alpha or Beta: mostly in [-2, 2], some 0, -0, 1 or huge."""
    return d.pick([0.0, -0.0, 1.0, 3.0e38]) if d.int(0, 4) == 0 else d.real(-2.0, 2.0)


@rule("gemm", broken=lambda desc: _gemm_broken(desc), functional=lambda x, shape: _gemm_functional(x, shape),
      compare=lambda got, want, x, args: _gemm_compare(got, want, x, args),
      fields=("a", "b", "c", "a_tensor", "b_tensor", "c_tensor", "output_tensor", "trans_a", "trans_b", "alpha",
              "beta", "fused_activation", "batch", "device"), light=True)
def gemm_call(d: Draw, ask: Ask) -> Drawn:
    """A of the input's sizes ([batch..., M, K], [..., K, M] with trans_a), B of K x N (N x K
    with trans_b; batch axes of 1 broadcast half the time), C half the time (the whole
    result, a row [N], a column [M, 1] or one value), alpha and beta, a fused activation a
    third of the time. Inputs of fewer than 2 dimensions as they are (validation's to reject)."""
    x = ask.input(d)
    dt, sizes = ask.data_type, list(x.sizes)
    if ask.rank < 2:
        return Drawn([x, dml.TensorDesc(dt, sizes)], {})
    trans_a, trans_b = d.bool(), d.bool()
    k = sizes[-2] if trans_a else sizes[-1]
    m = sizes[-1] if trans_a else sizes[-2]
    n = d.int(1, MAX_SIZE[min(ask.rank, 8)])
    batch = [s if d.bool() else 1 for s in sizes[:-2]]
    b = dml.TensorDesc(dt, batch + ([n, k] if trans_b else [k, n]))
    tensors = [x, b]
    how = d.pick(["none", "none", "full", "row", "column", "one"])
    if how != "none":
        out = list(sizes[:-2]) + [m, n]
        tensors.append(dml.TensorDesc(dt, {"full": out, "row": [n], "column": [m, 1], "one": [1]}[how]))
    attributes = {"trans_a": trans_a, "trans_b": trans_b, "alpha": _gemm_scalar(d), "beta": _gemm_scalar(d)}
    if d.int(0, 2) == 0:
        attributes["fused_activation"] = _fused(d)
    return Drawn(tensors, attributes)


def _broken_output(draw, desc, kind):
    """(builder, fragment, kind): the output one element longer on an axis ("output_sizes")
    or of another data type ("output_type")."""
    out = desc.output_tensor
    if kind == "output_sizes":
        return replace_fields(desc, output_tensor=one_more(out, draw(st.integers(0, out.rank - 1)))), \
            "output_tensor.sizes", kind
    dt = draw(st.sampled_from([t for t in T if t != out.data_type]))
    return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind


@st.composite
def _gemm_broken(draw, desc):
    out, b = desc.output_tensor, desc.b_tensor
    kinds = ["k", "output_sizes", "output_type", "trans_a", "trans_b", "alpha", "beta", "fused_activation"]
    kinds += ["batch"] if out.rank >= 3 else []
    kinds += ["c_sizes"] if desc.c_tensor is not None else []
    kind = draw(st.sampled_from(kinds))
    if kind == "k":
        axis = b.rank - (1 if desc.trans_b == dml.MatrixTransform.TRANSPOSE else 2)
        return replace_fields(desc, b_tensor=one_more(b, axis)), "K differs", kind
    if kind in ("output_sizes", "output_type"):
        return _broken_output(draw, desc, kind)
    if kind == "batch":
        field = draw(st.sampled_from(["a_tensor", "b_tensor"]))
        return replace_fields(desc, **{field: one_more(getattr(desc, field), 0)}), f"{field}.sizes", kind
    if kind == "c_sizes":
        return replace_fields(desc, c_tensor=one_more(out, out.rank - 1)), "c_tensor.sizes", kind
    if kind in ("trans_a", "trans_b"):
        return replace_fields(desc, **{kind: draw(st.sampled_from(["bogus", 2, None, 1.5]))}), kind, kind
    if kind == "fused_activation":
        value = draw(st.sampled_from(["bogus", 7, ("relu",), dml.ScaleBias()]))
        return replace_fields(desc, fused_activation=value), "fused_activation", kind
    value = draw(st.sampled_from(["1", None, [1.0], 1e300, True]))
    return replace_fields(desc, **{kind: value}), kind, kind


@st.composite
def _gemm_functional(draw, x, shape):
    """B (and C half the time) of uniform values that fit x's shape as numpy's matmul takes
    it, now and then one that does not; trans_b, alpha, beta and the activation now and
    then hostile."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    numeric = isinstance(x, np.ndarray) and x.dtype.kind in "fiu"
    dtype = x.dtype.newbyteorder("=") if numeric else np.dtype(np.float32)
    k = shape[-1] if len(shape) >= 1 else 1
    n = draw(st.integers(1, 6))
    batch = [s if draw(st.booleans()) else 1 for s in shape[:-2]]
    b_shape = batch + [k + (draw(st.integers(0, 9)) == 0), n]
    args = {"b": rng.uniform(-1, 1, b_shape).astype(dtype)}
    if draw(st.booleans()):
        args["c"] = rng.uniform(-1, 1, draw(st.sampled_from([[n], [1], [n + 1]]))).astype(dtype)
    args["trans_b"] = maybe_hostile(draw, False)
    args["alpha"] = maybe_hostile(draw, draw(st.floats(-2, 2)))
    args["beta"] = draw(st.sampled_from([1.0, 0.5, "x"]))
    args["fused_activation"] = draw(st.sampled_from([None, "relu", dml.FusedActivation("sigmoid"), "bogus"]))
    return args, lambda a: spec_named("gemm").reference(a, **args)


def _products_compare(got, want, tensors, attributes, op):
    """Within a sum of products' documented precision (GEMM's, the convolution's), anything
    where it is unbounded (a partial sum that may overflow)."""
    tolerance = np.asarray(op.tolerance(want, tensors, attributes))
    bounded = ~np.isinf(tolerance)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_within(got[bounded], want[bounded], tolerance[bounded], "Gemm")


# ---------------------------------------------------------------------------- pooling
def _pool_axis(d: Draw, n: int, dilated: bool) -> tuple[int, int, int, int, int]:
    """(window, stride, start padding, end padding, dilation) for a spatial axis of n: a
    window of 1-3 (dilation 1-2) that fits the padded axis, paddings below the window's
    extent, or none where a window would cover padding only."""
    dil = d.int(1, 2) if dilated else 1
    window = d.int(1, 3)
    stride = d.int(1, 3)
    extent = (window - 1) * dil + 1
    a, b = d.int(0, extent - 1), d.int(0, extent - 1)
    if extent > n + a + b:
        window, dil, extent = 1, 1, 1
    count = pooling_op.output_size(n, window, stride, a, b, dil)
    if pooling_op._empty_window(n, window, stride, a, dil, count) is not None:
        a = b = 0
        if extent > n:
            window, dil = 1, 1
    return window, stride, a, b, dil


def _pool_call(row):
    def call(d: Draw, ask: Ask) -> Drawn:
        """Small inputs; per spatial axis a window of 1-3 that fits, strides 1-3, paddings,
        dilations 1-2 (the versions that have them); MAX's indices half the time (of the
        table's free type), AVERAGE's include_padding, LP's p in 1-3 (now and then 5)."""
        if ask.sizes is None and ask.rank in (4, 5):  # (spatial axes of 2 or more: windows worth sliding)
            x = dml.TensorDesc(ask.data_type, d.ints(2, 1, 3) + d.ints(ask.rank - 2, 2, 5 if ask.rank == 4 else 3))
        else:
            x = ask.input(d, 3)
        axes = [_pool_axis(d, n, row.dilations) for n in x.sizes[2:]]
        attrs = {"window_size": [a[0] for a in axes], "strides": [a[1] for a in axes],
                 "start_padding": [a[2] for a in axes], "end_padding": [a[3] for a in axes]}
        if row.dilations:
            attrs["dilations"] = [a[4] for a in axes]
        if row.indices and (d.bool() or "output_indices_tensor" in ask.types and ask.sizes is not None):
            attrs["output_indices"] = ask.types.get("output_indices_tensor", dml.DataType.UINT32)
        if row.extra == "include_padding":
            attrs["include_padding"] = d.bool()
        if row.extra == "p":
            attrs["p"] = d.pick([1, 2, 2, 3, 5])
        return Drawn([x], attrs)
    return call


def _pool_broken(row):
    @st.composite
    def broken(draw, desc):
        out, spatial = desc.output_tensor, desc.dimension_count
        i = draw(st.integers(0, max(0, spatial - 1)))
        kinds = ["output_sizes", "output_type", "dimension_count", "window_zero", "strides_zero", "window_big",
                 "length"]
        kinds += ["dilations_zero"] if row.dilations else []
        kinds += ["indices_sizes"] if row.indices and desc.output_indices_tensor is not None else []
        kinds += ["p"] if row.extra == "p" else ["include_padding"] if row.extra else []
        kind = draw(st.sampled_from(kinds))
        if kind == "output_sizes":
            return replace_fields(desc, output_tensor=one_more(out, draw(st.integers(0, out.rank - 1)))), \
                "output_tensor.sizes", kind
        if kind == "indices_sizes":
            idx = desc.output_indices_tensor
            return replace_fields(desc, output_indices_tensor=one_more(idx, idx.rank - 1)), \
                "output_indices_tensor.sizes", kind
        if kind == "output_type":
            dt = draw(st.sampled_from([t for t in T if t != out.data_type]))
            return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
        if kind == "dimension_count":
            return replace_fields(desc, dimension_count=draw(st.sampled_from([spatial + 1, 0, "2", None]))), \
                "dimension_count", kind
        if kind == "length":
            field = draw(st.sampled_from(["strides", "window_size", "start_padding", "end_padding"]))
            return replace_fields(desc, **{field: list(getattr(desc, field)) + [1]}), field, kind
        if kind == "p":
            return replace_fields(desc, p=draw(st.sampled_from([0, -1, 1.5, "2"]))), "p", kind
        if kind == "include_padding":
            return replace_fields(desc, include_padding=draw(st.sampled_from(["yes", 2, None]))), \
                "include_padding", kind
        field = {"window_zero": "window_size", "strides_zero": "strides", "dilations_zero": "dilations",
                 "window_big": "window_size"}[kind]
        value = 10**6 if kind == "window_big" else draw(st.sampled_from([0, -1]))
        return replace_fields(desc, **{field: with_entry(getattr(desc, field), i, value)}), field, kind
    return broken


def _pool_functional(row, spec):
    @st.composite
    def calls(draw, x, shape):
        """Windows of 1-3 per spatial axis (now and then a hostile one, or None: global),
        strides, paddings below the window, the row's own argument now and then hostile."""
        spatial = max(0, len(shape) - 2)
        args = {"window_size": draw(st.one_of(st.none(), st.lists(st.integers(1, 3), min_size=spatial,
                                                                  max_size=spatial)))}
        args["window_size"] = maybe_hostile(draw, args["window_size"])
        if draw(st.booleans()):
            args["strides"] = draw(st.integers(1, 2))
        if draw(st.booleans()) and args["window_size"] is not None:
            args["start_padding"] = draw(st.sampled_from([0, 1]))
        if row.dilations and draw(st.booleans()):
            args["dilations"] = maybe_hostile(draw, draw(st.integers(1, 2)))
        if row.indices and draw(st.booleans()):
            args["output_indices"] = draw(st.sampled_from([True, dml.DataType.UINT64, "bogus", np.float32]))
        if row.extra == "include_padding":
            args["include_padding"] = draw(st.sampled_from([False, True, "yes"]))
        if row.extra == "p":
            args["p"] = maybe_hostile(draw, draw(st.integers(1, 3)))

        def expected(a):
            got = spec.reference(a, **args)
            return list(got) if isinstance(got, tuple) else got
        return args, expected
    return calls


def _pool_compare(row, spec):
    def compare(got, want, x, args):
        """MAX bit-exact (its indices too); AVERAGE and LP within the documented precision
        where it is bounded."""
        if spec.tolerance is None:
            assert_outputs_equal(got, want)
            return
        tolerance = np.asarray(spec.tolerance(want, [x], args))
        bounded = ~np.isinf(tolerance)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert_within(got[bounded], want[bounded], tolerance[bounded], spec.name)
    return compare


for _row in pooling_op.TABLE:
    _spec = spec_named(_row.key)
    rule(_spec.key, broken=_pool_broken(_row), functional=_pool_functional(_row, _spec),
         compare=_pool_compare(_row, _spec), free=("output_indices_tensor",) if _row.indices else (),
         fields=("x", "input_tensor", "output_tensor", "output_indices_tensor", "dimension_count", "window_size",
                 "strides", "start_padding", "end_padding", "dilations", "output_indices", "include_padding", "p",
                 "device"),
         light=True)(_pool_call(_row))
# ---------------------------------------------------------------------------- normalization
def _epsilon(d: Draw) -> float:
    return d.pick([1e-5, 1e-5, 0.0, 1e-3, 0.5])


def _affine(d: Draw, ask: Ask, x: dml.TensorDesc) -> list:
    """Half the time a scale and a bias of x's sizes or 1 on each axis (before FL_4_0 axis
    1 is x's), leading axes of 1 dropped half the time (numpy's broadcasting)."""
    if d.bool():
        return []
    out = []
    for _ in range(2):
        sizes = [n if d.bool() else 1 for n in x.sizes]
        if ask.level < FL.FL_4_0 and len(sizes) >= 2:
            sizes[1] = x.sizes[1]
        while len(sizes) > 1 and sizes[0] == 1 and d.bool():
            sizes.pop(0)
        out.append(dml.TensorDesc(x.data_type, sizes))
    return out


def _mvn_call(version: int):
    def call(d: Draw, ask: Ask) -> Drawn:
        """Any axes (version 1; some counted from the end) or cross_channel (version 0),
        scale and bias half the time (each axis broadcast or not), normalize_variance,
        epsilon, a fused activation a third of the time."""
        x = ask.input(d)
        attributes = {"normalize_variance": d.int(0, 3) > 0, "epsilon": _epsilon(d)}
        if version == 1:
            attributes["axes"] = [a - ask.rank if d.bool() else a for a in d.subset(ask.rank)]
        else:
            attributes["cross_channel"] = d.bool()
        if d.int(0, 2) == 0:
            attributes["fused_activation"] = _fused(d)
        return Drawn([x, *_affine(d, ask, x)], attributes)
    return call


def _mvn_broken(version: int):
    @st.composite
    def broken(draw, desc):
        inp, out = desc.input_tensor, desc.output_tensor
        kinds = ["output_sizes", "epsilon", "normalize_variance", "fused_activation"]
        kinds += ["axes_empty", "axis_out", "axis_negative", "axes_repeat", "axes_type"] if version == 1 \
            else ["cross_channel"]
        kinds += ["scale_sizes"] if desc.scale_tensor is not None else []
        kind = draw(st.sampled_from(kinds))
        if kind.startswith("ax"):
            return *broken_reduced_axes(draw, desc, kind), kind
        if kind == "output_sizes":
            return replace_fields(desc, output_tensor=one_more(out, draw(st.integers(0, out.rank - 1)))), \
                "output_tensor.sizes", kind
        if kind == "scale_sizes":
            axis = draw(st.integers(0, inp.rank - 1))
            return replace_fields(desc, scale_tensor=one_more(inp, axis)), "scale_tensor.sizes", kind
        if kind == "epsilon":
            return replace_fields(desc, epsilon=draw(st.sampled_from([-1.0, float("nan"), float("inf"), "x",
                                                                      None]))), "epsilon", kind
        if kind == "fused_activation":
            return replace_fields(desc, fused_activation=draw(st.sampled_from(["bogus", 7]))), "fused_activation", kind
        return replace_fields(desc, **{kind: draw(st.sampled_from([2, "yes", None, 0.5]))}), kind, kind
    return broken


def _mvn_functional(version: int, key: str):
    @st.composite
    def calls(draw, x, shape):
        """Scale and bias (half the time) of x's last axis or of 1, now and then one that does
        not broadcast; the axes, epsilon and activation now and then hostile."""
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        numeric = isinstance(x, np.ndarray) and x.dtype.kind in "f"
        dtype = x.dtype.newbyteorder("=") if numeric else np.dtype(np.float32)
        args = {}
        if draw(st.booleans()):
            last = shape[-1] if len(shape) else 1
            size = draw(st.sampled_from([last, 1, last + 1]))
            args["scale"] = rng.uniform(-2, 2, [size]).astype(dtype)
            args["bias"] = rng.uniform(-1, 1, [size]).astype(dtype)
        if version == 1:
            rank = len(shape)
            args["axes"] = maybe_hostile(draw, draw(st.lists(st.integers(-rank, max(rank - 1, 0)), min_size=1,
                                                            max_size=max(rank, 1), unique=True)))
        else:
            args["cross_channel"] = maybe_hostile(draw, draw(st.booleans()))
        args["epsilon"] = draw(st.sampled_from([1e-5, 0.0, -1.0, "x"]))
        args["fused_activation"] = draw(st.sampled_from([None, "relu", "bogus"]))
        return args, lambda a: spec_named(key).reference(a, **args)
    return calls


def _within(key: str, tensors=()):
    def compare(got, want, x, args):
        """Within the documented precision."""
        spec = spec_named(key)
        inputs = [x] + [args[t] for t in tensors if t in args]
        attributes = {k: v for k, v in args.items() if k not in tensors}
        assert_within(got, want, spec.tolerance(want, inputs, attributes), spec.name)
    return compare


for _version, _key in ((1, "mean_variance_normalization1"), (0, "mean_variance_normalization0")):
    rule(_key, broken=_mvn_broken(_version), functional=_mvn_functional(_version, _key),
         compare=_within(_key, ("scale", "bias")), light=True,
         fields=("x", "scale", "bias", "input_tensor", "scale_tensor", "bias_tensor", "output_tensor", "axes",
                 "cross_channel", "normalize_variance", "epsilon", "fused_activation", "device",
                 "DimensionCount"))(_mvn_call(_version))


@st.composite
def _lp_broken(draw, desc):
    kind = draw(st.sampled_from(["axis", "p", "epsilon", "output_sizes"]))
    if kind == "axis":
        return replace_fields(desc, axis=draw(st.sampled_from([desc.input_tensor.rank, -1, 0.5]))), "axis", kind
    if kind == "p":
        return replace_fields(desc, p=draw(st.sampled_from([0, 3, 1.5]))), "p", kind
    if kind == "epsilon":
        return replace_fields(desc, epsilon=draw(st.sampled_from([-1.0, float("nan"), "x"]))), "epsilon", kind
    out = desc.output_tensor
    return replace_fields(desc, output_tensor=one_more(out, draw(st.integers(0, out.rank - 1)))), \
        "output_tensor.sizes", kind


@st.composite
def _lp_functional(draw, x, shape):
    rank = max(len(shape), 1)
    args = {"axis": maybe_hostile(draw, draw(st.integers(-rank, rank - 1))), "p": draw(st.sampled_from([1, 2, 3])),
            "epsilon": draw(st.sampled_from([1e-5, 0.0, -1.0]))}
    return args, lambda a: spec_named("lp_normalization").reference(a, **args)


@rule("lp_normalization", broken=_lp_broken, functional=_lp_functional, compare=_within("lp_normalization"),
      light=True, fields=("x", "input_tensor", "output_tensor", "axis", "epsilon", "p", "device"))
def lp_call(d: Draw, ask: Ask) -> Drawn:
    """Any axis (some counted from the end), p 1 or 2, epsilon."""
    axis = d.int(0, ask.rank - 1)
    return Drawn([ask.input(d)], {"axis": axis - ask.rank if d.bool() else axis, "p": d.pick([1, 2]),
                                  "epsilon": _epsilon(d)})


@st.composite
def _lrn_broken(draw, desc):
    kind = draw(st.sampled_from(["local_size", "alpha", "beta", "bias", "cross_channel", "output_sizes"]))
    if kind == "local_size":
        return replace_fields(desc, local_size=draw(st.sampled_from([0, -1, 0.5, None]))), "local_size", kind
    if kind in ("alpha", "beta", "bias"):
        return replace_fields(desc, **{kind: draw(st.sampled_from([float("nan"), float("inf"), "x"]))}), kind, kind
    if kind == "cross_channel":
        return replace_fields(desc, cross_channel=draw(st.sampled_from([2, "yes", None]))), kind, kind
    out = desc.output_tensor
    return replace_fields(desc, output_tensor=one_more(out, draw(st.integers(0, out.rank - 1)))), \
        "output_tensor.sizes", kind


@st.composite
def _lrn_functional(draw, x, shape):
    args = {"local_size": maybe_hostile(draw, draw(st.integers(1, 5))), "cross_channel": draw(st.booleans()),
            "alpha": draw(st.sampled_from([1e-4, 0.5, "x"])), "beta": 0.75, "bias": draw(st.sampled_from([1.0, 2.0]))}
    return args, lambda a: spec_named("local_response_normalization").reference(a, **args)


@rule("local_response_normalization", broken=_lrn_broken, functional=_lrn_functional,
      compare=_within("local_response_normalization"), light=True,
      fields=("x", "input_tensor", "output_tensor", "local_size", "cross_channel", "alpha", "beta", "bias", "device",
              "DimensionCount"))
def lrn_call(d: Draw, ask: Ask) -> Drawn:
    """local_size 1-6 across channels or H x W; alpha in [0, 2], beta in [-1, 1.5], bias in
    [0.5, 3] (the base stays positive: WGSL's pow is undefined below 0)."""
    return Drawn([ask.input(d)], {"local_size": d.int(1, 6), "cross_channel": d.bool(), "alpha": d.real(0.0, 2.0),
                                  "beta": d.real(-1.0, 1.5), "bias": d.real(0.5, 3.0)})
# ---------------------------------------------------------------------------- BATCH_NORMALIZATION
_BN_PARAMETERS = ("mean_tensor", "variance_tensor", "scale_tensor", "bias_tensor")


@rule("batch_normalization", broken=lambda desc: _batch_normalization_broken(desc),
      functional=lambda x, shape: _batch_normalization_functional(x, shape),
      compare=lambda got, want, x, args: _batch_normalization_compare(got, want, x, args),
      fields=("x", "mean", "variance", "scale", "bias", "input_tensor", "output_tensor", "epsilon", "spatial",
              "fused_activation", "device") + _BN_PARAMETERS, light=True)
def batch_normalization_call(d: Draw, ask: Ask) -> Drawn:
    """Parameters per channel (axis 1 of x; every axis 1 but that one), now and then of x's
    sizes or some axes of 1; epsilon near 1e-5 (now and then 0 or any float32); spatial FALSE
    a quarter of the time (the mean and variance then keep Height and Width below FL_4_0);
    a fused activation a third of the time."""
    x = ask.input(d)
    dt, sizes = ask.data_type, list(x.sizes)
    spatial = d.int(0, 3) != 0
    params = []
    for field in _BN_PARAMETERS:
        how = d.pick(["channel", "channel", "full", "mixed"])
        own = {"channel": [n if i == 1 else 1 for i, n in enumerate(sizes)] if ask.rank >= 2 else [1],
               "full": sizes, "mixed": [n if d.bool() else 1 for n in sizes]}[how]
        if not spatial and ask.rank >= 4 and field in ("mean_tensor", "variance_tensor"):
            own = own[:-2] + sizes[-2:]
        params.append(dml.TensorDesc(dt, own))
    attributes = {"epsilon": d.pick([1e-5, 1e-5, 1e-3, 0.0]) if d.int(0, 7) else d.real(-3.0e38, 3.0e38),
                  "spatial": spatial}
    if d.int(0, 2) == 0:
        attributes["fused_activation"] = _fused(d)
    return Drawn([x, *params], attributes)


@st.composite
def _batch_normalization_broken(draw, desc):
    x = desc.input_tensor
    kinds = ["parameter_sizes", "output_sizes", "output_type", "epsilon", "spatial", "fused_activation"]
    kind = draw(st.sampled_from(kinds))
    if kind == "parameter_sizes":  # a size neither 1 nor the input's
        field = draw(st.sampled_from(_BN_PARAMETERS))
        axis = draw(st.integers(0, x.rank - 1))
        td = getattr(desc, field)
        return replace_fields(desc, **{field: one_more(td, axis, x.sizes[axis] + 1)}), f"{field}.sizes", kind
    if kind == "output_sizes":
        return replace_fields(desc, output_tensor=one_more(desc.output_tensor, draw(st.integers(0, x.rank - 1)))), \
            "output_tensor.sizes", kind
    if kind == "output_type":
        dt = draw(st.sampled_from([t for t in T if t != x.data_type]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, x.sizes)), "output_tensor.data_type", kind
    if kind == "epsilon":
        return replace_fields(desc, epsilon=draw(st.sampled_from(["1", None, [1.0], 1e300, True]))), "epsilon", kind
    if kind == "spatial":
        return replace_fields(desc, spatial=draw(st.sampled_from(["yes", None, 1, 0.0]))), "spatial", kind
    value = draw(st.sampled_from(["bogus", 7, ("relu",), dml.ScaleBias()]))
    return replace_fields(desc, fused_activation=value), "fused_activation", kind


@st.composite
def _batch_normalization_functional(draw, x, shape):
    """Parameters per channel ([C], C the size of x's axis 1), of x's rank, or (now and then)
    of a size that does not fit; epsilon, spatial and the activation now and then hostile."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    numeric = isinstance(x, np.ndarray) and x.dtype.kind in "fiu"
    dtype = x.dtype.newbyteorder("=") if numeric else np.dtype(np.float32)
    channels = shape[1] if len(shape) >= 2 else (shape[0] if shape else 1)
    args = {}
    for name in ("mean", "variance", "scale", "bias"):
        how = draw(st.sampled_from(["channel", "channel", "rank", "wrong"]))
        own = {"channel": [channels], "rank": [n if draw(st.booleans()) else 1 for n in shape] or [1],
               "wrong": [channels + 1]}[how]
        args[name] = rng.uniform(0 if name == "variance" else -2, 2, own).astype(dtype)
    args["epsilon"] = maybe_hostile(draw, draw(st.sampled_from([1e-5, 0.0, 1e-3])))
    args["spatial"] = draw(st.sampled_from([True, True, False, "no"]))
    args["fused_activation"] = draw(st.sampled_from([None, "relu", dml.FusedActivation("sigmoid"), "bogus"]))
    return args, lambda a: spec_named("batch_normalization").reference(a, **args)


def _batch_normalization_compare(got, want, x, args):
    """Within the documented precision."""
    params = [args[k] for k in ("mean", "variance", "scale", "bias")]
    attributes = {k: v for k, v in args.items() if k not in ("mean", "variance", "scale", "bias")}
    assert_within(got, want, spec_named("batch_normalization").tolerance(want, [x, *params], attributes),
                  "BatchNormalization")


def _gemm_compare(got, want, x, args):
    _products_compare(got, want, [x, args["b"]] + ([args["c"]] if "c" in args else []),
                      {k: v for k, v in args.items() if k not in ("b", "c")}, gemm_op)


# ---------------------------------------------------------------------------- CONVOLUTION
@rule("convolution", broken=lambda desc: _convolution_broken(desc),
      functional=lambda x, shape: _convolution_functional(x, shape),
      compare=lambda got, want, x, args: _convolution_compare(got, want, x, args),
      fields=("x", "filter", "bias", "input_tensor", "filter_tensor", "bias_tensor", "output_tensor", "mode",
              "direction", "dimension_count", "strides", "dilations", "start_padding", "end_padding",
              "output_padding", "group_count", "fused_activation", "DimensionCount", "device"), light=True)
def convolution_call(d: Draw, ask: Ask) -> Drawn:
    """An input of small sizes ({N, C, spatial...}), a group count dividing C, FORWARD three
    times in four (BACKWARD with OutputPadding below the stride), 1-3 output channels per
    group, windows of 1-3, strides 1-2 (3 BACKWARD), dilations 1-2, paddings 0-2 (cut where
    the window would not fit), a bias half the time ([C_out] or {1, C_out, 1...}), either
    mode, a fused activation a third of the time. Ranks below 3 as they are (validation's
    to reject)."""
    dt = ask.data_type
    sizes = ask.input_sizes(d, {3: 8, 4: 5, 5: 3}.get(ask.rank, 2))
    x = dml.TensorDesc(dt, sizes)
    if ask.rank < 3:
        return Drawn([x, dml.TensorDesc(dt, sizes)], {})
    spatial, channels = ask.rank - 2, sizes[1]
    groups = d.pick([g for g in range(1, channels + 1) if channels % g == 0])
    backward, per = d.int(0, 3) == 0, d.int(1, 3)
    window, strides, dilations, start, end, adjust = [], [], [], [], [], []
    for n in sizes[2:]:
        w, s, dl, p0, p1 = d.int(1, 3), d.int(1, 3 if backward else 2), d.int(1, 2), d.int(0, 2), d.int(0, 2)
        if not backward and (w - 1) * dl + 1 > n + p0 + p1:
            w, dl = 1, 1
        a = d.int(0, s - 1) if backward else 0
        if backward and (n - 1) * s + (w - 1) * dl + 1 - p0 - p1 + a < 1:
            p0 = p1 = 0
        for values, v in ((window, w), (strides, s), (dilations, dl), (start, p0), (end, p1), (adjust, a)):
            values.append(v)
    cout = groups * per
    fsizes = ([channels, per] if backward else [cout, channels // groups]) + window
    tensors = [x, dml.TensorDesc(dt, fsizes)]
    if d.bool():
        tensors.append(dml.TensorDesc(dt, [cout] if d.bool() else [1, cout] + [1] * spatial))
    attributes = {"strides": strides, "dilations": dilations, "start_padding": start, "end_padding": end,
                  "output_padding": adjust, "group_count": groups, "direction": "backward" if backward else "forward",
                  "mode": d.pick(["cross_correlation", "convolution"])}
    if d.int(0, 2) == 0:
        attributes["fused_activation"] = _fused(d)
    return Drawn(tensors, attributes)


@st.composite
def _convolution_broken(draw, desc):
    out, f, spatial = desc.output_tensor, desc.filter_tensor, desc.dimension_count
    forward = desc.direction == dml.ConvolutionDirection.FORWARD
    axis = draw(st.integers(0, max(0, spatial - 1)))
    choices = {
        "mode": ("mode", draw(st.sampled_from(["bogus", 2, None, 1.5]))),
        "direction": ("direction", draw(st.sampled_from(["sideways", 7, None]))),
        "dimension_count": ("dimension_count", spatial + draw(st.sampled_from([-1, 1]))),
        "group_count": ("group_count", draw(st.sampled_from([0, -1, "2", None]))),
        "fused_activation": ("fused_activation", draw(st.sampled_from(["bogus", 7, ("relu",), dml.ScaleBias()]))),
        "padding_length": ("start_padding", list(desc.start_padding) + [0]),
    }
    if spatial:
        choices["stride_zero"] = ("strides", with_entry(desc.strides, axis, 0))
        choices["dilation_zero"] = ("dilations", with_entry(desc.dilations, axis, 0))
        choices["padding_negative"] = ("end_padding", with_entry(desc.end_padding, axis, -1))
    if forward and spatial:
        choices["output_padding"] = ("output_padding", with_entry(desc.output_padding, axis, 1))
    kinds = sorted(choices) + ["filter", "output_sizes", "output_type"] + (["bias"] if desc.bias_tensor else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "filter":
        return replace_fields(desc, filter_tensor=one_more(f, 1 if forward else 0)), "filter_tensor.sizes", kind
    if kind in ("output_sizes", "output_type"):
        return _broken_output(draw, desc, kind)
    if kind == "bias":
        return replace_fields(desc, bias_tensor=one_more(desc.bias_tensor, draw(st.integers(0, out.rank - 1)))), \
            "bias_tensor.sizes", kind
    name, value = choices[kind]
    return replace_fields(desc, **{name: value}), name, kind


@st.composite
def _convolution_functional(draw, x, shape):
    """A filter (and a bias half the time) of uniform values that fit x's shape ({N, C,
    spatial...}), now and then one that does not; strides, group_count, direction and the
    activation now and then hostile."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    numeric = isinstance(x, np.ndarray) and x.dtype.kind in "fiu"
    dtype = x.dtype.newbyteorder("=") if numeric else np.dtype(np.float32)
    rank = len(shape)
    channels = shape[1] if rank >= 2 else 1
    cout = draw(st.integers(1, 3))
    window = [min(n, draw(st.integers(1, 2))) if n else 1 for n in shape[2:]]
    fshape = [cout, channels + (draw(st.integers(0, 9)) == 0)] + window if rank >= 3 else list(shape)
    args = {"filter": rng.uniform(-1, 1, fshape).astype(dtype)}
    if draw(st.booleans()):
        args["bias"] = rng.uniform(-1, 1, draw(st.sampled_from([[cout], [cout + 1]]))).astype(dtype)
    spatial = max(0, rank - 2)
    args["strides"] = maybe_hostile(draw, [draw(st.integers(1, 2)) for _ in range(spatial)])
    args["start_padding"] = [draw(st.integers(0, 1)) for _ in range(spatial)]
    args["group_count"] = maybe_hostile(draw, 1)
    args["mode"] = draw(st.sampled_from(["cross_correlation", "convolution", dml.ConvolutionMode.CONVOLUTION, "x"]))
    args["fused_activation"] = draw(st.sampled_from([None, "relu", dml.FusedActivation("sigmoid"), "bogus"]))
    return args, lambda a: spec_named("convolution").reference(a, **args)


def _convolution_compare(got, want, x, args):
    _products_compare(got, want, [x, args["filter"]] + ([args["bias"]] if "bias" in args else []),
                      {k: v for k, v in args.items() if k not in ("filter", "bias")}, convolution_op)

