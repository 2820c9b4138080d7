"""QUANTIZE_LINEAR's round(x / scale) (lib/elementwise's quantize_f32, quantize_i32, through
quant_mag: the float quotient's floor t, then one exact comparison of the quotient with
t + 1/2) against the long division it replaced (kept here, in the test's own WGSL), side by
side in one kernel on every adapter: the same bits for
random float32 bit patterns, quotients near k + 1/2, 4096 and 0, exact ties, subnormals, every
exponent, and the edges of the case analysis (its comment). Also the new results against
numpy's float64 rounding for the pairs whose quotient float64 holds exactly enough."""

from __future__ import annotations

import numpy as np

from gpudml.kernels import templates

# The functions as they were before (quant_mag: 8 quotient bits a step, ~6 u32 divisions).
OLD = """
// RNE(n 2^e / m) for m in [2^23, 2^24), saturating at 4096: QUANTIZE_LINEAR's round(x / scale),
// exact (long division: the quotient, its half bit and whether anything is left).
fn old_quant_mag(n: u32, e: i32, m: u32) -> u32 {
    if (n == 0u) {
        return 0u;
    }
    if (i32(32u - countLeadingZeros(n)) - 25i + e >= 12i) {
        return 4096u;
    }
    var q = n / m;
    var r = n % m;
    var sticky = false;
    let steps = e + 1i;  // q = floor(n 2^(e + 1) / m)
    if (steps >= 0i) {
        // 8 bits of the quotient a step (r < m < 2^24: r 2^8 fits), then the rest; no loop of
        // a data-dependent length (steps <= 36 after the saturation test above: 4 full steps)
        let full = steps / 8i;
        for (var i = 0i; i < 5i; i++) {
            if (i < full) {
                r = r << 8u;
                q = (q << 8u) | (r / m);
                r = r % m;
            }
        }
        let rest = u32(steps % 8i);
        r = r << rest;
        q = (q << rest) | (r / m);
        r = r % m;
        sticky = r != 0u;
    } else {
        let d = u32(-steps);
        let gone = select(q, q & ((1u << min(d, 31u)) - 1u), d < 32u);
        sticky = r != 0u || gone != 0u;
        q = select(0u, q >> min(d, 31u), d < 32u);
    }
    var k = q >> 1u;
    if ((q & 1u) != 0u && (sticky || (k & 1u) != 0u)) {
        k += 1u;
    }
    return min(k, 4096u);
}

fn old_quant_scaled(n: u32, e: i32, negative: bool, s: f32) -> i32 {
    let as_ = bitcast<u32>(s) & 0x7FFFFFFFu;
    var magnitude = 0u;
    if (as_ == 0u) {
        magnitude = select(4096u, 0u, n == 0u);
    } else if (as_ < 0x7F800000u) {
        var m = f32_mant(s);
        var es = f32_exp(s);
        let shift = countLeadingZeros(m) - 8u;
        m = m << shift;
        es -= i32(shift);
        magnitude = old_quant_mag(n, e - es, m);
    }
    let q = i32(magnitude);
    return select(q, -q, negative != (s < 0.0));
}

fn old_quantize_f32(x: f32, s: f32) -> i32 {
    let ax = bitcast<u32>(x) & 0x7FFFFFFFu;
    let as_ = bitcast<u32>(s) & 0x7FFFFFFFu;
    if (ax > 0x7F800000u || as_ > 0x7F800000u || (ax == 0x7F800000u && as_ == 0x7F800000u)) {
        return 0i;
    }
    if (ax == 0x7F800000u) {
        return select(4096i, -4096i, (x < 0.0) != (s < 0.0));
    }
    return old_quant_scaled(select(f32_mant(x), 0u, ax == 0u), f32_exp(x), x < 0.0, s);
}

fn old_quantize_i32(x: i32, s: f32) -> i32 {
    if (is_nan(s)) {
        return 0i;
    }
    return old_quant_scaled(bitcast<u32>(select(x, -x, x < 0i)), 0i, x < 0i, s);
}
"""

