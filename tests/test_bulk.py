"""The bulk helpers: the quick constructor of frozen records keeps their contract; caches are per log."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import weakref

import pytest

from agent_inspect._bulk import once_per_log, quick_init
from agent_inspect.executor import RecordView
from agent_inspect.recovery.engine import CallEvent, CallSlot, OpaqueMemoryValue
from agent_inspect.store import CacheEvent, Divergence, Entry, LookupDecision, Outcome, Task


@pytest.mark.parametrize("cls", [Entry, Task, LookupDecision, RecordView, CacheEvent, Divergence, CallSlot, CallEvent,
                                 OpaqueMemoryValue])
def test_a_quick_constructor_takes_the_same_arguments_and_keeps_the_record_frozen(cls: type) -> None:
    fields = dataclasses.fields(cls)
    params = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in params] == [f.name for f in fields]
    assert [p.default for p in params] == [inspect.Parameter.empty if f.default is dataclasses.MISSING
                                           else f.default for f in fields]
    required = {f.name: f"v-{f.name}" for f in fields if f.default is dataclasses.MISSING}
    made = cls(**required)
    positional = cls(*required.values())
    assert made == positional and hash(made) == hash(positional)
    for f in fields:
        assert getattr(made, f.name) == required.get(f.name, f.default)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, fields[0].name, "changed")
    assert pickle.loads(pickle.dumps(made)) == made
    assert dataclasses.replace(made, **{fields[0].name: "other"}) != made
    with pytest.raises(TypeError):
        cls()   # a required field is still required


def test_entry_built_quickly_equals_the_one_built_by_keyword() -> None:
    by_position = Entry("sk", "bk", 3, "fp", "au", "K2", None, True, True, "e1", "_input_event", ("o1",), 2, 0, 2, 0,
                        17, 1)
    by_keyword = Entry(state_key="sk", business_key="bk", seq=3, event_uuid="fp", action_uuid="au", key_format="K2",
                       is_root=True, completed=True, task_event_id="e1", task_event_type="_input_event",
                       output_event_ids=("o1",), call_count=2, calls_succeeded=2, pos=17, attempt=1)
    assert by_position == by_keyword and by_position.value is None
    assert LookupDecision(Outcome.REUSE, by_position, "why").events == ()


def test_a_record_filled_through_its_twin_class_is_its_own_class_and_a_subclass_keeps_its_own() -> None:
    args = ("sk", "bk", 3, "fp", "au", "K2", None, True, True, "e1", "_input_event", ("o1",), 2, 0, 2, 0, 17, 1)
    made = Entry(*args)
    assert type(made) is Entry and repr(made).startswith("Entry(state_key='sk'")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.seq = 4   # type: ignore[misc]

    class Sub(Entry):   # Entry's own __init__ on an instance of another class: filled through the descriptors
        __slots__ = ()

    sub = Sub(*args)
    names = [f.name for f in dataclasses.fields(Entry)]
    assert type(sub) is Sub and [getattr(sub, n) for n in names] == [getattr(made, n) for n in names]


def test_quick_init_refuses_what_it_cannot_keep_frozen() -> None:
    @dataclasses.dataclass
    class Plain:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        a: list[int] = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match="frozen dataclass with slots"):
        quick_init(Plain)
    with pytest.raises(TypeError, match="default factory"):
        quick_init(Factory)


def test_once_per_log_makes_once_per_live_log_and_afresh_for_a_bare_frame() -> None:
    class Log:
        pass

    cache: weakref.WeakKeyDictionary[object, list[int]] = weakref.WeakKeyDictionary()
    made: list[int] = []

    def make() -> list[int]:
        made.append(1)
        return [len(made)]

    log = Log()
    assert once_per_log(cache, log, make) is once_per_log(cache, log, make) and len(made) == 1
    del log
    assert len(cache) == 0                      # kept only while the log lives
    bare = [1, 2]                               # a list cannot be weakly referenced
    assert once_per_log(cache, bare, make) == [2] and once_per_log(cache, bare, make) == [3]
