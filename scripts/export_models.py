"""Export the real models of tests/test_onnx_models.py to tests/data/models/ (run by hand, not by the tests).

The models are other people's architectures, exported by PyTorch's own ONNX exporter with
random weights (seeded; nothing downloads: weights=None, weights_backbone=None):

- lraspp_mobilenet_v3_large, deeplabv3_mobilenet_v3_large: torchvision's segmentation
  networks as torchvision builds them (Resize: bilinear, align_corners=False; HardSwish,
  HardSigmoid, the squeeze-excitation's global average pooling, dilated convolutions);
  their random weights redrawn from three levels per tensor so that the gzip-compressed
  file stays small (the architecture is torchvision's own, only the values are quantized);
- yolo_fpn: a YOLO-shaped detector (a strided convolution backbone, a feature pyramid whose
  top-down path is nn.Upsample(scale_factor=2, mode="nearest") and torch.cat, a head per
  level): the shape of YOLOv3/v5's neck, small;
- unet: a small UNet whose decoder upsamples bilinearly, align_corners=True in one stage and
  False in the other.

Control flow and detection, exported by the TorchScript exporter (torch.onnx.export(...,
dynamo=False)) as their users export them: torch.jit.script-ed code (data-dependent Python
control flow becomes ONNX If and Loop) and torchvision's detection models (traced; their
scripted helpers become If):

- scripted_if: a Linear, then an If on the sign of its output's mean (a condition computed
  from the input's values), each branch a Linear and an activation reading the outer value;
- greedy_decoder: a greedy decoding loop (an embedding, a GRU cell written out, an output
  Linear, ArgMax fed back) whose trip count is the input `steps`: a Loop with loop-carried
  state and no condition from data;
- greedy_decoder_eos: the same loop ended early when every row's token is the end token
  (`break`): the Loop's condition is computed from data, an If inside its body;
- greedy_decoder_tokens: the same loop collecting each step's tokens in a list, stacked after
  it: SequenceEmpty, SequenceInsert in the body, ConcatFromSequence;
- ssdlite320_mobilenet_v3_large: torchvision's detector with its transform (Resize to
  320x320) and postprocess (TopK, NonZero, NonMaxSuppression in an If), 3 classes;
- fasterrcnn_mobilenet_v3_large_320_fpn: torchvision's two-stage detector (the region
  proposal network's TopK and NonMaxSuppression, MultiScaleRoIAlign's RoiAlign per level and
  ScatterElements), 3 classes, its box head's representation 128 wide instead of 1024 (the
  1024-wide head alone is 51 MB of ONNX), its heads' layers scaled to outputs of a set
  spread (normalize_outputs: random weights otherwise saturate every score at 1.0); both
  detectors' weights redrawn from three levels (quantize_weights) and their files
  gzip-compressed.

Usage (a virtualenv with the "export" extra of pyproject.toml: torch, torchvision, onnx,
onnxscript; outside the repository):

    python scripts/export_models.py [--out tests/data/models] [--only NAME,NAME]

With torch 2.13.0 (CPU), torchvision 0.28.0, onnx 1.23.2 and onnxscript 0.7.2 it writes the
committed files byte for byte, but for the stack traces that the dynamo exporter records in
each node's metadata (the first four files): they name this script's path and line numbers
where it ran (the graphs and weights are the same). --only NAME,... exports those alone.
"""

from __future__ import annotations

import argparse
import gzip
import io
import sys
from pathlib import Path

import onnx
import torch
from torch import nn


