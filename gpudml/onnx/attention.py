"""onnxruntime's attention contrib ops (domain com.microsoft) on DirectML's MULTIHEAD_ATTENTION
operators, as ONNX Runtime's DirectML execution provider maps them (microsoft/onnxruntime,
onnxruntime/core/providers/dml/DmlExecutionProvider/src/Operators/DmlOperatorAttention.cpp and
DmlOperatorGroupQueryAttention.cpp):

- Attention: GEMM (input x weights + bias) gives the packed [B, S, 3, N, H] query, key and
  value; viewed as [B, S, N, 3, H] (strides: the provider's ELEMENT_WISE_IDENTITY transposes,
  gpudml's a view) it is MULTIHEAD_ATTENTION's stacked query-key-value (or, where the value's
  hidden size differs, the query-key stack beside the value sliced off). mask_index: of one
  dimension, [B] key lengths (KEY_SEQUENCE_LENGTH) or [2B] ends and starts
  (KEY_SEQUENCE_END_START), [3B + 2] KEY_QUERY_SEQUENCE_LENGTH_START_END; of 2-4 dimensions a
  BOOLEAN mask ([B, T] as [B, 1, 1, T], [B, S, T] as [B, 1, S, T], [B, 1, M, M] sliced to
  [B, 1, S, S]). relative_position_bias passes through. As the provider's support query,
  `past`, `past_sequence_length`, the `present` output, unidirectional=1 and do_rotary=1 are
  refused (NotMapped: the node is named at construction).
- QAttention (DmlOperatorQAttention.cpp): the projection MATRIX_MULTIPLY_INTEGER_TO_FLOAT of
  the 8-bit input and weights (quantized.integer_to_float: input and weights of two types, as
  quantize_dynamic writes them, MATRIX_MULTIPLY_INTEGER, CAST, MULTIPLY, ADD), then Attention's
  path (_attend); past [2, B, N, P, H] sliced, present JOINed as the provider does;
  unidirectional=1 a BOOLEAN causal mask (onnxruntime's CPU kernel's: query i sees keys
  0..P + i; the provider's FILL_VALUE_SEQUENCE key lengths P + b differ). Refused as the
  provider's support query refuses: unidirectional=1 with a mask_index, do_rotary=1,
  past_present_share_buffer=1.
- MultiHeadAttention: MULTIHEAD_ATTENTION with its inputs as they come (see _multi_head_attention);
  a key of [B, N, L, H] (cross-attention's projected keys, which the provider passes as the
  past) is refused, as are past_sequence_length and cache_indirection.
- GroupQueryAttention: MULTIHEAD_ATTENTION1 with QueryHeadCount num_heads and
  KeyValueHeadCount kv_num_heads, causal; for a prompt (S > 1) the past sequence lengths are
  zeros (the provider's FILL_VALUE_CONSTANT: its comment explains the first-prompt rule),
  for one token seqlens_k (the past length). The past and present key/value are the shared
  buffer [B, Hkv, C, D] when the past is at least total_sequence_length long
  (onnxruntime-genai's past_present_share_buffer); the provider binds no past tensor, the
  present aliasing it: gpudml, without aliasing, passes the past (MULTIHEAD_ATTENTION1 copies
  it into the present). gpudml's extensions, documented in docs/transformers.md:
  a past that grows by the new tokens (present [B, Hkv, P + 1, D], the keys beyond seqlens_k
  + 1 masked: KEY_SEQUENCE_LENGTH), the packed query-key-value input (key and value absent:
  a SLICE of each part's heads, read inside the rotary's kernel), and do_rotary (the
  provider runs no rotary inside GQA: its model builder writes a RotaryEmbedding node then):
  the query and key rotated as contrib.RotaryEmbedding's mapping does, at positions 0..S-1
  for a prompt and seqlens_k for one token. Refused: local_window_size, softcap,
  smooth_softmax, position_ids, attention_bias, head_sink and q/k norm weights (which the
  provider refuses or lacks), and a prompt after a past shorter than the total length.

What onnxruntime's CPU provider computes is the reference (tests/test_onnx_attention.py)."""

from __future__ import annotations

import math

import numpy as np

from ..graph import Expression
from .contrib import gather_axis, rotary, rotary_tables
from .quantized import integer_to_float
from .values import NotMapped, as_expr, dtype_of, rank, reshape, transpose

