"""DML_OPERATOR_RNN, DML_OPERATOR_LSTM and DML_OPERATOR_GRU (FL 1.0): one recurrent layer
over X {1, T, B, I}, forward, backward or both (`dml.rnn`, `dml.lstm`, `dml.gru`; docs:
docs/operators/rnn.md, lstm.md, gru.md). Run by kernels/recurrent.py: one GEMM for every
step's input projection, then the recurrence (a persistent kernel on GPUs, a dispatch per
step on CPU adapters).

The pages (tests/data/pages/ns-directml-dml_{rnn,lstm,gru}_operator_desc.md): every tensor
4-D, FLOAT32 or FLOAT16 (sequence lengths UINT32), one data type for the float tensors.
Where they are silent or unclear, gpudml's choices (each as ONNX's operators define them,
which ONNX Runtime's DirectML execution provider maps onto these operators as they are):

- gate orders: RNN i; LSTM i, o, f, c (peepholes i, o, f); GRU z, r, h;
- LSTM's output gate reads the peephole with the new cell C_t (ONNX's `Po (.) Ct`; the
  page's formula prints C_{t-1});
- clipping (UseClipThreshold) bounds every gate's pre-activation to [-ClipThreshold,
  ClipThreshold] (not the cell before h());
- GRU: H_t = (1 - z) h~ + z H_{t-1}; h~ = g(X W_h + (r H_{t-1}) R_h + R_bh + W_bh), with
  LinearBeforeReset g(X W_h + r (H_{t-1} R_h + R_bh) + W_bh);
- sequence lengths: row b runs its first L_b steps (backward: t = L_b - 1 .. 0); the output
  sequence is 0 at t >= L_b and the final state is the state after the row's last step (the
  initial state where L_b = 0). Lengths above T are clamped to T on the GPU; the functional
  form rejects lengths outside [0, T] of a numpy argument before any work;
- every output is optional (the functional form's `output_sequence`, `output_single`,
  `output_cell_single` flags), but at least one is written;
- the activations are DML_OPERATOR_DESCs of the element-wise table's activations: any
  activation that fuses (`dml.FusedActivation`, gpudml.ops.activations.FUSABLE), with its
  attributes; None gives ONNX's defaults (RNN tanh; GRU sigmoid, tanh; LSTM sigmoid, tanh,
  tanh), per direction.

Precision: the input projection is the GEMM family's (float32 accumulation, the value in the
operator's type); every gate sum accumulates in float32 in order of k. The documented bound
(`tolerance`, tests/test_recurrent.py tests it on random layers at T = 1, 8 and 50): each
output element within

    (T + 1) * (I + H + 16) * u * S

of the float64 reference, u the unit roundoff of the type's computation (2^-24 for float32,
2^-11 for float16, whose XW value and outputs are rounded to float16) and S = 1 + max|x|
max|W| I + max|R| H + max|B| (the largest a gate's pre-activation can be with |h| <= 1).
The bound grows linearly with T: the activations the tables hold are 1-Lipschitz or less
(sigmoid 1/4, tanh 1) and the test weights keep |R| H below 1, so errors of earlier steps do
not grow; a layer whose recurrence amplifies (|R| H > 1 with linear activations) grows its
errors as the float64 state does and is not bounded here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import recurrent as family
from ..kernels.base import ProblemPlanner
from ..kernels.elementwise import Attribute
from ..tensor_desc import TensorDesc, check_same_rank, check_tensor_desc
from ..types import F16, F32, U32, FeatureLevel, RecurrentNetworkDirection
from .activations import FusedActivation, as_activation, as_float32
from .spec import Call, Cli, CliArg, OpSpec, support_table

FLOATS = {F32, F16}
BIDIRECTIONAL = RecurrentNetworkDirection.BIDIRECTIONAL

#: Per cell: DirectML's name, gates, activations per direction and their default names.
CELLS = {
    "rnn": ("Rnn", 1, ("tanh",)),
    "gru": ("Gru", 3, ("sigmoid", "tanh")),
    "lstm": ("Lstm", 4, ("sigmoid", "tanh", "tanh")),
}
#: The desc fields per cell, inputs then outputs (the struct's order).
_RNN_INPUTS = ("input_tensor", "weight_tensor", "recurrence_tensor", "bias_tensor", "hidden_init_tensor",
               "sequence_lengths_tensor")
INPUTS = {
    "rnn": _RNN_INPUTS,
    "gru": _RNN_INPUTS,
    "lstm": ("input_tensor", "weight_tensor", "recurrence_tensor", "bias_tensor", "hidden_init_tensor",
             "cell_mem_init_tensor", "sequence_lengths_tensor", "peephole_tensor"),
}
OUTPUTS = {
    "rnn": ("output_sequence_tensor", "output_single_tensor"),
    "gru": ("output_sequence_tensor", "output_single_tensor"),
    "lstm": ("output_sequence_tensor", "output_single_tensor", "output_cell_single_tensor"),
}
#: The functional form's names of the optional inputs (the desc field -> keyword).
KEYWORDS = {
    "bias_tensor": "bias",
    "hidden_init_tensor": "hidden_init",
    "cell_mem_init_tensor": "cell_init",
    "sequence_lengths_tensor": "sequence_lengths",
    "peephole_tensor": "peephole",
}
FLAGS = {
    "output_sequence_tensor": "output_sequence",
    "output_single_tensor": "output_single",
    "output_cell_single_tensor": "output_cell_single",
}


def _support(cell: str):
    name = CELLS[cell][0]
    fields = INPUTS[cell] + OUTPUTS[cell]
    types = [{U32} if f == "sequence_lengths_tensor" else FLOATS for f in fields]
    return support_table(name, fields, [(FeatureLevel.FL_1_0, {4}, *types)])


SUPPORT = {cell: _support(cell) for cell in CELLS}


# ============================================================================ the descs
class _RecurrentDesc:
    """What the three descs share: normalization of the attributes."""

    CELL = ""

    def __post_init__(self):
        op = CELLS[self.CELL][0]
        object.__setattr__(self, "direction", RecurrentNetworkDirection.coerce(self.direction, f"{op}: direction"))
        acts = self.activation_descs
        if not isinstance(acts, (list, tuple)):
            raise InvalidArgumentError(f"{op}: activation_descs must be a list of activations, got {acts!r}")
        object.__setattr__(
            self,
            "activation_descs",
            tuple(FusedActivation.coerce(a, f"{op}: activation_descs[{k}]") for k, a in enumerate(acts)),
        )
        for k, a in enumerate(self.activation_descs):
            if a is None:
                raise InvalidArgumentError(f"{op}: activation_descs[{k}] is None (every activation must be given)")
        for name in ("clip_threshold",):
            if hasattr(self, name):
                object.__setattr__(self, name, as_float32(getattr(self, name), f"{op}: {name}"))
        for name in ("use_clip_threshold", "couple_input_forget", "linear_before_reset"):
            if hasattr(self, name):
                value = getattr(self, name)
                if not isinstance(value, (bool, np.bool_)):
                    raise InvalidArgumentError(f"{op}: {name} must be True or False, got {value!r}")
                object.__setattr__(self, name, bool(value))


@dataclass(frozen=True)
class _RnnGruFields(_RecurrentDesc):
    """The fields RNN's and GRU's descs share (GRU adds linear_before_reset)."""

    input_tensor: TensorDesc
    weight_tensor: TensorDesc
    recurrence_tensor: TensorDesc
    bias_tensor: TensorDesc | None
    hidden_init_tensor: TensorDesc | None
    sequence_lengths_tensor: TensorDesc | None
    output_sequence_tensor: TensorDesc | None
    output_single_tensor: TensorDesc | None
    activation_descs: tuple = ()
    direction: RecurrentNetworkDirection = RecurrentNetworkDirection.FORWARD

    OPTIONAL_TENSORS = ("bias_tensor", "hidden_init_tensor", "sequence_lengths_tensor", "output_sequence_tensor",
                        "output_single_tensor")


@dataclass(frozen=True)
class RnnOperatorDesc(_RnnGruFields):
    """DML_RNN_OPERATOR_DESC: H_t = f(X_t W^T + H_{t-1} R^T + W_b + R_b) (module docstring)."""

    CELL = "rnn"


@dataclass(frozen=True)
class GruOperatorDesc(_RnnGruFields):
    """DML_GRU_OPERATOR_DESC: gates z, r, h (module docstring)."""

    linear_before_reset: bool = False

    CELL = "gru"


@dataclass(frozen=True)
class LstmOperatorDesc(_RecurrentDesc):
    """DML_LSTM_OPERATOR_DESC: gates i, o, f, c, peepholes i, o, f (module docstring)."""

    input_tensor: TensorDesc
    weight_tensor: TensorDesc
    recurrence_tensor: TensorDesc
    bias_tensor: TensorDesc | None
    hidden_init_tensor: TensorDesc | None
    cell_mem_init_tensor: TensorDesc | None
    sequence_lengths_tensor: TensorDesc | None
    peephole_tensor: TensorDesc | None
    output_sequence_tensor: TensorDesc | None
    output_single_tensor: TensorDesc | None
    output_cell_single_tensor: TensorDesc | None
    activation_descs: tuple = ()
    direction: RecurrentNetworkDirection = RecurrentNetworkDirection.FORWARD
    clip_threshold: float = 0.0
    use_clip_threshold: bool = False
    couple_input_forget: bool = False

    CELL = "lstm"
    OPTIONAL_TENSORS = (
        "bias_tensor",
        "hidden_init_tensor",
        "cell_mem_init_tensor",
        "sequence_lengths_tensor",
        "peephole_tensor",
        "output_sequence_tensor",
        "output_single_tensor",
        "output_cell_single_tensor",
    )


DESCS = {"rnn": RnnOperatorDesc, "gru": GruOperatorDesc, "lstm": LstmOperatorDesc}


def directions_of(direction) -> int:
    return 2 if RecurrentNetworkDirection.coerce(direction) == BIDIRECTIONAL else 1


def default_activations(cell: str, direction) -> tuple:
    return tuple(FusedActivation(n) for n in CELLS[cell][2]) * directions_of(direction)


# ============================================================================ shape inference
def _infer(cell: str, x: TensorDesc, w: TensorDesc, r: TensorDesc, given: dict, attributes: dict, outputs: dict):
    """The desc of a functional call: the outputs' sizes from X {1, T, B, I} and R {1, D, G*H,
    H} (D from the direction), in X's type; `given` the optional inputs by field."""
    op = CELLS[cell][0]
    direction = RecurrentNetworkDirection.coerce(attributes.get("direction", "forward"), f"{op.lower()}: direction")
    d = directions_of(direction)
    acts = attributes.get("activations")
    acts = default_activations(cell, direction) if acts is None else acts
    t = x.sizes[1] if x.rank == 4 else 1
    b = x.sizes[2] if x.rank == 4 else 1
    h = r.sizes[3] if r.rank == 4 else 1
    sizes = {
        "output_sequence_tensor": [t, d, b, h],
        "output_single_tensor": [1, d, b, h],
        "output_cell_single_tensor": [1, d, b, h],
    }
    outs = {f: (TensorDesc(x.data_type, sizes[f]) if outputs.get(FLAGS[f], True) else None) for f in OUTPUTS[cell]}
    fields = {"input_tensor": x, "weight_tensor": w, "recurrence_tensor": r}
    for f in INPUTS[cell][3:]:
        fields[f] = given.get(f)
    extra = {}
    if cell == "lstm":
        clip = attributes.get("clip")
        extra = {
            "clip_threshold": 0.0 if clip is None else clip,
            "use_clip_threshold": attributes.get("use_clip", False),
            "couple_input_forget": attributes.get("couple_input_forget", False),
        }
    if cell == "gru":
        extra = {"linear_before_reset": attributes.get("linear_before_reset", False)}
    return DESCS[cell](**fields, **outs, activation_descs=acts, direction=direction, **extra)


