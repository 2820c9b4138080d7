"""ONNX's own node tests through gpudml's ONNX mapping, eagerly: outside vectors.

The onnx wheel (a test dependency, 1.22.0) ships a model, inputs and expected outputs for
every ONNX operator under onnx/backend/test/data/node/test_*. Each test here loads one of
them and runs its single node through the row of gpudml/onnx/mapping.py for its op type
(the one place that knows how an ONNX node becomes the DirectML operators DirectML's
execution provider would use: attributes and constant inputs as functional arguments,
auto_pad and ceil_mode as paddings, keepdims=0 and views as reshapes, ...), eagerly
(`mapping.Context` without a graph: each functional form runs at once on the test's
adapter, numpy in and out, every input a constant), and compares with ONNX's expected
outputs: bit-exact for integers, within ONNX's own backend tolerance for floats (rtol 1e-3,
atol 1e-7: onnx/backend/test/runner). tests/test_onnx_session.py runs the same tests
through an InferenceSession: a compiled, fused Graph whose tensors are graph inputs.

Every node test of a mapped ONNX operator either passes or is listed in NOT_DIRECTML with
the reason it is outside DirectML's semantics (a type DirectML lacks, an empty tensor, an
ONNX-only feature); a listed test must be refused with that reason, so the list cannot go
stale: when gpudml gains what a test needs, the test fails until it is taken off the list.
"""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import gpudml as dml
from gpudml import reference
from gpudml.errors import InvalidArgumentError, UnsupportedError
from gpudml.onnx import mapping, sequences
from gpudml.ops.quantize import FOUR_BIT

NODE_TESTS = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"


#: numpy's dtypes of DirectML's data types: gpudml's DataTypes, and INT4/UINT4 (FL 6.3: QUANTIZE's
#: and DEQUANTIZE's), which gpudml describes by their bytes and ONNX's tests give as ml_dtypes
#: int4/uint4 arrays (ONNX's bfloat16, float8, float4 and 2-bit tests are not DirectML's).
_DIRECTML_DTYPES = {np.dtype(t.numpy) for t in dml.DataType} | {np.dtype(getattr(ml_dtypes, name.lower()))
                                                               for name in FOUR_BIT}


class NotDirectML(Exception):
    """The test's values are not tensors DirectML has (the message says what)."""


def load(name: str):
    """(model, inputs, outputs) of node test `name`: the inputs as the node reads them (None
    for an omitted optional input), the expected outputs."""
    folder = NODE_TESTS / name
    model = onnx.load(str(folder / "model.onnx"))
    (node,) = model.graph.node
    for value in list(model.graph.input) + list(model.graph.output):
        kind = value.type.WhichOneof("value")
        if kind not in ("tensor_type", "sequence_type", "optional_type"):
            raise NotDirectML(f"a {kind.removesuffix('_type')} value ({value.name}): DirectML has tensors only")
    data = folder / "test_data_set_0"
    types = [v.type for v in model.graph.input]
    given = [_read(p, t) for p, t in zip(sorted(data.glob("input_*.pb"), key=_index), types)]
    # Node inputs left empty ('') are omitted optional inputs; the graph's inputs are the others, in order.
    inputs, it = [], iter(given)
    for name_in in node.input:
        inputs.append(next(it) if name_in else None)
    outputs = [_read(p, v.type) for p, v in zip(sorted(data.glob("output_*.pb"), key=_index), model.graph.output)]
    for a in [leaf for value in given + outputs for leaf in _leaves(value)]:
        if a.dtype.kind in "USO":
            raise NotDirectML(f"{a.dtype} tensors: DirectML has numeric types only")
        if a.dtype != np.bool_ and a.dtype not in _DIRECTML_DTYPES:
            raise NotDirectML(f"{a.dtype} tensors: not a DirectML data type")
    return model, inputs, outputs


def _index(path: Path) -> int:
    return int(path.stem.split("_")[1])


