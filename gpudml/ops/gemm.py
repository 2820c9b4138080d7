"""DML_OPERATOR_GEMM: Output = FusedActivation(Alpha * TransA(A) x TransB(B) + Beta * C), one
matrix product per position of the batch axes (the GEMM kernel family runs it:
kernels/gemm.py, shaders/gemm.wgsl.j2). docs/operators/gemm.md says the same for users.

What the page says (sdk-api's DML_GEMM_OPERATOR_DESC, the 12/2022 version), as implemented:

- A is { [BatchCount], [ChannelCount], M, K } ({..., K, M} with TransA =
  DML_MATRIX_TRANSFORM_TRANSPOSE), B { ..., K, N } ({..., N, K} with TransB), the optional C
  and the output { ..., M, N }: DimensionCount 4 from FL 1.0, 2 to 4 from FL 4.0; FLOAT32
  or FLOAT16; every tensor one DataType and one DimensionCount; C and the output one set of
  Sizes. C is optional (None: 0; Beta then unused).
- Strict as DirectML's descriptions are: A's and B's batch sizes must be the output's (a
  broadcast is a stride of 0 in the description, as for C), and K must agree. A
  description that breaks a rule is an InvalidArgumentError naming the field, the rule
  and the values.
- Alpha and Beta are DirectML FLOATs (float32 values: a Python float is rounded, one beyond
  float32's range is an error); FusedActivation is an activation of the element-wise
  family's (`FusedActivation("relu")`, ...), computed in the kernel's store.

The functional form `gemm(a, b, c=None, *, trans_a=False, trans_b=False, alpha=1.0,
beta=1.0, fused_activation=None)` takes numpy's matmul shapes: 2-4 dimensions, the batch
axes broadcast as numpy's (by stride-0 descriptions, no copy: [M, K] x [B, K, N] runs the
one A against every B), C broadcast to the result unidirectionally ([N] is a bias per
column, [M, 1] one per row). `tensor @ tensor` is gemm(a, b) (python_operators.py).

Precision (`tolerance`), against the float64 reference: products and sums in float32 (FLOAT16
read exactly into float32), in the kernel's order (a tile's K walk, split-K chunks added in
order). With u = 2^-24 and S = sum_k |A[m, k]| |B[k, n]|, every result is within

    1.01 (K + 3) u (|alpha| S + |beta| |C[m, n]|)

of the exact value (the classic bound of a sum of K products: a product's rounding and at
most K - 1 additions on any path of any summation order, split-K included, then alpha's
product and beta C's product and sum), plus the subnormals an adapter may flush (2^-126 per
product, per input and per result), the fused activation's own error and how it moves the
result's, and float16's rounding of the result (1 ULP of float16). Where |alpha| S + |beta
C| passes float32's largest value, a partial sum may overflow: any value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.elementwise import Attribute
from ..kernels.gemm import GemmPlanner, Problem
from ..tensor_desc import TensorDesc
from ..types import F16, F32, FeatureLevel, MatrixTransform
from .activations import FusedActivation, as_activation, as_float32
from .base import check_one_type
from .precision import activation_error, ulp
from .spec import Call, Cli, CliArg, OpSpec, support_table, tensor_fields

OP = "Gemm"
FL = FeatureLevel
FLOATS = frozenset({F32, F16})
TENSORS = ("a_tensor", "b_tensor", "c_tensor", "output_tensor")
SUPPORT = support_table(OP, TENSORS, [
    (FL.FL_4_0, (2, 4), FLOATS),
    (FL.FL_1_0, {4}, FLOATS),
])
NONE, TRANSPOSE = MatrixTransform.NONE, MatrixTransform.TRANSPOSE


@dataclass(frozen=True)
class GemmOperatorDesc:
    """DML_GEMM_OPERATOR_DESC: Output = FusedActivation(Alpha * TransA(A) x TransB(B) + Beta * C).
    `c_tensor` is optional (None)."""

    a_tensor: TensorDesc
    b_tensor: TensorDesc
    c_tensor: TensorDesc | None
    output_tensor: TensorDesc
    trans_a: MatrixTransform = NONE
    trans_b: MatrixTransform = NONE
    alpha: float = 1.0
    beta: float = 1.0
    fused_activation: FusedActivation | None = None
    #: Tensor fields that may be None (the conformance kit never breaks them into None).
    OPTIONAL_TENSORS = ("c_tensor",)

    def __post_init__(self):
        for name in ("trans_a", "trans_b"):
            object.__setattr__(self, name, MatrixTransform.coerce(getattr(self, name), f"{OP}: {name}"))
        object.__setattr__(self, "alpha", as_float32(self.alpha, f"{OP}: alpha"))
        object.__setattr__(self, "beta", as_float32(self.beta, f"{OP}: beta"))
        object.__setattr__(self, "fused_activation",
                           FusedActivation.coerce(self.fused_activation, f"{OP}: fused_activation"))


def matrix_sizes(desc: GemmOperatorDesc) -> tuple[int, int, int, int]:
    """(M, K of A, K of B, N) as TransA and TransB read A and B."""
    a, b = desc.a_tensor.sizes, desc.b_tensor.sizes
    m, ka = (a[-1], a[-2]) if desc.trans_a == TRANSPOSE else (a[-2], a[-1])
    kb, n = (b[-1], b[-2]) if desc.trans_b == TRANSPOSE else (b[-2], b[-1])
    return m, ka, kb, n


def validate(desc: GemmOperatorDesc, level: FeatureLevel) -> None:
    """The page's rules (module docstring): valid tensors (C optional), one DimensionCount
    and DataType, the support row, K of A = K of B, the output { batch..., M, N }, A's and
    B's batch sizes the output's, C's sizes the output's."""
    tensors = {"a_tensor": desc.a_tensor, "b_tensor": desc.b_tensor, "c_tensor": desc.c_tensor,
               "output_tensor": desc.output_tensor}
    rank = check_one_type(OP, SUPPORT, level, tensors, ("c_tensor",))
    m, ka, kb, n = matrix_sizes(desc)
    a, b, out = desc.a_tensor.sizes, desc.b_tensor.sizes, desc.output_tensor.sizes
    if ka != kb:
        ia = rank - 2 if desc.trans_a == TRANSPOSE else rank - 1
        ib = rank - 1 if desc.trans_b == TRANSPOSE else rank - 2
        raise InvalidArgumentError(
            f"{OP}: K differs: a_tensor.sizes[{ia}] = {ka} (trans_a {desc.trans_a.name}) must equal "
            f"b_tensor.sizes[{ib}] = {kb} (trans_b {desc.trans_b.name})")
    want = tuple(out[:-2]) + (m, n)
    if tuple(out) != want:
        raise InvalidArgumentError(
            f"{OP}: output_tensor.sizes {list(out)} must be {list(want)} ({{batch..., M, N}}: M = {m} from a_tensor, "
            f"N = {n} from b_tensor)")
    for field, sizes in (("a_tensor", a), ("b_tensor", b)):
        if tuple(sizes[:-2]) != tuple(out[:-2]):
            raise InvalidArgumentError(
                f"{OP}: {field}.sizes {list(sizes)} must have the batch sizes of output_tensor.sizes {list(out)} "
                f"({list(out[:-2])}) on its leading axes (a broadcast is a stride of 0 in the description)")
    if desc.c_tensor is not None and desc.c_tensor.sizes != desc.output_tensor.sizes:
        raise InvalidArgumentError(
            f"{OP}: c_tensor.sizes {list(desc.c_tensor.sizes)} must equal output_tensor.sizes {list(out)} (a "
            f"broadcast C is a stride of 0 in the description)")


def _read(td: TensorDesc, transform: MatrixTransform) -> TensorDesc:
    """`td` as the product reads it: with TRANSPOSE its two last axes swapped (strides too)."""
    if transform != TRANSPOSE:
        return td
    sizes, strides = list(td.sizes), list(td.effective_strides)
    sizes[-2:], strides[-2:] = sizes[-1:-3:-1], strides[-1:-3:-1]
    return TensorDesc(td.data_type, sizes, strides, total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)


def kernel_activation(fused: FusedActivation | None) -> tuple[str | None, tuple[Attribute, ...]]:
    """A fused activation as the GEMM family's epilogue takes it: its float formula over `x`
    and its attributes (f32 uniforms); (None, ()) without one."""
    if fused is None:
        return None, ()
    return as_activation(fused.row.wgsl["float"]), tuple(Attribute(k, "f32", v) for k, v in fused.attributes)


def problem(desc: GemmOperatorDesc) -> Problem:
    """What the GEMM kernels compute for `desc`."""
    activation, attrs = kernel_activation(desc.fused_activation)
    return Problem(OP, _read(desc.a_tensor, desc.trans_a), _read(desc.b_tensor, desc.trans_b), desc.c_tensor,
                   desc.output_tensor, desc.alpha, desc.beta, activation, attrs)


# ============================================================================ the functional form
def _transform(value, field: str) -> MatrixTransform:
    """A functional form's trans_a / trans_b: a bool, or a MatrixTransform (its value or name)."""
    if isinstance(value, (bool, np.bool_)):
        return TRANSPOSE if value else NONE
    return MatrixTransform.coerce(value, f"gemm: {field}")


