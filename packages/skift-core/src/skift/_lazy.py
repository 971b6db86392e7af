"""attrs classes made on first use: what a short process (``skift ready``) does not pay for.

Making an attrs class (its ``__init__``, ``__eq__``, ``__repr__`` and ``__hash__`` written
and compiled, a slotted class made again) costs about a millisecond; skift-core's views,
models and records are some sixty of them, and a command uses a handful. A module of them
declares each with :func:`frozen` (to a type checker: ``attrs.frozen`` itself) and ends with

    if not TYPE_CHECKING:
        __getattr__ = _lazy.on_first_use(globals())

The class statement runs at import (a plain class body, cheap) and :func:`frozen` keeps it
aside; :func:`on_first_use` takes those names out of the module, and the module's
``__getattr__`` (PEP 562: ``module.Name`` and ``from module import Name``) makes each with
``attrs.frozen`` when it is first asked for, with the same arguments, so the class is the
one the eager decorator would have made (module, name, qualified name, fields, methods).

Before making a class it makes the module's classes that class names in its annotations and
its methods' code (and theirs), so whatever ``typing.get_type_hints`` or a method looks up in
the module's globals is there. A module-level function that names one of these classes gets
it made at once (a function's global lookups do not go through ``__getattr__``). A class
that another class inherits from, or a module-level value that holds one (a union, a dict of
them), would capture the class before attrs made it: :func:`on_first_use` refuses those, so
such a class is declared with ``attrs.frozen`` itself.
"""

from __future__ import annotations

import re
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from attrs import frozen as frozen
else:

    def frozen(maybe_cls: Any = None, /, **kwargs: Any) -> Any:
        """``attrs.frozen`` later: keep the class (and the arguments) until it is asked for."""

        def keep(cls: type[Any]) -> type[Any]:
            if cls.__qualname__ != cls.__name__:
                raise TypeError(f"{cls.__qualname__}: only a module's own classes wait")
            _pending.setdefault(cls.__module__, {})[cls.__name__] = (cls, kwargs)
            return cls

        return keep if maybe_cls is None else keep(maybe_cls)


_pending: dict[str, dict[str, tuple[type[Any], dict[str, Any]]]] = {}
_NAME = re.compile(r"[A-Za-z_]\w*")
_lock = threading.RLock()  # a thread asking for a class another is making waits for it


def _code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def _functions(value: object) -> Iterator[types.FunctionType]:
    if isinstance(value, staticmethod | classmethod):
        value = getattr(cast(Any, value), "__func__", None)
    if isinstance(value, property):
        for f in (value.fget, value.fset, value.fdel):
            yield from _functions(f)
    elif isinstance(value, types.FunctionType):
        yield value


def _names(cls: type[Any]) -> set[str]:
    """The global names ``cls`` may look up: in its annotations and its methods' code."""
    import inspect  # attrs imports it too

    found: set[str] = set()
    for hint in inspect.get_annotations(cls).values():
        found.update(_NAME.findall(hint) if isinstance(hint, str) else ())
    for value in cls.__dict__.values():
        for fn in _functions(value):
            found.update(_code_names(fn.__code__))
    return found


def _holds(value: object, raw: set[int]) -> bool:
    """Whether a module-level value is, or directly holds, a class not made yet."""
    if id(value) in raw:
        return True
    items: tuple[object, ...] = ()
    if isinstance(value, types.UnionType):
        items = value.__args__
    elif isinstance(value, tuple | list | set | frozenset):
        items = tuple(cast("Iterable[object]", value))
    elif isinstance(value, dict):
        d = cast("dict[object, object]", value)
        items = (*d.keys(), *d.values())
    return any(id(x) in raw for x in items)


def on_first_use(namespace: dict[str, Any]) -> Callable[[str], Any]:
    """Take the classes :func:`frozen` kept for the module ``namespace`` out of it; its
    ``__getattr__``, which makes one when it is asked for."""
    import attrs

    module: str = namespace["__name__"]
    pending = _pending.pop(module, {})
    raw = {id(cls) for cls, _ in pending.values()}
    for name, (cls, _) in pending.items():
        if namespace.get(name) is cls:
            del namespace[name]
        bases = [b.__name__ for b in cls.__mro__[1:] if id(b) in raw]
        if bases:
            raise TypeError(f"{module}.{name} inherits from {bases[0]}: declare it attrs.frozen")
    for name, value in namespace.items():
        if not name.startswith("__") and _holds(value, raw):
            raise TypeError(f"{module}.{name} holds a class made on first use: declare it eagerly")

    def make(name: str) -> Any:
        with _lock:
            got = pending.pop(name, None)
            if got is None:
                if name in namespace:  # made while making another, or by another thread
                    return namespace[name]
                raise AttributeError(f"module {module!r} has no attribute {name!r}")
            cls, kwargs = got
            for other in sorted(_names(cls)):
                if other in pending:
                    make(other)
            made = attrs.frozen(cls, **kwargs)
            namespace[name] = made
            return made

    # a module-level function looks its globals up in the module's dict, never through
    # __getattr__: what one names is made now
    for value in list(namespace.values()):
        if isinstance(value, types.FunctionType) and value.__module__ == module:
            for other in sorted(set(_code_names(value.__code__))):
                if other in pending:
                    make(other)

    def __getattr__(name: str) -> Any:
        return make(name)

    return __getattr__
