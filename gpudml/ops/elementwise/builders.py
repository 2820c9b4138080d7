"""A row's OpSpec (`spec`): its desc class, the functional form (`functional_of`, numpy's
broadcasting as stride-0 descs: `broadcast_descs`), `infer_output_of`, `arguments` and its
`gpudml shader` options."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ...errors import InvalidArgumentError
from ...kernels.elementwise import ElementWisePlanner
from ...tensor_desc import TensorDesc
from ...types import DataType
from ..spec import Call, Cli, CliArg, Example, OpSpec, desc_class, support_table
from .quantize import cast_dtype
from .row import Attr, Row, argument_name, signature_of
from .semantics import ElementWiseDesc, problem, read_broadcast, reference_of, tolerance_of, validate


def broadcast_descs(fn: str, descs: list[TensorDesc], names: list[str]) -> list[TensorDesc]:
    """numpy's broadcasting of the inputs' descs as DirectML descs of one shape: axes
    prepended with size 1, and every axis of size 1 against a larger one read with stride
    0 (no copy). InvalidArgumentError naming the shapes where they do not broadcast."""
    rank = max(d.rank for d in descs)
    shape = []
    for axis in range(rank):
        sizes = {d.sizes[axis - rank + d.rank] for d in descs if axis - rank + d.rank >= 0} - {1}
        if len(sizes) > 1:
            listed = ", ".join(f"{n} {list(d.sizes)}" for n, d in zip(names, descs))
            raise InvalidArgumentError(f"{fn}: the shapes do not broadcast ({listed}: sizes {sorted(sizes)} meet on "
                                       f"axis {axis - rank} of the result)")
        shape.append(sizes.pop() if sizes else 1)
    out = []
    for d in descs:
        lead = rank - d.rank
        if lead:  # axes prepended with size 1
            d = TensorDesc(d.data_type, [1] * lead + list(d.sizes), [0] * lead + list(d.effective_strides),
                           total_tensor_size_in_bytes=d.total_tensor_size_in_bytes)
        out.append(read_broadcast(d, tuple(shape)))
    return out


def functional_of(row: Row) -> Callable:
    signature = signature_of(row)

    def functional(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise InvalidArgumentError(f"{row.functional}: {exc} (its arguments: {signature})") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        device = values.pop("device")
        tensors = [(argument_name(f), values.pop(argument_name(f))) for f in row.tensors]
        tensors = [(name, value) for (name, value), f in zip(tensors, row.tensors)
                   if not (value is None and f in row.optional)]
        if row.optional:  # which of the inputs are given
            values["given"] = tuple(f for f in row.tensors if f not in row.optional
                                    or bound.arguments[argument_name(f)] is not None)
        return Call(tensors, values, device)
    functional.__name__ = functional.__qualname__ = row.functional
    functional.__signature__ = signature
    extras = []
    if row.scale_bias:
        extras.append("`scale_bias`: a ScaleBias or (scale, bias), x * scale + bias applied to x first")
    if row.fused_activation:
        extras.append("`fused_activation`: a FusedActivation or an activation's name, applied to the result "
                      "(float outputs)")
    broadcast = "; the inputs broadcast as numpy's do" if row.arity > 1 else ""
    functional.__doc__ = (f"DML_OPERATOR_{row.dml}: {row.summary}{broadcast}. " + ". ".join(extras)
                          + (". " if extras else "") + f"Precision: {row.precision}.")
    return functional


def infer_output_of(row: Row, desc_cls) -> Callable:
    def infer_output(*descs, **attributes):
        # (an optional input named None: left out, as `arguments` names it)
        left_out = [f for f in row.optional
                    if argument_name(f) in attributes and attributes.pop(argument_name(f)) is None]
        given = attributes.pop("given", None) or tuple(f for f in row.tensors if f not in left_out)[:len(descs)]
        descs = broadcast_descs(row.functional, list(descs), [argument_name(f) for f in given])
        named = dict(zip(given, descs))
        out_type = named[row.out_from].data_type if row.out_from else descs[0].data_type
        if row.logical:
            out_type = DataType.parse(attributes.pop("output_data_type", "UINT8"),
                                      f"{row.functional}: output_data_type")
        if row.cast:
            out_type = cast_dtype(attributes.pop("dtype"), row.functional)
        if row.out_type is not None:
            out_type = row.out_type(named, attributes)
        return desc_cls(**{f: named.get(f) for f in row.tensors}, **{row.output: TensorDesc(out_type, descs[0].sizes)},
                        **attributes)
    return infer_output


def arguments(desc: ElementWiseDesc) -> dict:
    """The functional keywords of `desc`: its attributes, and each optional input it leaves
    out as None (so that the tensors it gives pass positionally up to the first such one,
    by name after it: ops/spec.py's tensor_arguments)."""
    row = desc.ROW
    out = {argument_name(f): None for f in row.optional if getattr(desc, f) is None}
    out.update({a.name: getattr(desc, a.name) for a in row.attributes})
    if row.logical:
        out["output_data_type"] = desc.output_tensor.data_type
    if row.cast:
        out["dtype"] = desc.output_tensor.data_type
    if row.out_type is not None:
        out.update(row.out_type_arguments(desc))
    if row.scale_bias:
        out["scale_bias"] = desc.scale_bias
    if row.fused_activation:
        out["fused_activation"] = desc.fused_activation
    return out


def _from_cli(row: Row, infer):
    def desc(x: TensorDesc, a: dict):
        """(`gpudml shader`: an operator that takes no float tensor runs the CLI's default
        FLOAT32 as its newest row's first type, UINT8 for the logical AND and NOT)"""
        newest = max(row.support, key=lambda r: r[0])
        sets = list(newest[2:]) if len(newest) > 3 else [newest[2]] * (row.arity + 1)

        def pick(types):
            return x.data_type if x.data_type in types else min(types, key=lambda t: -t.value)
        main = row.tensors.index(row.out_from) if row.out_from else 0
        groups = [g for g in row.type_groups() if row.tensors[main] in g]
        types = [pick(sets[main]) if i == main or any(f in g for g in groups) else pick(sets[i])
                 for i, f in enumerate(row.tensors)]
        attrs = {at.name: _cli_value(at, a.get(at.name)) for at in row.attributes}
        if row.cast:
            attrs["dtype"] = a.get("to") or "FLOAT16"
        return infer(*[TensorDesc(t, x.sizes, x.strides) for t in types], **attrs)
    return desc


def _default_text(a: Attr) -> str:
    if a.kind == "enum":
        return a.default.name.lower()
    if a.kind == "value":
        return f"the type's {a.default}"
    return str(a.default)


def _cli_value(a: Attr, raw):
    if raw is None:
        return None if a.kind == "value" else a.default
    if a.kind == "enum":
        return raw
    value = float(raw)
    return int(value) if a.kind == "value" and value.is_integer() else value


def spec(row: Row) -> OpSpec:
    """The OpSpec of `row`: its desc class, validation, reference, functional form, tolerance."""
    # The tensors in the struct's order (the order of the inputs a compiled operator takes),
    # an optional one keyword-only (None: left out).
    fields: list[tuple[str, Any, Any]] = [(f, Any, dataclasses.field(default=None, kw_only=True))
                                          if f in row.optional else (f, TensorDesc) for f in row.tensors]
    fields.append((row.output, TensorDesc))
    if row.scale_bias:
        fields.append(("scale_bias", Any, dataclasses.field(default=None)))
    if row.fused_activation:
        fields.append(("fused_activation", Any, dataclasses.field(default=None)))
    if row.min_max_data_type:
        fields.append(("min_max_data_type", Any, dataclasses.field(default=None)))
    fields += [(a.name, Any, dataclasses.field(default=None if a.kind == "value" else a.default))
               for a in row.attributes]
    name = f"{row.op}OperatorDesc"
    desc = desc_class(name, __package__, base=ElementWiseDesc, fields=fields, ROW=row, OPTIONAL_TENSORS=row.optional,
                      doc=f"DML_{row.dml}_OPERATOR_DESC: {row.summary}.")
    tensors = row.fields
    types_per_tensor = [(lvl, ranks, *types) for lvl, ranks, *types in row.support]
    support = support_table(row.op, tensors, types_per_tensor)
    infer = infer_output_of(row, desc)
    cli_args = tuple(CliArg(f"--{a.name.replace('_', '-')}", f"{a.name} (default {_default_text(a)})",
                            "str" if a.kind == "enum" else "number") for a in row.attributes)
    if row.cast:
        cli_args += (CliArg("--to", "the output's data type (default FLOAT16)", "str"),)
    examples = tuple(
        Example(name, inputs[0], {**{argument_name(f): v for f, v in zip(row.tensors[1:], inputs[1:])}, **attrs},
                expected, f"ns-directml-dml_{row.page}")
        for name, inputs, attrs, expected in row.examples)
    return OpSpec(
        name=row.op, key=row.key, desc=desc, support=support,
        infer_output=infer, validate=lambda d, level: validate(support, d, level),
        reference=reference_of(row), functional=functional_of(row),
        tensors=tuple(argument_name(f) for f in row.tensors),
        arguments=arguments, planner=ElementWisePlanner(problem),
        cli=Cli(cli_args, _from_cli(row, infer), "--shape 1024,1024"),
        page=f"DML_{row.dml}_OPERATOR_DESC", tolerance=tolerance_of(row), examples=examples,
    )


