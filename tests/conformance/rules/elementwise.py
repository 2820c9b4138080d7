"""The rules of the element-wise and activation operators (a rule per row of
gpudml.ops.elementwise.TABLE, and of QUANTIZED_LINEAR_ADD's, gpudml.ops.quantized_linear_add.ROW)."""

from __future__ import annotations

import numpy as np
from conftest import assert_bits_equal, random_bits
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import elementwise as elementwise_op
from gpudml.ops import quantized_linear_add as quantized_linear_add_op
from gpudml.ops import spec_named
from gpudml.testing import assert_within

from ..draws import FL, Draw, HypothesisDraw, T
from ..hostile import maybe_hostile, replace_fields, with_entry
from ..registry import Ask, Drawn, rule
from ._common import attribute, fused_activation


def _elementwise_call(row):
    def call(d: Draw, ask: Ask) -> Drawn:
        """Inputs of the input's sizes and type; attributes near their defaults; a scale and
        bias (float inputs but FLOAT64, which computes on shader-f64 adapters only), a fused
        activation (float outputs) about half the time."""
        x = ask.input(d)
        groups = row.type_groups()

        def type_of(field):  # a group of one type takes its first field's; a fixed field its one type
            if field in _DRAWN_AS_INPUT.get(row.key, ()) or any(g[0] in _DRAWN_AS_INPUT.get(row.key, ())
                                                                for g in groups if field in g):
                return ask.types[row.fields[0]]
            return _fixed_type(row, field) or ask.types[next((g[0] for g in groups if field in g), field)]
        # (a tensor of one element, QUANTIZED_LINEAR_ADD's scales: every axis 1, broadcast by infer_output)
        tensors = [x] + [dml.TensorDesc(type_of(f), [1] * ask.rank if f in _SINGLE.get(row.key, ()) else x.sizes)
                         for f in row.tensors[1:]]
        attributes = {a.name: attribute(d, a, ask.level, type_of(row.output)) for a in row.attributes}
        if row.logical:
            attributes["output_data_type"] = ask.types["output_tensor"]
        if row.cast:
            attributes["dtype"] = ask.types["output_tensor"]
        if row.key == "quantize_linear":  # the scale: FLOAT32 for an INT32 input, else the input's type
            tensors[1] = dml.TensorDesc(T.FLOAT32 if ask.data_type == T.INT32 else ask.data_type, x.sizes)
        # The optional inputs left out (a zero point: from FL_6_2 on for (DE)QUANTIZE_LINEAR, always for
        # QUANTIZED_LINEAR_ADD), each a quarter of the time.
        optional_from = FL.FL_4_0 if row.key == "quantized_linear_add" else FL.FL_6_2
        left_out = [f for f in row.optional if ask.level >= optional_from and d.int(0, 3) == 0]
        if left_out:
            attributes["given"] = tuple(f for f in row.tensors if f not in left_out)
            tensors = [t for f, t in zip(row.tensors, tensors) if f not in left_out]
            if row.out_type is not None:
                attributes["output_data_type"] = type_of(row.output)
        if row.scale_bias and ask.data_type in (T.FLOAT32, T.FLOAT16) and d.bool():
            attributes["scale_bias"] = (d.real(-2.0, 2.0), d.real(-1.0, 1.0))
        if row.fused_activation and ask.data_type.is_float and d.bool():
            attributes["fused_activation"] = fused_activation(d)
        return Drawn(tensors, attributes)
    return call


def _fixed_type(row, field):
    """The one type every row of the support table gives an input other than the first
    (QUANTIZED_LINEAR_ADD's scales: FLOAT32), or None: the rule does not draw it."""
    if field not in row.tensors[1:]:
        return None
    i = row.fields.index(field)
    sets = {frozenset(r[2 + i] if len(r) > 3 else r[2]) for r in row.support}
    return next(iter(next(iter(sets)))) if len(sets) == 1 and len(next(iter(sets))) == 1 else None


