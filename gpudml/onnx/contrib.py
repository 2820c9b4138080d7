"""onnxruntime's contrib ops (domain com.microsoft) as DirectML operators, and the ONNX ops of
the newest opsets that follow them (RMSNormalization, RotaryEmbedding: opset 23).

Each build follows ONNX Runtime's DirectML execution provider (microsoft/onnxruntime,
onnxruntime/core/providers/dml/DmlExecutionProvider/src/Operators/DmlOperator<X>.cpp):
SkipLayerNormalization adds input, skip and bias (ELEMENT_WISE_ADD) and normalizes the sum
over the hidden axis (MEAN_VARIANCE_NORMALIZATION1); EmbedLayerNormalization gathers the word,
position and segment embeddings (GATHER), adds them and normalizes, its mask index a REDUCE
(SUM) of the mask; RotaryEmbedding gathers cos and sin at the position ids (a FILL_VALUE_SEQUENCE
plus the offset where the ids are one offset), splits the head into halves (or pairs, interleaved)
and joins x1 cos - x2 sin, x2 cos + x1 sin (SPLIT, MULTIPLY, ADD, JOIN; gpudml, where the caches
are constants and the whole head rotates, computes the same products and sums as x C + x[perm] S
from tables made once: rotary_tables, one fused kernel); BiasGelu, FastGelu, QuickGelu,
BiasAdd and BiasSplitGelu are element-wise operators; FusedMatMul is GEMM with alpha and transposes.
The RMS forms (SimplifiedLayerNormalization's, SkipSimplifiedLayerNormalization's,
RMSNormalization's) are x / sqrt(mean(x^2) + epsilon) * scale: MEAN_VARIANCE_NORMALIZATION2 with
UseMean FALSE (FL 6_3; below it REDUCE (AVERAGE of x x), ADD, SQRT, RECIP and MULTIPLY), their
inv_std_var REDUCE, ADD, SQRT and RECIP. Element-wise chains fuse with their neighbours as any element-wise node does
(gpudml.graph's fusion).

What onnxruntime's CPU provider computes is the reference (tests/test_onnx_contrib.py)."""

from __future__ import annotations

import math

import numpy as np

from ..graph import Expression
from ..types import FeatureLevel
from .values import NotMapped, as_expr, dtype_of, rank, reshape, transpose


def gather_axis(ctx, x, indices, axis: int, index_shape: list[int]):
    """ONNX Gather of `indices` (of ONNX shape `index_shape`) on `axis` of x: DML_OPERATOR_GATHER
    with x and the indices padded to one rank (the provider's DmlOperatorGather)."""
    r = rank(x)
    q = len(index_shape)
    out = list(x.shape[:axis]) + index_shape + list(x.shape[axis + 1:])
    full = max(r + q - 1, r)
    if full > 8:
        raise NotMapped(f"rank {full}: DirectML tensors have at most 8 dimensions")
    xs = reshape(ctx, x, [1] * (full - r) + list(x.shape))
    index_sizes = [1] * (full - max(q, 1)) + (index_shape or [1])
    idx = reshape(ctx, indices, index_sizes)
    y = ctx.fn("gather")(xs, idx, axis + full - r, index_dimensions=max(q, 1))
    return reshape(ctx, y, out or [1])


def gelu_tanh(ctx, x):
    """Gelu's tanh form, as element-wise operators: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    dt = dtype_of(x)
    cube = ctx.fn("multiply")(ctx.fn("multiply")(x, x), x)
    inner = ctx.fn("add")(x, ctx.fn("multiply")(cube, np.array([0.044715], dt)))
    t = ctx.fn("tanh")(ctx.fn("multiply")(inner, np.array([math.sqrt(2 / math.pi)], dt)))
    return ctx.fn("multiply")(ctx.fn("multiply")(x, np.array([0.5], dt)), ctx.fn("add")(t, np.array([1.0], dt)))


def _opt(ctx, n, k):
    v = n.input(k)
    return None if v is None else as_expr(ctx, v)


def _need_rank(n, x, ranks, what="input"):
    if rank(x) not in ranks:
        raise NotMapped(f"{what} of rank {rank(x)} {list(x.shape)}: the op takes rank {' or '.join(map(str, ranks))}")


def _need_last(n, v, size: int, what: str):
    if v is not None and list(v.shape)[-1:] != [size]:
        raise NotMapped(f"{what} {list(v.shape)}: its last dimension must be the hidden size {size}")


def _eps(ctx, x, eps: float):
    return np.full([1] * rank(x), eps, dtype_of(x))


def mean_inv_std(ctx, x, axes, eps):
    """REDUCE's AVERAGE of x and of (x - mean)^2, then 1 / sqrt(variance + epsilon)."""
    mean = ctx.fn("reduce")(x, "average", axes)
    centered = ctx.fn("subtract")(x, mean)
    var = ctx.fn("reduce")(ctx.fn("multiply")(centered, centered), "average", axes)
    return mean, ctx.fn("recip")(ctx.fn("sqrt")(ctx.fn("add")(var, _eps(ctx, x, eps))))


