"""Fused activations, as the operators that apply one in their store take them (GEMM,
CONVOLUTION, BATCH_NORMALIZATION, MEAN_VARIANCE_NORMALIZATION): `FusedActivation` (an
activation row of the element-wise table: `FusedActivation("relu")`), `as_activation` (its
formula as a function of the result `x`), and `as_float32` (a DirectML FLOAT, as their
attributes take it). They are defined with the table (gpudml/ops/elementwise/: fused.py,
row.py); this module is where other operators import them from."""

from __future__ import annotations

from .elementwise.fused import FusedActivation, as_activation
from .elementwise.row import as_float32
from .elementwise.table import FUSABLE

__all__ = ["FUSABLE", "FusedActivation", "as_activation", "as_float32"]
