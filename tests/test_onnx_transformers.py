"""Transformers as Hugging Face builds them and as onnxruntime's transformer optimizer rewrites
them, through gpudml.onnx.InferenceSession, against onnxruntime's CPU provider.

tests/data/models/ holds, made by scripts/export_transformers.py from small random configs
(2 layers, hidden 32, 4 heads, vocab 96; nothing downloads):

- gpt2_past, llama_past: GPT-2- and LLaMA-shaped decoders (LLaMA: 2 key/value heads, RMSNorm,
  rotary embedding, SwiGLU) exported with past key values (inputs past_key_values.{i}.{key,
  value}, outputs present.{i}.{key,value}); bert: a BERT-shaped encoder;
- NAME_opt: each rewritten by onnxruntime.transformers.optimizer (model type gpt2 for the
  decoders, bert for the encoder), which writes com.microsoft operators;
- llama_genai: a LLaMA-shaped decoder (heads of 16, 2 key/value heads) written by
  onnxruntime-genai's model builder: GroupQueryAttention (rotary inside), SkipSimplified- and
  SimplifiedLayerNormalization, a past that may be a preallocated maximum length.

The files: gpt2_past.onnx, llama_past.onnx, bert.onnx, gpt2_past_opt.onnx, llama_past_opt.onnx,
bert_opt.onnx, llama_genai.onnx. Every output matches onnxruntime within
gpudml.onnx.session.TOLERANCE of the largest reference magnitude. Greedy decoding of 32 tokens
through the session's IO binding, the key/value cache fed from one step to the next as device
Tensors, gives onnxruntime's 32 tokens, under both adapter classes; the cache makes no trip
through the host (the runtime's transfers watched); the same with onnxruntime-genai's model and
its preallocated cache.
"""

from __future__ import annotations

import re
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

ort = pytest.importorskip("onnxruntime")

MODELS = Path(__file__).parent / "data" / "models"
DECODERS = {"gpt2_past": 4, "llama_past": 2}  # name -> key/value heads (head size 8, 2 layers)
#: Key/value heads by file: the decoders and their optimized rewrites.
KV_HEADS = {**DECODERS, **{f"{name}_opt": heads for name, heads in DECODERS.items()}}
VOCAB = 96
PAST = [f"past_key_values.{i}.{kind}" for i in range(2) for kind in ("key", "value")]
PRESENT = [name.replace("past_key_values", "present") for name in PAST]
PROMPT = np.array([[5, 17, 42, 7]], np.int64)
STEPS = 32

#: The com.microsoft operators (and onnxruntime's SimplifiedLayerNormalization) each optimized file holds.
FUSED = {"gpt2_past_opt": {"SkipLayerNormalization", "FastGelu"},
         "llama_past_opt": {"SimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization"},
         "bert_opt": {"EmbedLayerNormalization", "Attention", "SkipLayerNormalization", "BiasGelu"}}


def load(name: str) -> onnx.ModelProto:
    return onnx.load(str(MODELS / f"{name}.onnx"))


def decoder_feeds(name: str, ids: np.ndarray, past: int, cache=None) -> dict[str, np.ndarray]:
    """The decoder's inputs for token ids `ids` [1, S] after `past` cached positions (cache:
    the past key/value arrays; None: random ones)."""
    feeds = {"input_ids": ids, "position_ids": np.arange(past, past + ids.shape[1], dtype=np.int64)[None],
             "attention_mask": np.ones((1, past + ids.shape[1]), np.int64)}
    if cache is None:
        rng = np.random.default_rng(1)
        cache = [rng.standard_normal((1, KV_HEADS[name], past, 8)).astype(np.float32) for _ in PAST]
    return {**feeds, **dict(zip(PAST, cache))}


def encoder_feeds() -> dict[str, np.ndarray]:
    """Two sequences of 7 tokens, the second padded after 5 (attention_mask 0)."""
    ids = np.random.default_rng(0).integers(0, VOCAB, (2, 7))
    mask = np.array([[1] * 7, [1] * 5 + [0] * 2], np.int64)
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros((2, 7), np.int64)}


def genai_feeds(ids: np.ndarray, past: int, cache) -> dict[str, np.ndarray]:
    """llama_genai's inputs: no position ids (GroupQueryAttention's rotary takes the positions
    from the mask's lengths); the cache [1, 2, P or the maximum length, 16]."""
    return {"input_ids": ids, "attention_mask": np.ones((1, past + ids.shape[1]), np.int64), **dict(zip(PAST, cache))}


def feeds_for(name: str) -> dict[str, np.ndarray]:
    base = name.removesuffix("_opt")
    if base == "bert":
        return encoder_feeds()
    if base == "llama_genai":
        rng = np.random.default_rng(1)
        return genai_feeds(np.array([[3]], np.int64), 5,
                           [rng.standard_normal((1, 2, 5, 16)).astype(np.float32) for _ in PAST])
    return decoder_feeds(base, np.array([[3, 1, 4]], np.int64), past=5)


