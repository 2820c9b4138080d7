"""DML_MAX_UNPOOLING_OPERATOR_DESC (FL 3.0; docs/operators/max_unpooling.md, the page under
tests/data/pages/; ONNX MaxUnpool): MAX_POOLING's inverse. The output [B, C, H', W'] is
zero but at each input element's index (zero-based, flat over the output as a contiguous
row-major array), which takes that element's value. IndicesTensor has the input's sizes.

The page's gaps, and gpudml's choices (tests/test_max_unpooling.py):
- Duplicate indices ("the value written ... is not defined"): the input element of the
  lowest flat (row-major) position wins, on every adapter and strategy (an atomicMin claim,
  then an output-centric gather: kernels/max_unpooling.py); out-of-range indices (the page:
  no write), UINT64 ones past 2^32 included, write nothing.
- The output's sizes are any 4 sizes (the page: "the given shape"); the indices address
  its elements whatever its strides (the row-major logical order).
- The values move bit for bit (NaN payloads, -0.0), every type of the table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import max_unpooling as family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc, as_int_tuple, check_tensor_desc
from ..types import F16, F32, I8, I16, I32, I64, U8, U16, U32, U64, DataType, FeatureLevel
from .base import integer_array
from .spec import Call, Cli, CliArg, OpSpec, element_bytes, random_buffer, support_table

OP = "MaxUnpooling"
TYPES_10 = {F32, F16, I64, I32, I16, I8, U64, U32, U16, U8}
SUPPORT = support_table(OP, ("input_tensor", "indices_tensor", "output_tensor"), [
    (FeatureLevel.FL_5_0, {4}, TYPES_10, {U64, U32}, TYPES_10),
    (FeatureLevel.FL_3_0, {4}, {F32, F16}, {U32}, {F32, F16}),
])


@dataclass(frozen=True)
class MaxUnpoolingOperatorDesc:
    input_tensor: TensorDesc
    indices_tensor: TensorDesc
    output_tensor: TensorDesc


def infer_output(input_tensor: TensorDesc, indices: TensorDesc, output_sizes) -> MaxUnpoolingOperatorDesc:
    """The desc of `max_unpooling(x, indices, output_sizes)`: the output of those 4 sizes."""
    sizes = as_int_tuple(output_sizes, "max_unpooling: output_sizes")
    return MaxUnpoolingOperatorDesc(input_tensor, indices, TensorDesc(input_tensor.data_type, sizes))


def validate(desc: MaxUnpoolingOperatorDesc, feature_level: FeatureLevel) -> None:
    inp, indices, out = desc.input_tensor, desc.indices_tensor, desc.output_tensor
    fields = ("input_tensor", "indices_tensor", "output_tensor")
    for field in fields:
        check_tensor_desc(OP, field, getattr(desc, field), is_output=field == "output_tensor")
    for field in fields:  # (the message names which)
        SUPPORT.check_rank(feature_level, field, getattr(desc, field).rank)
    SUPPORT.check(feature_level, inp.rank, {f: getattr(desc, f).data_type for f in fields})
    if out.data_type != inp.data_type:
        raise InvalidArgumentError(f"{OP}: output_tensor.data_type {out.data_type.name} must equal "
                                   f"input_tensor.data_type {inp.data_type.name}")
    if indices.sizes != inp.sizes:
        raise InvalidArgumentError(f"{OP}: indices_tensor.sizes {list(indices.sizes)} must equal input_tensor.sizes "
                                   f"{list(inp.sizes)}")
    if inp.element_count >= 2**32 - 1:
        raise InvalidArgumentError(f"{OP}: input_tensor has {inp.element_count} elements; gpudml claims output "
                                   f"elements by 32-bit input positions (at most 2^32 - 2 elements)")


def problem(desc: MaxUnpoolingOperatorDesc) -> family.Unpooling:
    return family.Unpooling(OP, desc.input_tensor, desc.indices_tensor, desc.output_tensor)


MAX_UNPOOLING = ProblemPlanner(problem, family.FAMILY)


def reference(x, indices, output_sizes) -> np.ndarray:
    """Zeros of `output_sizes`, each in-range index's element written there (the lowest
    flat input position among equal indices), bit for bit."""
    x, indices = np.asarray(x), np.asarray(indices)
    if x.shape != indices.shape or indices.dtype.kind not in "iu":
        raise ValueError(f"max_unpooling: indices {indices.shape} {indices.dtype} must be integers of x's shape "
                         f"{x.shape}")
    sizes = tuple(int(v) for v in output_sizes)
    count = int(np.prod(sizes))
    flat = indices.reshape(-1).astype(np.uint64) if indices.dtype.kind == "u" else indices.reshape(-1)
    inside = np.nonzero((flat >= 0) & (flat < count))[0]  # (flat positions, ascending)
    targets, first = np.unique(flat[inside].astype(np.int64), return_index=True)
    bits = x.reshape(-1).view(np.dtype(f"u{x.dtype.itemsize}"))
    out = np.zeros(count, bits.dtype)
    out[targets] = bits[inside[first]]
    return out.view(x.dtype).reshape(sizes)


def indices_array(values) -> np.ndarray:
    """Indices as UINT32 (integers of up to 32 bits) or UINT64 (64-bit): a negative one wraps
    (the DirectML provider's ForceUnsignedDataType), out of range."""
    values = integer_array(values, "max_unpooling: indices", "indices must be integers")
    if values.dtype.itemsize == 8:
        return values.astype(np.uint64)
    return values.astype(np.int64).astype(np.uint32) if values.dtype.kind == "i" else values.astype(np.uint32)


def max_unpooling(x, indices, output_sizes, *, device=None):
    """DML_MAX_UNPOOLING (ONNX MaxUnpool): zeros of `output_sizes` (4 sizes) with x [B, C, H,
    W]'s elements at their `indices` (x's sizes; flat row-major positions in the output,
    UINT32 or UINT64); among equal indices the first input element (row-major) wins, indices
    outside the output write nothing."""
    return Call([("x", x), ("indices", indices, indices_array)], {"output_sizes": output_sizes}, device)


def arguments(desc: MaxUnpoolingOperatorDesc) -> dict:
    return {"output_sizes": desc.output_tensor.sizes}


def traffic(desc: MaxUnpoolingOperatorDesc) -> int:
    """The input and indices read once, the output written once."""
    return element_bytes(desc.input_tensor) + element_bytes(desc.indices_tensor) + element_bytes(desc.output_tensor)


def sample(desc: MaxUnpoolingOperatorDesc, rng) -> list:
    """Random input bits; indices mostly inside the output (duplicates among them), a few
    beyond it (UINT64: past 2^32 too)."""
    inp, indices = desc.input_tensor, desc.indices_tensor
    count = desc.output_tensor.element_count
    values = rng.integers(0, count + 3, indices.required_elements).astype(np.uint64)
    if indices.data_type == U64:
        values[rng.random(values.shape) < 0.1] += np.uint64(2**32)
    return [random_buffer(inp, rng), values.astype(indices.data_type.numpy)]


def from_cli(x: TensorDesc, a: dict) -> MaxUnpoolingOperatorDesc:
    """--shape is the input (pooled) tensor; the output defaults to twice its spatial sizes."""
    sizes = a["output_sizes"] or (*x.sizes[:2], *(2 * n for n in x.sizes[2:]))
    indices = TensorDesc(DataType.coerce(a["indices_dtype"], "--indices-dtype"), x.sizes)
    return infer_output(x, indices, sizes)


SPEC = OpSpec(
    name=OP, key="max_unpooling", desc=MaxUnpoolingOperatorDesc, support=SUPPORT, infer_output=infer_output,
    validate=validate, reference=reference, functional=max_unpooling, tensors=("x", "indices"),
    arguments=arguments, planner=MAX_UNPOOLING,
    cli=Cli((CliArg("--output-sizes", "the output's 4 sizes (default: the input's, spatial ones doubled)"),
             CliArg("--indices-dtype", "IndicesTensor type: UINT32 or UINT64", "str", "UINT32")),
            from_cli, "--shape 1,64,56,56 --output-sizes 1,64,112,112"),
    page="DML_MAX_UNPOOLING_OPERATOR_DESC", traffic=traffic, sample=sample,
)