def _given(cell: str, optional, descs: tuple) -> dict:
    """The optional inputs' descs by field, as the functional form names them (`optional`)."""
    fn = cell
    if optional is None:  # the first optional inputs, in field order
        optional = tuple(KEYWORDS[f] for f in INPUTS[cell][3 : 3 + len(descs)])
    optional = tuple(optional)
    if len(optional) != len(descs):
        raise InvalidArgumentError(f"{fn}: optional_inputs names {len(optional)} inputs, {len(descs)} are given")
    keywords = {KEYWORDS[f]: f for f in INPUTS[cell][3:]}
    out = {}
    for name, td in zip(optional, descs):
        if name not in keywords:
            raise InvalidArgumentError(f"{fn}: optional_inputs: {name!r} is not one of {', '.join(keywords)}")
        out[keywords[name]] = td
    return out


def infer_rnn(x, w, r, *optional_descs, optional_inputs=None, direction="forward", activations=None,
              output_sequence=True, output_single=True):
    return _infer("rnn", x, w, r, _given("rnn", optional_inputs, optional_descs),
                  {"direction": direction, "activations": activations},
                  {"output_sequence": output_sequence, "output_single": output_single})


def infer_gru(x, w, r, *optional_descs, optional_inputs=None, direction="forward", activations=None,
              linear_before_reset=False, output_sequence=True, output_single=True):
    return _infer("gru", x, w, r, _given("gru", optional_inputs, optional_descs),
                  {"direction": direction, "activations": activations, "linear_before_reset": linear_before_reset},
                  {"output_sequence": output_sequence, "output_single": output_single})


