"""The operator registry: what DirectML says about each operator gpudml implements.

One module per operator, named by its key (DirectML's name in snake case; an older
version of an operator carries its number, 0 for the unnumbered first: slice0 is
DML_SLICE, slice1 DML_SLICE1), or per table of operators that differ only in a formula (each row
a spec: argminmax.py, cumulative.py). `SPECS` below is the one place an operator is
registered; the public API (gpudml/functional.py, gpudml/__init__.py), `gpudml.reference`,
`gpudml examples`, the command line, the docs and the conformance kit are derived from it
(docs/adding-an-operator.md).
"""

from __future__ import annotations

from ..errors import InvalidArgumentError
from . import (
    adam_optimizer,
    argminmax,
    batch_normalization,
    batch_normalization_training,
    convolution,
    convolution_integer,
    cumulative,
    dequantize,
    diagonal_matrix,
    dynamic_quantize_linear,
    elementwise,
    fill_value,
    fold,
    gather,
    gather_elements,
    gather_nd,
    gemm,
    join,
    matrix_multiply_integer,
    max_unpooling,
    multihead_attention,
    non_max_suppression,
    nonzero_coordinates,
    normalization,
    one_hot,
    padding,
    padding1,
    pooling,
    pooling_grad,
    quantize,
    quantized_linear_add,
    quantized_linear_average_pooling,
    quantized_linear_convolution,
    random_generator,
    recurrent,
    reduce,
    resample,
    resample_grad,
    reverse_subsequences,
    roi_align,
    roi_align_grad,
    roi_pooling,
    scatter_elements,
    scatter_nd,
    slice0,
    slice1,
    slice_grad,
    softmax,
    space_depth,
    split,
    tile,
    top_k,
    unfold,
    value_scale_2d,
)
from .spec import OpSpec, tensor_fields

#: QUANTIZED_LINEAR_ADD's place among the element-wise table's operators: after DEQUANTIZE_LINEAR.
_QLA = 1 + [s.key for s in elementwise.SPECS].index("dequantize_linear")

#: Every operator, in documentation order.
SPECS: tuple[OpSpec, ...] = (
    slice1.SPEC, padding.SPEC, reverse_subsequences.SPEC, reduce.SPEC, *argminmax.SPECS, padding1.SPEC,
    slice0.SPEC, gather.SPEC, tile.SPEC, join.SPEC, split.SPEC, *cumulative.SPECS,
    *elementwise.SPECS[:_QLA], quantized_linear_add.SPEC, *elementwise.SPECS[_QLA:], *softmax.SPECS, gemm.SPEC,
    convolution.SPEC, batch_normalization.SPEC, *normalization.SPECS[:4], *pooling.SPECS,
    unfold.SPEC, fold.SPEC, *resample.SPECS,
    # (new operators last: the seeds the tests draw by an operator's index stay the others')
    *space_depth.SPECS, value_scale_2d.SPEC,
    gather_elements.SPEC, *gather_nd.SPECS, random_generator.SPEC, nonzero_coordinates.SPEC,
    *roi_align.SPECS, roi_pooling.SPEC, max_unpooling.SPEC, *fill_value.SPECS, *diagonal_matrix.SPECS,
    scatter_elements.SPEC, scatter_nd.SPEC, one_hot.SPEC,
    *top_k.SPECS,
    *recurrent.SPECS,
    *multihead_attention.SPECS,
    normalization.MVN2_SPEC,
    adam_optimizer.SPEC,
    *pooling_grad.SPECS,
    *batch_normalization_training.SPECS,
    normalization.LRN_GRAD_SPEC,
    dequantize.SPEC,
    *matrix_multiply_integer.SPECS,
    slice_grad.SPEC,
    *resample_grad.SPECS,
    *roi_align_grad.SPECS,
    quantize.SPEC,
    dynamic_quantize_linear.SPEC,
    convolution_integer.SPEC, quantized_linear_convolution.SPEC, quantized_linear_average_pooling.SPEC,
)

#: gpudml's extensions: operators DirectML lacks (no DirectML page, no feature level of
#: their own), run on the GPU by kernels of gpudml's; outside SPECS (the DirectML operators
#: that the conformance kit, the docs' operator pages and `gpudml examples` enumerate), but
#: public (`gpudml.non_max_suppression`), recorded in graphs and run by sessions as SPECS' are.
EXTENSIONS: tuple[OpSpec, ...] = (non_max_suppression.SPEC,)

_BY_DESC = {spec.desc: spec for spec in (*SPECS, *EXTENSIONS)}
_BY_NAME = {name: spec for spec in (*SPECS, *EXTENSIONS) for name in (spec.key, spec.functional_name)}


def spec_for(desc) -> OpSpec:
    """The spec of an operator desc; InvalidArgumentError for anything else."""
    try:
        return _BY_DESC[type(desc)]
    except KeyError:
        known = ", ".join(cls.__name__ for cls in _BY_DESC)
        raise InvalidArgumentError(
            f"create_operator: {type(desc).__name__} is not an operator desc ({known})") from None


def spec_named(name: str) -> OpSpec:
    """The spec whose key or functional name is `name` ("slice1" or "slice", "padding" or "pad")."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise InvalidArgumentError(f"{name!r} is not an operator (one of {', '.join(s.key for s in SPECS)})") from None


__all__ = ["EXTENSIONS", "SPECS", "OpSpec", "spec_for", "spec_named", "tensor_fields"]
