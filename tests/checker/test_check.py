"""The rule safety checker: random executor-written histories, stale reuses, avoidable reruns,
minimized counterexamples that round-trip through case files and the stepper."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent_inspect as ai
from agent_inspect.cases import build_case, load_cases, run_case
from agent_inspect.cases._format import parse_case
from agent_inspect.checker import HistoryOptions, RuleCheckError, check, generate_history, resolve_check_rule
from agent_inspect.checker._judge import _case_subject, _evaluate
from agent_inspect.checker._shrink import _judge_case
from agent_inspect.executor import StepKind
from agent_inspect.rules import FixedRule
from agent_inspect.store import LookupDecision

# Branch changes without tombstones; savepoints go back to the fresh start only (no restored memory
# from before a branch change): naive must be caught, lookup-only never (spec §10.2, §10.3).
# (No #1084 siblings, no case agents: these pin the branch judgement alone.)
# (a check on options that isolate one phenomenon leaves the matrix sweep out: sweep=False)
PLAIN = dict(identical_children=0.0, case_agents=0.0)
BRANCH = dict(tombstones=0.0, branch_changes=1.0, keys=2, rounds=3, subagents=0.0, savepoint_target="first", **PLAIN)
# Multi-root agents, no branch changes, no restores but the fresh start: every completed record is
# reusable, so each rerun is the original rule's over-eviction (#1301).
MULTI = dict(roots=3, branch_changes=0.0, savepoints=0.0, tombstones=0.0, checkpoints=0.0,
             production_rules=("fixed",), subagents=0.0, keys=2, rounds=3, **PLAIN)
# One key, two values, three attempts under the reference rule, tombstones and savepoints: the shape of
# the tombstoned-conflicting-root hole (spec §10.3 known limits, G04 extended).
TOMB = dict(production_rules=("fixed",), savepoint_target="first", tombstones=1.0, subagents=0.0, keys=1,
            values=2, roots=1, fanout=1, cascades=0.0, durable_calls=0.0, rounds=2, attempts=3, min_attempts=3,
            savepoints=0.9, branch_changes=0.5, checkpoints=0.5, **PLAIN)
# Histories of TOMB that show the hole (found by `check("fixed", n=600, seed=11, **TOMB)`: #112 and #373).
# Found on the 0.3 runtime: the seeds draw their runtime too (refresh rows at 0.4+ checkpoints change the writes).
TOMB["runtimes"] = ("0.3",)
TOMB_HITS = (177041727744688, 30572939639479)


@pytest.fixture(scope="module")
def naive_report():
    return check("naive", n=60, seed=1, sweep=False, **BRANCH)


def stale_lines(case) -> set[int]:
    return {ln.n for ln in case.log if ln.stale is not None}


def test_generated_history_is_reproducible_and_written_by_the_operator():
    h = generate_history(5, keys=2, rounds=3, attempts=3, subagents=1.0, durable_calls=1.0, tombstones=1.0)
    again = ai.checker._generate._Generator(5, h.options).run()       # no cache: really regenerated
    assert list(h.log.raw.key) == list(again.log.raw.key) and list(h.log.raw.value) == list(again.log.raw.value)
    recs = h.log.records
    assert recs["error"].isna().all()
    ident = h.log.verify_identity()
    assert ident["event_uuid_ok"].dropna().all()
    covered = sorted(p for x in h.executions for p in x.positions)
    assert covered == list(range(len(h.log)))                           # every record belongs to one execution
    for x in h.executions:
        if x.status == "TOMB":
            assert recs["tombstone"][x.positions[0]]
            continue
        first = h.log.value(x.positions[0])
        # upstream writes an execution as initial (or, resuming, its next write), call records, completed
        assert not first.completed or len(x.positions) == 1
        assert all(recs["seq"][p] == x.seq and recs["business_key"][p] == x.key for p in x.positions)
    assert len(h.branch_ok) == len(h.tainted) == len(h.log)
    assert h.plan.attempt == len(h.attempts) + 1


def test_options_are_checked():
    with pytest.raises(RuleCheckError, match="unknown history option"):
        generate_history(1, colour="red")
    with pytest.raises(RuleCheckError, match="probability"):
        HistoryOptions(tombstones=2.0)
    with pytest.raises(RuleCheckError, match="production_rules"):
        HistoryOptions(production_rules=("nope",))
    with pytest.raises(ai.InspectError, match="unknown rule"):
        check("not-a-rule", n=1)


def test_a_whole_number_given_as_text_counts():
    """``keys="2.0"`` (an ``--option keys=2.0``) passed the check, then ``int("2.0")`` was a ValueError traceback."""
    options = HistoryOptions(keys="2.0", rounds=" 3 ", attempts=2.0)   # type: ignore[arg-type]
    assert (options.keys, options.rounds, options.attempts) == (2, 3, 2)
    assert all(type(v) is int for v in (options.keys, options.rounds, options.attempts))
    with pytest.raises(RuleCheckError, match=r"keys='2\.5' must be a whole number"):
        HistoryOptions(keys="2.5")   # type: ignore[arg-type]


def test_a_probability_or_fanout_given_as_text_counts_as_its_number():
    """``cascades="0.5"`` passed the check and stayed text (``random() < "0.5"`` fails later); ``fanout="2"`` was
    compared with 0 as text, a TypeError traceback."""
    options = HistoryOptions(cascades="0.5", tombstones=" 1 ", fanout="2")   # type: ignore[arg-type]
    assert (options.cascades, options.tombstones, options.fanout) == (0.5, 1.0, 2)
    assert type(options.cascades) is float and type(options.fanout) is int
    assert HistoryOptions.of({"savepoints": "0.25"}).savepoints == 0.25


@settings(deadline=None, max_examples=8, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**40))
def test_without_branch_changes_every_record_is_on_the_recovery_branch(seed):
    h = generate_history(seed, keys=2, rounds=3, attempts=3, branch_changes=0.0, savepoints=0.0, **PLAIN)
    assert all(h.branch_ok)
    assert not any(h.tainted)
    assert check("naive", seeds=[seed], branch_changes=0.0, savepoints=0.0, keys=2, rounds=3,
                 attempts=3, minimize=False, **PLAIN).stale_reuses == 0


def test_naive_reuses_stale_on_branch_changes_and_lookup_only_never(naive_report):
    assert naive_report.stale_reuses > 0 and not naive_report.passed
    lookup_only = check("lookup-only", n=60, seed=1, sweep=False, **BRANCH)
    assert lookup_only.stale_reuses == 0 and lookup_only.passed
    assert lookup_only.counterexample("stale-reuse") is None
    # the histories are the same ones
    assert list(naive_report.frame["seed"]) == list(lookup_only.frame["seed"])


def test_original_over_evicts_multi_root_histories_and_fixed_does_not():
    original = check("original", n=30, seed=2, sweep=False, **MULTI)
    fixed = check("fixed", n=30, seed=2, sweep=False, minimize=False, **MULTI)
    assert original.avoidable_reruns > 10 and original.stale_reuses == 0
    assert fixed.avoidable_reruns == 0 and fixed.stale_reuses == 0
    cex = original.counterexample("avoidable-rerun")
    assert cex is not None and cex.items
    assert run_case(cex.case, "original").reruns >= 1


def test_tombstoned_conflicting_root_found_for_fixed_and_closed_by_round_regression():
    seeds = list(TOMB_HITS) + ai.checker._check.history_seeds(11, 12)
    fixed = check("fixed", seeds=seeds, **TOMB)
    assert fixed.stale_reuses >= 2
    cex = fixed.counterexample("stale-reuse")
    case = cex.case
    # shrunk to its core: a stale later round logged before a record of an earlier round, with no
    # conflicting root left to see (in the history a tombstone removed it)
    seqs = [ln.seq for ln in case.log]
    assert any(a > b for i, a in enumerate(seqs) for b in seqs[i + 1:])
    full = check("fixed", seeds=[cex.history_seed], minimize=False, **TOMB).counterexample("stale-reuse")
    assert "TOMB" in [ln.status for ln in full.case.log]
    # the project's own case runner agrees: a stale record is reused under fixed, none under the flag
    assert run_case(case, "fixed").stale
    assert not run_case(case, "fixed+round-regression").stale
    regression = check("fixed+round-regression", seeds=seeds, **TOMB)
    assert regression.stale_reuses == 0 and regression.passed
    branch_aware = check("branch-aware", seeds=seeds, minimize=False, **TOMB)
    assert branch_aware.stale_reuses == 0


def test_counterexamples_are_minimal_and_round_trip(naive_report, tmp_path):
    rule = resolve_check_rule("naive")
    for cex in naive_report.counterexamples:
        data = cex.data
        assert _judge_case(data, rule).fails(cex.kind)
        for i in range(len(data["log"])):                    # removing any record makes the failure disappear
            fewer = {**data, "log": data["log"][:i] + data["log"][i + 1:]}
            if i < data["setup"]["window_start"] - 1:
                fewer["setup"] = {**data["setup"], "window_start": data["setup"]["window_start"] - 1}
            judged = _judge_case(fewer, rule)
            if judged is not None and cex.kind == "stale-reuse" and judged.fails(cex.kind):
                # what is left is a stale reuse the reference rule makes too: a known limit, no longer the defect
                assert set(judged.stale_at) <= set(_judge_case(fewer, resolve_check_rule("fixed")).stale_at), i
                continue
            assert judged is None or not judged.fails(cex.kind), (cex.kind, i)
        path = cex.save(tmp_path / "new" / cex.kind)
        assert path.name == f"{cex.data['id']}.toml" and path.parent.name == cex.kind
        (loaded,) = load_cases(path)
        assert tomllib.loads(path.read_text()) == tomllib.loads(cex.to_toml())
        assert loaded.id == cex.data["id"] and stale_lines(loaded) == stale_lines(cex.case)
        assert _evaluate(_case_subject(build_case(loaded)), rule).fails(cex.kind)
    stale = naive_report.counterexample("stale-reuse")
    assert stale.records <= 3 and stale.attempts <= 2
    assert run_case(stale.case, "naive").stale and not run_case(stale.case, "naive").passed


def test_counterexample_replays_in_the_stepper(naive_report):
    cex = naive_report.counterexample("stale-reuse")
    ex = cex.executor()
    ex.run()
    built = build_case(cex.case)
    lines = {ln.n: ln for ln in cex.case.log}
    recs = built.log.records
    stale_keys = {recs["state_key"][p] for p, n in built.line_of_pos.items() if lines[n].stale is not None}
    reused = [s for s in ex.step_list if s.kind is StepKind.LOOKUP and s.outcome in ("REUSE", "RESUME")]
    assert any(s.state_key in stale_keys for s in reused)


class Boom(FixedRule):
    name = "boom<script>"

    def lookup(self, session, task):
        if task.seq >= 1:
            raise RuntimeError("no rounds after the first <b>please</b>")
        return super().lookup(session, task)


def test_a_raising_rule_is_reported_with_its_history():
    report = check(Boom, n=12, seed=4, sweep=False, keys=1, rounds=3)
    assert report.errors > 0 and not report.passed and report.verdict == "broken"
    cex = report.counterexample("error")
    assert cex is not None and "lookup() at " in cex.items[0] and "RuntimeError: no rounds" in cex.items[0]
    assert cex.rounds >= 1 and cex.records <= 2
    html = report._repr_html_()
    assert "<script>" not in html and "<b>please</b>" not in html
    assert "boom&lt;script&gt;" in html and "&lt;b&gt;please" in html


class ReuseNothing(FixedRule):
    name = "reuse-nothing"

    def lookup(self, session, task):
        session.invalidate(task.business_key, task.seq, kind="root-conflict", explanation="paranoid")
        return LookupDecision.found(None)


@pytest.mark.parametrize("rule", sorted(ai.rules.RULES) + [ReuseNothing()])
def test_every_rule_can_be_checked(rule):
    report = check(rule, n=8, seed=9, minimize=False, sweep=False)
    assert len(report.frame) == 8 and report.errors == 0
    assert report.frame["tasks"].sum() > 0
    assert set(report.to_dict()) >= {"rule", "stale_reuses", "avoidable_reruns", "counterexamples"}
    if isinstance(rule, ReuseNothing):
        assert report.stale_reuses == 0 and report.frame["reused"].sum() == 0


def test_module_class_rules_resolve(tmp_path, monkeypatch):
    (tmp_path / "my_rules_mod.py").write_text(
        "from agent_inspect.rules import FixedRule\nclass Mine(FixedRule):\n    name = 'mine'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert resolve_check_rule("my_rules_mod:Mine").name == "mine"
    assert resolve_check_rule("original:kafka-k1").flavour == "kafka-k1"
    with pytest.raises(RuleCheckError, match="has no 'Nope'"):
        resolve_check_rule("my_rules_mod:Nope")
    with pytest.raises(RuleCheckError, match="cannot import"):
        resolve_check_rule("no_such_module_xyz:Rule")


def test_case_file_parses_without_the_checker():
    report = check("naive", n=60, seed=1, sweep=False, **BRANCH)
    data = tomllib.loads(report.counterexample("stale-reuse").to_toml())
    (case,) = parse_case(data)
    assert case.agent() is not None and case.setup.window_start >= 1


@pytest.mark.parametrize("seed", ai.checker._check.history_seeds(5, 4))
def test_a_whole_history_as_a_case_file_recovers_like_the_operator_log(seed):
    """Writes collapsed to case lines (sub-agent callers, durable calls, tombstones) judge the same."""
    from agent_inspect.checker._judge import _history_subject
    from agent_inspect.checker._shrink import _assemble, _history_lines

    h = generate_history(seed, subagents=1.0, durable_calls=1.0, tombstones=1.0, keys=2, rounds=3)
    lines, pending, replay = _history_lines(h)
    data = _assemble({"id": "WHOLE", "setup": {"key_format": "K1.5", "pipeline": "python", "tombstones": True,
                                               "runtime": h.runtime},
                      "agent": dict(h.agent_spec)}, lines, replay, pending, h.plan.restored_seq)
    built = build_case(parse_case(tomllib.loads(__import__("tomli_w").dumps(data)))[0])
    for name in ("original", "fixed", "naive", "branch-aware"):
        rule = resolve_check_rule(name)
        a, b = _evaluate(_history_subject(h), rule), _evaluate(_case_subject(built), rule)
        assert (a.tasks, a.reused, a.resumed, a.rerun, len(a.stale) + len(a.tainted), len(a.avoidable)) == \
            (b.tasks, b.reused, b.resumed, b.rerun, len(b.stale), len(b.avoidable)), name


def test_k1_histories_check_the_snapshot_flavours():
    for name in ("original:kafka-k1", "original:fluss-k1"):
        report = check(name, n=5, seed=3, sweep=False, key_format="K1", minimize=False)
        assert report.errors == 0 and report.frame["tasks"].sum() > 0
    assert generate_history(3, key_format="K1").log.records["key_format"].eq("K1").all()


def test_counterexamples_keep_the_full_history_and_name_their_known_limit(tmp_path):
    # found by ai.checker.check("fixed", n=300, seed=3, savepoints=0.8): a savepoint of an older checkpoint
    # taken mid-round (spec §10.3 "older checkpoint restored mid-round", issue #12 item 10)
    from agent_inspect.checker import KNOWN_LIMITS, check

    report = check("fixed", seeds=[56174547270091], savepoints=0.8, **PLAIN)
    cex = report.counterexample("stale-reuse")
    assert cex is not None and cex.known_limit == KNOWN_LIMITS[0] == "older checkpoint restored mid-round"
    assert cex.full_data is not None and len(cex.full_data["log"]) >= len(cex.data["log"])
    assert cex.full_case.id.endswith("-full") and "known limit" in cex.data["note"]
    saved = cex.save(tmp_path)
    assert saved.exists() and (tmp_path / f"{saved.stem}-full.toml").exists()
    d = cex.to_dict()
    assert d["known_limit"] == KNOWN_LIMITS[0] and d["full_case"].startswith("id = ")


# -- issue 24 items 5, 6: the shapes the case matrix knows, broken rules, stories -------------------------

class LookupRootsOnly(ai.rules.DivergenceRule):
    """Notebook 03's rule: root conflicts at lookup only, no identity check."""

    name = "lookup-roots-only"

    def lookup(self, session, task):
        k, s = task.business_key, task.seq
        if task.is_root and session.store.roots(k, s) - {task.event_uuid}:
            session.invalidate(k, s, kind="root-conflict", explanation="a different input at this seq")
        entry = session.store.get(task.state_key)
        if entry is None:
            session.evict(k, s, kind="miss-eviction", explanation="miss: later rounds are stale")
        return LookupDecision.found(entry)


