"""ONNX Runtime's DirectML execution provider, op by op, beside gpudml's mapping (issue #41).

The anchor (`DML_EP`): every op ONNX Runtime's DirectML execution provider
(DmlExecutionProvider) registers a kernel for, per domain, with the opset versions it
registers them at (each kernel serves from its version up to the next one's), as ONNX
Runtime's generated kernel list gives them: microsoft/onnxruntime, docs/OperatorKernels.md,
section "Operators implemented by DmlExecutionProvider", at commit
001d12d2623fd411ce0f83d05abb5e82304a3389. ONNX Runtime is Copyright (c) Microsoft
Corporation, licensed under the MIT License; only facts are taken from it here: op names,
domains and opset versions.

Beside each op, gpudml's status: mapped (a row of `mapping.BY_TYPE`, or of `mapping.CONTRIB` for
com.microsoft's: `mapping.row`, with its opsets),
folded on the host (`mapping.FOLDED`), not yet (`NOT_YET`: the open issue that brings it)
or not planned (`NOT_PLANNED`: why). `BEYOND` lists gpudml's mapped ops the provider lacks.

`python -m gpudml.onnx.dml_ep` prints docs/onnx.md's section "ONNX Runtime's DirectML
execution provider, op by op" (`markdown()`); tests/test_dml_ep_table.py checks that the page
has it and that every op of the anchor has exactly one status.
"""

from __future__ import annotations

from . import mapping
from .analysis import CONTROL_FLOW

#: Where the anchor was read.
SOURCE = {"repository": "microsoft/onnxruntime", "path": "docs/OperatorKernels.md",
          "commit": "001d12d2623fd411ce0f83d05abb5e82304a3389"}

ONNX, MS, DML = "ai.onnx", "com.microsoft", "com.microsoft.dml"

