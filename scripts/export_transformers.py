"""Export the small transformer models of tests/test_onnx_transformers.py to tests/data/models/
(run by hand, not by the tests).

Three architectures as Hugging Face transformers builds them, from small random configs
(seeded; nothing downloads), exported by PyTorch's TorchScript-based ONNX exporter (the one
onnxruntime's transformer optimizer's fusions are written against), eager attention:

- gpt2_past: GPT2LMHeadModel (2 layers, 4 heads, hidden 32, vocab 96), a decoder with past
  key values: inputs input_ids [1, S], position_ids [1, S], attention_mask [1, P + S] and
  past_key_values.{i}.{key,value} [1, 4, P, 8]; outputs logits [1, S, 96] and
  present.{i}.{key,value} [1, 4, P + S, 8];
- llama_past: LlamaForCausalLM (2 layers, 4 query heads, 2 key/value heads: grouped query
  attention, hidden 32, RMSNorm, rotary embedding, SwiGLU), the same inputs and outputs with
  2 key/value heads;
- bert: BertModel (2 layers, 4 heads, hidden 32), an encoder: input_ids, attention_mask,
  token_type_ids [B, S]; outputs last_hidden_state and pooler_output.

Each is written twice: NAME.onnx as exported, and NAME_opt.onnx rewritten by
onnxruntime.transformers.optimizer (model type gpt2 for the decoders, bert for the encoder,
opt_level 0: the fusions only, no onnxruntime graph optimizations baked in), which replaces
subgraphs with com.microsoft operators (SkipLayerNormalization, FastGelu, Attention, ...).

And llama_genai.onnx: onnxruntime-genai's model builder (`onnxruntime_genai.models.builder
-p fp32 -e cpu`) run on a LLaMA checkpoint saved to a temporary folder (LlamaForCausalLM, 2
layers, hidden 64, 4 query and 2 key/value heads of 16: onnxruntime's CPU GroupQueryAttention
needs head sizes that are multiples of 16; a word-level tokenizer of the 96 ids, which the
builder copies), its external data folded into the one file: GroupQueryAttention with the
rotary embedding inside (do_rotary), SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization;
inputs input_ids, attention_mask, past_key_values.{i}.{key,value} [1, 2, P, 16] (P: the past,
or a preallocated maximum length, the builder's past_present_share_buffer).

Usage (a virtualenv with the "export" extra of pyproject.toml: torch, transformers, onnx,
onnxruntime; outside the repository):

    python scripts/export_transformers.py [--out tests/data/models]

With torch 2.13.0 (CPU), transformers 5.24.0, onnx 1.23.2, onnxruntime 1.32.0, onnxruntime-genai 0.18.0 and sympy (the
optimizer's shape inference needs it) it rewrites the committed files byte for byte.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

#: name -> (model type for onnxruntime's optimizer, heads, hidden size).
MODELS = {"gpt2_past": ("gpt2", 4, 32), "llama_past": ("gpt2", 4, 32), "bert": ("bert", 4, 32)}
OPSET = 17
LAYERS = 2
VOCAB = 96


def _transformers():
    """transformers, imported after torchvision's missing CPU ops are defined (it imports
    torchvision when installed: export_models._torchvision)."""
    from export_models import _torchvision

    _torchvision()
    import transformers

    return transformers


def _config(name: str):
    transformers = _transformers()

    if name == "gpt2_past":
        return transformers.GPT2Config(vocab_size=VOCAB, n_positions=128, n_embd=32, n_layer=LAYERS, n_head=4,
                                       n_inner=64, attn_implementation="eager")
    if name == "llama_past":
        return transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                                        num_hidden_layers=LAYERS, num_attention_heads=4, num_key_value_heads=2,
                                        max_position_embeddings=128, attn_implementation="eager")
    if name == "llama_genai":
        return transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96,
                                        num_hidden_layers=LAYERS, num_attention_heads=4, num_key_value_heads=2,
                                        max_position_embeddings=128)
    return transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=LAYERS, num_attention_heads=4,
                                   intermediate_size=64, max_position_embeddings=64, attn_implementation="eager")


def _decoder(name: str):
    """The causal LM wrapped to take its cache as flat tensors (the exporter's inputs)."""
    import torch

    transformers = _transformers()
    config = _config(name)
    model = (transformers.GPT2LMHeadModel if name == "gpt2_past" else transformers.LlamaForCausalLM)(config).eval()

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, position_ids, attention_mask, *past):
            cache = transformers.DynamicCache(config=config)
            for layer in range(LAYERS):
                cache.update(past[2 * layer], past[2 * layer + 1], layer)
            out = self.model(input_ids=input_ids, position_ids=position_ids, attention_mask=attention_mask,
                             past_key_values=cache, use_cache=True)
            present = []
            for layer in range(LAYERS):
                present += [out.past_key_values.layers[layer].keys, out.past_key_values.layers[layer].values]
            return (out.logits, *present)

    kv_heads = getattr(config, "num_key_value_heads", 4)
    head_dim = 32 // 4
    past_len, seq = 3, 2
    args = (torch.randint(0, VOCAB, (1, seq)), torch.arange(past_len, past_len + seq)[None],
            torch.ones(1, past_len + seq, dtype=torch.int64),
            *[torch.randn(1, kv_heads, past_len, head_dim) for _ in range(2 * LAYERS)])
    past_names = [f"past_key_values.{i}.{kind}" for i in range(LAYERS) for kind in ("key", "value")]
    present_names = [f"present.{i}.{kind}" for i in range(LAYERS) for kind in ("key", "value")]
    axes = {"input_ids": {1: "sequence"}, "position_ids": {1: "sequence"}, "attention_mask": {1: "total"},
            "logits": {1: "sequence"}, **{n: {2: "past"} for n in past_names},
            **{n: {2: "total"} for n in present_names}}
    return (Wrapper().eval(), args, ["input_ids", "position_ids", "attention_mask", *past_names],
            ["logits", *present_names], axes)