KERNEL = """
struct Params { count: u32, split: u32, stride: u32, keep: u32 }
@group(0) @binding(0) var<storage, read> pairs: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> result: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> kept: array<i32>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var bad = 0u;
    var first = 0xFFFFFFFFu;
    for (var i = gid.x; i < params.count; i += params.stride) {
        let p = pairs[i];
        let s = bitcast<f32>(p.y);
        var got: i32;
        var want: i32;
        if (i < params.split) {
            got = quantize_f32(bitcast<f32>(p.x), s);
            want = old_quantize_f32(bitcast<f32>(p.x), s);
        } else {
            got = quantize_i32(bitcast<i32>(p.x), s);
            want = old_quantize_i32(bitcast<i32>(p.x), s);
        }
        if (got != want) {
            bad += 1u;
            first = min(first, i);
        }
        if (i < params.keep) {
            kept[i] = got;
        }
    }
    if (bad != 0u) {
        atomicAdd(&result[0], bad);
        atomicMin(&result[1], first);
    }
}
"""

PRELUDE = """{% import "lib/numeric.wgsl.j2" as n %}
{% import "lib/elementwise.wgsl.j2" as ew %}
{{ n.float_fns() }}
alias F = f32;
{{ ew.formula_helpers() }}
"""

KEEP = 1 << 16  # results read back for numpy's check


def _source() -> str:
    env = templates.environment(templates.search_path())
    return env.from_string(PRELUDE).render() + OLD + KERNEL


def _f32(a) -> np.ndarray:
    with np.errstate(over="ignore"):  # (beyond float32: inf, a pattern like any other)
        return np.asarray(a, np.float64).astype(np.float32)


def _bits(a) -> np.ndarray:
    return np.asarray(a, np.float32).view(np.uint32)


def _scales(rng, n: int) -> np.ndarray:
    """Scale bit patterns: every exponent (subnormal, the fast range's edges, huge), random
    mantissas, and mantissas of few bits (for exact ties)."""
    bits = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    edges = np.array([0x00000001, 0x007FFFFF, 0x00800000, 0x00800001, 0x00FFFFFF, 0x7E7FFFFF, 0x7E800000,
                      0x7E800001, 0x7F7FFFFF, 0x3F800000, 0x3F7FFFFF, 0x3B808081, 0x0, 0x7F800000, 0x7FC00000],
                     np.uint32)
    bits[: len(edges) * 8] = np.tile(edges, 8) | (np.repeat(np.arange(8, dtype=np.uint32) & 1, len(edges)) << 31)
    return bits