def rms(ctx, x, scale, axes, eps, inv_wanted=True):
    """x / sqrt(mean(x^2) + epsilon) * scale: MEAN_VARIANCE_NORMALIZATION2 with UseMean FALSE (as
    the provider), where the device's feature level has it (6_3), else REDUCE (AVERAGE of x x),
    ADD, SQRT, RECIP, MULTIPLY; and, `inv_wanted`, that 1 / sqrt(...) (the RMS forms' inv_std_var:
    REDUCE, ADD, SQRT, RECIP), else None."""
    inv = None
    if inv_wanted or ctx.device.feature_level < FeatureLevel.FL_6_3:
        ms = ctx.fn("reduce")(ctx.fn("multiply")(x, x), "average", axes)
        inv = ctx.fn("recip")(ctx.fn("sqrt")(ctx.fn("add")(ms, _eps(ctx, x, eps))))
    if ctx.device.feature_level < FeatureLevel.FL_6_3:
        y = ctx.fn("multiply")(x, inv)
        return (y if scale is None else ctx.fn("multiply")(y, scale)), inv
    scale = None if scale is None else reshape(ctx, scale, [1] * (rank(x) - rank(scale)) + list(scale.shape))
    y = ctx.fn("mean_variance_normalization2")(x, scale, axes=axes, use_mean=False, use_variance=True, epsilon=eps)
    return y, inv


def _skip_sum(ctx, n, bias_at: int):
    x, skip = as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1])
    _need_rank(n, x, (2, 3))
    hidden = x.shape[-1]
    if list(skip.shape)[-1:] != [hidden] or rank(skip) > rank(x):
        raise NotMapped(f"skip {list(skip.shape)} does not broadcast to input {list(x.shape)} (its last "
                        f"dimension must be the hidden size {hidden})")
    bias = _opt(ctx, n, bias_at)
    _need_last(n, bias, hidden, "bias")
    total = ctx.fn("add")(x, skip)
    if bias is not None:
        total = ctx.fn("add")(total, bias)
    return total


def _skip_layer_norm(ctx, n):
    """SkipLayerNormalization: (input + skip + bias) normalized over the hidden axis with gamma
    and beta (MEAN_VARIANCE_NORMALIZATION1); the optional mean and inv_std_var, which the provider
    leaves to the CPU, as LayerNormalization's (REDUCE, SUBTRACT, MULTIPLY, ADD, SQRT, RECIP);
    input_skip_bias_sum the sum itself."""
    total = _skip_sum(ctx, n, 4)
    gamma, beta = as_expr(ctx, n.inputs[2]), _opt(ctx, n, 3)
    hidden = total.shape[-1]
    _need_last(n, gamma, hidden, "gamma")
    _need_last(n, beta, hidden, "beta")
    eps = n.attr("epsilon", 1e-12)
    axes = [rank(total) - 1]
    y = ctx.fn("mean_variance_normalization")(total, gamma, beta, axes=axes, normalize_variance=True, epsilon=eps)
    wanted = list(n.outputs_wanted) + [False] * 4
    mean = inv = None
    if wanted[1] or wanted[2]:
        mean, inv = mean_inv_std(ctx, total, axes, eps)
    return [y, mean, inv, total if wanted[3] else None][:len(n.outputs_wanted)]