def _encoder():
    import torch

    transformers = _transformers()
    model = transformers.BertModel(_config("bert")).eval()

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state, out.pooler_output

    args = (torch.randint(0, VOCAB, (2, 7)), torch.ones(2, 7, dtype=torch.int64), torch.zeros(2, 7, dtype=torch.int64))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {**{n: {0: "batch", 1: "sequence"} for n in names}, "last_hidden_state": {0: "batch", 1: "sequence"},
            "pooler_output": {0: "batch"}}
    return Wrapper().eval(), args, names, ["last_hidden_state", "pooler_output"], axes


def export(name: str, path: Path) -> None:
    import torch

    torch.manual_seed(0)
    module, args, inputs, outputs, axes = _encoder() if name == "bert" else _decoder(name)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), input_names=inputs, output_names=outputs, dynamic_axes=axes,
                          opset_version=OPSET, dynamo=False, do_constant_folding=True)


def optimize(name: str, source: Path, target: Path) -> None:
    from onnxruntime.transformers import optimizer

    model_type, heads, hidden = MODELS[name]
    optimized = optimizer.optimize_model(str(source), model_type=model_type, num_heads=heads, hidden_size=hidden,
                                         opt_level=0, use_gpu=False)
    optimized.save_model_to_file(str(target))  # adds the com.microsoft opset import


def genai(path: Path) -> None:
    """llama_genai.onnx by onnxruntime-genai's model builder from a checkpoint saved here."""
    import runpy
    import tempfile

    import onnx
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers

    transformers = _transformers()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        checkpoint, built = Path(folder) / "checkpoint", Path(folder) / "built"
        transformers.LlamaForCausalLM(_config("llama_genai")).eval().save_pretrained(checkpoint)
        words = Tokenizer(models.WordLevel(vocab={f"t{i}": i for i in range(VOCAB)}, unk_token="t0"))
        words.pre_tokenizer = pre_tokenizers.Whitespace()
        transformers.PreTrainedTokenizerFast(tokenizer_object=words, unk_token="t0", bos_token="t1",
                                             eos_token="t2").save_pretrained(checkpoint)
        argv = sys.argv
        sys.argv = ["builder", "-i", str(checkpoint), "-o", str(built), "-p", "fp32", "-e", "cpu",
                    "-c", str(Path(folder) / "cache")]
        try:
            runpy.run_module("onnxruntime_genai.models.builder", run_name="__main__")
        finally:
            sys.argv = argv
        onnx.save(onnx.load(str(built / "model.onnx")), str(path))  # the external data loaded, saved inline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "tests/data/models")
    parser.add_argument("--export-only", action="store_true", help="write NAME.onnx only (no onnxruntime here)")
    parser.add_argument("--optimize-only", action="store_true", help="write NAME_opt.onnx from NAME.onnx")
    parser.add_argument("names", nargs="*", default=[*MODELS, "llama_genai"])
    options = parser.parse_args()
    for name in options.names:
        if name == "llama_genai":
            if not options.optimize_only:
                genai(options.out / f"{name}.onnx")
            continue
        plain, fused = options.out / f"{name}.onnx", options.out / f"{name}_opt.onnx"
        if not options.optimize_only:
            export(name, plain)
        if not options.export_only:
            optimize(name, plain, fused)
        print(name, *(f"{p.name} {p.stat().st_size} B" for p in (plain, fused) if p.exists()))


if __name__ == "__main__":
    main()