def _elementwise_broken(row):
    @st.composite
    def broken(draw, desc):
        inputs = desc.input_descs
        out, out_field = getattr(desc, row.output), row.output
        listed = set().union(*(types[-1] if len(types) > 1 else types[0] for _, _, *types in row.support))
        wrong = [t for t in T if t != out.data_type and (t not in listed or not (row.logical or row.cast))]
        kinds = ["output_sizes"] + (["output_type"] if wrong else []) + (["input_sizes"] if row.arity > 1 else [])
        kinds += [a.name for a in row.attributes]
        kinds += (["scale_bias"] if row.scale_bias else []) + (["fused_activation"] if row.fused_activation else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "output_sizes":
            sizes = with_entry(out.sizes, draw(st.integers(0, out.rank - 1)), draw(st.integers(1, 3)) + max(out.sizes))
            return replace_fields(desc, **{out_field: dml.TensorDesc(out.data_type, sizes)}), f"{out_field}.sizes", kind
        if kind == "output_type":
            dt = draw(st.sampled_from(wrong))
            return replace_fields(desc, **{out_field: dml.TensorDesc(dt, out.sizes)}), f"{out_field}.data_type", kind
        if kind == "input_sizes":  # the last input given
            field, last = [(f, t) for f, t in zip(row.tensors, inputs) if t is not None][-1]
            sizes = with_entry(last.sizes, 0, last.sizes[0] + 1)
            return replace_fields(desc, **{field: dml.TensorDesc(last.data_type, sizes)}), f"{field}.sizes", kind
        if kind == "scale_bias":
            value = draw(st.sampled_from(["2", (1.0,), (1.0, "x"), (1e300, 0.0), 3]))
            return replace_fields(desc, scale_bias=value), "scale_bias", kind
        if kind == "fused_activation":
            value = draw(st.sampled_from(["bogus", 7, ("relu",), elementwise_op.ScaleBias()]))
            return replace_fields(desc, fused_activation=value), "fused_activation", kind
        scalar = next(a for a in row.attributes if a.name == kind).kind == "value"  # None: the type's limit
        value = draw(st.sampled_from(["1", [1.0], 1e300, True] + ([] if scalar else [None])))
        return replace_fields(desc, **{kind: value}), kind, kind
    return broken


def _elementwise_functional(row, spec):
    @st.composite
    def calls(draw, x, shape):
        numeric = isinstance(x, np.ndarray) and x.dtype.kind in "fiu"
        dtype = x.dtype.newbyteorder("=") if numeric else np.dtype(np.float32)
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        args = {}
        others = []
        for field in row.tensors[1:]:
            cut = draw(st.integers(0, len(shape)))  # a trailing part of the shape, some axes 1: numpy broadcasting
            other_shape = [n if draw(st.booleans()) else 1 for n in shape[cut:]] or [1]
            if draw(st.integers(0, 9)) == 0:
                other_shape = [n + 1 for n in shape]  # does not broadcast
            other = random_bits(rng, dtype, other_shape)
            args[elementwise_op.argument_name(field)] = other
            others.append(other)
        try:
            value_type = dml.DataType.from_numpy(dtype)
        except dml.InvalidArgumentError:
            value_type = None
        for a in row.attributes:
            args[a.name] = maybe_hostile(draw, attribute(HypothesisDraw(draw), a, data_type=value_type))
        if row.logical:
            args["output_data_type"] = draw(st.sampled_from(["UINT8", np.uint32, "float32", None]))
        if row.cast:
            args["dtype"] = draw(st.sampled_from(["FLOAT16", np.int8, "uint64", T.FLOAT32, "bogus", None]))
        if row.fused_activation:
            args["fused_activation"] = draw(st.sampled_from([None, "relu", dml.FusedActivation("relu"), "bogus", 3]))
        if row.scale_bias:
            args["scale_bias"] = draw(st.sampled_from([None, (2.0, 1.0), dml.ScaleBias(0.5, -1.0), "x", (1, 2, 3)]))
        return args, lambda a: spec.reference(a, **args)
    return calls


def _elementwise_compare(spec):
    def compare(got, want, x, args):
        """Within the row's documented precision (integers and logical results exactly)."""
        tensors = [x] + [v for k, v in args.items() if isinstance(v, np.ndarray)]
        attributes = {k: v for k, v in args.items() if not isinstance(v, np.ndarray)}
        if want.dtype.kind != "f":
            assert_bits_equal(got, want)
            return
        arrays = np.broadcast_arrays(*tensors)
        assert_within(got, want, spec.tolerance(want, arrays, attributes), spec.name)
    return compare


#: Tensors whose type the rule takes from the input though the table draws it apart (each free
#: tensor multiplies the feature-level test's type sets by 11): QUANTIZED_LINEAR_ADD's b (and its
#: zero point), whose other types tests/test_elementwise.py runs.
_DRAWN_AS_INPUT = {"quantized_linear_add": ("b_tensor",)}
#: Inputs of one element.
_SINGLE = {"quantized_linear_add": quantized_linear_add_op.SINGLE}

for _row in (*elementwise_op.TABLE, quantized_linear_add_op.ROW):
    _spec = spec_named(_row.key)
    _names = tuple(elementwise_op.argument_name(f) for f in _row.tensors)
    _first_group = next((g for g in _row.type_groups() if _row.fields[0] in g), (_row.fields[0],))
    rule(_spec.key, broken=_elementwise_broken(_row), functional=_elementwise_functional(_row, _spec),
         compare=_elementwise_compare(_spec), light=_row.key not in ("identity", "add0"),
         free=tuple(f for f in _row.fields[1:]  # one field per group of one type (its first), not of a fixed type
                    if f not in _first_group and all(f == g[0] for g in _row.type_groups() if f in g)
                    and _fixed_type(_row, f) is None and f not in _DRAWN_AS_INPUT.get(_row.key, ())),
         fields=_names + _row.tensors + (_row.output, "scale_bias", "fused_activation", "shapes", "device",
                                         "output_data_type", "dtype")
         + tuple(a.name for a in _row.attributes))(_elementwise_call(_row))