def broadcast_batch(shapes: list[tuple[int, ...]], names: list[str], where: str = "gemm") -> list[int]:
    rank = max(len(s) for s in shapes)
    out = []
    for axis in range(rank):
        sizes = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0} - {1}
        if len(sizes) > 1:
            listed = ", ".join(f"{n} {list(s)}" for n, s in zip(names, shapes))
            raise InvalidArgumentError(f"{where}: the batch axes do not broadcast ({listed}: sizes {sorted(sizes)} "
                                       f"meet on batch axis {axis - rank})")
        out.append(sizes.pop() if sizes else 1)
    return out


def stretched(td: TensorDesc, sizes: list[int]) -> TensorDesc:
    """`td` described with `sizes` (as many axes or more): axes prepended, and each axis of
    size 1 against a larger one read with stride 0 (numpy broadcasting, no copy)."""
    if list(td.sizes) == list(sizes):
        return td
    lead = len(sizes) - td.rank
    strides = [0] * lead + [0 if n == 1 and sizes[lead + i] != 1 else s
                            for i, (n, s) in enumerate(zip(td.sizes, td.effective_strides))]
    return TensorDesc(td.data_type, sizes, strides, total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)


def infer_output(a: TensorDesc, b: TensorDesc, c: TensorDesc | None = None, *, trans_a=False, trans_b=False,
                 alpha=1.0, beta=1.0, fused_activation=None) -> GemmOperatorDesc:
    """The desc of gemm(a, b, c, ...): numpy's matmul shapes (module docstring). Inputs of
    fewer than 2 dimensions are described as they are (validation rejects them)."""
    ta, tb = _transform(trans_a, "trans_a"), _transform(trans_b, "trans_b")
    attrs = {"trans_a": ta, "trans_b": tb, "alpha": alpha, "beta": beta, "fused_activation": fused_activation}
    if a.rank < 2 or b.rank < 2:
        return GemmOperatorDesc(a, b, c, TensorDesc(a.data_type, a.sizes), **attrs)
    batch = broadcast_batch([a.sizes[:-2], b.sizes[:-2]], ["a", "b"])
    a2 = stretched(a, batch + list(a.sizes[-2:]))
    b2 = stretched(b, batch + list(b.sizes[-2:]))
    m = a.sizes[-1] if ta == TRANSPOSE else a.sizes[-2]
    n = b.sizes[-2] if tb == TRANSPOSE else b.sizes[-1]
    out = batch + [m, n]
    if c is not None:
        if c.rank > len(out) or any(s not in (1, o) for s, o in zip(reversed(c.sizes), reversed(out))):
            raise InvalidArgumentError(f"gemm: c {list(c.sizes)} does not broadcast to the result's shape {out} "
                                       f"(numpy's rule, one way: c's axes of size 1 are repeated)")
        c = stretched(c, out)
    return GemmOperatorDesc(a2, b2, c, TensorDesc(a.data_type, out), **attrs)


