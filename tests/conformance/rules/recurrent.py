"""The rules of DML_RNN, DML_LSTM and DML_GRU: small layers X {1, T, B, I} (T 1-6, B 1-3, I
and H 1-8), every direction, the optional inputs as a prefix of the struct's order (bias,
initial state(s), sequence lengths, peephole), now and then an output left out, LSTM's clip
and coupled gates, GRU's LinearBeforeReset, now and then other activations."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops import recurrent as rec
from gpudml.ops import spec_named
from gpudml.testing import assert_within

from ..draws import Draw
from ..hostile import broken_choice, maybe_hostile, with_entry
from ..registry import Ask, Drawn, rule

_OTHER_ACTIVATIONS = ("sigmoid", "tanh", "relu", "softsign", "hard_sigmoid", "elu", "identity")


def _call(cell: str):
    def call(d: Draw, ask: Ask) -> Drawn:
        """A small layer (the asked rank's sizes where another rank: rejected)."""
        dt = ask.data_type
        if ask.rank != 4:  # (rejected: the table's rank is 4)
            x = ask.input(d, 4)
            t, b, i = (tuple(x.sizes) + (1, 1, 1))[1:4]
        else:
            t, b, i = ask.sizes[1:] if ask.sizes is not None else (d.int(1, 6), d.int(1, 3), d.int(1, 8))
            x = dml.TensorDesc(dt, [1, t, b, i])
        h = d.int(1, 8)
        direction = d.pick(["forward", "backward", "bidirectional"])
        nd = 2 if direction == "bidirectional" else 1
        g = rec.CELLS[cell][1]
        tensors = [x, dml.TensorDesc(dt, [1, nd, g * h, i]), dml.TensorDesc(dt, [1, nd, g * h, h])]
        optional = {"bias": [1, 1, nd, 2 * g * h], "hidden_init": [1, nd, b, h], "cell_init": [1, nd, b, h],
                    "sequence_lengths": [1, 1, 1, b], "peephole": [1, 1, nd, 3 * h]}
        names = [rec.KEYWORDS[f] for f in rec.INPUTS[cell][3:]]
        for name in names[:d.int(0, len(names))]:
            kind = dml.DataType.UINT32 if name == "sequence_lengths" else dt
            tensors.append(dml.TensorDesc(kind, optional[name]))
        attributes = {"direction": direction}
        if d.int(0, 3) == 0:
            per = len(rec.CELLS[cell][2])
            attributes["activations"] = [d.pick(list(_OTHER_ACTIVATIONS)) for _ in range(per * nd)]
        flags = [rec.FLAGS[f] for f in rec.OUTPUTS[cell]]
        if d.int(0, 3) == 0:
            attributes[d.pick(flags)] = False
        if cell == "lstm":
            if d.bool():
                attributes.update(clip=d.pick([0.5, 1.0, 3.0]), use_clip=True)
            attributes["couple_input_forget"] = d.int(0, 3) == 0
        if cell == "gru":
            attributes["linear_before_reset"] = d.bool()
        return Drawn(tensors, attributes)
    return call


def _broken(cell: str):
    @st.composite
    def broken(draw, desc):
        w, r = desc.weight_tensor, desc.recurrence_tensor
        choices = {
            "weight_rows": ("weight_tensor", dml.TensorDesc(w.data_type, with_entry(w.sizes, 2, w.sizes[2] + 1))),
            "recurrence_cols": ("recurrence_tensor",
                                dml.TensorDesc(r.data_type, with_entry(r.sizes, 2, r.sizes[2] + 1))),
            "activations": ("activation_descs", desc.activation_descs + ("tanh",)),
            "direction": ("direction", "sideways"),
        }
        for f in rec.OUTPUTS[cell]:
            out = getattr(desc, f)
            if out is not None:
                choices["output_sizes"] = (f, dml.TensorDesc(out.data_type, with_entry(out.sizes, 3, out.sizes[3] + 1)))
        return broken_choice(draw, desc, choices)
    return broken


def _functional(cell: str):
    @st.composite
    def functional(draw, x, shape):
        """Weights for a 4-D x (of x's type where it is a float), now and then a hostile direction."""
        rng = np.random.default_rng(draw(st.integers(0, 999)))
        i = shape[3] if len(shape) == 4 else 1
        kind = x.dtype if isinstance(x, np.ndarray) and x.dtype.kind == "f" else np.float32
        g, h = rec.CELLS[cell][1], draw(st.integers(1, 4))
        w = (rng.uniform(-1, 1, (1, 1, g * h, i)) / max(1, i)).astype(np.dtype(kind).newbyteorder("="))
        r = (rng.uniform(-1, 1, (1, 1, g * h, h)) / h).astype(np.dtype(kind).newbyteorder("="))
        args = {"weight": w, "recurrence": r, "direction": maybe_hostile(draw, "forward")}
        return args, lambda a: getattr(reference, cell)(a, **args)
    return functional


def _compare(cell: str):
    def compare(got, want, x, args):
        """Within the documented precision, output by output."""
        spec = spec_named(cell)
        tolerance = spec.tolerance(want, [x, args["weight"], args["recurrence"]], args)
        for g, w in zip(got, want, strict=True):
            assert_within(g, w, tolerance, spec.name)
    return compare


_FIELDS = ("x", "input_tensor", "weight", "weight_tensor", "recurrence", "recurrence_tensor", "activation_descs",
           "direction", "output_sequence_tensor", "output_single_tensor", "output_cell_single_tensor", "device",
           "DimensionCount")

for _cell in ("rnn", "lstm", "gru"):
    rule(_cell, broken=_broken(_cell), functional=_functional(_cell), compare=_compare(_cell), fields=_FIELDS)(
        _call(_cell))
