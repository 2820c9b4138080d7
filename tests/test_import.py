"""`import gpudml` stays light (issue #40, item 8): it loads the errors and the version only,
the rest of the public names on the first use of any of them (PEP 562, gpudml/__init__.py);
loaded, it imports neither wgpu nor Jinja2, and the desc classes of the tables' rows
(ops/spec.py's desc_class: a hundred of them) become dataclasses when first used, not at
import (ops/spec.py's lazy_dataclass); built, each is what dataclasses.make_dataclass makes.
Structural checks only: no timing here (the cold-start bench row measures it:
gpudml/bench/cold_start.py)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest
from conftest import run_python

import gpudml
from gpudml.ops import SPECS
from gpudml.ops.spec import desc_class, lazy_dataclass

pytestmark = pytest.mark.any_class  # the import itself: the same under either adapter class


def _built(cls) -> bool:
    """Whether dataclasses.dataclass has run on `cls` (its own fields, not a placeholder)."""
    return isinstance(vars(cls).get("__dataclass_fields__"), dict)


PROBE = """
import pickle, sys
import gpudml
from gpudml.ops import SPECS
built = lambda cls: isinstance(vars(cls).get("__dataclass_fields__"), dict)
rows = [s.desc for s in SPECS if "__dataclass_fields__" in vars(s.desc) and not built(s.desc)]
heavy = sorted(m for m in ("wgpu", "jinja2") if m in sys.modules)
print(len(rows), len([s for s in SPECS if built(s.desc) and s.desc.__module__ == "gpudml.ops.elementwise"]), heavy)
loaded = pickle.loads(bytes.fromhex("{pickled}"))
cls = type(loaded)
before = built(cls)
d = gpudml.TensorDesc(gpudml.DataType.FLOAT32, [2, 3])
print(before, loaded == cls(d, d, d), built(cls), repr(loaded) == {text!r})
"""


def test_import_gpudml_builds_no_row_desc_class_and_imports_no_wgpu():
    d = gpudml.TensorDesc(gpudml.DataType.FLOAT32, [2, 3])
    desc = gpudml.ElementWiseAdd1OperatorDesc(d, d, d)
    res = run_python(PROBE.format(pickled=pickle.dumps(desc).hex(), text=repr(desc)))
    unbuilt, built_rows, heavy = res.stdout.splitlines()[0].split(" ", 2)
    assert int(unbuilt) > 80 and built_rows == "0"  # every element-wise row's class waits for its first use
    assert heavy == "[]"
    # An instance unpickled in that fresh process (its class not built yet) is the same desc.
    assert res.stdout.splitlines()[1] == "False True True True"


LAZY = """
import sys, threading
import gpudml
ours = sorted(m for m in sys.modules if m.startswith("gpudml"))
print(ours, "numpy" in sys.modules, "__all__" in vars(gpudml))
got = []
threads = [threading.Thread(target=lambda name=name: got.append(getattr(gpudml, name)))
           for name in ("add", "Device", "Tensor", "DataType", "Slice1OperatorDesc") * 4]
for t in threads: t.start()
for t in threads: t.join()
print(len(got), len(gpudml.__all__), len(gpudml.SPECS), gpudml.Tensor.__add__.__name__)
try:
    gpudml.no_such_name
except AttributeError as e:
    print(e)
