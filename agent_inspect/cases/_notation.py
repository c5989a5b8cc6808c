"""The two small notations of case files (docs/reference/cases.md): events and expected outcomes.

Events: ``In(A)``, ``W(a)``, ``W{}``, ``Out(x)``, ``Begin(m0)``, ``CE(v)``,
``Sub(session,call,delegateType[,{json attributes}][,scope])``, ``Ev(type[,{json attributes}])``,
each optionally followed by ``#idlabel``.

Outcomes: whitespace-separated items ``[key:][input.]action[#id]=OUTCOME[op]...`` where
``op`` is ``[evict k>5]``, ``[evict *>5]`` (any key) or ``[invalidate k>=5]``; a following
``✗stale`` marks the item as a stale reuse, a lone ``✗crash`` says the job fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_inspect._errors import CaseFileError

__all__ = ["EventRef", "ExpectedItem", "CacheOp", "Expectation", "parse_event", "parse_expectation",
           "OUTCOMES", "event_label"]

OUTCOMES = ("REUSE", "RESUME", "RERUN", "NOT-DISPATCHED", "FAIL")
"""The outcomes of the case notation, in the spec's words."""

_SIMPLE = {
    # shorthand -> (event type, attribute name)
    "In": ("_input_event", "input"),
    "W": ("WorkEvent", "x"),
    "Out": ("_output_event", "output"),
    "Begin": ("_agent_run_begin_event", "memory"),
    "CE": ("CE", "v"),
}


@dataclass(frozen=True)
class EventRef:
    """An event written in a case file: type, attributes, and the case-local id label (without ``#``)."""

    type: str
    attributes: Mapping[str, Any]
    id_label: str | None = None
    text: str = ""

    @property
    def delegate_type(self) -> str | None:
        return self.attributes.get("delegateType") if self.type == "InternalSubagentCallEvent" else None


def event_label(event_type: str, attributes: Mapping[str, Any]) -> str:
    """Short display label of an event in the case notation (inverse of :func:`parse_event` where possible)."""
    for short, (etype, attr) in _SIMPLE.items():
        if etype == event_type:
            if set(attributes) == {attr} and isinstance(attributes[attr], str):
                return f"{short}({attributes[attr]})"
            if not attributes and short == "W":
                return "W{}"
    if event_type == "InternalSubagentCallEvent":
        a = attributes
        return f"Sub({a.get('sessionId')},{a.get('callId')},{a.get('delegateType')})"
    return f"Ev({event_type},{json.dumps(dict(attributes), sort_keys=True)})"


def parse_event(value: Any, *, where: str = "event") -> EventRef:
    """Parse an event from its notation string or from an inline table ``{type, attributes, id}``."""
    if isinstance(value, Mapping):
        if "type" not in value:
            raise CaseFileError(f"{where}: an event table needs 'type'; add type = \"...\"")
        attrs = value.get("attributes", {})
        if not isinstance(attrs, Mapping):
            raise CaseFileError(f"{where}: 'attributes' must be a table")
        label = value.get("id")
        return EventRef(str(value["type"]), dict(attrs), str(label).lstrip("#") if label else None,
                        text=str(dict(value)))
    if not isinstance(value, str):
        raise CaseFileError(f"{where}: expected an event like \"In(A)#a1\", got {value!r}")
    text = value.strip()
    id_label = None
    m = re.fullmatch(r"(.*?)#([A-Za-z0-9_.\-]+)", text)
    if m and not m.group(1).endswith(("(", ",")):
        text, id_label = m.group(1).strip(), m.group(2)
    if text == "W{}":
        return EventRef("WorkEvent", {}, id_label, value)
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\((.*)\)", text, flags=re.S)
    if not m:
        raise CaseFileError(f"{where}: cannot read event {value!r}; write e.g. In(A)#a1 or W(x) (docs/reference/cases.md)")
    head, body = m.group(1), m.group(2)
    if head in _SIMPLE:
        etype, attr = _SIMPLE[head]
        return EventRef(etype, {attr: body} if body else {}, id_label, value)
    body = body.strip()
    if head == "Sub":
        parts = body.split(",", 3)
        if len(parts) < 3:
            raise CaseFileError(f"{where}: Sub needs (session,call,delegateType), got {value!r}")
        session, call, dtype = (p.strip() for p in parts[:3])
        dattrs: Any = {}
        scope = "child"
        if len(parts) == 4:
            rest = parts[3].strip()
            if rest.startswith("{"):
                try:
                    dattrs, end = json.JSONDecoder().raw_decode(rest)
                except json.JSONDecodeError as exc:
                    raise CaseFileError(f"{where}: bad JSON attributes in {value!r}: {exc.msg}") from None
                rest = rest[end:].strip().lstrip(",").strip()
            if rest:
                scope = rest
        attrs = {"targetScope": scope, "sessionId": session, "callId": call,
                 "delegateType": dtype, "delegateAttributes": dattrs}
        return EventRef("InternalSubagentCallEvent", attrs, id_label, value)
    if head == "Ev":
        etype, _, rest = body.partition(",")
        attrs = {}
        if rest.strip():
            try:
                attrs = json.loads(rest)
            except json.JSONDecodeError as exc:
                raise CaseFileError(f"{where}: bad JSON attributes in {value!r}: {exc.msg}") from None
        return EventRef(etype.strip(), attrs, id_label, value)
    raise CaseFileError(f"{where}: unknown event shorthand {head!r} in {value!r}; "
                        f"use one of {', '.join([*_SIMPLE, 'Sub', 'Ev'])}")