@pytest.fixture(scope="module")
def stale_in_matrix():
    """Every rule (built-in, and notebook 03's) that the case matrix shows reusing stale on a genuine case."""
    rules = [*sorted(ai.rules.RULES), LookupRootsOnly()]
    frame = ai.cases.compare(ai.cases.builtin(), rules)
    stale = frame[(frame["stale_reuses"] > 0) & (frame["category"] == "genuine")]
    by_name = {r if isinstance(r, str) else r.name: r for r in rules}
    return {name: (by_name[name], sorted(stale.loc[stale["rule"] == name, "case"])) for name in
            dict.fromkeys(stale["rule"].astype(str))}


def test_the_matrix_marks_the_notebook_rule_stale_on_g09(stale_in_matrix):
    assert "G09" in stale_in_matrix["lookup-roots-only"][1]
    assert {"naive", "original", "lookup-roots-only"} <= set(stale_in_matrix)
    assert "fixed" not in stale_in_matrix


def test_every_rule_the_matrix_marks_stale_is_found_stale_at_the_default_n(stale_in_matrix):
    """Genuine cases only: limitation (G11: tombstoned conflicting root) and format cases (P04/P05: K1 key
    text) are spec §10.3 known limits and key-format defects, which random K1.5 histories seldom reach."""
    for name, (rule, cases) in stale_in_matrix.items():
        report = check(rule, seed=1)
        assert report.n == 200 + len(ai.checker.sweep())
        assert report.stale_reuses > 0 and report.verdict == "unsafe", (name, cases, report.summary())
        assert report.counterexample("stale-reuse") is not None