def _nms(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """torchvision::nms in PyTorch operations (greedy, by descending score; suppressed where
    the IoU with a kept box exceeds the threshold), for the detection models' tracing where
    torchvision's compiled op does not load; the export writes ONNX's NonMaxSuppression in its place."""
    order = scores.argsort(descending=True, stable=True)
    x1, y1, x2, y2 = dets.unbind(1)
    area = (x2 - x1) * (y2 - y1)
    keep, suppressed = [], torch.zeros(len(order), dtype=torch.bool)
    for a, i in enumerate(order.tolist()):
        if suppressed[a]:
            continue
        keep.append(i)
        rest = order[a + 1:]
        w = (torch.minimum(x2[i], x2[rest]) - torch.maximum(x1[i], x1[rest])).clamp(min=0)
        h = (torch.minimum(y2[i], y2[rest]) - torch.maximum(y1[i], y1[rest])).clamp(min=0)
        suppressed[a + 1:] |= w * h / (area[i] + area[rest] - w * h) > iou_threshold
    return torch.tensor(keep, dtype=torch.long)


def _has_ops() -> bool:
    """torchvision.extension._has_ops where its compiled library does not load (scripted by
    the detection models' export: a function, not a lambda)."""
    return True


def _roi_align(*args):
    """torchvision::roi_align's CPU kernel: torchvision's own PyTorch-operations version of it
    (torchvision.ops.roi_align._roi_align, uncompiled: a traced model cannot call a compiled
    function); the export writes ONNX's RoiAlign in its place."""
    return sys.modules["torchvision.ops.roi_align"]._roi_align.__wrapped__(*args)


def _torchvision():
    """torchvision, importable where its compiled ops do not load (PyPI's torchvision wheel
    is built against the CUDA torch; a CPU-only torch lacks libtorch_cuda): its fake-tensor
    registrations of nms and qnms need the two ops defined; nms and roi_align get CPU kernels in
    PyTorch operations (_nms, _roi_align: the detection models call them while they are
    traced), and torchvision's check that its compiled ops loaded is answered yes."""
    try:
        import torchvision
    except RuntimeError as exc:
        if "torchvision::nms does not exist" not in str(exc):
            raise
        library = torch.library.Library("torchvision", "DEF")  # noqa: F841 (kept alive: the ops stay defined)
        for op in ("nms", "qnms"):
            library.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        library.impl("nms", _nms, "CPU")
        library.define("roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                       "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor")
        library.impl("roi_align", _roi_align, "CPU")
        _torchvision.library = library
        import torchvision
        torchvision.extension._has_ops = _has_ops
        sys.modules["torchvision.ops.roi_align"]._has_ops = _has_ops  # its own binding of the name
    return torchvision

#: Input size of every model: (1, 3, SIZE, SIZE).
SIZE = 64
#: Opset of the exported files (PyTorch's exporter writes Resize-18 at this opset).
OPSET = 18


def quantize_weights(model: nn.Module) -> None:
    """Each convolution's weights (a parameter of 2 or more dimensions and more than 64
    values: the BatchNormalization scales and shifts and the biases stay) redrawn from three levels, -s, 0 and s
    (probabilities 1/4, 1/2, 1/4; s = the tensor's standard deviation times sqrt(2), so that
    the variance the initializer chose is kept): the same architecture, a file that gzip
    compresses to about 1.5 bits a weight."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for t in model.parameters():
            if t.dim() < 2 or t.numel() <= 64:
                continue
            s = float(t.std()) * 2 ** 0.5
            signs = torch.tensor([-s, 0.0, 0.0, s])
            t.copy_(signs[torch.randint(0, 4, t.shape, generator=generator)])


def calibrate_batchnorm(model: nn.Module, size: int, run=None) -> None:
    """Running statistics measured on random inputs (the cumulative average of 4 batches of
    4), as training would leave them: each BatchNormalization then normalizes its input, and
    the signal neither vanishes nor explodes through a deep network of random weights (a
    freshly built network's statistics, 0 and 1, leave a MobileNet's output almost constant).
    `run(batch)` runs the model on a batch where calling it does not (default: model(batch))."""
    generator = torch.Generator().manual_seed(2)
    run = run or model
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(4):
            run(torch.rand(4, 3, size, size, generator=generator))
    model.eval()


def normalize_outputs(layers: list[tuple[nn.Module, float]], run) -> None:
    """Each layer's weights and bias scaled, in order, so that its output's standard deviation
    on the calibration call `run()` is the target: the layers that no BatchNormalization
    follows (a detector's heads) then neither saturate the scores (a softmax of random
    logits in the hundreds: every score 1.0) nor throw the boxes off the image."""
    for module, target in layers:
        seen = []
        handle = module.register_forward_hook(lambda m, i, o, seen=seen: seen.append(float(o.std())))
        with torch.no_grad():
            run()
        handle.remove()
        with torch.no_grad():
            for t in module.parameters():
                t.mul_(target / seen[0])


class Conv(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, stride: int = 1):
        super().__init__(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.LeakyReLU(0.1))


class YoloFPN(nn.Module):
    """Backbone strides 8, 16, 32; the top-down pyramid: upsample x2 (nearest) and
    concatenate with the finer level; a 1x1 head per level (3 anchors x (5 + classes))."""

    def __init__(self, classes: int = 4):
        super().__init__()
        self.stem = nn.Sequential(Conv(3, 8, 2), Conv(8, 16, 2), Conv(16, 16, 2))      # /8
        self.c4, self.c5 = Conv(16, 32, 2), Conv(32, 64, 2)                            # /16, /32
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.lat5, self.lat4 = Conv(64, 32), Conv(64, 16)
        out = 3 * (5 + classes)
        self.head5, self.head4, self.head3 = nn.Conv2d(32, out, 1), nn.Conv2d(16, out, 1), nn.Conv2d(32, out, 1)

    def forward(self, x):
        p3 = self.stem(x)
        p4 = self.c4(p3)
        p5 = self.c5(p4)
        t5 = self.lat5(p5)
        t4 = self.lat4(torch.cat([self.up(t5), p4], 1))
        t3 = torch.cat([self.up(t4), p3], 1)
        return self.head5(t5), self.head4(t4), self.head3(t3)


class UNet(nn.Module):
    """Two down stages, two up stages (bilinear: align_corners=True, then False), skips by concatenation."""

    def __init__(self, classes: int = 3):
        super().__init__()
        self.e1, self.e2, self.e3 = Conv(3, 8), Conv(8, 16, 2), Conv(16, 32, 2)
        self.up_a = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.up_b = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.d2, self.d1 = Conv(32 + 16, 16), Conv(16 + 8, 8)
        self.out = nn.Conv2d(8, classes, 1)

    def forward(self, x):
        s1 = self.e1(x)
        s2 = self.e2(s1)
        b = self.e3(s2)
        y = self.d2(torch.cat([self.up_a(b), s2], 1))
        y = self.d1(torch.cat([self.up_b(y), s1], 1))
        return self.out(y)


class OutputOnly(nn.Module):
    """torchvision's segmentation models return a dict: the "out" tensor."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def models() -> dict[str, tuple[nn.Module, bool]]:
    """name -> (model in eval mode, whether its weights are quantized and the file gzip-compressed)."""
    torch.manual_seed(0)
    seg = _torchvision().models.segmentation
    built = {
        "lraspp_mobilenet_v3_large": (OutputOnly(seg.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=3)), True),
        "deeplabv3_mobilenet_v3_large": (OutputOnly(seg.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=3, aux_loss=False)), True),
        "yolo_fpn": (YoloFPN(), False),
        "unet": (UNet(), False),
    }
    for model, quantized in built.values():
        if quantized:
            quantize_weights(model)
        calibrate_batchnorm(model, SIZE)
    return built