def _skip_simplified(ctx, n):
    """SkipSimplifiedLayerNormalization: (input + skip + bias) RMS-normalized with gamma; outputs
    output, mean (never computed: onnxruntime leaves it empty), inv_std_var, input_skip_bias_sum."""
    total = _skip_sum(ctx, n, 3)
    gamma = as_expr(ctx, n.inputs[2])
    _need_last(n, gamma, total.shape[-1], "gamma")
    wanted = list(n.outputs_wanted) + [False] * 4
    if wanted[1]:
        raise NotMapped("output 1 (mean): the RMS form computes no mean (onnxruntime leaves it unset)")
    y, inv = rms(ctx, total, gamma, [rank(total) - 1], n.attr("epsilon", 1e-12), inv_wanted=wanted[2])
    return [y, None, inv if wanted[2] else None, total if wanted[3] else None][:len(n.outputs_wanted)]


def _rms_axis(ctx, n, default_eps):
    x = as_expr(ctx, n.inputs[0])
    axis = n.attr("axis", -1)
    if not -rank(x) <= axis < rank(x):
        raise NotMapped(f"axis {axis} is outside the input's rank {rank(x)}")
    axes = list(range(axis % rank(x), rank(x)))
    scale = as_expr(ctx, n.inputs[1])
    stash = n.attr("stash_type", 1)
    if stash != 1:
        raise NotMapped(f"stash_type {stash}: gpudml computes in the input's type, float32 (1) only")
    return x, scale, axes, n.attr("epsilon", default_eps)


def _simplified_layer_norm(ctx, n):
    """SimplifiedLayerNormalization (RMSNorm): x / sqrt(mean(x^2 over the axes from `axis` on) +
    epsilon) * scale; output 1, inv_std_var, where read."""
    x, scale, axes, eps = _rms_axis(ctx, n, 1e-5)
    y, inv = rms(ctx, x, scale, axes, eps, inv_wanted=len(n.outputs_wanted) > 1 and n.outputs_wanted[1])
    return [y, inv][:len(n.outputs_wanted)]


def _rms_normalization(ctx, n):
    """RMSNormalization (opset 23): as SimplifiedLayerNormalization."""
    x, scale, axes, eps = _rms_axis(ctx, n, 1e-5)
    return [rms(ctx, x, scale, axes, eps, inv_wanted=False)[0]]


