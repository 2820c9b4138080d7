"""QDQ models as DirectML's execution provider receives them: Q/DQ node groups rewritten into
onnxruntime's quantized operators before the graph is built.

onnxruntime's QDQSelectorActionTransformer (a level-2 "extended" optimization, "only
compatible with the CPU and DML EP": onnxruntime/core/optimizer/qdq_transformer/
selectors_actions/qdq_selector_action_transformer.cc) replaces a DequantizeLinear ->
operator -> QuantizeLinear group by the operator's integer form. Of its rules, those whose
selectors are not restricted to the CPU provider apply to DirectML's, and gpudml applies
exactly those (`fuse`):

- Conv: DQ(x), DQ(w), optional DQ(bias, INT32) -> Conv -> Q becomes QLinearConv (the bias's
  integers its INT32 bias); x and y UINT8, or INT8 where `int8_allowed` (onnxruntime's
  QDQIsInt8Allowed(): false on x86-64, where DirectML's provider runs; the session config
  entry "session.qdqisint8allowed" = "1" turns it on); w INT8 or UINT8;
- Add: DQ(a), DQ(b) -> Add -> Q, all three of one 8-bit type, becomes com.microsoft QLinearAdd
  (the rule onnxruntime registers for the DML provider alone, USE_DML);
- Concat: every input a DQ, its output a Q, all of one 8-bit type: com.microsoft QLinearConcat;
- data movement (MaxPool, Resize, Gather, Reshape, Transpose, Squeeze, Unsqueeze): DQ -> op ->
  Q with the same scale and zero point on both sides runs the operator on the integers (the
  Q and DQ dropped);
- ArgMax: DQ -> ArgMax with a positive scale reads the integers (the order is theirs).

A group is rewritten where its scales and zero points are constants, the operator's output is
read by its Q alone (no graph output), no DQ or Q output is a graph output (a DQ that other
nodes read too stays for them, as onnxruntime's EnsureUniqueDQForNodeUnit duplicates it; one
no node reads after the rewrite is removed), and gpudml maps the replacement (mapping.row).
The graph's other nodes are left as written (the CPU-only rules: MatMul, Gemm, Where, the unary QLinear
operators, are not DirectML's provider's). Subgraphs (If, Loop, Scan bodies) are left as
written.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from . import analysis, mapping

#: The session config entry (SessionOptions.add_session_config_entry) onnxruntime reads for
#: QDQIsInt8Allowed; "1" lets INT8 activations fuse into QLinearConv.
INT8_ALLOWED_KEY = "session.qdqisint8allowed"

#: Data-movement operators whose DQ -> op -> Q group (one scale and zero point) runs on the
#: integers (onnxruntime's DropQDQNodesRules; MaxPool from opset 12, its first with 8-bit types).
DROP_QDQ = frozenset({"MaxPool", "Resize", "Gather", "Reshape", "Transpose", "Squeeze", "Unsqueeze"})

_EIGHT_BIT = (onnx.TensorProto.UINT8, onnx.TensorProto.INT8)


class _Graph:
    """The top-level graph's nodes and values, as a rewrite reads them."""

    def __init__(self, model: onnx.ModelProto):
        g = model.graph
        self.model = model
        self.nodes = list(g.node)
        self.constants = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        for n in self.nodes:
            if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
                self.constants[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
        self.outputs = {v.name for v in g.output}
        self.producer = {o: n for n in self.nodes for o in n.output if o}
        self.readers: dict[str, int] = {}
        self.reader: dict[str, onnx.NodeProto] = {}  # (the first node reading a value)
        for n in self.nodes:
            for name in [*n.input, *analysis.node_outer_names(n)]:
                self.readers[name] = self.readers.get(name, 0) + 1
                self.reader.setdefault(name, n)
        self.types = {t.name: t.data_type for t in g.initializer}
        for v in [*g.input, *g.value_info, *g.output]:
            if v.type.HasField("tensor_type"):
                self.types[v.name] = v.type.tensor_type.elem_type

    def dq(self, name: str):
        """The DequantizeLinear producing `name`, no graph output, its scale and zero point
        constants; else None. A DQ read by several nodes serves each (onnxruntime's
        EnsureUniqueDQForNodeUnit gives each node unit a DQ of its own first): `dropped` keeps
        it for the others."""
        node = self.producer.get(name)
        if node is None or node.op_type != "DequantizeLinear" or node.domain not in ("", "ai.onnx"):
            return None
        if name in self.outputs or not self._constant_params(node):
            return None
        return node

    def dropped(self, *nodes) -> list:
        """Of a rewritten group's Q and DQ nodes, those no other node reads (removed with it)."""
        return [n for n in nodes
                if n is not None and (n.op_type == "QuantizeLinear" or self.readers.get(n.output[0]) == 1)]

    def q(self, name: str):
        """The QuantizeLinear that alone reads `name` (no graph output), constant parameters."""
        if name in self.outputs or self.readers.get(name) != 1:
            return None
        node = self.reader.get(name)
        if node is None or node.op_type != "QuantizeLinear" or node.domain not in ("", "ai.onnx"):
            return None
        return node if self._constant_params(node) and node.input[0] == name else None

    def _constant_params(self, node) -> bool:
        return all(name in self.constants for name in node.input[1:3] if name) and not any(
            a.name == "block_size" and a.i for a in node.attribute)

    def quant_type(self, node) -> int | None:
        """The integer type of a DQ's input or a Q's output: its zero point's (a constant), or
        the value's declared type; None where neither says."""
        if node.op_type == "QuantizeLinear":
            if len(node.input) > 2 and node.input[2]:
                return helper.np_dtype_to_tensor_dtype(self.constants[node.input[2]].dtype)
            to = next((a.i for a in node.attribute if a.name == "output_dtype"), 0)
            return to or onnx.TensorProto.UINT8
        if node.input[0] in self.constants:
            return helper.np_dtype_to_tensor_dtype(self.constants[node.input[0]].dtype)
        if len(node.input) > 2 and node.input[2]:
            return helper.np_dtype_to_tensor_dtype(self.constants[node.input[2]].dtype)
        return self.types.get(node.input[0])

    def zero_point(self, node, added: list) -> str:
        """The node's zero point's name; one made (0 of its type) where it has none."""
        if len(node.input) > 2 and node.input[2]:
            return node.input[2]
        name = f"{node.output[0]}_gpudml_zero_point"
        if name in self.constants:  # (made for an earlier rule's try)
            return name
        self.constants[name] = np.zeros((), helper.tensor_dtype_to_np_dtype(self.quant_type(node)))
        added.append(numpy_helper.from_array(self.constants[name], name))
        return name

    def same_params(self, a, b) -> bool:
        """Do DQ a and Q b have one scale and zero point (values, types)?"""
        def params(n):
            zp = self.constants[n.input[2]] if len(n.input) > 2 and n.input[2] else np.zeros(
                (), helper.tensor_dtype_to_np_dtype(self.quant_type(n)))
            return self.constants[n.input[1]], zp
        (sa, za), (sb, zb) = params(a), params(b)
        return (sa.dtype == sb.dtype and za.dtype == zb.dtype and np.array_equal(sa, sb) and np.array_equal(za, zb)
                and sa.size == 1)


def _mapped(op_type: str, domain: str = "") -> bool:
    return mapping.row(op_type, domain or "ai.onnx") is not None


def fuse(model: onnx.ModelProto, int8_allowed: bool = False) -> onnx.ModelProto:
    """`model` with its QDQ groups rewritten as DirectML's execution provider receives them (the
    module's docstring); the model itself where no group qualifies (never modified)."""
    if not any(n.op_type == "DequantizeLinear" for n in model.graph.node):
        return model
    g = _Graph(model)
    replaced: dict[int, list] = {}  # a target node's index -> the nodes that replace it
    removed: set[int] = set()       # indices of nodes dropped (their Q and DQ)
    added: list = []                # initializers made (zero points)
    index = {id(n): k for k, n in enumerate(g.nodes)}
    for k, node in enumerate(g.nodes):
        if node.domain not in ("", "ai.onnx") or k in removed:
            continue
        rewrite = _RULES.get(node.op_type)
        made = rewrite(g, node, int8_allowed, added) if rewrite else None
        if made is None:
            continue
        new_nodes, dropped = made
        if any(index[id(d)] in removed or index[id(d)] in replaced for d in dropped):
            continue
        replaced[k] = new_nodes
        removed.update(index[id(d)] for d in dropped)
    if not replaced:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    for k, node in enumerate(g.nodes):
        if k in removed:
            continue
        out.graph.node.extend(replaced.get(k, [node]))
    read = {name for n in out.graph.node for name in [*n.input, *analysis.node_outer_names(n)]}
    graph_outputs = {v.name for v in out.graph.output}
    dead = [n for n in out.graph.node if n.op_type == "DequantizeLinear" and n.output[0] not in read
            and n.output[0] not in graph_outputs]  # (a shared DQ whose every reader was rewritten)
    for n in dead:
        out.graph.node.remove(n)
    out.graph.initializer.extend(added)
    if any(n.domain == mapping.MS for nodes in replaced.values() for n in nodes) and not any(
            o.domain == mapping.MS for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid(mapping.MS, 1))
    return out


def _conv(g: _Graph, node, int8_allowed: bool, added: list):
    dqx, dqw = g.dq(node.input[0]), g.dq(node.input[1]) if len(node.input) > 1 else None
    dqb = g.dq(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    q = g.q(node.output[0])
    if dqx is None or dqw is None or q is None or (len(node.input) > 2 and node.input[2] and dqb is None):
        return None
    tx, tw, ty = g.quant_type(dqx), g.quant_type(dqw), g.quant_type(q)
    allowed = (onnx.TensorProto.UINT8, onnx.TensorProto.INT8) if int8_allowed else (onnx.TensorProto.UINT8,)
    if tx not in allowed or ty != tx or tw not in _EIGHT_BIT or not _mapped("QLinearConv"):
        return None
    if dqb is not None and g.quant_type(dqb) != onnx.TensorProto.INT32:
        return None
    inputs = [dqx.input[0], dqx.input[1], g.zero_point(dqx, added), dqw.input[0], dqw.input[1],
              g.zero_point(dqw, added), q.input[1], g.zero_point(q, added)]
    if dqb is not None:
        inputs.append(dqb.input[0])
    fused = helper.make_node("QLinearConv", inputs, [q.output[0]], name=(node.name or q.output[0]) + "_quant")
    fused.attribute.extend(node.attribute)
    return [fused], g.dropped(dqx, dqw, dqb, q)


def _add(g: _Graph, node, int8_allowed: bool, added: list):
    da, db, q = g.dq(node.input[0]), g.dq(node.input[1]), g.q(node.output[0])
    if da is None or db is None or q is None or not _mapped("QLinearAdd", mapping.MS):
        return None
    types = {g.quant_type(da), g.quant_type(db), g.quant_type(q)}
    if len(types) != 1 or types.pop() not in _EIGHT_BIT:
        return None
    inputs = [da.input[0], da.input[1], g.zero_point(da, added), db.input[0], db.input[1], g.zero_point(db, added),
              q.input[1], g.zero_point(q, added)]
    return [helper.make_node("QLinearAdd", inputs, [q.output[0]], name=(node.name or q.output[0]) + "_quant",
                             domain=mapping.MS)], g.dropped(da, db, q)


def _concat(g: _Graph, node, int8_allowed: bool, added: list):
    dqs, q = [g.dq(name) for name in node.input], g.q(node.output[0])
    if q is None or any(d is None for d in dqs) or not _mapped("QLinearConcat", mapping.MS):
        return None
    types = {g.quant_type(d) for d in dqs} | {g.quant_type(q)}
    if len(types) != 1 or types.pop() not in _EIGHT_BIT:
        return None
    inputs = [q.input[1], g.zero_point(q, added)]
    for d in dqs:
        inputs += [d.input[0], d.input[1], g.zero_point(d, added)]
    fused = helper.make_node("QLinearConcat", inputs, [q.output[0]], name=(node.name or q.output[0]) + "_quant",
                             domain=mapping.MS)
    fused.attribute.extend(node.attribute)
    return [fused], g.dropped(*dqs, q)


def _drop(g: _Graph, node, int8_allowed: bool, added: list):
    dq, q = g.dq(node.input[0]), g.q(node.output[0])
    if dq is None or q is None or not g.same_params(dq, q) or g.quant_type(q) not in _EIGHT_BIT:
        return None
    if node.op_type == "MaxPool" and _opset(g.model) < 12:
        return None
    moved = onnx.NodeProto()
    moved.CopyFrom(node)
    moved.input[0] = dq.input[0]
    moved.output[0] = q.output[0]
    return [moved], g.dropped(dq, q)


def _argmax(g: _Graph, node, int8_allowed: bool, added: list):
    dq = g.dq(node.input[0])
    if dq is None or g.quant_type(dq) not in _EIGHT_BIT or not np.all(g.constants[dq.input[1]] > 0):
        return None
    moved = onnx.NodeProto()
    moved.CopyFrom(node)
    moved.input[0] = dq.input[0]
    return [moved], g.dropped(dq)


def _opset(model) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


_RULES = {"Conv": _conv, "Add": _add, "Concat": _concat, "ArgMax": _argmax, **{op: _drop for op in DROP_QDQ}}


def int8_allowed(options) -> bool:
    """Whether `options` (a SessionOptions, gpudml's or onnxruntime's, or None) set
    INT8_ALLOWED_KEY to "1"."""
    if options is None or not hasattr(options, "get_session_config_entry"):
        return False
    try:
        return options.get_session_config_entry(INT8_ALLOWED_KEY) == "1"
    except Exception:  # noqa: BLE001 (no entry: gpudml's raises, onnxruntime's raises or gives "")
        return False