#: The control-flow models' sizes: batch rows, hidden size, vocabulary (the last token ends a sequence).
BATCH, HIDDEN, VOCAB = 2, 8, 6


class ScriptedIf(nn.Module):
    """y = Linear(x); relu(Linear_a(y)) * 2 where mean(y) > 0, else tanh(Linear_b(y)) - 1:
    the first branch's outputs are >= 0, the second's < 0."""

    def __init__(self):
        super().__init__()
        self.proj, self.a, self.b = nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, 4), nn.Linear(HIDDEN, 4)

    def forward(self, x):
        y = self.proj(x)
        if bool(y.mean() > 0):
            z = torch.relu(self.a(y)) * 2.0
        else:
            z = torch.tanh(self.b(y)) - 1.0
        return z


class DecoderStep(nn.Module):
    """One greedy step: the token's embedding into a GRU cell written out (torch's nn.GRUCell
    does not script-export), the next token's logits."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, HIDDEN)
        self.ih, self.hh = nn.Linear(HIDDEN, 3 * HIDDEN), nn.Linear(HIDDEN, 3 * HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)

    def forward(self, token, h):
        ir, iz, i_n = self.ih(self.embedding(token)).chunk(3, 1)
        hr, hz, h_n = self.hh(h).chunk(3, 1)
        r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
        h = (1 - z) * torch.tanh(i_n + r * h_n) + z * h
        return h, self.out(h)


class GreedyDecoder(nn.Module):
    """`steps` greedy steps from the state h (token 0 first): the last state, the sum of the
    steps' logits, the last tokens; with `stop_at_end`, the loop stops after the step where
    every row's token is the end token (VOCAB - 1)."""

    __constants__ = ["stop_at_end"]  # a constant of the scripted code: the other variant's branch is left out

    def __init__(self, stop_at_end: bool = False):
        super().__init__()
        self.step = DecoderStep()
        self.vocab = VOCAB  # an attribute: scripted code reads no global
        self.stop_at_end = stop_at_end

    def forward(self, h, steps):
        token = torch.zeros(h.shape[0], dtype=torch.long)
        total = torch.zeros(h.shape[0], self.vocab)
        for _ in range(int(steps)):
            h, logits = self.step(token, h)
            token = logits.argmax(-1)
            total = total + logits
            if self.stop_at_end and bool((token == self.vocab - 1).all()):
                break
        return h, total, token


