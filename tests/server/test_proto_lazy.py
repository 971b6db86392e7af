"""The generated skift.v1 module makes its classes on first use, and they are betterproto2's.

``tools/generate_proto.py`` writes betterproto2's output verbatim as
``skift_server/_proto/skift/v1/__init__.pyi`` (what type checkers read) and,
as the module itself, the same classes each moved into a function that the
module's ``__getattr__`` runs on first use (a client makes the few it needs;
making all 207 at import was the largest part of ``skift ready``'s start-up).
Here every class of the lazy module is compared with the one the verbatim
output makes: names, docstrings, fields and their metadata, type hints,
attributes, a default instance's bytes and repr.
"""

from __future__ import annotations

import subprocess
import sys

COMPARE = r"""
import dataclasses, importlib.util, re, sys, typing
from importlib.machinery import SourceFileLoader

import betterproto2.message_pool
import skift_server  # noqa: F401
from skift_server._proto.skift import v1

made = [n for n in v1._MAKERS if n in vars(v1)]
assert made == [], made  # importing the module makes no class

# betterproto2's own output, run as a module of its own (its classes not registered twice)
path = v1.__file__[: -len(".py")] + ".pyi"
loader = SourceFileLoader("skift_server._proto.skift.v1_verbatim", path)
eager = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
eager.__package__ = "skift_server._proto.skift.v1"
sys.modules[loader.name] = eager
register = betterproto2.message_pool.MessagePool.register_message
betterproto2.message_pool.MessagePool.register_message = lambda *a, **k: None
loader.exec_module(eager)
betterproto2.message_pool.MessagePool.register_message = register


def same(x):
    return re.sub(r" at 0x[0-9a-f]+", "", repr(x)).replace("v1_verbatim", "v1")


names = [n for n in vars(eager) if isinstance(vars(eager)[n], type) and vars(eager)[n].__module__ == loader.name]
assert sorted(names) == sorted(v1._MAKERS), set(names) ^ set(v1._MAKERS)
assert sorted(dir(v1)) == sorted(set(dir(v1)))
for name in names:
    a, b = getattr(v1, name), getattr(eager, name)
    assert a is vars(v1)[name] and a.__module__ == "skift_server._proto.skift.v1", name
    assert (a.__name__, a.__qualname__, a.__doc__) == (b.__name__, b.__qualname__, b.__doc__), name
    assert [x.__name__ for x in a.__mro__[1:]] == [x.__name__ for x in b.__mro__[1:]], name
    assert set(vars(a)) == set(vars(b)), (name, set(vars(a)) ^ set(vars(b)))
    for attr, value in vars(b).items():
        mine = vars(a)[attr]
        assert getattr(mine, "__qualname__", None) == getattr(value, "__qualname__", None), attr
        if attr != "__module__" and isinstance(value, (str, int, bytes)):
            assert mine == value, (name, attr)
    if dataclasses.is_dataclass(a):
        fa = [(f.name, f.metadata, f.default) for f in dataclasses.fields(a)]
        fb = [(f.name, f.metadata, f.default) for f in dataclasses.fields(b)]
        assert same(fa) == same(fb), name
        assert same(typing.get_type_hints(a)) == same(typing.get_type_hints(b)), name
        assert bytes(a()) == bytes(b()) and same(a()) == same(b()), name
print(len(names))
"""


def test_every_lazy_class_is_the_generated_one() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", COMPARE], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) > 200


def test_a_class_brings_the_classes_it_names() -> None:
    """Asking for one response makes it and what its fields and defaults name, nothing else."""
    check = """
import typing
import skift_server
from skift_server._proto.skift import v1
page = v1.ReadyResponse.parse(bytes(v1.ReadyResponse(nodes=[v1.Node(ref="p#1")])))
assert page.nodes[0].ref == "p#1" and page.nodes[0].status == v1.NodeStatus.UNSPECIFIED
typing.get_type_hints(v1.Node)
made = {n for n in v1._MAKERS if n in vars(v1)}
assert {"ReadyResponse", "Node", "Lease", "NodeStatus", "Priority"} <= made, made
assert "SkiftServiceStub" not in made and "SkiftServiceBase" not in made, made
assert len(made) < 20, made
"""
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
