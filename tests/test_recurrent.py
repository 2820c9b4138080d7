"""RNN, LSTM and GRU (gpudml/ops/recurrent.py, kernels/recurrent.py): what the conformance kit
does not cover: every cell and direction with every optional input against the float64
reference on both strategies under both adapter classes (bit-identical strategies), sequence
lengths (zeros past a row's length, the final state at its last step), outputs left out,
activations with attributes, clip and coupled gates, LinearBeforeReset, float16, the
precision at its bound at T = 50, dispatches per sequence constant in T, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import gpudml as dml
from gpudml import reference
from gpudml.errors import InvalidArgumentError
from gpudml.kernels import recurrent as family
from gpudml.ops import recurrent as rec
from gpudml.ops.activations import FUSABLE

FUNCS = {"rnn": dml.rnn, "gru": dml.gru, "lstm": dml.lstm}


def _layer(cell, t=5, b=3, i=4, h=6, direction="forward", dtype=np.float32, seed=0, full=True):
    rng = np.random.default_rng(seed)
    d = 2 if direction == "bidirectional" else 1
    g = rec.CELLS[cell][1]
    x = rng.uniform(-1, 1, (1, t, b, i)).astype(dtype)
    w = (rng.uniform(-1, 1, (1, d, g * h, i)) / i).astype(dtype)
    r = (rng.uniform(-1, 1, (1, d, g * h, h)) / h).astype(dtype)
    bias = rng.uniform(-1, 1, (1, 1, d, 2 * g * h)).astype(dtype)
    kw = {"direction": direction}
    if full:
        kw.update(
            hidden_init=rng.uniform(-1, 1, (1, d, b, h)).astype(dtype),
            sequence_lengths=np.array([t, max(0, t - 3), 0][:b], np.int32),
        )
        if cell == "lstm":
            kw.update(
                cell_init=rng.uniform(-1, 1, (1, d, b, h)).astype(dtype),
                peephole=rng.uniform(-1, 1, (1, 1, d, 3 * h)).astype(dtype),
            )
    return (x, w, r, bias), kw


def _check(got, want, args, kw):
    tol = rec.tolerance(None, list(args), {"bias": args[3], **kw})
    assert len(got) == len(want)
    for g, e in zip(got, want):
        assert g.shape == e.shape
        err = np.max(np.abs(g.astype(np.float64) - e.astype(np.float64)))
        assert err <= tol, (err, tol)


@pytest.fixture(scope="module", params=["cpu", "gpu"])
def classed(request, adapter):
    return dml.Device(adapter=adapter, adapter_class=request.param)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("direction", ["forward", "backward", "bidirectional"])
def test_cells_match_the_reference_on_both_strategies(classed, cell, direction):
    args, kw = _layer(cell, direction=direction)
    op = classed.create_operator(_desc(cell, args, kw))
    want = getattr(reference, cell)(*args, **kw)
    results = []
    for strategy in ("cells", "persistent"):
        compiled = classed.compile_operator(op, strategy)
        inputs = [
            a
            for a in (*args, kw.get("hidden_init"), kw.get("cell_init"), _lens(kw), kw.get("peephole"))
            if a is not None
        ]
        out = [o.numpy() if hasattr(o, "numpy") else o for o in compiled.execute(inputs)]
        _check(out, want, args, kw)
        results.append(out)
    for a, b in zip(*results):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))  # the strategies' bits agree


def _lens(kw):
    v = kw.get("sequence_lengths")
    return None if v is None else np.asarray(v, np.uint32).reshape(1, 1, 1, -1)


def _desc(cell, args, kw):
    descs = [dml.TensorDesc(dml.DataType.FLOAT32, a.shape) for a in args]
    names = [n for n in ("hidden_init", "cell_init", "sequence_lengths", "peephole") if kw.get(n) is not None]
    for n in names:
        a = _lens(kw) if n == "sequence_lengths" else kw[n]
        descs.append(dml.TensorDesc(dml.DataType.from_numpy(a.dtype), a.shape))
    infer = {"rnn": rec.infer_rnn, "gru": rec.infer_gru, "lstm": rec.infer_lstm}[cell]
    return infer(*descs, optional_inputs=("bias", *names), direction=kw["direction"])


def test_functional_form_returns_a_tuple_in_field_order(device):
    args, kw = _layer("lstm")
    got = dml.lstm(*args, **kw, device=device)
    assert isinstance(got, tuple)
    seq, hidden, cell = got
    assert seq.shape == (5, 1, 3, 6) and hidden.shape == cell.shape == (1, 1, 3, 6)
    # sequence lengths: zeros past a row's length, the final state at its last step, row 2 (length 0) the init
    assert np.all(seq[2:, 0, 1] == 0) and np.all(seq[:, 0, 2] == 0)
    np.testing.assert_allclose(hidden[0, 0, 1], seq[1, 0, 1], atol=0)
    np.testing.assert_allclose(hidden[0, 0, 2], kw["hidden_init"][0, 0, 2], atol=0)
    np.testing.assert_allclose(cell[0, 0, 2], kw["cell_init"][0, 0, 2], atol=0)


def test_outputs_left_out(device):
    args, kw = _layer("gru", full=False)
    (only,) = (dml.gru(*args, **kw, output_sequence=False, device=device),)
    want = reference.gru(*args, **kw)
    np.testing.assert_allclose(only, want[1], atol=1e-5)
    with pytest.raises(InvalidArgumentError, match="no output"):
        dml.rnn(*_layer("rnn")[0], output_sequence=False, output_single=False, device=device)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_activations_clip_couple_and_linear_before_reset(device, cell):
    args, kw = _layer(cell, direction="bidirectional")
    per = len(rec.CELLS[cell][2])
    acts = [
        dml.FusedActivation("leaky_relu", alpha=0.2),
        dml.FusedActivation("hard_sigmoid", alpha=0.3, beta=0.4),
        "softsign",
    ][:per] + ["sigmoid", "elu", "tanh"][:per]
    kw["activations"] = acts
    if cell == "lstm":
        kw.update(clip=0.6, use_clip=True, couple_input_forget=True)
    else:
        kw["linear_before_reset"] = True
    _check(FUNCS[cell](*args, **kw, device=device), getattr(reference, cell)(*args, **kw), args, kw)


def test_float16(device):
    args, kw = _layer("lstm", dtype=np.float16, t=4)
    got = dml.lstm(*args, **kw, device=device)
    assert all(g.dtype == np.float16 for g in got)
    _check(got, reference.lstm(*args, **kw), args, kw)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_precision_at_the_bound_over_a_long_sequence(device, cell):
    args, kw = _layer(cell, t=50, b=2, i=16, h=16, seed=3)
    got = FUNCS[cell](*args, **kw, device=device)
    exact = rec._exact(
        cell,
        *args,
        kw.get("hidden_init"),
        kw.get("cell_init"),
        kw.get("sequence_lengths"),
        kw.get("peephole"),
        "forward",
        None,
        None,
        False,
        False,
    )
    tol = rec.tolerance(None, list(args), {"bias": args[3]})
    for g, e in zip(got, exact):
        err = float(np.max(np.abs(g - e)))
        assert err <= tol
    assert tol < 1e-3  # the bound is tight enough to mean something at T = 50


def _problem(cell, t, h=8, direction="forward"):
    args, kw = _layer(cell, t=t, h=h, direction=direction, full=False)
    return rec.problem(_desc(cell, args, kw))


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_dispatches_per_sequence_constant_in_t(cell):
    from gpudml.caps import Caps

    gpu = Caps("a GPU", "vulkan", "DiscreteGPU", frozenset(), 65535, 1 << 27, 1 << 30, 256, 16384)
    for caps in (None, gpu):
        counts = {t: family.dispatch_count(_problem(cell, t), caps, "persistent") for t in (5, 50)}
        assert counts[5] == counts[50] == 2, counts
    # cells: one dispatch a step (two for GRU without LinearBeforeReset), plus the GEMM
    assert family.dispatch_count(_problem(cell, 5), None, "cells") == 1 + 5 * (2 if cell == "gru" else 1)
    # a hidden size past the persistent kernel's workgroup memory runs `cells` only
    assert family.RECURRENCE.strategies_for(_problem(cell, 2, h=family.MAX_PERSISTENT_HIDDEN + 1), gpu) == ("cells",)


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda a, kw: ((a[0], a[1][:, :, :-1], a[2], a[3]), kw),
            r"Lstm: weight_tensor.sizes \[1, 1, 23, 4\] must be \[1, 1, 24, 4\]",
        ),
        (
            lambda a, kw: ((a[0], a[1], a[2][:, :, :-1], a[3]), kw),
            r"Lstm: recurrence_tensor.sizes \[1, 1, 23, 6\] must be",
        ),
        (lambda a, kw: ((a[0], a[1], a[2], a[3][..., :-1]), kw), r"Lstm: bias_tensor.sizes \[1, 1, 1, 47\] must be"),
        (
            lambda a, kw: (a, {**kw, "sequence_lengths": np.array([6, 1, 0])}),
            r"lstm: sequence_lengths must be <= seq_length = 5",
        ),
        (lambda a, kw: (a, {**kw, "sequence_lengths": np.array([-1, 1, 0])}), r"lstm: sequence_lengths must be >= 0"),
        (lambda a, kw: (a, {**kw, "activations": ["tanh", "tanh"]}), r"Lstm: activation_descs holds 2 .* needs 3"),
        (lambda a, kw: (a, {**kw, "activations": ["tanh", "bogus", "tanh"]}), r"activation_descs\[1\]: 'bogus'"),
        (lambda a, kw: (a, {**kw, "direction": "sideways"}), r"direction"),
        (lambda a, kw: (a, {**kw, "clip": -1.0, "use_clip": True}), r"clip_threshold = -1.0 must be positive"),
    ],
)
def test_bad_input_names_operator_field_rule_and_values(device, change, message):
    args, kw = _layer("lstm", full=False)
    kw["sequence_lengths"] = np.array([5, 1, 0])
    args, kw = change(args, kw)
    before = device.stats() if hasattr(device, "stats") else None
    with pytest.raises(InvalidArgumentError, match=message):
        dml.lstm(*args, **kw, device=device)
    if before is not None:
        assert device.stats() == before


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
def test_eight_storage_bindings_merge_the_state(device, adapter_class):
    """Where an adapter allows WebGPU's default of 8 storage buffers, the recurrence binds R
    once and one state buffer (`merged`), and gives the same bits."""
    from isolated import limited_device

    small = limited_device(device.adapter_name, adapter_class=adapter_class, max_storage_buffers_per_shader_stage=8)
    args, kw = _layer("lstm", full=False)
    kw["hidden_init"] = np.full((1, 1, 3, 6), 0.5, np.float32)
    want = dml.lstm(*args, **kw, device=dml.Device(adapter=device.adapter_name, adapter_class=adapter_class))
    op = small.create_operator(_desc("lstm", args, {**kw, "direction": "forward"}))
    compiled = small.compile_operator(op)
    assert all(len(k.buffers) <= 8 for k in compiled.program.kernels)
    got = dml.lstm(*args, **kw, device=small)
    for g, w in zip(got, want):
        assert np.array_equal(g.view(np.uint32), w.view(np.uint32))


@pytest.mark.parametrize("name", sorted(FUSABLE))
def test_every_fusable_activation_reaches_the_recurrence(device, name):
    """Each activation row that fuses (its attributes off their defaults, as
    tests/test_activation_reach.py draws them) as RNN's f, both directions: the table's
    formula reaches the recurrence with no edit in the recurrent modules."""
    from test_activation_reach import ATTRIBUTES

    act = dml.FusedActivation(name, **ATTRIBUTES.get(name, {}))
    args, kw = _layer("rnn", t=3, b=2, i=4, h=4, direction="bidirectional", full=False)
    kw["activations"] = [act, "tanh"]
    _check(dml.rnn(*args, **kw, device=device), reference.rnn(*args, **kw), args, kw)


def test_a_step_past_the_loop_budget_is_unsupported():
    """One invocation's step must stay inside the loop budget (llvmpipe ends longer loops):
    GRU's candidate reads r * h of every unit once per batch row of the invocation."""
    from gpudml.errors import UnsupportedError

    p = _problem("gru", 1, h=4)
    big = p._replace(r=dml.TensorDesc(dml.DataType.FLOAT32, [1, 1, 3 * 9000, 9000]), x=dml.TensorDesc(
        dml.DataType.FLOAT32, [1, 1, 4, 4]))
    with pytest.raises(UnsupportedError, match="hidden size 9000 passes one invocation's loop budget"):
        family.RECURRENCE.strategies_for(big, None)
    assert family.RECURRENCE.strategies_for(big._replace(linear_before_reset=True), None) == ("cells",)


def test_recorded_in_a_graph(device):
    """In a graph the functional form records a node whose outputs are a tuple of
    Expressions, which later nodes read."""
    args, kw = _layer("lstm", full=False)
    g = dml.Graph(device)
    x = g.input(list(args[0].shape), dtype=np.float32, name="x")
    seq, hidden, _ = dml.lstm(x, *args[1:], **kw)
    op = g.compile([dml.add(seq, seq), hidden])
    got = op({"x": args[0]})
    want = reference.lstm(*args, **kw)
    _check(got, [2 * want[0], want[1]], args, {**kw, "bias": args[3]})