def test_the_notebook_rule_reuses_a_sibling_record_1084():
    report = check(LookupRootsOnly(), seed=1)
    cex = report.counterexample("stale-reuse")
    assert cex is not None and cex.known_limit is None          # a defect of the rule, not a known limit
    story = cex.items[0]
    assert story.startswith("task ") and " reused " in story and "wrong because" in story and "#1084" in story
    assert cex.details and "=REUSE of line" in cex.details[0]   # the compact notation, kept beside the story
    # the counterexample says which sibling must not reuse the record, and the case runner agrees
    marked = [ln for ln in cex.case.log if ln.stale is not None and ln.stale.events]
    assert marked
    assert run_case(cex.case, LookupRootsOnly()).stale
    assert not run_case(cex.case, "fixed").stale               # the identity check tells the siblings apart
    html = report._repr_html_()
    assert "unsafe" in html and "compact notation" in html


def test_identical_children_and_case_agents_are_generated():
    h = generate_history(3, identical_children=1.0, fanout=2, case_agents=0.0, roots=1, keys=1)
    emits = [st["emit"] for steps in h.agent_spec["on"].get("R0", {}).values() for st in steps if "emit" in st]
    assert h.case_agent is None
    assert not emits or len(emits) > len(set(emits))         # an input's work events share their attributes
    agents = {generate_history(s, case_agents=1.0).case_agent for s in range(12)}
    assert None not in agents and len(agents) > 3
    assert agents <= {c.id for c in ai.cases.builtin()}
    h = generate_history(next(s for s in range(40) if generate_history(s, case_agents=1.0).case_agent == "G09"),
                         case_agents=1.0)
    assert "agent of case G09" in h.describe()
    assert h.log.records["error"].isna().all()


