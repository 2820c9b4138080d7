"""The conformance kit: what every operator of the registry (gpudml.ops.SPECS) must do, derived
from its spec, checked by tests/test_conformance.py. Tests import it as a whole
(`from conformance import run_case, ...`): this package's modules by job, re-exported here.

An operator's *rule* (RULES, one entry per spec key) is all the kit needs to know of it
beyond its spec. Each lives in a file of conformance/rules/, one per operator module of
gpudml.ops (slice1.py, padding.py, reduce.py, elementwise.py: a family registers a rule per
row of its table), which registers it with `rule(key, ...)` decorating its `call`;
`discover()` (below) imports every file there, so adding an operator is adding its rule
file, editing nothing shared (rules/_common.py holds helpers several rules use). A rule:

- `call(d, ask)`: a valid call for an input of a given rank and data type (`Ask`): the
  tensor descs of the functional form's tensor arguments and infer_output's keyword
  arguments (`Drawn`), drawn through `d` (a `Draw`: seeded numpy for the sweeps, hypothesis
  for the fuzz tests, so that one function serves both). `ask.sizes`, where given, are the
  input's sizes (a value of a graph); else the rule draws them.
- `broken(desc)`, `functional(x, shape)`, `fields`, `compare`: the fuzz tests' hypothesis
  strategies for one broken field of the operator's own and for hostile functional calls.
- `free`: the support table's tensors whose data type is drawn apart from the input's
  (GATHER's indices); `fill`: buffer contents worth running (default: the spec's sample).

From the rules and the specs the kit draws valid cases (cases.py: any feature level, row,
rank and type the support table lists (tables.py), the layouts of layouts.py), runs them
(running.py, `run_case`: roomy buffers of random bits, only the output's elements written,
inputs untouched) and checks them against `spec.expected_outputs` (bit-exact, or within the
spec's documented tolerance); it breaks descriptions and calls (hostile.py), parses the
stored DirectML pages (pages.py: tests/data/pages, tests/data/seeds) and draws random graphs
of the chainable operators (graphs.py, `RandomGraph`).

Budget (budget.py): the default run is CI-sized and derandomized (the same examples every
run); with GPUDML_FUZZ_EXAMPLES=N every @given test tries N fresh random examples (long runs).
"""

from .budget import (
    COUNTS,
    EXECUTE_EXAMPLES,
    FUNCTIONAL_EXAMPLES,
    INVALID_EXAMPLES,
    VALID_EXAMPLES,
    budget,
    long_run,
)
from .cases import (
    Case,
    draw_case,
    takes,
    valid_cases,
)
from .draws import (
    ALL_TYPES,
    FL,
    HIGHEST,
    MAX_SIZE,
    D,
    Draw,
    HypothesisDraw,
    RandomDraw,
    T,
)
from .graphs import (
    EXACT_ROWS,
    GRAPH_ELEMENTS,
    RandomGraph,
    chainable,
    chainable_specs,
    consumer_specs,
    elementwise_specs,
    every_type_chainable_specs,
    run_random_graph,
)
from .hostile import (
    NOT_INTEGERS,
    REDUCED_AXES_KINDS,
    broken_choice,
    broken_parts,
    broken_reduced_axes,
    broken_tensor,
    hostile_arrays,
    hostile_inputs,
    maybe_hostile,
    odd_arrays,
    one_more,
    pick_axis,
    replace_fields,
    with_entry,
)
from .layouts import (
    LAYOUTS,
    drawn_strides,
    laid_out,
    padded_strides,
    tensor_at,
    with_tensor,
)
from .pages import (
    DATA,
    PAGES_DIR,
    SEEDS_DIR,
    as_printed,
    example_arrays,
    is_printed,
    page_arrays,
    page_blocks,
    page_of,
    page_tables,
    page_text,
    printed_tensors,
    table_rows,
    untyped_as_the_page,
)
from .registry import (
    RULES,
    Ask,
    Drawn,
    Rule,
    discover,
    rule,
)
from .running import (
    SMALL_BINDING,
    SMALL_BUFFER,
    assert_outputs_equal,
    compile_case,
    compile_variant,
    desc_of_call,
    element_offsets,
    limited,
    run_case,
    run_every_variant,
    run_random_variant,
    segments_of,
    variants,
)
from .tables import (
    accepts,
    desc_types,
    lowest_level,
    row_accepts,
    table_fields,
    tables,
)

discover()

# Helpers of rules that tests use (the rules themselves: RULES, or conformance.rules.<module>).
from .rules.argminmax import tie_values  # noqa: E402
from .rules.gather import index_values  # noqa: E402

__all__ = [
    "ALL_TYPES",
    "Ask",
    "COUNTS",
    "Case",
    "D",
    "DATA",
    "Draw",
    "Drawn",
    "EXACT_ROWS",
    "EXECUTE_EXAMPLES",
    "FL",
    "FUNCTIONAL_EXAMPLES",
    "GRAPH_ELEMENTS",
    "HIGHEST",
    "HypothesisDraw",
    "INVALID_EXAMPLES",
    "LAYOUTS",
    "MAX_SIZE",
    "NOT_INTEGERS",
    "PAGES_DIR",
    "REDUCED_AXES_KINDS",
    "RULES",
    "RandomDraw",
    "RandomGraph",
    "Rule",
    "SEEDS_DIR",
    "SMALL_BINDING",
    "SMALL_BUFFER",
    "T",
    "VALID_EXAMPLES",
    "accepts",
    "as_printed",
    "assert_outputs_equal",
    "broken_choice",
    "broken_parts",
    "broken_reduced_axes",
    "broken_tensor",
    "budget",
    "chainable",
    "chainable_specs",
    "compile_case",
    "compile_variant",
    "consumer_specs",
    "desc_of_call",
    "desc_types",
    "discover",
    "draw_case",
    "drawn_strides",
    "element_offsets",
    "elementwise_specs",
    "every_type_chainable_specs",
    "example_arrays",
    "hostile_arrays",
    "hostile_inputs",
    "index_values",
    "is_printed",
    "laid_out",
    "limited",
    "long_run",
    "lowest_level",
    "maybe_hostile",
    "odd_arrays",
    "one_more",
    "padded_strides",
    "page_arrays",
    "page_blocks",
    "page_of",
    "page_tables",
    "untyped_as_the_page",
    "page_text",
    "pick_axis",
    "printed_tensors",
    "replace_fields",
    "row_accepts",
    "rule",
    "run_case",
    "run_every_variant",
    "run_random_graph",
    "run_random_variant",
    "segments_of",
    "table_fields",
    "table_rows",
    "tables",
    "takes",
    "tensor_at",
    "tie_values",
    "valid_cases",
    "variants",
    "with_entry",
    "with_tensor",
]
