"""The recurrent family: DML_OPERATOR_RNN, LSTM and GRU (ops/recurrent.py), a composite of
the GEMM family's input projection and a recurrence kernel of its own.

A `Recurrence` is one layer over the input X [1, T, B, I], per direction d (one, or two for
BIDIRECTIONAL): G gates of H hidden units (RNN 1, GRU 3: z r h, LSTM 4: i o f c).

1. **The input projection, one GEMM** (kernels/gemm.py, its own strategy choice): every time
   step's X_t W_d^T + W_b,d at once, into an intermediate value XW [D, T, B, G*H] in the
   operator's type: A is X read as [1, D, T*B, I] (the direction axis a stride of 0; T and B
   merged where X's strides allow, else [D, T, B, I] with T a batch axis), B is W read
   transposed ([1, D, I, G*H]: strides only), C is the bias' first G*H elements per
   direction, broadcast over the rows (stride 0). One dispatch (two where K is cut for the
   loop budget).
2. **The recurrence**, `recurrent.wgsl.j2`, one of two strategies:
   - `persistent` (GPU-class): one workgroup of WG invocations per (direction, batch row);
     h_{t-1} (and GRU's r * h_{t-1}) lives in workgroup memory (at most MAX_PERSISTENT_HIDDEN
     f32 each: 8 KiB, inside WebGPU's guaranteed 16 KiB), each unit's cell in its invocation's
     private memory, and the time steps loop inside the kernel, workgroupBarrier between the
     phases of a step;
     invocation `tid` computes the gates of hidden units tid, tid + WG, ... (each a dot
     product of a row of R with h_{t-1}, in order of k). On GPUs the whole sequence is one
     dispatch: 2 dispatches per sequence (3 where the GEMM cuts K), whatever T. On software
     adapters (llvmpipe ends an invocation's loops after 65,535 iterations: base.LOOP_BUDGET)
     a dispatch runs as many steps as the budget holds (`steps_per_dispatch`) and hands the
     state on through a scratch buffer; the count is then ceil(T / steps) + 1.
   - `cells` (CPU-class): one invocation per (direction, hidden unit) and CELLS_ROWS batch
     rows (R read once for them), one dispatch per time step (GRU without
     LinearBeforeReset: two, the reset-gated state first): no barrier, no workgroup memory,
     every invocation busy (llvmpipe runs 8 as SIMD lanes), T + 1 dispatches (2T + 1).
     Measured on lavapipe (LSTM, T = 100, device-resident): H 256 B 1 36 ms against the
     persistent kernel's 60 (one workgroup is one thread there), H 256 B 32 529 against 965,
     H 1024 B 1 327 against 932; H 64 B 1 4.3 against 4.7.
   The state h_{t-1} lives in two scratch buffers that swap roles from one dispatch to the
   next (`h_in`, read, in 16-byte blocks where R is; `h_out`, written), the cell and GRU's z
   and r * h in a third. Where the adapter allows fewer storage buffers than that takes
   (WebGPU's default of 8), the plan is `merged`: R bound once, one state buffer with the
   halves at offsets (the same bits).
   Both compute every gate the same way (the sum of R[g*H + j, k] h[k] in order of k, then
   XW + that + the recurrence bias, the peephole, clip, the activation, the state update)
   and give the same bits.
   Hidden sizes above MAX_PERSISTENT_HIDDEN run `cells` only; a hidden size whose one
   invocation's step passes the loop budget (`step_cost`: H > about 32,700, or 8,170 for
   GRU without LinearBeforeReset at batch 4 and more) is an UnsupportedError.

Sequence lengths (UINT32 per batch row, clamped to T in the kernel): a step t >= L_b of row b
writes zeros to the output sequence and leaves the state as it is, so that the final state
is the state after the row's last step (backward: the steps T-1 .. 0 skip t >= L_b, so row
b starts at L_b - 1).

The activations arrive as WGSL expressions over `x` with their attributes (the element-wise
table's formulas, as GEMM's fused activation): fn act0 .. actN of the template.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InternalError, UnsupportedError
from ..tensor_desc import TensorDesc
from . import composite, gemm
from .base import LOOP_BUDGET, KernelFamily
from .builder import Dispatch, KernelPlan, f32_bits, input_buffer, output_buffer, scratch_buffer
from .elementwise import Attribute, attribute_uniforms

#: Hidden units the persistent kernel holds in workgroup memory (3 f32 arrays: 12 KiB).
MAX_PERSISTENT_HIDDEN = 1024
#: Invocations of a `cells` workgroup.
CELLS_WORKGROUP = 64
#: Batch rows one `cells` invocation computes (R read once for them).
CELLS_ROWS = 4
#: Gates per cell type.
GATES = {"rnn": 1, "gru": 3, "lstm": 4}
#: Loop iterations a step costs a unit beyond its dot product (state copies, output stores).
_UNIT_OVERHEAD = 8
_STEP_OVERHEAD = 8


class Recurrence(NamedTuple):
    """What the family computes (module docstring). Tensors as the page's descs give them
    ([1, T, B, I], W [1, D, G*H, I], R [1, D, G*H, H], bias [1, 1, D, 2*G*H], h0 and c0 [1, D,
    B, H], lens [1, 1, 1, B] UINT32, peephole [1, 1, D, 3*H]; outputs Y [T, D, B, H], Y_h and
    Y_c [1, D, B, H]); None where absent. `backward`: per direction, whether it walks t
    downwards; `activations`: per direction, the cell's activations (f; f, g; f, g, h), each
    (WGSL over x, attributes); `clip`: the threshold or None."""

    op: str
    cell: str
    x: TensorDesc
    w: TensorDesc
    r: TensorDesc
    bias: TensorDesc | None
    h0: TensorDesc | None
    c0: TensorDesc | None
    lens: TensorDesc | None
    peephole: TensorDesc | None
    y: TensorDesc | None
    yh: TensorDesc | None
    yc: TensorDesc | None
    backward: tuple[bool, ...]
    activations: tuple[tuple[tuple[str, tuple[Attribute, ...]], ...], ...]
    clip: float | None = None
    couple_input_forget: bool = False
    linear_before_reset: bool = False

    @property
    def steps(self) -> int:
        return self.x.sizes[1]

    @property
    def batch(self) -> int:
        return self.x.sizes[2]

    @property
    def input_size(self) -> int:
        return self.x.sizes[3]

    @property
    def hidden(self) -> int:
        return self.r.sizes[3]

    @property
    def directions(self) -> int:
        return self.w.sizes[1]

    @property
    def gates(self) -> int:
        return GATES[self.cell]

    @property
    def two_phase(self) -> bool:
        """GRU without LinearBeforeReset: the candidate reads r * h of every unit."""
        return self.cell == "gru" and not self.linear_before_reset


#: The optional inputs after X, W, R, in the descs' field order (the problem's names).
OPTIONAL_INPUTS = ("bias", "h0", "c0", "lens", "peephole")
OUTPUTS = ("y", "yh", "yc")


def value_desc(p: Recurrence) -> TensorDesc:
    """The intermediate value XW [D, T, B, G*H], packed, in the operator's type."""
    return TensorDesc(p.x.data_type, [p.directions, p.steps, p.batch, p.gates * p.hidden])