class ReturnsEntry(ai.rules.DivergenceRule):
    name = "returns-entry"

    def lookup(self, session, task):
        entry = session.store.get(task.state_key)
        return entry if entry is not None else LookupDecision.found(None)


class RaisesLater(FixedRule):
    name = "raises-later"

    def lookup(self, session, task):
        if task.seq >= 5:
            raise KeyError("no such seq")
        return super().lookup(session, task)


def _line_of(cls, text):
    import inspect

    source, start = inspect.getsourcelines(cls)
    return start + next(i for i, ln in enumerate(source) if text in ln)


def test_a_broken_rule_is_broken_in_check_and_compare_never_unsafe():
    here = __file__
    raises_at = f"{here}:{_line_of(RaisesLater, 'raise KeyError')}"
    report = check(RaisesLater(), n=20, seed=2, sweep=False, rounds=6, keys=1)
    assert report.verdict == "broken" and not report.passed
    assert report.broken.startswith("rule 'raises-later' is broken: lookup() at ") and raises_at in report.broken
    assert "KeyError" in report.broken and "\n" not in report.broken
    assert "unsafe" not in report.summary() and "unsafe" not in report._repr_html_()
    entry = check(ReturnsEntry(), n=10, seed=1)
    assert entry.verdict == "broken" and "returned Entry, expected a LookupDecision" in entry.broken
    assert f"{here}:{_line_of(ReturnsEntry, 'def lookup')}" in entry.broken

    frame = ai.cases.compare(ai.cases.builtin(), ["fixed", ReturnsEntry(), RaisesLater()])
    broken = frame[frame["broken"].notna()]
    assert set(broken["rule"].astype(str)) == {"returns-entry", "raises-later"}
    assert not broken["passed"].any()
    assert broken.loc[broken["rule"] == "returns-entry", "broken"].str.contains("returned Entry").all()
    assert broken.loc[broken["rule"] == "raises-later", "broken"].str.contains(raises_at, regex=False).all()
    fixed = frame[frame["rule"] == "fixed"]
    assert fixed["broken"].isna().all() and fixed["passed"].all()
    with pytest.raises(ai.rules.BrokenRuleError, match="returned Entry"):
        ai.cases.compare(ai.load(ai.samples.path("production")), [ReturnsEntry()],
                         markers=ai.samples.markers("production"))