#: domain -> op -> the opset versions the provider registers a kernel at, oldest first.
DML_EP: dict[str, dict[str, tuple[int, ...]]] = {
    ONNX: {
        "Abs": (6, 13), "Acos": (7,), "Acosh": (9,), "Add": (7, 13, 14), "Affine": (1,), "And": (7,),
        "ArgMax": (1, 11, 12, 13), "ArgMin": (1, 11, 12, 13), "Asin": (7,), "Asinh": (9,), "Atan": (7,),
        "Atanh": (9,), "AveragePool": (7, 10, 11, 19), "BatchNormalization": (7, 9, 14, 15), "BitShift": (11,),
        "BitwiseAnd": (18,), "BitwiseNot": (18,), "BitwiseOr": (18,), "BitwiseXor": (18,),
        "Cast": (6, 9, 13, 19, 21), "CastLike": (15, 19, 21), "Ceil": (6, 13), "Celu": (12,),
        "Clip": (6, 11, 12, 13), "Col2Im": (18,), "Concat": (4, 11, 13), "ConcatFromSequence": (11,),
        "ConstantOfShape": (9, 21), "Conv": (1, 11), "ConvInteger": (10,), "ConvTranspose": (1, 11), "Cos": (7,),
        "Cosh": (9,), "Crop": (1,), "CumSum": (11, 14), "DFT": (17, 20), "DepthToSpace": (1, 11, 13),
        "DequantizeLinear": (10, 13, 19, 21), "Div": (7, 13, 14), "Dropout": (7,), "DynamicQuantizeLinear": (11,),
        "Einsum": (12,), "Elu": (6,), "Equal": (7, 11, 13, 19), "Erf": (9, 13), "Exp": (6, 13), "Expand": (8, 13),
        "EyeLike": (9,), "Flatten": (1, 9, 11, 13, 21), "Floor": (6, 13), "GRU": (7, 14), "Gather": (1, 11, 13),
        "GatherElements": (11, 13), "GatherND": (11, 12, 13), "Gemm": (7, 9, 11, 13), "GlobalAveragePool": (1,),
        "GlobalLpPool": (2,), "GlobalMaxPool": (1,), "Greater": (7, 9, 13), "GreaterOrEqual": (12, 16),
        "GridSample": (16,), "GroupNorm": (21,), "HardSigmoid": (6,), "Hardmax": (1, 11, 13),
        "Identity": (1, 13, 14, 16, 19, 21), "If": (7, 11, 13, 16, 19), "ImageScaler": (1,),
        "InstanceNormalization": (6,), "IsInf": (10, 20), "IsNaN": (9, 13, 20), "LRN": (1, 13), "LSTM": (7, 14),
        "LayerNormalization": (1, 17), "LeakyRelu": (6, 16), "Less": (7, 9, 13), "LessOrEqual": (12, 16),
        "Log": (6, 13), "LogSoftmax": (1, 11, 13), "LpNormalization": (1,), "LpPool": (2, 11, 18),
        "MatMul": (1, 9, 13), "MatMulInteger": (10,), "Max": (6, 8, 12, 13), "MaxPool": (1, 8, 10, 11, 12),
        "MaxRoiPool": (1,), "MaxUnpool": (9, 11), "Mean": (6, 8, 13), "MeanVarianceNormalization": (1, 9, 13),
        "MemcpyFromHost": (1,), "MemcpyToHost": (1,), "Min": (6, 8, 12, 13), "Mod": (10, 13), "Mul": (7, 13, 14),
        "Neg": (6, 13), "NonZero": (9, 13), "Not": (1,), "OneHot": (9, 11), "OptionalGetElement": (15, 18),
        "OptionalHasElement": (15, 18), "Or": (7,), "PRelu": (7, 9, 16), "Pad": (2, 11, 13, 18, 19, 21),
        "ParametricSoftplus": (1,), "Pow": (7, 12, 13, 15), "QLinearConv": (10,), "QLinearMatMul": (10, 21),
        "QuantizeLinear": (10, 13, 19, 21), "RNN": (7, 14), "Range": (11,), "Reciprocal": (6, 13),
        "ReduceL1": (1, 11, 13, 18), "ReduceL2": (1, 11, 13, 18), "ReduceLogSum": (1, 11, 13, 18),
        "ReduceLogSumExp": (1, 11, 13, 18), "ReduceMax": (1, 11, 12, 13, 18, 20), "ReduceMean": (1, 11, 13, 18),
        "ReduceMin": (1, 11, 12, 13, 18, 20), "ReduceProd": (1, 11, 13, 18), "ReduceSum": (1, 11, 13),
        "ReduceSumSquare": (1, 11, 13, 18), "Relu": (6, 13, 14), "Reshape": (5, 13, 14, 19, 21),
        "Resize": (10, 11, 13, 18, 19), "ReverseSequence": (10,), "RoiAlign": (10, 16), "Round": (11,),
        "STFT": (17,), "ScaledTanh": (1,), "Scatter": (9, 11, 13), "ScatterElements": (11, 13, 16),
        "ScatterND": (11, 13, 16), "Selu": (6,), "SequenceAt": (11,), "SequenceConstruct": (11,),
        "SequenceEmpty": (11,), "SequenceErase": (11,), "SequenceInsert": (11,), "SequenceLength": (11,),
        "Shape": (1, 13, 15, 19, 21), "Shrink": (9,), "Sigmoid": (6, 13), "Sign": (9, 13),
        "SimplifiedLayerNormalization": (1,), "Sin": (7,), "Sinh": (9,), "Size": (1, 13, 19, 21),
        "Slice": (1, 10, 11, 13), "Softmax": (1, 11, 13), "Softplus": (1,), "Softsign": (1,),
        "SpaceToDepth": (1, 13), "Split": (2, 11, 13, 18), "Sqrt": (6, 13), "Squeeze": (1, 11, 13, 21),
        "Sub": (7, 13, 14), "Sum": (6, 8, 13), "Tan": (7,), "Tanh": (6, 13), "ThresholdedRelu": (1, 10),
        "Tile": (6, 13), "TopK": (1, 10, 11), "Transpose": (1, 13, 21), "Trilu": (14,),
        "Unsqueeze": (1, 11, 13, 21), "Upsample": (7, 9, 10), "Where": (9, 16), "Xor": (7,),
    },
    MS: {
        "Attention": (1,), "BiasAdd": (1,), "BiasGelu": (1,), "BiasSplitGelu": (1,),
        "ConvTransposeWithDynamicPads": (1,), "DequantizeLinear": (1,), "DynamicQuantizeMatMul": (1,),
        "EmbedLayerNormalization": (1,), "FastGelu": (1,), "FusedMatMul": (1,), "FusedMatMulActivation": (1,),
        "Gelu": (1,), "GroupNorm": (1,), "GroupQueryAttention": (1,), "MatMulIntegerToFloat": (1,),
        "MatMulNBits": (1,), "MultiHeadAttention": (1,), "NhwcConv": (1,), "QAttention": (1,), "QLinearAdd": (1,),
        "QLinearAveragePool": (1,), "QLinearConcat": (1,), "QLinearGlobalAveragePool": (1,),
        "QLinearSigmoid": (1,), "QuantizeLinear": (1,), "QuickGelu": (1,), "RotaryEmbedding": (1,),
        "SkipLayerNormalization": (1,), "SkipSimplifiedLayerNormalization": (1,),
    },
    DML: {
        "DmlFusedAdd": (1,), "DmlFusedBatchNormalization": (1,), "DmlFusedConv": (1,),
        "DmlFusedConvTranspose": (1,), "DmlFusedGemm": (1,), "DmlFusedInstanceNormalization": (1,),
        "DmlFusedMatMul": (1,), "DmlFusedMeanVarianceNormalization": (1,), "DmlFusedSum": (1,),
    },
}