def gemm(a, b, c=None, *, trans_a=False, trans_b=False, alpha=1.0, beta=1.0, fused_activation=None, device=None):
    """DML_OPERATOR_GEMM: fused_activation(alpha * a' @ b' + beta * c), a' = a with its two
    last axes swapped where trans_a is True (b' the same with trans_b): numpy's matmul
    shapes of 2-4 dimensions (the batch axes broadcast, no copy), c (optional) broadcast to
    the result. FLOAT32 or FLOAT16, accumulated in float32; within 1.01 (K + 3) 2^-24
    (|alpha| sum_k |a'||b'| + |beta c|) of the exact result (gpudml/ops/gemm.py)."""
    tensors = [("a", a), ("b", b)] + ([("c", c)] if c is not None else [])
    return Call(tensors, {"trans_a": trans_a, "trans_b": trans_b, "alpha": alpha, "beta": beta,
                          "fused_activation": fused_activation}, device)


def arguments(desc: GemmOperatorDesc) -> dict:
    return {"trans_a": desc.trans_a == TRANSPOSE, "trans_b": desc.trans_b == TRANSPOSE, "alpha": desc.alpha,
            "beta": desc.beta, "fused_activation": desc.fused_activation}


# ============================================================================ the reference and its precision
def _operands(a, b, trans_a, trans_b) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore"):
        a, b = np.asarray(a).astype(np.float64), np.asarray(b).astype(np.float64)
    return (np.swapaxes(a, -1, -2) if trans_a else a), (np.swapaxes(b, -1, -2) if trans_b else b)


