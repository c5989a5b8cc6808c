"""Invariants of the store and the rules on generated histories (hypothesis).

- under segment-exact formats an eviction never touches another key or a seq <= s;
- rebuild is idempotent and order-faithful (equal to a whole-cache-scan reference of spec §10.3);
- the fixed rule (and its protective variants) never reuses a stale record on generated
  branch-change histories whose attempts all ran that rule;
- the original rule reproduces the #1301 over-eviction on multi-root / cascade / fan-out histories.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect.rules import resolve_rule
from agent_inspect.store import Entry, Outcome, RecoverySession, Task

SEGMENT_RULES = ["original:segment", "naive", "fixed", "lookup-only", "fixed+round-regression", "branch-aware"]
PROTECTIVE = ["fixed", "lookup-only", "fixed+round-regression", "branch-aware"]


def entry(k: str, s: int, fp: str, action: str, *, root: bool, pos: int | None, eid: str = "",
          completed: bool = True, outs: tuple[str, ...] = (), truth: object = None) -> Entry:
    return Entry(state_key=f"{k}|{s}|{fp}|{action}", business_key=k, seq=s, event_uuid=fp, action_uuid=action,
                 key_format="K1.5", key_text=k, is_root=root, completed=completed, task_event_id=eid,
                 task_event_type="_input_event" if root else "WorkEvent", output_event_ids=outs, pos=pos,
                 value=truth)


# --- random logs and lookups ---------------------------------------------------------------------
record = st.tuples(st.sampled_from(["k", "j"]), st.integers(3, 7), st.sampled_from(["A", "B", "C"]),
                   st.sampled_from(["IA", "IB", "WA"]), st.booleans(), st.integers(0, 9))


def build(rows: list[tuple]) -> list[tuple[int, Entry | None, str]]:
    out = []
    for pos, (k, s, fp, action, completed, tomb) in enumerate(rows):
        e = entry(k, s, fp, action, root=action != "WA", pos=pos, eid=f"e{pos}", completed=completed)
        out.append((pos, None if tomb == 0 else e, e.state_key))
    return out


def feed(session: RecoverySession, rows: list[tuple[int, Entry | None, str]]) -> None:
    for pos, e, sk in rows:
        if e is None:
            session.delete(sk, pos=pos)
        else:
            session.rebuild_entry(e)


@settings(deadline=None, max_examples=120)
@given(st.lists(record, max_size=30), st.lists(record, max_size=15), st.sampled_from(SEGMENT_RULES))
def test_segment_evictions_stay_inside_their_key_and_range(rows, lookups, rule) -> None:
    session = RecoverySession(resolve_rule(rule))
    feed(session, build(rows))
    for k, s, fp, action, _, _ in lookups:
        t = Task(k, s, f"{k}|{s}|{fp}|{action}", fp, action, event_id=f"x{fp}", is_root=action != "WA",
                 key_text=k)
        session.lookup(t)
    for ev in session.events:
        for e in ev.removed:
            assert e.business_key == ev.business_key, ev
            if ev.op == "evict":
                assert e.seq > ev.seq, ev
            elif ev.op in ("invalidate", "remove"):
                assert e.seq >= ev.seq, ev
            else:
                assert ev.op == "delete", ev


def reference_fixed_rebuild(rows, regression: bool) -> dict[str, int]:
    """Spec §10.3 rebuild with plain whole-cache scans (the shape of the upstream code)."""
    cache: dict[str, Entry] = {}
    for _, e, sk in rows:
        if e is None:
            cache.pop(sk, None)
            continue
        k, s = e.business_key, e.seq
        if e.is_root and any(x.is_root and x.business_key == k and x.seq == s and x.event_uuid != e.event_uuid
                             for x in cache.values()):
            cache = {key: x for key, x in cache.items() if not (x.business_key == k and x.seq >= s)}
        if regression and any(x.business_key == k and x.seq > s for x in cache.values()):
            cache = {key: x for key, x in cache.items() if not (x.business_key == k and x.seq > s)}
        cache[sk] = e
    return {k: v.pos for k, v in cache.items()}


@settings(deadline=None, max_examples=150)
@given(st.lists(record, max_size=40))
def test_rebuild_is_order_faithful_and_idempotent(rows) -> None:
    log = build(rows)
    for rule, regression in (("fixed", False), ("fixed+round-regression", True)):
        once = RecoverySession(resolve_rule(rule))
        feed(once, log)
        got = {e.state_key: e.pos for e in once.store.entries()}
        assert got == reference_fixed_rebuild(log, regression)
        again = RecoverySession(resolve_rule(rule))
        feed(again, log)
        assert {e.state_key: e.pos for e in again.store.entries()} == got
        survivors = sorted(once.store.entries(), key=lambda e: e.pos)
        twice = RecoverySession(resolve_rule(rule))                       # rebuilding what a rebuild kept changes nothing
        feed(twice, [(e.pos, e, e.state_key) for e in survivors])
        assert {e.state_key: e.pos for e in twice.store.entries()} == got
        again.store.clear()                                 # a cleared store (Fluss rebuild) starts over
        again.state = again.rule.new_state()
        feed(again, log)
        assert {e.state_key: e.pos for e in again.store.entries()} == got
    plain = RecoverySession(resolve_rule("naive"))
    feed(plain, log)
    last: dict[str, int | None] = {}
    for pos, e, sk in log:
        last[sk] = None if e is None else pos
    assert {e.state_key: e.pos for e in plain.store.entries()} == {k: v for k, v in last.items() if v is not None}


# --- production simulation: attempts that all ran one rule, then a replay --------------------------
class Production:
    """A one-key agent: roots IA (and IB when ``multi_root``) on the input, each emitting ``fan`` work
    events; WA handles each work event. A work event's attributes are the same on every branch when
    ``shared_child`` (a same-round collision, G02), else derived from the input. Each written
    record carries as its truth the input path (restore seq .. its seq) it was computed on."""

    def __init__(self, rule: str, multi_root: bool, fan: int, shared_child: bool) -> None:
        self.rule, self.multi_root, self.fan, self.shared = rule, multi_root, fan, shared_child
        self.log: list[Entry] = []
        self.ids = itertools.count()
        self.stale: list[tuple] = []

    def attempt(self, inputs: list[str], fail_after: int | None, *, check: bool = False,
                rule: str | None = None) -> list[str]:
        session = RecoverySession(resolve_rule(rule or self.rule))
        for e in self.log:
            session.rebuild_entry(e)
        outcomes: list[str] = []
        budget = [fail_after if fail_after is not None else 10**9]
        path: tuple[str, ...] = ()
        for i, x in enumerate(inputs):
            s = 5 + i
            path = path + (x,)
            queue = [(a, x, f"in{next(self.ids)}", True) for a in (["IA", "IB"] if self.multi_root else ["IA"])]
            while queue:
                if budget[0] <= 0:
                    return outcomes
                budget[0] -= 1
                action, fp, eid, root = queue.pop(0)
                t = Task("k", s, f"k|{s}|{fp}|{action}", fp, action, event_id=eid, is_root=root, key_text="k")
                d = session.lookup(t)
                outcomes.append(d.outcome.value)
                if d.outcome in (Outcome.REUSE, Outcome.RESUME) and check and d.entry.value != path:
                    self.stale.append((inputs, s, action, d.entry.value, path))
                if d.outcome is Outcome.REUSE:
                    children = list(zip(d.entry.output_event_ids, self._child_fps(fp))) if root else []
                else:
                    if d.entry is None:
                        if session.lookup(t).entry is None:
                            self._write(session, t, path, completed=False, outs=())
                        session.lookup(t)
                    session.lookup(t)
                    outs = tuple(f"w{next(self.ids)}" for _ in range(self.fan)) if root else ()
                    self._write(session, t, path, completed=True, outs=outs)
                    children = list(zip(outs, self._child_fps(fp))) if root else []
                queue += [("WA", cfp, cid, False) for cid, cfp in children]
        return outcomes

    def _child_fps(self, fp: str) -> list[str]:
        return [f"W{i}" if self.shared else f"W{fp}{i}" for i in range(self.fan)]

    def _write(self, session: RecoverySession, t: Task, path: tuple, *, completed: bool, outs: tuple) -> None:
        e = entry("k", t.seq, t.event_uuid, t.action_uuid, root=t.is_root, pos=len(self.log), eid=t.event_id,
                  completed=completed, outs=outs, truth=path)
        self.log.append(e)
        session.write(replace(e, pos=None))


history = st.tuples(
    st.lists(st.tuples(st.lists(st.sampled_from("ABC"), min_size=1, max_size=3), st.integers(0, 12)),
             min_size=1, max_size=4),
    st.lists(st.sampled_from("ABC"), min_size=1, max_size=3),
    st.booleans(), st.integers(0, 2), st.booleans(),
)


@settings(deadline=None, max_examples=150)
@given(history, st.sampled_from(PROTECTIVE))
def test_protective_rules_never_reuse_stale_records(h, rule) -> None:
    """Production attempts ran the reference rule (branch-aware: see the next test); the replay runs ``rule``."""
    attempts, replay, multi_root, fan, shared = h
    production = "fixed" if rule == "branch-aware" else rule
    prod = Production(production, multi_root, fan, shared)
    for inputs, fail_after in attempts:
        prod.attempt(inputs, fail_after, check=True)
    prod.attempt(replay, None, check=True, rule=rule)
    assert prod.stale == []


def test_branch_aware_production_makes_invisible_branch_returns() -> None:
    """Spec §10.3 "invisible branch return": when production itself reused a returning branch (as the
    branch-aware rule does), that branch left no root record, so its later rounds are tagged with the
    last logged root and a later replay can reuse them stale. The reference rule reruns returning
    branches, so its own logs never hide one."""
    attempts, replay = [(["B"], 1), (["A"], 1), (["B", "A"], 2)], ["A", "A"]
    outcomes = {}
    for rule in ("branch-aware", "fixed"):
        prod = Production(rule, multi_root=False, fan=0, shared_child=False)
        for inputs, fail_after in attempts:
            prod.attempt(inputs, fail_after, check=True)
        outcomes[rule] = prod.attempt(replay, None, check=True)
        assert bool(prod.stale) == (rule == "branch-aware"), rule
    assert outcomes["branch-aware"] == ["REUSE", "REUSE"]     # A@6 was computed after B@5: stale
    assert outcomes["fixed"] == ["RERUN", "RERUN"]


def test_the_stale_check_catches_the_naive_rule() -> None:
    prod = Production("naive", multi_root=False, fan=0, shared_child=False)
    prod.attempt(["A"], None)
    prod.attempt(["B", "C"], None)            # G01: B at 5, then C at 6 computed on B
    prod.attempt(["A", "C"], None, check=True)
    assert prod.stale and prod.stale[0][1] == 6


@settings(deadline=None, max_examples=60)
@given(st.lists(st.sampled_from("ABC"), min_size=2, max_size=5), st.sampled_from(["multi-root", "cascade", "fan-out"]))
def test_original_rule_over_evicts_every_later_round(inputs, shape) -> None:
    multi_root, fan = {"multi-root": (True, 0), "cascade": (False, 1), "fan-out": (False, 2)}[shape]
    per_round = (2 if multi_root else 1) * (1 + fan)
    runs = {}
    for rule in ("original:segment", "fixed"):
        prod = Production(rule, multi_root, fan, shared_child=False)
        prod.attempt(inputs, None)                      # the first run, no failure
        runs[rule] = prod.attempt(inputs, None)         # restore the same checkpoint, same inputs
    assert runs["original:segment"] == ["REUSE"] * per_round + ["RERUN"] * (per_round * (len(inputs) - 1))
    assert runs["fixed"] == ["REUSE"] * (per_round * len(inputs))
