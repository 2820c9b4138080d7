"""Depthwise integer convolutions: `direct` (the float convolution's kernel in i32) against the
integer convolutions' other kernels, and a quantized MobileNetV2 with and without it.

    python -m gpudml.bench.depthwise_integer [--adapter vulkan|gl] [--reps 9] [--model]

Workloads: QUANTIZED_LINEAR_CONVOLUTION 3x3, group = C (MobileNetV2's depthwise layers: [1,144,56,56]
stride 1 and 2, [1,96,112,112] stride 2), UINT8 input, INT8 filter with per-channel scales, INT32
bias, UINT8 output; the float32 depthwise convolution of the same shape (its `direct`) as the peer.
Every strategy the planner offers is forced in turn, device-resident (execute + synchronize),
timed round-robin with the 64 MiB copy kernel (pad_reverse.copy_kernel); each strategy's
output is checked against gpudml/reference.py bit for bit first. `--model`:
tests/data/models/quantized/mobilenet_v2_qop.onnx.gz (onnxruntime's QOperator MobileNetV2, its
depthwise QLinearConv layers) through gpudml.onnx's session, `direct` offered and not
(kernels/convolution.DIRECT_CHANNELS = 0 while the second session compiles), outputs equal.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import numpy as np
import onnx

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml import reference
from gpudml.bench.pad_reverse import copy_kernel, median_ms, same_bits
from gpudml.kernels import convolution as kc
from gpudml.ops import convolution as conv_op
from gpudml.ops import quantized_linear_convolution as qlc

T = dml.DataType
SHAPES = (((1, 144, 56, 56), 1), ((1, 144, 56, 56), 2), ((1, 96, 112, 112), 2))
MODEL = Path(__file__).resolve().parents[2] / "tests/data/models/quantized/mobilenet_v2_qop.onnx.gz"


def bench_layer(device: dml.Device, shape, stride: int, reps: int, copy) -> None:
    rng = np.random.default_rng(0)
    c = shape[1]
    x = rng.integers(0, 256, shape).astype(np.uint8)
    w = rng.integers(-128, 128, (c, 1, 3, 3)).astype(np.int8)
    xs, xz = np.array([0.02], np.float32), np.array([128], np.uint8)
    ws, wz = rng.uniform(0.002, 0.02, c).astype(np.float32), np.zeros(c, np.int8)
    b, ys, yz = rng.integers(-3000, 3000, c).astype(np.int32), np.array([0.1], np.float32), np.array([120], np.uint8)
    geometry = {"strides": [stride, stride], "start_padding": [1, 1], "end_padding": [1, 1], "group_count": c}
    f32 = lambda *s: dml.TensorDesc(T.FLOAT32, list(s))  # noqa: E731
    desc = qlc.infer_output(dml.TensorDesc(T.UINT8, list(shape)), f32(1), dml.TensorDesc(T.UINT8, [1]),
                            dml.TensorDesc(T.INT8, [c, 1, 3, 3]), f32(c), dml.TensorDesc(T.INT8, [c]),
                            dml.TensorDesc(T.INT32, [c]), f32(1), dml.TensorDesc(T.UINT8, [1]), **geometry)
    want = reference.quantized_linear_convolution(x, xs[0], xz[0], filter=w, filter_scale=ws, filter_zero_point=wz,
                                                  bias=b, output_scale=ys[0], output_zero_point=yz[0], **geometry)
    operator = device.create_operator(desc)
    inputs = [device.tensor(a) for a in (x, xs, xz, w, ws, wz, b, ys, yz)]
    paths = {}
    for strategy in device.compile_operator(operator).strategies:
        compiled = device.compile_operator(operator, strategy)
        out = device.empty(desc.output_tensor)

        def run(compiled=compiled, out=out):
            compiled.execute(inputs, outputs=[out])
            device.synchronize()

        run()
        assert same_bits(out.numpy(), want), f"{strategy} differs from reference.quantized_linear_convolution"
        paths[strategy] = run
    fdesc = conv_op.infer_output(f32(*shape), f32(c, 1, 3, 3), None, **geometry)
    fcompiled = device.compile_operator(device.create_operator(fdesc))
    fin = [device.tensor(x.astype(np.float32)), device.tensor(w.astype(np.float32))]
    fout = device.empty(fdesc.output_tensor)

    def float_run():
        fcompiled.execute(fin, outputs=[fout])
        device.synchronize()

    paths[f"float32 ({fcompiled.strategy})"] = float_run
    paths["copy kernel"] = copy[0]
    timings = median_ms(paths, reps)
    print(f"\nQLinearConv depthwise 3x3 /{stride} {list(shape)} pad 1 (uint8 x int8 -> uint8)")
    print(f"  {'strategy':<24}{'ms':>9}{'x direct':>10}{'x copy':>9}")
    for name, ms in timings.items():
        if name != "copy kernel":
            print(f"  {name:<24}{ms:>9.3f}{ms / timings['direct']:>10.2f}{ms / timings['copy kernel']:>9.2f}")
    print(f"  (copy kernel 64 MiB: {timings['copy kernel']:.3f} ms, "
          f"{copy[1] / timings['copy kernel'] / 1e6:.2f} GB/s; x copy: the time over the copy kernel's)")


def bench_model(device: dml.Device, reps: int) -> None:
    model = onnx.load_from_string(gzip.decompress(MODEL.read_bytes()))
    feed_name = model.graph.input[0].name
    dims = [d.dim_value or 1 for d in model.graph.input[0].type.tensor_type.shape.dim]
    feed = {feed_name: np.random.default_rng(1).standard_normal(dims).astype(np.float32)}
    with_direct = gonnx.InferenceSession(model, device=device)
    saved = kc.DIRECT_CHANNELS
    kc.DIRECT_CHANNELS = 0
    try:
        without = gonnx.InferenceSession(model, device=device)
        without.run(None, feed)
    finally:
        kc.DIRECT_CHANNELS = saved
    a, b = with_direct.run(None, feed)[0], without.run(None, feed)[0]
    assert same_bits(a, b), "the model's outputs differ with and without direct"
    timings = median_ms({"direct": lambda: with_direct.run(None, feed),
                         "without direct": lambda: without.run(None, feed)}, reps)
    print(f"\n{MODEL.name} {dims}: run (numpy in/out) with direct {timings['direct']:.1f} ms, without "
          f"{timings['without direct']:.1f} ms: {timings['without direct'] / timings['direct']:.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default=None, help='"vulkan", "gl" or a name substring (default: auto)')
    parser.add_argument("--reps", type=int, default=9, help="timed runs per path (median)")
    parser.add_argument("--model", action="store_true", help="also the quantized MobileNetV2 with and without direct")
    args = parser.parse_args(argv)
    device = dml.Device(adapter=args.adapter)
    print(f"adapter: {device.adapter_name}; median of {args.reps} after warm-up, paths interleaved")
    copy = copy_kernel(device)
    for shape, stride in SHAPES:
        bench_layer(device, shape, stride, args.reps, copy)
    if args.model:
        bench_model(device, args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
