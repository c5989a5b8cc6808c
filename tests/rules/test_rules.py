"""Every built-in rule on hand-built histories of divergence-cases.md (store level, no codec needed)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import pytest

from agent_inspect.rules import RULES, DivergenceRule, resolve_rule
from agent_inspect.store import Entry, Outcome, RecoverySession, Task

_ids = itertools.count()


@dataclass
class Line:
    key: str
    seq: int
    action: str
    fp: str                 # event fingerprint (no '_')
    eid: str                # task event id
    status: str = "C"       # C | I | P | TOMB
    root: bool = False
    outs: tuple[str, ...] = ()


def sk(key: str, seq: int, fp: str, action: str) -> str:
    return f"{key}_{seq}_{fp}_{action}"    # K1 layout: the snapshot flavours parse it


def entries(lines: list[Line], fmt: str = "K1") -> list[tuple[int, Entry | None, str]]:
    rows = []
    for pos, ln in enumerate(lines):
        key = sk(ln.key, ln.seq, ln.fp, ln.action)
        if ln.status == "TOMB":
            rows.append((pos, None, key))
            continue
        rows.append((pos, Entry(state_key=key, business_key=ln.key, seq=ln.seq, event_uuid=ln.fp,
                                action_uuid=ln.action, key_format=fmt, key_text=ln.key, is_root=ln.root,
                                completed=ln.status == "C", task_event_id=ln.eid,
                                task_event_type="_input_event" if ln.root else "WorkEvent",
                                output_event_ids=ln.outs, call_count=1 if ln.status == "P" else 0, pos=pos),
                     key))
    return rows


@dataclass
class Replay:
    """A minimal §9.3 driver: get; on a miss get again, write the initial record, get again; at the end
    get and write the completed record (a deterministic rerun emits nothing here)."""

    session: RecoverySession
    outcomes: list[str] = field(default_factory=list)

    def task(self, key: str, seq: int, action: str, fp: str, eid: str | None = None, *, root: bool = False,
             fmt: str = "K1") -> Outcome:
        t = Task(business_key=key, seq=seq, state_key=sk(key, seq, fp, action), event_uuid=fp, action_uuid=action,
                 event_id=eid or f"new{next(_ids)}", event_type="_input_event" if root else "WorkEvent",
                 is_root=root, key_format=fmt, key_text=key)
        d = self.session.lookup(t)
        self.outcomes.append(d.outcome.value)
        if d.outcome is Outcome.FAIL or d.outcome is Outcome.REUSE:
            return d.outcome
        if d.entry is None:
            if self.session.lookup(t).entry is None:
                self.session.write(self._entry(t, completed=False))
            self.session.lookup(t)
        self.session.lookup(t)
        self.session.write(self._entry(t, completed=True))
        return d.outcome

    @staticmethod
    def _entry(t: Task, *, completed: bool) -> Entry:
        return Entry(state_key=t.state_key, business_key=t.business_key, seq=t.seq, event_uuid=t.event_uuid,
                     action_uuid=t.action_uuid, key_format=t.key_format, key_text=t.key_text, is_root=t.is_root,
                     completed=completed, task_event_id=t.event_id, task_event_type=t.event_type)


def run(rule: str | DivergenceRule, lines: list[Line], tasks: list[tuple], *, source_kind: str | None = None,
        fmt: str = "K1") -> tuple[list[str], RecoverySession]:
    session = RecoverySession(resolve_rule(rule), source_kind=source_kind)
    for pos, entry, key in entries(lines, fmt):
        if entry is None:
            session.delete(key, pos=pos)
        else:
            session.rebuild_entry(entry)
    replay = Replay(session)
    for t in tasks:
        key, seq, action, fp, *rest = t
        eid = rest[0] if rest else None
        replay.task(key, seq, action, fp, eid, root=action in ("IA", "IB", "FA", "P"), fmt=fmt)
    return replay.outcomes, session


R, U, RR = "REUSE", "RESUME", "RERUN"
SEG = "original:segment"

# --- normal histories ---------------------------------------------------------------------------
N03 = [Line("k", 5, "IA", "A", "a1", root=True), Line("k", 5, "IB", "A", "a1", root=True),
       Line("k", 6, "IA", "B", "b1", root=True), Line("k", 6, "IB", "B", "b1", root=True)]
N03_T = [("k", 5, "IA", "A"), ("k", 5, "IB", "A"), ("k", 6, "IA", "B"), ("k", 6, "IB", "B")]
N04 = [Line("k", 5, "IA", "A", "a1", root=True, outs=("w1",)), Line("k", 5, "WA", "Wa", "w1"),
       Line("k", 6, "IA", "B", "b1", root=True, outs=("w2",)), Line("k", 6, "WA", "Wb", "w2")]
N04_T = [("k", 5, "IA", "A"), ("k", 5, "WA", "Wa", "w1"), ("k", 6, "IA", "B"), ("k", 6, "WA", "Wb", "w2")]
N07 = N04[:3] + [Line("k", 6, "WA", "Wb", "w2", status="P")]
N13 = [Line("k", 5, "WA", "Wa", "w1"), Line("k", 6, "IA", "B", "b1", root=True, outs=("w2",)),
       Line("k", 6, "WA", "Wb", "w2")]
N13_T = [("k", 5, "WA", "Wa", "w1"), ("k", 6, "IA", "B"), ("k", 6, "WA", "Wb", "w2")]


@pytest.mark.parametrize("rule", ["fixed", "lookup-only", "branch-aware", "fixed+round-regression", "naive"])
def test_normal_histories_reuse_everything_under_protective_rules(rule: str) -> None:
    assert run(rule, N03, N03_T)[0] == [R, R, R, R]
    assert run(rule, N04, N04_T)[0] == [R, R, R, R]
    assert run(rule, N07, N04_T)[0] == [R, R, R, U]
    assert run(rule, N13, N13_T)[0] == [R, R, R]


def test_original_over_evicts_on_count_above_one() -> None:
    out, session = run(SEG, N03, N03_T)
    assert out == [R, R, RR, RR]
    first = session.divergences[0]
    assert (first.kind, first.business_key, first.seq) == ("count>1", "k", 5)
    assert sorted(first.positions) == [0, 1]
    assert sorted(session.events[0].positions) == [2, 3]
    assert run(SEG, N04, N04_T)[0] == [R, R, RR, RR]
    assert run(SEG, N07, N04_T)[0] == [R, R, RR, RR]      # saved durable calls lost
    assert run(SEG, N13, N13_T)[0] == [R, R, R]


def test_fan_out_n05() -> None:
    lines = [Line("k", 5, "FA", "A", "a1", root=True, outs=("1", "2")), Line("k", 5, "WA", "W1", "1"),
             Line("k", 5, "WA", "W2", "2"), Line("k", 6, "FA", "B", "b1", root=True, outs=("3", "4")),
             Line("k", 6, "WA", "W3", "3"), Line("k", 6, "WA", "W4", "4")]
    tasks = [("k", 5, "FA", "A"), ("k", 5, "WA", "W1", "1"), ("k", 5, "WA", "W2", "2"),
             ("k", 6, "FA", "B"), ("k", 6, "WA", "W3", "3"), ("k", 6, "WA", "W4", "4")]
    assert run(SEG, lines, tasks)[0] == [R, R, R, RR, RR, RR]
    assert run("fixed", lines, tasks)[0] == [R] * 6


def test_n09_snapshot_kafka_evicts_other_keys() -> None:
    lines = [Line("k", 5, "IA", "A", "a1", root=True, outs=("w1",)), Line("k", 5, "WA", "Wa", "w1"),
             Line("k2", 7, "IA", "X", "x1", root=True), Line("k", 6, "IA", "B", "b1", root=True, outs=("w2",)),
             Line("k", 6, "WA", "Wb", "w2")]
    tasks = [("k", 5, "IA", "A"), ("k", 5, "WA", "Wa", "w1"), ("k2", 7, "IA", "X"), ("k", 6, "IA", "B"),
             ("k", 6, "WA", "Wb", "w2")]
    assert run(SEG, lines, tasks)[0] == [R, R, R, RR, RR]
    out, session = run("original", lines, tasks, source_kind="kafka")    # K1 + Kafka -> kafka-k1
    assert out == [R, R, RR, RR, RR]
    cross = [d for d in session.divergences if d.kind == "cross-key"]
    assert cross and cross[0].business_key == "k"
    assert [e.business_key for e in session.events if e.op == "cross-key"][0] == "k"
    assert {x.business_key for e in session.events if e.op == "cross-key" for x in e.removed} == {"k2"}
    assert run("original", lines, tasks, source_kind="fluss")[0] == [R, R, R, RR, RR]
    assert run("fixed", lines, tasks)[0] == [R] * 5


# --- genuine divergences --------------------------------------------------------------------------
G01 = [Line("k", 5, "IA", "A", "a1", root=True), Line("k", 5, "IA", "B", "b1", root=True),
       Line("k", 6, "IA", "C", "c1", root=True)]
G01_T = [("k", 5, "IA", "A"), ("k", 6, "IA", "C")]


def test_g01_canonical_a_b_a() -> None:
    assert run(SEG, G01, G01_T)[0] == [R, RR]
    assert run("naive", G01, G01_T)[0] == [R, R]             # the stale reuse the naive rule allows
    out, session = run("fixed", G01, G01_T)
    assert out == [RR, RR]
    rebuild_div = session.divergences[0]
    assert (rebuild_div.kind, rebuild_div.step, rebuild_div.positions) == ("root-conflict", "rebuild", (0, 1))
    assert session.events[0].positions == (0,)
    assert run("branch-aware", G01, G01_T)[0] == [R, RR]
    assert run("lookup-only", G01, G01_T)[0] == [RR, RR]
    assert run("fixed+round-regression", G01, G01_T)[0] == [RR, RR]


def test_g02_same_round_child_collision() -> None:
    lines = [Line("k", 5, "IA", "A", "a1", root=True, outs=("w1",)), Line("k", 5, "WA", "Wx", "w1")]
    tasks = [("k", 5, "IA", "B"), ("k", 5, "WA", "Wx", "w9")]
    assert run(SEG, lines, tasks)[0] == [RR, R]              # ✗stale under the original rule
    assert run("naive", lines, tasks)[0] == [RR, R]
    for rule in ("fixed", "lookup-only", "branch-aware", "fixed+round-regression"):
        assert run(rule, lines, tasks)[0] == [RR, RR], rule


def test_g03_no_resurrection() -> None:
    lines = [*G01, Line("k", 5, "IA", "A", "a3", root=True)]
    assert run(SEG, lines, G01_T)[0] == [R, RR]
    out, session = run("fixed", lines, G01_T)
    assert out == [R, RR]
    assert len(session.store) == 2                               # A@5 and the rerun C@6
    assert run("lookup-only", lines, G01_T)[0] == [RR, RR]
    assert run("branch-aware", lines, G01_T)[0] == [R, RR]


def test_g04_tombstoned_roots_keep_miss_eviction() -> None:
    lines = [Line("k", 5, "IA", "A", "a1", root=True), Line("k", 5, "IA", "B", "b1", root=True),
             Line("k", 5, "IA", "A", "", status="TOMB"), Line("k", 5, "IA", "B", "", status="TOMB"),
             Line("k", 6, "IA", "C", "c1", root=True)]
    for rule in (SEG, "fixed", "branch-aware", "fixed+round-regression"):
        assert run(rule, lines, G01_T)[0] == [RR, RR], rule


def test_g05_multi_root_divergence() -> None:
    lines = [Line("k", 5, "IA", "A", "a1", root=True), Line("k", 5, "IB", "A", "a1", root=True),
             Line("k", 5, "IA", "B", "b1", root=True), Line("k", 5, "IB", "B", "b1", root=True),
             Line("k", 6, "IA", "C", "c1", root=True), Line("k", 6, "IB", "C", "c1", root=True)]
    tasks = [("k", 5, "IA", "A"), ("k", 5, "IB", "A"), ("k", 6, "IA", "C"), ("k", 6, "IB", "C")]
    assert run(SEG, lines, tasks)[0] == [R, R, RR, RR]
    assert run("naive", lines, tasks)[0] == [R, R, R, R]
    assert run("fixed", lines, tasks)[0] == [RR, RR, RR, RR]
    assert run("branch-aware", lines, tasks)[0] == [R, R, RR, RR]


def test_g08_stale_incomplete_calls() -> None:
    lines = [Line("k", 5, "IA", "A", "a1", root=True, outs=("w1",)), Line("k", 5, "WA", "Wx", "w1", status="P")]
    tasks = [("k", 5, "IA", "B"), ("k", 5, "WA", "Wx", "w9")]
    assert run(SEG, lines, tasks)[0] == [RR, U]
    assert run("fixed", lines, tasks)[0] == [RR, RR]


def test_g09_identity_mismatch() -> None:
    lines = [Line("k", 5, "FA", "A", "a1", root=True, outs=("1", "2")), Line("k", 5, "WA", "W0", "1"),
             Line("k", 6, "FA", "B", "b1", root=True)]
    tasks = [("k", 5, "FA", "A"), ("k", 5, "WA", "W0", "1"), ("k", 5, "WA", "W0", "2"), ("k", 6, "FA", "B")]
    assert run(SEG, lines, tasks)[0] == [R, R, R, RR]
    out, session = run("fixed", lines, tasks)
    assert out == [R, R, RR, RR]
    mismatch = [d for d in session.divergences if d.kind == "identity-mismatch"]
    assert len(mismatch) == 1 and mismatch[0].positions == (1,)


def test_n10_begin_event_and_n13_missing_root_is_no_conflict() -> None:
    lines = [Line("k", 5, "BA", "G0", "g1"), Line("k", 5, "IA", "A", "a1", root=True),
             Line("k", 6, "BA", "G1", "g2"), Line("k", 6, "IA", "B", "b1", root=True)]
    tasks = [("k", 5, "BA", "G0"), ("k", 5, "IA", "A"), ("k", 6, "BA", "G1"), ("k", 6, "IA", "B")]
    assert run(SEG, lines, tasks)[0] == [R, R, RR, RR]
    assert run("fixed", lines, tasks)[0] == [R, R, R, R]


# --- key formats (snapshot flavours) --------------------------------------------------------------
def test_p01_separator_in_key_text() -> None:
    lines = [Line("tenant_1", 5, "IA", "A", "a1", root=True, outs=("w1",)), Line("tenant_1", 5, "WA", "Wa", "w1"),
             Line("tenant_1", 6, "IA", "B", "b1", root=True, outs=("w2",)), Line("tenant_1", 6, "WA", "Wb", "w2")]
    tasks = [("tenant_1", 5, "IA", "A"), ("tenant_1", 5, "WA", "Wa", "w1"), ("tenant_1", 6, "IA", "B"),
             ("tenant_1", 6, "WA", "Wb", "w2")]
    out, session = run("original", lines, tasks, source_kind="kafka")
    assert out[0] == "FAIL"
    assert session.divergences[-1].kind == "parser-crash"
    assert run("original:fluss-k1", lines, tasks)[0] == [R, R, R, R]       # protection silently off
    assert run(SEG, lines, tasks, fmt="K1.5")[0] == [R, R, RR, RR]
    assert run("fixed", lines, tasks)[0] == [R, R, R, R]


def test_p02_prefix_collision() -> None:
    lines = [Line("a", 5, "IA", "A", "a1", root=True), Line("a_5", 9, "IA", "X", "x1", root=True),
             Line("a", 6, "IA", "B", "b1", root=True)]
    tasks = [("a", 5, "IA", "A"), ("a", 6, "IA", "B")]
    out, session = run("original:fluss-k1", lines, tasks)
    assert out == [R, RR]                                                   # false divergence
    assert session.divergences[0].kind == "count>1"
    assert session.store.get(sk("a_5", 9, "X", "IA")) is not None          # unparsable entry kept
    assert run("original:kafka-k1", lines, tasks)[0][0] == "FAIL"
    assert run(SEG, lines, tasks, fmt="K1.5")[0] == [R, R]
    assert run("fixed", lines, tasks)[0] == [R, R]


def test_p03_java_action_uuid_instability() -> None:
    lines = [Line("k", 5, "u1", "A", "a1", root=True), Line("k", 6, "u1", "B", "b1", root=True)]
    tasks = [("k", 5, "u2", "A"), ("k", 6, "u2", "B")]
    for rule in (SEG, "fixed"):
        assert run(rule, lines, tasks)[0] == [RR, RR]


def test_prune_flavours() -> None:
    lines = [Line("tenant_1", 5, "IA", "A", "a1", root=True), Line("t", 5, "IA", "A", "a1", root=True),
             Line("t", 6, "IA", "B", "b1", root=True)]
    session = RecoverySession(resolve_rule("original:kafka-k1"))
    for _, e, _ in entries(lines):
        session.rebuild_entry(e)
    assert session.prune("t", 5).failed is None                # "t_" prefix does not reach tenant_1
    assert session.prune("tenant_1", 5).failed                  # strict parser throws
    fluss = RecoverySession(resolve_rule("original:fluss-k1"))
    for _, e, _ in entries(lines):
        fluss.rebuild_entry(e)
    assert fluss.prune("tenant_1", 5).removed == ()             # parse error: entry kept
    res = fluss.prune("t", 6)
    assert sorted(e.seq for e in res.removed) == [5, 6] and res.events[0].op == "prune"
    seg = RecoverySession(resolve_rule("fixed"))
    for _, e, _ in entries(lines, "K1.5"):
        seg.rebuild_entry(e)
    assert [e.business_key for e in seg.prune("tenant_1", 9).removed] == ["tenant_1"]


def test_registry_and_errors() -> None:
    assert set(RULES) == {"original", "naive", "fixed", "lookup-only", "branch-aware", "fixed+round-regression"}
    for name in RULES:
        rule = resolve_rule(name)
        assert rule.name == name and rule.summary and type(rule).__doc__
    from agent_inspect import RecoveryError
    with pytest.raises(RecoveryError, match="unknown rule"):
        resolve_rule("nope")
    with pytest.raises(RecoveryError, match="flavour"):
        resolve_rule("original:bogus")
    with pytest.raises(NotImplementedError):
        DivergenceRule().lookup(RecoverySession(resolve_rule("fixed")), Task("k", 1, "s", "e", "a"))


def test_session_copy_is_independent() -> None:
    session = RecoverySession(resolve_rule("branch-aware"))
    for _, e, _ in entries(G01):
        session.rebuild_entry(e)
    clone = session.copy()
    Replay(clone).task("k", 5, "IA", "A", root=True)
    assert len(session.store) == 3 and len(clone.store) < 3
    assert session.state.replay_path == {} and clone.state.replay_path


def test_prune_completed_prunes_each_key_at_its_seq() -> None:
    session = RecoverySession(resolve_rule("fixed"))
    for _, e, _ in entries(N04 + [Line("j", 3, "IA", "A", "j1", root=True)], "K1.5"):
        session.rebuild_entry(e)
    results = session.prune_completed({"k": 5, "j": 2})
    assert [len(r.removed) for r in results] == [2, 0]
    assert session.store.seqs("k") == [6] and session.store.seqs("j") == [3]
    assert [ev.op for ev in session.events] == ["prune"]


def test_the_docstring_example_rule_runs() -> None:
    import textwrap
    import types

    doc = DivergenceRule.__doc__
    block = doc[doc.index("Worked example"):].split("::\n", 1)[1]
    lines = []
    for line in block.splitlines():
        if line.strip() and not line.startswith("        "):
            break
        lines.append(line)
    code = textwrap.dedent("\n".join(lines)).replace("import agent_inspect as ai\n", "")
    calls: list = []
    # the example's verbs, recorded: the rule it defines is then run on two cases here
    fake = types.SimpleNamespace(
        reconstruct=lambda log, rule: calls.append(rule),
        cases=types.SimpleNamespace(builtin=list, compare=lambda cases, rules: calls.append(rules)),
        checker=types.SimpleNamespace(check=lambda rule, seed: calls.append(rule)))
    ns: dict = {"ai": fake, "log": None}
    exec(code, ns)  # our own docstring
    assert len(calls) == 3 and calls[1][0] == "fixed"
    rule = calls[0]
    assert rule.name == "roots-only"
    assert run(rule, G01, G01_T)[0] == [RR, RR]      # root conflicts caught
    assert run(rule, N04, N04_T)[0] == [R, R, R, R]


def test_tombstoned_conflicting_root_hole_and_its_catchers() -> None:
    """Spec §10.3 known limit: B's root was pruned (tombstone), A returns and is written after B's
    round-6 record; the reference rule reuses C@6 (computed on B); round regression and branch-aware don't."""
    lines = [Line("k", 5, "IA", "A", "a1", root=True), Line("k", 5, "IA", "B", "b1", root=True),
             Line("k", 6, "IA", "C", "c1", root=True), Line("k", 5, "IA", "B", "", status="TOMB"),
             Line("k", 5, "IA", "A", "a3", root=True)]
    assert run("fixed", lines, G01_T)[0] == [R, R]                       # the hole: C reused stale
    out, session = run("fixed+round-regression", lines, G01_T)
    assert out == [R, RR]
    assert [d.kind for d in session.divergences][:2] == ["root-conflict", "round-regression"]
    assert run("branch-aware", lines, G01_T)[0] == [R, RR]


def test_snapshot_kafka_prune_flavour_does_not_depend_on_the_keys_own_entries() -> None:
    # P02: pruning "a" scans every cached "a_" key; the strict parser throws on a key of text "a_5",
    # even when "a" itself has nothing cached any more (spec §8.3)
    lines = [Line("a", 5, "IA", "A", "a1", root=True), Line("a_5", 9, "IA", "B", "b1", root=True),
             Line("a", 6, "IA", "C", "c1", root=True)]
    for source_kind in ("kafka", None):
        session = RecoverySession(resolve_rule("original"), source_kind=source_kind)
        for _, e, _ in entries(lines):
            session.rebuild_entry(e)
        session.store.invalidate("a", 0)
        result = session.prune("a", 6, key_text="a")
        assert result.failed and "a_5_9_" in result.failed
    fluss = RecoverySession(resolve_rule("original"), source_kind="fluss")
    for _, e, _ in entries(lines):
        fluss.rebuild_entry(e)
    fluss.store.invalidate("a", 0)
    assert fluss.prune("a", 6, key_text="a").failed is None