def _f32_pairs(rng) -> tuple[np.ndarray, np.ndarray]:
    xs, ss = [], []
    # (a) random bit patterns, both anywhere
    n = 400_000
    xs.append(rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32))
    ss.append(_scales(rng, n))
    # quotients aimed at k + 1/2 (+- a few ULP), at 4096 and 4095.5, 0.5, tiny; scales of every exponent
    n = 1_200_000
    s = rng.integers(0x00000001, 0x7F800000, n, dtype=np.uint64).astype(np.uint32)
    s[: n // 4] = rng.integers(0x00800000, 0x7E800001, n // 4, dtype=np.uint64).astype(np.uint32)
    sf = s.view(np.float32).astype(np.float64)
    k = rng.integers(0, 4200, n).astype(np.float64)
    which = rng.integers(0, 6, n)
    target = np.where(which == 0, k + 0.5, k)
    target = np.where(which == 1, 4095.5 + rng.integers(-2, 3, n), target)
    target = np.where(which == 2, 0.5 * 2.0 ** -rng.integers(0, 40, n), target)
    target = np.where(which == 3, 4096.0 * 2.0 ** rng.integers(0, 30, n), target)
    target = np.where(which == 4, rng.random(n) * 8.0, target)
    x = _bits(_f32(target * sf)).astype(np.int64) + rng.integers(-3, 4, n)  # a few ULP around
    x = np.clip(x, 0, 0x7F7FFFFF).astype(np.uint32) | (rng.integers(0, 2, n, dtype=np.uint32) << 31)
    xs.append(x)
    ss.append(s | (rng.integers(0, 2, n, dtype=np.uint32) << 31))
    # subnormal x against scales near 2^-126 and below
    n = 100_000
    xs.append(rng.integers(0, 0x00800000, n, dtype=np.uint64).astype(np.uint32))
    ss.append(rng.integers(0x00000001, 0x01800000, n, dtype=np.uint64).astype(np.uint32))
    # (b) exact ties: x = (k + 1/2) s with s of at most 10 mantissa bits (the product exact)
    n = 300_000
    k = rng.integers(0, 4200, n)
    sm = rng.integers(1, 1 << 10, n)
    se = rng.integers(-140, 110, n).astype(np.float64)
    sv = sm * 2.0 ** se
    xv = (2 * k + 1) * sm * 2.0 ** (se - 1)
    ok = (sv >= 2.0 ** -149) & (sv < 3e38) & (xv >= 2.0 ** -149) & (xv < 3e38)
    ok &= _f32(sv).astype(np.float64) == sv
    ok &= _f32(xv).astype(np.float64) == xv
    xs.append(_bits(_f32(xv[ok])))
    ss.append(_bits(_f32(sv[ok])))
    # (c) the specials against each other
    special = np.array([0x0, 0x80000000, 0x1, 0x007FFFFF, 0x00800000, 0x3F000000, 0x3F800000, 0x45800000,
                        0x457FF800, 0x45800800, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
                        0x7E800000, 0x7E800001, 0x00FFFFFF, 0x4B7FFFFF, 0x4F000000], np.uint32)
    xs.append(np.repeat(special, len(special)))
    ss.append(np.tile(special, len(special)))
    return np.concatenate(xs), np.concatenate(ss)


def _i32_pairs(rng) -> tuple[np.ndarray, np.ndarray]:
    xs, ss = [], []
    # integers of every bit length, scales putting the quotient near k + 1/2, 4096 or anywhere
    n = 600_000
    x = (rng.integers(0, 1 << 31, n) >> rng.integers(0, 31, n)).astype(np.int64)
    x = np.where(rng.integers(0, 2, n) == 1, -x, x)
    x[:64] = [0, 1, -1, 2, -2, 2**31 - 1, -(2**31), -(2**31) + 1] * 8
    k = rng.integers(0, 4200, n).astype(np.float64)
    which = rng.integers(0, 4, n)
    target = np.where(which == 0, k + 0.5, np.where(which == 1, 4095.5, np.where(which == 2, k, rng.random(n))))
    with np.errstate(divide="ignore"):
        s = _bits(_f32(np.maximum(np.abs(x), 1) / target)).astype(np.int64) + rng.integers(-3, 4, n)
    s = np.clip(s, 1, 0x7F7FFFFF).astype(np.uint32) | (rng.integers(0, 2, n, dtype=np.uint32) << 31)
    s[-5000:] = _scales(rng, 5000)
    xs.append(x.astype(np.int32).view(np.uint32))
    ss.append(s)
    # exact ties: x = (2k + 1) 2^(j - 1), s = 2^j (and 3 2^j: x a multiple of 3)
    n = 100_000
    k = rng.integers(0, 4200, n)
    j = rng.integers(1, 18, n)
    three = rng.integers(0, 2, n) == 1
    x = (2 * k + 1) * (1 << (j - 1)) * np.where(three, 3, 1)
    ok = x < 2**31
    xs.append(np.where(rng.integers(0, 2, n) == 1, -x, x)[ok].astype(np.int32).view(np.uint32))
    ss.append(_bits(_f32((2.0**j * np.where(three, 3, 1))[ok])))
    return np.concatenate(xs), np.concatenate(ss)


def _run(device, pairs: np.ndarray, split: int) -> tuple[int, int, np.ndarray]:
    import wgpu

    dev = device._ctx.device
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    count = len(pairs)
    groups = 4096
    buf_pairs = dev.create_buffer_with_data(data=pairs.tobytes(), usage=usage)
    buf_result = dev.create_buffer_with_data(data=np.array([0, 0xFFFFFFFF], np.uint32).tobytes(), usage=usage)
    buf_kept = dev.create_buffer(size=KEEP * 4, usage=usage)
    buf_params = dev.create_buffer_with_data(
        data=np.array([count, split, groups * 64, KEEP], np.uint32).tobytes(),
        usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
    pipe = dev.create_compute_pipeline(
        layout="auto", compute={"module": dev.create_shader_module(code=_source()), "entry_point": "main"})
    group = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
        {"binding": i, "resource": {"buffer": b}} for i, b in enumerate([buf_pairs, buf_result, buf_kept, buf_params])])
    encoder = dev.create_command_encoder()
    cpass = encoder.begin_compute_pass()
    cpass.set_pipeline(pipe)
    cpass.set_bind_group(0, group)
    cpass.dispatch_workgroups(groups)
    cpass.end()
    dev.queue.submit([encoder.finish()])
    result = np.frombuffer(dev.queue.read_buffer(buf_result), np.uint32)
    kept = np.frombuffer(dev.queue.read_buffer(buf_kept), np.int32)
    return int(result[0]), int(result[1]), kept