def test_every_case_agent_runs_in_generated_histories():
    from agent_inspect.checker._generate import case_agents

    ids = [c[0] for c in case_agents()]
    # fan-out (G09, N05), collisions (G02), sub-agents (S*), Java actions (P03), begin events (N10, N16), changed
    # code (L01), 0.4 refresh rows (N15) and main's pending slots and result events (S08-S12): every case with an agent
    assert {"G02", "G09", "N13", "N14", "P03", "S01", "S05", "G11", "N10", "N16", "L01", "N15", "S08", "S12"} <= set(ids)
    assert set(ids) == {c.id.split("/")[0] for c in ai.cases.builtin() if c.actions}
    java = next(t for cid, t, *_ in case_agents() if cid == "P03")
    assert any(a.get("java") for a in java["actions"])
    for cid in ids:
        h = generate_history(1, case_agents=1.0, case_ids=cid)
        assert h.case_agent == cid and h.log.records["error"].isna().all(), cid
        report = check("fixed", seeds=[h.seed], case_agents=1.0, case_ids=(cid,), minimize=False)
        assert report.errors == 0, (cid, report.broken)
    with pytest.raises(RuleCheckError, match="case_ids"):
        generate_history(1, case_agents=1.0, case_ids="Z99")


# durable calls in every shape of the call cases, one key, short histories: many resumed bodies
CALLS = dict(ai.checker._sweep.CALL_OPTIONS)


