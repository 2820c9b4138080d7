"""Real models nobody here wrote, through gpudml.onnx.InferenceSession, against onnxruntime's CPU provider.

tests/data/models/ holds ONNX files exported by PyTorch's own exporter (opset 18) by
scripts/export_models.py, with seeded random weights (nothing downloads): torchvision's
lraspp_mobilenet_v3_large and deeplabv3_mobilenet_v3_large (their weights redrawn from three
levels and the files gzip-compressed, to stay small; the architecture is torchvision's own),
a YOLO-shaped feature pyramid (nearest x2 Resize and Concat) and a small UNet (bilinear
Resize, align_corners both ways). Each runs fused on both adapters within
gpudml.onnx.session.TOLERANCE of the largest reference magnitude, with its dispatches per
run pinned, fused and unfused (docs/onnx.md, "Real models", has the figures and the times).

Control flow and detection, exported by the TorchScript exporter (torch.jit.script-ed code;
torchvision's detectors traced, as their users export them): an If on a condition computed
from the input (both branches, consecutive runs of one session), greedy decoding Loops (a trip
count from an input; a condition computed from data, with an If in the body; the tokens
collected as a sequence), and torchvision's SSDLite and Faster R-CNN (TopK, NonZero,
NonMaxSuppression in an If, RoiAlign, ScatterElements; their detections compared as sets
where scores tie within the tolerance).

A transformer detector: Hugging Face's DetrForObjectDetection from a small random config
(scripts/export_detr.py: a ResNet backbone, 2 encoder and 2 decoder layers, 20 object queries,
TorchScript exporter, opset 17), as exported and as onnxruntime's transformer optimizer
rewrites it; its logits and pred_boxes within TOLERANCE, both adapters, both classes.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml.onnx.session import TOLERANCE

sys.path.insert(0, str(Path(__file__).parent))
from test_onnx_session import oracle  # noqa: E402

MODELS = Path(__file__).parent / "data" / "models"

#: name -> (dispatches per run fused, unfused), by the device's adapter class: one per
#: convolution with its activation fused (HardSwish, ReLU, LeakyReLU), per Resize, Concat, the
#: squeeze-excitations' ReduceMean, HardSigmoid and Mul, ...; the GPU class's strategies run a
#: few long convolution reductions in two dispatches.
_CPU_CLASS = {"yolo_fpn": (16, 23), "unet": (12, 17), "lraspp_mobilenet_v3_large": (85, 146),
              "deeplabv3_mobilenet_v3_large": (99, 163)}
DISPATCHES = {"cpu": _CPU_CLASS, "gpu": {**_CPU_CLASS, "yolo_fpn": (18, 25), "lraspp_mobilenet_v3_large": (95, 156),
                                         "deeplabv3_mobilenet_v3_large": (109, 173)}}

#: Over 5 s on a cold shader cache (2 cores, under load): the first MobileNet compiles its
#: kernels in about 55 s on each adapter (the second reuses most: 7 s), the YOLO-shaped network
#: in about 20 s; the UNet takes 4 s.
SLOW = {"lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large", "yolo_fpn"}


def load(name: str) -> onnx.ModelProto:
    """The model `name`: NAME.onnx, or NAME.onnx.gz decompressed with the standard library."""
    plain, packed = MODELS / f"{name}.onnx", MODELS / f"{name}.onnx.gz"
    data = plain.read_bytes() if plain.exists() else gzip.decompress(packed.read_bytes())
    return onnx.load_from_string(data)


#: Model files of tests/data/models/ tested in another file (the file).
ELSEWHERE = {"script_loop": "tests/test_onnx_control_flow.py",
             **{f"{name}{suffix}": "tests/test_onnx_transformers.py" for name in ("gpt2_past", "llama_past", "bert")
                for suffix in ("", "_opt")}, "llama_genai": "tests/test_onnx_transformers.py",
             **{f"llama_past_nbits_{kind}": "tests/test_nbits_models.py" for kind in ("sym", "asym")}}
#: The greedy decoders' runs on one session: (seed of the state h, steps). Seed 2 ends at the
#: end token after the first step (greedy_decoder_eos stops there: its outputs differ from
#: greedy_decoder's), seeds 0 and 3 never end early.
DECODER_RUNS = [(0, 5), (2, 5), (3, 1), (0, 5)]
DECODERS = ("greedy_decoder", "greedy_decoder_eos", "greedy_decoder_tokens")
#: torchvision's detectors (slow: their kernels compile at 320x320 in about 30 s per adapter).
DETECTORS = ("ssdlite320_mobilenet_v3_large", "fasterrcnn_mobilenet_v3_large_320_fpn")
#: The DETR-shaped detector (scripts/export_detr.py) as exported and as onnxruntime's transformer
#: optimizer rewrites it: name -> (dispatches per run fused, unfused) by the device's adapter
#: class (the GPU class runs three of the ResNet's long convolution reductions in two dispatches).
DETR = {"cpu": {"detr": (112, 219), "detr_opt": (108, 211)}, "gpu": {"detr": (115, 222), "detr_opt": (111, 214)}}


def test_every_model_file_is_tested():
    files = {p.name.removesuffix(".gz").removesuffix(".onnx") for p in MODELS.glob("*.onnx*")}
    assert files == {*_CPU_CLASS, "scripted_if", *DECODERS, *DETECTORS, *DETR["cpu"]} | set(ELSEWHERE)
    root = Path(__file__).resolve().parent.parent
    assert all(f"{name}.onnx" in (root / where).read_text() for name, where in ELSEWHERE.items())
    assert all(p.stat().st_size < 4_000_000 for p in MODELS.iterdir()), "a few MB at most per file"


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in _CPU_CLASS])
def test_real_model_matches_onnxruntime(name, device):
    """The fused session against onnxruntime; the unfused one (fuse=False) is built for its
    dispatch count only: its kernels compile at a first run, which would double the test's
    cold-cache time, and fusion is what the comparison checks."""
    model = load(name)
    feeds = {"x": np.random.default_rng(0).random((1, 3, 64, 64), dtype=np.float32)}
    want = oracle(model, feeds)
    session = gonnx.InferenceSession(model, device=device)
    got = session.run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=0, atol=TOLERANCE * np.abs(w).max(), err_msg=name)
    unfused = gonnx.InferenceSession(model, device=device, fuse=False)
    assert (session.dispatch_count, unfused.dispatch_count) == DISPATCHES[device.adapter_class][name]


def assert_close(got: list, want: list, name: str) -> None:
    """Outputs of the same shapes and types; floats within TOLERANCE of the largest
    magnitude, integers equal."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (name, g.shape, w.shape, g.dtype, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=0, atol=TOLERANCE * np.abs(w).max(), err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_scripted_if_runs_the_branch_the_data_picks(device):
    """scripted_if: y = Linear(x), then relu(Linear(y)) * 2 (>= 0) where mean(y) > 0, else
    tanh(Linear(y)) - 1 (< 0): inputs around +4 and -4 take each branch in turn on one
    session, the first again last."""
    model = load("scripted_if")
    session = gonnx.InferenceSession(model, device=device)
    rng = np.random.default_rng(0)
    branches = []
    for offset in (4, -4, 4):
        feeds = {"x": (offset + rng.standard_normal((2, 8))).astype(np.float32)}
        want = oracle(model, feeds)
        assert_close(session.run(None, feeds), want, "scripted_if")
        branches.append("then" if (want[0] >= 0).all() else "else" if (want[0] < 0).all() else "?")
    assert branches == ["then", "else", "then"]