def _reference(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """round(x / s) half to even, saturated at +-4096, NaN 0 (float64: exact for these)."""
    with np.errstate(all="ignore"):
        q = x.astype(np.float64) / s.astype(np.float64)
    q = np.nan_to_num(q, nan=0.0, posinf=4096.0, neginf=-4096.0)
    return np.clip(np.rint(q), -4096, 4096).astype(np.int32)


def test_fast_path_same_bits_as_long_division(device):
    rng = np.random.default_rng(47)
    fx, fs = _f32_pairs(rng)
    ix, is_ = _i32_pairs(rng)
    # the numpy-checked head: quotients float64 rounds exactly enough (normal x and s, near halves)
    head = rng.permutation(len(fx))[:KEEP]
    fx = np.concatenate([fx[head], np.delete(fx, head)])
    fs = np.concatenate([fs[head], np.delete(fs, head)])
    pairs = np.stack([np.concatenate([fx, ix]), np.concatenate([fs, is_])], axis=1).astype(np.uint32)
    assert len(pairs) > 2_500_000
    bad, first, kept = _run(device, np.ascontiguousarray(pairs), len(fx))
    detail = ""
    if bad:
        x, s = pairs[first]
        detail = f": first at {first}, x bits {x:#010x}, s bits {s:#010x}"
    assert bad == 0, f"{bad} mismatches between quantize's fast path and the long division{detail}"
    # the kept results against float64 (x / s in float64 is within 2^-52 relative: it can only
    # misround a quotient within that of a half, so those few are left out)
    x = fx[:KEEP].view(np.float32)
    s = fs[:KEEP].view(np.float32)
    with np.errstate(all="ignore"):
        q = np.abs(x.astype(np.float64) / s.astype(np.float64))
        frac = q - np.floor(q)
    clear = ~np.isfinite(q) | (np.abs(frac - 0.5) > 1e-12) | (q > 5000)
    clear &= ~(np.isinf(x) & np.isinf(s))
    want = _reference(x, s)
    assert clear.sum() > KEEP // 2
    mismatch = np.flatnonzero(clear & (kept != want))
    i = mismatch[0] if mismatch.size else 0
    assert mismatch.size == 0, (f"{mismatch.size} results differ from float64's rounding, e.g. "
                                f"x={x[i]!r} s={s[i]!r}: {kept[i]} != {want[i]}")
