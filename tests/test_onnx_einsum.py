"""Einsum as DirectML's execution provider builds it (gpudml/onnx/mapping.py's _einsum): the
equation classes of DmlOperatorEinSum.cpp's header in float32 (ONNX's node tests are
float64, which GEMM and REDUCE lack), eagerly and through a session, against numpy's
einsum; the classes it leaves to the CPU refused with the reason; the operators each class
runs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

import gpudml.onnx as gonnx
from gpudml.errors import UnsupportedError
from gpudml.onnx import mapping

sys.path.insert(0, str(Path(__file__).parent))
from test_onnx_nodes import run_eagerly  # noqa: E402

#: (equation, input shapes): the provider's table of classes, and products of its general form.
CASES = [
    ("i", [(5,)]), ("i->", [(5,)]), ("ij->ji", [(3, 4)]), ("ji", [(3, 4)]), ("ii->i", [(4, 4)]), ("ii->", [(4, 4)]),
    ("ij->", [(3, 4)]), ("ij->j", [(3, 4)]), ("ij->i", [(3, 4)]), ("i,i->i", [(5,), (5,)]), ("i,i->", [(5,), (5,)]),
    ("i,i", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]), ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ji->ij", [(3, 4), (4, 3)]), ("ij,jk", [(3, 4), (4, 5)]), ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]), ("ij,kj->ikj", [(3, 4), (5, 4)]), ("ij,kl->ijkl", [(2, 3), (4, 2)]),
    (",ij", [(), (2, 3)]), ("ij,j", [(3, 4), (4,)]), ("ii,ii->i", [(4, 4), (4, 4)]), ("ii,ii->", [(4, 4), (4, 4)]),
    ("abij,abjk->abik", [(2, 2, 3, 4), (2, 2, 4, 3)]), ("ijk,jkl->il", [(2, 3, 4), (3, 4, 5)]),
    ("bij,bjk->kib", [(2, 3, 4), (2, 4, 5)]), ("ji,jk->ik", [(4, 3), (4, 5)]),
]


def _model(equation, shapes):
    names = [f"x{k}" for k in range(len(shapes))]
    graph = helper.make_graph([helper.make_node("Einsum", names, ["y"], equation=equation)], "g",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))
                               for n, s in zip(names, shapes)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])


@pytest.mark.parametrize("equation, shapes", CASES, ids=[c[0] for c in CASES])
def test_classes_eagerly_and_in_a_session(device, equation, shapes):
    rng = np.random.default_rng(len(equation))
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want = np.einsum(equation, *[x.astype(np.float64) for x in xs])
    model = _model(equation, shapes)
    (eager,) = run_eagerly(model, [x.reshape(x.shape or (1,)) for x in xs], device)
    (session,) = gonnx.InferenceSession(model, device=device).run(None, {f"x{k}": x for k, x in enumerate(xs)})
    for got in (np.asarray(eager), session):
        got = got.reshape(want.shape) if want.ndim == 0 else got
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("equation, operators", [
    ("ij->ji", {"ElementWiseIdentity"}), ("ij->i", {"Reduce"}), ("ij,ij->ij", {"ElementWiseMultiply"}),
    ("bij,bkj->bik", {"Gemm"}), ("ij,j", {"Gemm"}), ("ijk,jkl->il", {"ElementWiseMultiply", "Reduce"}),
    ("ii,ii->", {"ElementWiseMultiply", "Reduce"}),
])
def test_each_class_runs_the_providers_operators(device, equation, operators):
    """The graph's nodes are the provider's operators (views cost nothing)."""
    shapes = next(s for e, s in CASES if e == equation)
    sess = gonnx.InferenceSession(_model(equation, shapes), device=device)
    build = sess._last
    assert {node.spec.name for node in build.graph.nodes} == operators


@pytest.mark.parametrize("equation, shapes, reason", [
    ("i,i,i->i", [(3,), (3,), (3,)], "Einsum of 3 inputs: the provider's DirectML operators take one or two"),
    ("...ii->...i", [(2, 3, 3)], "Einsum with an ellipsis (...)"),
])
def test_what_the_provider_leaves_to_its_cpu_is_refused(device, equation, shapes, reason):
    with pytest.raises(UnsupportedError, match=reason.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        gonnx.InferenceSession(_model(equation, shapes), device=device)
    with pytest.raises(mapping.NotMapped, match=reason.split(":")[0].replace("(", r"\(").replace(")", r"\)")
                       .replace(".", r"\.")):
        run_eagerly(_model(equation, shapes), [np.ones(s, np.float32) for s in shapes], device)