def _group_norm(ctx, x, scale, bias, groups: int, eps: float, channels_last: bool, what: str):
    """x [N, C, spatial...] (or [N, spatial..., C]) normalized per group of C / groups channels:
    MEAN_VARIANCE_NORMALIZATION1 over a view with the groups as an axis ([N, G, C/G, S], or
    [N, S, G, C/G] channels last), scale and bias [C] broadcast in that view (CAST to the input's
    type where theirs differs), as the provider's DmlOperatorGroupNorm."""
    if rank(x) < 2:
        raise NotMapped(f"{what}: input of rank {rank(x)}: at least [N, C]")
    shape = list(x.shape)
    c = shape[-1] if channels_last else shape[1]
    if groups < 1 or c % groups:
        raise NotMapped(f"{what}: {c} channels do not split into {groups} groups")
    for name, v in (("scale", scale), ("bias", bias)):
        if list(v.shape) != [c]:
            raise NotMapped(f"{what}: {name} {list(v.shape)}, not [{c}] (one per channel)")
    s = math.prod(shape[1:-1] if channels_last else shape[2:])
    if channels_last:
        view, axes, pshape = [shape[0], s, groups, c // groups], [1, 3], [1, 1, groups, c // groups]
    else:
        view, axes, pshape = [shape[0], groups, c // groups, s], [2, 3], [1, groups, c // groups, 1]
    dt = dtype_of(x)
    sc, b = (as_expr(ctx, reshape(ctx, v, pshape)) for v in (scale, bias))
    sc, b = (v if dtype_of(v) == dt else ctx.fn("cast")(v, dt) for v in (sc, b))
    y = ctx.fn("mean_variance_normalization")(as_expr(ctx, reshape(ctx, x, view)), sc, b, axes=axes,
                                              normalize_variance=True, epsilon=eps)
    return reshape(ctx, y, shape)


def _group_normalization(ctx, n):
    """GroupNormalization (opset 21: scale and bias per channel; opset 18's per-group form is
    deprecated: onnx.checker refuses a model that imports opsets 18-20 with it, so no session
    reaches it); stash_type 1 (float32 statistics) only."""
    x = as_expr(ctx, n.inputs[0])
    if n.attr("stash_type", 1) != 1:
        raise NotMapped(f"stash_type {n.attr('stash_type')}: only 1 (float32 statistics)")
    return [_group_norm(ctx, x, n.inputs[1], n.inputs[2], n.attr("num_groups"), n.attr("epsilon", 1e-5), False,
                        "GroupNormalization")]


def _ms_group_norm(ctx, n):
    """com.microsoft GroupNorm: channels_last (default 1) input, gamma and beta [C], `activation` 1:
    SiLU (the provider's fused ACTIVATION_SWISH)."""
    x = as_expr(ctx, n.inputs[0])
    y = _group_norm(ctx, x, n.inputs[1], n.inputs[2], n.attr("groups"), n.attr("epsilon", 1e-5),
                    bool(n.attr("channels_last", 1)), "GroupNorm")
    act = n.attr("activation", 0)
    if act not in (0, 1):
        raise NotMapped(f"GroupNorm: activation {act}: 0 (none) or 1 (SiLU)")
    return [ctx.fn("swish")(y) if act == 1 else y]


def _bias_add(ctx, n):
    """BiasAdd: X + bias + skip (two ELEMENT_WISE_ADDs)."""
    x, bias, skip = (as_expr(ctx, v) for v in n.inputs[:3])
    _need_rank(n, x, (3,), "X")
    _need_last(n, bias, x.shape[-1], "bias")
    if list(skip.shape) != list(x.shape):
        raise NotMapped(f"skip {list(skip.shape)} differs from X {list(x.shape)}")
    return [ctx.fn("add")(ctx.fn("add")(x, bias), skip)]


def _with_bias(ctx, n):
    x, bias = as_expr(ctx, n.inputs[0]), _opt(ctx, n, 1)
    if bias is None:
        return x
    _need_last(n, bias, x.shape[-1], "bias")
    return ctx.fn("add")(x, bias)


def _bias_gelu(ctx, n):
    """BiasGelu: ACTIVATION_GELU (erf) of A + B."""
    return [ctx.fn("gelu")(_with_bias(ctx, n))]


def _ms_gelu(ctx, n):
    """Gelu (com.microsoft): ACTIVATION_GELU (erf)."""
    return [ctx.fn("gelu")(as_expr(ctx, n.inputs[0]))]


def _fast_gelu(ctx, n):
    """FastGelu: Gelu's tanh form of X (+ bias)."""
    return [gelu_tanh(ctx, _with_bias(ctx, n))]


def _quick_gelu(ctx, n):
    """QuickGelu: x sigmoid(alpha x) (alpha 1.702 by default): MULTIPLY, SIGMOID, MULTIPLY."""
    x = as_expr(ctx, n.inputs[0])
    alpha = np.array([n.attr("alpha", 1.702)], dtype_of(x))
    return [ctx.fn("multiply")(x, ctx.fn("sigmoid")(ctx.fn("multiply")(x, alpha)))]


def _bias_split_gelu(ctx, n):
    """BiasSplitGelu: X + bias split into halves on the last axis, left * gelu(right)."""
    x, bias = as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1])
    _need_rank(n, x, (3,), "X")
    width = x.shape[-1]
    if width % 2 or list(bias.shape) != [width]:
        raise NotMapped(f"X {list(x.shape)} and bias {list(bias.shape)}: bias is [{width}] and that width even")
    left, right = ctx.fn("split")(ctx.fn("add")(x, bias), 2, [width // 2, width // 2])
    return [ctx.fn("multiply")(left, ctx.fn("gelu")(right))]


def _fused_matmul(ctx, n):
    """FusedMatMul: alpha * op(A) op(B), batched (GEMM with TransA, TransB and Alpha); the batch
    transposes (transBatchA/B) as strides."""
    a, b = as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1])
    for name, x in (("A", a), ("B", b)):
        if rank(x) < 2:
            raise NotMapped(f"{name} of rank {rank(x)}: FusedMatMul takes matrices (rank 2 or more)")
    for flag, name in (("transBatchA", "A"), ("transBatchB", "B")):
        if n.attr(flag, 0):
            x = a if name == "A" else b
            r = rank(x)
            if r > 2:  # [d0, ..., dk, M, K] read as if stored [d1, ..., dk, M, d0, K]: the batch axis moved
                perm = list(range(1, r - 1)) + [0, r - 1]
                x = transpose(ctx, x, perm)
                a, b = (x, b) if name == "A" else (a, x)
    y = ctx.fn("gemm")(a, b, trans_a=bool(n.attr("transA", 0)), trans_b=bool(n.attr("transB", 0)),
                       alpha=n.attr("alpha", 1.0))
    return [y]


