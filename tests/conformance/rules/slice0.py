"""The rule of DML_SLICE (the first version)."""

from __future__ import annotations

from hypothesis import strategies as st

from gpudml import reference

from ..draws import Draw
from ..hostile import maybe_hostile, pick_axis, replace_fields, with_entry
from ..registry import Ask, Drawn, rule


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