def _read(path: Path, kind: onnx.TypeProto | None = None):
    """A test's value: a numpy array; a sequence (`kind`'s) a list of them, an optional its
    value or None, as onnxruntime's Python API passes them."""
    which = kind.WhichOneof("value") if kind is not None else "tensor_type"
    if which == "sequence_type":
        proto = onnx.SequenceProto()
        proto.ParseFromString(path.read_bytes())
        return numpy_helper.to_list(proto)
    if which == "optional_type":
        proto = onnx.OptionalProto()
        proto.ParseFromString(path.read_bytes())
        return numpy_helper.to_optional(proto)
    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def _leaves(value) -> list:
    """The arrays a value of a test holds (a list's, none for None)."""
    if value is None:
        return []
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _eager_value(value, kind: onnx.TypeProto):
    """A test's value as a build function reads it eagerly: a sequence a sequences.Sequence,
    an optional a sequences.OptionalValue, BOOL tensors UINT8 (as the provider passes them)."""
    which = kind.WhichOneof("value")
    if which == "sequence_type":
        return sequences.Sequence(tuple(_eager_value(v, kind.sequence_type.elem_type) for v in value),
                                  sequences.elem_dtype(kind))
    if which == "optional_type":
        return sequences.OptionalValue(None if value is None else _eager_value(value, kind.optional_type.elem_type))
    return value.astype(np.uint8) if value is not None and value.dtype == np.bool_ else value


def _plain(value):
    """An eager output as the tests compare it: a Sequence a list, an OptionalValue its value."""
    if isinstance(value, sequences.Sequence):
        return [_plain(v) for v in value.items]
    if isinstance(value, sequences.OptionalValue):
        return None if value.value is None else _plain(value.value)
    return value


def opset_of(model) -> int:
    return max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=1)


def run_eagerly(model, inputs: list, device) -> list:
    """The model's node through its mapping row, eagerly on `device`: BOOL tensors as UINT8
    (as the execution provider passes them)."""
    (node,) = model.graph.node
    opset = opset_of(model)
    reason = mapping.refusal(node.op_type, node.domain, opset)
    if reason is not None:
        raise mapping.NotMapped(reason)
    types = {v.name: sequences.elem_dtype(v.type) for v in list(model.graph.input) + list(model.graph.output)}
    ctx = mapping.Context(device, onnx_dtype=types.__getitem__)
    kinds = {v.name: v.type for v in model.graph.input}
    inputs = [_eager_value(a, kinds[name]) if name else None for a, name in zip(inputs, node.input)]
    n = mapping.Node(node, opset, inputs, [bool(name) for name in node.output])
    return [_plain(v) for v in mapping.BY_TYPE[node.op_type].build(ctx, n)]


_SUPPORT_TABLE = re.compile(r"data_type (\w+) is not supported at (\w+) \(")

#: What a node test outside DirectML raises: the harness's, the mapping's or gpudml's refusal.
REFUSALS = (NotDirectML, mapping.NotMapped, InvalidArgumentError, UnsupportedError)


def check_refused(name: str, exc: Exception) -> None:
    """`name` raised `exc`: it must be listed in NOT_DIRECTML with the reason the refusal
    gives (a support table's rejection read as "<TYPE>: not in the operator's support table")."""
    text = str(exc)
    found = _SUPPORT_TABLE.search(text)
    if found:
        text = f"{found[1]}: not in the operator's support table at {found[2]} ({text})"
    assert name in NOT_DIRECTML, f"{name}: {type(exc).__name__}: {text}: map it, or list it in NOT_DIRECTML " \
                                 f"with this reason"
    assert NOT_DIRECTML[name] in text, f"{name}: listed for {NOT_DIRECTML[name]!r}, raised {text}"


