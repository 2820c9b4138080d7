"""The machinery of the property and fuzz tests (test_fuzz.py), shared by every operator.

Each operator's test file (tests/test_<key>.py) declares `FUZZ = OpFuzz(...)`: hypothesis
strategies for its valid descriptions (with the expected output), for one broken field of
its own, and for hostile functional calls. test_fuzz.py runs them for every operator of the
registry (gpudml.ops.SPECS); the layouts, broken tensor descs and hostile execute arguments
every operator shares are drawn here.

Budget: the default run is CI-sized and derandomized (the same examples every run); with
GPUDML_FUZZ_EXAMPLES=N every @given test tries N fresh random examples (long runs).
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from conftest import assert_bits_equal, random_bits
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import tensor_fields
from gpudml.ops.spec import one_by_one_outputs
from gpudml.runtime import tuning
from gpudml.runtime.tensor import logical_from_raw
from gpudml.tensor_desc import calc_buffer_tensor_size, packed_strides

FL, T = dml.FeatureLevel, dml.DataType
#: Cases tried per operator and kind (GPUDML_FUZZ_REPORT=file.json writes them).
COUNTS: Counter = Counter()
#: Default examples per test (per operator, and per adapter where a test runs on each).
VALID_EXAMPLES, INVALID_EXAMPLES, EXECUTE_EXAMPLES, FUNCTIONAL_EXAMPLES = 100, 250, 100, 60


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


@dataclass(frozen=True)
class OpFuzz:
    """What the fuzz tests need to know of one operator (declared in its test file).

    - `valid`: a strategy of valid `Case`s.
    - `broken(desc)`: a strategy of (builder, fragment, kind): a builder of `desc` with one
      operator field broken, a fragment the InvalidArgumentError must name.
    - `functional(x, shape)`: a strategy of (functional keyword arguments, expected(x)) for
      a call on input x (of `shape`), some arguments hostile; or of (arguments,
      expected(x), first argument) where the call's first argument is not x itself (JOIN's
      list holding x).
    - `fields`: words one of which a rejected functional call's message must name.
    - `compare(got, want, x, args)`: for functional results that are not bit-exact.
    """

    valid: st.SearchStrategy
    broken: Callable
    functional: Callable
    fields: tuple[str, ...]
    compare: Callable | None = None


#: Largest size per axis by rank: at most a few thousand elements per tensor.
MAX_SIZE = {1: 300, 2: 40, 3: 14, 4: 7, 5: 5, 6: 4, 7: 3, 8: 3}


def sizes_of(draw, rank: int, top: int | None = None) -> list[int]:
    top = top or MAX_SIZE[rank]
    return [draw(st.integers(1, top)) for _ in range(rank)]


def layout(draw, sizes, *, output: bool = False) -> tuple[list[int] | None, int]:
    """(strides or None, bytes beyond DMLCalcBufferTensorSize) for a tensor of `sizes`.
    Inputs may broadcast (stride 0 on axes longer than 1); outputs never alias."""
    kinds = ["packed", "explicit", "padded", "permuted"] + ([] if output else ["broadcast"])
    kind = draw(st.sampled_from(kinds))
    rank = len(sizes)
    strides = None
    if kind == "explicit":
        strides = list(packed_strides(sizes))
    elif kind != "packed":
        gaps = [draw(st.integers(0, 2)) for _ in sizes]
        order = draw(st.permutations(range(rank))) if kind == "permuted" else list(range(rank))
        strides, step = [0] * rank, 1
        for axis in reversed(order):  # order[0] outermost
            strides[axis] = step
            step *= sizes[axis] + gaps[axis]
        if kind == "broadcast":
            for axis in draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank)):
                strides[axis] = 0
    if strides is not None:
        for axis, n in enumerate(sizes):  # a size-1 axis never moves: any stride is valid
            if n == 1 and draw(st.booleans()):
                strides[axis] = draw(st.sampled_from([0, 1, 7, 1000]))
    # Beyond a whole 16-byte chunk too: a kernel storing past the tensor's last chunk is
    # then inside the binding (not dropped by the adapter's bounds checks) and seen.
    extra = draw(st.sampled_from([0, 0, 0, 1, 3, 4, 8, 13, 32, 61]))
    return strides, extra


def tensor(draw, data_type, sizes, *, output: bool = False) -> dml.TensorDesc:
    strides, extra = layout(draw, sizes, output=output)
    total = calc_buffer_tensor_size(data_type, sizes, strides) + extra
    return dml.TensorDesc(data_type, sizes, strides, total_tensor_size_in_bytes=total)


def level_for(draw, table) -> dml.FeatureLevel:
    return draw(st.sampled_from([lv for lv in FL if lv >= table.introduced]))


def support_row(draw, table):
    """(a random feature level the table knows, its row, a rank the row allows)."""
    level = level_for(draw, table)
    row = table.row_for(level)
    return level, row, draw(st.sampled_from(sorted(row.ranks)))


def type_of(draw, row, tensor: str) -> dml.DataType:
    """A data type the row allows for `tensor`."""
    return draw(st.sampled_from(sorted(row.types[tensor])))


@dataclass
class Case:
    """A valid description, how to fill its input buffers, and the expected output."""

    level: dml.FeatureLevel
    desc: object
    expected: Callable[[list[np.ndarray]], object]  # logical inputs -> logical output (a list: several)
    fills: list[Callable]  # per input: (rng, data_type, count) -> raw buffer elements
    compare: Callable | None = None  # (got, want, logical inputs) -> None; default bit-exact


def random_fill(rng, data_type, count):
    return random_bits(rng, data_type.numpy, [count])


# ------------------------------------------------------------------ running a valid case
def _roomy(desc: dml.TensorDesc, rng) -> dml.TensorDesc:
    """The same tensor in a buffer with 16-64 more bytes than the desc's total size."""
    return dml.TensorDesc(desc.data_type, desc.sizes, desc.strides,
                          total_tensor_size_in_bytes=desc.total_tensor_size_in_bytes + 16 * int(rng.integers(1, 5)))