class GreedyDecoderTokens(GreedyDecoder):
    """GreedyDecoder returning every step's tokens, [BATCH, steps] (a list stacked after the loop)."""

    def forward(self, h, steps):
        token = torch.zeros(h.shape[0], dtype=torch.long)
        tokens: list[torch.Tensor] = []
        for _ in range(int(steps)):
            h, logits = self.step(token, h)
            token = logits.argmax(-1)
            tokens.append(token)
        return h, torch.stack(tokens, 1)


#: Image size of the detection model's input ([3, DETECTION_SIZE, DETECTION_SIZE]: its
#: transform resizes it to 320x320 in the graph).
DETECTION_SIZE = 64


def detection_models() -> dict[str, nn.Module]:
    """name -> torchvision detection model in eval mode, weights quantized (quantize_weights)
    and BatchNormalization calibrated on the backbone and head (a detector in training mode
    wants targets)."""
    torch.manual_seed(0)
    detection = _torchvision().models.detection
    ssd = detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3)
    quantize_weights(ssd)
    calibrate_batchnorm(ssd, 320, run=lambda batch: ssd.head(list(ssd.backbone(batch * 2 - 1).values())))
    representation = 128
    rcnn = detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None, num_classes=3)
    rcnn.roi_heads.box_head = detection.faster_rcnn.TwoMLPHead(256 * 7 * 7, representation)
    rcnn.roi_heads.box_predictor = detection.faster_rcnn.FastRCNNPredictor(representation, 3)
    quantize_weights(rcnn)
    calibrate_batchnorm(rcnn, 320, run=rcnn.backbone)
    rcnn.eval()
    rpn, roi = rcnn.rpn.head, rcnn.roi_heads
    image = torch.rand(3, DETECTION_SIZE, DETECTION_SIZE, generator=torch.Generator().manual_seed(4))
    normalize_outputs([(rpn.conv[0][0], 1.0), (rpn.cls_logits, 2.0), (rpn.bbox_pred, 0.2), (roi.box_head.fc6, 1.0),
                       (roi.box_head.fc7, 1.0), (roi.box_predictor.cls_score, 2.0), (roi.box_predictor.bbox_pred, 0.2)],
                      lambda: rcnn([image]))
    return {"ssdlite320_mobilenet_v3_large": ssd.eval(), "fasterrcnn_mobilenet_v3_large_320_fpn": rcnn.eval()}