def _decoder_feeds(seed: int, steps: int) -> dict:
    return {"h": np.random.default_rng(seed).standard_normal((2, 8)).astype(np.float32),
            "steps": np.array(steps, np.int64)}


@pytest.mark.parametrize("name", DECODERS)
def test_greedy_decoder_loop_matches_onnxruntime(name, device):
    """A scripted greedy decoder's Loop: the trip count is the input `steps`, the state, the
    summed logits and the token carried (ArgMax fed back through Gather); _eos ends when every
    row's token is the end token (the body computes the condition, an If in it);
    _tokens collects every step's tokens (SequenceInsert, ConcatFromSequence). Consecutive
    runs of one session, trip counts 5, 5 (ending after 1 in _eos), 1 and 5 again, then two
    calls of 3 steps each from the state the call before returned."""
    model = load(name)
    session = gonnx.InferenceSession(model, device=device)
    for seed, steps in DECODER_RUNS:
        feeds = _decoder_feeds(seed, steps)
        got = session.run(None, feeds)
        assert_close(got, oracle(model, feeds), f"{name} {seed} {steps}")
    for call in range(2):  # streaming: the last state fed back (gpudml's, to both)
        feeds = {"h": got[0], "steps": np.array(3, np.int64)}
        got = session.run(None, feeds)
        assert_close(got, oracle(model, feeds), f"{name} state fed back, call {call}")
    if name == "greedy_decoder_eos":  # the end token did end the loop early
        feeds = _decoder_feeds(*DECODER_RUNS[1])
        assert not np.array_equal(oracle(model, feeds)[1], oracle(load("greedy_decoder"), feeds)[1])


def other_class_device(device: dml.Device) -> dml.Device:
    """A Device of the same adapter, of the other adapter class (the other kernel strategies)."""
    return dml.Device(adapter=device.adapter_name, adapter_class="gpu" if device.adapter_class == "cpu" else "cpu")


@pytest.mark.any_class  # the first run's other class is the GPU class; its own, the CPU class, the tests above
def test_control_flow_models_under_the_other_adapter_class(device):
    """The If model and the Loop with an If in its body on a Device of the other adapter
    class (its kernels' strategies, the same control flow): onnxruntime's outputs."""
    other = other_class_device(device)
    runs = {"scripted_if": [{"x": np.full((2, 8), v, np.float32)} for v in (3.0, -3.0)],
            "greedy_decoder_eos": [_decoder_feeds(*run) for run in DECODER_RUNS[:2]]}
    for name, feeds_list in runs.items():
        model = load(name)
        session = gonnx.InferenceSession(model, device=other)
        for feeds in feeds_list:
            assert_close(session.run(None, feeds), oracle(model, feeds), f"{name} ({other.adapter_class} class)")