"""


def test_import_gpudml_loads_only_errors_and_version_then_everything_on_first_use():
    out = run_python(LAZY).stdout.splitlines()
    assert out[0] == "['gpudml', 'gpudml.errors', 'gpudml.version'] False False"
    got, names, specs, add = out[1].split()  # 20 threads at once, each its name: one load
    assert got == "20" and int(names) > 250 and int(specs) == len(SPECS) and add == "__add__"
    assert out[2] == "module 'gpudml' has no attribute 'no_such_name'"


def test_star_import_and_dir_see_every_public_name():
    res = run_python("from gpudml import *\nimport gpudml\n"
                     "print(Slice1OperatorDesc is gpudml.Slice1OperatorDesc, callable(add), DataType.FLOAT32,"
                     " set(gpudml.__all__) <= set(dir(gpudml)))")
    assert res.stdout.split() == ["True", "True", "DataType.FLOAT32", "True"]


def test_every_desc_class_pickles_by_reference():
    for spec in SPECS:
        assert pickle.loads(pickle.dumps(spec.desc)) is spec.desc


class _Base:
    KIND = "base"


@dataclasses.dataclass(frozen=True)
class _Shared:
    a_tensor: object

    def __post_init__(self):
        if self.a_tensor == "bad":
            raise ValueError("bad")


FIELDS = [("b_tensor", int), ("alpha", float, dataclasses.field(default=1.0)),
          ("given", object, dataclasses.field(default=None, kw_only=True))]


def test_a_desc_class_is_make_dataclass_once_used():
    lazy = desc_class("ThingOperatorDesc", __name__, doc="A thing.", fields=FIELDS, base=_Shared, ROW="row")
    eager = dataclasses.make_dataclass("ThingOperatorDesc", FIELDS, bases=(_Shared,), frozen=True,
                                       namespace={"__module__": __name__, "__doc__": "A thing.", "ROW": "row"})
    assert not _built(lazy) and lazy.__name__ == "ThingOperatorDesc" and lazy.ROW == "row"
    assert issubclass(lazy, _Shared) and lazy.__doc__ == "A thing." and lazy.__module__ == __name__
    x = lazy("t", 2)  # the first use builds it
    assert _built(lazy) and isinstance(x, lazy)
    assert [(f.name, f.type, f.default, f.kw_only) for f in dataclasses.fields(lazy)] == \
        [(f.name, f.type, f.default, f.kw_only) for f in dataclasses.fields(eager)]
    assert str(inspect.signature(lazy)) == str(inspect.signature(eager))
    assert lazy.__match_args__ == eager.__match_args__ and lazy.__dataclass_params__.frozen
    assert repr(x) == "ThingOperatorDesc(a_tensor='t', b_tensor=2, alpha=1.0, given=None)"
    assert x == lazy("t", 2) and hash(x) == hash(lazy("t", 2)) and x != lazy("t", 2, 0.5)
    assert dataclasses.replace(x, alpha=3.0) == lazy("t", 2, 3.0, given=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.alpha = 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        x.other = 2.0
    with pytest.raises(ValueError):  # the base's __post_init__ runs
        lazy("bad", 1)


@pytest.mark.parametrize("first_use", ["fields", "is_dataclass", "signature", "hash", "match_args"])
def test_any_first_use_builds_the_class(first_use):
    cls = desc_class("OtherOperatorDesc", __name__, doc="Other.", fields=FIELDS, base=_Shared)
    assert not _built(cls)
    use = {"fields": lambda: [f.name for f in dataclasses.fields(cls)],
           "is_dataclass": lambda: dataclasses.is_dataclass(cls) and [f.name for f in dataclasses.fields(cls)],
           "signature": lambda: list(inspect.signature(cls).parameters),
           "hash": lambda: hash(cls("t", 1)) == hash(cls("t", 1)) and ["a_tensor", "b_tensor", "alpha", "given"],
           "match_args": lambda: list(cls.__match_args__) + ["given"]}[first_use]
    assert use() == ["a_tensor", "b_tensor", "alpha", "given"]
    assert _built(cls)


def test_lazy_dataclass_keeps_what_the_class_defines_and_builds_bases_first():
    @lazy_dataclass(frozen=True)
    class Base:
        x: int = 1

        def __repr__(self):
            return f"<base {self.x}>"

    @lazy_dataclass(frozen=True)
    class Child(Base):
        y: int = 2

    class Plain(Child):  # not a dataclass of its own: Child's, built on first use
        pass

    assert not _built(Base) and not _built(Child)
    assert vars(Base)["__repr__"].__name__ == "__repr__"  # its own, no placeholder
    assert [f.name for f in dataclasses.fields(Plain)] == ["x", "y"] and _built(Base) and _built(Child)
    c = Child(3, 4)
    assert repr(Base(3)) == "<base 3>" and c == Child(3, 4) and Plain(3, 4) != c
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.y = 5
    with pytest.raises(ValueError, match="slots"):
        lazy_dataclass(slots=True)


def test_scale_bias_is_a_lazy_dataclass():
    assert dataclasses.is_dataclass(gpudml.ScaleBias) and gpudml.ScaleBias(2, 1) == gpudml.ScaleBias(2.0, 1.0)
    assert pickle.loads(pickle.dumps(gpudml.ScaleBias(2, 1))) == gpudml.ScaleBias(2, 1)
