"""Counterexamples as case files: a history written as case lines, and shrunk until every record matters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_inspect._errors import InspectError
from agent_inspect.cases import build_case, parse_case
from agent_inspect.checker._generate import (
    History,
    event_notation,
)
from agent_inspect.checker._judge import (
    _case_subject,
    _Eval,
    _evaluate,
)
from agent_inspect.store import DivergenceRule

__all__: list[str] = []  # used by the report and check() only

# -- case files ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    data: Mapping[str, Any]
    in_window: bool


def _history_lines(h: History) -> tuple[list[_Line], list[dict[str, Any]], list[str]]:
    """The history as case-file log lines (event ids as labels), restored tasks and replayed inputs."""
    labels: dict[str, str] = {}

    def ev(e: Any) -> str:
        text = event_notation(e)
        if e.id is None:
            return text
        return f"{text}#{label(e)}"

    def label(e: Any) -> str:
        return labels.setdefault(e.id, f"e{len(labels) + 1}")

    # #1084: a record is stale for the identical siblings of its task event (same parent, same attributes)
    siblings: dict[str, list[Any]] = {}
    for y in h.executions:
        for o in y.outputs:
            if o.id is not None:
                siblings[o.id] = [p for p in y.outputs if p.id not in (None, o.id)
                                  and event_notation(p) == event_notation(o)]
    marker = h.markers[0].get(0, 0)
    lines = []
    for x in h.executions:
        line: dict[str, Any] = {"att": x.attempt, "key": x.key, "seq": x.seq, "action": x.action,
                                "event": ev(x.event), "status": x.status}
        if x.outputs:
            line["out"] = [ev(o) for o in x.outputs]
        if x.calls:
            line["calls"] = [{"fn": f, "args": d, "status": s} for f, d, s in x.calls]
        if x.status != "TOMB" and (x.tainted or x.branch != tuple(h.paths.get(x.key, ())[:x.seq + 1])):
            line["stale"] = True
        elif x.status != "TOMB" and siblings.get(x.event.id or ""):
            line["stale"] = {"events": [label(p) for p in siblings[x.event.id or ""]]}
        lines.append(_Line(line, x.positions[0] >= marker))
    pending = [{"key": h.key_texts.get(p.key, p.key), "seq": p.seq, "action": p.action, "event": ev(p.event)} for p in h.plan.pending]
    replay = [f"{i.key}:{event_notation(i.event)}" for i in h.plan.inputs]
    return lines, pending, replay


def _replay_agent(h: History) -> dict[str, Any]:
    """The case file's ``[replay_agent]`` table of a history whose recovery runs changed code (else nothing)."""
    return {} if h.replay_agent_spec is None else {"replay_agent": dict(h.replay_agent_spec)}


def _restored(h: History) -> dict[str, int]:
    """The judged recovery's restored seqs by key text (a K2 plan names keys by their digests)."""
    return {h.key_texts.get(k, k): int(s) for k, s in h.plan.restored_seq.items()}


def _case_base(h: History, case_id: str, name: str, summary: str) -> dict[str, Any]:
    """A history's case file without its log: setup, agent and replay agent."""
    setup = {"key_format": h.key_format, "pipeline": "python", "tombstones": h.tombstones,
             "runtime": h.runtime, "begin_event": h.plan.begin_event}
    if h.value_format != "V3":
        setup["value_format"] = h.value_format
    return {"id": case_id, "name": name, "summary": summary, "setup": setup, "agent": dict(h.agent_spec),
            **_replay_agent(h)}


def _assemble(base: Mapping[str, Any], lines: Sequence[_Line], replay: Sequence[str],
              pending: Sequence[Mapping[str, Any]], restored: Mapping[str, int]) -> dict[str, Any]:
    """A case-file mapping; attempts renumbered 1.., the marker before the first in-window line."""
    atts = {a: n for n, a in enumerate(sorted({ln.data["att"] for ln in lines}), start=1)}
    log = [{**ln.data, "att": atts[ln.data["att"]]} for ln in lines]
    first = next((i for i, ln in enumerate(lines) if ln.in_window), len(lines))
    used = {ln.data["key"] for ln in lines} | {r.split(":", 1)[0] for r in replay} | {p["key"] for p in pending}
    data = dict(base)
    data["replay"] = list(replay)
    if pending:
        data["pending"] = [dict(p) for p in pending]
    data["log"] = log
    data["setup"] = {**dict(base.get("setup", {})), "window_start": first + 1}
    data["keys"] = {k: {"restored_seq": int(restored.get(k, -1))} for k in sorted(used)}
    return data


def _parse(data: Mapping[str, Any]) -> Any:
    return parse_case(data)[0]


def _judge_case(data: Mapping[str, Any], rule: DivergenceRule) -> _Eval | None:
    try:
        built = build_case(_parse(data))
    except InspectError:
        return None
    return _evaluate(_case_subject(built), rule)