def assert_same_detections(got: list, want: list, names: list[str], name: str) -> None:
    """Detections (boxes [N, 4], scores [N], labels [N]) as onnxruntime's: the same count,
    the scores within TOLERANCE of the largest, and every detection matched to one of the
    reference's, one to one, of its label, its score and its box within TOLERANCE of the
    largest coordinate: scores that tie within the tolerance may come in either order."""
    g, w = dict(zip(names, got)), dict(zip(names, want))
    assert g["boxes"].shape == w["boxes"].shape and g["labels"].dtype == w["labels"].dtype, name
    score_tol, box_tol = TOLERANCE * np.abs(w["scores"]).max(), TOLERANCE * np.abs(w["boxes"]).max()
    np.testing.assert_allclose(np.sort(g["scores"]), np.sort(w["scores"]), rtol=0, atol=score_tol, err_msg=name)
    free = set(range(len(w["scores"])))
    for i in range(len(g["scores"])):
        same = [j for j in free if w["labels"][j] == g["labels"][i]
                and abs(w["scores"][j] - g["scores"][i]) <= score_tol
                and np.abs(w["boxes"][j] - g["boxes"][i]).max() <= box_tol]
        assert same, f"{name}: detection {i} (label {g['labels'][i]}, score {g['scores'][i]}, box {g['boxes'][i]}) " \
                     f"is not onnxruntime's"
        free.remove(min(same, key=lambda j: abs(w["scores"][j] - g["scores"][i])))


@pytest.mark.slow
@pytest.mark.any_class  # the device's class and the other: the GPU-class run would repeat the pair swapped
@pytest.mark.parametrize("other_class", [False, True], ids=["class", "other_class"])
@pytest.mark.parametrize("name", DETECTORS)
def test_torchvision_detector_matches_onnxruntime(name, other_class, device):
    """torchvision's detector with its transform (Resize of a 64x64 image to 320x320) and
    postprocess: the session splits at each data-dependent node (NonZero, TopK over a
    computed count, NonMaxSuppression in an If on a run-time condition) and builds the rest
    per observed size; two images on one session, on the device and on a Device of the
    other adapter class."""
    model = load(name)
    names = [o.name for o in model.graph.output]
    if other_class:
        device = other_class_device(device)
    session = gonnx.InferenceSession(model, device=device)
    for seed in (0, 1):
        feeds = {"image": np.random.default_rng(seed).random((3, 64, 64), dtype=np.float32)}
        assert_same_detections(session.run(None, feeds), oracle(model, feeds), names, f"{name} image {seed}")


@pytest.mark.slow
@pytest.mark.parametrize("name, other_class", [
    # detr on the device's class and the other: the GPU-class run would repeat the pair swapped
    pytest.param("detr", False, id="detr", marks=pytest.mark.any_class),
    pytest.param("detr", True, id="detr-other_class", marks=pytest.mark.any_class),
    pytest.param("detr_opt", False, id="detr_opt"),  # (the device's class: each class in one of CI's runs)
])
def test_detr_matches_onnxruntime(name, other_class, device):
    """Hugging Face's DetrForObjectDetection (a ResNet backbone, 2 encoder and 2 decoder layers
    of d_model 64, 20 object queries): logits and pred_boxes of two images on one session, the
    second padded as DetrImageProcessor pads a batch (zeros right and below, its pixel_mask 0
    there: the masked position embedding and attention), within TOLERANCE of onnxruntime's
    largest, on the device and (as exported) on a Device of the other adapter class; its
    dispatches per run pinned, fused and unfused. detr_opt is the
    same model after onnxruntime's transformer optimizer (SkipLayerNormalization fused: DETR's
    attention, its position embeddings added to the queries and keys only, matches none of the
    optimizer's attention patterns; the first decoder layer's, of the zero queries, folds when
    the graph is built, as onnxruntime's constant folding folds it)."""
    model = load(name)
    if name == "detr_opt":
        assert "SkipLayerNormalization" in {n.op_type for n in model.graph.node}
    if other_class:
        device = other_class_device(device)
    session = gonnx.InferenceSession(model, device=device)
    for seed, (height, width) in enumerate([(128, 128), (112, 96)]):
        mask = np.zeros((1, 128, 128), np.int64)
        mask[:, :height, :width] = 1
        pixels = np.random.default_rng(seed).random((1, 3, 128, 128), dtype=np.float32) * mask[:, None]
        feeds = {"pixel_values": pixels.astype(np.float32), "pixel_mask": mask}
        assert_close(session.run(None, feeds), oracle(model, feeds), f"{name} image {seed}")
    unfused = gonnx.InferenceSession(model, device=device, fuse=False)
    assert (session.dispatch_count, unfused.dispatch_count) == DETR[device.adapter_class][name]
