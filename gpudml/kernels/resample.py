"""The resampling family: each output element of a tensor resampled along some of its axes
(DML_RESAMPLE, RESAMPLE1, RESAMPLE2, RESAMPLE3, UPSAMPLE_2D and gpudml's cubic mode:
gpudml/ops/resample.py) reads the input elements around the point its coordinates map to.

A description arrives as a `Resampling`: the tensors with their own strides (0 broadcasts),
per axis the scale and the pixel offsets, the mode, nearest's rounding and the filter's
attributes. On axis d, output coordinate o maps to the input coordinate

    x = (o - output_offset[d]) / scale[d] - input_offset[d]

(DirectML's execution provider's coordinate rule), computed in float32 and *snapped*: an x
within 2^-18 of its magnitude (max(1, |(o - output_offset) / scale|, |input_offset|)) of an
integer is that integer, so that a coordinate the exact arithmetic puts on an integer (a
half-pixel tie, a whole-pixel position) is one on every adapter whatever its division's
rounding (WGSL allows 2.5 ULP), and in the float64 reference. The taps (shaders/lib/resample.wgsl.j2):

- nearest: one input element, index floor(x) (rounding "floor": DML_AXIS_DIRECTION_DECREASING),
  ceil(x) ("ceil": INCREASING) or floor(x + 0.5) ("half_up": RESAMPLE, RESAMPLE1 and
  UPSAMPLE_2D, which DirectML's execution provider treats as ONNX's round_prefer_ceil), clamped
  into [0, n - 1]. Its value is the element's own bits: pure data movement, any type.
- linear: x0 = floor(x), r = x - x0; taps x0 + k for k in [k_lo, k_lo + taps) with weight
  filter((k - r) * s), filter(t) = max(0, 1 - |t|), s = 1: k in {0, 1}, weights 1 - r and r.
  Antialiased, on an axis where 1 / scale > 2 (RESAMPLE3's page: "1/Scales > 2"), the filter
  is widened by 1 / scale: s = scale, k_lo = floor(-1 / s) + 1, 2 - 2 k_lo taps (ONNX Resize's
  antialias filter), and antialiased weights are divided by their sum.
- cubic (gpudml's extension, ONNX Resize's cubic): Keys' kernel with coefficient a,
  k in [-1, 2]; antialiased, ONNX's rule: widened wherever scale < 1 (k_lo = floor(-2 / s) +
  1). exclude_outside gives taps outside the input weight 0 and divides by the sum (linear too).
- antialias_scales (gpudml's extension of RESAMPLE3, ONNX Resize's antialias): per axis the
  factor the filter is stretched by, independent of the coordinate scale: antialiased, an
  axis' LINEAR or CUBIC filter is widened wherever its entry s < 1 (ONNX's rule, also where
  1/2 <= s < 1, DirectML's linear is not), s in place of the scale above. Absent (None, the
  default), DirectML's rule. Only uniforms change (k_lo, taps, filter_scales): the shaders are
  the ones a widened filter compiles.
Tap indices outside the input are clamped into it (edge), as DirectML does. The weights are
float32, the sum float32 in tap order (row-major over the resampled axes), float16 read
exactly and rounded once on the store; INT8 and UINT8 results are rounded to the nearest
integer (halves to even) and saturated.

Strategies:

- `integer` (CPU-class, first wherever eligible: _integer): an integer scale k of the
  innermost axis with the default pixel offsets, rows of whole 16-byte blocks, nearest of any
  type (k up to 16) and linear 2x, 4x, 8x without normalizing. An invocation loads 8 input
  blocks of a row (of each combination of the outer resampled axes' taps, linear) and the
  elements either side, and stores the 8k output blocks they determine: nearest's index
  offsets and linear's weights along the innermost axis are compile-time constants
  (integer_parts; k a power of two makes linear's coordinates and weights exact, so they
  are the float32 weights `rows` computes, summed in the same order: bit for bit `rows`).
  Measured on lavapipe (2 shared cores, a loaded host), 2x float32, 2026-11-29: `gpudml
  bench --quick --only W30,W31,W32,W33`, paired ratios to the copy kernel, medians of 5
  runs each, `rows` -> `integer`: nearest [1,64,128,128] 0.30x -> 1.16x, [8,256,64,64]
  0.29x -> 1.10x; linear 0.14x -> 0.70x, 0.13x -> 0.73x (the slowest of the 5 runs: 0.82x,
  0.89x, 0.58x, 0.58x; GPU ms medians 8.2 -> 2.9, 66 -> 37, 18.5 -> 7.4, 182 -> 37). 8 blocks
  per invocation (INTEGER_BLOCKS) over 4 and 16; decoding the row's coordinates over the
  outer axes only took 4-13% off (gpudml lab, interleaved A/B). FLOAT16 2x of
  [1,64,128,128] (gpudml lab, medians of 3 runs, GPU ms and x copy): nearest `rows` 13.5
  (0.41x) -> `integer` 2.9 (1.87x), linear 37.9 (0.16x) -> 7.6 (0.76x). FLOAT16 linear
  (_half_lines) is separable: each input word's two elements converted once
  (unpack2x16float), per input element the sum over the outer axes' taps, then per output
  the two taps of that sum along the row; where the axis outside the row is 2x with the
  default offsets (_pair_axis) an invocation computes two output rows from the one pair of
  input rows they share; an output word's two sums are rounded together in integer
  operations (f16x2_bits in resample.wgsl.j2: the bits f32_to_f16_bits gives; llvmpipe's
  pack2x16float is slow). Its sums take another order than `rows`' (within the documented
  precision, not bit for bit). CPU time of one lavapipe thread (LP_NUM_THREADS=0: steady on
  a loaded host, where GPU timestamps swing 2x), medians of 7, 2026-11-29: [1,64,128,128]
  8.0-8.2 -> 6.4-6.6 ms, [8,256,64,64] 61 -> 48 ms; timing-only variants of the new kernel:
  without the rounding 4.7 ms, without the sums 4.3 ms (llvmpipe's float16 rounding and
  the float32 sums each cost about as much as the loads and stores). No gain measured
  (same method): the rounding in fewer operations (signed compares, the subnormal through a
  float add: 7.3 against 6.8 ms), a fast path for normal results with a recheck (7.0 without
  the recheck, 9.1 with it), fma (no better), quantizeToF16 (14 ms), 4 or 8 blocks per
  invocation (6.7, 8.0 against 6.4 ms for 2: HALF_BLOCKS), the statements in the stores'
  order (the same); naga rejects bitcast<u32>(vec2<f16>), and GL has no f16. Then (a
  profile of the JIT code: 64% of the kernel on lavapipe's per-lane store loops, where LLVM's
  InstCombine had moved f16x2_bits' last integer operations, run per lane in scalar code)
  f16x2_bits ends in a select, which InstCombine never scalarizes, and the blocks are stored
  as two u64 where the adapter has shader-int64 (_wide: the loads too): the same bits,
  [1,64,128,128] 6.3-6.6 -> 4.1-4.3 ms, [8,256,64,64] 48-50 -> 31.4-31.7 ms, GL 6.6-7.4 ->
  4.7-5.2 ms (float16 now cheaper per element than float32's 7.8 ms; 0.53-0.65x the copy
  kernel by CPU time). The bench rows are in docs/performance.md.
- nearest: the movement family's (`stretches`, `elements`, `strided`, `coalesced`:
  kernels/movement/family.py) with the index rule as a chain stage (shaders/resample_nearest.wgsl.j2),
  which a graph also fuses into its data-movement chains; and this family's own two below
  (the same bits), which carry the epilogue.
- `rows` (CPU-class): an invocation computes a run of up to RUN consecutive outputs along the
  innermost axis (their outer coordinates decoded once).
- `points` (GPU-class): one invocation per output element.

Both own kernels compute the outer axes' part once per run (row_base: the offset, the
outer resampled axes' taps and weights) and step the output offset along the row; where no
filter is widened they loop over a compile-time count of taps (2 linear, 4 cubic), which the
compilers unroll, each axis' weights and offsets kept in arrays. Measured on lavapipe
(gpudml lab, interleaved with the copy kernel, 2 shared cores, a loaded host: ratios to the
copy kernel's bandwidth), 2x of [1, 64, 128, 128] float32: linear `rows` 0.06x -> 0.10x
(row_base, unrolled taps) -> 0.13x (weights per run, stepped offsets); nearest `rows` 0.13x ->
0.17x -> 0.28x -> 0.37-0.57x with 16-byte stores (VEC_OUT; `elements` 0.19x in the same
runs), ahead of the movement strategies (strategies_for). Outputs per run (option `run`,
nearest, same shape): 4: 0.16x, 16: 0.57x, 64: 0.55x. The innermost axis' coordinate
multiplies by the scale's reciprocal, computed once per run (lib/resample.wgsl.j2's
coord_inv; the snapping absorbs its 2 ULP): linear 0.12x -> 0.17x (interleaved A/B of the
two templates), nearest unchanged. docs/performance.md has the bench rows.

The family has the epilogue hook (section 7 of docs/adding-an-operator.md): `rows` and
`points` store element by element, so Resize -> Add -> Relu in a graph is one kernel; and the
prologue: they read their input through a chain or fused element-wise nodes, so Add -> Resize
(linear) is one kernel too.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, replace

from ..errors import InternalError, InvalidArgumentError, UnsupportedError
from ..tensor_desc import TensorDesc
from ..types import DataType
from . import elementwise
from .base import LOOP_BUDGET, KernelFamily
from .builder import Dispatch, KernelPlan, f32_bits, input_buffer, int64_mode, output_buffer, parts, unit_access
from .chain import Chain, StageRule, chain
from .epilogue import attach, check
from .movement import family as movement

OWN = ("rows", "points")
#: The integer scale's own strategy (_integer): not in OWN (no prologue, no epilogue).
INTEGER = "integer"
STRATEGIES = (INTEGER,) + OWN + movement.STRATEGIES
OPTIONS = ("run",) + movement.OPTIONS
MODES = ("nearest", "linear", "cubic")
ROUNDINGS = ("floor", "ceil", "half_up")
#: `rows`: outputs per invocation (coordinates of the outer axes decoded once per run).
RUN = 16
WORKGROUP_SIZE = 64
#: `rows` stores 16-byte blocks where the output allows (_vec_out). llvmpipe stores each
#: lane's 16 bytes about as fast as its 4 (docs/performance.md).
VEC_OUT = True
#: Loop iterations an invocation spends besides its taps (the run loop, set-up).
_OVERHEAD = 64
#: `integer`: 16-byte input blocks per invocation (fewer where the row or the unrolled code
#: asks). gpudml lab, lavapipe, float32 2x, medians of 6 runs (5 reps each) of GPU ms, 4 -> 8
#: blocks: nearest [1,64,128,128] 6.40 -> 5.66, [8,256,64,64] 49.4 -> 45.7; linear 8.94 ->
#: 8.24, 69.8 -> 63.3; 16 blocks (nearest, 5 runs): 5.55 -> 6.46, 42.5 -> 48.5 ms.
INTEGER_BLOCKS = 8
#: `integer`, FLOAT16 linear (_half_lines): 16-byte input blocks per invocation (and row).
#: CPU time of [1,64,128,128] 2x with one lavapipe thread (LP_NUM_THREADS=0), medians of 7,
#: pairs of output rows: 2 blocks 6.4-6.5 ms, 4: 6.7-6.8, 8: 7.9-8.1.
HALF_BLOCKS = 2
#: `integer`: outputs of one invocation times the taps each sums (the unrolled code's size).
_INTEGER_TERMS = 256



def f32(value: float) -> float:
    """value rounded to float32 (DirectML's FLOAT fields)."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


@dataclass(frozen=True)
class Resampling:
    """A resampling description as the kernels see it (module docstring)."""

    op: str
    mode: str
    rounding: str
    input: TensorDesc
    output: TensorDesc
    scales: tuple[float, ...]
    input_offsets: tuple[float, ...]
    output_offsets: tuple[float, ...]
    antialiased: bool = False
    cubic_a: float = -0.75
    exclude_outside: bool = False
    antialias_scales: tuple[float, ...] | None = None  # gpudml's extension (module docstring)

    @property
    def axes(self) -> tuple[int, ...]:
        """The axes that resample: all but those that map o to o (scale 1, offsets that cancel,
        one size) with a filter that is not widened (antialias_scales' entry below 1 blurs)."""
        return tuple(d for d in range(self.input.rank) if not (
            self.scales[d] == 1.0 and self.input_offsets[d] == -self.output_offsets[d]
            and self.input.sizes[d] == self.output.sizes[d] and not self.widened(d)))

    def taps(self, d: int) -> tuple[int, int]:
        """(k_lo, count) of axis d's taps (module docstring)."""
        return taps(self.mode, self.antialiased, self.scales[d], self.stretch(d))

    def stretch(self, d: int) -> float | None:
        """Axis d's antialias_scales entry (gpudml's extension), None without it."""
        return None if self.antialias_scales is None else self.antialias_scales[d]

    def widened(self, d: int) -> bool:
        return widened(self.mode, self.antialiased, self.scales[d], self.stretch(d))

    def filter_scale(self, d: int) -> float:
        return filter_scale(self.mode, self.antialiased, self.scales[d], self.stretch(d))


def widened(mode: str, antialiased: bool, scale: float, stretch: float | None = None) -> bool:
    """Whether an axis' filter is widened: antialiased LINEAR where 1 / scale > 2 (RESAMPLE3's
    page: "1/Scales > 2"), antialiased CUBIC (ONNX's) where scale < 1; with gpudml's
    antialias_scales (`stretch`, the axis' entry), LINEAR and CUBIC wherever stretch < 1
    (ONNX Resize's rule, whatever the coordinate scale)."""
    if stretch is not None:
        return antialiased and mode != "nearest" and f32(stretch) < 1.0
    return antialiased and mode != "nearest" and f32(scale) < (0.5 if mode == "linear" else 1.0)


def filter_scale(mode: str, antialiased: bool, scale: float, stretch: float | None = None) -> float:
    """The factor distances are multiplied by before the filter where widened (the scale, or
    antialias_scales' entry where given), else 1."""
    if not widened(mode, antialiased, scale, stretch):
        return 1.0
    return f32(scale if stretch is None else stretch)


def taps(mode: str, antialiased: bool, scale: float, stretch: float | None = None) -> tuple[int, int]:
    """(k_lo, count): the taps x0 + k, k in [k_lo, k_lo + count), of one axis."""
    if mode == "nearest":
        return 0, 1
    support = 1.0 if mode == "linear" else 2.0
    if widened(mode, antialiased, scale, stretch):
        k_lo = math.floor(-support / filter_scale(mode, antialiased, scale, stretch)) + 1
        return k_lo, 2 - 2 * k_lo
    return (0, 2) if mode == "linear" else (-1, 4)


def tap_count(p: Resampling) -> int:
    """Loop iterations per output: the taps of every resampled axis combined, plus each
    axis' normalizing pass."""
    counts = [p.taps(d)[1] for d in p.axes]
    return math.prod(counts) + (sum(counts) if _normalized(p) else 0)


def _normalized(p: Resampling) -> bool:
    return p.mode != "nearest" and (p.antialiased or p.exclude_outside)


def _kind(p: Resampling) -> str:
    dt = p.input.data_type
    return "float" if dt.is_float else ("sint" if dt.is_signed else "uint")


def _max_run(p: Resampling) -> int:
    return max(0, (LOOP_BUDGET - _OVERHEAD) // (tap_count(p) + 1))


def _run(p: Resampling, requested) -> int:
    if requested is None:
        return max(1, min(RUN, _max_run(p), p.output.sizes[-1]))
    if isinstance(requested, bool) or not isinstance(requested, int) or not 1 <= requested <= 64:
        raise InvalidArgumentError(f"{p.op}: option run = {requested!r} must be an integer in [1, 64]")
    if requested > _max_run(p):
        raise UnsupportedError(f"{p.op}: option run = {requested}: {requested} outputs of {tap_count(p)} taps "
                               f"pass one invocation's loop budget ({LOOP_BUDGET})")
    return requested


def strategies_for(p: Resampling, caps, run=None, block=None) -> tuple[str, ...]:
    """`rows` and `points` (nearest: and the movement family's strategies, after them on
    software adapters and without caps, before them on GPUs), as long as one output's taps
    fit the loop budget (`rows` first on software adapters and without caps, `points` first
    on GPUs); `integer` where eligible (_integer): first on software adapters and without
    caps (the module docstring has the measurements), last on GPUs (not measured there)."""
    movement.check_block(block)
    if _max_run(p) < 1:
        stretch = "" if p.antialias_scales is None else f", antialias_scales {list(p.antialias_scales)}"
        raise UnsupportedError(
            f"{p.op}: one output reads {tap_count(p)} taps (scales {list(p.scales)}{stretch}, antialiased), past one "
            f"invocation's loop budget ({LOOP_BUDGET}); downsample in several steps of a larger scale")
    own = ["points"]
    whole = [INTEGER] if _integer(p) else []
    try:
        _run(p, run)
        own.insert(0, "rows")
    except UnsupportedError:
        pass
    gpu = caps is not None and not caps.is_software
    if gpu:
        own.sort(key=lambda s: s != "points")
    moves = movement.strategies_for(p.output, caps) if p.mode == "nearest" else ()
    # Nearest on a CPU adapter: `rows` first. gpudml lab, lavapipe, 2x of [1, 64, 128, 128]
    # float32, ratios to the copy kernel (interleaved, 7 reps, a loaded host): rows 0.28x,
    # elements 0.25x, stretches 0.19x (a stretch of nearest is only as long as the scale, and
    # each maps through the coordinate's division). GPUs: the movement family's `coalesced` first.
    return tuple(moves) + tuple(own) + tuple(whole) if gpu else tuple(whole) + tuple(own) + tuple(moves)


# ---------------------------------------------------------------------------- `integer`
def _integer(p: Resampling) -> int:
    """The innermost axis' integer scale k where `integer` runs `p` bit-identically to `rows`,
    else 0: the innermost axis resampled by k >= 2 (nearest: up to 16; linear: 2, 4 or 8,
    whose coordinates and weights are exact dyadic fractions) with the default pixel
    offsets (0.5, -0.5) and k times the input's size; rows of whole 16-byte blocks (a packed
    output; an input whose innermost stride is 1 and whose other strides are whole blocks, 0
    too: broadcast); 8-32-bit elements; linear without normalizing (no antialiasing, no
    exclude_outside), every axis of 2 taps; rows of at most 2^16 outputs (where the
    coordinate's snapping, 2^-18 of its magnitude, cannot reach a position that is no tie:
    1 / (2k) from an integer); one block's outputs times their taps at most 4 *
    _INTEGER_TERMS (the unrolled code: not linear 8x of 8-bit elements on 4 axes). The
    kernel has no loop but the outer axes' 2 taps (far within LOOP_BUDGET)."""
    inner = p.input.rank - 1
    size = p.input.data_type.size
    if p.input.rank < 1 or inner not in p.axes or p.input.data_type != p.output.data_type or size > 4:
        return 0
    k, n = f32(p.scales[inner]), p.input.sizes[inner]
    if not (k >= 2 and k == int(k)) or (f32(p.input_offsets[inner]), f32(p.output_offsets[inner])) != (0.5, -0.5):
        return 0
    k = int(k)
    if p.mode == "nearest":
        fits = k <= 16
    elif p.mode == "linear":
        fits = k in (2, 4, 8) and not _normalized(p) and _fixed_taps(p) == 2
    else:
        fits = False
    per = 16 // size
    strides = p.input.effective_strides
    in_blocks = strides[inner] == 1 and all(s % per == 0 for s, m in zip(strides[:inner], p.input.sizes) if m > 1)
    whole = (in_blocks and p.output.is_packed and n % per == 0 and p.output.sizes[inner] == k * n
             and k * n <= 1 << 16)
    terms = 1 if p.mode == "nearest" else 2 ** len(p.axes)
    small = per * k * terms <= 4 * _INTEGER_TERMS  # one block's unrolled code (_integer_blocks)
    return k if fits and whole and small else 0


def _integer_blocks(p: Resampling, k: int) -> int:
    """`integer`: input blocks per invocation: INTEGER_BLOCKS or fewer, dividing the row,
    within _INTEGER_TERMS."""
    if _half(p):  # HALF_BLOCKS, or 1 where the row is not a multiple
        return HALF_BLOCKS if p.input.sizes[-1] % (8 * HALF_BLOCKS) == 0 else 1
    terms = 1 if p.mode == "nearest" else 2 ** len(p.axes)
    per = 16 // p.input.data_type.size
    blocks = INTEGER_BLOCKS
    while blocks > 1 and (p.input.sizes[-1] % (per * blocks) or per * blocks * k * terms > _INTEGER_TERMS):
        blocks //= 2
    return blocks


def _half(p: Resampling) -> bool:
    """FLOAT16 linear (`integer`): separable sums, float16 words converted and rounded in
    pairs (integer_parts)."""
    return p.mode == "linear" and p.input.data_type == DataType.FLOAT16


def _pair_axis(p: Resampling) -> int:
    """`integer`, FLOAT16 linear: the axis just outside the innermost one where an invocation
    computes two output rows, 2i - 1 and 2i, from the same two input rows i - 1 and i
    (clamped; weights 3/4 and 1/4, 1/4 and 3/4): resampled by exactly 2 with the default
    pixel offsets and twice the input's size. -1 where not."""
    a = p.input.rank - 2
    if not _half(p) or a < 0 or a not in p.axes:
        return -1
    if (f32(p.scales[a]), f32(p.input_offsets[a]), f32(p.output_offsets[a])) != (2.0, 0.5, -0.5):
        return -1
    return a if p.output.sizes[a] == 2 * p.input.sizes[a] else -1


def _wide(p: Resampling, caps) -> bool:
    """`integer`, FLOAT16 linear: its 16-byte input and output blocks loaded and stored as two
    u64 (the builder's `blocks64` access) where the builder gives both tensors that access
    (builder.unit_access: shader-int64): lavapipe loads or stores a lane's block in one step
    per component, 2 in place of 4 (CPU time, the stores: W37 4.6 -> 4.4 ms, W39 34.6 ->
    32.4 ms; the loads then: 4.4 -> 4.3, 32.6 -> 31.7 ms; docs/performance.md); GL (no
    64-bit types) keeps vec4<u32> blocks. The same bits."""
    return _half(p) and unit_access(caps, ("blocks64", "blocks"), p.input.buffer_bytes,
                                    p.output.buffer_bytes) == "blocks64"


def _integer_plan(p: Resampling, caps) -> KernelPlan:
    """`integer` (_integer): an invocation loads `per` consecutive input elements of a row in
    16-byte blocks and their two neighbours (for each combination of the outer resampled axes'
    taps, linear) and stores the k * per outputs they determine in 16-byte blocks; weights
    and nearest's index offsets are compile-time constants (integer_parts)."""
    k = _integer(p)
    per = 16 // p.input.data_type.size * _integer_blocks(p, k)
    n = p.input.sizes[-1]
    params = _params(p, caps, 1)
    pair = _pair_axis(p)
    wide = _wide(p, caps)
    params.update(vec_out=False, through=(), through_rank=0, through_fetch=None, integer=k, integer_per=per,
                  integer_pair=pair, integer_wide=wide)
    k_lo, counts, aa = zip(*((*p.taps(d), f32_bits(p.filter_scale(d)))
                             for d in range(p.input.rank)))
    uniforms = {"out_sizes": p.output.sizes, "out_strides": p.output.effective_strides,
                "in_strides": p.input.effective_strides, **_axis_uniforms(p),
                "k_lo": tuple(k_lo), "taps": tuple(counts), "filter_scales": tuple(aa),
                "rows": 0, "runs_per_row": n // per, "cubic_a": f32_bits(p.cubic_a)}
    bits = params["bits"]
    blocks = (output_buffer(0, "output_wide", bits, "blocks64") if wide
              else output_buffer(0, "output_vec", bits, "blocks"))
    loads = input_buffer(0, "input_wide", "blocks64") if wide else input_buffer(0, "input_blocks", "blocks")
    buffers = (output_buffer(0, "output", bits, "stores"), input_buffer(0, "input"), blocks, loads)
    rows = p.output.element_count // p.output.sizes[-1]
    if pair >= 0:  # pairs of output rows: p.input.sizes[pair] + 1 per p.output.sizes[pair] rows
        rows = rows // p.output.sizes[pair] * (p.input.sizes[pair] + 1)
    uniforms["rows"] = rows
    return KernelPlan((Dispatch("resample.wgsl.j2", params, buffers, uniforms, rows * (n // per), WORKGROUP_SIZE),))


def _integer_pattern(mode: str, rounding: str, k: int) -> tuple[tuple[int, float, float], ...]:
    """Per output j of the k an input element i gives (o = k i + j, x = i + (2j + 1 - k) / 2k
    exactly): (d, w0, w1): nearest reads element i + d (rounding's, d in {-1, 0, 1}), linear
    taps i + d and i + d + 1 with weights w0 and w1 (the float32 weights `rows` computes:
    exact, k a power of two)."""
    from fractions import Fraction
    out = []
    for j in range(k):
        t = Fraction(2 * j + 1 - k, 2 * k)
        if mode == "nearest":
            d = {"floor": math.floor(t), "ceil": math.ceil(t), "half_up": math.floor(t + Fraction(1, 2))}[rounding]
            out.append((d, 0.0, 0.0))
        else:
            d = math.floor(t)
            r = t - d
            out.append((d, float(max(0, 1 - abs(0 - r))), float(max(0, 1 - abs(1 - r)))))
    return tuple(out)


@parts("resample.wgsl.j2")
def integer_parts(params: dict) -> dict[str, str]:
    """`integer`'s kernel body (resample.wgsl.j2's `code.integer`): the loads of the run's
    input blocks and neighbours, each output's value, the 16-byte stores."""
    k = params.get("integer", 0)
    if not k:
        return {}
    per, mode, axes = params["integer_per"], params["mode"], params["axes"]
    pattern = _integer_pattern(mode, params["rounding"], k)
    outer = range(len(axes) - 1) if mode != "nearest" else range(0)
    combos = [()]
    for _ in outer:
        combos = [c + (t,) for c in combos for t in range(2)]
    bits = params["bits"]
    pack = 32 // bits  # elements per word
    lines = ["    let lft = max(first, 1u) - 1u;", f"    let rgt = min(first + {per}u, n - 1u);"]
    nearest = mode == "nearest"
    if not nearest and bits == 16 and params["kind"] == "float":
        return {"integer": "\n".join(lines + _half_lines(params, pattern, per))}
    edge = "load_bits" if nearest else "load_x"
    for c, combo in enumerate(combos):
        off = " + ".join(["base"] + [f"ax_off{j}[{t}]" for j, t in zip(outer, combo)])
        lines.append(f"    let off{c} = {off};")
        if combo:
            lines.append(f"    let wc{c} = " + " * ".join(f"ax_w{j}[{t}]" for j, t in zip(outer, combo)) + ";")
        lines.append(f"    let l{c} = {edge}(off{c} + lft);")
        lines.append(f"    let r{c} = {edge}(off{c} + rgt);")
        for blk in range(per // (4 * pack)):
            lines.append(f"    let b{c}_{blk} = input_blocks_at((off{c} + first) / {4 * pack}u + {blk}u);")

    def elem(c: int, i: int) -> str:
        """Input element first + i of combination c: its bits (nearest), its value (linear)."""
        if i < 0 or i >= per:
            value = f"{'l' if i < 0 else 'r'}{c}"
            return value if nearest else f"f32({value})"
        word = f"b{c}_{i // (4 * pack)}.{'xyzw'[i // pack % 4]}"
        if pack > 1:
            word = f"extractBits({word}, {i % pack * bits}u, {bits}u)"
        return word if nearest else f"f32(load_x_value({word}))"

    values = []
    for i in range(per):
        for d, w0, w1 in pattern:
            if nearest:
                values.append(elem(0, i + d))
                continue
            terms = []
            for c, combo in enumerate(combos):
                for t, w in ((0, w0), (1, w1)):
                    weight = f"(wc{c} * {w!r})" if combo else repr(w)
                    terms.append(f"{weight} * {elem(c, i + d + t)}")
            acc = "(" * (len(terms) - 1) + "0.0 + " + ") + ".join(terms)
            values.append(f"finish({acc})")
    words = [" | ".join(f"({v}{f' << {e * bits}u' if e else ''})" if pack > 1 else v
                        for e, v in enumerate(values[q:q + pack])) for q in range(0, len(values), pack)]
    for q in range(0, len(words), 4):
        lines.append(f"    output_vec_set(at / {4 * pack}u + {q // 4}u, vec4<u32>({', '.join(words[q:q + 4])}));")
    return {"integer": "\n".join(lines)}


def _half_lines(params: dict, pattern, per: int) -> list[str]:
    """FLOAT16 linear `integer` (after the run's lft, rgt): separable. Each input word's two
    elements converted at once (unpack2x16float: exact); per input element the weighted sum
    over the outer resampled axes' taps (v: float32; a zero sum -0 where every tap is -0, as
    `rows` gives), then each output the two taps of v along the row (the weights of
    `pattern`); each output word's two values rounded at once (f16x2_bits: f32_to_f16_bits
    per lane). With a pair axis (_pair_axis): the invocation's two output rows 2i - 1 and 2i
    from input rows i - 1 and i of that axis, clamped into it: at either end the two input
    rows are one, so are the two output rows' values (3/4 x + 1/4 x = x exactly, x a float16),
    and the row that does not exist is stored over the one that does (no branch).
    The statements come in the order of the stores, each just before its first use (what
    the compilers keep live stays small: 16-byte block by block)."""
    axes, pair, wide = params["axes"], params["integer_pair"], params.get("integer_wide", False)
    outer = range(len(axes) - (2 if pair >= 0 else 1))
    combos = [()]
    for _ in outer:
        combos = [c + (t,) for c in combos for t in range(2)]
    rows = ("a", "b") if pair >= 0 else ("",)
    decls: dict[str, tuple[str, tuple[str, ...]]] = {}
    if pair >= 0:
        stride = f"uni.in_strides[{pair // 4}][{pair % 4}]"
        decls["pa"] = (f"u32(max(i32(pp) - 1, 0)) * {stride}", ())
        decls["pb"] = (f"min(pp, pn - 1u) * {stride}", ())
        decls["at_a"] = ("select(at - out_step, at, pp == 0u)", ())
        decls["at_b"] = ("select(at, at - out_step, pp == pn)", ())
    for c, combo in enumerate(combos):
        off = " + ".join(["base"] + [f"ax_off{j}[{t}]" for j, t in zip(outer, combo)])
        if combo:
            decls[f"wc{c}"] = (" * ".join(f"ax_w{j}[{t}]" for j, t in zip(outer, combo)), ())
        for r in rows:
            name = f"{c}{r}"
            decls[f"off{name}"] = (f"{off}{f' + p{r}' if r else ''}", (f"p{r}",) if r else ())
            decls[f"l{name}"] = (f"load_x(off{name} + lft)", (f"off{name}",))
            decls[f"r{name}"] = (f"load_x(off{name} + rgt)", (f"off{name}",))
            for blk in range(per // 8):
                load = "input_wide_at" if wide else "input_blocks_at"
                decls[f"b{name}_{blk}"] = (f"{load}((off{name} + first) / 8u + {blk}u)", (f"off{name}",))
                for k, x in enumerate("xyzw"):
                    word = f"b{name}_{blk}.{x}"
                    if wide:  # (_wide) word k of the block: a half of u64 k // 2, the low one first
                        word = f"u32(b{name}_{blk}.{'xy'[k // 2]}{' >> 32u' if k % 2 else ''})"
                    decls[f"h{name}_{blk}{x}"] = (f"unpack2x16float({word})", (f"b{name}_{blk}",))

    def elem(name: str, i: int) -> tuple[str, str]:
        """Input element i of row `name`: (its value, the statement it needs)."""
        if i < 0 or i >= per:
            sym = f"{'l' if i < 0 else 'r'}{name}"
            return sym, sym
        sym = f"h{name}_{i // 8}{'xyzw'[i // 2 % 4]}"
        return f"{sym}.{'xy'[i % 2]}", sym

    # the output rows: (suffix, weights of the input rows)
    outs = [("a", (0.75, 0.25)), ("b", (0.25, 0.75))] if pair >= 0 else [("", None)]
    for o, rw in outs:
        for i in range(-1, per + 1):
            terms, deps = [], []
            for c, combo in enumerate(combos):
                if rw is None:
                    t, dep = elem(f"{c}", i)
                    deps.append(dep)
                else:
                    (ta, da), (tb, db) = elem(f"{c}a", i), elem(f"{c}b", i)
                    t = f"({rw[0]!r} * {ta} + {rw[1]!r} * {tb})"
                    deps += [da, db]
                terms.append(f"wc{c} * {t}" if combo else t)
                deps += [f"wc{c}"] if combo else []
            decls[f"v{o}{i + 1}"] = (" + ".join(terms), tuple(deps))
    lines, done = [], set()

    def need(sym: str) -> None:
        if sym in done:
            return
        done.add(sym)
        text, deps = decls[sym]
        for dep in deps:
            need(dep)
        lines.append(f"    let {sym} = {text};")

    for q in range(len(pattern) * per // 8):
        for o, _ in outs:
            values = []
            for e in range(8 * q, 8 * q + 8):
                i, (d, w0, w1) = divmod(e, len(pattern))[0], pattern[e % len(pattern)]
                need(f"v{o}{i + d + 1}")
                need(f"v{o}{i + d + 2}")
                values.append(f"{w0!r} * v{o}{i + d + 1} + {w1!r} * v{o}{i + d + 2}")
            at = "at"
            if o:
                need(f"at_{o}")
                at = f"at_{o}"
            words = [f"f16x2_bits(vec2<f32>({values[k]}, {values[k + 1]}))" for k in range(0, 8, 2)]
            if wide:  # (_wide) two u64 of two words each, low word first
                pairs = [f"u64({words[k]}) | (u64({words[k + 1]}) << 32u)" for k in (0, 2)]
                lines.append(f"    output_wide_set({at} / 8u + {q}u, vec2<u64>({', '.join(pairs)}));")
            else:
                lines.append(f"    output_vec_set({at} / 8u + {q}u, vec4<u32>({', '.join(words)}));")
    return lines


# ---------------------------------------------------------------------------- nearest: the chain stage
def stage(p: Resampling) -> StageRule | None:
    """Nearest: the index rule over the desc's own axes, as a stage of a chain
    (shaders/resample_nearest.wgsl.j2); the interpolating modes are no data movement."""
    if p.mode != "nearest":
        return None
    return StageRule("resample_nearest.wgsl.j2", params={"axes": p.axes, "rounding": p.rounding},
                     uniforms=_axis_uniforms(p))


def _axis_uniforms(p: Resampling) -> dict:
    return {"rs_in_sizes": p.input.sizes, "rs_scales": tuple(f32_bits(s) for s in p.scales),
            "rs_in_offs": tuple(f32_bits(v) for v in p.input_offsets),
            "rs_out_offs": tuple(f32_bits(v) for v in p.output_offsets)}


# ---------------------------------------------------------------------------- plans
def _params(p: Resampling, caps, run: int) -> dict:
    bits = p.input.data_type.size * 8
    native64 = caps is not None and caps.has("shader-int64") and bits == 64
    return {"rank": p.input.rank, "axes": p.axes, "mode": p.mode, "rounding": p.rounding, "kind": _kind(p),
            "bits": bits, "native64": native64, "normalized": _normalized(p), "antialiased": p.antialiased,
            "exclude_outside": p.exclude_outside, "run": run, "fixed_taps": _fixed_taps(p),
            "integer": 0, "integer_per": 0, "integer_pair": -1}


def _fixed_taps(p: Resampling) -> int:
    """The taps of every resampled axis where no filter is widened (LINEAR 2, CUBIC 4): a
    compile-time loop count, which the compilers unroll; 0 where an axis' count is its own."""
    counts = {p.taps(d)[1] for d in p.axes}
    return counts.pop() if len(counts) == 1 and not any(
        p.widened(d) for d in p.axes) else 0


def _vec_out(p: Resampling, run: int) -> bool:
    """Whether `rows` stores 16-byte blocks: a packed output of 8-32-bit elements whose
    rows are whole blocks, runs of whole blocks (VEC_OUT)."""
    out = p.output
    per = 16 // out.data_type.size
    return VEC_OUT and out.data_type.size <= 4 and out.is_packed and out.sizes[-1] % per == 0 and run % per == 0


def _own_plan(p: Resampling, caps, strategy: str, run=None, element_stores: bool = False,
              through=None) -> KernelPlan:
    """`rows` or `points`. `through` (the prologue): the input is the packed value
    `p.input` of a chain of data-movement stages (a kernels.chain.Chain read from input 0 and
    its extra tensors) or of element-wise nodes (an elementwise.FusedProblem in coordinate
    mode), read element by element (lib/fused.wgsl.j2's prologue_fns)."""
    length = _run(p, run) if strategy == "rows" else 1
    params = _params(p, caps, length)
    params["vec_out"] = not element_stores and _vec_out(p, length)
    params.update(through=through.stages if isinstance(through, Chain) else (),
                  through_rank=p.input.rank if through is not None else 0, through_fetch=None)
    source, reads, uniforms_through = (input_buffer(0, "input"),), (), {}
    if isinstance(through, Chain):
        reads = through.buffers(1)
        uniforms_through = {**through.uniforms, "through_sizes": p.input.sizes}
    elif through is not None:
        params["through_fetch"], fetched, reads = elementwise.fetch(through, caps)
        source, uniforms_through = (), {**fetched, "through_sizes": p.input.sizes}
    row = p.output.sizes[-1]
    per_row = -(-row // length)
    k_lo, counts, aa = [], [], []
    for d in range(p.input.rank):
        lo, n = p.taps(d)
        k_lo.append(lo)
        counts.append(n)
        aa.append(f32_bits(p.filter_scale(d)))
    uniforms = {"out_sizes": p.output.sizes, "out_strides": p.output.effective_strides,
                "in_strides": p.input.effective_strides, **_axis_uniforms(p),
                "k_lo": tuple(k_lo), "taps": tuple(counts), "filter_scales": tuple(aa),
                "count": p.output.element_count, "runs_per_row": per_row, "cubic_a": f32_bits(p.cubic_a),
                **uniforms_through}
    bits = params["bits"]
    buffers = (output_buffer(0, "output", bits, "stores"),) + source + reads
    if params["vec_out"]:
        buffers += (output_buffer(0, "output_vec", bits, "blocks"),)
    return KernelPlan((Dispatch("resample.wgsl.j2", params, buffers, uniforms,
                                p.output.element_count // row * per_row, WORKGROUP_SIZE,
                                int64=int64_mode(bits == 64, params["native64"])),))


def plan(p: Resampling, caps, strategy: str, run=None, block=None) -> KernelPlan:
    if strategy not in strategies_for(p, caps, run, block):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    if strategy in OWN:
        return _own_plan(p, caps, strategy, run)
    if strategy == INTEGER:
        return _integer_plan(p, caps)
    the_chain = chain([stage(p)], p.input.effective_strides)
    return movement.chain_plan(strategy, p.output, the_chain, block=block)


class ResampleFamily(KernelFamily):
    """The resampling family: the module's functions over a `Resampling`; the chain stage
    (nearest), the prologue and the store epilogue (`rows`, `points`)."""

    strategies = STRATEGIES
    options = OPTIONS
    prologue = True
    epilogue = True

    def strategies_for(self, problem: Resampling, caps, run=None, block=None) -> tuple[str, ...]:
        return strategies_for(problem, caps, run, block)

    def plan(self, problem: Resampling, caps, strategy: str, run=None, block=None) -> KernelPlan:
        return plan(problem, caps, strategy, run, block)

    def variants(self, problem: Resampling, caps, strategy: str) -> tuple[dict, ...]:
        if strategy == "rows":
            return tuple({"run": r} for r in (4, 64) if r != RUN)
        return movement.FAMILY.variants(problem, caps, strategy) if strategy in movement.STRATEGIES else ()

    def stage(self, problem: Resampling) -> StageRule | None:
        return stage(problem)

    def strategies_with_epilogue(self, problem: Resampling, caps, epilogue) -> tuple[str, ...]:
        """`rows` and `points`: they store element by element."""
        return tuple(s for s in strategies_for(problem, caps) if s in OWN)

    def plan_with_epilogue(self, problem: Resampling, caps, strategy: str, epilogue) -> KernelPlan:
        if strategy not in OWN:
            raise InternalError(f"{problem.op}: strategy {strategy} stores no epilogue")
        check(epilogue, problem.output)
        return attach(_own_plan(problem, caps, strategy, element_stores=True), epilogue, 1)

    def strategies_through(self, problem: Resampling, caps) -> tuple[str, ...]:
        """`rows` and `points`: they read element by element."""
        return tuple(s for s in strategies_for(_packed(problem), caps) if s in OWN)

    def plan_through(self, problem: Resampling, caps, strategy: str, chain, epilogue=None) -> KernelPlan:
        if strategy not in OWN:
            raise InternalError(f"{problem.op}: strategy {strategy} reads no input through a chain")
        made = _own_plan(_packed(problem), caps, strategy, element_stores=epilogue is not None, through=chain)
        if epilogue is None:
            return made
        check(epilogue, problem.output)
        return attach(made, epilogue)


def _packed(p: Resampling) -> Resampling:
    """The problem reading its input as a prologue computes it: packed."""
    return replace(p, input=TensorDesc(p.input.data_type, p.input.sizes))


FAMILY = ResampleFamily()