_I32 = np.dtype(np.int32)


def _int32(ctx, x):
    """x as INT32 (a mask or sequence lengths: DirectML's type for them)."""
    if not isinstance(x, Expression):
        return as_expr(ctx, np.asarray(x).astype(np.int32))
    return x if dtype_of(x) == _I32 else ctx.fn("cast")(x, _I32)


def _mask(ctx, mask, batch: int, heads: int, seq: int):
    """(mask, mask_type) for MULTIHEAD_ATTENTION from Attention's mask_index."""
    m = _int32(ctx, mask)
    sizes = list(mask.shape)
    if len(sizes) == 1:
        kinds = {batch: ("key_sequence_length", [1, batch]), 2 * batch: ("key_sequence_end_start", [2, batch]),
                 3 * batch + 2: ("key_query_sequence_length_start_end", [3 * batch + 2])}
        if sizes[0] not in kinds:
            raise NotMapped(f"mask_index {sizes}: a 1-D mask index has B, 2B or 3B + 2 elements (B = {batch})")
        kind, at = kinds[sizes[0]]
        return reshape(ctx, m, at), kind
    if len(sizes) == 2:
        return reshape(ctx, m, [sizes[0], 1, 1, sizes[1]]), "boolean"
    if len(sizes) == 3:
        return reshape(ctx, m, [sizes[0], 1, sizes[1], sizes[2]]), "boolean"
    if len(sizes) == 4:
        if sizes[2] != seq:
            if sizes[2] != sizes[3] or sizes[2] < seq:
                raise NotMapped(f"mask_index {sizes}: a 4-D mask is [B, 1, S, T] or [B, 1, M, M] with M >= S = {seq}")
            m = ctx.fn("slice")(m, [0, 0, 0, 0], [sizes[0], sizes[1], seq, seq], [1, 1, 1, 1])
        return m, "boolean"
    raise NotMapped(f"mask_index {sizes}: of 1-4 dimensions")


