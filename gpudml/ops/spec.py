"""OpSpec: what DirectML says about one operator, declared once.

Each module in gpudml/ops/ declares its operator's `SPEC` (or, for a family of operators
that differ only in a formula, one spec per row of a table: `SPECS`); the registry
(ops/__init__.py), the functional API (gpudml/functional.py), the command line, `gpudml
examples`, `gpudml.reference`, the docs and the conformance kit are derived from the specs.
A spec holds its `planner` (an instance of the kernel layer's protocol, made by the
operator's kernel family: gpudml/kernels/) and nothing else of how it runs. docs/adding-an-operator.md
walks through one operator and one table row.

Also here: support tables as data (the "Tensor support" tables of the DirectML pages), and
the tensors of a desc by role (`tensor_fields`). Nothing here imports wgpu.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.base import Planner
from ..tensor_desc import TensorDesc
from ..types import DataType, FeatureLevel, type_list


# ---------------------------------------------------------------------------- support tables
@dataclass(frozen=True)
class SupportRow:
    """One row of a 'Tensor support' table: from `level` on, these ranks and types."""

    level: FeatureLevel
    ranks: frozenset[int]
    types: dict[str, frozenset[DataType]]  # tensor field name -> allowed data types
    #: Tensors whose dimension counts the page lists apart from the first tensor's, `ranks`
    #: (ROI_ALIGN's ROITensor 2-4 beside an InputTensor of 4): field name -> ranks.
    tensor_ranks: dict[str, frozenset[int]] = dataclasses.field(default_factory=dict)

    def ranks_of(self, field: str) -> frozenset[int]:
        """The dimension counts the row allows tensor `field`."""
        return self.tensor_ranks.get(field, self.ranks)


class SupportTable:
    """The rows of one operator (or one function of it), highest level first."""

    def __init__(self, op: str, rows: list[SupportRow]):
        self.op = op
        self.rows = sorted(rows, key=lambda r: r.level, reverse=True)

    @property
    def introduced(self) -> FeatureLevel:
        return self.rows[-1].level

    def row_for(self, level: FeatureLevel) -> SupportRow:
        for row in self.rows:
            if row.level <= level:
                return row
        raise InvalidArgumentError(
            f"{self.op}: not available at feature level {FeatureLevel(level).name} "
            f"(introduced at {self.introduced.name})")

    def check(self, level: FeatureLevel, rank: int, types: dict[str, DataType]) -> SupportRow:
        """Validate a rank and the data type of each named tensor against the row for `level`."""
        row = self.row_for(level)
        lvl = FeatureLevel(level).name
        if rank not in row.ranks:
            later = self._first_level(lambda r: rank in r.ranks)
            raise InvalidArgumentError(
                f"{self.op}: DimensionCount {rank} is not supported at {lvl} "
                f"(supported: {_span(row.ranks)}){later}")
        for name, dt in types.items():
            allowed = row.types[name]
            if dt not in allowed:
                later = self._first_level(lambda r, n=name, t=dt: t in r.types[n] and rank in r.ranks)
                raise InvalidArgumentError(
                    f"{self.op}: {name}.data_type {DataType(dt).name} is not supported at {lvl} "
                    f"(supported: {type_list(allowed)}){later}")
        return row

    def check_rank(self, level: FeatureLevel, field: str, rank: int) -> None:
        """Validate the DimensionCount of a tensor whose ranks the row lists apart (tensor_ranks)."""
        allowed = self.row_for(level).ranks_of(field)
        if rank not in allowed:
            raise InvalidArgumentError(
                f"{self.op}: {field} DimensionCount {rank} is not supported at {FeatureLevel(level).name} "
                f"(supported: {_span(allowed)})")

    def _first_level(self, accepts) -> str:
        for row in reversed(self.rows):
            if accepts(row):
                return f"; it needs {row.level.name} or later"
        return ""


def signature_functional(signature: inspect.Signature, name: str, doc: str) -> Callable:
    """The functional form `name` of `signature` (its first parameter `x`, the one tensor; the
    others infer_output's keywords) with a keyword `device` added: a Call of x with the other
    arguments, defaults applied (the table modules' rows: pooling, resampling)."""
    def functional(*args, device=None, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        attrs = dict(bound.arguments)
        x = attrs.pop("x")
        return Call([("x", x)], attrs, device)

    device = inspect.Parameter("device", inspect.Parameter.KEYWORD_ONLY, default=None)
    functional.__signature__ = signature.replace(parameters=[*signature.parameters.values(), device])
    functional.__name__ = functional.__qualname__ = name
    functional.__doc__ = doc
    return functional


def support_table(op: str, tensors: tuple[str, ...], rows: Iterable[tuple]) -> SupportTable:
    """A SupportTable from the page's rows as written: `(level, ranks, types...)`, where
    `ranks` is `(lo, hi)` (an inclusive range) or a set, or a dict of them by tensor name
    where the page lists the tensors' dimension counts apart (each tensor it leaves out takes
    the first tensor's, which `check` validates), and `types` is one set of data types per
    name in `tensors`, or a single set that every tensor shares."""
    def span(dims) -> frozenset[int]:
        return frozenset(range(dims[0], dims[1] + 1)) if isinstance(dims, tuple) else frozenset(dims)

    built = []
    for level, dims, *types in rows:
        if len(types) == 1:
            types = types * len(tensors)
        if len(types) != len(tensors):
            raise ValueError(f"{op}: a support row needs one type set per tensor of {tensors}")
        per = {t: span(d) for t, d in dims.items()} if isinstance(dims, dict) else {}
        first = per.pop(tensors[0]) if per else span(dims)
        built.append(SupportRow(level, first, {t: frozenset(s) for t, s in zip(tensors, types)},
                                {t: r for t, r in per.items() if r != first}))
    return SupportTable(op, built)


def _span(values) -> str:
    v = sorted(values)
    if v == list(range(v[0], v[-1] + 1)) and len(v) > 2:
        return f"{v[0]}-{v[-1]}"
    return ", ".join(map(str, v))


# ---------------------------------------------------------------------------- examples, CLI, calls
@dataclass(frozen=True)
class Example:
    """A worked example of a DirectML page: the functional API's arguments (`args`, the
    first tensor argument `input` aside: a list of arrays where that argument takes a list,
    JOIN's; None where the call has no positional tensor, a generator's: FILL_VALUE_CONSTANT)
    and the output the page prints (a list of arrays for several, SPLIT's)."""

    name: str
    input: np.ndarray | list
    args: dict = dataclasses.field(repr=False)
    expected: np.ndarray | list
    source: str  # the page it is transcribed from (a file of tests/data/seeds or tests/data/pages)
    operator: str = ""  # the spec's key (set by OpSpec)


@dataclass(frozen=True)
class CliArg:
    """A command-line option of `gpudml shader OP` (and the lab): `--flag VALUE`, parsed as
    `kind` ("ints": comma-separated integers, "number": an int or a float, "str"), handed
    to the spec's Cli.desc under `dest`. `default` None: Cli.desc picks one."""

    flag: str
    help: str
    kind: str = "ints"
    default: str | None = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Cli:
    """The operator's options of `gpudml shader OP` and `gpudml lab OP` (beside the input's
    --shape, --dtype and --strides): `args`, `desc(input desc, parsed options) -> desc`, and
    `example`, options that make a telling example (shown by `--help`)."""

    args: tuple[CliArg, ...]
    desc: Callable[[TensorDesc, dict], Any]
    example: str


class Call(NamedTuple):
    """What a functional call asks for, as an operator's functional form returns it
    (gpudml.functional runs it): `tensors`, one (argument name, value) or (name, value,
    convert) per tensor argument in the desc's input order (`convert` turns a value that is
    not a Tensor into the numpy array to send; an argument of `tensor_lists` holds a list of
    values), `attributes`, infer_output's keyword arguments, and the `device` asked for.
    `keepdims` (operators whose desc has `axes` it reduces: Reduce, ArgMax, ArgMin): False
    drops the reduced axes from the output, as numpy's keepdims=False does; the result is
    the same elements re-described (a reshape of the packed output, no copy and no kernel
    of its own)."""

    tensors: list
    attributes: dict
    device: Any = None
    keepdims: bool = True


# ---------------------------------------------------------------------------- the spec
class Operation(Protocol):
    """What the compiler, the runtime, the autotuner and the lab need of what runs a desc:
    an operator's OpSpec, or a graph's fused kernel (gpudml/fusion.py's FusedSpec)."""

    name: str
    planner: Planner

    def sample_buffers(self, desc, rng: np.random.Generator) -> list[np.ndarray]:
        """Buffer contents for each input of `desc` worth running it on."""

    def expected_outputs(self, desc, logical_inputs) -> tuple[list[np.ndarray], list]:
        """(what `desc` computes from `logical_inputs`, the precision of each output)."""

    def traffic(self, desc) -> int:
        """The bytes `desc` must move at least."""


@dataclass(frozen=True, eq=False)
class OpSpec:
    """One DirectML operator, declared once (see docs/adding-an-operator.md).

    - `name`: DirectML's name ("Slice1"): error messages, the desc class' prefix.
    - `key`: DirectML's name in snake case ("slice1", "reverse_subsequences"): the ops
      module, the `gpudml shader` subcommand, the docs page, example names.
    - `desc`: the desc dataclass, DirectML's field names in snake case.
    - `support`: the page's support table(s) as data.
    - `infer_output(tensor descs..., **attributes) -> desc`: DirectMLX-style shape
      inference: the desc that the functional call with these arguments runs.
    - `validate(desc, feature_level)`: every rule of the page; InvalidArgumentError.
    - `reference(arrays..., **attributes)`: the semantics in numpy (the oracle), with the
      functional API's arguments (gpudml.reference.<functional name>).
    - `functional`: the functional form's signature and docstring: a function that checks
      nothing and returns a `Call` (gpudml.functional makes the public function of it,
      `gpudml.<its name>`); `aliases`: more such functions, other spellings of the same
      operator (DirectMLX's `padding`).
    - `tensors`: the names of the functional form's tensor arguments, in the desc's input
      order; `tensor_lists`: those of them that take a list of tensors (JOIN's `xs`): each
      element is one input of the desc, in order, and infer_output gets a list of descs.
    - `arguments(desc) -> dict`: the functional keyword arguments that describe `desc`, so
      that `reference(*logical inputs, **arguments(desc))` is what `desc` computes.
    - `planner`: how its descriptions run (gpudml.kernels.base.Planner, made by the
      operator's kernel family): strategies, plans, fusion hooks.
    - `cli`: its `gpudml shader` options (Cli).
    - `page`: the C struct DirectML's page documents (DML_SLICE1_OPERATOR_DESC).
    - `examples`: the page's worked examples.
    - `tolerance(expected, inputs, arguments)`: the documented precision of results that
      are not bit-exact, as an absolute tolerance (a number or one per element); None
      (the default, or returned) means bit-exact.
    - `traffic(desc) -> int`: the bytes the operator must move at least (for GB/s); None
      (the default): every input and output element once (`every_tensor_once`).
    - `sample(desc, rng) -> list`: buffer contents (each input's elements in its buffer,
      `required_elements` of them) worth running `desc` on; None: random bits for all.
    """

    name: str
    key: str
    desc: type
    support: Any
    infer_output: Callable[..., Any]
    validate: Callable[[Any, FeatureLevel], None]
    reference: Callable[..., Any]
    functional: Callable[..., Call]
    tensors: tuple[str, ...]
    arguments: Callable[[Any], dict]
    planner: Planner
    cli: Cli
    page: str
    examples: tuple[Example, ...] = ()
    aliases: tuple[Callable[..., Call], ...] = ()
    tensor_lists: tuple[str, ...] = ()
    tolerance: Callable[..., Any] | None = None
    traffic: Callable[[Any], int] | None = None
    sample: Callable[..., list] | None = None
    functional_name: str = dataclasses.field(init=False)  # the public function's name ("slice")

    def __post_init__(self):
        object.__setattr__(self, "examples", tuple(dataclasses.replace(e, operator=self.key) for e in self.examples))
        object.__setattr__(self, "functional_name", self.functional.__name__)
        if self.traffic is None:
            object.__setattr__(self, "traffic", every_tensor_once)

    @property
    def operator_type(self) -> str:
        """DirectML's DML_OPERATOR_TYPE name, from the page's struct: "DML_OPERATOR_SLICE1"."""
        return "DML_OPERATOR_" + self.page.removeprefix("DML_").removesuffix("_OPERATOR_DESC")

    def sample_buffers(self, desc, rng: np.random.Generator) -> list[np.ndarray]:
        """Buffer contents for each input of `desc`: the spec's own sample, else random bits."""
        if self.sample is not None:
            return self.sample(desc, rng)
        return [random_buffer(d, rng) for _, d in tensor_fields(desc)[0]]

    def reference_outputs(self, desc, logical_inputs) -> list[np.ndarray]:
        """What `desc` computes from `logical_inputs` (one array per input tensor), by the
        reference: one array per output tensor, in tensor_fields' order."""
        args, kwargs = tensor_arguments(self, desc, regroup(tensor_groups(desc)[0], list(logical_inputs)))
        return one_by_one_outputs(desc, self.reference(*args, **kwargs, **self.arguments(desc)))

    def expected_outputs(self, desc, logical_inputs) -> tuple[list[np.ndarray], list]:
        """(reference_outputs, the documented precision of each: the spec's tolerance, None
        for bit-exact): what a kernel's outputs are checked against."""
        expected = self.reference_outputs(desc, logical_inputs)
        arguments = self.arguments(desc)
        return expected, [None if self.tolerance is None else self.tolerance(e, logical_inputs, arguments)
                          for e in expected]


def random_buffer(desc: TensorDesc, rng: np.random.Generator) -> np.ndarray:
    """Random bits (NaN payloads, -0.0 and infinities included) for every buffer element of `desc`."""
    raw = rng.integers(0, 256, size=desc.required_elements * desc.data_type.size, dtype=np.uint8)
    return raw.view(desc.data_type.numpy)


def every_tensor_once(desc) -> int:
    """The default traffic: each element of each input read once, of each output written once."""
    inputs, outputs = tensor_fields(desc)
    return sum(element_bytes(d) for _, d in inputs + outputs)


def element_bytes(desc: TensorDesc) -> int:
    """Bytes of the tensor's elements (not of its buffer)."""
    return desc.element_count * desc.data_type.size


#: The names (prefixes) of output fields: `output_tensor*`, the _GRAD operators' `output_gradient_tensor`,
#: MAX_POOLING1/2's `output_indices_tensor`, RANDOM_GENERATOR's `output_state_tensor`,
#: NONZERO_COORDINATES' `output_count_tensor` and `output_coordinates_tensor`, TOP_K's
#: `output_value_tensor` and `output_index_tensor` and RNN's, LSTM's and GRU's
#: `output_sequence_tensor`, `output_single_tensor` and `output_cell_single_tensor`.
OUTPUT_FIELDS = ("output_tensor", "output_gradient_tensor", "output_indices_tensor", "output_state_tensor",
                 "output_count_tensor", "output_coordinates_tensor", "output_value_tensor", "output_index_tensor",
                 "output_sequence_tensor", "output_single_tensor", "output_cell_single_tensor",
                 "output_present_key_tensor", "output_present_value_tensor")


def tensor_fields(desc) -> tuple[list[tuple[str, TensorDesc]], list[tuple[str, TensorDesc]]]:
    """(inputs, outputs) as (field name, TensorDesc) in the desc's field order: fields named
    `output_tensor*` (OUTPUT_FIELDS) are outputs, every other TensorDesc field an input; a field holding a
    list of TensorDescs gives one entry per element, named `field[i]`."""
    inputs, outputs = tensor_groups(desc)
    return _one_by_one(inputs), _one_by_one(outputs)


def tensor_groups(desc) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """(inputs, outputs) per field, in the desc's field order: (field name, TensorDesc), or
    (field name, list of TensorDescs) for a field holding several (JOIN's input_tensors,
    SPLIT's output_tensors). `tensor_fields` lists the same tensors one by one."""
    inputs, outputs = [], []
    for f in dataclasses.fields(desc):
        value = getattr(desc, f.name)
        side = outputs if f.name.startswith(OUTPUT_FIELDS) else inputs
        if isinstance(value, TensorDesc):
            side.append((f.name, value))
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, TensorDesc) for v in value):
            side.append((f.name, list(value)))
    return inputs, outputs


def _one_by_one(groups) -> list[tuple[str, TensorDesc]]:
    flat = []
    for name, group in groups:
        flat += [(name, group)] if isinstance(group, TensorDesc) else [(f"{name}[{i}]", d) for i, d in enumerate(group)]
    return flat


def tensor_arguments(spec: OpSpec, desc, values: list) -> tuple[list, dict]:
    """`values` (one per input field `desc` gives, as `regroup` makes them) as the tensor
    arguments of the functional form and the reference: positional, except after an optional
    input the desc leaves out (a field of its class' OPTIONAL_TENSORS that is None, named by
    `spec.arguments` as None) before a given one, from one the signature places elsewhere
    (MATRIX_MULTIPLY_INTEGER's (a, b, a_zero_point, b_zero_point) against its fields' a,
    a_zero_point, b, b_zero_point), or from a keyword-only one on (a required
    input after an optional one: QUANTIZED_LINEAR_ADD's b): by name (`spec.tensors`) from there on."""
    optional = getattr(type(desc), "OPTIONAL_TENSORS", ())
    given = {name for name, _ in tensor_groups(desc)[0]}
    fields = [f.name for f in dataclasses.fields(desc)
              if (f.name in given or f.name in optional) and not f.name.startswith(OUTPUT_FIELDS)]  # (inputs only)
    if not optional or len(fields) != len(spec.tensors):
        return list(values), {}
    parameters = inspect.signature(spec.functional).parameters
    args, kwargs, rest = [], {}, iter(values)
    for field, name in zip(fields, spec.tensors):
        if field not in given:
            continue
        if kwargs or len(args) < fields.index(field) or parameters[name].kind is inspect.Parameter.KEYWORD_ONLY \
                or list(parameters).index(name) != len(args):  # (a signature of another order than the fields')
            kwargs[name] = next(rest)
        else:
            args.append(next(rest))
    return args, kwargs


def regroup(groups, flat) -> list:
    """`flat` (one value per tensor, in tensor_fields' order) grouped like `groups` (one side
    of tensor_groups): one value per field, a list of them for a list field."""
    out, k = [], 0
    for _, group in groups:
        if isinstance(group, TensorDesc):
            out.append(flat[k])
            k += 1
        else:
            out.append(list(flat[k:k + len(group)]))
            k += len(group)
    return out


def grouped_outputs(desc, flat):
    """An operator's results as its functional form returns them: the one output field's
    value (a list for a list field: SPLIT's outputs), or a tuple of one value per field in
    DirectML's field order when there are several (API.md section 15: `values, indices =
    dml.top_k(x, k=3)`)."""
    groups = regroup(tensor_groups(desc)[1], list(flat))
    return groups[0] if len(groups) == 1 else tuple(groups)


def one_by_one_outputs(desc, results) -> list:
    """The inverse of grouped_outputs: `results` (as the functional form or the reference
    returns them) as one value per output tensor, in tensor_fields' order."""
    groups = tensor_groups(desc)[1]
    per_field = [results] if len(groups) == 1 else list(results)
    flat = []
    for (_, group), value in zip(groups, per_field, strict=True):
        flat += [value] if isinstance(group, TensorDesc) else list(value)
    return flat


def flat_tensors(spec: OpSpec, items: list[tuple]) -> tuple[list[tuple], list[int | None]]:
    """(one item per tensor, counts) of a Call's tensors: an argument of `spec.tensor_lists`
    (a list or tuple of tensors) becomes one item per element, named `name[i]` (with the
    argument's convert, if any); `counts` holds, per argument, None (one tensor) or its
    list's length. InvalidArgumentError for a list argument that is not a non-empty list."""
    flat, counts = [], []
    for item in items:
        name, value = item[0], item[1]
        if name not in spec.tensor_lists:
            flat.append(item)
            counts.append(None)
            continue
        if not isinstance(value, (list, tuple)):
            raise InvalidArgumentError(f"{spec.functional_name}: {name} must be a list of numpy arrays, Tensors or "
                                       f"Expressions, got {type(value).__name__}")
        if not value:
            raise InvalidArgumentError(f"{spec.functional_name}: {name} is an empty list; it takes at least one tensor")
        flat += [(f"{name}[{i}]", v, *item[2:]) for i, v in enumerate(value)]
        counts.append(len(value))
    return flat, counts


def per_argument(values: list, counts: list[int | None]) -> list:
    """Per-tensor `values` (flat_tensors' order) back into one value per argument: a list
    for a list argument (what infer_output takes)."""
    out, k = [], 0
    for count in counts:
        out.append(values[k] if count is None else list(values[k:k + count]))
        k += 1 if count is None else count
    return out


def desc_class(name: str, module: str, *, doc: str, fields=(), base: type = object, **namespace) -> type:
    """The desc class of one row of a table of operators: a frozen dataclass `name`, defined
    in `module`, with `base`'s fields (DirectML's, shared by the table's operators) and
    `fields` ((name, type) or (name, type, dataclasses.field(...)) pairs: the row's own),
    and `namespace` (methods, and class attributes that tell the row's operator apart, e.g.
    its reduce function): what dataclasses.make_dataclass makes of them, made a dataclass
    when first used (lazy_dataclass: `import gpudml` defines a hundred of these classes).
    The class is also an attribute of `module`, where pickle looks for it."""
    annotations, ns = {}, {}
    for item in fields:
        if isinstance(item, str):
            item = (item, "typing.Any")
        annotations[item[0]] = item[1]
        if len(item) == 3:
            ns[item[0]] = item[2]
    ns.update(namespace, __module__=module, __doc__=doc, __annotations__=annotations)
    cls = lazy_dataclass(type(name, (base,), ns), frozen=True)
    if module in sys.modules:  # (pickle finds a class by its module and name)
        setattr(sys.modules[module], name, cls)
    return cls


def lazy_dataclass(cls: type | None = None, /, **params):
    """dataclasses.dataclass(cls, **params), run when the class is first used rather than
    where it is defined (a decorator, as dataclass is: `@lazy_dataclass(frozen=True)`).

    dataclass compiles half a dozen methods for each class (about a millisecond each on
    Python 3.11): most of `import gpudml`'s time when it ran for every desc class at
    import. Until first used, each attribute that dataclass adds and the class does not
    define itself (`_GENERATED`) is a placeholder, `_Unbuilt`, whose first read (on the
    class or an instance: an instance made, `dataclasses.fields`, `repr`, `==`, `hash`,
    `inspect.signature`, an unpickled instance compared...) runs dataclasses.dataclass on
    the class in place: the same class object, with what dataclass would have given it at
    once. Not for `slots=True` (dataclass makes a new class of it); what dataclass rejects
    (a field without a default after one with, ...) it rejects at that first use."""
    if params.get("slots"):
        raise ValueError("lazy_dataclass: slots=True makes a new class; use dataclasses.dataclass")

    def wrap(cls: type) -> type:
        added = tuple(name for name in _GENERATED if name not in cls.__dict__)
        for name in added:
            setattr(cls, name, _Unbuilt(cls, name, added, params))
        return cls
    return wrap if cls is None else wrap(cls)


#: What dataclasses.dataclass may set on a class (lazy_dataclass's placeholders).
_GENERATED = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__",
              "__dataclass_fields__", "__dataclass_params__", "__match_args__")
_BUILDING = threading.RLock()


class _Unbuilt:
    """A placeholder for an attribute dataclasses.dataclass generates, in a class of
    lazy_dataclass: reading it (on the class or an instance) makes the class a dataclass,
    which replaces every placeholder, and reads the real attribute."""

    def __init__(self, owner: type, name: str, added: tuple[str, ...], params: dict):
        self.owner, self.name, self.added, self.params = owner, name, added, params

    def __get__(self, instance, owner=None):
        cls = self.owner
        with _BUILDING:
            if cls.__dict__.get(self.name) is self:  # (not built yet by another reader)
                for name in self.added:
                    delattr(cls, name)
                dataclasses.dataclass(cls, **self.params)
        return getattr(owner if instance is None else instance, self.name)