def _exact(a, b, c, trans_a, trans_b, alpha, beta, fused) -> np.ndarray:
    """alpha a' @ b' + beta c, then the activation, in float64 (unrounded)."""
    a, b = _operands(a, b, _transform(trans_a, "trans_a") == TRANSPOSE, _transform(trans_b, "trans_b") == TRANSPOSE)
    alpha, beta = as_float32(alpha, "gemm: alpha"), as_float32(beta, "gemm: beta")
    with np.errstate(all="ignore"):
        y = alpha * np.matmul(a, b)
        if c is not None:
            y = y + beta * np.asarray(c).astype(np.float64)
        if fused is not None:
            y = np.asarray(fused.row.numpy(y, **dict(fused.attributes)), np.float64)
    return y


def reference(a, b, c=None, *, trans_a=False, trans_b=False, alpha=1.0, beta=1.0, fused_activation=None):
    """DML_OPERATOR_GEMM on numpy arrays (gemm's arguments): computed in float64 and rounded
    once to a's type."""
    fused = FusedActivation.coerce(fused_activation)
    y = _exact(a, b, c, trans_a, trans_b, alpha, beta, fused)
    with np.errstate(all="ignore"):
        return y.astype(np.asarray(a).dtype)


reference.__name__ = reference.__qualname__ = "gemm"

UNIT = 2.0**-24
TINY = 2.0**-126
_F32_MAX = float(np.finfo(np.float32).max)


def tolerance(expected: np.ndarray, inputs, arguments: dict):
    """The documented precision (module docstring), per element."""
    a, b = inputs[0], inputs[1]
    c = inputs[2] if len(inputs) > 2 else None
    fused = FusedActivation.coerce(arguments.get("fused_activation"))
    ta, tb = bool(arguments.get("trans_a")), bool(arguments.get("trans_b"))
    alpha = abs(as_float32(arguments.get("alpha", 1.0), "alpha"))
    beta = abs(as_float32(arguments.get("beta", 1.0), "beta"))
    with np.errstate(all="ignore"):
        av, bv = _operands(a, b, ta, tb)
        k = av.shape[-1]
        magnitude = alpha * np.matmul(np.abs(av), np.abs(bv))
        flushed = alpha * (k + np.matmul(np.abs(av), np.ones((k, 1))) + np.matmul(np.ones((1, k)), np.abs(bv)))
        if c is not None:
            magnitude = magnitude + beta * np.abs(np.asarray(c).astype(np.float64))
        e = 1.01 * (k + 3) * UNIT * magnitude + TINY * (flushed + beta + 1)
        y = _exact(a, b, c, ta, tb, arguments.get("alpha", 1.0), arguments.get("beta", 1.0), None)
    return finish_bound(expected, y, e, magnitude, fused)