def _attention(ctx, n):
    """com.microsoft Attention (the provider's DmlOperatorAttention)."""
    for k, what in ((4, "past"), (6, "past_sequence_length")):
        if n.input(k) is not None:
            raise NotMapped(f"input {what}: ONNX Runtime's DirectML provider does not run Attention with it")
    if len(n.outputs_wanted) > 1 and n.outputs_wanted[1]:
        raise NotMapped("output present: ONNX Runtime's DirectML provider does not run Attention with it")
    for attr in ("unidirectional", "do_rotary"):
        if n.attr(attr, 0):
            raise NotMapped(f"{attr}=1: ONNX Runtime's DirectML provider does not run Attention with it")
    x, w = as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1])
    heads = int(n.attr("num_heads", 0))
    if rank(x) != 3 or rank(w) != 2 or w.shape[0] != x.shape[2]:
        raise NotMapped(f"input {list(x.shape)} and weights {list(w.shape)}: [B, S, W] and [W, 3 hidden] expected")
    sizes = list(n.attr("qkv_hidden_sizes", []) or [])
    if sizes and (len(sizes) != 3 or sizes[0] != sizes[1] or sum(sizes) != w.shape[1]):
        raise NotMapped(f"qkv_hidden_sizes {sizes}: three sizes, the query's and key's equal, summing to the "
                        f"weights' {w.shape[1]} columns")
    if not sizes and w.shape[1] % 3:
        raise NotMapped(f"weights {list(w.shape)}: 3 x hidden columns expected")
    hidden, vhidden = (sizes[0], sizes[2]) if sizes else (w.shape[1] // 3,) * 2
    if heads <= 0 or hidden % heads or vhidden % heads:
        raise NotMapped(f"num_heads {heads} does not divide the hidden sizes {hidden}, {vhidden}")
    batch, seq, width = x.shape
    y = ctx.fn("gemm")(reshape(ctx, x, [batch * seq, width]), w)
    if n.input(2) is not None:
        y = ctx.fn("add")(y, reshape(ctx, as_expr(ctx, n.inputs[2]), [1, w.shape[1]]))
    return _attend(ctx, n, reshape(ctx, y, [batch, seq, w.shape[1]]), heads, hidden, vhidden, n.input(3),
                   relative_position_bias=n.input(5))


def _attend(ctx, n, y, heads: int, hidden: int, vhidden: int, mask_index, *, relative_position_bias=None,
            past=None, unidirectional: bool = False):
    """Attention's and QAttention's MULTIHEAD_ATTENTION of the projected y [B, S, 2 hidden +
    vhidden] (query, key, value): the stacked query-key-value as strides (or the query-key
    stack beside the value sliced off), mask_index by _mask, past [2, B, N, P, H] sliced into
    the past key and value, unidirectional as a BOOLEAN mask [1, 1, S, P + S] (key j seen by
    query i where j <= P + i: onnxruntime's causal mask); the outputs: the output and, where
    wanted, present [2, B, N, P + S, H] (JOIN of the present key and value)."""
    batch, seq = y.shape[:2]
    head = hidden // heads
    args = {}
    if hidden == vhidden:
        stacked = transpose(ctx, reshape(ctx, y, [batch, seq, 3, heads, head]), [0, 1, 3, 2, 4])
        args["stacked_query_key_value"] = stacked
    else:
        qk, v = ctx.fn("split")(y, 2, [2 * hidden, vhidden])
        args["stacked_query_key"] = transpose(ctx, reshape(ctx, qk, [batch, seq, 2, heads, head]), [0, 1, 3, 2, 4])
        args["value"] = v
    if mask_index is not None:
        args["mask"], args["mask_type"] = _mask(ctx, mask_index, batch, heads, seq)
    past_len = 0
    if past is not None:
        past_len = int(past.shape[3])
        p = as_expr(ctx, past)
        args["past_key"], args["past_value"] = (
            reshape(ctx, ctx.fn("slice")(p, [k, 0, 0, 0, 0], [1, batch, heads, past_len, head], [1] * 5),
                    [batch, heads, past_len, head]) for k in (0, 1))
    if unidirectional:
        total = past_len + seq
        causal = np.tril(np.ones((seq, total), np.int32), k=past_len).reshape(1, 1, seq, total)
        args["mask"], args["mask_type"] = as_expr(ctx, causal), "boolean"
    if relative_position_bias is not None:
        args["relative_position_bias"] = as_expr(ctx, relative_position_bias)
    wanted = list(n.outputs_wanted) + [False]
    out = ctx.fn("multihead_attention0")(head_count=heads, scale=n.attr("scale", 0.0) or 1.0 / math.sqrt(head),
                                         mask_filter_value=n.attr("mask_filter_value", -10000.0),
                                         present=bool(wanted[1]), **args)
    if not wanted[1]:
        return [out] + [None] * (len(n.outputs_wanted) - 1)
    out, key, value = out
    total = past_len + seq
    present = ctx.fn("join")([reshape(ctx, t, [1, batch, heads, total, head]) for t in (key, value)], 0)
    return [out, present]


def _qattention(ctx, n):
    """com.microsoft QAttention (the provider's DmlOperatorQAttention): the projection
    quantized.integer_to_float of the 8-bit input [B, S, W] and weights [W, 3 hidden], their
    scales (input: one value; weights: one or [3 hidden] per column) and zero points, the bias
    added; then _attend as Attention's: mask_index of [B] or [2B] elements or of 2-4
    dimensions, past [2, B, N, P, H] and present, unidirectional. Refused as the provider's
    support query refuses: unidirectional=1 with a mask_index, do_rotary=1,
    past_present_share_buffer=1; and a mask index of [3B + 2] (the provider takes B or 2B)."""
    if n.attr("unidirectional", 0) and n.input(5) is not None:
        raise NotMapped(f"unidirectional=1 with a mask_index {list(n.inputs[5].shape)}: ONNX Runtime's DirectML "
                        f"provider does not run QAttention with both")
    for attr in ("do_rotary", "past_present_share_buffer"):
        if n.attr(attr, 0):
            raise NotMapped(f"{attr}={n.attr(attr)}: ONNX Runtime's DirectML provider does not run "
                            f"QAttention with it")
    missing = [what for k, what in ((0, "input"), (1, "weight"), (3, "input_scale"), (4, "weight_scale"))
               if n.input(k) is None]
    if missing:
        raise NotMapped(f"{', '.join(missing)} missing: input, weight, input_scale and weight_scale are required")
    x, w = as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[1])
    for what, v in (("input", x), ("weight", w)):
        if dtype_of(v) not in (np.int8, np.uint8):
            raise NotMapped(f"{what} of {dtype_of(v)}: INT8 or UINT8")
    heads = int(n.attr("num_heads", 0))
    if rank(x) != 3 or rank(w) != 2 or w.shape[0] != x.shape[2] or w.shape[1] % 3:
        raise NotMapped(f"input {list(x.shape)} and weight {list(w.shape)}: [B, S, W] and [W, 3 hidden] "
                        f"expected")
    hidden = w.shape[1] // 3
    if heads <= 0 or hidden % heads:
        raise NotMapped(f"num_heads {heads} must be at least 1 and divide the hidden size {hidden}")
    batch, seq, width = x.shape
    for k, what, sizes in ((2, "bias", ([w.shape[1]],)), (3, "input_scale", ([], [1])),
                           (4, "weight_scale", ([], [1], [w.shape[1]])), (6, "input_zero_point", ([], [1])),
                           (7, "weight_zero_point", ([], [1], [w.shape[1]]))):
        v = n.input(k)
        if v is not None and list(v.shape) not in sizes:
            raise NotMapped(f"{what} {list(v.shape)}: one of {' or '.join(map(str, sizes))}")
    mask, past = n.input(5), n.input(8)
    if mask is not None and rank(mask) == 1 and mask.shape[0] not in (batch, 2 * batch):
        raise NotMapped(f"mask_index {list(mask.shape)}: a 1-D mask index has B or 2B elements (B = {batch})")
    if past is not None:
        if list(past.shape[:3]) != [2, batch, heads] or rank(past) != 5 or past.shape[4] != hidden // heads:
            raise NotMapped(f"past {list(past.shape)}: [2, B, N, P, H] = [2, {batch}, {heads}, P, "
                            f"{hidden // heads}] expected")
        if mask is not None and rank(mask) == 4 and mask.shape[2] != seq:
            raise NotMapped(f"mask_index {list(mask.shape)} with a past: a 4-D mask is [B, 1, S, P + S]")
    y = integer_to_float(ctx, reshape(ctx, x, [batch * seq, width]), w, n.inputs[3], n.inputs[4], n.input(6),
                         n.input(7), n.input(2))
    return _attend(ctx, n, reshape(ctx, y, [batch, seq, w.shape[1]]), heads, hidden, hidden, mask, past=past,
                   unidirectional=bool(n.attr("unidirectional", 0)))