def infer_lstm(x, w, r, *optional_descs, optional_inputs=None, direction="forward", activations=None, clip=None,
               use_clip=False, couple_input_forget=False, output_sequence=True, output_single=True,
               output_cell_single=True):
    return _infer(
        "lstm",
        x,
        w,
        r,
        _given("lstm", optional_inputs, optional_descs),
        {
            "direction": direction,
            "activations": activations,
            "clip": clip,
            "use_clip": use_clip,
            "couple_input_forget": couple_input_forget,
        },
        {"output_sequence": output_sequence, "output_single": output_single, "output_cell_single": output_cell_single},
    )


# ============================================================================ validation
def validate(desc, level: FeatureLevel) -> None:
    """The page's rules: valid 4-D tensors of one float type (lengths UINT32), the support
    row, every size against X {1, T, B, I} and R {1, D, G*H, H}, the activation count, the
    clip threshold, at least one output."""
    cell = desc.CELL
    op, gates, per_dir = CELLS[cell][0], CELLS[cell][1], len(CELLS[cell][2])
    fields = INPUTS[cell] + OUTPUTS[cell]
    optional = type(desc).OPTIONAL_TENSORS
    named = {f: getattr(desc, f) for f in fields if getattr(desc, f) is not None or f not in optional}
    if not any(f in named for f in OUTPUTS[cell]):
        raise InvalidArgumentError(
            f"{op}: no output is given ({', '.join(OUTPUTS[cell])} are all None): at least one must be written"
        )
    for f, td in named.items():
        check_tensor_desc(op, f, td, is_output=f.startswith("output_"))
    for f, td in named.items():  # (each tensor's rank and type against the table first: the page's own rows)
        SUPPORT[cell].check_rank(level, f, td.rank)
        SUPPORT[cell].check(level, 4, {f: td.data_type})
    check_same_rank(op, named)
    first = desc.input_tensor.data_type
    for f, td in named.items():
        if f != "sequence_lengths_tensor" and td.data_type != first:
            raise InvalidArgumentError(
                f"{op}: {f}.data_type {td.data_type.name} must equal input_tensor.data_type {first.name}"
            )
    d = directions_of(desc.direction)
    x, r = desc.input_tensor.sizes, desc.recurrence_tensor.sizes
    if x[0] != 1:
        raise InvalidArgumentError(
            f"{op}: input_tensor.sizes {list(x)} must be {{1, seq_length, batch_size, "
            f"input_size}} (sizes[0] = {x[0]} must be 1)"
        )
    t, b, i = x[1], x[2], x[3]
    h = r[3]
    want = {
        "weight_tensor": [1, d, gates * h, i],
        "recurrence_tensor": [1, d, gates * h, h],
        "bias_tensor": [1, 1, d, 2 * gates * h],
        "hidden_init_tensor": [1, d, b, h],
        "cell_mem_init_tensor": [1, d, b, h],
        "sequence_lengths_tensor": [1, 1, 1, b],
        "peephole_tensor": [1, 1, d, 3 * h],
        "output_sequence_tensor": [t, d, b, h],
        "output_single_tensor": [1, d, b, h],
        "output_cell_single_tensor": [1, d, b, h],
    }
    what = (
        f"seq_length {t}, batch_size {b}, input_size {i} from input_tensor, hidden_size {h} from "
        f"recurrence_tensor.sizes[3], num_directions {d} from direction {desc.direction.name}, {gates} gate(s)"
    )
    for f, td in named.items():
        if f in want and list(td.sizes) != want[f]:
            raise InvalidArgumentError(f"{op}: {f}.sizes {list(td.sizes)} must be {want[f]} ({what})")
    count = len(desc.activation_descs)
    if count != per_dir * d:
        raise InvalidArgumentError(
            f"{op}: activation_descs holds {count} activation(s); direction {desc.direction.name} needs {per_dir * d} "
            f"({per_dir} per direction)"
        )
    if cell == "lstm" and desc.use_clip_threshold and not desc.clip_threshold > 0:
        raise InvalidArgumentError(
            f"{op}: clip_threshold = {desc.clip_threshold} must be positive where use_clip_threshold is True"
        )