#: The open issues that bring the ops gpudml does not map yet.
ISSUES: dict[int, str] = {
    43: "resampling and space-depth", 44: "indexing, sorting and generators", 45: "recurrence and control flow",
    46: "transformers, com.microsoft's ops", 47: "quantized operators", 48: "training",
}

#: (domain, op) -> the issue that brings it (ISSUES), for the ops of the anchor gpudml does not map yet.
NOT_YET: dict[tuple[str, str], int] = {
    # 43: resampling and space-depth: done (Resize, Upsample, DepthToSpace, SpaceToDepth and Col2Im are mapped;
    # ImageScaler is not planned: below)
    # 45: recurrence, control flow, sequences: done (LSTM, GRU and RNN are mapped; If, Loop and Scan run as the
    # session's control flow: gpudml/onnx/control.py; the sequences and optionals: gpudml/onnx/sequences.py)
    # 46: transformers: onnxruntime's contrib ops (SimplifiedLayerNormalization, which it registers in ai.onnx, is
    # mapped)
    # (SkipLayerNormalization, SkipSimplifiedLayerNormalization, EmbedLayerNormalization, RotaryEmbedding, FastGelu,
    # BiasGelu, QuickGelu, Gelu, BiasAdd, BiasSplitGelu and FusedMatMul are mapped: gpudml/onnx/contrib.py)
    # (Attention, MultiHeadAttention and GroupQueryAttention are mapped: gpudml/onnx/attention.py)
    # (com.microsoft's GroupNorm and ONNX's GroupNormalization are mapped: gpudml/onnx/contrib.py)
    # 47: quantized operators
    # (MatMulInteger, QLinearMatMul, com.microsoft's MatMulIntegerToFloat, MatMulNBits and DequantizeLinear are mapped)
    # (DynamicQuantizeLinear is mapped: DYNAMIC_QUANTIZE_LINEAR; com.microsoft's DynamicQuantizeMatMul:
    # DYNAMIC_QUANTIZE_LINEAR, MATRIX_MULTIPLY_INTEGER_TO_FLOAT)
    # (ConvInteger, QLinearConv, com.microsoft's QLinearAveragePool and QLinearGlobalAveragePool are mapped)
    # (QLinearAdd, QLinearSigmoid and QLinearConcat are mapped: gpudml/onnx/quantized.py; QuantizeLinear as ONNX's)
    # (com.microsoft's QAttention is mapped: gpudml/onnx/attention.py)
}

