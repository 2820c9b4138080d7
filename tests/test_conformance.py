"""The conformance kit (tests/conformance/) run for every operator of the registry
(gpudml.ops.SPECS), each from its spec and its rule (tests/conformance/rules/):

- the page's examples through the functional API and the desc API on every adapter, and
  through the reference; the examples and the support tables against the stored page;
- feature levels: at every level, rank 1-8 and data type, validation accepts exactly what
  the support table's row allows, and a rejection names the level that would accept it;
  a description each row takes runs on a Device of that level;
- the layout sweep: every data type x ranks 1-8, each in one of packed, strided, broadcast
  (stride 0) inputs and strided outputs (whose gaps keep their bytes) by a covering design
  (every type and every rank meets every layout), under the strategies in turn:
  bit-exact for data movement and integers, within the spec's documented tolerance for
  float arithmetic; the types the table does not list are rejected;
- every eligible strategy and each option set its planner offers the autotuner, on the same
  inputs: the same result;
- random graphs over every chainable operator, with consumers (Reduce, ArgMax, ArgMin)
  reading through the chains: fused results equal the unfused ones;
- the fuzz tests (hypothesis): valid descriptions against the reference (half of them on
  Devices with 256-byte bindings, and 2 KiB buffers: large tensors' segments and parts in
  every operator), invalid ones raise
  InvalidArgumentError naming the operator and the field, hostile execute arguments and
  hostile functional calls.

Fuzz budget: the default run is CI-sized and derandomized (the same examples every run).
For a long run with fresh random examples:

    GPUDML_FUZZ_EXAMPLES=5000 python -m pytest -q tests/test_conformance.py -k fuzz

(every @given test then tries that many examples, per adapter where it runs on each).
GPUDML_FUZZ_REPORT=counts.json writes the number of cases tried per operator and kind.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conformance import (
    ALL_TYPES,
    COUNTS,
    EXECUTE_EXAMPLES,
    FUNCTIONAL_EXAMPLES,
    INVALID_EXAMPLES,
    LAYOUTS,
    RULES,
    SMALL_BUFFER,
    VALID_EXAMPLES,
    Ask,
    RandomDraw,
    accepts,
    as_printed,
    assert_outputs_equal,
    broken_tensor,
    budget,
    consumer_specs,
    desc_of_call,
    desc_types,
    draw_case,
    elementwise_specs,
    every_type_chainable_specs,
    example_arrays,
    hostile_arrays,
    hostile_inputs,
    is_printed,
    limited,
    long_run,
    lowest_level,
    odd_arrays,
    page_of,
    page_tables,
    page_text,
    printed_tensors,
    run_case,
    run_every_variant,
    run_random_graph,
    run_random_variant,
    segments_of,
    table_fields,
    table_rows,
    tables,
    takes,
    untyped_as_the_page,
    valid_cases,
)
from conftest import ADAPTERS, assert_bits_equal, bits, get_device
from hypothesis import given, reject
from hypothesis import strategies as st
from isolated import limited_device

import gpudml as dml
from gpudml import examples
from gpudml.ops import SPECS, tensor_fields
from gpudml.ops.spec import one_by_one_outputs, regroup, tensor_arguments, tensor_groups
from gpudml.runtime.tensor import logical_from_raw
from gpudml.testing import assert_within

FL, T = dml.FeatureLevel, dml.DataType
KEYS = [s.key for s in SPECS]


@pytest.mark.any_class
def test_every_operator_has_a_rule():
    """Adding an operator is adding its rule file (tests/conformance/rules/, which
    conformance.registry.discover imports): nothing else in the kit. Every spec has a rule,
    registered by a rule file (not by the kit's modules, nor rules/_common.py), and every
    rule file registers one."""
    assert sorted(RULES) == sorted(KEYS)
    folder = Path(__file__).resolve().parent / "conformance" / "rules"
    files = {}
    for key, rule in RULES.items():
        path = Path(sys.modules[rule.call.__module__].__file__).resolve()
        assert path.parent == folder and not path.name.startswith("_"), (key, rule.call.__module__)
        files.setdefault(path.name, []).append(key)
    assert sorted(files) == sorted(p.name for p in folder.glob("*.py") if not p.name.startswith("_"))


# ============================================================================ the page
@pytest.mark.parametrize("example", examples.EXAMPLES, ids=lambda e: e.name)
def test_page_examples(device, example):
    """Each example through the functional API and through the desc API (the desc its call
    infers, compiled and executed) on each adapter, and through the reference: the page's
    output, bit for bit (the page's numbers in value where the spec documents a tolerance)."""
    spec = next(s for s in SPECS if s.key == example.operator)
    want = example.expected if isinstance(example.expected, list) else [example.expected]

    def check(got, how):
        got = got if isinstance(got, (list, tuple)) else [got]
        assert len(got) == len(want), how
        for g, w in zip(got, want):
            if spec.tolerance is None:
                assert_bits_equal(g, w)
            else:
                assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w, equal_nan=True), how

    check(examples.run_on(device, example), "functional")
    desc, arrays = desc_of_call(spec, *examples.positional(example), **example.args)
    compiled = device.compile_operator(device.create_operator(desc))
    check(compiled.grouped(compiled.execute(arrays)), "desc")
    check(examples.run_reference(example), "reference")


@pytest.mark.any_class
@pytest.mark.parametrize("spec", SPECS, ids=KEYS)
def test_examples_and_support_tables_are_the_pages(spec):
    """Every array of every example (inputs, array arguments, outputs) is a tensor its stored
    page prints, and the spec's support tables are the page's: the same levels, dimension
    counts and data types for every tensor (Reduce: one table per group of functions, the
    groups whose heading names functions mapped to them)."""
    name = page_of(spec)
    text = page_text(name)
    printed = printed_tensors(text, name)
    for example in spec.examples:
        for array in example_arrays(example):
            assert is_printed(array, printed), (example.name, as_printed(array))
    groups = page_tables(text)
    ours = {key: untyped_as_the_page(table_rows(table), groups) for key, table in tables(spec).items()}
    if list(ours) == [None]:
        assert [rows for _, rows in groups] == [ours[None]], name
        return
    assert sorted(map(repr, (rows for _, rows in groups))) == sorted(set(map(repr, ours.values())))
    for heading, rows in groups:
        for key in ours:
            if re.search(rf"\b{key.name}\b", heading):
                assert ours[key] == rows, (key.name, heading)


def test_gpudml_examples_runs_every_example(capsys):
    """`gpudml examples` runs every operator's examples and names each; none fails."""
    from gpudml import cli

    assert cli.main(["examples"]) == 0
    out = capsys.readouterr().out
    for spec in SPECS:
        assert all(f"== {e.name}: {spec.name} example " in out for e in spec.examples), spec.key
    assert " 0 failed" in out


# ============================================================================ the functional form on Tensors
@pytest.mark.parametrize("spec", SPECS, ids=KEYS)
def test_functional_tensors_in_tensors_out(device, spec):
    """The functional form on Tensors gives Tensors (nothing read back), and so does a first
    Tensor argument beside numpy arrays (they are uploaded); a next call takes the results
    on the GPU. The values are the reference's. A call of no tensor (a generator's) gives
    numpy arrays."""
    rng = np.random.default_rng([KEYS.index(spec.key), 5])
    case = draw_case(spec, RandomDraw(rng), level=device.feature_level, layout="packed")
    inputs = tensor_fields(case.desc)[0]
    arrays = [logical_from_raw(b, d) for b, (_, d) in zip(case.buffers(rng), inputs, strict=True)]
    wants, tolerances = spec.expected_outputs(case.desc, arrays)
    groups = tensor_groups(case.desc)[0]
    call = dml.FUNCTIONS[spec.functional_name]
    if not groups:  # a generator's call (no tensor in): numpy out, the reference's values
        (out,) = one_by_one_outputs(case.desc, call(device=device, **spec.arguments(case.desc)))
        assert isinstance(out, np.ndarray)
        assert_within(out, wants[0], tolerances[0], spec.name)
        return
    numpy_args = regroup(groups, arrays)
    tensor_args = regroup(groups, [device.tensor(a) for a in arrays])
    first = tensor_args[0] if not isinstance(tensor_args[0], list) else [tensor_args[0][0], *numpy_args[0][1:]]
    for tensors in (tensor_args, [first, *numpy_args[1:]]):
        args, kwargs = tensor_arguments(spec, case.desc, tensors)  # (by name after an optional input left out)
        outs = one_by_one_outputs(case.desc, call(*args, **kwargs, **spec.arguments(case.desc)))
        for out, want, tolerance in zip(outs, wants, tolerances, strict=True):
            assert isinstance(out, dml.Tensor)
            assert_within(out.numpy(), want, tolerance, spec.name)
            again = dml.slice(out, [0] * out.desc.rank, list(out.shape))  # chained on the GPU
            assert isinstance(again, dml.Tensor) and np.array_equal(bits(again.numpy()), bits(out.numpy()))


# ============================================================================ feature levels
def _free_fields(rule, key, table) -> list[str]:
    return [f for f in table_fields(table)[1:] if f in rule.free_fields(key)]


def _type_sets(rule, key, table, full: bool = False) -> list[dict]:
    """Every data type for the input, and for each free tensor of the rule every type too:
    with one free tensor the full product; with two or more (QUANTIZE_LINEAR's scale and zero
    point, the quantized convolution's, ...: 1,331 sets x 8 ranks x every level, 8-23 s a
    spec) an orthogonal array of strength 2 (every pair of tensors meets in every pair of
    types: the input's type a, the first free one's b, the i-th's a + i b modulo the prime
    count of types), which is what a table's rows can tell apart (a type list per tensor,
    checked tensor by tensor, or two tensors' types against each other); `full` (the
    `exhaustive` test below) the whole product."""
    fields = table_fields(table)
    free = _free_fields(rule, key, table)
    n = len(ALL_TYPES)
    if full or len(free) < 2 or any(n % p == 0 for p in range(2, n)):
        combos = [(main, *chosen) for main in ALL_TYPES for chosen in itertools.product(ALL_TYPES, repeat=len(free))]
    else:
        assert len(free) < n
        combos = [(ALL_TYPES[a], ALL_TYPES[b], *(ALL_TYPES[(a + i * b) % n] for i in range(1, len(free))))
                  for a in range(n) for b in range(n)]
    out = []
    for main, *chosen in combos:
        types = {f: main for f in fields}
        types.update(zip(free, chosen))
        out.append(types)
    return out


def never_listed(table, types: dict) -> bool:
    """Whether no row of the table lists any of these tensors' types."""
    return not any(t in row.types[f] for row in table.rows for f, t in types.items())


@pytest.mark.any_class
@pytest.mark.parametrize("spec", SPECS, ids=KEYS)
def test_feature_levels_accept_what_the_table_allows(spec):
    """At every feature level, for every rank 1-8 and every data type (of the input and of
    each tensor whose type is free: every pair of them, _type_sets), validation accepts exactly
    what the table's row at that level allows; a rejection names the operator, and the level that would accept the
    description where one would (no later than the first that accepts it all; none where
    the rank is the row's and no level lists its types), or the level the operator was introduced at."""
    check_feature_levels(spec, full=False)


@pytest.mark.exhaustive
@pytest.mark.any_class
@pytest.mark.parametrize("spec", [s for s in SPECS if any(len(_free_fields(RULES[s.key], key, table)) >= 2
                                                         for key, table in tables(s).items())], ids=lambda s: s.key)
def test_feature_levels_every_type_combination(spec):
    """The test above over the full product of the free tensors' types (-m exhaustive)."""
    check_feature_levels(spec, full=True)


def check_feature_levels(spec, full: bool) -> None:
    rule = RULES[spec.key]
    for key, table in tables(spec).items():
        for rank in range(1, 9):
            for types in _type_sets(rule, key, table, full):
                ask = Ask(min(FL), rank, types, key, (2,) * rank)
                drawn = rule.call(RandomDraw(np.random.default_rng(rank)), ask)
                desc = spec.infer_output(*drawn.tensors, **drawn.attributes)
                actual = desc_types(desc, table)
                first = lowest_level(table, rank, actual)
                for level in FL:
                    what = (spec.key, key, level.name, rank, {f: t.name for f, t in actual.items()})
                    try:
                        spec.validate(desc, level)
                    except dml.InvalidArgumentError as exc:
                        message = str(exc)
                        assert not accepts(table, level, rank, actual), (what, message)
                        assert message.startswith(f"{table.op}: "), message
                        named = re.search(r"it needs (FL_\d_\d) or later", message)
                        if level < table.introduced:
                            assert f"introduced at {table.introduced.name}" in message, message
                        elif first is not None:
                            assert named and level < FL[named.group(1)] <= first, (what, message)
                        elif never_listed(table, actual) and rank in table.row_for(level).ranks:
                            assert named is None, (what, message)
                    else:
                        assert accepts(table, level, rank, actual), what


@pytest.mark.parametrize("spec", SPECS, ids=KEYS)
def test_each_table_row_runs_at_its_level(at_level, spec):
    """A description each row of the table takes (a rank and types of the row's) runs on a
    Device validating at the row's level, within the spec's precision of the reference."""
    for key, table in tables(spec).items():
        for i, row in enumerate(table.rows):
            rng = np.random.default_rng([KEYS.index(spec.key), i])
            case = draw_case(spec, RandomDraw(rng), level=row.level, key=key, layout="packed")
            assert case.accepted
            run_case(at_level(row.level), case, rng, what=row.level.name)


# ============================================================================ the layout sweep
def _sweep():
    """(spec, data type, rank) of the layout sweep: every data type at every rank, or at one
    rank rotating with the type for a light rule (another row runs the same kernels)."""
    for spec in SPECS:
        light = RULES[spec.key].light
        for data_type in ALL_TYPES:
            for rank in range(1, 9):
                if not light or rank == 1 + (KEYS.index(spec.key) + int(data_type)) % 8:
                    yield pytest.param(spec, data_type, rank, id=f"{spec.key}-{data_type.name}-{rank}")


def sweep_layout(data_type, rank: int) -> int:
    """The layout (an index of LAYOUTS) the sweep runs at (data type, rank): a covering
    design, not the full product. Each data type meets every layout twice over its 8 ranks,
    each rank meets every layout over the types, and the strategy rotation (sweep_strategy)
    pairs each layout with each eligible strategy: every kernel path of the product, a
    quarter of its kernels (each layout at each type and rank compiled a kernel of its own,
    and a cold shader cache paid for each)."""
    return (rank + int(data_type)) % len(LAYOUTS)


def sweep_strategy(data_type, rank: int, count: int) -> int:
    """The strategy (an index of the case's eligible ones) the sweep forces at (data type,
    rank): with sweep_layout, every (layout, strategy) pair for up to 4 strategies over 2
    types, up to 6 over all types."""
    return (3 * rank + int(data_type) + (rank - 1) // 4) % count


def _run_sweep_case(device, spec, data_type, rank: int, i: int, pick_strategy) -> None:
    """One case of the layout sweep: LAYOUTS[i] with a call of the rule's (a table of its own
    in turn where the spec has several), under the strategy pick_strategy(count) indexes among
    the eligible ones: the reference's result, the output's gaps untouched; a data type or
    rank the table does not list is rejected."""
    options = tables(spec)
    keys = [k for k, t in options.items() if takes(t, device.feature_level, rank, data_type)] or list(options)
    rng = np.random.default_rng([KEYS.index(spec.key), int(data_type), rank, i])
    key = keys[(rank * len(LAYOUTS) + i) % len(keys)]
    case = draw_case(spec, RandomDraw(rng), level=device.feature_level, rank=rank, data_type=data_type, key=key,
                     layout=LAYOUTS[i])
    if not case.accepted:
        with pytest.raises(dml.InvalidArgumentError, match=rf"(data_type {data_type.name}|DimensionCount {rank}) "
                                                           rf"is not supported at {device.feature_level.name}"):
            device.create_operator(case.desc)
        return
    operator = device.create_operator(case.desc)
    strategies = device.compile_operator(operator).strategies
    strategy = strategies[pick_strategy(len(strategies))]
    run_case(device, case, rng, device.compile_operator(operator, strategy), what=LAYOUTS[i])


@pytest.mark.parametrize(("spec", "data_type", "rank"), list(_sweep()))
def test_layout_sweep(device, spec, data_type, rank):
    """The layout sweep_layout gives (data type, rank), under the strategy sweep_strategy
    gives (_run_sweep_case)."""
    _run_sweep_case(device, spec, data_type, rank, sweep_layout(data_type, rank),
                    lambda count: sweep_strategy(data_type, rank, count))


@pytest.mark.exhaustive
@pytest.mark.parametrize(("spec", "data_type", "rank"), list(_sweep()))
def test_layout_sweep_every_layout(device, spec, data_type, rank):
    """The full product, on demand (`-m exhaustive`): every layout at every (data type, rank),
    the strategies in turn (_run_sweep_case)."""
    for i in range(len(LAYOUTS)):
        _run_sweep_case(device, spec, data_type, rank, i, lambda count, i=i: (rank + i) % count)


@pytest.mark.any_class
def test_the_sweep_covers_every_layout_with_every_type_rank_and_strategy():
    """The covering design of the layout sweep: for every data type, every layout (twice over
    the 8 ranks); for every rank, every layout over the types; for up to 4 strategies and the
    two float types (a float-only operator), every (layout, strategy) pair."""
    for data_type in ALL_TYPES:
        assert sorted(sweep_layout(data_type, r) for r in range(1, 9)) == sorted(list(range(len(LAYOUTS))) * 2)
    for rank in range(1, 9):
        assert {sweep_layout(t, rank) for t in ALL_TYPES} == set(range(len(LAYOUTS)))
    floats = (T.FLOAT32, T.FLOAT16)
    for count in range(1, 5):
        pairs = {(sweep_layout(t, r), sweep_strategy(t, r, count)) for t in floats for r in range(1, 9)}
        assert len(pairs) == len(LAYOUTS) * count, count


# ============================================================================ strategies
STRATEGY_CASES = 8
#: For a light rule (its kernels another rule's or its own test file's: GEMM's variants are
#: tests/test_gemm.py's), fewer.
LIGHT_STRATEGY_CASES = 3
#: How many of the cases each variant (a strategy and an option set) runs in: a covering
#: design, not the product of cases and variants. The first two cases that offer a variant
#: run it (two draws of type, rank and layout); a variant only a later case offers runs
#: there, so every variant the cases reach still runs. The product ran 6,313 variants of a
#: case (one adapter class, both adapters), the design 2,950 (2026-11-30, the planners
#: counted); each was a kernel of its own.
VARIANT_CASES = 2


def _every_variant(device, spec, most: int | None) -> None:
    """Random cases (the layouts in turn) under every strategy that can run them, each with
    its own plan and with each option set the planner offers the autotuner (Planner.variants):
    on the same inputs, the same result (the reference's, within the spec's precision); each
    variant in `most` cases at most (None: in every case)."""
    ran, runs = set(), Counter()
    for seed in range(LIGHT_STRATEGY_CASES if RULES[spec.key].light else STRATEGY_CASES):
        rng = np.random.default_rng([KEYS.index(spec.key), seed, 99])
        case = draw_case(spec, RandomDraw(rng), level=device.feature_level, layout=LAYOUTS[seed % len(LAYOUTS)])
        ran |= run_every_variant(device, case, seed, runs if most else None, most)
    assert ran <= set(spec.planner.strategies) and len(ran) >= 2, ran


@pytest.mark.parametrize("spec", SPECS, ids=KEYS)
def test_every_strategy_and_variant(device, spec):
    """Every variant in the first VARIANT_CASES cases that offer it (_every_variant)."""
    _every_variant(device, spec, VARIANT_CASES)


@pytest.mark.exhaustive
@pytest.mark.parametrize("spec", SPECS, ids=KEYS)
def test_every_strategy_and_variant_in_every_case(device, spec):
    """The product, on demand (`-m exhaustive`): every variant in every case."""
    _every_variant(device, spec, None)


# ============================================================================ random graphs
@pytest.mark.parametrize("shard", range(4))
def test_random_graphs_fused_match_unfused(device, shard):
    """10 random graphs per shard and adapter, each of up to 12 nodes: chains of every
    chainable operator with element-wise rows between them, values read by Reduce, ArgMax,
    ArgMin and the scans through the chains; fused and node by node they agree
    (conformance.run_random_graph). Over a shard, every chainable index rule, a consumer and an
    element-wise row are inside fused kernels (the seeds are fixed: this cannot drift; the
    graphs of a shard draw each operator that takes a value once before any twice)."""
    fused_names, drawn = set(), set()
    for seed in range(shard * 10, shard * 10 + 10):
        graph, fused = run_random_graph(device, seed, nodes=int(np.random.default_rng(seed).integers(1, 13)),
                                        drawn=drawn)
        fused_names |= graph.fused_names(fused)
    # Every chainable index rule of every data type (versions of one operator share theirs:
    # Padding1 Padding's, DepthToSpace1 DepthToSpace's) is inside fused kernels; the
    # resampling operators' (four types) are drawn too, and fused for sure in test_resample.py.
    fused_planners = {id(s.planner) for s in SPECS if s.name in fused_names}
    assert not [s.name for s in every_type_chainable_specs() if id(s.planner) not in fused_planners], fused_names
    assert {s.name for s in consumer_specs()} & fused_names, fused_names
    assert {s.name for s in elementwise_specs()} & fused_names, fused_names


# ============================================================================ fuzz
@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    path = os.environ.get("GPUDML_FUZZ_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump({" ".join(k): v for k, v in sorted(COUNTS.items())}, f, indent=1)


def _share(spec, examples: int, part: int = 4, least: int = 10) -> int:
    """A fuzz test's examples for `spec`: a `part`-th (at least `least`) for a light rule
    (conformance.Rule.light: its kernels are another rule's, or its own test file's)."""
    return max(least, examples // part) if RULES[spec.key].light and long_run() is None else examples


def _private(adapter: str):
    """Devices (by feature level) on a context of this test's own (the shared context's
    pipelines): its buffer pool counts only what the test does."""
    made = {}

    def at(level):
        if level not in made:
            made[level] = limited_device(adapter, feature_level=level, shared_pipelines=True)
        return made[level]
    return at


#: Where a case of the fuzz of valid descriptions runs: the suite's Device (half the cases),
#: one with 256-byte storage bindings (every tensor past 256 bytes bound as several
#: segments), or one with 256-byte bindings and 2 KiB buffers (tensors in several buffers).
WHERE = ("device", "device", "segmented", "parts")


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=KEYS)
def test_fuzz_valid_descriptions_match_reference(adapter, spec):
    """Random valid descriptions (conformance.valid_cases) on each adapter, under a random
    eligible strategy and variant, Tensors in roomy buffers of random bits (half the cases
    also through numpy arrays of an odd layout): the reference's result, nothing else written.
    Each case draws its Device from WHERE (256-byte bindings, also 2 KiB buffers, or the
    suite's; hypothesis deals them unevenly): every operator's large-tensor paths, segmented
    bindings and tensors in parts, on the same random stream (one stream, not two: each case
    is a kernel of its own, and a cold shader cache pays for each)."""
    examples = _share(spec, VALID_EXAMPLES, part=8)
    seen = Counter()

    @budget(examples)
    @given(case=valid_cases(spec), seed=st.integers(0, 2**32 - 1),
           numpy_layout=st.sampled_from([None, None, "strided", "readonly", "bigendian", "2d"]),
           where=st.sampled_from(WHERE))
    def check(case, seed, numpy_layout, where):
        COUNTS["valid", spec.name, adapter] += 1
        if where == "device":
            dev = get_device(adapter, case.level)
        else:
            dev = limited(adapter, case.level, buffer=SMALL_BUFFER if where == "parts" else None)
        try:
            compiled, variant = run_random_variant(dev, case, seed, numpy_layout)
        except dml.UnsupportedError as exc:  # parts of 2 KiB cap the segments: a big case may not fit
            assert where == "parts" and "storage bindings" in str(exc), exc
            reject()
        COUNTS["valid variant", spec.name, variant, adapter] += 1
        COUNTS["valid where", spec.name, where, adapter] += 1
        seen[where] += 1
        seen["in segments"] += max(segments_of(compiled).values()) > 1

    check()
    # Hypothesis does not deal WHERE evenly (2 of 100 cases in parts for one operator, 76 on
    # the plain Device for another), and a small case fits one 256-byte binding: at least two
    # cases in segments and two in parts. A light rule's dozen cases (its kernels another
    # rule's, which meets both) need not meet the 2 KiB buffers.
    heavy = examples >= 40
    assert seen["in segments"] >= (2 if heavy else 1) and seen["parts"] >= (2 if heavy else 0), seen


@pytest.mark.any_class
@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=KEYS)
def test_fuzz_invalid_descriptions_raise_invalid_argument(spec):
    """A valid description with one tensor or one of the operator's own fields broken raises
    exactly InvalidArgumentError naming the operator and the field, before any GPU work (no
    buffer made on a pool of the test's own). Validation is adapter-independent: the first
    adapter only."""
    rule, devices = RULES[spec.key], _private(ADAPTERS[0])

    @budget(_share(spec, INVALID_EXAMPLES))
    @given(data=st.data())
    def check(data):
        case = data.draw(valid_cases(spec))
        names = [name for name, _ in tensor_fields(case.desc)[0] + tensor_fields(case.desc)[1]]
        field = data.draw(st.sampled_from(names + ["operator field"] * 2))
        if field == "operator field":
            build, fragment, kind = data.draw(rule.broken(case.desc))
        else:
            build, fragment, kind = data.draw(broken_tensor(case.desc, field))
        COUNTS["invalid", spec.name] += 1
        COUNTS["invalid kind", spec.name, kind] += 1
        device = devices(case.level)
        with pytest.raises(dml.InvalidArgumentError) as info:
            device.create_operator(build())
        assert type(info.value) is dml.InvalidArgumentError, (kind, type(info.value))
        message = str(info.value)
        assert spec.name in message and fragment in message, (kind, fragment, message)
        assert device._ctx.pool.allocations == 0  # no GPU work

    check()


@pytest.mark.any_class
@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=KEYS)
def test_fuzz_execute_hostile_arguments(spec):
    """CompiledOperator.execute with one input broken: InvalidArgumentError naming the
    operator and the input, before any upload: no buffer made, none taken from the pool (of
    the test's own; a Tensor dying meanwhile may give one back). First adapter.

    The checks are the same for every description, so the examples share two compiled
    operators (the first two cases drawn into their slots; every example still draws a case,
    so replaying a failing one within the run draws what it drew) instead of compiling one
    each: 108 pipelines compiled instead of 1,870 (53 s -> 27 s alone), the same arguments broken."""
    devices, compiled_in = _private(ADAPTERS[0]), {}

    @budget(_share(spec, EXECUTE_EXAMPLES))
    @given(data=st.data())
    def check(data):
        slot, drawn = data.draw(st.integers(0, 1)), data.draw(valid_cases(spec))
        if slot not in compiled_in:
            device = devices(drawn.level)
            compiled_in[slot] = (drawn, device, device.compile_operator(device.create_operator(drawn.desc)))
        case, device, compiled = compiled_in[slot]
        inputs, fragment = data.draw(hostile_inputs(device, case))
        COUNTS["execute", spec.name] += 1
        pool = device._ctx.pool
        before = (pool.allocations, pool.pooled_bytes)
        with pytest.raises(dml.InvalidArgumentError) as info:
            compiled.execute(inputs)
        assert type(info.value) is dml.InvalidArgumentError
        message = str(info.value)
        assert message.startswith(spec.name) and fragment in message, message
        assert pool.allocations == before[0] and pool.pooled_bytes >= before[1]

    check()


@pytest.mark.any_class
@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=KEYS)
def test_fuzz_functional_api_hostile_arguments(adapter, spec):
    """Hostile arguments to the functional form (non-arrays, lists, scalars, odd dtypes,
    empty or 9-d arrays, wrong argument types and values): exactly InvalidArgumentError
    naming the function (or the operator) and an argument, an UnsupportedError naming what the
    adapter lacks (FLOAT64 arithmetic on GL), or the reference's result; the arrays given are
    never written."""
    rule, fn = RULES[spec.key], spec.functional_name
    device, call = get_device(adapter), dml.FUNCTIONS[fn]

    @budget(_share(spec, FUNCTIONAL_EXAMPLES))
    @given(data=st.data())
    def check(data):
        if data.draw(st.integers(0, 5)) == 0:
            x, shape = data.draw(hostile_arrays()), (4,)
        else:
            x = data.draw(odd_arrays())
            shape = x.shape
        args, expected, *first = data.draw(rule.functional(x, shape))
        COUNTS["functional", fn, adapter] += 1
        copy = x.copy() if isinstance(x, np.ndarray) else None
        try:
            got = call(first[0] if first else x, device=device, **args)
        except dml.InvalidArgumentError as exc:
            assert type(exc) is dml.InvalidArgumentError
            message = str(exc)
            assert message.startswith((fn, spec.name)), message
            assert any(field in message for field in rule.fields), message
            COUNTS["functional rejected", fn, adapter] += 1
        except dml.UnsupportedError as exc:  # what the adapter lacks (FLOAT64 arithmetic on GL), named
            assert type(exc) is dml.UnsupportedError and "lacks" in str(exc), str(exc)
            COUNTS["functional unsupported", fn, adapter] += 1
        else:
            # (results come in native byte order; a hostile x a generator's call never read: as it is)
            native = x.astype(x.dtype.newbyteorder("=")) if isinstance(x, np.ndarray) else x
            with np.errstate(all="ignore"):
                want = expected(native)
            if rule.compare is not None:
                rule.compare(got, want, native, args)
            else:
                assert_outputs_equal(got, want)
        if copy is not None:  # inputs are never written
            assert x.dtype == copy.dtype and x.shape == copy.shape
            assert (x.tolist() == copy.tolist()) if x.dtype.hasobject else x.tobytes() == copy.tobytes()

    check()


@pytest.mark.any_class
def test_fuzz_long_run_flag_sets_the_budget(monkeypatch):
    """GPUDML_FUZZ_EXAMPLES=N: N fresh random examples per test; unset: the CI-sized,
    derandomized default (the same examples every run)."""
    monkeypatch.delenv("GPUDML_FUZZ_EXAMPLES", raising=False)
    assert long_run() is None
    default = budget(VALID_EXAMPLES)
    assert default.max_examples == VALID_EXAMPLES and default.derandomize and default.database is None
    monkeypatch.setenv("GPUDML_FUZZ_EXAMPLES", "7")
    assert long_run() == 7
    long = budget(VALID_EXAMPLES)
    assert long.max_examples == 7 and not long.derandomize
    assert "GPUDML_FUZZ_EXAMPLES" in __doc__
