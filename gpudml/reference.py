"""The oracle: every operator's semantics as plain numpy, for the tests, `gpudml examples`
and the benchmarks' correctness checks.

Each function is declared in its operator's module (the spec's `reference`) and takes the
functional API's arguments, numpy arrays for the tensors:

    gpudml.reference.slice1(x, offsets, sizes, strides=None, output_sizes=None)
    gpudml.reference.padding(x, start_padding, end_padding, mode="constant", value=0.0)
    gpudml.reference.reverse_subsequences(x, sequence_lengths, axis)
    gpudml.reference.reduce(x, function, axes=None, output_data_type=None)
    gpudml.reference.padding1(x, start_padding, end_padding, mode="constant", value=0, value_data_type=None)
    gpudml.reference.slice_v1(x, offsets, sizes, strides=None)
    gpudml.reference.gather(x, indices, axis, index_dimensions=None)

Arrays in and out are *logical*: the shape is the tensor's sizes, the dtype its numpy
dtype; layout (strides, padding bytes) is the runtime's business. Data movement is
computed as integer source indices and one gather, so it is bit-exact for every dtype
(NaN payloads and -0.0 included). Validation lives in the operators; here only what is
needed to compute raises a plain ValueError. No wgpu import.
"""

from __future__ import annotations

from .ops import SPECS

globals().update({spec.key: spec.reference for spec in SPECS})

__all__ = [spec.key for spec in SPECS]
