"""The rule of DML_JOIN."""

from __future__ import annotations

import numpy as np
from conftest import random_bits
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference

from ..draws import Draw
from ..hostile import broken_parts, maybe_hostile, with_entry
from ..registry import Ask, Drawn, rule


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
