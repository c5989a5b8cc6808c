"""Bulk work: without the cyclic GC (loads and reconstructions allocate millions of small objects), done once per
log (every rule and verb over one log reads the same records), and objects made in bulk made cheaply."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import numpy as np

__all__ = ["gc_paused", "once_per_log", "quick_init", "distinct_counts"]

T = TypeVar("T")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC (it would rescan the growing heap again and again, platform notes §3).

    On the way out the objects made meanwhile join the oldest generation: left in the youngest, the
    first collection after the pause would scan them all at once (a quarter of a second for a
    500k-record log). ``gc.freeze()`` then ``gc.unfreeze()`` moves them without a scan; it is skipped
    when the process keeps frozen objects of its own.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


def once_per_log(cache: weakref.WeakKeyDictionary[Any, T], log: object, make: Callable[[], T]) -> T:
    """``make()`` for ``log``, made once and kept in ``cache`` for as long as the log lives; a log that cannot be
    weakly referenced (a bare frame) gets a fresh one on every call."""
    try:
        made = cache.get(log)
    except TypeError:
        return make()
    if made is None:
        made = cache[log] = make()
    return made


def distinct_counts(group: np.ndarray, value: np.ndarray, size: int) -> np.ndarray:
    """Per group id (0 to ``size`` - 1), how many distinct ``value`` codes (non-negative ints) its rows hold: one
    pass over (group, value) pairs, where a pandas group-by and ``nunique`` per column costs milliseconds each."""
    import numpy as np
    import pandas as pd

    width = int(value.max(initial=0)) + 1
    pairs = pd.unique(group * width + value)
    return np.bincount(pairs // width, minlength=size)


C = TypeVar("C", bound=type)


def quick_init(cls: C) -> C:
    """Give the frozen, slotted dataclass ``cls`` a quicker ``__init__`` that keeps the instance frozen.

    A frozen dataclass's own ``__init__`` assigns every field through ``object.__setattr__`` (the frozen guard
    sits on ``__setattr__``): for the records and tasks a replay makes by the ten thousand, that is most of
    their cost. Filling a slot through its descriptor is cheaper but still a method-wrapper call with an
    argument tuple (about 45 ns a field). So for a class of at least :data:`_TWIN_FIELDS` fields, and when
    constructing ``cls`` itself, the instance is first given a mutable twin class (a subclass adding no slot;
    an assignment is the interpreter's fast slot store, about 5 ns), filled, and given back ``cls``: about 0.2 µs
    for the two class changes. The instance is a ``cls``, as frozen as before, before and after ``__init__``.
    The replacement takes the same arguments with the same defaults (a default factory is not supported).
    Apply it below ``@dataclass``.
    """
    fields = dataclasses.fields(cls)
    if not (cls.__dataclass_params__.frozen and "__slots__" in cls.__dict__):   # type: ignore[attr-defined]
        raise TypeError(f"quick_init needs a frozen dataclass with slots, not {cls.__name__}")
    scope: dict[str, Any] = {"_cls": cls, "_become": object.__setattr__}
    params = []
    for f in fields:
        if f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"quick_init: {cls.__name__}.{f.name} has a default factory")
        scope[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            scope[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
    body = "".join(f"    _set_{f.name}(self, {f.name})\n" for f in fields) or "    pass\n"
    if len(fields) >= _TWIN_FIELDS and cls.__bases__ == (object,):
        # a subclass adding no slot, with the plain ``__setattr__``: its stores are the interpreter's fast slot store,
        # and a class change to or from it compares no slot names (a sibling of the same slots compares them all)
        scope["_twin"] = type(f"_{cls.__name__}Fields", (cls,), {"__slots__": (), "__setattr__": object.__setattr__,
                                                                 "__delattr__": object.__delattr__})
        filled = "".join(f"        self.{f.name} = {f.name}\n" for f in fields)
        body = (f"    if type(self) is _cls:\n        _become(self, '__class__', _twin)\n{filled}"
                f"        self.__class__ = _cls\n        return\n{body}")
    exec(f"def __init__(self, {', '.join(params)}):\n{body}", scope)   # our own field names, no user input
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init   # type: ignore[misc]
    return cls


#: the fields from which a mutable twin class fills a frozen record quicker than its slot descriptors do (below
#: it, the two class changes cost more than they save)
_TWIN_FIELDS = 5
