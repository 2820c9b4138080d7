"""Array methods on Tensors and Expressions (issue #42 item 3, gpudml/tensor_methods.py): each
compared with numpy on every adapter. Two tensors serve almost every case (X: float32 of shape
(2, 3, 4), N: int32 of shape (2, 3)), so that the cases share their compiled kernels. Where
numpy gives a 0-d result a Tensor has shape (1,): `same` compares so."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import gpudml as dml
from gpudml.errors import InvalidArgumentError, OutOfBoundsError, UnsupportedError

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5  # exact sums, means and products
N = np.array([[3, -1, 7], [7, 0, -4]], dtype=np.int32)


def same(got, want) -> None:
    """`got` (a Tensor or an array) holds numpy's `want`: dtype, shape (0-d as (1,)) and values."""
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == (want.shape or (1,)), (got.shape, want.shape)
    np.testing.assert_array_equal(got, want.reshape(got.shape))


def shares(view, t) -> bool:
    return view.base is t and view.buffer is t.buffer


@pytest.fixture
def x(device):
    return device.tensor(X)


# ---------------------------------------------------------------------------- basic indexing
BASIC = [  # (key, a view: the window starts at element 0 with positive steps)
    (0, True), (-1, False), ((slice(None), slice(1, 3)), False), (slice(None, None, 2), True),
    ((Ellipsis, 0), True), (None, True), (slice(None, None, -1), False), ((0, 0), True), ((1, 2, 3), False),
    ((slice(None), 0, slice(None, None, 2)), True), ((Ellipsis, slice(3, None, -2)), False),
    ((slice(None), None, 1), False), ((0, Ellipsis, None), True), ((slice(-1, None), slice(None, 1)), False),
    ((slice(None), slice(None, None, -2), slice(1, 2)), False), (np.int64(1), False),
]


@pytest.mark.parametrize("key, is_view", BASIC, ids=[repr(k) for k, _ in BASIC])
def test_basic_indexing_matches_numpy(x, key, is_view):
    got = x[key]
    same(got, X[key])
    assert shares(got, x) if is_view else got.base is None


def test_indexing_a_view_and_iterating(x):
    strided = x.transpose(2, 0, 1)  # a view with strides [1, 12, 4]
    same(strided[1:, ::-1, 0], X.transpose(2, 0, 1)[1:, ::-1, 0])
    same(strided[0], X.transpose(2, 0, 1)[0])
    assert shares(strided[0], x)  # a view of a view reads the owner's buffer
    rows = list(x)  # __getitem__ until IndexError: numpy's iteration
    assert len(rows) == 2
    for row, want in zip(rows, X):
        same(row, want)


# ---------------------------------------------------------------------------- advanced indexing
ADVANCED = [
    [0, 1], [1, -2], np.array([[1], [0]]), (slice(None), [2, 0]), ([1, 0], slice(None), [0, 3]),
    (slice(None), [[0, 2], [1, 1]], slice(1, 3)), (0, [2, 0], None), (Ellipsis, [3, 0, 3]),
    ([0, 1], slice(None), 2), (X[:, :, 0] > -2,), (slice(None), X[0] > 0), (X > 10,), ([1], None, [2], 0),
]


@pytest.mark.parametrize("key", ADVANCED, ids=[f"advanced{i}" for i in range(len(ADVANCED))])
def test_advanced_indexing_matches_numpy(x, key):
    got = x[key]
    same(got, X[key])
    assert got.base is None  # gathered: a new tensor


def test_device_indices_gather_on_the_device(device, x):
    idx = device.tensor(np.array([2, 0, -1], np.int32))
    same(x[:, idx], X[:, [2, 0, -1]])  # negative indices count from the end (GATHER's rule)
    same(x[idx[:2]], X[[1, 0]])  # [2, 0]: 2 is past the 2 rows, clamped to 1 (GATHER's rule)
    same(x[..., device.tensor(np.array([[3], [1]], np.int16))], X[..., [[3], [1]]])  # 16-bit: cast to INT32
    with pytest.raises(UnsupportedError, match=r"index Tensor of UINT8 is refused: .*np.asarray\(mask\)"):
        x[device.tensor(np.array([1, 0], np.uint8))]
    with pytest.raises(InvalidArgumentError, match="must be of integer .* got FLOAT32"):
        x[device.tensor(np.array([1.0], np.float32))]
    with pytest.raises(UnsupportedError, match="combines with slices, None and Ellipsis only"):
        x[idx, [0]]