# ============================================================================ the kernels' problem
def _kernel_activation(a: FusedActivation) -> tuple[str, tuple[Attribute, ...]]:
    return as_activation(a.row.wgsl["float"]), tuple(Attribute(k, "f32", v) for k, v in a.attributes)


def problem(desc) -> family.Recurrence:
    cell = desc.CELL
    d = directions_of(desc.direction)
    per_dir = len(CELLS[cell][2])
    acts = tuple(
        tuple(_kernel_activation(a) for a in desc.activation_descs[k * per_dir : (k + 1) * per_dir]) for k in range(d)
    )
    backward = (False, True) if d == 2 else (desc.direction == RecurrentNetworkDirection.BACKWARD,)
    get = lambda f: getattr(desc, f, None)  # noqa: E731
    clip = desc.clip_threshold if cell == "lstm" and desc.use_clip_threshold else None
    return family.Recurrence(
        CELLS[cell][0],
        cell,
        desc.input_tensor,
        desc.weight_tensor,
        desc.recurrence_tensor,
        get("bias_tensor"),
        get("hidden_init_tensor"),
        get("cell_mem_init_tensor"),
        get("sequence_lengths_tensor"),
        get("peephole_tensor"),
        get("output_sequence_tensor"),
        get("output_single_tensor"),
        get("output_cell_single_tensor"),
        backward,
        acts,
        clip,
        bool(getattr(desc, "couple_input_forget", False)),
        bool(getattr(desc, "linear_before_reset", False)),
    )


