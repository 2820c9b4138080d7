"""Property and fuzz tests (hypothesis) for every operator.

- Valid descriptions (ranks 1-8, every type the operator's support table lists at a random
  feature level, packed / padded / permuted / broadcast (stride 0) layouts, odd sizes that
  straddle 32-bit words, negative window strides, total sizes above the minimum) run on
  each adapter and are compared with reference.py. Inputs and outputs are Tensors whose
  buffers are larger than the desc and filled with random bits: the bytes of the output
  buffer that are not output elements, and every byte of the input buffers, must be
  unchanged afterwards. Half the cases also run with numpy inputs given as non-contiguous,
  read-only or big-endian arrays, which must be unchanged too.
- Invalid descriptions (a valid one with one field broken) raise exactly
  InvalidArgumentError, before any GPU work, with a message naming the operator and the field.
- Hostile arguments to the functional API (non-arrays, lists, scalars, odd dtypes, empty or
  9-d arrays, wrong argument types and values) raise exactly InvalidArgumentError naming the
  function, or give the reference result.

Budget: the default run is CI-sized and derandomized (the same examples every run). For a
long run with fresh random examples:

    GPUDML_FUZZ_EXAMPLES=5000 python -m pytest -q tests/test_fuzz.py

(every @given test then tries that many examples, per adapter where it runs on each).
GPUDML_FUZZ_REPORT=counts.json writes the number of cases tried per operator and kind.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from conftest import ADAPTERS, assert_bits_equal, get_device, random_bits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_reduce import _data as reduce_data
from test_reduce import assert_reduce_close

import gpudml as dml
from gpudml import reference
from gpudml.ops import padding, reduce, reverse_subsequences, slice1, tensor_fields
from gpudml.ops.slice1 import max_output_size
from gpudml.runtime.tensor import logical_from_raw
from gpudml.tensor_desc import calc_buffer_tensor_size, packed_strides

FL, T, F = dml.FeatureLevel, dml.DataType, dml.ReduceFunction
LONG_RUN = os.environ.get("GPUDML_FUZZ_EXAMPLES")
COUNTS: Counter = Counter()
#: Default examples per test (per operator, and per adapter where a test runs on each).
VALID_EXAMPLES, INVALID_EXAMPLES, EXECUTE_EXAMPLES, FUNCTIONAL_EXAMPLES = 100, 250, 100, 60


def budget(examples: int) -> settings:
    """CI-sized and derandomized by default; GPUDML_FUZZ_EXAMPLES=N: N random examples."""
    return settings(
        max_examples=int(LONG_RUN) if LONG_RUN else examples,
        deadline=None,
        derandomize=not LONG_RUN,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    path = os.environ.get("GPUDML_FUZZ_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump({" ".join(k): v for k, v in sorted(COUNTS.items())}, f, indent=1)


# ------------------------------------------------------------------ shapes and layouts
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


@dataclass
class Case:
    """A valid description, how to fill its input buffers, and the expected output."""

    op: str
    level: dml.FeatureLevel
    desc: object
    expected: Callable[[list[np.ndarray]], np.ndarray]  # logical inputs -> logical output
    fills: list[Callable]  # per input: (rng, data_type, count) -> raw buffer elements
    compare: Callable | None = None  # (got, want, logical inputs) -> None; default bit-exact


def _bits(rng, data_type, count):
    return random_bits(rng, data_type.numpy, [count])


# ------------------------------------------------------------------ valid cases per operator
@st.composite
def slice_cases(draw) -> Case:
    level = level_for(draw, slice1.SUPPORT)
    row = slice1.SUPPORT.row_for(level)
    rank = draw(st.sampled_from(sorted(row.ranks)))
    data_type = draw(st.sampled_from(sorted(row.types["input_tensor"])))
    in_sizes = sizes_of(draw, rank)
    offsets, sizes, strides, out_sizes = [], [], [], []
    for n in in_sizes:
        offset = draw(st.integers(0, n - 1))
        size = draw(st.integers(1, n - offset))
        step = draw(st.one_of(st.integers(1, 3), st.integers(1, size + 1))) * draw(st.sampled_from([1, -1]))
        offsets.append(offset)
        sizes.append(size)
        strides.append(step)
        out_sizes.append(draw(st.integers(1, max_output_size(size, step))))
    desc = dml.Slice1OperatorDesc(tensor(draw, data_type, in_sizes), tensor(draw, data_type, out_sizes, output=True),
                                  offsets, sizes, strides)
    return Case("Slice1", level, desc, lambda xs: reference.slice1(xs[0], offsets, sizes, strides, out_sizes),
                [_bits])


def padding_values(draw, data_type: dml.DataType):
    if data_type.is_float:
        return draw(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-70000, 70000),
                              st.sampled_from([0.0, -0.0, 65504.0, 65520.0, 1e300, -1e-300])))
    info = np.iinfo(data_type.numpy)
    limit = 2.0**62 if data_type.size == 8 else float(info.max)
    low = -0.99 if info.min == 0 else -limit
    edges = [int(info.min), int(info.max), 10.6, -0.0] + ([-10.6] if info.min < 0 else [])
    return draw(st.one_of(st.integers(int(info.min), int(info.max)), st.floats(low, limit), st.sampled_from(edges)))


@st.composite
def padding_cases(draw) -> Case:
    level = level_for(draw, padding.SUPPORT)
    row = padding.SUPPORT.row_for(level)
    rank = draw(st.sampled_from(sorted(row.ranks)))
    data_type = draw(st.sampled_from(sorted(row.types["input_tensor"])))
    modes = [m for m in dml.PaddingMode if padding.MODE_INTRODUCED[m] <= level]
    mode = draw(st.sampled_from(modes))
    # Output sizes bounded per axis; input sizes and paddings split them (a padding may
    # exceed the input size: REFLECTION and SYMMETRIC fold periodically).
    out_sizes = sizes_of(draw, rank)
    in_sizes, start, end = [], [], []
    for m in out_sizes:
        n = draw(st.integers(1, m))
        s = draw(st.integers(0, m - n))
        in_sizes.append(n)
        start.append(s)
        end.append(m - n - s)
    value = padding_values(draw, data_type) if mode == dml.PaddingMode.CONSTANT else draw(
        st.sampled_from([0.0, 5.0, float("nan")]))
    desc = dml.PaddingOperatorDesc(tensor(draw, data_type, in_sizes), tensor(draw, data_type, out_sizes, output=True),
                                   mode, value, start, end)
    return Case("Padding", level, desc, lambda xs: reference.padding(xs[0], start, end, mode, value), [_bits])


@st.composite
def reverse_cases(draw) -> Case:
    level = level_for(draw, reverse_subsequences.SUPPORT)
    row = reverse_subsequences.SUPPORT.row_for(level)
    rank = draw(st.sampled_from(sorted(row.ranks)))
    data_type = draw(st.sampled_from(sorted(row.types["input_tensor"])))
    length_type = draw(st.sampled_from(sorted(row.types["sequence_lengths_tensor"])))
    in_sizes = sizes_of(draw, rank)
    axis = draw(st.integers(0, rank - 1))
    length_sizes = [1 if i == axis else n for i, n in enumerate(in_sizes)]
    n = in_sizes[axis]

    def lengths(rng, dt, count):
        values = rng.integers(0, n + 3, size=count).astype(dt.numpy)
        huge = rng.random(count) < 0.1  # lengths far beyond the axis clamp to it
        values[huge] = np.iinfo(dt.numpy).max - rng.integers(0, 3, size=int(huge.sum())).astype(dt.numpy)
        return values

    desc = dml.ReverseSubsequencesOperatorDesc(
        tensor(draw, data_type, in_sizes), tensor(draw, length_type, length_sizes),
        tensor(draw, data_type, in_sizes, output=True), axis)
    return Case("ReverseSubsequences", level, desc,
                lambda xs: reference.reverse_subsequences(xs[0], xs[1], axis), [_bits, lengths])


@st.composite
def reduce_cases(draw) -> Case:
    function = draw(st.sampled_from(list(F)))
    table = reduce.SUPPORT[function]
    level = level_for(draw, table)
    row = table.row_for(level)
    rank = draw(st.sampled_from(sorted(row.ranks)))
    in_type = draw(st.sampled_from(sorted(row.types["input_tensor"])))
    if function in reduce.ARG_FUNCTIONS:
        out_type = draw(st.sampled_from(sorted(row.types["output_tensor"])))
    else:
        out_type = in_type
    in_sizes = sizes_of(draw, rank)
    axes = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    out_sizes = [1 if i in axes else n for i, n in enumerate(in_sizes)]
    desc = dml.ReduceOperatorDesc(function, tensor(draw, in_type, in_sizes),
                                  tensor(draw, out_type, out_sizes, output=True), axes)

    def fill(rng, dt, count):
        return reduce_data(rng, dt, function, [count])

    def compare(got, want, xs):
        assert_reduce_close(got, want, xs[0], function, axes, f"{function.name} {desc}")

    return Case("Reduce", level, desc, lambda xs: reference.reduce(xs[0], function, axes, out_type), [fill], compare)


CASES = {"Slice1": slice_cases(), "Padding": padding_cases(), "ReverseSubsequences": reverse_cases(),
         "Reduce": reduce_cases()}


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


def run_valid(device: dml.Device, case: Case, seed: int, numpy_layout: str | None) -> None:
    rng = np.random.default_rng(seed)
    compiled = device.compile_operator(device.create_operator(case.desc))
    in_fields, out_fields = tensor_fields(case.desc)
    (_, out_desc), = out_fields
    raws, logical, inputs, before = [], [], [], []
    for (_, d), fill in zip(in_fields, case.fills):
        roomy = _roomy(d, rng)
        raw = fill(rng, d.data_type, roomy.buffer_bytes // d.data_type.size)
        t = device.tensor(raw, desc=roomy)
        raws.append(raw)
        logical.append(logical_from_raw(raw, d))
        inputs.append(t)
        before.append(_whole_buffer(t))
    want = case.expected(logical)
    compare = case.compare or (lambda got, want, xs: assert_bits_equal(got, want))

    roomy_out = _roomy(out_desc, rng)
    out = device.tensor(random_bits(rng, out_desc.data_type.numpy, [roomy_out.buffer_bytes // out_desc.data_type.size]),
                        desc=roomy_out)
    out_before = _whole_buffer(out)
    (result,) = compiled.execute(inputs, outputs=[out])
    assert result is out
    compare(logical_from_raw(result.raw(), out_desc), want, logical)
    # No byte of the output buffer but the output elements' changed; no input byte changed.
    after = _whole_buffer(out)
    size = out_desc.data_type.size
    written = np.zeros(after.size, dtype=bool)
    starts = element_offsets(out_desc) * size
    written[(starts[:, None] + np.arange(size)[None, :]).reshape(-1)] = True
    np.testing.assert_array_equal(after[~written], out_before[~written], err_msg="bytes outside the output changed")
    for t, b in zip(inputs, before):
        np.testing.assert_array_equal(_whole_buffer(t), b, err_msg="an input Tensor changed")

    if numpy_layout is not None:  # numpy in, numpy out; the arrays must not change
        arrays = [_odd_layout(raw, numpy_layout) for raw in raws]
        copies = [a.copy() for a in arrays]
        (got,) = compiled.execute(arrays)
        compare(got, want, logical)
        for a, c in zip(arrays, copies):
            assert_bits_equal(a, c)


@pytest.mark.parametrize("op", list(CASES))
def test_valid_descriptions_match_reference(adapter, op):
    @budget(VALID_EXAMPLES)
    @given(case=CASES[op], seed=st.integers(0, 2**32 - 1),
           numpy_layout=st.sampled_from([None, None, "strided", "readonly", "bigendian", "2d"]))
    def check(case, seed, numpy_layout):
        COUNTS["valid", op, adapter] += 1
        run_valid(get_device(adapter, case.level), case, seed, numpy_layout)

    check()


# ------------------------------------------------------------------ invalid descriptions
def _tensor_fields(desc) -> list[str]:
    return [f.name for f in dataclasses.fields(desc) if isinstance(getattr(desc, f.name), dml.TensorDesc)]


def _td(desc: dml.TensorDesc, **changes) -> dml.TensorDesc:
    fields = {"data_type": desc.data_type, "sizes": desc.sizes, "strides": desc.strides,
              "total_tensor_size_in_bytes": None, "flags": desc.flags,
              "guaranteed_base_offset_alignment": desc.guaranteed_base_offset_alignment}
    fields.update(changes)
    return dml.TensorDesc(fields.pop("data_type"), fields.pop("sizes"), fields.pop("strides"), **fields)


@st.composite
def broken_tensor(draw, desc, field: str):
    """(a function building the desc with tensor `field` broken, fragment the message names)."""
    td: dml.TensorDesc = getattr(desc, field)
    rank, sizes = td.rank, list(td.sizes)
    axis = draw(st.integers(0, rank - 1))
    kinds = ["size0", "size_negative", "size_huge", "count_overflow", "rank0", "rank9", "rank_mismatch",
             "strides_length", "stride_negative", "stride_huge", "span_overflow", "total_small", "flags", "alignment",
             "not_a_desc"]
    if field == "output_tensor" and any(n > 1 for n in sizes):
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
    return (lambda: dataclasses.replace(desc, **{field: built})), f"{field}", kind


def _replace(desc, **changes):
    return lambda: dataclasses.replace(desc, **changes)


def _with_entry(values, i, value):
    values = list(values)
    values[i] = value
    return values


@st.composite
def broken_fields(draw, desc, op: str):
    """(builder, fragment, kind) with one operator-specific field broken."""
    rank = desc.input_tensor.rank
    i = draw(st.integers(0, rank - 1))
    not_int = draw(st.sampled_from([0.5, "1", None, 1j, True]))
    if op == "Slice1":
        n = desc.input_tensor.sizes[i]
        off, size = desc.input_window_offsets[i], desc.input_window_sizes[i]
        choices = {
            "offset_past_end": ("input_window_offsets", _with_entry(desc.input_window_offsets, i, n)),
            "offset_negative": ("input_window_offsets", _with_entry(desc.input_window_offsets, i, -1)),
            "offset_huge": ("input_window_offsets", _with_entry(desc.input_window_offsets, i, 2**40)),
            "window_empty": ("input_window_sizes", _with_entry(desc.input_window_sizes, i, 0)),
            "window_too_long": ("input_window_sizes", _with_entry(desc.input_window_sizes, i, n - off + 1)),
            "stride_zero": ("input_window_strides", _with_entry(desc.input_window_strides, i, 0)),
            "stride_int32": ("input_window_strides",
                             _with_entry(desc.input_window_strides, i, draw(st.sampled_from([2**31, -2**31 - 1])))),
            "length": ("input_window_offsets", list(desc.input_window_offsets) + [0]),
            "not_int": ("input_window_sizes", _with_entry(desc.input_window_sizes, i, not_int)),
            "not_a_list": ("input_window_strides", draw(st.sampled_from([None, 3, "1,1"]))),
        }
        kind = draw(st.sampled_from(sorted(choices) + ["output_too_big"]))
        if kind == "output_too_big":
            stride = desc.input_window_strides[i]
            out = _with_entry(desc.output_tensor.sizes, i, max_output_size(size, stride) + 1)
            return _replace(desc, output_tensor=dml.TensorDesc(desc.output_tensor.data_type, out)), \
                "output_tensor.sizes", kind
        name, value = choices[kind]
        return _replace(desc, **{name: value}), name, kind
    if op == "Padding":
        dt = desc.input_tensor.data_type
        kinds = ["start_negative", "end_huge", "output_size", "length", "not_int", "mode", "value_type"]
        if not dt.is_float:
            kinds.append("value_for_integers")
        kind = draw(st.sampled_from(kinds))
        if kind == "start_negative":
            return _replace(desc, start_padding=_with_entry(desc.start_padding, i, -1)), "start_padding", kind
        if kind == "end_huge":
            return _replace(desc, end_padding=_with_entry(desc.end_padding, i, 2**32)), "end_padding", kind
        if kind == "output_size":
            out = _with_entry(desc.output_tensor.sizes, i, desc.output_tensor.sizes[i] + draw(st.sampled_from([1, -1])))
            if out[i] < 1:
                out[i] = desc.output_tensor.sizes[i] + 1
            return _replace(desc, output_tensor=dml.TensorDesc(dt, out)), "output_tensor.sizes", kind
        if kind == "length":
            return _replace(desc, end_padding=list(desc.end_padding)[:-1]), "end_padding", kind
        if kind == "not_int":
            return _replace(desc, start_padding=_with_entry(desc.start_padding, i, not_int)), "start_padding", kind
        if kind == "mode":
            return _replace(desc, padding_mode=draw(st.sampled_from([4, -1, "wrap", None]))), "padding_mode", kind
        if kind == "value_type":
            value = draw(st.sampled_from(["0", None, 1j, True, [0.0], np.zeros(1)]))
            return _replace(desc, padding_value=value), "padding_value", kind
        info = np.iinfo(dt.numpy)
        value = draw(st.sampled_from([float("nan"), float("inf"), -float("inf"), int(info.max) + 1,
                                      int(info.min) - 1, 1e30, -1e30, 2.0**64]))
        return _replace(desc, padding_mode=dml.PaddingMode.CONSTANT, padding_value=value), "padding_value", kind
    if op == "ReverseSubsequences":
        lengths = desc.sequence_lengths_tensor
        kind = draw(st.sampled_from(["axis_out", "axis_negative", "axis_type", "lengths_size", "lengths_type",
                                     "output_size"]))
        if kind == "axis_out":
            return _replace(desc, axis=rank + draw(st.integers(0, 5))), "axis", kind
        if kind == "axis_negative":
            return _replace(desc, axis=-draw(st.integers(1, 9))), "axis", kind
        if kind == "axis_type":
            return _replace(desc, axis=draw(st.sampled_from([0.0, "0", None, [0]]))), "axis", kind
        if kind == "lengths_size":
            bad = list(lengths.sizes)
            bad[i] += 1
            return _replace(desc, sequence_lengths_tensor=dml.TensorDesc(lengths.data_type, bad)), \
                "sequence_lengths_tensor.sizes", kind
        if kind == "lengths_type":
            dt = draw(st.sampled_from([T.FLOAT32, T.INT32, T.UINT16, T.INT64, T.UINT8]))
            return _replace(desc, sequence_lengths_tensor=dml.TensorDesc(dt, lengths.sizes)), \
                "sequence_lengths_tensor.data_type", kind
        bad = list(desc.output_tensor.sizes)
        bad[i] += 1
        return _replace(desc, output_tensor=dml.TensorDesc(desc.output_tensor.data_type, bad)), \
            "output_tensor.sizes", kind
    # Reduce
    function, out = desc.function, desc.output_tensor
    kind = draw(st.sampled_from(["axes_empty", "axis_out", "axis_negative", "axes_repeat", "axes_type",
                                 "reduced_size", "kept_size", "output_type", "input_float64", "function"]))
    if kind == "axes_empty":
        return _replace(desc, axes=[]), "axes", kind
    if kind == "axis_out":
        return _replace(desc, axes=list(desc.axes) + [rank + draw(st.integers(0, 3))]), "axes", kind
    if kind == "axis_negative":
        return _replace(desc, axes=[-1]), "axes", kind
    if kind == "axes_repeat":
        return _replace(desc, axes=list(desc.axes) + [desc.axes[0]]), "axes", kind
    if kind == "axes_type":
        return _replace(desc, axes=draw(st.sampled_from([None, 0.0, "0", [0.5]]))), "axes", kind
    if kind == "reduced_size":
        a = desc.axes[0]
        return _replace(desc, output_tensor=dml.TensorDesc(out.data_type, _with_entry(out.sizes, a, 2))), \
            "output_tensor.sizes", kind
    if kind == "kept_size":
        kept = [a for a in range(rank) if a not in desc.axes]
        if not kept:
            return _replace(desc, axes=[rank]), "axes", kind
        a = draw(st.sampled_from(kept))
        sizes = _with_entry(out.sizes, a, desc.input_tensor.sizes[a] + 1)
        return _replace(desc, output_tensor=dml.TensorDesc(out.data_type, sizes)), "output_tensor.sizes", kind
    if kind == "output_type":
        if function in reduce.ARG_FUNCTIONS:
            dt = draw(st.sampled_from([T.FLOAT32, T.FLOAT16, T.INT16, T.UINT8]))
        else:
            dt = draw(st.sampled_from([t for t in T if t != desc.input_tensor.data_type]))
        return _replace(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
    if kind == "input_float64":
        new_out = out if function in reduce.ARG_FUNCTIONS else dml.TensorDesc(T.FLOAT64, out.sizes)
        return _replace(desc, input_tensor=dml.TensorDesc(T.FLOAT64, desc.input_tensor.sizes),
                        output_tensor=new_out), "input_tensor.data_type", kind
    return _replace(desc, function=draw(st.sampled_from([12, -1, "median", None]))), "function", kind


@pytest.mark.parametrize("op", list(CASES))
def test_invalid_descriptions_raise_invalid_argument(op):
    """Validation is adapter-independent: it runs on the first adapter only."""

    @budget(INVALID_EXAMPLES)
    @given(data=st.data())
    def check(data):
        case = data.draw(CASES[op])
        field = data.draw(st.sampled_from(_tensor_fields(case.desc) + ["operator field"] * 2))
        if field == "operator field":
            build, fragment, kind = data.draw(broken_fields(case.desc, op))
        else:
            build, fragment, kind = data.draw(broken_tensor(case.desc, field))
        COUNTS["invalid", op] += 1
        COUNTS["invalid kind", op, kind] += 1
        device = get_device(ADAPTERS[0], case.level)
        allocations = device._ctx.pool.allocations
        with pytest.raises(dml.InvalidArgumentError) as info:
            device.create_operator(build())
        assert type(info.value) is dml.InvalidArgumentError, (kind, type(info.value))
        message = str(info.value)
        assert op in message, (kind, message)
        assert fragment in message, (kind, fragment, message)
        assert device._ctx.pool.allocations == allocations  # no GPU work

    check()


# ------------------------------------------------------------------ hostile execute arguments
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


@pytest.mark.parametrize("op", list(CASES))
def test_execute_hostile_arguments(op):
    """CompiledOperator.execute with one input broken: InvalidArgumentError naming the
    operator and the input, before any upload (first adapter)."""

    @budget(EXECUTE_EXAMPLES)
    @given(data=st.data())
    def check(data):
        case = data.draw(CASES[op])
        device = get_device(ADAPTERS[0], case.level)
        compiled = device.compile_operator(device.create_operator(case.desc))
        inputs, fragment = data.draw(hostile_inputs(device, case))
        COUNTS["execute", op] += 1
        memory = device._ctx.pool
        before = (memory.allocations, memory.pooled_bytes)
        with pytest.raises(dml.InvalidArgumentError) as info:
            compiled.execute(inputs)
        assert type(info.value) is dml.InvalidArgumentError
        message = str(info.value)
        assert message.startswith(op) and fragment in message, message
        # Nothing allocated or taken from the pool (a Tensor dying meanwhile may add to it).
        assert memory.allocations == before[0] and memory.pooled_bytes >= before[1]

    check()


# ------------------------------------------------------------------ hostile functional arguments
def _hostile_arrays():
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


def _ints(draw, count: int, lo: int, hi: int) -> list[int]:
    return [draw(st.integers(lo, hi)) for _ in range(count)]


def _maybe_hostile(draw, good):
    """`good` most of the time, else a hostile replacement for an argument."""
    hostile = st.sampled_from([None, "1", 1.5, [1.5], [None], [[1]], {"a": 1}, -1, [-1], [2**70], [True],
                               np.array([0.5]), object()])
    return draw(st.one_of(st.just(good), hostile)) if draw(st.integers(0, 3)) == 0 else good


#: Per function: its name, the operator's, then words one of which an error message names.
FIELDS = {
    "slice": ("slice", "Slice1", "x", "input_tensor", "offsets", "sizes", "strides", "output_sizes", "input_window",
              "output_tensor", "device"),
    "pad": ("pad", "Padding", "x", "input_tensor", "start_padding", "end_padding", "mode", "value", "padding_value",
            "output_tensor", "device"),
    "reverse_subsequences": ("reverse_subsequences", "ReverseSubsequences", "x", "input_tensor", "sequence_lengths",
                             "axis", "device"),
    "reduce": ("reduce", "Reduce", "x", "input_tensor", "function", "axes", "output_data_type", "output_tensor",
               "device"),
}


@st.composite
def functional_calls(draw, fn: str):
    """(x, kwargs, reference callable or None) for one functional call with hostile pieces."""
    if draw(st.integers(0, 5)) == 0:
        x = draw(_hostile_arrays())
        shape = (4,)
    else:
        x = draw(odd_arrays())
        shape = x.shape
    rank = len(shape)
    if fn == "slice":
        offsets = [draw(st.integers(0, n - 1)) for n in shape]
        sizes = [draw(st.integers(1, n - o)) for n, o in zip(shape, offsets)]
        strides = [draw(st.sampled_from([1, 2, -1, -3])) for _ in shape]
        args = {"offsets": _maybe_hostile(draw, offsets), "sizes": _maybe_hostile(draw, sizes),
                "strides": _maybe_hostile(draw, strides)}
        return x, args, lambda a: reference.slice1(a, args["offsets"], args["sizes"], args["strides"])
    if fn == "pad":
        start, end = _ints(draw, rank, 0, 3), _ints(draw, rank, 0, 3)
        mode = draw(st.sampled_from(["constant", "edge", "reflection", "symmetric", "CONSTANT", dml.PaddingMode.EDGE]))
        value = draw(st.sampled_from([0.0, 7, -3.5, float("nan"), float("inf"), 300, 2**64, -0.0]))
        args = {"start_padding": _maybe_hostile(draw, start), "end_padding": _maybe_hostile(draw, end),
                "mode": _maybe_hostile(draw, mode), "value": value}
        return x, args, lambda a: reference.padding(a, args["start_padding"], args["end_padding"], args["mode"],
                                                    args["value"])
    if fn == "reverse_subsequences":
        axis = draw(st.integers(0, rank - 1))
        lengths_shape = [1 if i == axis else n for i, n in enumerate(shape)]
        lengths = np.random.default_rng(draw(st.integers(0, 999))).integers(0, shape[axis] + 2, size=lengths_shape)
        lengths = lengths.astype(draw(st.sampled_from([np.uint32, np.int64, np.uint8, np.uint64, np.int16])))
        hostile_lengths = st.sampled_from([lengths.astype(np.float32), -lengths - 1, lengths.tolist(), None, 3,
                                           np.zeros([n + 1 for n in lengths_shape], np.uint32), "1"])
        lengths_arg = draw(st.one_of(st.just(lengths), hostile_lengths)) if draw(st.integers(0, 3)) == 0 else lengths
        args = {"sequence_lengths": lengths_arg, "axis": _maybe_hostile(draw, axis)}
        return x, args, lambda a: reference.reverse_subsequences(a, np.asarray(args["sequence_lengths"]),
                                                                 args["axis"])
    function = draw(st.sampled_from(["max", "min", "argmax", "ARGMIN", F.MAX, "bogus", None, 99]))
    axes = draw(st.one_of(st.none(), st.integers(-1, rank), st.lists(st.integers(0, rank - 1), min_size=1,
                                                                         max_size=rank, unique=True)))
    out_type = draw(st.sampled_from([None, None, "int64", np.uint32, T.INT32, "float32", "nonsense"]))
    args = {"function": function, "axes": _maybe_hostile(draw, axes), "output_data_type": out_type}
    return x, args, lambda a: reference.reduce(a, args["function"], args["axes"], args["output_data_type"])


@pytest.mark.parametrize("fn", list(FIELDS))
def test_functional_api_hostile_arguments(adapter, fn):
    device = get_device(adapter)
    call = getattr(dml, fn)

    @budget(FUNCTIONAL_EXAMPLES)
    @given(data=st.data())
    def check(data):
        x, args, expected = data.draw(functional_calls(fn))
        COUNTS["functional", fn, adapter] += 1
        copy = x.copy() if isinstance(x, np.ndarray) else None
        try:
            got = call(x, device=device, **args)
        except dml.InvalidArgumentError as exc:
            assert type(exc) is dml.InvalidArgumentError
            message = str(exc)
            assert message.startswith((fn, FIELDS[fn][1])), message
            assert any(field in message for field in FIELDS[fn][2:]), message
            COUNTS["functional rejected", fn, adapter] += 1
        else:
            native = x.astype(x.dtype.newbyteorder("="))  # results come in native byte order
            with np.errstate(all="ignore"):
                want = expected(native)
            if fn == "reduce" and want.dtype.kind == "f":
                assert_reduce_close(got, want, native, dml.ReduceFunction.coerce(args["function"]),
                                    None if args["axes"] is None else np.atleast_1d(args["axes"]).tolist())
            else:
                assert_bits_equal(got, want)
        if copy is not None:  # inputs are never written
            assert x.dtype == copy.dtype and x.shape == copy.shape
            assert (x.tolist() == copy.tolist()) if x.dtype.hasobject else x.tobytes() == copy.tobytes()

    check()


def test_long_run_flag_is_documented():
    assert "GPUDML_FUZZ_EXAMPLES" in (__doc__ or "")
    assert math.isfinite(budget(1).max_examples)
