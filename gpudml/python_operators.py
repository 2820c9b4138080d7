"""Python's operators and numpy's ufuncs on Tensors and Expressions, as numpy 2 computes them,
on the GPU: `t + 1`, `1 - t`, `x_np * t`, `t // 2`, `t < 0`, `~mask`, `np.exp(t)`,
`np.maximum(e, 0)`. A Tensor in gives a Tensor out and an Expression in an Expression (a graph
node), whichever side it is on: nothing is read back.

Each Python operator is numpy's ufunc of that operator (`+` is np.add, `//` np.floor_divide,
`%` np.remainder, `<` np.less, unary `-` np.negative, `~` np.invert, ...), and numpy's ufuncs
applied to a Tensor or an Expression come here through `__array_ufunc__`. `apply` then does
what numpy does:

1. numpy's own loop resolution (gpudml/promotion.py, NEP 50: Python int/float/bool weak,
   numpy scalars and arrays, Tensors and Expressions strong) gives the dtype the operation
   computes in and the result's dtype: int32 tensor + 1.5 is float64, int8 tensor + np.int16
   array int16, int8 tensor + 300 numpy's OverflowError, bool - bool numpy's TypeError;
2. the operands are converted to that dtype: host values by numpy, Tensors and Expressions
   by DirectML's CAST on the GPU;
3. the DirectML operator(s) of `UFUNCS` compute it. Where the device or DirectML's operator
   does not take numpy's dtype (every DirectML arithmetic operator lacks FLOAT64, so an
   integer tensor / 2, whose numpy result is float64, cannot run), an UnsupportedError says
   numpy's result type and what to do; nothing is computed in a narrower type.

Semantics as numpy's: `//` floors (integers: toward minus infinity, not toward zero; floats:
numpy's (a - a % b) / b, rounded), `%` takes the divisor's sign (MODULUS_FLOOR), integer `//`
and `%` by zero give 0 (numpy gives 0 and warns; DirectML alone would give a), integer `**` of a
negative host exponent is numpy's ValueError (a device exponent: DirectML's POW, truncated),
`>>` of signed integers is arithmetic, `np.maximum`/`np.minimum` propagate NaN (`np.fmax`/
`np.fmin` are DirectML's MAX/MIN), comparisons of integers with a Python int beyond the type
are exact (uint8 < -1 is False everywhere). Comparisons and the other bool ufuncs return bool
Tensors and Expressions (`is_bool`: UINT8 0/1 inside; promotion.py). `==` and `!=` stay
identity (Tensors and Expressions are hashable; a compiled graph's inputs are keyed by
Expression): `np.equal`/`np.not_equal` compare element-wise.

Not taken: ufunc methods other than a call (`np.add.reduce`, `.outer`, `.at`, ...) and calls
with keywords (`out=`, `dtype=`, `where=`): on a Tensor numpy computes them on the host after
reading it back (as every numpy function given a Tensor does: `np.sum(t)`), on an Expression
they are a TypeError; a ufunc with no DirectML operator here is a TypeError naming it.

The seam: `UFUNCS` names, for each ufunc, the functional form it runs by the kind of the dtype
it computes in, looked up in the operator registry when it runs (gpudml.functional.FUNCTIONS);
a form that is not registered leaves its operators raising a TypeError that names it.
`available()` lists the Python methods that work now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import functional
from .errors import UnsupportedError
from .graph import Expression
from .promotion import (
    BOOL,
    beside,
    cast,
    data_type,
    device_of,
    host_array,
    is_device,
    loop_dtypes,
    mark_bool,
    operand_dtype,
    require,
)
from .runtime import Tensor


@dataclass
class Context:
    """What a ufunc's computation needs: the dtype it computes in, the operands' host arrays
    (None for Tensors and Expressions), the first device operand, and the forms."""

    dtype: np.dtype
    hosts: list
    anchor: object
    what: str
    form: Callable = None

    @property
    def kind(self) -> str:
        return self.dtype.kind

    def fn(self, name: str) -> Callable:
        return _form(name, self.what)

    def const(self, value, dtype=None):
        """A one-element operand of `value` (in `dtype`, default the computing dtype)."""
        return beside(np.full([1], value, dtype or self.dtype), self.anchor)

    def as_type(self, x, dtype):
        """An operand in another dtype (a host array converted by numpy, else CAST)."""
        return x.astype(dtype) if isinstance(x, np.ndarray) else cast(x, dtype)

    def where_divisor_zero(self, k: int, divisor, value, result):
        """`result`, with `value` where operand k (the divisor) is 0; a host divisor without
        zeros needs nothing."""
        host = self.hosts[k]
        if host is not None and np.all(host != 0):
            return result
        zero = self.fn("logical_equals")(divisor, self.const(0))
        return self.fn("if_")(zero, value, result)


@dataclass(frozen=True)
class Ufunc:
    """How gpudml computes numpy's `ufunc`: `forms` maps the kinds of the dtype it computes in
    ("b" bool, "i" signed, "u" unsigned, "f" float; a key may name several) to the functional
    form that computes it (whose support table decides whether the dtype can run), and
    `compute(context, *operands)` composes forms where one form is not the whole of it (None:
    the form applied to the operands). `bool_inputs`: the operands are taken as bools
    (x != 0) first, as numpy's logical_* take them."""

    ufunc: np.ufunc
    symbol: str
    forms: dict[str, str]
    compute: Callable | None = None
    bool_inputs: bool = False
    #: The dtype whose support decides (None: the dtype computed in): the shifts of signed
    #: integers shift the unsigned type of their width.
    checks: Callable | None = None
    #: precheck(context): numpy's errors of the operands' values (before any other check)
    precheck: Callable | None = None
    main: str = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "main", next(iter(self.forms.values())))

    def form_for(self, dtype: np.dtype, what: str) -> str:
        for kinds, name in self.forms.items():
            if dtype.kind in kinds:
                return name
        raise UnsupportedError(f"{what}: numpy computes it in {dtype}; gpudml has no DirectML operator for "
                               f"np.{self.ufunc.__name__} on {dtype}")