def test_every_bundled_case_shape_is_reachable_by_the_generator():
    """Cases with an agent run as case agents (above); the call cases D01-D06 have none: their shapes are the
    journal decisions a generated recovery makes when it resumes a body (hit, re-raise, truncate, reconcile)."""
    from agent_inspect.checker import CALL_SHAPES, call_shapes
    from agent_inspect.checker._generate import case_agents

    builtin = ai.cases.builtin()
    call_cases = {c.id.split("/")[0] for c in builtin if c.call_case is not None}
    assert set(CALL_SHAPES) == call_cases == {f"D0{i}" for i in range(1, 7)}
    assert {c.id for c in case_agents()} | call_cases == {c.id.split("/")[0] for c in builtin}
    found: dict[str, int] = {}
    for seed in range(400):
        for shape in call_shapes(generate_history(seed, **CALLS)):
            found.setdefault(shape, seed)
        if len(found) == len(CALL_SHAPES):
            break
    assert set(found) == call_cases, found
    assert found == dict(ai.checker._sweep.CALL_SHAPE_SEEDS)      # the sweep's seeds are the first that show each
    legacy = generate_history(found["D04"], **CALLS)
    assert legacy.value_format == "V1" and set(legacy.log.records["value_format"].dropna()) == {"V1"}
    assert "V1 values" in legacy.describe()
    java = generate_history(found["D06"], **CALLS)
    assert any(a.get("java") for a in java.agent_spec["actions"]) and java.replay_agent_spec is not None
    # the shapes stay judgeable: the reference rule finds nothing stale in them, and a counterexample of them
    # saves as a case file with the same calls (K2 keys by text, V1 values)
    report = check("fixed", seeds=sorted(set(found.values())), minimize=False, **CALLS)
    assert report.stale_reuses == 0 and report.errors == 0, report.summary()