RECURRENT = ProblemPlanner(problem, family.FAMILY)


# ============================================================================ the reference
def _activation(a) -> callable:
    a = FusedActivation.coerce(a)
    attrs = dict(a.attributes)
    return lambda v: np.asarray(a.row.numpy(v, **attrs), np.float64)


def _exact(cell, x, w, r, bias, h0, c0, lens, peephole, direction, activations, clip, couple, lbr):
    """The layer in float64: (Y [T, D, B, H], Y_h [1, D, B, H], Y_c [1, D, B, H])."""
    f64 = lambda a: None if a is None else np.asarray(a).astype(np.float64)  # noqa: E731
    x, w, r, bias, h0, c0, peephole = map(f64, (x, w, r, bias, h0, c0, peephole))
    _, t_len, b_len, _ = x.shape
    d_len, gh, h_len = r.shape[1], r.shape[2], r.shape[3]
    direction = RecurrentNetworkDirection.coerce(direction)
    per_dir = len(CELLS[cell][2])
    acts = default_activations(cell, direction) if activations is None else activations
    lengths = (
        np.full(b_len, t_len) if lens is None else np.minimum(np.asarray(lens).reshape(-1).astype(np.int64), t_len)
    )
    y = np.zeros((t_len, d_len, b_len, h_len))
    yh = np.zeros((1, d_len, b_len, h_len))
    yc = np.zeros((1, d_len, b_len, h_len))
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    for d in range(d_len):
        fs = [_activation(a) for a in acts[d * per_dir : (d + 1) * per_dir]]
        back = d == 1 or direction == RecurrentNetworkDirection.BACKWARD
        wd, rd = w[0, d], r[0, d]
        wb = bias[0, 0, d, :gh] if bias is not None else np.zeros(gh)
        rb = bias[0, 0, d, gh:] if bias is not None else np.zeros(gh)
        p = peephole[0, 0, d] if peephole is not None else np.zeros(3 * h_len)
        h = h0[0, d].copy() if h0 is not None else np.zeros((b_len, h_len))
        c = c0[0, d].copy() if c0 is not None else np.zeros((b_len, h_len))
        for s in range(t_len):
            t = t_len - 1 - s if back else s
            active = (t < lengths)[:, None]
            xw = x[0, t] @ wd.T + wb
            hr = h @ rd.T
            gate = lambda k, v: v[:, k * h_len : (k + 1) * h_len]  # noqa: E731
            if cell == "rnn":
                hn = fs[0](cl(xw + hr + rb))
                cn = c
            elif cell == "lstm":
                pi, po, pf = p[:h_len], p[h_len : 2 * h_len], p[2 * h_len :]
                i = fs[0](cl(gate(0, xw) + gate(0, hr) + gate(0, rb[None]) + pi * c))
                f = 1.0 - i if couple else fs[0](cl(gate(2, xw) + gate(2, hr) + gate(2, rb[None]) + pf * c))
                cc = fs[1](cl(gate(3, xw) + gate(3, hr) + gate(3, rb[None])))
                cn = f * c + i * cc
                o = fs[0](cl(gate(1, xw) + gate(1, hr) + gate(1, rb[None]) + po * cn))
                hn = o * fs[2](cn)
            else:
                z = fs[0](gate(0, xw) + gate(0, hr) + gate(0, rb[None]))
                rr = fs[0](gate(1, xw) + gate(1, hr) + gate(1, rb[None]))
                if lbr:
                    hh = fs[1](gate(2, xw) + rr * (gate(2, hr) + gate(2, rb[None])))
                else:
                    hh = fs[1](gate(2, xw) + (rr * h) @ rd[2 * h_len :].T + gate(2, rb[None]))
                hn = (1.0 - z) * hh + z * h
                cn = c
            y[t, d] = np.where(active, hn, 0.0)
            h = np.where(active, hn, h)
            c = np.where(active, cn, c)
        yh[0, d], yc[0, d] = h, c
    return y, yh, yc