# ------------------------------------------------------------------------- computations
def _swap_args(name: str):
    return lambda c, a, b: c.fn(name)(b, a)


def _floor_divide(c: Context, a, b):
    """numpy's floor division. Floats: (a - a % b) / b rounded to the integer it is (numpy's
    npy_divmod; a / b where b is 0). Integers: DIVIDE (toward zero), less one where the
    truncated and floored remainders differ; 0 where b is 0."""
    if c.kind == "f":
        q = c.fn("round")(c.fn("divide")(c.fn("subtract")(a, c.form(a, b)), b))
        return c.where_divisor_zero(1, b, c.fn("divide")(a, b), q)
    q = c.form(a, b)
    if c.kind == "i":
        same = c.fn("logical_equals")(c.fn("modulus_truncate")(a, b), c.fn("modulus_floor")(a, b))
        q = c.fn("subtract")(q, cast(c.fn("logical_not")(same), c.dtype))
    return c.where_divisor_zero(1, b, c.const(0), q)


def _remainder(c: Context, a, b):
    """MODULUS_FLOOR (the divisor's sign: numpy's %); integers: 0 where b is 0, as numpy."""
    r = c.form(a, b)
    return r if c.kind == "f" else c.where_divisor_zero(1, b, c.const(0), r)


def _no_negative_exponent(c: Context) -> None:
    if c.kind in "iu" and c.hosts[1] is not None and np.any(c.hosts[1] < 0):
        raise ValueError("Integers to negative integer powers are not allowed.")  # numpy's own error


def _not_equal(c: Context, a, b):
    return c.fn("logical_not")(c.form(a, b))


