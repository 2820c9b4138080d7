"""DirectMLX's names of the functional forms (API.md section 8): `dml.padding` and
`slice`'s `input_window_*` keywords, on numpy arrays and Tensors."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_bits_equal, random_bits

import gpudml as dml

RNG = np.random.default_rng(13)


def test_directmlx_spellings_on_numpy_and_tensors(device):
    x = random_bits(RNG, np.float32, (1, 2, 5, 4))
    kwargs = dict(input_window_offsets=[0, 1, 1, 0], input_window_sizes=[1, 1, 4, 4],
                  input_window_strides=[1, 1, 2, -3])
    want = dml.slice(x, [0, 1, 1, 0], [1, 1, 4, 4], [1, 1, 2, -3], device=device)
    assert_bits_equal(dml.slice(x, device=device, **kwargs), want)
    assert_bits_equal(dml.slice(device.tensor(x), **kwargs).numpy(), want)
    assert_bits_equal(dml.slice(x, [0, 1, 1, 0], input_window_sizes=[1, 1, 4, 4], strides=[1, 1, 2, -3],
                                device=device), want)  # the two spellings of different arguments mix
    want = dml.pad(x, [0, 0, 1, 2], [0, 1, 0, 3], mode="constant", value=-2.5, device=device)
    got = dml.padding(x, dml.PaddingMode.CONSTANT, -2.5, [0, 0, 1, 2], [0, 1, 0, 3], device=device)
    assert_bits_equal(got, want)
    got = dml.padding(device.tensor(x), padding_mode="constant", padding_value=-2.5,
                      start_padding=[0, 0, 1, 2], end_padding=[0, 1, 0, 3])
    assert_bits_equal(got.numpy(), want)
    assert_bits_equal(dml.padding(x, start_padding=[1, 0, 0, 0], end_padding=[0, 0, 0, 0], device=device),
                      dml.pad(x, [1, 0, 0, 0], [0, 0, 0, 0], device=device))  # CONSTANT 0.0 by default


def test_functional_spelling_errors():
    x = np.zeros((2, 2), np.float32)
    with pytest.raises(dml.InvalidArgumentError, match="slice: offsets and input_window_offsets are two names of one"):
        dml.slice(x, [0, 0], [2, 2], input_window_offsets=[0, 0])
    with pytest.raises(dml.InvalidArgumentError, match="slice: strides and input_window_strides"):
        dml.slice(x, [0, 0], [2, 2], [1, 1], input_window_strides=[1, 1])
    with pytest.raises(dml.InvalidArgumentError, match=r"slice: sizes \(or input_window_sizes\) is required"):
        dml.slice(x, input_window_offsets=[0, 0])
    with pytest.raises(dml.InvalidArgumentError, match="padding: end_padding is required"):
        dml.padding(x, start_padding=[0, 0])
