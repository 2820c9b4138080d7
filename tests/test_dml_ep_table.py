"""gpudml's ONNX mapping against its anchor, ONNX Runtime's DirectML execution provider
(gpudml/onnx/dml_ep.py): every op the provider registers has exactly one status, every op
gpudml maps is the provider's or listed beyond it, and docs/onnx.md shows the table that
follows from both (so when a row lands in gpudml/onnx/mapping.py, the page is regenerated)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from gpudml.onnx import dml_ep, mapping

pytestmark = pytest.mark.any_class  # tables and a page: the same under either adapter class

PAGE = Path(__file__).resolve().parent.parent / "docs" / "onnx.md"
ANCHOR = {(domain, op) for domain, ops in dml_ep.DML_EP.items() for op in ops}
MAPPED = {(dml_ep.ONNX, op) for op in mapping.BY_TYPE} | {(dml_ep.MS, op) for op in mapping.CONTRIB}
FOLDED = {(dml_ep.ONNX, op) for op in mapping.FOLDED}
CONTROL = {(dml_ep.ONNX, op) for op in dml_ep.CONTROL_FLOW}  # (run by the session, not by a mapping row)


def test_the_page_has_the_generated_table():
    assert dml_ep.markdown() in PAGE.read_text(), (
        "docs/onnx.md's section \"ONNX Runtime's DirectML execution provider, op by op\" is not what "
        "gpudml/onnx/dml_ep.py and gpudml/onnx/mapping.py give now (a mapping row landed or left, or the lists "
        "changed): regenerate it with `python -m gpudml.onnx.dml_ep > /tmp/t.md` and paste /tmp/t.md over the "
        "section (from its heading to the line on the ops beyond the provider)")


def test_every_op_of_the_anchor_has_exactly_one_status():
    for key in ANCHOR:
        found = [key in MAPPED or key in FOLDED or key in CONTROL, key in dml_ep.NOT_YET, key in dml_ep.NOT_PLANNED]
        assert sum(found) == 1, (f"{key}: mapped or folded, NOT_YET, NOT_PLANNED: {found}; a mapped op comes off "
                                 f"NOT_YET and NOT_PLANNED, any other op is on one of them")
    assert set(dml_ep.NOT_YET) <= ANCHOR and set(dml_ep.NOT_PLANNED) <= ANCHOR, sorted(
        (set(dml_ep.NOT_YET) | set(dml_ep.NOT_PLANNED)) - ANCHOR)
    assert set(dml_ep.NOT_YET.values()) <= set(dml_ep.ISSUES)
    assert set(dml_ep.PARTLY) <= set(dml_ep.NOT_YET)
    counts = dml_ep.counts()
    assert counts["anchor"] == len(ANCHOR) == sum(v for k, v in counts.items() if k != "anchor")


def test_every_mapped_op_is_the_providers_or_listed_beyond_it():
    onnx_ops = set(dml_ep.DML_EP[dml_ep.ONNX])
    beyond = set(dml_ep.BEYOND)
    assert set(mapping.BY_TYPE) - onnx_ops == beyond, (
        "gpudml's mapped ops that the provider lacks are dml_ep.BEYOND: "
        f"{sorted(set(mapping.BY_TYPE) - onnx_ops)}, not {sorted(beyond)}")
    assert len(dml_ep.BEYOND) == len(beyond)


def test_the_anchor_is_well_formed():
    for domain, ops in dml_ep.DML_EP.items():
        for op, versions in ops.items():
            assert list(versions) == sorted(set(versions)) and versions[0] >= 1, (domain, op, versions)
    # The reasons given for ops of no ONNX schema hold for the onnx this project tests with.
    for (domain, op), why in dml_ep.NOT_PLANNED.items():
        if "no schema" in why or "no ONNX op has this name" in why:
            assert domain == dml_ep.ONNX and not onnx.defs.has(op), op