def _rotate(ctx, x, heads: int, cos_c, sin_c, ids, interleaved: bool):
    """x [B, S, heads * D] (or its heads [B, S, heads, D]) rotated at positions `ids` [B, S]
    (contrib.RotaryEmbedding's way; contrib.rotary_tables' one kernel where it applies)."""
    if rank(x) == 4:
        batch, seq, heads, head = x.shape
        hidden = heads * head
    else:
        batch, seq, hidden = x.shape
        head = hidden // heads
    half = cos_c.shape[-1]
    if 2 * half > head:
        raise NotMapped(f"cos_cache {list(cos_c.shape)}: half the rotated dims, at most half the head size {head}")
    y = rotary_tables(ctx, reshape(ctx, x, [batch, seq, heads, head]), cos_c, sin_c, ids, interleaved, 2)
    if y is not None:
        return reshape(ctx, y, [batch, seq, hidden])
    cos_c, sin_c = as_expr(ctx, cos_c), as_expr(ctx, sin_c)
    cos = reshape(ctx, as_expr(ctx, gather_axis(ctx, cos_c, ids, 0, [batch, seq])), [batch, seq, 1, half])
    sin = reshape(ctx, as_expr(ctx, gather_axis(ctx, sin_c, ids, 0, [batch, seq])), [batch, seq, 1, half])
    y = rotary(ctx, reshape(ctx, x, [batch, seq, heads, head]), cos, sin, interleaved, 2 * half)
    return reshape(ctx, y, [batch, seq, hidden])