def test_a_check_with_its_defaults_goes_through_every_bundled_case():
    """Issue 24 item 5: the default check reaches every shape the matrix knows, whatever its random draws (at the
    default n, 200 random histories of seed 0 draw 24 of the 41 case agents and only the call cases D02 and D03)."""
    from agent_inspect.checker import call_shapes, sweep

    builtin = {c.id.split("/")[0] for c in ai.cases.builtin()}
    shapes = sweep()
    assert {s.case for s in shapes} == builtin
    for shape in shapes:
        if shape.case.startswith("D"):
            assert shape.case in call_shapes(generate_history(shape.seed, shape.options)), shape.case
        else:
            assert generate_history(shape.seed, shape.options).case_agent == shape.case
    report = check("fixed", n=3, seed=0, minimize=False)                  # the defaults: the sweep is on
    assert set(report.frame["case"]) - {""} == builtin and report.n == 3 + len(shapes)
    assert report.errors == 0, report.broken
    assert set(check("fixed", n=3, sweep=False, minimize=False).frame["case"]) == {""}
    # random histories keep to formats a log-only rule can be judged on unless asked (V1 values carry no event
    # lineage: every rule's identity checks fail there); K2 keys and V1 values mix in at the rates given
    seeds = ai.checker._check.history_seeds(0, 60)
    plain = [generate_history(s) for s in seeds]
    assert {h.value_format for h in plain} == {"V3"} and {h.key_format for h in plain} == {"K1.5"}
    mixed = [generate_history(s, k2_keys=0.5, legacy_values=0.5) for s in seeds]
    assert {h.value_format for h in mixed} == {"V1", "V3"} and {h.key_format for h in mixed} == {"K1.5", "K2"}
    assert any("K2 keys" in h.describe() for h in mixed)
    again = [generate_history(s, k2_keys=0.5) for s in seeds]           # the histories that keep K1.5 are unchanged
    assert all(list(a.log.raw.value) == list(p.log.raw.value) for a, p in zip(again, plain) if a.key_format == "K1.5")


def test_call_shapes_are_off_without_durable_calls_and_legacy_values_need_0_3():
    plain = generate_history(4, durable_calls=0.0, case_agents=0.0)
    assert not any("call" in st for table in plain.agent_spec["on"].values() for b in table.values() for st in b)
    assert generate_history(4, legacy_values=1.0, runtimes=("main",), case_agents=0.0).value_format == "V3"
    shaped = [generate_history(s, call_shapes=1.0, durable_calls=1.0, case_agents=0.0) for s in range(6)]
    steps = [st for h in shaped for table in h.agent_spec["on"].values() for b in table.values() for st in b
             if "call" in st]
    assert any(st.get("raises") and st.get("catch") for st in steps)      # a failure the body catches
    with pytest.raises(RuleCheckError, match="call_shapes"):
        generate_history(1, call_shapes=2.0)