def projection(p: Recurrence) -> gemm.Problem:
    """The GEMM of every step's input projection (module docstring, 1)."""
    d, t, b, i, n = p.directions, p.steps, p.batch, p.input_size, p.gates * p.hidden
    dt = p.x.data_type
    xs, ws = p.x.effective_strides, p.w.effective_strides
    merged = t == 1 or b == 1 or xs[1] == b * xs[2]
    if merged:
        row = xs[2] if b > 1 else xs[1]
        a = TensorDesc(
            dt, [1, d, t * b, i], [0, 0, row, xs[3]], total_tensor_size_in_bytes=p.x.total_tensor_size_in_bytes
        )
        wt = TensorDesc(
            dt, [1, d, i, n], [0, ws[1], ws[3], ws[2]], total_tensor_size_in_bytes=p.w.total_tensor_size_in_bytes
        )
        out = TensorDesc(dt, [1, d, t * b, n])
        c = None
        if p.bias is not None:
            bs = p.bias.effective_strides
            c = TensorDesc(
                dt, [1, d, t * b, n], [0, bs[2], 0, bs[3]], total_tensor_size_in_bytes=p.bias.total_tensor_size_in_bytes
            )
    else:
        a = TensorDesc(
            dt, [d, t, b, i], [0, xs[1], xs[2], xs[3]], total_tensor_size_in_bytes=p.x.total_tensor_size_in_bytes
        )
        wt = TensorDesc(
            dt, [d, t, i, n], [ws[1], 0, ws[3], ws[2]], total_tensor_size_in_bytes=p.w.total_tensor_size_in_bytes
        )
        out = TensorDesc(dt, [d, t, b, n])
        c = None
        if p.bias is not None:
            bs = p.bias.effective_strides
            c = TensorDesc(
                dt, [d, t, b, n], [bs[2], 0, 0, bs[3]], total_tensor_size_in_bytes=p.bias.total_tensor_size_in_bytes
            )
    return gemm.Problem(p.op, a, wt, c, out)


def vectorized(p: Recurrence) -> bool:
    """R read 4 k per 16-byte block: FLOAT32, contiguous along k, every row on a block boundary."""
    rs = p.r.effective_strides
    return p.r.data_type.size == 4 and rs[3] == 1 and p.hidden % 4 == 0 and rs[2] % 4 == 0 and rs[1] % 4 == 0