def embed_layer_norm(ctx, n, tables: dict | None = None):
    """EmbedLayerNormalization: word, position (ids 0..S-1 when none are given) and segment
    embeddings gathered and added, normalized over the hidden axis with gamma and beta; mask_index
    the count of the mask's ones per batch (zeros without a mask); embedding_sum the sum, where read.
    `tables`: inputs 2-6 (the embeddings, gamma, beta) given apart (QEmbedLayerNormalization's,
    dequantized; it has no position_ids)."""
    ids = n.inputs[0]
    if len(ids.shape) != 2:
        raise NotMapped(f"input_ids {list(ids.shape)}: [batch, sequence] expected")
    batch, seq = ids.shape
    table = n.input if tables is None else tables.get
    word, pos_table = as_expr(ctx, table(2)), as_expr(ctx, table(3))
    hidden = word.shape[-1]
    gamma, beta = as_expr(ctx, table(5)), None if table(6) is None else as_expr(ctx, table(6))
    for what, t in (("position_embedding", pos_table), ("gamma", gamma), ("beta", beta)):
        _need_last(n, t, hidden, what)
    total = gather_axis(ctx, word, ids, 0, [batch, seq])
    pos = n.input(8) if tables is None else None
    if pos is None:
        pos = np.broadcast_to(np.arange(seq, dtype=np.int32), [batch, seq])
    elif list(pos.shape) not in ([batch, seq], [1, seq]):
        raise NotMapped(f"position_ids {list(pos.shape)}: [batch, sequence] or [1, sequence] expected")
    positions = gather_axis(ctx, pos_table, pos, 0, list(pos.shape))
    total = ctx.fn("add")(total, positions)
    if n.input(1) is not None and table(4) is not None:
        total = ctx.fn("add")(total, gather_axis(ctx, as_expr(ctx, table(4)), n.inputs[1], 0, [batch, seq]))
    y = ctx.fn("mean_variance_normalization")(total, gamma, beta, axes=[2], normalize_variance=True,
                                              epsilon=n.attr("epsilon", 1e-12))
    mask = n.input(7)
    if mask is None:
        index = np.zeros([batch], np.int32)
    else:
        ones = ctx.fn("logical_equals")(as_expr(ctx, mask), np.ones([1, 1], dtype_of(mask)))
        index = ctx.fn("reduce")(ctx.fn("cast")(ones, np.dtype(np.int32)), "sum", [1], keepdims=False)
    wanted = list(n.outputs_wanted) + [False] * 3
    return [y, index, total if wanted[2] else None][:len(n.outputs_wanted)]


