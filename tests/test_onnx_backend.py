"""ONNX's own backend test runner (onnx.backend.test.BackendTest) on gpudml.onnx.backend.

The runner loads each node test of the pinned onnx release (1.22.0), prepares its model
with the backend (an InferenceSession on gpudml's default Device, the model as it is: its
parameters given as graph inputs are value inputs), runs it and compares with ONNX's
outputs itself (dtype and shape exact, values within the test's rtol/atol). Every node test
is accounted for here: run, or excluded with its reason, generated from the mapping table
and the lists of tests/test_onnx_nodes.py:

- an op type with no DirectML operator in gpudml's mapping (the op's name),
- a data type DirectML lacks (bfloat16, float8, float4, 2- and 4-bit integers: FOREIGN),
- outside DirectML's semantics (NOT_DIRECTML, with its reason; those a session runs are run),
- random values (RANDOM_NAMES: the runner compares one draw of numpy's generator),
- an expanded function body (`*_expanded`: the op's own test runs).

The node tests of control flow (If, Loop, Scan: run by the session, no mapping row) run too,
but those tests/test_onnx_control_flow.py lists in NOT_RUN, with its reason, and those of
RANK_0_ITEMS (below).

test_the_runner_covers_the_mapped_node_tests checks the accounting and the target (at least
95% of the node tests of mapped op types, those of types DirectML lacks aside, pass); the
runner's own tests say the rest. Only the CPU tests are collected: gpudml never runs on CUDA
(gpudml.onnx.backend.supports_device), so the runner would skip each CUDA test.
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

import numpy as np
import onnx
import onnx.backend.test
import pytest
from onnx import TensorProto, helper

import gpudml.onnx.backend as backend
from gpudml.errors import InvalidArgumentError
from gpudml.onnx import mapping

sys.path.insert(0, str(Path(__file__).parent))
from test_onnx_control_flow import CONTROL_TESTS, NOT_RUN  # noqa: E402
from test_onnx_nodes import FOREIGN, NODE_NAMES, NODE_TESTS, NOT_DIRECTML, OTHER_EXPECTED, RANDOM_NAMES  # noqa: E402

#: Node tests of control flow that run through the session (tests/test_onnx_control_flow.py, whose
#: comparison takes rank 0 as one element) but whose expected output the runner compares
#: rank for rank where the session gives one element for rank 0.
RANK_0_ITEMS = {
    "test_loop16_seq_none": "a rank-0 item of a sequence fed to the model comes back as one element ([1]): the "
                            "session holds rank 0 so, and a sequence item's rank 0 is restored only where its "
                            "type declares it (this one's does not); tests/test_onnx_control_flow.py runs it",
}

#: The node tests of control flow the runner runs (its ops' own tests, the expanded ones aside).
CONTROL_NAMES = [n for n in CONTROL_TESTS if not n.endswith("_expanded") and n not in NODE_NAMES]


def _excluded() -> dict[str, str]:
    """Every node test of the wheel that is not run, and why."""
    reasons = {}
    for folder in sorted(NODE_TESTS.glob("test_*")):
        name = folder.name
        if name in NODE_NAMES:
            if name in NOT_DIRECTML:
                reasons[name] = f"outside DirectML's semantics: {NOT_DIRECTML[name]}"
            elif name in RANDOM_NAMES:
                reasons[name] = ("random values: the runner compares them with one draw of numpy's generator "
                                 "(tests/test_onnx_random.py checks Philox's draws)")
            elif name in OTHER_EXPECTED:
                reasons[name] = f"ONNX's expected output is not DirectML's: {OTHER_EXPECTED[name][0]}"
            continue
        if name in CONTROL_NAMES:
            if name in NOT_RUN:
                reasons[name] = f"control flow the session refuses: {NOT_RUN[name]}"
            elif name in RANK_0_ITEMS:
                reasons[name] = f"runs, compared rank for rank: {RANK_0_ITEMS[name]}"
            continue
        if name in FOREIGN:
            reasons[name] = "a data type DirectML lacks"
        elif name.endswith("_expanded"):
            reasons[name] = "an expanded function body (the op's own test runs)"
        else:
            model = onnx.load(str(folder / "model.onnx"), load_external_data=False)
            ops = sorted({n.op_type for n in model.graph.node} - set(mapping.BY_TYPE))
            reasons[name] = (f"no DirectML operator in gpudml's mapping: {', '.join(ops)}" if ops
                             else "a model of several nodes")
    return reasons


EXCLUDED = _excluded()
RUN = [name for name in [*NODE_NAMES, *CONTROL_NAMES] if name not in EXCLUDED]

_runner = onnx.backend.test.BackendTest(backend, __name__)
for _name in RUN:
    _runner.include(f"^{_name}_cpu$")
_cases = _runner.test_cases["OnnxBackendNodeModelTest"]


class OnnxBackendNodeModelTest(unittest.TestCase):
    """ONNX's runner's node tests that gpudml runs (CPU: gpudml's default Device)."""


for _name in RUN:
    setattr(OnnxBackendNodeModelTest, f"{_name}_cpu", getattr(_cases, f"{_name}_cpu"))
del _cases  # (a TestCase of every node test, the others skipped: pytest would collect it)

#: The refusals of NOT_DIRECTML that are a data type the operator's DirectML table lacks (CAST's has no
#: INT4/UINT4: test_onnx_nodes' Cast refusals).
_TYPE_REASONS = ("not in the operator's support table", "DirectML has numeric types only",
                 "registers Cast for 8- to 64-bit types only")


def test_the_runner_covers_the_mapped_node_tests():
    """Every node test is run or excluded with a reason; at least 95% of those of mapped op
    types run, those whose data types DirectML's tables lack aside (FOREIGN, and the
    support-table refusals of NOT_DIRECTML); a CUDA device is not supported."""
    folders = {f.name for f in NODE_TESTS.glob("test_*") if (f / "model.onnx").exists()}
    assert set(RUN) | set(EXCLUDED) == folders
    assert not set(RUN) & set(EXCLUDED)
    assert all(reason for reason in EXCLUDED.values())
    mapped = [n for n in NODE_NAMES if not any(r in EXCLUDED.get(n, "") for r in _TYPE_REASONS)]
    assert len(RUN) / len(mapped) >= 0.95, (len(RUN), len(mapped))
    assert backend.supports_device("CPU") and not backend.supports_device("CUDA")


def test_run_node_and_run_model(device):
    """run_node builds a model of the node (shape inference types its output); run_model
    and a prepared model take inputs by position or by name; outputs by position and name."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 0.5, np.float32)
    (got,) = backend.run_node(helper.make_node("Add", ["x", "y"], ["z"]), [x, y], device=device)
    np.testing.assert_array_equal(got, x + y)
    model = helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["x"], ["out"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3])]),
        opset_imports=[helper.make_opsetid("", 17)])
    assert backend.is_compatible(model)
    rep = backend.prepare(model, device)
    np.testing.assert_array_equal(rep.run([x - 2]).out, np.maximum(x - 2, 0))
    np.testing.assert_array_equal(rep.run({"x": x - 2})[0], np.maximum(x - 2, 0))
    np.testing.assert_array_equal(backend.run_model(model, [x], device)[0], x)


def test_backend_refusals():
    nonzero = helper.make_model(  # (Unique: no mapping)
        helper.make_graph([helper.make_node("Unique", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
        opset_imports=[helper.make_opsetid("", 17)])
    assert not backend.is_compatible(nonzero)
    with pytest.raises(InvalidArgumentError, match="device 'CUDA' is not one gpudml runs on"):
        backend.prepare(nonzero, "CUDA")
    with pytest.raises(InvalidArgumentError, match="node must be an onnx.NodeProto"):
        backend.run_node("Add", [])
