"""The rule of DML_MAX_UNPOOLING: a pooled tensor [B, C, H, W], indices of the table's index
type (free) into an output of twice its spatial sizes or so (the spec's sample fills them:
duplicates and out-of-range ones among them)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops import max_unpooling as unpool_op

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile, with_entry
from ..registry import Ask, Drawn, rule


@st.composite
def _broken(draw, desc):
    inp, indices, out = desc.input_tensor, desc.indices_tensor, desc.output_tensor
    other = [t for t in dml.DataType if t != out.data_type]
    choices = {
        "indices_sizes": ("indices_tensor", dml.TensorDesc(indices.data_type, with_entry(inp.sizes, 3,
                                                                                         inp.sizes[3] + 1))),
        "indices_type": ("indices_tensor", dml.TensorDesc(draw(st.sampled_from(
            [dml.DataType.INT32, dml.DataType.INT64, dml.DataType.FLOAT32, dml.DataType.UINT16])), inp.sizes)),
        "output_type": ("output_tensor", dml.TensorDesc(draw(st.sampled_from(other)), out.sizes)),
    }
    return broken_choice(draw, desc, choices)


@st.composite
def _functional(draw, x, shape):
    """Indices into twice x's spatial sizes (of x's shape where 4-D), now and then hostile."""
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    out = [*shape[:2], *(2 * n for n in shape[2:])] if len(shape) == 4 else [1, 1, 2, 2]
    count = int(np.prod(out))
    indices = rng.integers(0, count + 2, shape).astype(draw(st.sampled_from([np.uint32, np.int64, np.uint64])))
    args = {"indices": maybe_hostile(draw, indices), "output_sizes": maybe_hostile(draw, out)}
    return args, lambda a: reference.max_unpooling(a, unpool_op.indices_array(args["indices"]),
                                                   args["output_sizes"])


@rule("max_unpooling", broken=_broken, functional=_functional, free=("indices_tensor",),
      fields=("x", "input_tensor", "indices", "indices_tensor", "output_tensor", "output_sizes", "device",
              "DimensionCount"))
def max_unpooling_call(d: Draw, ask: Ask) -> Drawn:
    """A small pooled tensor (the asked rank's sizes where another rank: rejected), an
    output of 1-3 times its spatial sizes."""
    if ask.sizes is not None or ask.rank != 4:
        x = ask.input(d, 4)
        out = [*x.sizes[:2], *(2 * n for n in x.sizes[2:])] if x.rank == 4 else [1, 1, 2, 2]
    else:
        x = dml.TensorDesc(ask.data_type, [d.int(1, 2), d.int(1, 3), d.int(1, 4), d.int(1, 4)])
        out = [*x.sizes[:2], *(n * d.int(1, 3) for n in x.sizes[2:])]
    indices = dml.TensorDesc(ask.types["indices_tensor"], x.sizes)
    return Drawn([x, indices], {"output_sizes": out})
