"""The disk cache of rendered kernel bodies (gpudml/cache.py, templates.render): a process
that finds its kernels there never imports Jinja2; a changed template is a new key; the
cache can be off, or unwritable, and nothing fails."""

from __future__ import annotations

import shutil

import pytest
from conftest import run_python

from gpudml import cache
from gpudml.kernels import templates

pytestmark = pytest.mark.any_class  # the cache of rendered sources: the same under either adapter class

PROBE = """
import sys
import gpudml, gpudml.caps, gpudml.compiler
desc = gpudml.ops.reduce.infer_output(gpudml.TensorDesc(1, [4, 4]), "sum", [1])
wgsl = gpudml.compiler.compile(desc, gpudml.caps.profile("vulkan-cpu")).wgsl[0]
print("jinja2" in sys.modules, len(wgsl))
"""


def _probe(cache_dir) -> tuple[bool, int]:
    res = run_python(PROBE, GPUDML_CACHE_DIR=str(cache_dir))
    jinja, size = res.stdout.split()
    return jinja == "True", int(size)


def test_a_warm_cache_needs_no_jinja(tmp_path):
    first = _probe(tmp_path)
    assert first[0] and list((tmp_path / "wgsl").glob("*.wgsl"))  # rendered and stored
    second = _probe(tmp_path)
    assert second == (False, first[1])  # the same source, without Jinja2


def test_the_cache_can_be_off(tmp_path):
    assert _probe("off") == (True, _probe(tmp_path)[1])


def test_an_unusable_cache_folder_is_no_cache(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert _probe(blocker)[0]  # rendered, nothing stored, no error
    assert blocker.read_text() == "not a folder"


def test_a_changed_template_is_a_new_key(tmp_path):
    copy = tmp_path / "shaders"
    shutil.copytree(templates.packaged_dir(), copy)
    before = templates.digest((str(copy),))
    (copy / "slice1.wgsl.j2").write_text((copy / "slice1.wgsl.j2").read_text() + "\n// edited\n")
    templates.digest.cache_clear()
    assert templates.digest((str(copy),)) != before


def test_folder_names(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUDML_CACHE_DIR", str(tmp_path))
    assert cache.folder() == tmp_path
    for off in ("", "off", "OFF", "0", "none"):
        monkeypatch.setenv("GPUDML_CACHE_DIR", off)
        assert cache.folder() is None and cache.read("wgsl", "x") is None
        cache.write("wgsl", "x", "text")  # nothing, no error
    monkeypatch.delenv("GPUDML_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.folder() == tmp_path / "gpudml"
    cache.write("wgsl", "k.wgsl", "body")
    assert cache.read("wgsl", "k.wgsl") == "body" and not list((tmp_path / "gpudml" / "wgsl").glob(".*.tmp"))