def _group_query_attention(ctx, n):
    """com.microsoft GroupQueryAttention (the provider's DmlOperatorGroupQueryAttention)."""
    for attr, default in (("local_window_size", -1), ("softcap", 0.0), ("smooth_softmax", 0)):
        if n.attr(attr, default) != default:
            raise NotMapped(f"{attr}={n.attr(attr)}: ONNX Runtime's DirectML provider does not run it")
    for k, what in ((9, "position_ids"), (10, "attention_bias"), (11, "head_sink"), (12, "q_norm_weight"),
                    (13, "k_norm_weight"), (14, "q_norm_weight"), (15, "k_norm_weight")):
        if n.input(k) is not None:
            raise NotMapped(f"input {k} ({what}): gpudml maps GroupQueryAttention without it")
    hq, hkv = int(n.attr("num_heads", 0)), int(n.attr("kv_num_heads", 0))
    q = as_expr(ctx, n.inputs[0])
    if rank(q) != 3:
        raise NotMapped(f"query {list(q.shape)}: [B, S, hidden] expected")
    batch, seq, width = q.shape
    if hq <= 0 or hkv <= 0 or hq % hkv:
        raise NotMapped(f"kv_num_heads {hkv} must divide num_heads {hq}")
    if n.input(1) is None:  # packed query-key-value [B, S, (Hq + 2 Hkv) D]
        if width % (hq + 2 * hkv):
            raise NotMapped(f"packed query {list(q.shape)}: its last size is no multiple of num_heads + 2 "
                            f"kv_num_heads = {hq + 2 * hkv}")
        head = width // (hq + 2 * hkv)
        heads = reshape(ctx, q, [batch, seq, hq + 2 * hkv, head])  # each part a SLICE of its heads (the provider's
        q, k, v = (ctx.fn("slice")(heads, [0, 0, start, 0], [batch, seq, count, head])  # SPLIT): fused into the
                   for start, count in ((0, hq), (hq, hkv), (hq + hkv, hkv)))  # rotary's kernel, read in place
    else:
        k, v = as_expr(ctx, n.inputs[1]), as_expr(ctx, n.inputs[2])
        head = width // hq
        if width % hq or list(k.shape) != [batch, seq, hkv * head] or list(v.shape) != list(k.shape):
            raise NotMapped(f"query {list(q.shape)}, key {list(k.shape)}, value {list(v.shape)}: [B, S, Hq D] and "
                            f"[B, S, Hkv D] with Hq = {hq}, Hkv = {hkv}")
    past_k, past_v = n.input(3), n.input(4)
    past = 0 if past_k is None else int(past_k.shape[2])  # (an empty past, the first step's: mapping.EMPTY_INPUTS)
    total = int(np.asarray(n.constant(6, "total_sequence_length")).reshape(-1)[0])
    seqlens = n.inputs[5]
    if n.attr("do_rotary", 0):
        cos_c, sin_c = n.input(7), n.input(8)
        if cos_c is None or sin_c is None:
            raise NotMapped("do_rotary=1 without cos_cache and sin_cache")
        if seq > 1:
            ids = np.broadcast_to(np.arange(seq, dtype=np.int32), [batch, seq])
            if seq > cos_c.shape[0]:
                raise NotMapped(f"sequence length {seq} exceeds cos_cache's {cos_c.shape[0]} positions")
        else:
            ids = reshape(ctx, _int32(ctx, seqlens), [batch, 1])
        interleaved = bool(n.attr("rotary_interleaved", 0))
        q = _rotate(ctx, q, hq, cos_c, sin_c, ids, interleaved)
        k = _rotate(ctx, k, hkv, cos_c, sin_c, ids, interleaved)
    args = {"head_count": hq, "key_value_head_count": hkv, "present": True,
            "scale": n.attr("scale", 0.0) or 1.0 / math.sqrt(head)}
    if past:
        args["past_key"], args["past_value"] = as_expr(ctx, past_k), as_expr(ctx, past_v)
    if seq > 1:
        if 0 < past < total:
            raise NotMapped(f"a prompt of {seq} tokens after a past of {past} < total_sequence_length {total}: the "
                            f"provider reads a prompt's past as empty")
        args["past_sequence_lengths"] = np.zeros([batch], np.int32)
    elif past >= total or not past:  # the shared buffer (or a first token without a past)
        args["past_sequence_lengths"] = (_int32(ctx, seqlens) if past
                                         else np.zeros([batch], np.int32))
    elif past + 1 == total:  # a past that grows: the keys beyond each batch's total length masked
        lengths = ctx.fn("add0")(_int32(ctx, seqlens), np.ones([1], np.int32))  # (ADD of INT32)
        args["mask"], args["mask_type"] = reshape(ctx, lengths, [1, batch]), "key_sequence_length"
    else:
        raise NotMapped(f"past of {past} and total_sequence_length {total}: the past is the shared buffer (at least "
                        f"the total) or one shorter than the total")
    q, k, v = (reshape(ctx, t, [batch, seq, math.prod(t.shape[2:])]) for t in (q, k, v))  # ([B, S, heads, D]: 3-D)
    out, present_k, present_v = ctx.fn("multihead_attention")(q, k, v, **args)
    return [out, present_k, present_v][:len(n.outputs_wanted)]