def rotary(ctx, x, cos, sin, interleaved: bool, rot: int):
    """x [..., H] rotated on its first `rot` dims by cos, sin (broadcast to [..., rot/2])."""
    head = x.shape[-1]
    parts = ctx.fn("split")(x, rank(x) - 1, [rot, head - rot]) if rot < head else [x]
    r = parts[0]
    if interleaved:
        pairs = reshape(ctx, r, list(r.shape[:-1]) + [rot // 2, 2])
        x1, x2 = ctx.fn("split")(pairs, rank(pairs) - 1, [1, 1])
        cos = reshape(ctx, cos, list(cos.shape) + [1])
        sin = reshape(ctx, sin, list(sin.shape) + [1])
    else:
        x1, x2 = ctx.fn("split")(r, rank(r) - 1, [rot // 2, rot // 2])
    mul, add, sub = ctx.fn("multiply"), ctx.fn("add"), ctx.fn("subtract")
    out1 = sub(mul(x1, cos), mul(x2, sin))
    out2 = add(mul(x2, cos), mul(x1, sin))
    joined = ctx.fn("join")([out1, out2], rank(x1) - 1)
    if interleaved:
        joined = reshape(ctx, joined, list(r.shape))
    return ctx.fn("join")([joined, parts[1]], rank(x) - 1) if rot < head else joined


def rotary_tables(ctx, x, cos_c, sin_c, ids, interleaved: bool, heads_axis: int):
    """x [B, S, N, H] (heads_axis 2; [B, N, S, H]: heads_axis 1) rotated on all its H dims at
    positions `ids` [B, S] as one element-wise expression, x C + x[perm] S, where the caches
    are constants (else None: rotary's SPLIT and JOIN): C [max_position, H] the cos cache with
    each value twice (the halves' layout, or the pairs' interleaved), S the sin cache's with
    the first of each pair negated, both made once per graph (ctx.rotary_tables: every
    layer's rotations share them) and gathered at the ids broadcast over the heads (GATHER),
    perm swapping the halves (or the pairs' members: GATHER of x on its last axis). Each
    output is the same products and sum as rotary's (x1 cos + x2 (-sin) is x1 cos - x2 sin
    exactly), and graph fusion runs the gathers and the arithmetic as one kernel (where x is
    a slice of one value: no SPLIT either), where the provider's SPLIT,
    MULTIPLY, SUBTRACT, ADD and JOIN are a dispatch each."""
    if isinstance(cos_c, Expression) or isinstance(sin_c, Expression) or rank(x) != 4:
        return None
    cos_c, sin_c = np.asarray(cos_c), np.asarray(sin_c)
    half, head = cos_c.shape[-1], x.shape[-1]
    if cos_c.ndim != 2 or 2 * half != head:
        return None
    key = (interleaved, cos_c.dtype.str, sin_c.dtype.str, cos_c.shape, sin_c.shape, cos_c.tobytes(), sin_c.tobytes())
    tables = ctx.rotary_tables.get(key)
    if tables is None:  # (made once per graph: every layer's rotations read the same two constants)
        if interleaved:
            table_c = np.repeat(cos_c, 2, axis=1)
            table_s = np.stack([-sin_c, sin_c], axis=2).reshape(cos_c.shape[0], head)
        else:
            table_c, table_s = np.concatenate([cos_c, cos_c], 1), np.concatenate([-sin_c, sin_c], 1)
        tables = ctx.rotary_tables[key] = (as_expr(ctx, table_c.astype(cos_c.dtype)),
                                           as_expr(ctx, table_s.astype(sin_c.dtype)))
    perm = (np.arange(head).reshape(half, 2)[:, ::-1].reshape(-1) if interleaved
            else np.concatenate([np.arange(half, head), np.arange(half)]))
    batch, seq = x.shape[0], x.shape[3 - heads_axis]
    at = [batch, seq, 1] if heads_axis == 2 else [batch, 1, seq]
    where = list(x.shape[:3])
    if isinstance(ids, Expression):
        index = ctx.graph.view(ids, where, [0 if n == 1 else st for n, st in zip(
            at, reshape(ctx, ids, at).desc.effective_strides)]) if ids.desc.is_packed else None
        if index is None:
            return None
    else:
        index = np.broadcast_to(np.asarray(ids).reshape(at), where)
    mul = ctx.fn("multiply")
    c = gather_axis(ctx, tables[0], index, 0, where)
    s = gather_axis(ctx, tables[1], index, 0, where)
    swapped = gather_axis(ctx, x, perm.astype(np.int32), 3, [head])
    return ctx.fn("add")(mul(x, c), mul(swapped, s))


def _rotary_embedding(onnx_domain: bool):
    """RotaryEmbedding (com.microsoft: input, position_ids, cos_cache, sin_cache; ONNX opset 23:
    input, cos_cache, sin_cache, position_ids optional): cos and sin gathered at the position
    ids (GATHER; one id is an offset: ids offset + 0..S-1), the first rotary_embedding_dim dims of
    each head rotated as halves (or as adjacent pairs, interleaved), the rest passed through."""
    def build(ctx, n):
        x = as_expr(ctx, n.inputs[0])
        caches = (n.inputs[1], n.inputs[2]) if onnx_domain else (n.inputs[2], n.inputs[3])  # (constants: tables)
        if onnx_domain:
            cos_c, sin_c, pos = as_expr(ctx, n.inputs[1]), as_expr(ctx, n.inputs[2]), n.input(3)
        else:
            pos, cos_c, sin_c = n.inputs[1], as_expr(ctx, n.inputs[2]), as_expr(ctx, n.inputs[3])
            if n.attr("is_packed_batching", 0):
                raise NotMapped("is_packed_batching: the provider runs padded batches only")
            if n.attr("scale", 1.0) != 1.0:
                raise NotMapped(f"scale {n.attr('scale')}: onnxruntime's kernels ignore it; gpudml refuses "
                                "rather than guess")
        _need_rank(n, x, (3, 4))
        if list(cos_c.shape) != list(sin_c.shape):
            raise NotMapped(f"cos_cache {list(cos_c.shape)} and sin_cache {list(sin_c.shape)} differ")
        heads = n.attr("num_heads", 0)
        half = cos_c.shape[-1]
        if rank(x) == 4:  # [B, N, S, H]
            batch, heads4, seq, head = x.shape
            view = x
        else:  # [B, S, N * H]
            batch, seq, hidden = x.shape
            head = hidden // heads if heads else (n.attr("rotary_embedding_dim", 0) or 2 * half)
            if head <= 0 or hidden % head or (heads and hidden % heads):
                raise NotMapped(f"hidden size {hidden} is no multiple of the head size {head} (num_heads {heads})")
            view = reshape(ctx, x, [batch, seq, hidden // head, head])
        rot = n.attr("rotary_embedding_dim", 0) or 2 * half
        if rot != 2 * half or rot > head or rot % 2:
            raise NotMapped(f"rotary_embedding_dim {rot} with cos_cache {list(cos_c.shape)} and head size {head}: "
                            f"the cache's last dimension is half the rotated dims, at most the head size")
        if pos is None:  # (ONNX: the caches are already [B, S, rot/2])
            if rank(cos_c) != 3 or list(cos_c.shape[:2]) != [batch, seq]:
                raise NotMapped(f"cos_cache {list(cos_c.shape)} without position_ids: [batch, sequence, rot/2] "
                                f"expected ([{batch}, {seq}, {half}])")
            cos, sin = cos_c, sin_c
        else:
            ids = np.asarray(pos) if not isinstance(pos, Expression) else pos
            if rank(cos_c) != 2:
                raise NotMapped(f"cos_cache {list(cos_c.shape)}: [max_position, rot/2] expected with position_ids")
            if not onnx_domain and list(ids.shape) in ([1], []):
                offset = ctx.fn("cast")(as_expr(ctx, ids), np.dtype(np.int32))  # (INT32: every adapter has it)
                seqs = np.broadcast_to(np.arange(seq, dtype=np.int32), [batch, seq])
                ids = ctx.fn("add0")(as_expr(ctx, seqs), reshape(ctx, offset, [1, 1]))
            elif list(ids.shape) != [batch, seq]:
                raise NotMapped(f"position_ids {list(ids.shape)}: [batch, sequence] ([{batch}, {seq}]) expected"
                                + ("" if onnx_domain else " or [1] (an offset)"))
            if not isinstance(ids, Expression):
                top = int(np.max(ids)) if ids.size else 0
                if top >= cos_c.shape[0] or (ids.size and int(np.min(ids)) < 0):
                    raise NotMapped(f"position_ids reach {top}: cos_cache has {cos_c.shape[0]} positions")
            elif seq > cos_c.shape[0]:
                raise NotMapped(f"sequence length {seq} exceeds cos_cache's {cos_c.shape[0]} positions")
            y = rotary_tables(ctx, view, *caches, ids, bool(n.attr("interleaved", 0)), 2 if rank(x) == 3 else 1)
            if y is not None:
                return [reshape(ctx, y, list(x.shape))]
            cos = gather_axis(ctx, cos_c, ids, 0, [batch, seq])
            sin = gather_axis(ctx, sin_c, ids, 0, [batch, seq])
        # cos, sin [B, S, rot/2] broadcast over the heads: [B, S, 1, rot/2] or [B, 1, S, rot/2]
        at = [batch, seq, 1, half] if rank(x) == 3 else [batch, 1, seq, half]
        cos, sin = reshape(ctx, as_expr(ctx, cos), at), reshape(ctx, as_expr(ctx, sin), at)
        y = rotary(ctx, view, cos, sin, bool(n.attr("interleaved", 0)), rot)
        return [reshape(ctx, y, list(x.shape))]
    return build


_NORM = ("mean_variance_normalization", "reduce", "subtract", "multiply", "add", "sqrt", "recip")
_RMS = ("mean_variance_normalization2", "reduce", "multiply", "add", "sqrt", "recip")

#: The contrib rows (domain com.microsoft): (op type, DirectML operators, build, gpudml forms), as mapping.Mapping
#: takes them.
CONTRIB_ROWS: tuple[tuple, ...] = tuple([
    ("SkipLayerNormalization", "ELEMENT_WISE_ADD (input + skip + bias), MEAN_VARIANCE_NORMALIZATION1 (the hidden "
     "axis); mean and inv_std_var: REDUCE (AVERAGE), SUBTRACT, MULTIPLY, ADD, SQRT, RECIP", _skip_layer_norm, _NORM),
    ("SkipSimplifiedLayerNormalization", "ELEMENT_WISE_ADD (input + skip + bias), MEAN_VARIANCE_NORMALIZATION2 "
     "(UseMean FALSE: RMS; below FL 6_3 REDUCE, ADD, SQRT, RECIP, MULTIPLY); inv_std_var: REDUCE (AVERAGE of x x), "
     "ADD, SQRT, RECIP", _skip_simplified, _RMS),
    ("EmbedLayerNormalization", "GATHER (word, position, segment), ELEMENT_WISE_ADD, MEAN_VARIANCE_NORMALIZATION1; "
     "mask_index: LOGICAL_EQUALS (mask == 1), CAST, REDUCE (SUM)", embed_layer_norm,
     ("gather", "add", "mean_variance_normalization", "logical_equals", "cast", "reduce")),
    ("RotaryEmbedding", "GATHER (cos, sin at the position ids; an offset: CAST to INT32, ELEMENT_WISE_ADD), SPLIT, "
     "MULTIPLY, SUBTRACT, ADD, JOIN; constant caches, the whole head rotated: GATHER of host tables and of x, "
     "MULTIPLY, ADD (one fused kernel)", _rotary_embedding(False), ("gather", "split", "multiply", "subtract", "add",
                                                                  "join", "cast", "add0")),
    ("FastGelu", "ELEMENT_WISE_ADD (bias), Gelu's tanh form: MULTIPLY, ADD, TANH", _fast_gelu,
     ("add", "multiply", "tanh")),
    ("BiasGelu", "ELEMENT_WISE_ADD, ACTIVATION_GELU", _bias_gelu, ("add", "gelu")),
    ("Gelu", "ACTIVATION_GELU", _ms_gelu, ("gelu",)),
    ("QuickGelu", "MULTIPLY (alpha), ACTIVATION_SIGMOID, MULTIPLY", _quick_gelu, ("multiply", "sigmoid")),
    ("BiasAdd", "ELEMENT_WISE_ADD (X + bias), ELEMENT_WISE_ADD (+ skip)", _bias_add, ("add",)),
    ("BiasSplitGelu", "ELEMENT_WISE_ADD, SPLIT (halves), ACTIVATION_GELU, MULTIPLY", _bias_split_gelu,
     ("add", "split", "gelu", "multiply")),
    ("FusedMatMul", "GEMM (TransA, TransB, Alpha; batch transposes as strides)", _fused_matmul, ("gemm",)),
    ("GroupNorm", "MEAN_VARIANCE_NORMALIZATION1 (a view [N, S, G, C/G] of the channels-last input, gamma and beta "
     "per channel), ACTIVATION_SWISH (activation 1: SiLU)", _ms_group_norm,
     ("mean_variance_normalization", "swish", "cast")),
])

#: Rows of the ONNX domain (ai.onnx) that follow the contrib ops (appended to mapping.TABLE).
ONNX_ROWS: tuple[tuple, ...] = (
    ("SimplifiedLayerNormalization", "MEAN_VARIANCE_NORMALIZATION2 (UseMean FALSE: RMS over the axes from `axis` on; "
     "below FL 6_3 REDUCE, ADD, SQRT, RECIP, MULTIPLY); inv_std_var: REDUCE (AVERAGE of x x), ADD, SQRT, RECIP",
     _simplified_layer_norm, _RMS),
    ("RMSNormalization", "MEAN_VARIANCE_NORMALIZATION2 (UseMean FALSE: RMS over the axes from `axis` on; below FL "
     "6_3 REDUCE, ADD, SQRT, RECIP, MULTIPLY)", _rms_normalization, _RMS),
    ("RotaryEmbedding", "GATHER (cos, sin at the position ids), SPLIT, MULTIPLY, SUBTRACT, ADD, JOIN; constant "
     "caches, the whole head rotated: GATHER of host tables and of x, MULTIPLY, ADD (one fused kernel)",
     _rotary_embedding(True), ("gather", "split", "multiply", "subtract", "add", "join")),
    ("GroupNormalization", "MEAN_VARIANCE_NORMALIZATION1 (a view [N, G, C/G, S]: groups as an axis; scale and bias "
     "per channel)", _group_normalization,
     ("mean_variance_normalization", "cast")),
)

__all__ = ["CONTRIB_ROWS", "ONNX_ROWS", "embed_layer_norm", "gather_axis", "gelu_tanh", "mean_inv_std", "rms"]