def _unsigned(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{dtype.itemsize}")


def _shift(left: bool):
    """numpy's shifts: unsigned ones are DirectML's BIT_SHIFT_*; signed ones shift the same
    bits as unsigned (CAST wraps), a right shift of a negative value shifting ones in."""
    def compute(c: Context, a, b):
        if c.kind == "u":
            return c.form(a, b)
        unsigned = _unsigned(c.dtype)
        ua, ub = c.as_type(a, unsigned), c.as_type(b, unsigned)
        if left:
            return cast(c.form(ua, ub), c.dtype)
        logical = c.form(ua, ub)
        ones_in = c.fn("bit_not")(c.form(c.fn("bit_not")(ua), ub))
        return cast(c.fn("if_")(c.fn("logical_less_than")(a, c.const(0)), ones_in, logical), c.dtype)
    return compute


def _negative(c: Context, x):
    return c.form(c.const(0), x) if c.kind == "u" else c.form(x)  # unsigned: 0 - x, wrapping


def _propagating(c: Context, a, b):
    """np.maximum / np.minimum: MAX / MIN, NaN where either operand is NaN."""
    m = c.form(a, b)
    if c.kind != "f":
        return m
    either = c.fn("logical_or")(c.fn("is_nan")(a), c.fn("is_nan")(b))
    return c.fn("if_")(either, c.fn("add")(a, b), m)


def _sign(c: Context, x):
    s = c.form(x)
    return c.fn("if_")(c.fn("is_nan")(x), x, s) if c.kind == "f" else s  # numpy: sign(NaN) is NaN


def _itself(c: Context, x):
    return c.form(x, x)  # integers: never NaN nor infinite (x < x: all False, x <= x: all True)


def _isfinite(c: Context, x):
    if c.kind != "f":
        return c.fn("logical_less_than_or_equal")(x, x)
    return c.fn("logical_not")(c.fn("logical_or")(c.form(x), c.fn("is_infinity")(x)))


def _logical_not(c: Context, x):
    return c.form(x, c.const(0))  # x == 0


def _round(mode: str):
    return lambda c, x: c.form(x) if c.kind != "f" else c.form(x, rounding_mode=mode)


_IDENTITY = {"biu": "identity"}  # floor, ceil, trunc of integers and bools: themselves
UFUNCS: dict[np.ufunc, Ufunc] = {u.ufunc: u for u in (
    Ufunc(np.add, "+", {"f": "add", "iu": "add0", "b": "logical_or"}),
    Ufunc(np.subtract, "-", {"fiu": "subtract"}),
    Ufunc(np.multiply, "*", {"fiu": "multiply", "b": "logical_and"}),
    Ufunc(np.true_divide, "/", {"f": "divide"}),
    Ufunc(np.floor_divide, "//", {"f": "modulus_floor", "iu": "divide"}, _floor_divide),
    Ufunc(np.remainder, "%", {"fiu": "modulus_floor"}, _remainder),
    Ufunc(np.power, "**", {"fiu": "pow"}, precheck=_no_negative_exponent),
    Ufunc(np.matmul, "@", {"fiu": "gemm"}),
    Ufunc(np.less, "<", {"fiub": "logical_less_than"}),
    Ufunc(np.less_equal, "<=", {"fiub": "logical_less_than_or_equal"}),
    Ufunc(np.greater, ">", {"fiub": "logical_greater_than"}),
    Ufunc(np.greater_equal, ">=", {"fiub": "logical_greater_than_or_equal"}),
    Ufunc(np.equal, "np.equal", {"fiub": "logical_equals"}),
    Ufunc(np.not_equal, "np.not_equal", {"fiub": "logical_equals"}, _not_equal),
    Ufunc(np.bitwise_and, "&", {"iub": "bit_and"}),
    Ufunc(np.bitwise_or, "|", {"iub": "bit_or"}),
    Ufunc(np.bitwise_xor, "^", {"iub": "bit_xor"}),
    Ufunc(np.left_shift, "<<", {"iu": "bit_shift_left"}, _shift(True), checks=_unsigned),
    Ufunc(np.right_shift, ">>", {"iu": "bit_shift_right"}, _shift(False), checks=_unsigned),
    Ufunc(np.invert, "~", {"iu": "bit_not", "b": "logical_not"}),
    Ufunc(np.negative, "unary -", {"fi": "negate", "u": "subtract"}, _negative),
    Ufunc(np.positive, "unary +", {"fiu": "identity"}),
    Ufunc(np.absolute, "abs()", {"fi": "abs", "ub": "identity"}),
    Ufunc(np.maximum, "np.maximum", {"fiu": "max", "b": "logical_or"}, _propagating),
    Ufunc(np.minimum, "np.minimum", {"fiu": "min", "b": "logical_and"}, _propagating),
    Ufunc(np.fmax, "np.fmax", {"fiu": "max", "b": "logical_or"}),
    Ufunc(np.fmin, "np.fmin", {"fiu": "min", "b": "logical_and"}),
    Ufunc(np.square, "np.square", {"fiu": "multiply"}, lambda c, x: c.form(x, x)),
    Ufunc(np.sign, "np.sign", {"fiu": "sign"}, _sign),
    Ufunc(np.isnan, "np.isnan", {"f": "is_nan", "biu": "logical_less_than"},
          lambda c, x: c.form(x) if c.kind == "f" else _itself(c, x)),
    Ufunc(np.isinf, "np.isinf", {"f": "is_infinity", "biu": "logical_less_than"},
          lambda c, x: c.form(x) if c.kind == "f" else _itself(c, x)),
    Ufunc(np.isfinite, "np.isfinite", {"f": "is_nan", "biu": "logical_less_than_or_equal"}, _isfinite),
    Ufunc(np.logical_and, "np.logical_and", {"b": "logical_and"}, bool_inputs=True),
    Ufunc(np.logical_or, "np.logical_or", {"b": "logical_or"}, bool_inputs=True),
    Ufunc(np.logical_xor, "np.logical_xor", {"b": "logical_xor"}, bool_inputs=True),
    Ufunc(np.logical_not, "np.logical_not", {"fiub": "logical_equals"}, _logical_not),
    Ufunc(np.floor, "np.floor", {"f": "floor", **_IDENTITY}),
    Ufunc(np.ceil, "np.ceil", {"f": "ceil", **_IDENTITY}),
    Ufunc(np.trunc, "np.trunc", {"f": "round", **_IDENTITY}, _round("toward_zero")),
    Ufunc(np.rint, "np.rint", {"f": "round"}, _round("halves_to_nearest_even")),
    Ufunc(np.reciprocal, "np.reciprocal", {"f": "recip"}),
    Ufunc(np.arctan2, "np.arctan2", {"f": "atan_yx"}),
    *(Ufunc(getattr(np, name), f"np.{name}", {"f": form}) for name, form in (
        ("exp", "exp"), ("log", "log"), ("sqrt", "sqrt"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan"),
        ("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("sinh", "sinh"), ("cosh", "cosh"),
        ("tanh", "tanh"), ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"))),
)}

#: numpy 2 compares an integer array with a Python int beyond its type exactly (uint8 < -1 is
#: False everywhere): `x OP v` is `x OP' bound` with the type's bound. Mirrored: `v OP x`.
_MIRROR = {np.less: np.greater, np.less_equal: np.greater_equal, np.greater: np.less,
           np.greater_equal: np.less_equal, np.equal: np.equal, np.not_equal: np.not_equal}
_ABOVE = {np.less: np.less_equal, np.less_equal: np.less_equal, np.greater: np.greater,
          np.greater_equal: np.greater, np.equal: np.greater, np.not_equal: np.less_equal}
_BELOW = {np.less: np.less, np.less_equal: np.less, np.greater: np.greater_equal,
          np.greater_equal: np.greater_equal, np.equal: np.less, np.not_equal: np.greater_equal}


def _in_range(ufunc: np.ufunc, inputs: tuple, dtype: np.dtype) -> tuple[np.ufunc, tuple]:
    if ufunc not in _MIRROR or dtype.kind not in "iu":
        return ufunc, inputs
    a, b = inputs
    if type(a) is int:
        ufunc, a, b = _MIRROR[ufunc], b, a
    if type(b) is not int:
        return ufunc, inputs
    info = np.iinfo(dtype)
    if b > info.max:
        return _ABOVE[ufunc], (a, int(info.max))
    if b < info.min:
        return _BELOW[ufunc], (a, int(info.min))
    return ufunc, (a, b)


def _form(name: str, what: str) -> Callable:
    form = functional.FUNCTIONS.get(name)
    if form is None:
        raise TypeError(
            f"{what} is gpudml.{name}, which is not implemented yet (no such operator in gpudml's registry); "
            f"read the tensor back with np.asarray(...) to compute on the host meanwhile")
    return form


def _hint(dtype: np.dtype) -> str:
    if dtype == np.float64:
        return ("DirectML's arithmetic has no FLOAT64: cast to float32 first (dml.cast(x, np.float32)) to "
                "compute in float32, or read back (np.asarray(x)) to compute in float64 on the host")
    return ""


def apply(ufunc: np.ufunc, inputs: tuple, symbol: str | None = None):
    """numpy's `ufunc` called on `inputs` (at least one a Tensor or an Expression), computed
    on the GPU as numpy computes it; NotImplemented when an operand is not one gpudml takes
    (a str, a complex, ...: Python's or numpy's TypeError follows)."""
    anchor = next(x for x in inputs if is_device(x))
    recipe = UFUNCS.get(ufunc)
    where = f"{symbol or f'np.{ufunc.__name__}'} on a {type(anchor).__name__}"
    if recipe is None:
        raise TypeError(f"np.{ufunc.__name__} on a gpudml {type(anchor).__name__}: gpudml has no DirectML "
                        f"operator for this ufunc; read the tensor back with np.asarray(...) to compute it on "
                        f"the host")
    if any(operand_dtype(x) is None for x in inputs):
        return NotImplemented
    loop = loop_dtypes(ufunc, inputs)
    ins, out = loop[:-1], loop[-1]
    ufunc, inputs = _in_range(ufunc, inputs, ins[0])
    recipe = UFUNCS[ufunc]
    if recipe.bool_inputs:
        ins = (BOOL,) * len(ins)
    dtype = ins[0]
    name = recipe.form_for(dtype, where)
    # numpy's conversion of host values first: an int beyond the type is its OverflowError
    hosts = [None if is_device(x) else host_array(x, d) for x, d in zip(inputs, ins)]
    context = Context(dtype, hosts, anchor, where, _form(name, where))
    if recipe.precheck:
        recipe.precheck(context)
    if len(set(ins)) > 1:  # (numpy's comparisons of int64 with uint64, exact)
        raise UnsupportedError(f"{where}: numpy computes it with operands of {' and '.join(map(str, ins))}; "
                               f"DirectML's operators take operands of one type (cast one first)")
    require(name, recipe.checks(dtype) if recipe.checks else dtype, device_of(inputs), where, _hint(dtype))
    data_type(out, where)
    operands = [cast(x, d) if h is None else beside(h, anchor) for x, d, h in zip(inputs, ins, hosts)]
    result = recipe.compute(context, *operands) if recipe.compute else context.form(*operands)
    return mark_bool(result, out == BOOL)


# ------------------------------------------------------------------------- the methods
#: The arithmetic and bitwise operators (Python's method name without underscores ->
#: numpy's ufunc): each has a reflected form; the comparisons have none (Python mirrors them).
_ARITHMETIC = (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("truediv", np.true_divide),
               ("floordiv", np.floor_divide), ("mod", np.remainder), ("pow", np.power), ("matmul", np.matmul),
               ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor), ("lshift", np.left_shift),
               ("rshift", np.right_shift))
_COMPARISONS = (("lt", np.less), ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal))
#: Binary operators: Python method -> (numpy's ufunc, whether the operands swap: the
#: reflected methods, `1 - t` is np.subtract(1, t)).
BINARY: dict[str, tuple[np.ufunc, bool]] = {
    **{f"__{m}__": (u, False) for m, u in _ARITHMETIC + _COMPARISONS},
    **{f"__r{m}__": (u, True) for m, u in _ARITHMETIC},
}
#: Unary operators: Python method -> numpy's ufunc.
UNARY: dict[str, np.ufunc] = {"__neg__": np.negative, "__pos__": np.positive, "__abs__": np.absolute,
                              "__invert__": np.invert}


def available() -> dict[str, str]:
    """The Python methods that work now (their functional form is registered) -> the form
    (for a float dtype where the ufunc takes floats)."""
    names = {**{m: UFUNCS[u].main for m, (u, _) in BINARY.items()}, **{m: UFUNCS[u].main for m, u in UNARY.items()}}
    return {method: form for method, form in names.items() if form in functional.FUNCTIONS}


def _binary(method: str, ufunc: np.ufunc, reflected: bool):
    symbol = UFUNCS[ufunc].symbol

    def operator(self, other, *modulo):
        if modulo or operand_dtype(other) is None:
            return NotImplemented  # (pow's third argument; a str: Python's own TypeError)
        return apply(ufunc, (other, self) if reflected else (self, other), symbol)
    operator.__name__ = method
    operator.__doc__ = f"`{symbol}`: numpy's np.{ufunc.__name__}" + (" (operands swapped)" if reflected else "")
    return operator


def _unary(method: str, ufunc: np.ufunc):
    symbol = UFUNCS[ufunc].symbol

    def operator(self):
        return apply(ufunc, (self,), symbol)
    operator.__name__ = method
    operator.__doc__ = f"`{symbol}`: numpy's np.{ufunc.__name__}"
    return operator


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """numpy's override protocol: `np.add(x, t)`, `x_np + t` (numpy's operators call the ufunc),
    `np.exp(e)` computed by `apply`. Other ufunc methods and calls with keywords: on Tensors,
    numpy's own after reading them back; on Expressions a TypeError."""
    if method == "__call__" and not kwargs:
        return apply(ufunc, inputs)
    named = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    outs = kwargs.get("out") or ()
    outs = outs if isinstance(outs, tuple) else (outs,)
    if any(isinstance(x, Expression) for x in (*inputs, *outs)) or any(isinstance(x, Tensor) for x in outs):
        keywords = f" with {', '.join(sorted(kwargs))}=" if kwargs else ""
        raise TypeError(f"{named}{keywords} on a gpudml {type(self).__name__}: gpudml computes ufunc calls "
                        f"without keywords only (out= cannot name a Tensor or an Expression); for reductions "
                        f"use dml.reduce")
    return getattr(ufunc, method)(*(np.asarray(x) if isinstance(x, Tensor) else x for x in inputs), **kwargs)


def install(cls) -> None:
    """Give `cls` (Tensor, Expression) the Python operators of BINARY and UNARY and numpy's
    `__array_ufunc__`."""
    for method, (ufunc, reflected) in BINARY.items():
        setattr(cls, method, _binary(method, ufunc, reflected))
    for method, ufunc in UNARY.items():
        setattr(cls, method, _unary(method, ufunc))
    cls.__array_ufunc__ = array_ufunc


for _cls in (Tensor, Expression):
    install(_cls)
Tensor.__array_priority__ = 1000  # (numpy's older protocol; __array_ufunc__ decides now)

__all__ = ["BINARY", "UFUNCS", "UNARY", "Ufunc", "apply", "available", "install"]