def test_index_errors_name_the_axis_size_and_index(x):
    with pytest.raises(OutOfBoundsError, match=r"Tensor\[5\]: index 5 is out of bounds for axis 0 with size 2"):
        x[5]
    with pytest.raises(IndexError, match=r"index -4 is out of bounds for axis 1 with size 3"):
        x[0, -4]
    with pytest.raises(IndexError, match=r"index 4 is out of bounds for axis 2 with size 4"):
        x[:, :, [0, 4]]
    with pytest.raises(IndexError, match="too many indices for array: array is 3-dimensional, but 4 were indexed"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 1; size of axis is "
                                         "3 but size of corresponding boolean axis is 2"):
        x[:, np.array([True, False])]
    with pytest.raises(IndexError, match=r"could not be broadcast together with shapes \(2,\) \(3,\)"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(InvalidArgumentError, match="only integers, slices"):
        x[1.5]
    with pytest.raises(InvalidArgumentError, match="must be of integer .* got float64"):
        x[np.array([0.0])]
    with pytest.raises(InvalidArgumentError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(UnsupportedError, match=r"the result would be empty \(shape \[0, 3, 4\]\)"):
        x[2:]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]
    for flag in (True, np.array(False)):
        with pytest.raises(UnsupportedError, match=r"a bool scalar index \((True|array\(False\))\) is not supported"):
            x[flag]
    assert issubclass(OutOfBoundsError, IndexError) and issubclass(OutOfBoundsError, dml.InvalidArgumentError)


# ---------------------------------------------------------------------------- views and their lifetime
def test_a_view_keeps_the_buffer_alive_and_dies_with_a_freed_base(device):
    t = device.tensor(X)
    v = t.T
    buffer = t.buffer
    del t
    gc.collect()
    filler = device.tensor(np.full((2, 3, 4), 99, np.float32))  # may not reuse the view's buffer
    assert v.base.buffer is buffer and filler.buffer is not buffer
    same(v, X.T)
    base = v.base
    w = v[0]
    w.free()  # a view's free() lets go of its base only
    same(v, X.T)
    base.free()  # the owner's free() takes its views along
    with pytest.raises(InvalidArgumentError, match="used after free"):
        v.numpy()
    assert repr(v).endswith(", view, freed)")


def test_with_desc_checks_the_view(x):
    with pytest.raises(InvalidArgumentError, match="data_type INT32 differs from the tensor's FLOAT32"):
        x.with_desc(dml.TensorDesc(dml.DataType.INT32, [24]))
    with pytest.raises(InvalidArgumentError, match="span 100 bytes; the tensor's buffer has 96"):
        x.with_desc(dml.TensorDesc(dml.DataType.FLOAT32, [25]))
    assert ", view)" in repr(x[0])


# ---------------------------------------------------------------------------- shape methods
def test_reshape_is_a_view_where_strides_allow_else_a_copy(x):
    r = x.reshape(4, -1)
    same(r, X.reshape(4, -1))
    assert shares(r, x) and r.desc.strides is None
    assert x.reshape((24,)).shape == (24,) and x.reshape([2, 12]).shape == (2, 12)
    picked = x[:, 0]  # strides [12, 1]: (2, 4) -> (8,) is no view
    flat = picked.reshape(-1)
    same(flat, X[:, 0].reshape(-1))
    assert flat.buffer is not x.buffer
    merged = x.transpose(1, 0, 2).reshape(3, 2, 2, 2)  # only the last axis splits: a view
    same(merged, X.transpose(1, 0, 2).reshape(3, 2, 2, 2))
    assert shares(merged, x)
    with pytest.raises(InvalidArgumentError, match=r"view: shape \[24\] is not a view of sizes \[4, 3, 2\]"):
        x.T.view(-1)
    same(x.view(6, 4), X.reshape(6, 4))
    with pytest.raises(InvalidArgumentError, match=r"cannot reshape array of size 24 into shape \(5, 5\)"):
        x.reshape(5, 5)
    with pytest.raises(InvalidArgumentError, match="can only specify one unknown dimension"):
        x.reshape(-1, -1)
    with pytest.raises(UnsupportedError, match="would have 9 dimensions"):
        x.reshape(2, 3, 4, 1, 1, 1, 1, 1, 1)
    with pytest.raises(UnsupportedError, match="does not reinterpret"):
        x.view(np.int32)


def test_transpose_squeeze_expand_flatten(x):
    same(x.T, X.T)
    same(x.transpose(1, 0, 2), X.transpose(1, 0, 2))
    same(x.transpose((2, 0, 1)), X.transpose(2, 0, 1))
    assert shares(x.T, x) and shares(x.transpose(1, 0, 2), x)
    column = x[:, :1]  # (2, 1, 4), a view
    same(column.squeeze(), X[:, :1].squeeze())
    same(column.squeeze(1), X[:, :1].squeeze(1))
    same(x[0, 0, :1].squeeze(), X[0, 0, :1].squeeze())  # every axis: shape (1,)
    same(x.expand_dims((0, -1)), np.expand_dims(X, (0, -1)))
    same(x.unsqueeze(1), np.expand_dims(X, 1))
    wide = column.expand(5, -1, 3, 4)  # a new leading axis and axis 1 broadcast: stride 0
    same(wide, np.broadcast_to(X[:, :1], (5, 2, 3, 4)))
    assert shares(wide, x) and wide.desc.strides == (0, 12, 0, 1)
    same(wide.sum(axis=0), np.broadcast_to(X[:, :1], (5, 2, 3, 4)).sum(axis=0))  # a broadcast view as input
    same(wide[1:, :, ::-1], np.broadcast_to(X[:, :1], (5, 2, 3, 4))[1:, :, ::-1])  # SLICE1 reads it too
    same(wide[0, :, ::-1], X[:, :1].repeat(3, axis=1)[:, ::-1])  # a negative step over stride 0: still a view
    assert shares(wide[0, :, ::-1], x)
    same(x.flatten(), X.flatten())
    assert shares(x.flatten(), x) and shares(x.ravel(), x)
    same(x.T.flatten(), X.T.flatten())  # strided: a packed copy
    for call, message in [
        (lambda: x.transpose(0, 0, 1), "repeated axis in transpose"),
        (lambda: x.transpose(0, 1), "axes don't match array"),
        (lambda: x.squeeze(0), "cannot select an axis to squeeze out which has size not equal to one \\(axis 0 has "
                               "size 2"),
        (lambda: x.expand(2, 5, 4), "expanded size of the tensor \\(5\\) must match the existing size \\(3\\) at "
                                    "non-singleton dimension 1"),
        (lambda: x.expand(4, 3), "number of sizes provided \\(2\\) must be greater or equal"),
        (lambda: x.expand_dims(4), "axis 4 is out of bounds for array of dimension 4"),
    ]:
        with pytest.raises(InvalidArgumentError, match=message):
            call()


def test_astype_casts_on_the_device(device, x):
    same(x.astype(np.int32), X.astype(np.int32))  # truncated toward zero, as numpy's
    same(x.T.astype("float16"), X.T.astype(np.float16))
    same(x.astype(dml.DataType.INT64), X.astype(np.int64))
    assert x.astype(np.float32, copy=False) is x
    copied = x.astype(np.float32)
    assert copied is not x and copied.buffer is not x.buffer
    same(copied, X)
    with pytest.raises(InvalidArgumentError, match="dtype: None is not a data type"):
        x.astype(None)
    with pytest.raises(InvalidArgumentError, match="astype: dtype"):
        x.astype("complex64")


# ---------------------------------------------------------------------------- reductions
REDUCTIONS = [(m, axis, keepdims) for m in ("sum", "mean", "max", "min", "prod")
              for axis, keepdims in ((None, False), (1, False), ((0, 2), True), (-1, True))]


@pytest.mark.parametrize("method, axis, keepdims", REDUCTIONS)
def test_reductions_match_numpy(x, method, axis, keepdims):
    """Sums, means, maxima and minima of these half-integers are exact in float32; a product of
    up to 12 of them is not (1.08e8 > 2^24), and REDUCE multiplies in its own order (the GPU
    class's unrolled order differs from numpy's): within one rounding (2^-24) a product."""
    small = x[:, :, :2] if method == "prod" else x
    want = getattr(X[:, :, :2] if method == "prod" else X, method)(axis=axis, keepdims=keepdims)
    got = getattr(small, method)(axis=axis, keepdims=keepdims)
    if method != "prod":
        return same(got, want)
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == (want.shape or (1,)), (got.dtype, got.shape, want.shape)
    np.testing.assert_allclose(got, want.reshape(got.shape), rtol=11 * 2.0**-24, atol=0)


def test_reduction_result_types_follow_numpy(device):
    n = device.tensor(N)
    same(n.sum(), N.sum())  # int32 -> int64, as numpy's
    same(n.sum(axis=0), N.sum(axis=0))
    same(n.prod(axis=1, keepdims=True), N.prod(axis=1, keepdims=True))
    same(n.max(axis=1), N.max(axis=1))
    same(n.mean(axis=1), N.mean(axis=1).astype(np.float32))  # numpy gives float64: FLOAT32 here (documented)
    same(n.sum(dtype=np.int32), N.sum(dtype=np.int32))
    same(n.sum(axis=()), N.sum(axis=()))  # nothing reduced: the elements in the result's type
    same(device.tensor(X.astype(np.float16)).sum(axis=2), X.astype(np.float16).sum(axis=2))
    u = device.tensor(N.astype(np.uint8))
    same(u.sum(axis=1), N.astype(np.uint8).sum(axis=1))  # uint8 -> uint64


@pytest.mark.parametrize("method", ["argmax", "argmin"])
def test_argmax_argmin(device, x, method):
    ties = device.tensor(N)
    for axis, keepdims in ((None, False), (0, False), (-1, True), (None, True)):
        same(getattr(x, method)(axis=axis, keepdims=keepdims), getattr(X, method)(axis=axis, keepdims=keepdims))
        same(getattr(ties, method)(axis=axis, keepdims=keepdims), getattr(N, method)(axis=axis, keepdims=keepdims))
    with pytest.raises(InvalidArgumentError, match=f"Tensor.{method}: axis must be an integer, got \\(0, 1\\)"):
        getattr(x, method)(axis=(0, 1))


def test_reduction_errors_name_the_method_and_values(x):
    with pytest.raises(OutOfBoundsError, match="Tensor.sum: axis 3 is out of bounds for array of dimension 3"):
        x.sum(axis=3)
    with pytest.raises(InvalidArgumentError, match=r"Tensor.max: duplicate value in 'axis' \(\(0, -3\)\)"):
        x.max(axis=(0, -3))
    with pytest.raises(InvalidArgumentError, match="Tensor.mean: keepdims must be True or False, got 1"):
        x.mean(keepdims=1)
    with pytest.raises(InvalidArgumentError, match="Tensor.min: out must be None"):
        x.min(out=np.empty(1))
    with pytest.raises(InvalidArgumentError, match="Reduce \\(SUM\\): input_tensor.data_type FLOAT64 is not supported"):
        x.astype(np.float64).sum()


def test_numpy_functions_call_the_methods(x):
    summed = np.sum(x, axis=1)  # numpy hands non-arrays' reductions to their methods
    assert isinstance(summed, dml.Tensor)
    same(summed, X.sum(axis=1))
    same(np.max(x), X.max())
    same(np.argmin(x, axis=2), X.argmin(axis=2))
    same(np.transpose(x), X.T)
    same(np.reshape(x, (4, 6)), X.reshape(4, 6))
    same(np.squeeze(x[:1]), X[:1].squeeze())


# ---------------------------------------------------------------------------- host values
def test_python_numbers_from_one_element(device, x):
    one = x[1, 2, 3]
    assert float(one) == 15.5 and int(one) == 15 and bool(one) is True and one.item() == 15.5
    assert one.base is None  # a SLICE1 result (its window starts past element 0), re-described
    n = device.tensor(N)
    assert n[0, 2].__index__() == 7 and [10, 20, 30, 40, 50, 60, 70, 80][n[0, 2]] == 80
    assert n.tolist() == N.tolist() and n.item(4) == 0 and n.item(1, 2) == -4
    assert bool(n[1, 1]) is False
    with pytest.raises(InvalidArgumentError, match=r"Tensor.item: can only convert an array of size 1 to a Python "
                                                   r"scalar \(shape \(2, 3\)\)"):
        n.item()
    with pytest.raises(TypeError, match=r"Tensor.__float__: only one-element tensors .* \(shape \(2, 3\)\)"):
        float(n)
    with pytest.raises(TypeError, match="only one-element tensors"):
        int(n)
    with pytest.raises(InvalidArgumentError, match="truth value of an array with more than one element is ambiguous"):
        bool(n)
    with pytest.raises(TypeError, match="only integer scalar arrays can be converted to a scalar index"):
        [0, 1][one]
    # A call of several Tensors asks none of them for its truth value.
    same(dml.add0(n, n), N + N)


# ---------------------------------------------------------------------------- Expressions
def test_expression_methods_through_a_compiled_graph(device):
    g = dml.Graph(device)
    e = g.input([2, 3, 4], np.float32, name="x")
    assert e.ndim == 3 and e.size == 24
    cases = [
        (e[0], X[0]), (e[:, 1:3], X[:, 1:3]), (e[..., ::-1], X[..., ::-1]), (e[:, [2, 0]], X[:, [2, 0]]),
        (e[X[:, :, 0] > -2], X[X[:, :, 0] > -2]), (e.T, X.T), (e.reshape(6, -1), X.reshape(6, -1)),
        (e.T.reshape(-1), X.T.reshape(-1)), (e.sum(axis=1), X.sum(axis=1)), (e.mean(), X.mean()),
        (e.max(axis=(0, 2), keepdims=True), X.max(axis=(0, 2), keepdims=True)), (e.argmax(axis=2), X.argmax(axis=2)),
        (e.astype(np.int32), X.astype(np.int32)), (e[None, :, 0].squeeze(0), X[None, :, 0].squeeze(0)),
        (e[:, :1].expand(2, 5, 4), np.broadcast_to(X[:, :1], (2, 5, 4))), (e.unsqueeze(0), X[None]),
        (e.transpose(1, 0, 2).flatten(), X.transpose(1, 0, 2).flatten()),
    ]
    for expr, want in cases:
        assert isinstance(expr, dml.Expression) and expr.shape == list(np.shape(want) or (1,))
    outputs = g.compile([expr for expr, _ in cases])({"x": X})
    for got, (_, want) in zip(outputs, cases):
        same(got, want)
    index = g.input([2], np.int32, name="i")
    gathered = e[:, index]
    got = g.compile([gathered])({"x": X, "i": np.array([2, -3], np.int32)})[0]
    same(got, X[:, [2, -3]])
    with pytest.raises(OutOfBoundsError, match=r"Expression\[:, 7\]: index 7 is out of bounds for axis 1"):
        e[:, 7]
    with pytest.raises(InvalidArgumentError, match=r"of the indexed value's kind \(Expression\), got Tensor"):
        e[device.tensor(np.array([0], np.int32))]
    assert not hasattr(e, "item") and not hasattr(e, "tolist")  # no values to give


# ---------------------------------------------------------------------------- bool tensors
def test_a_comparisons_bool_tensor_keeps_numpys_bool_through_the_methods(x):
    """A comparison's result is numpy's bool (UINT8 0/1 inside, promotion.py): moved by the
    methods it stays bool, counted by sum it is int64, its max and min stay bool, and astype
    converts to and from bool as numpy's does."""
    mask, want = x > 0, X > 0
    same(mask, want)
    for got, expected in [(mask[0], want[0]), (mask[:, ::-1], want[:, ::-1]), (mask.T, want.T),
                          (mask.reshape(4, 6), want.reshape(4, 6)), (mask[:, None].squeeze(1), want),
                          (mask.expand_dims(0), want[None])]:
        same(got, expected)
    same(mask.sum(), want.sum())
    same(mask.sum(axis=1), want.sum(axis=1))
    same(mask.max(axis=2), want.max(axis=2))
    same(mask.astype(np.float32), want.astype(np.float32))
    same(x.astype(bool), X.astype(bool))
    same(mask.astype(bool), want)
    same(mask.astype("FLOAT32"), want.astype(np.float32))  # a DataType's name, as for any tensor
    with pytest.raises(InvalidArgumentError, match="dtype: None is not a data type"):
        mask.astype(None)