#: (domain, op) -> why gpudml does not plan it, for the ops of the anchor no issue brings.
NOT_PLANNED: dict[tuple[str, str], str] = {
    (ONNX, "GridSample"): ("no DirectML operator: the provider runs a compute shader of its own (sampling at "
                           "arbitrary coordinates per output); no open issue brings it"),
    **{(ONNX, op): "an experimental op of ONNX's first opsets, since removed from ONNX (onnx has no schema for it)"
       for op in ("Affine", "Crop", "ParametricSoftplus", "ScaledTanh")},
    (ONNX, "ImageScaler"): ("an experimental op of ONNX's first opsets, since removed from ONNX: onnx has no schema "
                            "for it, so onnx.checker refuses any model that uses it; what it computes is "
                            "DML_VALUE_SCALE_2D's, `dml.value_scale_2d`"),
    (ONNX, "GroupNorm"): "no ONNX op has this name (ONNX's is GroupNormalization): a registration of onnxruntime's own",
    **{(ONNX, op): "signal processing (complex values as a trailing axis of 2); no issue brings it"
       for op in ("DFT", "STFT")},
    **{(ONNX, op): "onnxruntime's copies between providers; gpudml runs every node on its device"
       for op in ("MemcpyFromHost", "MemcpyToHost")},
    (MS, "NhwcConv"): "a channels-last Conv that onnxruntime's layout optimizer writes; no issue brings it",
    (MS, "FusedMatMulActivation"): "onnxruntime's fusion of MatMul and its activation; gpudml fuses the two itself",
    (MS, "ConvTransposeWithDynamicPads"): "pads computed at run time; DirectML needs them when the graph is built",
    **{(DML, op): "the provider's own fused node, which its graph fusion writes, never a model's; gpudml fuses "
                  "when it compiles" for op in DML_EP[DML]},
}

#: (domain, op) -> what gpudml already does of an op it does not map.
PARTLY: dict[tuple[str, str], str] = {}

#: gpudml's mapped ops (ai.onnx) that the provider does not register. The random ops (issue #44): the
#: anchor's provider runs them on the CPU; a later provider source composes RandomNormalLike from
#: DML_RANDOM_GENERATOR (DmlOperatorRandomNormalLike.cpp), whose conversion gpudml follows for all six.
#: NonMaxSuppression: the provider runs it on the CPU; gpudml's extension kernel on the GPU.
#: SplitToSequence, SequenceMap and Optional: onnxruntime's CPU provider runs them (the DirectML provider
#: registers no kernel); gpudml splits with DML_SPLIT, records SequenceMap's body per item and keeps
#: optionals as it keeps sequences (sequences.py).
#: RMSNormalization and RotaryEmbedding (opset 23): newer than the anchor's kernel list; mapped as the provider
#: maps SimplifiedLayerNormalization and com.microsoft's RotaryEmbedding (gpudml/onnx/contrib.py).
#: GroupNormalization (opset 21; the anchor's list names it "GroupNorm"): mapped as the provider's
#: DmlOperatorGroupNorm (gpudml/onnx/contrib.py); opsets 18-20's per-group form is deprecated (onnx.checker
#: refuses such a model). Attention (opset 23): newer than the anchor's kernel list; one MULTIHEAD_ATTENTION1
#: (gpudml/onnx/attention.py).
BEYOND: tuple[str, ...] = ("Attention", "Bernoulli", "Gelu", "GroupNormalization", "HardSwish", "Multinomial",
                           "NonMaxSuppression", "Optional", "RMSNormalization", "RandomNormal", "RandomNormalLike",
                           "RandomUniform", "RandomUniformLike", "RotaryEmbedding", "SequenceMap",
                           "SplitToSequence", "Swish")


