"""Hostile descriptions and calls: broken fields and tensors, hostile execute arguments
and functional arguments, for the fuzz tests (and the rules' `broken` strategies)."""

from __future__ import annotations

import dataclasses

import numpy as np
from conftest import random_bits
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import tensor_fields
from gpudml.ops.spec import OUTPUT_FIELDS
from gpudml.tensor_desc import calc_buffer_tensor_size, packed_strides

from .cases import Case
from .draws import ALL_TYPES, T
from .layouts import tensor_at, with_tensor


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
    # (A size below 1 never reaches an operator: TensorDesc refuses it when it is built,
    # tests/test_tensor_desc.py.)
    alone = sum(map(len, tensor_fields(desc))) == 1  # (a generator's output: no other rank to mismatch)
    kinds = ["size_huge", "count_overflow", "rank0", "rank9", *([] if alone else ["rank_mismatch"]),
             "strides_length", "stride_negative", "stride_huge", "span_overflow", "total_small", "flags", "alignment",
             "not_a_desc"]
    if field.startswith(OUTPUT_FIELDS) and any(n > 1 for n in sizes):
        kinds.append("aliasing")
    kind = draw(st.sampled_from(kinds))
    if kind == "size_huge":
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
    if not good:  # a generator (no input): an input too many, or no list
        extra = random_bits(rng, np.float32, [4])
        return draw(st.sampled_from([([extra], "inputs"), (extra, "inputs must be a list"),
                                     (None, "inputs must be a list")]))
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