def _multi_head_attention(ctx, n):
    """com.microsoft MultiHeadAttention (the provider's DmlOperatorMultiHeadAttention): one
    MULTIHEAD_ATTENTION, its inputs passed through: query [B, S, N H] or packed [B, S, N, 3, H],
    key [B, L, N H] or packed with the value [B, L, N, 2, H], value, bias, key_padding_mask
    ([B] key lengths: KEY_SEQUENCE_LENGTH; [B, T]: BOOLEAN as [B, 1, 1, T]), attention bias,
    past key/value [B, N, P, H] and the present outputs."""
    for k, what in ((8, "past_sequence_length"), (9, "cache_indirection")):
        if n.input(k) is not None:
            raise NotMapped(f"input {what}: ONNX Runtime's DirectML provider does not run MultiHeadAttention with it")
    if n.attr("unidirectional", 0):
        raise NotMapped("unidirectional=1: ONNX Runtime's DirectML provider does not run MultiHeadAttention with it")
    heads = int(n.attr("num_heads", 0))
    q, key, value = as_expr(ctx, n.inputs[0]), n.input(1), n.input(2)
    if heads <= 0:
        raise NotMapped(f"num_heads {heads}: at least 1")
    args = {}
    if rank(q) == 5:
        args["stacked_query_key_value"] = q
        batch, seq, head = q.shape[0], q.shape[1], q.shape[4]
    elif rank(q) == 3:
        args["query"] = q
        batch, seq = q.shape[:2]
        if q.shape[2] % heads:
            raise NotMapped(f"query {list(q.shape)}: num_heads {heads} does not divide its hidden size")
        head = q.shape[2] // heads
        if key is None:
            raise NotMapped("a 3-D query without a key: the key (or the packed key-value) is needed")
        if rank(key) == 5:
            args["stacked_key_value"] = as_expr(ctx, key)
        elif rank(key) == 3 and value is not None:
            args["key"], args["value"] = as_expr(ctx, key), as_expr(ctx, value)
        else:
            raise NotMapped(f"key {list(key.shape)}: [B, L, N H] with a value, or [B, L, N, 2, H] (a key of "
                            f"[B, N, L, H], the cross-attention's projected past, is not mapped)")
    else:
        raise NotMapped(f"query {list(q.shape)}: [B, S, N H] or [B, S, N, 3, H]")
    for k, field in ((3, "bias"), (5, "relative_position_bias"), (6, "past_key"), (7, "past_value")):
        if n.input(k) is not None:
            args[field] = as_expr(ctx, n.inputs[k])
    mask = n.input(4)
    if mask is not None:
        m = _int32(ctx, mask)
        if rank(mask) == 1 and mask.shape[0] == batch:
            args["mask"], args["mask_type"] = reshape(ctx, m, [1, batch]), "key_sequence_length"
        elif rank(mask) == 2 and mask.shape[0] == batch:
            args["mask"], args["mask_type"] = reshape(ctx, m, [batch, 1, 1, mask.shape[1]]), "boolean"
        else:
            raise NotMapped(f"key_padding_mask {list(mask.shape)}: [B] key lengths or [B, T] (B = {batch})")
    wanted = list(n.outputs_wanted) + [False] * 2
    present = wanted[1] or wanted[2]
    out = ctx.fn("multihead_attention0")(head_count=heads, scale=n.attr("scale", 0.0) or 1.0 / math.sqrt(head),
                                         mask_filter_value=n.attr("mask_filter_value", -10000.0), present=present,
                                         **args)
    outs = list(out) if present else [out, None, None]
    return outs[:len(n.outputs_wanted)]