def element_offsets(desc: dml.TensorDesc) -> np.ndarray:
    idx = np.zeros(1, dtype=np.int64)
    for n, s in zip(desc.sizes, desc.effective_strides):
        idx = (idx[:, None] + np.arange(n, dtype=np.int64)[None, :] * s).reshape(-1)
    return idx


def _whole_buffer(t: dml.Tensor) -> np.ndarray:
    return t.device._ctx.transfers.download(t.buffer)


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


def run_valid(device: dml.Device, case: Case, seed: int, numpy_layout: str | None) -> str:
    """Run `case` under one of its eligible strategies (picked by `seed`), with its own plan
    or one of the option sets its spec offers the autotuner (OpSpec.variants; one the
    description cannot take is the tuner's to drop, and is dropped here too), and check it;
    the variant's name comes back."""
    rng = np.random.default_rng(seed)
    op = device.create_operator(case.desc)
    compiled = device.compile_operator(op)
    strategy = compiled.strategies[seed % len(compiled.strategies)]
    offered = ({},) + tuple(op.spec.planner.variants(case.desc, device.caps, strategy))
    options = offered[seed // len(compiled.strategies) % len(offered)]
    try:
        compiled = device.compile_operator(op, strategy, options=options or None)
    except (dml.InvalidArgumentError, dml.UnsupportedError):
        options, compiled = {}, device.compile_operator(op, strategy)
    assert compiled.strategy == strategy and compiled.options == options
    in_fields, out_fields = tensor_fields(case.desc)
    raws, logical, inputs, before = [], [], [], []
    for (_, d), fill in zip(in_fields, case.fills):
        roomy = _roomy(d, rng)
        raw = fill(rng, d.data_type, roomy.buffer_bytes // d.data_type.size)
        t = device.tensor(raw, desc=roomy)
        raws.append(raw)
        logical.append(logical_from_raw(raw, d))
        inputs.append(t)
        before.append(_whole_buffer(t))
    wants = one_by_one_outputs(case.desc, case.expected(logical))
    compare = case.compare or (lambda got, want, xs: assert_bits_equal(got, want))

    outs = [_random_output(device, d, rng) for _, d in out_fields]
    outs_before = [_whole_buffer(t) for t in outs]
    results = compiled.execute(inputs, outputs=outs)
    assert len(results) == len(outs) and all(r is t for r, t in zip(results, outs))
    for (_, out_desc), out, out_before, want in zip(out_fields, outs, outs_before, wants, strict=True):
        compare(logical_from_raw(out.raw(), out_desc), want, logical)
        _check_only_elements_written(out, out_desc, out_before)
    for t, b in zip(inputs, before):
        np.testing.assert_array_equal(_whole_buffer(t), b, err_msg="an input Tensor changed")

    if numpy_layout is not None:  # numpy in, numpy out; the arrays must not change
        arrays = [_odd_layout(raw, numpy_layout) for raw in raws]
        copies = [a.copy() for a in arrays]
        for got, want in zip(compiled.execute(arrays), wants, strict=True):
            compare(got, want, logical)
        for a, c in zip(arrays, copies):
            assert_bits_equal(a, c)
    return tuning.variant_name(strategy, options)


def _random_output(device, desc: dml.TensorDesc, rng) -> dml.Tensor:
    """An output Tensor for `desc` in a roomier buffer of random bits."""
    roomy = _roomy(desc, rng)
    return device.tensor(random_bits(rng, desc.data_type.numpy, [roomy.buffer_bytes // desc.data_type.size]),
                         desc=roomy)


def _check_only_elements_written(out: dml.Tensor, desc: dml.TensorDesc, before: np.ndarray) -> None:
    """No byte of the output buffer but the output elements' changed."""
    after = _whole_buffer(out)
    size = desc.data_type.size
    written = np.zeros(after.size, dtype=bool)
    starts = element_offsets(desc) * size
    written[(starts[:, None] + np.arange(size)[None, :]).reshape(-1)] = True
    np.testing.assert_array_equal(after[~written], before[~written], err_msg="bytes outside the output changed")


def assert_outputs_equal(got, want) -> None:
    """Bit-exact, output by output where an operator has several (`want` a list)."""
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (type(got), len(want))
        for g, w in zip(got, want):
            assert_bits_equal(g, w)
    else:
        assert_bits_equal(got, want)


def _td(desc: dml.TensorDesc, **changes) -> dml.TensorDesc:
    fields = {"data_type": desc.data_type, "sizes": desc.sizes, "strides": desc.strides,
              "total_tensor_size_in_bytes": None, "flags": desc.flags,
              "guaranteed_base_offset_alignment": desc.guaranteed_base_offset_alignment}
    fields.update(changes)
    return dml.TensorDesc(fields.pop("data_type"), fields.pop("sizes"), fields.pop("strides"), **fields)


def _tensor_at(desc, field: str) -> dml.TensorDesc:
    """The tensor a tensor_fields name points at: `field`, or element i of `name[i]`."""
    name, _, index = field.partition("[")
    value = getattr(desc, name)
    return value[int(index[:-1])] if index else value


def _with_tensor(desc, field: str, new):
    """`desc` with the tensor at `field` (as _tensor_at) replaced by `new`."""
    name, _, index = field.partition("[")
    if not index:
        return dataclasses.replace(desc, **{name: new})
    items = list(getattr(desc, name))
    items[int(index[:-1])] = new
    return dataclasses.replace(desc, **{name: tuple(items)})


@st.composite
def broken_tensor(draw, desc, field: str):
    """(a function building the desc with tensor `field` broken, fragment the message names);
    `field` is a tensor_fields name (`input_tensors[1]` for an element of a list field)."""
    td: dml.TensorDesc = _tensor_at(desc, field)
    rank, sizes = td.rank, list(td.sizes)
    axis = draw(st.integers(0, rank - 1))
    kinds = ["size0", "size_negative", "size_huge", "count_overflow", "rank0", "rank9", "rank_mismatch",
             "strides_length", "stride_negative", "stride_huge", "span_overflow", "total_small", "flags", "alignment",
             "not_a_desc"]
    if field.startswith("output_tensor") and any(n > 1 for n in sizes):
        kinds.append("aliasing")
    kind = draw(st.sampled_from(kinds))
    new = None
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
    elif kind == "not_a_desc":
        value = draw(st.sampled_from([None, 3, "FLOAT32", [1, 2], np.zeros(3)]))
        new = lambda: value  # noqa: E731
    elif kind == "aliasing":
        long_axes = [i for i, n in enumerate(sizes) if n > 1]
        strides = list(td.effective_strides)
        strides[draw(st.sampled_from(long_axes))] = 0
        new = lambda: _td(td, strides=strides)  # noqa: E731
    built = new()  # draws happen here, not inside the raises block
    return (lambda: _with_tensor(desc, field, built)), f"{field}", kind


def replace_fields(desc, **changes):
    return lambda: dataclasses.replace(desc, **changes)


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
        other = dml.DataType.INT8 if w.data_type != dml.DataType.INT8 else dml.DataType.UINT8
        return replace_fields(desc, **{whole: dml.TensorDesc(other, w.sizes)}), "data_type", kind
    d = axis if kind == "sum" or rank == 1 else draw(st.sampled_from([i for i in range(rank) if i != axis]))
    return replace_fields(desc, **{whole: dml.TensorDesc(w.data_type, with_entry(w.sizes, d, w.sizes[d] + 1))}), \
        f"{whole}.sizes", kind


def with_entry(values, i, value):
    values = list(values)
    values[i] = value
    return values


@st.composite
def hostile_inputs(draw, device, case):
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
        inputs[i] = good[i][:-1]
        if d.required_elements == 1:
            inputs[i] = good[i][:0]
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
    data_type = draw(st.sampled_from(list(T)))
    rank = draw(st.integers(1, 4))
    shape = sizes_of(draw, rank, {1: 40, 2: 9, 3: 5, 4: 4}[rank])
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


def draw_ints(draw, count: int, lo: int, hi: int) -> list[int]:
    return [draw(st.integers(lo, hi)) for _ in range(count)]


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
