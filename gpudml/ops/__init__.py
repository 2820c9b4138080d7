"""One module per DirectML operator; REGISTRY maps each desc class to its module."""

from __future__ import annotations

from types import ModuleType

from . import padding, reduce, reverse_subsequences, slice1

REGISTRY: dict[type, ModuleType] = {
    slice1.Slice1OperatorDesc: slice1,
    padding.PaddingOperatorDesc: padding,
    reverse_subsequences.ReverseSubsequencesOperatorDesc: reverse_subsequences,
    reduce.ReduceOperatorDesc: reduce,
}


def module_for(desc) -> ModuleType:
    from ..errors import InvalidArgumentError

    try:
        return REGISTRY[type(desc)]
    except KeyError:
        known = ", ".join(cls.__name__ for cls in REGISTRY)
        raise InvalidArgumentError(
            f"create_operator: {type(desc).__name__} is not an operator desc ({known})") from None


def tensor_fields(desc) -> tuple[list[tuple[str, object]], list[tuple[str, object]]]:
    """(inputs, outputs) as (field name, TensorDesc) in the desc's field order; the
    field named `output_tensor` is the output, every other TensorDesc field an input."""
    import dataclasses

    from ..tensor_desc import TensorDesc

    inputs, outputs = [], []
    for f in dataclasses.fields(desc):
        value = getattr(desc, f.name)
        if isinstance(value, TensorDesc):
            (outputs if f.name == "output_tensor" else inputs).append((f.name, value))
    return inputs, outputs