def _reference(cell: str, x, w, r, bias, h0, c0, lens, peephole, direction, activations, clip, couple, lbr, flags):
    y, yh, yc = _exact(cell, x, w, r, bias, h0, c0, lens, peephole, direction, activations, clip, couple, lbr)
    dtype = np.asarray(x).dtype
    with np.errstate(all="ignore"):
        outs = [v.astype(dtype) for v, keep in zip((y, yh, yc), flags) if keep]
    return tuple(outs) if len(outs) > 1 else outs[0]


def reference_rnn(x, weight, recurrence, bias=None, *, hidden_init=None, sequence_lengths=None, direction="forward",
                  activations=None, output_sequence=True, output_single=True, optional_inputs=None):
    """DML_OPERATOR_RNN in float64, rounded once to x's type."""
    return _reference("rnn", x, weight, recurrence, bias, hidden_init, None, sequence_lengths, None, direction,
                      activations, None, False, False, (output_sequence, output_single))


def reference_gru(x, weight, recurrence, bias=None, *, hidden_init=None, sequence_lengths=None, direction="forward",
                  activations=None, linear_before_reset=False, output_sequence=True, output_single=True,
                  optional_inputs=None):
    """DML_OPERATOR_GRU in float64, rounded once to x's type."""
    return _reference("gru", x, weight, recurrence, bias, hidden_init, None, sequence_lengths, None, direction,
                      activations, None, False, linear_before_reset, (output_sequence, output_single))


def reference_lstm(x, weight, recurrence, bias=None, *, hidden_init=None, cell_init=None, sequence_lengths=None,
                   peephole=None, direction="forward", activations=None, clip=None, use_clip=False,
                   couple_input_forget=False, output_sequence=True, output_single=True, output_cell_single=True,
                   optional_inputs=None):
    """DML_OPERATOR_LSTM in float64, rounded once to x's type."""
    threshold = as_float32(clip, "lstm: clip") if use_clip and clip is not None else None
    return _reference("lstm", x, weight, recurrence, bias, hidden_init, cell_init, sequence_lengths, peephole,
                      direction, activations, threshold, couple_input_forget, False,
                      (output_sequence, output_single, output_cell_single))


for _fn, _name in ((reference_rnn, "rnn"), (reference_gru, "gru"), (reference_lstm, "lstm")):
    _fn.__name__ = _fn.__qualname__ = _name


def tolerance(expected, inputs, arguments: dict):
    """The documented bound (module docstring): (T + 1) (I + H + 16) u S."""
    x, w, r = (np.abs(np.asarray(a, np.float64)) for a in inputs[:3])
    t, i, h = x.shape[1], x.shape[3], r.shape[3]
    bias = arguments.get("bias")
    bmax = 0.0 if bias is None else float(np.max(np.abs(np.asarray(bias, np.float64))))
    u = 2.0**-11 if np.asarray(inputs[0]).dtype == np.float16 else 2.0**-24
    s = 1.0 + float(x.max()) * float(w.max()) * i + float(r.max()) * h + bmax
    return (t + 1) * (i + h + 16) * u * s