def finish_bound(expected: np.ndarray, y: np.ndarray, e: np.ndarray, magnitude: np.ndarray,
                 fused: FusedActivation | None) -> np.ndarray:
    """The end of a sum of products' precision (GEMM's, the convolution's): `e` bounds the
    error of the exact result `y` before the activation (unbounded where `magnitude`, the
    sum of the products' magnitudes, passes float32's largest value); then the fused
    activation's own error and how it moves the result's, the store's rounding (half an
    ULP of float32, and float16's ULP), infinity where the result may round to +-inf."""
    with np.errstate(all="ignore"):
        e = np.where(magnitude > _F32_MAX, np.inf, np.nan_to_num(e, nan=np.inf))
        if fused is not None:
            y, e = activation_error(fused, y, e)
        e = e + 0.5 * ulp(y, np.float32)
        if expected.dtype == np.float16:
            e = e + np.spacing(np.minimum(np.abs(y), 65504).astype(np.float16)).astype(np.float64)
        limit = float(np.finfo(expected.dtype).max)
        edge = np.abs(y) + e >= limit  # may round to +-inf
        return np.broadcast_to(np.where(edge, np.inf, e), expected.shape)


def sample(desc, rng) -> list:
    """Inputs worth multiplying (GEMM's, the convolution's): uniform in [-1, 1] (products
    and sums of magnitude K at most)."""
    return [rng.uniform(-1.0, 1.0, td.required_elements).astype(td.data_type.numpy)
            for _, td in tensor_fields(desc)[0]]


def traffic(desc: GemmOperatorDesc) -> int:
    """Every element of A, B, C and the output once (GEMM is compute-bound: see flops)."""
    tds = [t for t in (desc.a_tensor, desc.b_tensor, desc.c_tensor, desc.output_tensor) if t is not None]
    return sum(t.element_count * t.data_type.size for t in tds)


def flops(desc: GemmOperatorDesc) -> int:
    """2 M N K per matrix of the batch: the floating-point operations of the product."""
    m, k, _, n = matrix_sizes(desc)
    return 2 * desc.output_tensor.element_count * k


# ============================================================================ the command line
def _from_cli(x: TensorDesc, o: dict) -> GemmOperatorDesc:
    """--shape is A's ([batch..., M, K]); --n N (default K); --transpose none/a/b/ab; --alpha,
    --beta; --c none/full/row/column (a bias per column: C of [N] broadcast)."""
    k = x.sizes[-1] if x.rank >= 1 else 1
    n = int(o["n"][0]) if o.get("n") else k
    how = (o.get("transpose") or "none").lower()
    trans_a, trans_b = "a" in how, "b" in how
    sizes = list(x.sizes)
    if trans_a and x.rank >= 2:
        sizes[-2:] = sizes[-1:-3:-1]
    a = TensorDesc(x.data_type, sizes, x.strides if not trans_a else None)
    bsizes = list(x.sizes[:-2]) + ([n, k] if trans_b else [k, n])
    b = TensorDesc(x.data_type, bsizes)
    c_how = (o.get("c") or "none").lower()
    m = x.sizes[-2] if x.rank >= 2 else 1
    c = {"full": TensorDesc(x.data_type, list(x.sizes[:-2]) + [m, n]), "row": TensorDesc(x.data_type, [n]),
         "column": TensorDesc(x.data_type, [m, 1])}.get(c_how)
    alpha = float(o["alpha"]) if o.get("alpha") is not None else 1.0
    beta = float(o["beta"]) if o.get("beta") is not None else 1.0
    return infer_output(a, b, c, trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta)


SPEC = OpSpec(
    name=OP, key="gemm", desc=GemmOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=gemm, tensors=("a", "b", "c"), arguments=arguments,
    planner=GemmPlanner(problem),
    cli=Cli((CliArg("--n", "N, the output's columns (default: K, the last size of --shape)"),
             CliArg("--transpose", "none, a, b or ab: the operands read transposed", "str"),
             CliArg("--alpha", "Alpha (default 1)", "number"), CliArg("--beta", "Beta (default 1)", "number"),
             CliArg("--c", "none, full, row (a bias per column, [N]) or column ([M, 1])", "str")),
            _from_cli, "--shape 1024,1024 --n 1024"),
    page="DML_GEMM_OPERATOR_DESC", tolerance=tolerance, traffic=traffic, sample=sample,
)