def test_files_are_small_and_fused_where_the_optimizer_fuses():
    for name in (*DECODERS, "bert"):
        for file in (name, f"{name}_opt"):
            assert (MODELS / f"{file}.onnx").stat().st_size < 400_000, file
        fused = {n.op_type for n in load(f"{name}_opt").graph.node}
        assert FUSED[f"{name}_opt"] <= fused
    assert (MODELS / "llama_genai.onnx").stat().st_size < 400_000
    fused = {n.op_type for n in load("llama_genai").graph.node}
    assert {"GroupQueryAttention", "SkipSimplifiedLayerNormalization", "SimplifiedLayerNormalization"} <= fused


def matches_onnxruntime(name: str, device) -> None:
    """Every output of model `name` on its feeds_for within TOLERANCE of the largest reference."""
    model, feeds = load(name), feeds_for(name)
    want = oracle(model, feeds)
    got = gonnx.InferenceSession(model, device=device).run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=0, atol=TOLERANCE * np.abs(w).max(), err_msg=name)


@pytest.mark.parametrize("name", [*DECODERS, pytest.param("bert", marks=pytest.mark.slow)])  # bert: 18 s on gl, cold
def test_exported_model_matches_onnxruntime(name, device):
    matches_onnxruntime(name, device)


@pytest.mark.parametrize("name", [*FUSED, "llama_genai"])
def test_optimized_model_matches_onnxruntime(name, device):
    """The com.microsoft operators (gpudml/onnx/contrib.py, gpudml/onnx/attention.py) in the
    models onnxruntime's optimizer and onnxruntime-genai's builder write."""
    matches_onnxruntime(name, device)


def reference_tokens(name: str, steps: int = STEPS) -> list[int]:
    """Greedy decoding by onnxruntime's CPU provider from PROMPT."""
    session = ort.InferenceSession(load(name).SerializeToString(), providers=["CPUExecutionProvider"])
    empty = [np.zeros((1, KV_HEADS[name], 0, 8), np.float32) for _ in PAST]
    feeds, tokens = decoder_feeds(name, PROMPT, 0, empty), []
    for _ in range(steps):
        logits, *cache = session.run(None, feeds)
        tokens.append(int(logits[0, -1].argmax()))
        feeds = decoder_feeds(name, np.array([[tokens[-1]]], np.int64), cache[0].shape[2], cache)
    return tokens


def greedy(session, name: str, steps: int = STEPS, on_step=None) -> list[int]:
    """Greedy decoding through the session's IO binding (the documented loop of
    docs/transformers.md): the prompt's step binds empty past arrays (bind_cpu_input), each
    later step binds the last step's present Tensors as the past; token ids, positions and
    mask are bound from the host, the logits read back."""
    binding = session.io_binding()
    for key, value in decoder_feeds(name, PROMPT, 0, [np.zeros((1, KV_HEADS[name], 0, 8), np.float32)] * 4).items():
        binding.bind_cpu_input(key, value)
    for output in ("logits", *PRESENT):
        binding.bind_output(output)
    tokens, past, ids = [], 0, PROMPT
    for _ in range(steps):
        session.run_with_iobinding(binding)
        logits, *cache = binding.get_outputs()
        tokens.append(int(logits.numpy().reshape(ids.shape[1], VOCAB)[-1].argmax()))
        past, ids = past + ids.shape[1], np.array([[tokens[-1]]], np.int64)
        for key in ("input_ids", "position_ids", "attention_mask"):
            binding.bind_cpu_input(key, decoder_feeds(name, ids, past, cache)[key])
        for key, tensor in zip(PAST, cache):
            binding.bind_input(key, tensor)
        if on_step is not None:
            on_step(cache)
    return tokens


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.slow
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
@pytest.mark.parametrize("name", ["llama_past", "llama_past_opt"])
def test_greedy_decoding_gives_onnxruntimes_tokens(name, adapter, adapter_class):
    """32 tokens of the LLaMA-shaped decoder (as exported and as onnxruntime's optimizer
    rewrites it), the cache on the device, under both adapter classes' strategies; each step's
    cache is the last step's present (no copy). (The random GPT-2 repeats one token after its
    first: a test of nothing; its first tokens are the host-copy test's.)"""
    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    session = gonnx.InferenceSession(load(name), device=device)
    want = reference_tokens(name)
    assert len(set(want)) > 8, "a decoding that does not repeat one token"
    assert greedy(session, name) == want


@pytest.mark.parametrize("name", DECODERS)
def test_the_cache_never_crosses_the_host(name, device, monkeypatch):
    """One download per step, the logits' (VOCAB floats per token); no upload writes into a
    buffer of the cache (each step's present Tensors are kept, so that no buffer of theirs is
    recycled during the test). Uploads there are, besides the token ids, positions and mask:
    each new past length builds the graph anew, with its constants."""
    session = gonnx.InferenceSession(load(name), device=device)
    want = reference_tokens(name, steps=6)
    transfers = device._ctx.transfers
    upload, download = transfers.upload, transfers.download
    written, read = [], []

    def watched_upload(buffer, data):
        written.append(buffer)
        return upload(buffer, data)

    def watched_download(buffer, nbytes=None):
        read.append((buffer, nbytes))
        return download(buffer, nbytes)

    monkeypatch.setattr(transfers, "upload", watched_upload)
    monkeypatch.setattr(transfers, "download", watched_download)
    caches = []
    assert greedy(session, name, steps=6, on_step=caches.append) == want
    cache_buffers = {id(t.buffer) for step in caches for t in step}
    assert len(cache_buffers) == 4 * 6
    assert not cache_buffers & {id(b) for b in written}
    assert not cache_buffers & {id(b) for b, _ in read}
    assert [n for _, n in read] == [4 * VOCAB * PROMPT.shape[1]] + [4 * VOCAB] * 5


