"""The rule of DML_GEMM."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import gemm as gemm_op
from gpudml.ops import spec_named

from ..draws import MAX_SIZE, Draw
from ..hostile import maybe_hostile, one_more, replace_fields
from ..registry import Ask, Drawn, rule
from ._common import broken_output, fused_activation, products_compare


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
        attributes["fused_activation"] = fused_activation(d)
    return Drawn(tensors, attributes)



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
        return broken_output(draw, desc, kind)
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



def _gemm_compare(got, want, x, args):
    products_compare(got, want, [x, args["b"]] + ([args["c"]] if "c" in args else []),
                      {k: v for k, v in args.items() if k not in ("b", "c")}, gemm_op)