def _shrink(kind: str, h: History, rule: DivergenceRule, case_id: str, summary: str, *,
            reference: DivergenceRule | None = None) -> tuple[dict[str, Any], _Eval]:
    """The smallest case of ``h`` that still fails as ``kind``; with ``reference``, a stale reuse must stay one the
    reference rule does not make (a defect does not shrink into a known limit)."""
    lines, pending, replay = _history_lines(h)
    restored = _restored(h)
    base = {**_case_base(h, case_id, f"rules-check-{kind}", summary),
            "category": "genuine" if kind == "stale-reuse" else "normal"}
    error_type: str | None = None

    def fails(ls: Sequence[_Line], rp: Sequence[str], pd_: Sequence[Mapping[str, Any]]) -> _Eval | None:
        case = _assemble(base, ls, rp, pd_, restored)
        ev = _judge_case(case, rule)
        if ev is None or not ev.fails(kind):
            return None
        if reference is not None and kind == "stale-reuse":
            ref = _judge_case(case, reference)
            if ref is not None and set(ev.stale_at) <= set(ref.stale_at):
                return None
        if kind == "error" and error_type is not None and ev.error_key != error_type:
            return None
        return ev

    result = fails(lines, replay, pending)
    if result is None:
        # the collapsed case does not reproduce the failure; report the full history as it is
        return _assemble(base, lines, replay, pending, restored), _Eval()
    if kind == "error":
        error_type = result.error_key

    def attempt(ls: Sequence[_Line], rp: Sequence[str], pd_: Sequence[Mapping[str, Any]]) -> bool:
        nonlocal result
        ev = fails(ls, rp, pd_)
        if ev is not None:
            result = ev
            return True
        return False

    window = [ln for ln in lines if ln.in_window]
    if len(window) < len(lines) and attempt(window, replay, pending):
        lines = window
    for att in sorted({ln.data["att"] for ln in lines}):
        fewer = [ln for ln in lines if ln.data["att"] != att]
        if fewer and attempt(fewer, replay, pending):
            lines = fewer
    changed = True
    while changed:                                 # fewest rounds: drop each key's last input
        changed = False
        for key in sorted({r.split(":", 1)[0] for r in replay}):
            last = max(i for i, r in enumerate(replay) if r.split(":", 1)[0] == key)
            shorter = replay[:last] + replay[last + 1:]
            if attempt(lines, shorter, pending):
                replay, changed = shorter, True
    changed = not pending
    while changed:                                 # fewest rounds: drop a key's earlier replayed round, renumbered
        changed = False
        for key, seq in sorted({(r.split(":", 1)[0], s) for r, s in zip(replay, _seqs(replay, restored))}):
            fewer_lines, shorter = _without_round(lines, replay, restored, key, seq)
            if len(shorter) < len(replay) and attempt(fewer_lines, shorter, pending):
                lines, replay, changed = fewer_lines, shorter, True
                break
    for p in list(pending):
        fewer_pending = [q for q in pending if q is not p]
        if attempt(lines, replay, fewer_pending):
            pending = fewer_pending
    for group in sorted({(ln.data["key"], ln.data["seq"]) for ln in lines}):
        fewer = [ln for ln in lines if (ln.data["key"], ln.data["seq"]) != group]
        if fewer and attempt(fewer, replay, pending):
            lines = fewer
    changed = True
    while changed:                                 # fewest records: until every single removal fixes it
        changed = False
        for i in range(len(lines) - 1, -1, -1):
            fewer = lines[:i] + lines[i + 1:]
            if attempt(fewer, replay, pending):
                lines, changed = fewer, True
    return _assemble(base, lines, replay, pending, restored), result


def _seqs(replay: Sequence[str], restored: Mapping[str, int]) -> list[int]:
    """The round each replayed input opens: a key's first gets ``restored_seq + 1``, the next ``+ 2``, …"""
    nxt: dict[str, int] = {}
    out = []
    for r in replay:
        key = r.split(":", 1)[0]
        nxt[key] = nxt.get(key, int(restored.get(key, -1)) + 1)
        out.append(nxt[key])
        nxt[key] += 1
    return out


def _without_round(lines: Sequence[_Line], replay: Sequence[str], restored: Mapping[str, int], key: str,
                   seq: int) -> tuple[list[_Line], list[str]]:
    """The history without ``key``'s replayed round ``seq``: its input and records gone, its later rounds one
    seq earlier (so the rest keeps lining up with the replay). Unchanged when a later record of the key is stale
    for its branch or memory (``stale = true``): that depends on the earlier rounds, which would no longer say
    so; a stale sibling (``stale = { events = … }``) does not."""
    if any(ln.data["key"] == key and ln.data["seq"] > seq and ln.data.get("stale") is True for ln in lines):
        return list(lines), list(replay)
    seqs = _seqs(replay, restored)
    shorter = [r for r, s in zip(replay, seqs) if not (r.split(":", 1)[0] == key and s == seq)]
    kept = []
    for ln in lines:
        if ln.data["key"] != key or ln.data["seq"] < seq:
            kept.append(ln)
        elif ln.data["seq"] > seq:
            kept.append(_Line({**ln.data, "seq": ln.data["seq"] - 1}, ln.in_window))
    return kept, shorter