def scripted_models() -> dict[str, tuple[torch.jit.ScriptModule, tuple, list[str], list[str]]]:
    """name -> (scripted model, example inputs, input names, output names)."""
    torch.manual_seed(0)
    h, steps = torch.randn(BATCH, HIDDEN), torch.tensor(3)
    built = {"scripted_if": (ScriptedIf(), (h,), ["x"], ["y"])}
    weights = GreedyDecoder().state_dict()  # the three decoders' weights are the same
    for name, decoder in (("greedy_decoder", GreedyDecoder()), ("greedy_decoder_eos", GreedyDecoder(stop_at_end=True)),
                          ("greedy_decoder_tokens", GreedyDecoderTokens())):
        outputs = ["h_out", "tokens"] if name == "greedy_decoder_tokens" else ["h_out", "logits_sum", "token"]
        decoder.load_state_dict(weights)
        built[name] = (decoder, (h, steps), ["h", "steps"], outputs)
    return {name: (torch.jit.script(m.eval()), args, ins, outs) for name, (m, args, ins, outs) in built.items()}


def export_torchscript(model: nn.Module, args: tuple, input_names: list[str], output_names: list[str],
                       opset: int = OPSET) -> bytes:
    """The TorchScript exporter's file (dynamo=False): how scripted control flow and
    torchvision's detection models are exported."""
    buffer = io.BytesIO()
    torch.onnx.export(model, args, buffer, dynamo=False, opset_version=opset, input_names=input_names,
                      output_names=output_names)
    return stamped(buffer.getvalue(), "export_models.py")


def export(model: nn.Module, x: torch.Tensor) -> bytes:
    buffer = io.BytesIO()
    program = torch.onnx.export(model, (x,), dynamo=True, opset_version=OPSET, input_names=["x"],
                                external_data=False)
    program.save(buffer)
    return stamped(buffer.getvalue(), "export_models.py")


def stamped(data: bytes, script: str) -> bytes:
    """An exported model, its producer name stamped with the script that wrote it, checked by onnx."""
    proto = onnx.load_from_string(data)
    proto.producer_name = f"{proto.producer_name} (gpudml scripts/{script})"
    onnx.checker.check_model(proto)
    return proto.SerializeToString()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--out", type=Path, default=root / "tests" / "data" / "models")
    parser.add_argument("--only", default=None, metavar="NAME,NAME", help="export these models only")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None

    def write(name: str, data: bytes, compressed: bool) -> None:
        path = args.out / (f"{name}.onnx.gz" if compressed else f"{name}.onnx")
        path.write_bytes(gzip.compress(data, mtime=0) if compressed else data)
        print(f"{path}: {path.stat().st_size / 1e6:.2f} MB ({len(data) / 1e6:.2f} MB of ONNX)")

    if only is None or only & {"lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large", "yolo_fpn", "unet"}:
        x = torch.rand(1, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(3))
        for name, (model, compressed) in models().items():
            if only is None or name in only:
                write(name, export(model, x), compressed)
    for name, (model, example, input_names, output_names) in scripted_models().items():
        if only is None or name in only:
            write(name, export_torchscript(model, example, input_names, output_names), False)
    image = torch.rand(3, DETECTION_SIZE, DETECTION_SIZE, generator=torch.Generator().manual_seed(3))
    for name, model in detection_models().items():
        if only is None or name in only:
            outputs = list(model([image])[0])  # the keys of its detections, in its order (SSD's differs)
            write(name, export_torchscript(model, ([image],), ["image"], outputs), True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