def test_histories_on_0_4_and_main_write_refresh_rows_and_judge_like_their_case_file():
    """Addendum §2.2: at every checkpoint 0.4+ re-appends each retained state byte-identical after the marker."""
    from agent_inspect.checker._judge import _history_subject
    from agent_inspect.checker._shrink import _assemble, _history_lines

    drawn = {generate_history(s).runtime for s in range(30)}
    assert drawn == {"0.3", "0.4", "main"}                    # the default options draw every runtime
    refreshed = 0
    for seed in range(12):
        h = generate_history(seed, runtimes=("0.4", "main"), case_agents=0.0, keys=2, rounds=3, checkpoints=0.5)
        assert h.runtime in ("0.4", "main") and "refresh rows" in h.describe()
        values, keys = h.log.raw.value, h.log.raw.key
        latest: dict[bytes, bytes] = {}
        for pos in range(len(h.log)):
            if values[pos] is not None and latest.get(keys[pos]) == values[pos]:
                refreshed += 1                                # a refresh row: the state's latest value again
            latest[keys[pos]] = values[pos]
        if seed < 3:
            lines, pending, replay = _history_lines(h)
            data = _assemble({"id": "WHOLE", "setup": {"key_format": "K1.5", "pipeline": "python",
                                                       "tombstones": h.tombstones, "runtime": h.runtime},
                              "agent": dict(h.agent_spec)}, lines, replay, pending, h.plan.restored_seq)
            built = build_case(parse_case(tomllib.loads(__import__("tomli_w").dumps(data)))[0])
            for name in ("original", "fixed"):
                rule = resolve_check_rule(name)
                a, b = _evaluate(_history_subject(h), rule), _evaluate(_case_subject(built), rule)
                assert (a.tasks, a.reused + a.resumed, len(a.stale) + len(a.tainted)) == \
                    (b.tasks, b.reused + b.resumed, len(b.stale)), (seed, name)
    assert refreshed > 20
    with pytest.raises(RuleCheckError, match="runtimes"):
        generate_history(1, runtimes=("0.5",))
    assert generate_history(4, runtimes="0.3").runtime == "0.3"


def test_the_summary_says_how_many_histories_were_random_and_how_many_from_the_case_matrix() -> None:
    report = check("fixed", n=3, seed=0)
    swept = int((report.frame["case"] != "").sum())
    assert swept > 0 and len(report.frame) == 3 + swept
    assert report.summary().startswith(f"rule fixed: {3 + swept} histories (3 random, {swept} from the case "
                                       "matrix), ")
    assert "random" not in check("fixed", n=3, seed=0, sweep=False).summary()


# history 175997744584321: #1084 siblings (a known limit, the reference rule reuses the sibling's record too);
# 272409603467017: the original rule reuses a record of another input, which fixed does not
_KNOWN_LIMIT, _DEFECT = 175997744584321, 272409603467017


def test_stale_reuses_the_reference_rule_makes_too_are_known_limits_not_failures() -> None:
    """``rules check fixed`` printed FAIL and exited 1 on the reference rule's own §10.3 known limits, so its exit
    code could not tell a rule as safe as the reference from an unsafe one."""
    for rule in ("fixed", FixedRule()):
        report = check(rule, seeds=[_KNOWN_LIMIT, _DEFECT])
        assert report.stale_reuses == 1 and report.stale_beyond_reference == 0
        assert report.passed and report.verdict == "known limits only"
        assert "spec §10.3 known limits" in report.summary()
        assert report.counterexample("stale-reuse").known_limit == "#1084 identical siblings, no evidence"
    unsafe = check("original", seeds=[_KNOWN_LIMIT, _DEFECT])
    assert unsafe.stale_reuses == 2 and unsafe.stale_beyond_reference == 1
    assert not unsafe.passed and unsafe.verdict == "unsafe" and "(1 beyond the reference rule fixed's)" in unsafe.summary()
    # the counterexample shows the defect, minimized without turning into the known limit
    cex = unsafe.counterexample("stale-reuse")
    assert cex.history_seed == _DEFECT and cex.known_limit is None
    minimal = _judge_case(cex.data, resolve_check_rule("original"))
    assert set(minimal.stale_at) - set(_judge_case(cex.data, resolve_check_rule("fixed")).stale_at)


def test_rules_check_of_the_reference_rule_exits_0(capsys) -> None:
    from agent_inspect.cli import main

    assert main(["rules", "check", "fixed"]) == 0          # the defaults: 200 random histories and the matrix
    out = capsys.readouterr().out
    assert out.startswith("PASS rule fixed") and "(spec §10.3 known limits of log-only rules)" in out
    assert main(["rules", "check", "original", "--n", "30", "--seed", "3"]) == 1
    assert capsys.readouterr().out.startswith("FAIL rule original")
