"""Recurrent real models through gpudml.onnx.InferenceSession, against onnxruntime's CPU provider.

tests/data/models/recurrent/ holds (docs/onnx.md, "Real models"):

- crnn.onnx, gru_speech.onnx: exported by PyTorch's TorchScript exporter (opset 17) with
  seeded random weights by scripts/export_recurrent_models.py: a CRNN text recognizer (three
  convolutions, a 2-layer bidirectional LSTM: two LSTM nodes, a linear head) and a speech-shaped
  model (a 1-D convolution front end, an nn.GRU(batch_first=True) with linear_before_reset=1, a
  linear head; its initial state a graph input, its final state an output);
- silero_vad.onnx: the Silero voice-activity detector as its pip package `silero-vad` 6.2.3
  ships it (MIT License, silero_vad.LICENSE; scripts/fetch_silero_vad.py extracts it from the
  wheel), run as its OnnxWrapper streams audio: calls of 512 new samples at 16 kHz behind the
  previous call's last 64 (576 samples), the state [2, 1, 128] (the LSTM's h and c) fed back
  from one call's `stateN` to the next's `state`. Its If on the sample rate `sr` (a graph
  input) is decided when the graph is built (sr a value input: one graph per value).

Each matches within gpudml.onnx.session.TOLERANCE of the largest reference magnitude, on
both software adapters, its dispatches per run pinned (fused). The CRNN and the GRU model
are `slow`: on a cold shader cache (2 cores, under load) their first run compiles the
recurrence's kernels in about 30 s and 15 s; warm, each builds in about 1 s and runs in a
few milliseconds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

import gpudml.onnx as gonnx
from gpudml.onnx.session import TOLERANCE

ort = pytest.importorskip("onnxruntime")

MODELS = Path(__file__).parent / "data" / "models" / "recurrent"

#: Dispatches per run (fused), by the device's adapter class: the CPU class runs a
#: recurrence one dispatch per time step (the CRNN's 4 directions of 25 steps, the GRU's 25
#: steps: gpudml/ops/recurrent.py), the GPU class one persistent dispatch per direction; each
#: LSTM or GRU adds its input projection's GEMM. Silero's one LSTM runs one step a call.
DISPATCHES = {"cpu": {"crnn": 60, "gru_speech": 28, "silero_vad": 16},
              "gpu": {"crnn": 12, "gru_speech": 4, "silero_vad": 17}}


def _ort(model: onnx.ModelProto):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _close(got: list, want: list, what: str) -> None:
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (what, k, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=0, atol=TOLERANCE * np.abs(w).max(), err_msg=f"{what}: output {k}")


def test_every_model_file_is_tested():
    assert {p.name for p in MODELS.iterdir()} == {"crnn.onnx", "gru_speech.onnx", "silero_vad.onnx",
                                                  "silero_vad.LICENSE"}
    assert all(p.stat().st_size < 4_000_000 for p in MODELS.iterdir()), "a few MB at most per file"


@pytest.mark.slow
def test_crnn(device):
    model = onnx.load(str(MODELS / "crnn.onnx"))
    feeds = {"image": np.random.default_rng(0).random((1, 1, 32, 100), dtype=np.float32)}
    session = gonnx.InferenceSession(model, device=device)
    _close(session.run(None, feeds), _ort(model).run(None, feeds), "crnn")
    assert session.dispatch_count == DISPATCHES[device.adapter_class]["crnn"]


@pytest.mark.slow
def test_gru_speech_state_fed_back(device):
    """Three calls, each starting from the previous call's final hidden state."""
    model = onnx.load(str(MODELS / "gru_speech.onnx"))
    session, reference = gonnx.InferenceSession(model, device=device), _ort(model)
    rng = np.random.default_rng(0)
    h = np.zeros((1, 1, 64), np.float32)
    for call in range(3):
        feeds = {"mels": rng.standard_normal((1, 50, 40)).astype(np.float32), "h0": h}
        got, want = session.run(None, feeds), reference.run(None, feeds)
        _close(got, want, f"gru_speech call {call}")
        h = want[1]
    assert session.dispatch_count == DISPATCHES[device.adapter_class]["gru_speech"]


@pytest.mark.parametrize("sample_rate", [16000, 8000])
def test_silero_vad_streaming(sample_rate, device):
    """Silero's streaming calls: each side carries its own state and context from call to
    call (gpudml's state from gpudml's previous output), compared at every call."""
    model = onnx.load(str(MODELS / "silero_vad.onnx"))
    session, reference = gonnx.InferenceSession(model, device=device), _ort(model)
    chunk, context = (512, 64) if sample_rate == 16000 else (256, 32)
    t = np.arange(6 * chunk) / sample_rate
    rng = np.random.default_rng(0)
    audio = (0.3 * np.sin(2 * np.pi * 220 * t) * (t > 2 * chunk / sample_rate)
             + 0.02 * rng.standard_normal(t.size)).astype(np.float32)
    sr = np.array(sample_rate, np.int64)
    states = [np.zeros((2, 1, 128), np.float32)] * 2
    tails = [np.zeros((1, context), np.float32)] * 2
    for call in range(6):
        samples = audio[None, call * chunk:(call + 1) * chunk]
        results = []
        for k, run in enumerate((session.run, reference.run)):
            feeds = {"input": np.concatenate([tails[k], samples], axis=1), "state": states[k], "sr": sr}
            results.append(run(None, feeds))
            states[k], tails[k] = results[k][1], samples[:, -context:]
        _close(results[0], results[1], f"silero_vad {sample_rate} Hz call {call}")
    assert session.dispatch_count == DISPATCHES[device.adapter_class]["silero_vad"]