def units_per_invocation(p: Recurrence, workgroup: int) -> int:
    return -(-p.hidden // workgroup)


def persistent_workgroup(p: Recurrence) -> int:
    """The persistent kernel's workgroup: a power of two from 32 to 256, about one unit per invocation."""
    size = 32
    while size < p.hidden and size < 256:
        size *= 2
    return size


def step_cost(p: Recurrence, strategy: str) -> int:
    """Upper bound of the loop iterations one step costs one invocation."""
    if strategy == "cells":  # one dot product loop for its rows (GRU's candidate: one per row)
        rows = min(CELLS_ROWS, p.batch)
        return p.hidden * (rows if p.two_phase else 1) + rows * _UNIT_OVERHEAD + _STEP_OVERHEAD
    per_unit = p.hidden * (2 if p.two_phase else 1) + _UNIT_OVERHEAD
    return units_per_invocation(p, persistent_workgroup(p)) * (per_unit + 2 * _UNIT_OVERHEAD) + _STEP_OVERHEAD


def budgeted(caps) -> bool:
    """Whether the adapter ends long loops (a software adapter, whatever class it is given;
    no caps: planning alone, as for one)."""
    return caps is None or caps.detected_class == "cpu"


def steps_per_dispatch(p: Recurrence, caps) -> int:
    """Time steps one persistent dispatch runs: all on GPUs, as many as the loop budget
    holds on software adapters (at least 1)."""
    if not budgeted(caps):
        return p.steps
    state = 2 * units_per_invocation(p, persistent_workgroup(p)) * _UNIT_OVERHEAD  # state loads and stores
    return max(1, min(p.steps, (LOOP_BUDGET - state) // step_cost(p, "persistent")))


class RecurrenceFamily(KernelFamily):
    """The recurrence kernel alone (step 2 of the composite): input 0 the value XW, then R
    and the present optional inputs; outputs the present outputs; scratch 0 the state."""

    strategies = ("cells", "persistent")
    options = ()

    def strategies_for(self, p: Recurrence, caps, **options) -> tuple[str, ...]:
        if options:
            raise InternalError(f"{p.op}: the recurrence takes no options ({sorted(options)})")
        if step_cost(p, "cells") > LOOP_BUDGET:
            raise UnsupportedError(
                f"{p.op}: hidden size {p.hidden} passes one invocation's loop budget ({LOOP_BUDGET} iterations a "
                f"step: llvmpipe ends longer loops)"
            )
        fits = p.hidden <= MAX_PERSISTENT_HIDDEN and step_cost(p, "persistent") <= LOOP_BUDGET
        cpu = caps is None or caps.is_software
        if not fits:
            return ("cells",)
        return ("cells", "persistent") if cpu else ("persistent", "cells")

    def plan(self, p: Recurrence, caps, strategy: str, **options) -> KernelPlan:
        if strategy not in self.strategies_for(p, caps, **options):
            raise InternalError(f"{p.op}: strategy {strategy} cannot run {p.hidden} hidden units")
        present = [name for name in OPTIONAL_INPUTS if getattr(p, name) is not None]
        outs = [name for name in OUTPUTS if getattr(p, name) is not None]
        # Bindings: xw, R (and R as blocks), the optional inputs, the outputs, three state
        # buffers; where the adapter allows fewer (WebGPU's default of 8), `merged`: R as words
        # only and one state buffer (h's halves, the cell and r * h at offsets).
        full = 2 + 1 + len(present) + len(outs) + 3
        merged = caps is not None and full > caps.max_storage_buffers_per_shader_stage
        vec = vectorized(p) and not merged
        buffers = [input_buffer(0, "xw"), input_buffer(1, "rw")] + (
            [input_buffer(1, "rw_vec", "blocks")] if vec else []
        )
        buffers += [input_buffer(2 + k, name) for k, name in enumerate(present)]
        bits = p.x.data_type.size * 8
        buffers += [output_buffer(k, "out_" + name, bits, "stores") for k, name in enumerate(outs)]
        n = p.directions * p.batch * p.hidden
        buffers.append(scratch_buffer(0 if merged else 2, "st" if merged else "cst", writable=True))
        uniforms = _uniforms(p)
        params = {
            "cell": p.cell,
            "gates": p.gates,
            "bits": bits,
            "strategy": strategy,
            "clip": p.clip is not None,
            "couple": p.couple_input_forget,
            "lbr": p.linear_before_reset,
            "directions": p.directions,
            "vec": vec,
            **{"has_" + n: getattr(p, n) is not None for n in OPTIONAL_INPUTS + OUTPUTS},
        }
        act_params = []
        for d, per_dir in enumerate(p.activations):
            for k, (expr, attrs) in enumerate(per_dir):
                values, declared = attribute_uniforms(f"act{d}{k}_", attrs, "float", 32)
                uniforms.update(values)
                act_params.append((f"act{d}_{k}", expr, declared))
        params["activations"] = tuple(act_params)
        n = p.directions * p.batch * p.hidden
        t = p.steps
        dispatches = []
        h_blocks = vec and strategy == "cells"

        def states(k: int) -> tuple:
            """Dispatch k's state: h_in scratch k % 2, h_out the other (module docstring)."""
            if merged:
                return ()
            return (
                scratch_buffer(k % 2, "h_in", writable=False, access="blocks" if h_blocks else "words"),
                scratch_buffer((k + 1) % 2, "h_out", writable=True),
            )

        def offsets(k: int) -> dict:
            """`merged`: dispatch k's h_in and h_out halves in the one state buffer."""
            return {"h_in_off": (k % 2) * n, "h_out_off": ((k + 1) % 2) * n, "c_off": 2 * n} if merged else {}

        params.update(h_blocks=h_blocks, merged=merged)
        if strategy == "persistent":
            wg = persistent_workgroup(p)
            per = steps_per_dispatch(p, caps)
            params.update(workgroup=wg, units=units_per_invocation(p, wg), bt=1, phase=0)
            for k, s0 in enumerate(range(0, t, per)):
                u = {**uniforms, "s0": s0, "s1": min(t, s0 + per), **offsets(k)}
                dispatches.append(
                    Dispatch(
                        "recurrent.wgsl.j2", params, tuple(buffers) + states(k), u, p.directions * p.batch * wg, wg
                    )
                )
        else:
            bt = min(CELLS_ROWS, p.batch)
            count = p.directions * -(-p.batch // bt) * p.hidden
            phases = (1, 2) if p.two_phase else (0,)
            for s in range(t):
                for phase in phases:
                    u = {**uniforms, "s0": s, "s1": s + 1, **offsets(s)}
                    dispatches.append(
                        Dispatch(
                            "recurrent.wgsl.j2",
                            {**params, "phase": phase, "bt": bt},
                            tuple(buffers) + states(s),
                            u,
                            count,
                            CELLS_WORKGROUP,
                        )
                    )
        return KernelPlan(tuple(dispatches), scratch_bytes=(4 * n * 4,) if merged else (n * 4, n * 4, 2 * n * 4))


def _uniforms(p: Recurrence) -> dict:
    n = p.directions * p.batch * p.hidden
    u = {
        "steps": p.steps,
        "batch": p.batch,
        "hidden": p.hidden,
        "backward": sum(1 << d for d, b in enumerate(p.backward) if b),
        "r_strides": p.r.effective_strides,
        "st_rh": n,
        "half": n,
        "directions": p.directions,
        "clip": f32_bits(p.clip or 0.0),
    }
    for name in ("bias", "h0", "c0", "lens", "peephole", "y", "yh", "yc"):
        td = getattr(p, name)
        if td is not None:
            u[name + "_strides"] = td.effective_strides
    return u


class RecurrentFamily(composite.CompositeFamily):
    """The operators' family: the GEMM step, then the recurrence (module docstring). The
    strategy names the recurrence's; the GEMM takes its family's first choice."""

    strategies = RecurrenceFamily.strategies
    options = ()

    def strategies_for(self, p: Recurrence, caps, **options) -> tuple[str, ...]:
        return RECURRENCE.strategies_for(p, caps, **options)

    def steps(self, p: Recurrence, caps, strategy: str, *, element_stores: bool = False, **options):
        if strategy not in self.strategies_for(p, caps, **options):
            raise InternalError(f"{p.op}: strategy {strategy} cannot run {p.hidden} hidden units")
        proj = projection(p)
        gemm_strategy = gemm.FAMILY.strategies_for(proj, caps)[0]
        gemm_inputs = (("input", 0), ("input", 1)) + ((("input", 3),) if p.bias is not None else ())
        present = [name for name in OPTIONAL_INPUTS if getattr(p, name) is not None]
        rec_inputs = ((composite.VALUE, 0), ("input", 2)) + tuple(("input", 3 + k) for k in range(len(present)))
        outs = tuple(("output", k) for k, name in enumerate(OUTPUTS) if getattr(p, name) is not None)
        outs = tuple(("output", k) for k in range(len(outs)))
        return composite.Composition(
            (
                composite.Step(gemm.FAMILY, proj, gemm_strategy, gemm_inputs, ((composite.VALUE, 0),)),
                composite.Step(RECURRENCE, p, strategy, rec_inputs, outs),
            ),
            (composite.value_bytes(value_desc(p)),),
        )


def dispatch_count(p: Recurrence, caps, strategy: str) -> int:
    """Dispatches one sequence takes (the module docstring's counts)."""
    return len(FAMILY.plan(p, caps, strategy).dispatches)


RECURRENCE = RecurrenceFamily()
FAMILY = RecurrentFamily()