def compare(name: str, got: list, want: list) -> None:
    """Outputs against ONNX's: the same shapes and dtypes (BOOL as UINT8 0/1, rank 0 as one
    element where DirectML's tensors hold it), integers exact, floats within ONNX's backend
    tolerance; of a random op's test (RANDOM_NAMES: ONNX's expected values are one draw of
    numpy's generator, not Philox's), the shapes and dtypes, and Bernoulli's values 0 or 1
    (tests/test_onnx_random.py checks the draws' statistics and their determinism)."""
    assert len(got) == len(want), f"{name}: {len(got)} outputs, ONNX {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, list) or w is None:  # a sequence (a list of arrays), an empty optional (None)
            assert isinstance(g, list) if w is not None else g is None, f"{name}: output {k}: {g!r}, ONNX {w!r}"
            if w is not None:
                compare(f"{name}: output {k}", g, w)
            continue
        g = np.asarray(g)
        if w.ndim == 0 and g.shape == (1,):
            g = g.reshape(())
        assert g.shape == w.shape, f"{name}: output {k} shape {g.shape}, ONNX {w.shape}"
        if w.dtype == np.bool_ and g.dtype != np.bool_:  # DirectML's logical operators answer UINT8 0/1
            assert g.dtype == np.uint8 and set(np.unique(g)) <= {0, 1}, f"{name}: output {k}: {g.dtype} {g}"
            g = g.astype(np.bool_)
        assert g.dtype == w.dtype, f"{name}: output {k} dtype {g.dtype}, ONNX {w.dtype}"
        if name in RANDOM_NAMES:
            assert np.isin(g, [0, 1]).all() if name.startswith("test_bernoulli") else np.isfinite(g).all(), name
            continue
        if np.issubdtype(w.dtype, np.floating):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-7, err_msg=f"{name}: output {k}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{name}: output {k}")


#: Node tests of mapped operators that are outside DirectML's semantics, and why.
NOT_DIRECTML = {
    "test_equal_string": "tensors: DirectML has numeric types only",
    "test_equal_string_broadcast": "tensors: DirectML has numeric types only",
    "test_max_float64": "FLOAT64: not in the operator's support table",
    "test_mod_mixed_sign_float64": "FLOAT64: not in the operator's support table",
    "test_quantizelinear_int16": "INT16: not in the operator's support table",
    "test_quantizelinear_uint16": "UINT16: not in the operator's support table",
    "test_quantizelinear_blocked_symmetric": "INT16: not in the operator's support table",
    "test_min_float64": "FLOAT64: not in the operator's support table",
    "test_einsum_batch_diagonal": "Einsum with an ellipsis (...)",
    "test_einsum_batch_matmul": "FLOAT64: not in the operator's support table",
    "test_einsum_inner_prod": "FLOAT64: not in the operator's support table",
    "test_einsum_sum": "FLOAT64: not in the operator's support table",
    "test_not_2d": "opset 1 is older than the mapping's first, 7",
    "test_not_3d": "opset 1 is older than the mapping's first, 7",
    "test_not_4d": "opset 1 is older than the mapping's first, 7",
    "test_dropout_default_mask": "Dropout's mask output",
    "test_dropout_default_mask_ratio": "Dropout's mask output",
    "test_training_dropout": "Dropout in training mode (a random mask)",
    "test_training_dropout_default": "Dropout in training mode (a random mask)",
    "test_training_dropout_default_mask": "Dropout in training mode (a random mask)",
    "test_training_dropout_mask": "Dropout in training mode (a random mask)",
    "test_training_dropout_zero_ratio_mask": "Dropout's mask output",
    "test_cumsum_1d": "FLOAT64: not in the operator's support table",
    "test_cumsum_1d_exclusive": "FLOAT64: not in the operator's support table",
    "test_cumsum_1d_reverse": "FLOAT64: not in the operator's support table",
    "test_cumsum_1d_reverse_exclusive": "FLOAT64: not in the operator's support table",
    "test_cumsum_2d_axis_0": "FLOAT64: not in the operator's support table",
    "test_cumsum_2d_axis_1": "FLOAT64: not in the operator's support table",
    "test_cumsum_2d_negative_axis": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_default_axes_keepdims_example": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_default_axes_keepdims_random": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_do_not_keepdims_example": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_do_not_keepdims_random": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_keepdims_example": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_keepdims_random": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_negative_axes_keepdims_example": "FLOAT64: not in the operator's support table",
    "test_reduce_log_sum_exp_negative_axes_keepdims_random": "FLOAT64: not in the operator's support table",
    "test_clip_min_greater_than_max": "min > max: ONNX's Clip gives max there",
    "test_pow_types_float32_int64": "INT64: not in the operator's support table",
    "test_pow_types_float32_uint64": "UINT64: not in the operator's support table",
    "test_pow_types_int64_float32": "INT64: not in the operator's support table",
    "test_pow_types_int64_int64": "INT64: not in the operator's support table",
    "test_maxpool_with_argmax_2d_precomputed_strides": "storage_order=1 (column-major indices)",
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True":
        "ceil_mode with count_include_pad=1",
    "test_batchnorm_epsilon_training_mode": "training_mode: the batch's own mean and variance",
    "test_batchnorm_example_training_mode": "training_mode: the batch's own mean and variance",
    **{name: "DirectML's MULTIHEAD_ATTENTION has no soft cap" for name in (
        "test_attention_3d_diff_heads_sizes_softcap", "test_attention_3d_gqa_softcap", "test_attention_3d_softcap",
        "test_attention_3d_with_past_and_present_qk_matmul_softcap", "test_attention_4d_diff_heads_sizes_softcap",
        "test_attention_4d_gqa_softcap", "test_attention_4d_softcap", "test_attention_4d_softcap_neginf_mask",
        "test_attention_4d_softcap_neginf_mask_poison", "test_attention_4d_with_qk_matmul_softcap",)},
    **{name: "MULTIHEAD_ATTENTION does not output its scores" for name in (
        "test_attention_3d_with_past_and_present_qk_matmul",
        "test_attention_3d_with_past_and_present_qk_matmul_bias",
        "test_attention_3d_with_past_and_present_qk_matmul_softmax",
        "test_attention_4d_with_past_and_present_qk_matmul",
        "test_attention_4d_with_past_and_present_qk_matmul_bias",
        "test_attention_4d_with_past_and_present_qk_matmul_bias_3d_mask",
        "test_attention_4d_with_past_and_present_qk_matmul_bias_3d_mask_causal",
        "test_attention_4d_with_past_and_present_qk_matmul_bias_4d_mask",
        "test_attention_4d_with_past_and_present_qk_matmul_bias_4d_mask_causal", "test_attention_4d_with_qk_matmul",
        "test_attention_4d_with_qk_matmul_bias", "test_attention_4d_with_qk_matmul_softmax",)},
}