# ============================================================================ the functional forms
def _lengths(value):
    """Sequence lengths as UINT32 {1, 1, 1, B} (integers of any type, {B} or {1, 1, 1, B}; checked
    against T in the call)."""
    a = np.asarray(value)
    if a.dtype.kind not in "iu":
        raise InvalidArgumentError(f"sequence_lengths: must be integers, got {a.dtype}")
    if a.size and int(a.min()) < 0:
        raise InvalidArgumentError(f"sequence_lengths: must be >= 0, got {int(a.min())}")
    return a.astype(np.uint32).reshape(1, 1, 1, -1) if a.ndim == 1 else a.astype(np.uint32)


def _call(cell: str, arguments: dict) -> Call:
    """The Call of a functional form's `arguments` (its locals()): X, W, R, the given optional
    inputs (named in the attribute `optional_inputs`), the other arguments as attributes."""
    arguments = dict(arguments)
    x, device = arguments.pop("x"), arguments.pop("device")
    tensors = [("x", x), ("weight", arguments.pop("weight")), ("recurrence", arguments.pop("recurrence"))]
    given = []
    for field in INPUTS[cell][3:]:
        name = KEYWORDS[field]
        value = arguments.pop(name)
        if value is None:
            continue
        if name == "sequence_lengths":
            _check_lengths(cell, x, value)
            tensors.append((name, value, _lengths))
        else:
            tensors.append((name, value))
        given.append(name)
    return Call(tensors, {"optional_inputs": tuple(given), **arguments}, device)


def _check_lengths(fn: str, x, value) -> None:
    """A numpy argument's lengths in [0, T] (a Tensor's are clamped on the GPU)."""
    if hasattr(value, "desc") or hasattr(value, "graph"):
        return
    a = np.asarray(value)
    t = np.shape(x)[1] if len(np.shape(x)) == 4 else None
    if a.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{fn}: sequence_lengths must be integers, got {a.dtype}")
    if a.size and int(a.min()) < 0:
        raise InvalidArgumentError(
            f"{fn}: sequence_lengths must be >= 0 (lengths in [0, seq_length]), got {int(a.min())}"
        )
    if t is not None and a.size and int(a.max()) > t:
        raise InvalidArgumentError(
            f"{fn}: sequence_lengths must be <= seq_length = {t} (x.shape[1]), got {int(a.max())}"
        )


def rnn(x, weight, recurrence, bias=None, *, hidden_init=None, sequence_lengths=None, direction="forward",
        activations=None, output_sequence=True, output_single=True, device=None):
    """DML_OPERATOR_RNN: H_t = f(X_t W^T + H_{t-1} R^T + W_b + R_b) over x {1, T, B, I},
    weight {1, D, H, I}, recurrence {1, D, H, H}, bias {1, 1, D, 2H}; hidden_init {1, D, B,
    H}; sequence_lengths {1, 1, 1, B} (integers in [0, T]); direction "forward", "backward"
    or "bidirectional" (D = 2); activations: one per direction (default tanh). Returns
    (output_sequence {T, D, B, H}, output_single {1, D, B, H}), the outputs asked for
    (gpudml/ops/recurrent.py states the semantics and the precision)."""
    return _call("rnn", locals())


def gru(x, weight, recurrence, bias=None, *, hidden_init=None, sequence_lengths=None, direction="forward",
        activations=None, linear_before_reset=False, output_sequence=True, output_single=True, device=None):
    """DML_OPERATOR_GRU (gates z, r, h): weight {1, D, 3H, I}, recurrence {1, D, 3H, H}, bias
    {1, 1, D, 6H}; activations f, g per direction (default sigmoid, tanh);
    linear_before_reset: ONNX's. Returns (output_sequence, output_single), the outputs
    asked for (gpudml/ops/recurrent.py)."""
    return _call("gru", locals())