def _onnx_heads(ctx, x, heads, what: str):
    """An ONNX Attention input as MULTIHEAD_ATTENTION's [B, S, heads * D]: a 3-D one as it comes
    (its heads from the attribute), a 4-D [B, heads, S, D] transposed (a view) and merged."""
    if rank(x) == 3:
        if not heads or x.shape[2] % heads:
            raise NotMapped(f"{what} {list(x.shape)}: a 3-D input needs q_num_heads and kv_num_heads that divide "
                            f"its hidden size (got {heads})")
        return x, heads, x.shape[2] // heads
    if rank(x) != 4:
        raise NotMapped(f"{what} {list(x.shape)}: [B, S, hidden] or [B, heads, S, head size]")
    b, h, s, d = x.shape
    return reshape(ctx, transpose(ctx, x, [0, 2, 1, 3]), [b, s, h * d]), h, d


def _onnx_attention(ctx, n):
    """ONNX Attention (opset 23): one MULTIHEAD_ATTENTION1, the query heads and the key/value heads
    (grouped-query attention) given; a float attn_mask and is_causal's lower triangle (0 and -inf,
    ONNX's: every past key and the new keys up to the query's own place, upper-left over the new
    keys) are the relative position bias, a bool attn_mask the BOOLEAN mask
    (MaskFilterValue -1e30: DirectML takes a finite one; ONNX masks with -inf, the same softmax but
    where a whole row is masked); past and present key/value [B, Hkv, P, D] as they come.
    Opset 24's nonpad_kv_seqlen: KEY_SEQUENCE_LENGTH (refused beside a bool attn_mask). Refused:
    softcap and the qk_matmul_output output."""
    if n.attr("softcap", 0.0):
        raise NotMapped(f"softcap {n.attr('softcap')}: DirectML's MULTIHEAD_ATTENTION has no soft cap")
    if len(n.outputs_wanted) > 3 and n.outputs_wanted[3]:
        raise NotMapped("output qk_matmul_output: MULTIHEAD_ATTENTION does not output its scores")
    q0 = as_expr(ctx, n.inputs[0])
    q, hq, d = _onnx_heads(ctx, q0, n.attr("q_num_heads", 0), "Q")
    k, hkv, dk = _onnx_heads(ctx, as_expr(ctx, n.inputs[1]), n.attr("kv_num_heads", 0), "K")
    v, hv, dv = _onnx_heads(ctx, as_expr(ctx, n.inputs[2]), n.attr("kv_num_heads", 0), "V")
    if dk != d or hv != hkv or hq % hkv:
        raise NotMapped(f"Q heads {hq} of {d}, K heads {hkv} of {dk}, V heads {hv}: the key's head size must be "
                        f"the query's and the key/value heads divide the query heads")
    batch, seq = q.shape[0], q.shape[1]
    past_k, past_v = n.input(4), n.input(5)
    total = k.shape[1] + (0 if past_k is None else past_k.shape[2])
    dt = dtype_of(q0)
    args = {}
    bias = None
    mask = n.input(3)
    if mask is not None:
        if rank(mask) > 4:
            raise NotMapped(f"attn_mask {list(mask.shape)}: at most 4 dimensions")
        m4 = reshape(ctx, mask, [1] * (4 - rank(mask)) + list(mask.shape))
        mdt = np.dtype(dtype_of(mask) if isinstance(mask, Expression) else mask.dtype)
        short = total - m4.shape[3]
        if short > 0:  # (ONNX: a shorter last dimension is padded with -inf, False for a bool mask: JOIN)
            fill = np.full(list(m4.shape[:3]) + [short], -np.inf if mdt.kind == "f" else 0, mdt)
            m4 = ctx.fn("join")([as_expr(ctx, m4), as_expr(ctx, fill)], 3)
        if mdt.kind != "f":  # bool (UINT8)
            args["mask"], args["mask_type"] = as_expr(ctx, _int32(ctx, m4)), "boolean"
        else:
            bias = as_expr(ctx, m4)
    lengths = n.input(6)
    if lengths is not None:  # opset 24: [B] valid keys per batch, KEY_SEQUENCE_LENGTH
        if "mask" in args:
            raise NotMapped("nonpad_kv_seqlen with a bool attn_mask: MULTIHEAD_ATTENTION takes one mask")
        args["mask"], args["mask_type"] = reshape(ctx, _int32(ctx, lengths), [1, batch]), "key_sequence_length"
    if n.attr("is_causal", 0):
        past = total - k.shape[1]  # (the past keys all seen; the new ones up to the query's own place)
        causal = np.where(np.tril(np.ones((seq, total), bool), k=past), 0, -np.inf).astype(dt).reshape(1, 1, seq, total)
        bias = as_expr(ctx, causal) if bias is None else ctx.fn("add")(bias, causal)
    if bias is not None:
        args["relative_position_bias"] = bias
    if (past_k is None) != (past_v is None):
        raise NotMapped("past_key and past_value: both or neither")
    if past_k is not None:
        args["past_key"], args["past_value"] = as_expr(ctx, past_k), as_expr(ctx, past_v)
    wanted = list(n.outputs_wanted) + [False] * 3
    present = wanted[1] or wanted[2]
    out = ctx.fn("multihead_attention")(q, k, v, head_count=hq, key_value_head_count=hkv,
                                        scale=n.attr("scale", None) or 1.0 / math.sqrt(d),
                                        mask_filter_value=-1e30, present=present, **args)
    outs = list(out) if present else [out, None, None]
    if rank(q0) == 4:
        outs[0] = transpose(ctx, reshape(ctx, outs[0], [batch, seq, hq, dv]), [0, 2, 1, 3])
    return (outs + [None])[:len(n.outputs_wanted)]