def kind(domain: str, op: str) -> str:
    """gpudml's status of an op of the anchor: "mapped", "folded", "control flow" (run by the
    session: analysis.CONTROL_FLOW), "not yet" or "not planned"."""
    if mapping.row(op, domain) is not None:
        return "mapped"
    if domain == ONNX and op in CONTROL_FLOW:
        return "control flow"
    if domain == ONNX and op in mapping.FOLDED:
        return "folded"
    if (domain, op) in NOT_YET:
        return "not yet"
    if (domain, op) in NOT_PLANNED:
        return "not planned"
    raise KeyError(f"{domain} {op}: no status; give it a row of gpudml/onnx/mapping.py, NOT_YET or NOT_PLANNED")


def status(domain: str, op: str) -> str:
    """gpudml's status of an op of the anchor, as the table says it."""
    found = kind(domain, op)
    if found == "mapped":
        return f"mapped (opsets {mapping.row(op, domain).opsets})"
    if found == "folded":
        return "folded on the host"
    if found == "control flow":
        return "control flow, run by the session (docs/onnx.md, Control flow)"
    if found == "not yet":
        issue = NOT_YET[domain, op]
        note = f"; {PARTLY[domain, op]}" if (domain, op) in PARTLY else ""
        return f"not yet: #{issue} ({ISSUES[issue]}){note}"
    return f"not planned: {NOT_PLANNED[domain, op]}"


def counts() -> dict[str, int]:
    """How many ops of the anchor there are ("anchor") and how many have each status (`kind`)."""
    kinds = [kind(d, op) for d, ops in DML_EP.items() for op in ops]
    return {"anchor": len(kinds),
            **{k: kinds.count(k) for k in ("mapped", "folded", "control flow", "not yet", "not planned")}}


def markdown() -> str:
    """docs/onnx.md's section: the opening sentence (counts), the table, gpudml beyond the anchor."""
    n = counts()
    per_domain = ", ".join(f"{len(ops)} in {d}" for d, ops in DML_EP.items())
    url = f"https://github.com/{SOURCE['repository']}/blob/{SOURCE['commit']}/{SOURCE['path']}"
    lines = [
        "## ONNX Runtime's DirectML execution provider, op by op",
        "",
        f"ONNX Runtime's DirectML execution provider registers kernels for {n['anchor']} ops ({per_domain}; "
        f"its generated kernel list, [{SOURCE['path']}]({url}) at commit {SOURCE['commit'][:12]}). "
        f"gpudml maps {n['mapped']} of them, folds {n['folded']} on the host, runs {n['control flow']} as control "
        f"flow in the session (If; Loop and Scan too, which the provider leaves to onnxruntime's CPU provider), "
        + (f"{n['not yet']} are not yet mapped (each with the open issue that brings it)" if n["not yet"]
           else "none is left to an open issue")
        + f" and {n['not planned']} are not planned (each with why). "
        "The provider's opsets are the versions it registers a kernel at, each serving up to the next; "
        "gpudml's, those of its row in the mapping table above (`gpudml/onnx/dml_ep.py` holds the list; "
        "`python -m gpudml.onnx.dml_ep` prints this section).",
        "",
        "| op | domain | provider's opsets | gpudml |",
        "|---|---|---|---|",
    ]
    for domain, ops in DML_EP.items():
        for op in sorted(ops):
            lines.append(f"| {op} | {domain} | {', '.join(map(str, ops[op]))} | {status(domain, op)} |")
    beyond = ", ".join(f"{op} ({mapping.BY_TYPE[op].opsets})" for op in sorted(BEYOND))
    lines += ["", f"gpudml maps {len(BEYOND)} ONNX ops the provider does not register: {beyond}. "
              "Constant, which gpudml folds, is no kernel of the provider either: onnxruntime makes it an "
              "initializer when it loads the model."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