def lstm(x, weight, recurrence, bias=None, *, hidden_init=None, cell_init=None, sequence_lengths=None,
         peephole=None, direction="forward", activations=None, clip=None, use_clip=False, couple_input_forget=False,
         output_sequence=True, output_single=True, output_cell_single=True, device=None):
    """DML_OPERATOR_LSTM (gates i, o, f, c; peepholes i, o, f): weight {1, D, 4H, I},
    recurrence {1, D, 4H, H}, bias {1, 1, D, 8H}, hidden_init and cell_init {1, D, B, H},
    peephole {1, 1, D, 3H}; activations f, g, h per direction (default sigmoid, tanh,
    tanh); clip (ClipThreshold) bounds the gates' pre-activations where use_clip is True;
    couple_input_forget: f = 1 - i. Returns (sequence {T, D, B, H}, hidden {1, D, B, H},
    cell {1, D, B, H}), the outputs asked for (gpudml/ops/recurrent.py)."""
    return _call("lstm", locals())


def _arguments(desc) -> dict:
    cell = desc.CELL
    given = tuple(KEYWORDS[f] for f in INPUTS[cell][3:] if getattr(desc, f) is not None)
    out = {"direction": desc.direction.name.lower(), "activations": list(desc.activation_descs)}
    if given != tuple(KEYWORDS[f] for f in INPUTS[cell][3 : 3 + len(given)]):
        out["optional_inputs"] = given  # (not the first ones: infer_output needs the names)
    if cell == "lstm":
        out.update(
            clip=desc.clip_threshold, use_clip=desc.use_clip_threshold, couple_input_forget=desc.couple_input_forget
        )
    if cell == "gru":
        out["linear_before_reset"] = desc.linear_before_reset
    for f in OUTPUTS[cell]:
        out[FLAGS[f]] = getattr(desc, f) is not None
    return out


def _sample(desc, rng) -> list:
    """Values that keep the layer tame: x, states and biases in [-1, 1], weights in [-1, 1]
    divided by the sums' lengths, lengths in [0, T]."""
    out = []
    for f in INPUTS[desc.CELL]:
        td = getattr(desc, f)
        if td is None:
            continue
        n = td.required_elements
        if f == "sequence_lengths_tensor":
            out.append(rng.integers(0, desc.input_tensor.sizes[1] + 1, size=n).astype(np.uint32))
            continue
        scale = 1.0
        if f in ("weight_tensor", "recurrence_tensor"):
            scale = 1.0 / max(1, td.sizes[3])
        out.append((rng.uniform(-1, 1, size=n) * scale).astype(td.data_type.numpy))
    return out


# ============================================================================ the command line
def _from_cli(cell: str):
    def desc(x: TensorDesc, given: dict):
        t, b, i = (x.sizes[1], x.sizes[2], x.sizes[3]) if x.rank == 4 else (1, 1, x.sizes[-1])
        h = int((given.get("hidden") or [i])[0])
        direction = given.get("direction") or "forward"
        d = directions_of(direction)
        g = CELLS[cell][1]
        w = TensorDesc(x.data_type, [1, d, g * h, i])
        r = TensorDesc(x.data_type, [1, d, g * h, h])
        infer = {"rnn": infer_rnn, "gru": infer_gru, "lstm": infer_lstm}[cell]
        return infer(TensorDesc(x.data_type, [1, t, b, i]), w, r, direction=direction)

    return desc


def _spec(cell: str, functional, reference, infer) -> OpSpec:
    name = CELLS[cell][0]
    tensors = ("x", "weight", "recurrence") + tuple(KEYWORDS[f] for f in INPUTS[cell][3:])
    return OpSpec(
        name=name,
        key=cell,
        desc=DESCS[cell],
        support=SUPPORT[cell],
        infer_output=infer,
        validate=validate,
        reference=reference,
        functional=functional,
        tensors=tensors,
        arguments=_arguments,
        planner=RECURRENT,
        cli=Cli(
            (
                CliArg("--hidden", "hidden size (default: the input size)"),
                CliArg("--direction", "forward, backward or bidirectional", kind="str"),
            ),
            _from_cli(cell),
            "--shape 1,10,2,16 --hidden 16 --direction bidirectional",
        ),
        page=f"DML_{cell.upper()}_OPERATOR_DESC",
        tolerance=tolerance,
        sample=_sample,
    )


RNN = _spec("rnn", rnn, reference_rnn, infer_rnn)
LSTM = _spec("lstm", lstm, reference_lstm, infer_lstm)
GRU = _spec("gru", gru, reference_gru, infer_gru)
SPECS = (RNN, LSTM, GRU)
