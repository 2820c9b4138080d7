"""The oracle: every operator's semantics as plain numpy, for the tests, `gpudml examples`,
the lab, the autotuner and the benchmarks' correctness checks.

`gpudml.reference.<name>` computes what `gpudml.<name>` computes, with the same arguments
(numpy arrays for the tensors): `reference.slice(x, offsets, sizes, strides=None,
output_sizes=None)`, `reference.pad(x, start_padding, end_padding, mode="constant",
value=0.0)`, `reference.reduce(x, function, axes=None, output_data_type=None)`, ... one per
operator (each declared in its operator's module: the spec's `reference`).

Arrays in and out are *logical*: the shape is the tensor's sizes, the dtype its numpy
dtype; layout (strides, padding bytes) is the runtime's business. Data movement is
computed as integer source indices and one gather, so it is bit-exact for every dtype
(NaN payloads and -0.0 included). Validation lives in the operators; here only what is
needed to compute raises a plain ValueError. No wgpu import.
"""

from __future__ import annotations

from .ops import EXTENSIONS, SPECS

REFERENCES = {spec.functional_name: spec.reference for spec in (*SPECS, *EXTENSIONS)}
globals().update(REFERENCES)

__all__ = list(REFERENCES)