def _roialign_directml(node, inputs: list) -> list:
    """RoiAlign as DirectML's ROI_ALIGN1 computes it with the mapping's arguments: gpudml's
    float64 reference, in x's type."""
    a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
    ratio = int(a.get("sampling_ratio", 0))
    half = a.get("coordinate_transformation_mode", b"half_pixel") == b"half_pixel"
    x, rois, batch = inputs
    return [reference.roi_align(x, rois, batch.view(np.uint64), float(a.get("spatial_scale", 1.0)),
                                (int(a.get("output_height", 1)), int(a.get("output_width", 1))),
                                reduction_function=a.get("mode", b"avg").decode().replace("avg", "average"),
                                input_pixel_offset=0.5 if half else 0.0, minimum_samples_per_output=ratio or 1,
                                maximum_samples_per_output=ratio or 2**32 - 1)]


#: Node tests whose expected outputs are not what DirectML computes: why, and DirectML's
#: outputs from the test's inputs (node, inputs -> outputs). The tests compare with those,
#: and `expected` checks that ONNX's outputs do differ, so an entry cannot go stale.
OTHER_EXPECTED = {
    "test_roialign_mode_max": (
        "ONNX's reference takes the largest of each sample's four weighted terms, not of the interpolated samples "
        "(onnxruntime issue 6146: ONNX Runtime's own runner excludes this test); DirectML's MAX reduces the samples",
        _roialign_directml),
}


def expected(name: str, model, inputs: list, want: list) -> list:
    """The outputs to compare with: ONNX's, or (OTHER_EXPECTED) DirectML's, checked to differ from ONNX's."""
    if name not in OTHER_EXPECTED:
        return want
    ours = OTHER_EXPECTED[name][1](model.graph.node[0], inputs)
    assert any(not np.allclose(o, w, rtol=1e-3, atol=1e-7) for o, w in zip(ours, want)), \
        f"{name}: ONNX's expected output is DirectML's now: take it off OTHER_EXPECTED"
    return ours


def refused_markdown() -> str:
    """NOT_DIRECTML as docs/onnx.md lists it: one line per reason, its tests
    (tests/test_onnx_session.py checks the page has it)."""
    by_reason: dict[str, list[str]] = {}
    for name, reason in NOT_DIRECTML.items():
        by_reason.setdefault(reason, []).append(name)
    return "\n".join(f"- {reason}: {', '.join(f'`{n}`' for n in sorted(names))}"
                     for reason, names in sorted(by_reason.items()))