def genai_reference(capacity: int, steps: int = STEPS, padded: bool = False) -> list[int]:
    """onnxruntime's greedy tokens of llama_genai: a past that grows (capacity 0) or the
    builder's shared buffer of `capacity` positions, its mask `padded` to the capacity or not."""
    session = ort.InferenceSession(load("llama_genai").SerializeToString(), providers=["CPUExecutionProvider"])
    cache, ids, past, tokens = [np.zeros((1, 2, capacity, 16), np.float32)] * 4, PROMPT, 0, []
    for _ in range(steps):
        feeds = genai_feeds(ids, past, cache)
        if padded:
            feeds["attention_mask"] = np.zeros((1, capacity), np.int64)
            feeds["attention_mask"][0, :past + ids.shape[1]] = 1
        logits, *cache = session.run(["logits", *PRESENT], feeds)  # (its outputs' order differs)
        tokens.append(int(logits[0, -1].argmax()))
        past, ids = past + ids.shape[1], np.array([[tokens[-1]]], np.int64)
    return tokens


def greedy_shared(session, steps: int = STEPS, capacity: int = 64) -> tuple[list[int], list]:
    """Greedy decoding of llama_genai with the cache preallocated on the device: each
    present.{i} written into the Tensor bound as past_key_values.{i} (bind_output with a
    Tensor), the attention mask padded to the capacity (ones for the positions so far, zeros
    after: GroupQueryAttention reads the lengths from it, total_sequence_length from its shape),
    so that every token step has the same shapes (one build). (tokens, cache Tensors)."""
    cache = [session.device.tensor(np.zeros((1, 2, capacity, 16), np.float32)) for _ in PAST]
    binding = session.io_binding()
    for past_name, present_name, tensor in zip(PAST, PRESENT, cache):
        binding.bind_input(past_name, tensor)
        binding.bind_output(present_name, tensor)
    binding.bind_output("logits")
    tokens, past, ids = [], 0, PROMPT
    for _ in range(steps):
        binding.bind_cpu_input("input_ids", ids)
        mask = np.zeros((1, capacity), np.int64)
        mask[0, :past + ids.shape[1]] = 1
        binding.bind_cpu_input("attention_mask", mask)
        session.run_with_iobinding(binding)
        logits = binding.get_outputs()[-1]
        tokens.append(int(logits.numpy().reshape(ids.shape[1], VOCAB)[-1].argmax()))
        past, ids = past + ids.shape[1], np.array([[tokens[-1]]], np.int64)
    return tokens, cache


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.slow
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
def test_genai_model_decodes_with_a_preallocated_cache(adapter, adapter_class):
    """onnxruntime-genai's LLaMA (GroupQueryAttention, rotary inside) decodes onnxruntime's 32
    tokens (which its unpadded, growing forms give too) with its cache preallocated to 64
    positions on the device, under both classes, the session built twice in all."""
    want = genai_reference(64, padded=True)
    assert want == genai_reference(0) == genai_reference(64) and len(set(want)) > 8
    session = gonnx.InferenceSession(load("llama_genai"), device=dml.Device(adapter=adapter,
                                                                             adapter_class=adapter_class))
    assert greedy_shared(session)[0] == want
    assert len(session._compiled) == 2  # built for the prompt's shapes and for a token's: once each


def test_genai_cache_stays_on_the_device(device, monkeypatch):
    """The preallocated cache: never read back, never uploaded after its zeros; one download a
    step (the logits); 6 tokens as onnxruntime's."""
    session = gonnx.InferenceSession(load("llama_genai"), device=device)
    transfers = device._ctx.transfers
    download = transfers.download
    read = []

    def watched_download(buffer, nbytes=None):
        read.append(nbytes)
        return download(buffer, nbytes)

    monkeypatch.setattr(transfers, "download", watched_download)
    tokens, _ = greedy_shared(session, steps=6)
    assert tokens == genai_reference(64, steps=6, padded=True)
    assert read == [4 * VOCAB * PROMPT.shape[1]] + [4 * VOCAB] * 5


@pytest.mark.slow
def test_the_documented_loops_decode_onnxruntimes_tokens():
    """docs/transformers.md's two decoding loops, run as written (the default device): the
    exported LLaMA's and onnxruntime-genai's with its preallocated cache."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "transformers.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(blocks) == 2
    for code, want in zip(blocks, (reference_tokens("llama_past"), genai_reference(64))):
        namespace = {}
        exec(compile(code.replace("tests/data/models/", f"{MODELS}/"), "docs/transformers.md", "exec"), namespace)
        assert namespace["tokens"] == want