@dataclass(frozen=True)
class CacheOp:
    """An expected cache operation: ``kind`` "evict" (seq > bound) or "invalidate" (seq >= bound)."""

    kind: str
    key: str | None      # None: any key (the snapshot Kafka cross-key eviction)
    bound: int


@dataclass(frozen=True)
class ExpectedItem:
    """One expected task outcome. Missing label parts (key, input, id) match anything."""

    action: str
    outcome: str
    key: str | None = None
    input: str | None = None
    event_id: str | None = None
    ops: tuple[CacheOp, ...] = ()
    stale: bool = False

    @property
    def label(self) -> str:
        s = f"{self.key}:" if self.key else ""
        s += f"{self.input}." if self.input else ""
        s += self.action + (f"#{self.event_id}" if self.event_id else "")
        return s

    def __str__(self) -> str:
        ops = "".join(f"[{o.kind} {o.key or '*'}{'>=' if o.kind == 'invalidate' else '>'}{o.bound}]"
                      for o in self.ops)
        return f"{self.label}={self.outcome}{ops}" + (" ✗stale" if self.stale else "")


@dataclass(frozen=True)
class Expectation:
    """The expected outcome of one rule for one case."""

    rule: str
    items: tuple[ExpectedItem, ...]
    crash: bool = False
    text: str = ""


_ITEM = re.compile(r"(?:(?P<key>[^:\s=.#\[]+):)?(?:(?P<input>[^:\s=.#\[]+)\.)?(?P<action>[A-Za-z_][\w@]*)"
                   r"(?:#(?P<id>[\w.\-]+))?=(?P<outcome>REUSE|RESUME|RERUN|NOT-DISPATCHED|FAIL)"
                   r"(?P<ops>(?:\[[^\]]*\])*)$")
_OP = re.compile(r"\[(evict|invalidate)\s+([^\s>]+)\s*(>=|>)\s*(\d+)\]")


def parse_expectation(rule: str, text: str, *, where: str = "expect") -> Expectation:
    """Parse an outcome string such as ``"A.IA=REUSE[evict k>5] A.WA=REUSE B.IA=RERUN ✗stale"``."""
    items: list[ExpectedItem] = []
    crash = False
    for token in re.findall(r"(?:\[[^\]]*\]|[^\s\[])+", text):
        if token == "✗crash":
            crash = True
            continue
        if token == "✗stale":
            if not items:
                raise CaseFileError(f"{where}: ✗stale must follow an outcome item")
            items[-1] = _replace(items[-1], stale=True)
            continue
        if token == "✓":
            continue
        m = _ITEM.match(token)
        if not m:
            raise CaseFileError(f"{where}: cannot read outcome {token!r}; "
                                "write [key:][input.]action[#id]=OUTCOME[evict k>5] (docs/reference/cases.md)")
        ops = []
        for op in _OP.finditer(m.group("ops") or ""):
            kind, key, cmp, bound = op.groups()
            if (kind == "evict") != (cmp == ">"):
                raise CaseFileError(f"{where}: {op.group(0)}: evict uses '>' and invalidate uses '>='")
            ops.append(CacheOp(kind, None if key == "*" else key, int(bound)))
        items.append(ExpectedItem(action=m.group("action"), outcome=m.group("outcome"), key=m.group("key"),
                                  input=m.group("input"), event_id=m.group("id"), ops=tuple(ops)))
    return Expectation(rule=rule, items=tuple(items), crash=crash, text=text)


def _replace(item: ExpectedItem, **changes: Any) -> ExpectedItem:
    from dataclasses import replace

    return replace(item, **changes)