#: Node tests of the random ops (mapping.RANDOM): compared by shape and dtype (`compare`).
RANDOM_NAMES: set[str] = set()


def _node_tests() -> list[str]:
    names = []
    for folder in sorted(NODE_TESTS.glob("test_*")):
        if not (folder / "model.onnx").exists() or folder.name.endswith("_expanded"):
            continue
        model = onnx.load(str(folder / "model.onnx"), load_external_data=False)
        if len(model.graph.node) == 1 and model.graph.node[0].op_type in mapping.BY_TYPE:
            if _foreign_types(model):
                FOREIGN.append(folder.name)
            else:
                names.append(folder.name)
                if model.graph.node[0].op_type in mapping.RANDOM:
                    RANDOM_NAMES.add(folder.name)
    return names


#: Node tests of mapped operators whose tensors have types DirectML lacks (bfloat16, the
#: float8 and float4 formats, 2- and 4-bit integers): not collected.
FOREIGN: list[str] = []


def _foreign_types(model) -> bool:
    for value in list(model.graph.input) + list(model.graph.output):
        if value.type.WhichOneof("value") != "tensor_type":
            continue
        elem = value.type.tensor_type.elem_type
        if elem == onnx.TensorProto.STRING:
            continue  # (string tensors: listed in NOT_DIRECTML)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
        if dtype != np.bool_ and dtype not in _DIRECTML_DTYPES:
            return True
    return False


NODE_NAMES = _node_tests()

#: Cast and CastLike to or from INT4/UINT4 (collected since DirectML has those types): refused,
#: as ONNX Runtime's DirectML provider registers Cast for its 8- to 64-bit types only.
NOT_DIRECTML.update({name: "ONNX Runtime's DirectML provider registers Cast for 8- to 64-bit types only"
                     for name in NODE_NAMES if re.fullmatch(r"test_cast(like)?_\w*(INT4|UINT4)\w*", name)})


#: Mapped op types the onnx 1.22.0 wheel has no node test of.
NO_NODE_TEST = {"GlobalLpPool", "MaxRoiPool", "RandomUniform", "RandomUniformLike", "RandomNormal",
                "RandomNormalLike", "Multinomial",
                # (the wheel's models of several sequence nodes, simple/test_sequence_model1-8, run in
                # tests/test_onnx_sequences.py)
                "ConcatFromSequence", "Optional", "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
                "SequenceLength",
                # (onnxruntime's op of the ONNX domain, no schema in onnx: tests/test_onnx_contrib.py)
                "SimplifiedLayerNormalization"}


@pytest.mark.parametrize("name", NODE_NAMES)
def test_onnx_node(name, device):
    try:
        model, inputs, want = load(name)
        got = run_eagerly(model, inputs, device)
    except REFUSALS as exc:
        check_refused(name, exc)
        return
    # the outputs the node names (an optional output left '' has no expected value: LSTM's Y in test_lstm_defaults)
    got = [g for g, output in zip(got, model.graph.node[0].output) if output]
    assert name not in NOT_DIRECTML, f"{name} runs now: take it off NOT_DIRECTML"
    compare(name, got, expected(name, model, inputs, want))


def test_every_mapped_operator_has_node_tests():
    """The mapping table and the wheel's tests agree: every mapped op type has node tests
    but those listed (a misspelt op type would map nothing), and the wheel is the one the
    docs name."""
    assert onnx.__version__ == "1.22.0"
    found = {onnx.load(str(NODE_TESTS / name / "model.onnx")).graph.node[0].op_type for name in NODE_NAMES}
    assert found == set(mapping.BY_TYPE) - NO_NODE_TEST, sorted(set(mapping.BY_TYPE) ^ found)
    assert set(NOT_DIRECTML) <= set(NODE_NAMES), sorted(set(NOT_DIRECTML) - set(NODE_NAMES))
    assert all(name.startswith(("test_cast", "test_quantizelinear", "test_dequantizelinear", "test_range_bfloat16"))
               for name in FOREIGN)
