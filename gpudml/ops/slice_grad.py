"""DML_SLICE_GRAD_OPERATOR_DESC (FL 3.0, `dml.slice_grad`): the gradient of DML_SLICE1. The
incoming gradient has the forward's output sizes; the output gradient has the forward's
input sizes: each element the slice read receives the gradient element it produced, every
other element 0. The kernel is the transposed index map of Slice1's
(kernels/movement/slice.py, SliceGradPlanner): a data-movement stage that fills 0 outside
the elements the window's strides reach, bit-exact for every type.

What the page says, as implemented:

- InputGradientTensor and OutputGradientTensor: one DataType and DimensionCount, 1 to 8,
  the 8 types of the page's table (no 64-bit types).
- InputWindowOffsets/Sizes/Strides: Slice1's rules against the forward's input (the output
  gradient): offset + size within its sizes, size at least 1, strides non-zero INT32
  (the page types them UINT but says negative strides flip the window, as Slice1's).
- The input gradient's sizes: in 1..1 + (size - 1) // |stride| per axis, as Slice1's
  output (the page says "typically the same sizes as the output of the corresponding
  SLICE1"; any output Slice1 accepts is accepted: the first elements of the window along
  each axis). A zero stride is refused (the page).
- Where the page is silent: the gradient elements each map to one output element (strides
  are non-zero), so no element receives two gradients and nothing sums: bit-exact, -0.0
  and NaN payloads kept.

The functional form: `dml.slice_grad(dy, output_sizes, offsets, sizes, strides=None)`,
`output_sizes` the output gradient's (the forward input's) sizes; the DirectMLX names
`input_window_offsets`, `input_window_sizes`, `input_window_strides` are accepted too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.movement.slice import SLICE_GRAD
from ..tensor_desc import TensorDesc, as_int_tuple
from ..types import TYPES_8, FeatureLevel
from .base import check_one_type, int_list
from .slice1 import check_window, normalize_window, one_spelling, source_indices
from .spec import Call, Cli, CliArg, OpSpec, element_bytes, support_table

OP = "SliceGrad"
PAGE_FILE = "ns-directml-dml_slice_grad_operator_desc.md"

SUPPORT = support_table(OP, ("input_gradient_tensor", "output_gradient_tensor"), [
    (FeatureLevel.FL_3_0, (1, 8), TYPES_8),
])


@dataclass(frozen=True)
class SliceGradOperatorDesc:
    input_gradient_tensor: TensorDesc
    output_gradient_tensor: TensorDesc
    input_window_offsets: tuple[int, ...]
    input_window_sizes: tuple[int, ...]
    input_window_strides: tuple[int, ...]

    def __post_init__(self):
        normalize_window(self, OP)

    # The data-movement machinery (movement strategies, graph fusion) reads a stage's
    # source and result as input_tensor and output_tensor: here the two gradients.
    @property
    def input_tensor(self) -> TensorDesc:
        return self.input_gradient_tensor

    @property
    def output_tensor(self) -> TensorDesc:
        return self.output_gradient_tensor


def infer_output(input_gradient: TensorDesc, output_sizes, offsets, sizes, strides=None) -> SliceGradOperatorDesc:
    """The desc of `slice_grad(dy, output_sizes, offsets, sizes, strides)`: strides default to 1."""
    out = TensorDesc(input_gradient.data_type, as_int_tuple(output_sizes, "slice_grad: output_sizes"))
    offsets = as_int_tuple(offsets, "slice_grad: offsets")
    sizes = as_int_tuple(sizes, "slice_grad: sizes")
    strides = (1,) * input_gradient.rank if strides is None else as_int_tuple(strides, "slice_grad: strides")
    return SliceGradOperatorDesc(input_gradient, out, offsets, sizes, strides)


def validate(desc: SliceGradOperatorDesc, feature_level: FeatureLevel) -> None:
    dy, dx = desc.input_gradient_tensor, desc.output_gradient_tensor
    rank = check_one_type(OP, SUPPORT, feature_level,
                          {"input_gradient_tensor": dy, "output_gradient_tensor": dx})
    check_window(OP, desc, dx.sizes, dy.sizes, rank,
                 lambda i: f"output_gradient_tensor.sizes[{i}] = {dx.sizes[i]} (the forward's input)",
                 "input_gradient_tensor", "the forward Slice1's output: ",
                 " (the page: a zero stride maps several outputs to one element, which has no gradient)")


# ---------------------------------------------------------------------------- reference
def reference(dy, output_sizes, offsets, sizes, strides=None) -> np.ndarray:
    """zeros(output_sizes) with dy's elements written where reference.slice reads them
    (np.ix_ of Slice1's source indices per axis): an assignment of dy's bits."""
    dy = np.asarray(dy)
    rank = dy.ndim
    output_sizes = int_list(output_sizes, rank, "output_sizes")
    offsets = int_list(offsets, rank, "offsets")
    sizes = int_list(sizes, rank, "sizes")
    strides = int_list([1] * rank if strides is None else strides, rank, "strides")
    if any(s == 0 for s in strides):
        raise ValueError(f"strides {strides}: a stride may not be 0")
    index = [source_indices(i, o, n, s, m, dim) for i, (o, n, s, m, dim) in
             enumerate(zip(offsets, sizes, strides, dy.shape, output_sizes, strict=True))]
    bits = np.dtype(f"u{dy.dtype.itemsize}")
    out = np.zeros(output_sizes, bits)
    out[np.ix_(*index)] = dy.view(bits)
    return out.view(dy.dtype)


# ---------------------------------------------------------------------------- API
def slice_grad(dy, output_sizes, offsets=None, sizes=None, strides=None, *, device=None,
               input_window_offsets=None, input_window_sizes=None, input_window_strides=None):
    """DML_SLICE_GRAD: the gradient of `dml.slice(x, offsets, sizes, strides)` with respect to
    x, given dy (the gradient of its output): an array of `output_sizes` (x's sizes) holding
    dy's elements where the slice read them and 0 elsewhere. Strides may be negative, not 0.
    DirectMLX's names `input_window_offsets`, `input_window_sizes`, `input_window_strides`
    are accepted too."""
    offsets = one_spelling("offsets", offsets, "input_window_offsets", input_window_offsets, required=True)
    sizes = one_spelling("sizes", sizes, "input_window_sizes", input_window_sizes, required=True)
    strides = one_spelling("strides", strides, "input_window_strides", input_window_strides, required=False)
    return Call([("dy", dy)], {"output_sizes": output_sizes, "offsets": offsets, "sizes": sizes,
                               "strides": strides}, device)


def arguments(desc: SliceGradOperatorDesc) -> dict:
    return {"output_sizes": desc.output_gradient_tensor.sizes, "offsets": desc.input_window_offsets,
            "sizes": desc.input_window_sizes, "strides": desc.input_window_strides}


def traffic(desc: SliceGradOperatorDesc) -> int:
    """Every output element written once, every gradient element read once."""
    return element_bytes(desc.output_gradient_tensor) + element_bytes(desc.input_gradient_tensor)


def from_cli(dy: TensorDesc, a: dict) -> SliceGradOperatorDesc:
    """--shape is the input gradient's; the output gradient's sizes default to the window's
    reach (offsets + the elements the strides span)."""
    strides = a["strides"] or (1,) * dy.rank
    offsets = a["offsets"] or (0,) * dy.rank
    sizes = a["sizes"] or tuple(1 + (n - 1) * abs(s) for n, s in zip(dy.sizes, strides, strict=False))
    out = a["output_sizes"] or tuple(o + n for o, n in zip(offsets, sizes, strict=False))
    return infer_output(dy, out, offsets, sizes, strides)


SPEC = OpSpec(
    name=OP, key="slice_grad", desc=SliceGradOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=slice_grad, tensors=("dy",), arguments=arguments, traffic=traffic,
    planner=SLICE_GRAD,
    cli=Cli((CliArg("--output-sizes", "the output gradient's sizes (default: offsets + sizes)"),
             CliArg("--offsets", "input_window_offsets (default 0 per axis)"),
             CliArg("--sizes", "input_window_sizes (default: what the input gradient spans)"),
             CliArg("--strides", "input_window_strides, non-zero, may be negative (default 1)")),
            from_cli, "--shape 1,1,2,2 --output-sizes 1,1,4,4 --offsets 0,0,0,0 --sizes 1,1,4,4 --strides 1,1,2,2"),
    page="DML_SLICE_GRAD_OPERATOR_DESC",
)
