"""Python's operators on Tensors and Expressions (`t + 1`, `-e`, `a @ b`, `t < 0`): each is the
functional form of the DirectML operator numpy's operator of that name means, looked up in
the operator registry when it runs (gpudml.functional.FUNCTIONS).

The seam: `BINARY` and `UNARY` name, for each Python operator, the functional form it calls
(API.md's names: `ELEMENT_WISE_ADD` is `dml.add`, GEMM `dml.gemm`). A form that is not
registered yet leaves its operators raising a TypeError that names it; once an operator
module registers it (an OpSpec in gpudml/ops/), its Python operators work, with nothing here
or in Tensor to edit. `available()` lists those that work now.

Python numbers next to a Tensor or an Expression are weak scalars, as numpy 2 (NEP 50) and
PyTorch take them: they become a one-element array of the tensor's dtype, which the
element-wise forms broadcast. `==` and `!=` are not element-wise: Tensors and Expressions
stay equal only to themselves (Expressions key a compiled graph's inputs), so the
comparisons mapped are `<`, `<=`, `>` and `>=` (`dml.logical_equals` is a call).

Tensors also tell numpy to leave binary operators to them (`__array_priority__`): `array +
tensor` calls the Tensor's `__radd__` rather than reading the tensor back.
"""

from __future__ import annotations

import numpy as np

from . import functional
from .graph import Expression
from .runtime import Tensor

#: Binary operators: Python method -> (functional form, whether the operands swap: the
#: reflected methods, `1 - t` is `subtract(1, t)`).
BINARY: dict[str, tuple[str, bool]] = {
    "__add__": ("add", False), "__radd__": ("add", True),
    "__sub__": ("subtract", False), "__rsub__": ("subtract", True),
    "__mul__": ("multiply", False), "__rmul__": ("multiply", True),
    "__truediv__": ("divide", False), "__rtruediv__": ("divide", True),
    "__pow__": ("pow", False), "__rpow__": ("pow", True),
    "__matmul__": ("gemm", False), "__rmatmul__": ("gemm", True),
    "__lt__": ("logical_less_than", False), "__le__": ("logical_less_than_or_equal", False),
    "__gt__": ("logical_greater_than", False), "__ge__": ("logical_greater_than_or_equal", False),
}
#: Forms that take floats only, and the form that computes the same for other types: `dml.add`
#: is DML_ELEMENT_WISE_ADD1 (FLOAT32/FLOAT16: its fused activation), ADD takes every type.
FOR_INTEGERS: dict[str, str] = {"add": "add0"}
#: Unary operators: Python method -> functional form.
UNARY: dict[str, str] = {"__neg__": "negate", "__abs__": "abs"}

_SYMBOLS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "pow": "**", "gemm": "@",
            "logical_less_than": "<", "logical_less_than_or_equal": "<=", "logical_greater_than": ">",
            "logical_greater_than_or_equal": ">=", "negate": "unary -", "abs": "abs()"}


def available() -> dict[str, str]:
    """The Python methods that work now (their functional form is registered) -> the form."""
    names = {**{m: f for m, (f, _) in BINARY.items()}, **UNARY}
    return {method: form for method, form in names.items() if form in functional.FUNCTIONS}


def _form(name: str, operand):
    dtype = operand.dtype if isinstance(operand, Tensor) else operand.dtype.numpy
    if name in FOR_INTEGERS and dtype.kind != "f":
        name = FOR_INTEGERS[name]
    form = functional.FUNCTIONS.get(name)
    if form is None:
        raise TypeError(
            f"{_SYMBOLS.get(name, name)} on a {type(operand).__name__} is gpudml.{name}, which is not implemented yet "
            f"(no such operator in gpudml's registry); read the tensor back with np.asarray(...) to compute "
            f"on the host meanwhile")
    return form


def _operand(value, like):
    """`value` as a functional form takes it beside `like` (a Tensor or an Expression): Tensors,
    Expressions and numpy arrays as they are, a Python or numpy scalar as a one-element array
    of `like`'s dtype (a weak scalar, as numpy 2 and PyTorch treat it)."""
    if isinstance(value, (Tensor, Expression, np.ndarray)):
        return value
    if isinstance(value, (bool, int, float, np.generic)):
        dtype = like.dtype if isinstance(like, Tensor) else like.dtype.numpy
        return np.full([1], value, dtype=dtype)
    return None


def _binary(method: str, name: str, reflected: bool):
    def operator(self, other):
        operand = _operand(other, self)
        if operand is None:
            return NotImplemented
        form = _form(name, self)
        return form(operand, self) if reflected else form(self, operand)
    operator.__name__ = method
    operator.__doc__ = f"`{_SYMBOLS[name]}`: gpudml.{name}" + (" (operands swapped)" if reflected else "")
    return operator


def _unary(method: str, name: str):
    def operator(self):
        return _form(name, self)(self)
    operator.__name__ = method
    operator.__doc__ = f"`{_SYMBOLS[name]}`: gpudml.{name}"
    return operator


def install(cls) -> None:
    """Give `cls` (Tensor, Expression) the Python operators of BINARY and UNARY."""
    for method, (name, reflected) in BINARY.items():
        setattr(cls, method, _binary(method, name, reflected))
    for method, name in UNARY.items():
        setattr(cls, method, _unary(method, name))


for _cls in (Tensor, Expression):
    install(_cls)
Tensor.__array_priority__ = 1000  # `array + tensor`: numpy leaves it to Tensor.__radd__

__all__ = ["BINARY", "UNARY", "available", "install"]