#: The attention rows (domain com.microsoft), as contrib.CONTRIB_ROWS.
ATTENTION_ROWS: tuple[tuple, ...] = (
    ("Attention", "GEMM (input x weights), ELEMENT_WISE_ADD (bias), MULTIHEAD_ATTENTION (stacked query-key-value "
     "as strides; mask_index: KEY_SEQUENCE_LENGTH, KEY_SEQUENCE_END_START or BOOLEAN; SLICE1 of a 4-D mask)",
     _attention, ("gemm", "add", "split", "cast", "slice", "multihead_attention0")),
    ("QAttention", "MATRIX_MULTIPLY_INTEGER_TO_FLOAT (input and weights of one type; else MATRIX_MULTIPLY_INTEGER, "
     "CAST, MULTIPLY, ADD), MULTIHEAD_ATTENTION as Attention's (mask_index: KEY_SEQUENCE_LENGTH, "
     "KEY_SEQUENCE_END_START or BOOLEAN; unidirectional: a BOOLEAN causal mask; past: SLICE1 of key and value; "
     "present: JOIN)", _qattention, ("matrix_multiply_integer_to_float", "matrix_multiply_integer", "cast",
                                    "multiply", "add", "split", "slice", "join", "multihead_attention0")),
    ("MultiHeadAttention", "MULTIHEAD_ATTENTION (query or stacked query-key-value, key and value or stacked "
     "key-value, bias, key_padding_mask: KEY_SEQUENCE_LENGTH or BOOLEAN, attention bias, past and present)",
     _multi_head_attention, ("cast", "multihead_attention0")),
    ("GroupQueryAttention", "MULTIHEAD_ATTENTION1 (QueryHeadCount, KeyValueHeadCount, PastSequenceLengths: zeros "
     "for a prompt, seqlens_k for one token); packed query-key-value: SLICE of each part's heads; do_rotary: "
     "constant caches GATHER of host tables, MULTIPLY, ADD (one fused kernel); fed caches GATHER, SPLIT, MULTIPLY, "
     "SUBTRACT, ADD, JOIN", _group_query_attention, ("multihead_attention", "slice", "cast", "add0", "gather",
                                                        "multiply", "subtract", "add", "split", "join")),
)

#: The ONNX-domain Attention row (ai.onnx, opset 23), as contrib.ONNX_ROWS.
ONNX_ATTENTION_ROWS: tuple[tuple, ...] = (
    ("Attention", "MULTIHEAD_ATTENTION1 (QueryHeadCount, KeyValueHeadCount; float attn_mask and is_causal as the "
     "relative position bias, a bool attn_mask BOOLEAN, a short one JOINed to the key count; nonpad_kv_seqlen: "
     "KEY_SEQUENCE_LENGTH; past and present)", _onnx_attention,
     ("multihead_attention", "cast", "add", "join")),
)

__all__ = ["ATTENTION_ROWS", "ONNX_ATTENTION_ROWS"]
