"""The sample-log generator and the committed sample_logs/: byte-identical regeneration, every format
loading to the same records, each small sample carrying its case's history, the production story."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agent_inspect as ai
from agent_inspect import samples
from agent_inspect.cases import load_cases
from agent_inspect.cli import main
from agent_inspect.executor import ReplayExecutor, StepKind
from agent_inspect.log import ActionStateLog
from agent_inspect.sources import RawBatch, SourceInfo

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "sample_logs"
CASES = ROOT / "cases"
SMALL = {"N04": "N04", "N07": "N07", "G01": "G01", "G02": "G02", "G03": "G03", "S01": "S01", "S05": "S05",
         "P01": "P01/snapshot-kafka-k1"}


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("samples")
    samples.write_samples(out)
    return out


@pytest.fixture(scope="module")
def production() -> samples.Sample:
    return samples.scenario("production")


# -- the committed files ------------------------------------------------------------------------------

def test_regenerated_files_are_byte_identical_to_the_committed_ones(regenerated: Path) -> None:
    made = sorted(p.name for p in regenerated.iterdir())
    committed = sorted(p.name for p in COMMITTED.iterdir())
    assert made == committed
    suffixes = ("jsonl", "kcat", "parquet", "markers", "trace")
    assert len(made) == len(samples.SAMPLES) * len(suffixes) + len(samples.INCONSISTENT) + 1   # + README.md
    differ = [n for n in made if not _same_file(regenerated / n, COMMITTED / n)]
    assert differ == [], f"regenerate with `python -m agent_inspect.samples`; these differ: {differ}"


def _same_file(made: Path, committed: Path) -> bool:
    """Byte-identical, except Parquet: its bytes name the pyarrow version that wrote them, so compare
    the columns (exact bytes of every key and value) and the toolkit's metadata instead."""
    if made.suffix != ".parquet":
        return made.read_bytes() == committed.read_bytes()
    import pyarrow.parquet as pq

    a, b = pq.read_table(made), pq.read_table(committed)
    return a.equals(b) and a.schema.metadata == b.schema.metadata


def test_output_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    names = ["subagents", "production_k1"]
    code = f"from agent_inspect.samples import write_samples; write_samples({str(tmp_path)!r}, names={names!r})"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONHASHSEED": "4242"})
    for path in sorted(tmp_path.iterdir()):
        assert _same_file(path, COMMITTED / path.name), path.name
    assert len(list(tmp_path.iterdir())) == 10                 # 5 files each: 4 formats + the trace


@pytest.mark.parametrize("name", list(samples.SAMPLES))
def test_every_format_loads_to_identical_records(name: str) -> None:
    logs = {fmt: ai.load(samples.path(name, fmt)) for fmt in ("jsonl", "kcat", "parquet")}
    ref = logs["jsonl"].records
    assert len(ref) > 0 and logs["jsonl"].errors.empty
    for fmt, log in logs.items():
        assert log.records.equals(ref), fmt
    assert {fmt: log.source.file_format for fmt, log in logs.items()} == \
        {"jsonl": "jsonl", "kcat": "kcat-jsonl", "parquet": "parquet"}
    assert logs["kcat"].source.topic == "flink-agents-action-state"
    assert ref["timestamp"].notna().all()
    info = json.loads(samples.path(name, "markers").read_text())
    assert info["sample"] == name and info["records"] == len(ref)
    assert samples.markers(name) == [{int(p): o for p, o in m.items()} for m in info["markers"]]


def test_timestamps_are_fixed_and_follow_the_write_order() -> None:
    import pandas as pd

    base = pd.Timestamp("2026-09-14T08:00:00Z")
    for name in ("production", "N04"):
        recs = ai.load(samples.path(name)).records
        for _, part in recs.groupby("partition"):
            assert part["timestamp"].is_monotonic_increasing
        assert base < recs["timestamp"].min() < base + pd.Timedelta(seconds=1)


# -- small samples carry their case's history -----------------------------------------------------------

def _outcomes(ex: ReplayExecutor) -> list[tuple[str, str]]:
    return [(s.action, s.outcome) for s in ex.step_list if s.kind is StepKind.LOOKUP]


@pytest.mark.parametrize("name", list(SMALL))
def test_small_sample_restores_to_its_case_outcomes(name: str) -> None:
    (case,) = [c for c in load_cases(CASES / f"{name}.toml") if c.id == SMALL[name]]
    s = samples.scenario(name)
    assert s.case == name
    assert ai.load(samples.path(name)).records.equals(s.log.records)
    for rule in ("original", "fixed", "naive", "lookup-only"):
        if rule not in case.expect:
            continue
        want = case.expect[rule]
        ex = s.executor(rule, seed=99)
        ex.run()
        # a child of a reused caller is never looked up: NOT-DISPATCHED means no lookup step
        assert _outcomes(ex) == [(i.action, i.outcome) for i in want.items if i.outcome != "NOT-DISPATCHED"], \
            (name, rule)
        assert (ex.failure is not None) == want.crash, (name, rule)
        if rule in case.expect_calls:              # the case names its own call ids, sub-agent calls too: totals
            made = ex.counters.calls_executed + ex.counters.calls_subagent
            assert made == sum(case.expect_calls[rule].values()), (name, rule)
        ops = [(st_.kind.value, st_.seq) for st_ in ex.step_list
               if st_.kind in (StepKind.EVICTION, StepKind.INVALIDATION) and st_.detail.get("removed")]
        for item in want.items:
            for op in item.ops:
                assert ("eviction" if op.kind == "evict" else "invalidation", op.bound) in ops, (name, rule, op)


def test_g01_log_is_the_canonical_a_b_a_history() -> None:
    log = samples.generate("G01")
    done = log.records[log.records["completed"].astype(bool)]
    inputs = [json.loads(bytes(log.value(p).task_event.attributes)) for p in done.index]
    assert [(int(r.seq), a) for r, a in zip(done.itertuples(), inputs)] == \
        [(5, {"input": "A"}), (5, {"input": "B"}), (6, {"input": "C"})]
    # C@6 answered from what B left in memory
    assert json.loads(bytes(log.value(done.index[-1]).output_events[0].attributes)) == {"input": "C", "after": "B"}


def test_s01_caller_is_incomplete_and_child_complete() -> None:
    recs = samples.generate("S01").records
    caller = recs[recs["task_event_type"] == "_input_event"]
    child = recs[recs["task_event_type"] == "InternalSubagentCallEvent"]
    assert not caller["completed"].astype(bool).any()
    assert child["completed"].astype(bool).iloc[-1] and child["subagent_session_id"].notna().all()


def test_subagents_sample_reruns_child_graphs_only_under_original() -> None:
    s = samples.scenario("subagents")
    runs = {}
    for rule in ("original", "fixed"):
        ex = s.executor(rule)
        ex.run()
        assert ex.failure is None
        runs[rule] = [(st_.key, st_.action, st_.outcome) for st_ in ex.step_list if st_.kind is StepKind.LOOKUP]
    assert runs["original"] == [("order-1", "P", "REUSE"), ("order-2", "P", "REUSE")] + \
        [(k, a, "RERUN") for k in ("order-1", "order-2") for a in ("P", "CA1", "CA2")]
    assert runs["fixed"] == [("order-1", "P", "REUSE"), ("order-2", "P", "REUSE"), ("order-1", "P", "REUSE"),
                             ("order-2", "P", "RESUME"), ("order-2", "CA1", "REUSE"), ("order-2", "CA2", "REUSE")]
    tree = ai.reconstruct(s.log, rule="original").subagent_tree("order-1", 6)
    assert tree.number_of_nodes() > 0


# -- the production-like story -------------------------------------------------------------------------

def test_production_log_has_the_promised_shape(production: samples.Sample) -> None:
    log = production.log
    recs = log.records
    assert 2000 <= len(recs) <= 6000 and log.errors.empty
    assert 30 <= recs["business_key"].nunique() <= 60
    assert set(recs["key_format"]) == {"K1.5"} and recs["partition"].nunique() == 4
    assert recs["business_key"].str.contains("_").any()                  # K1.5 key text may hold '_'
    assert recs["subagent_session_id"].notna().any()
    assert {"_input_event", "ChatRequest", "ToolRequest", "ToolResult", "InternalSubagentCallEvent"} <= \
        set(recs["task_event_type"])
    calls = {c.function_id for p in recs.index[recs["call_count"] > 0] for c in log.value(p).call_results}
    assert {"support_agent.chat_model.chat", "support_agent.vector_store.query",
            "support_agent.tools.create_ticket"} <= calls
    assert (recs["calls_pending"] > 0).any() and (recs["calls_failed"] > 0).any()
    assert len(production.attempts) >= 4 and [a.restored_from is None for a in production.attempts][0]
    assert all(a.rule == "original" for a in production.attempts[1:])
    assert len({c.id for c in production.checkpoints}) >= 5


def test_production_reconstructs_with_divergences_under_both_rules(production: samples.Sample) -> None:
    log = ai.load(samples.path("production", "parquet"))
    original = ai.reconstruct(log, rule="original")
    fixed = ai.reconstruct(log, rule="fixed")
    for result in (original, fixed):
        assert len(result.divergences) > 0
        assert result.divergences["explanation"].str.len().gt(0).all()
    assert set(original.divergences["kind"]) >= {"count>1"}
    assert "root-conflict" in set(fixed.divergences["kind"])                # the changed source order
    reruns = {r.rule.name: int((r.records["outcome"] == "RERUN").sum()) for r in (original, fixed)}
    assert reruns["original"] > reruns["fixed"]
    windowed = ai.reconstruct(log, rule="original", markers=samples.markers("production"))
    assert (windowed.records["status"] == "outside").any() and len(windowed.divergences) > 0


def test_production_duplicated_work_is_in_the_topic(production: samples.Sample) -> None:
    recs = production.log.records
    completed = recs[recs["completed"].astype(bool)]
    # the original rule re-ran completed actions: several completed writes of one state key
    assert completed["state_key"].duplicated().sum() > 50


def _assert_lifecycle(recs) -> None:  # type: ignore[no-untyped-def]
    """Spec §5.6 per state key: initial record first; calls appended one at a time (a PENDING slot
    then its terminal result at the same length); the completed record carries no calls."""
    assert (recs.loc[recs["completed"].astype(bool), "call_count"] == 0).all()
    for _, writes in recs.groupby("state_key", sort=False):
        first = writes.iloc[0]
        assert not first["completed"] and first["call_count"] == 0
        counts = writes["call_count"].tolist()
        pending = writes["calls_pending"].tolist()
        for i in range(1, len(counts)):
            step = counts[i] - counts[i - 1]
            assert step == 1 or counts[i] == 0 or (step == 0 and pending[i - 1] > 0), writes["offset"].tolist()


def test_production_records_follow_the_lifecycle(production: samples.Sample) -> None:
    _assert_lifecycle(production.log.records)


@settings(deadline=None, max_examples=10)
@given(inputs=st.lists(st.tuples(st.sampled_from(["a", "b_2", "c"]), st.sampled_from(["A", "B", "C"])),
                       min_size=1, max_size=5),
       die_after=st.integers(3, 40), rule=st.sampled_from(["original", "fixed"]),
       key_format=st.sampled_from(["K1.5", "K2"]))
def test_random_stories_write_consistent_logs(inputs: list, die_after: int, rule: str, key_format: str,
                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    from agent_inspect.samples._driver import Job
    from agent_inspect.samples._small import _cascade_agent

    job = Job(_cascade_agent(), inputs, key_format=key_format, seed=7, num_partitions=2)
    steps = [0]

    def dies(step) -> bool:  # type: ignore[no-untyped-def]
        steps[0] += 1
        return steps[0] >= die_after

    job.run(stop=dies, checkpoint_every=1)
    job.run(restore=job.checkpoints[-1].id, rule=rule)
    log = job.log
    assert log.errors.empty and set(log.records["key_format"]) == {key_format}
    _assert_lifecycle(log.records)
    out = tmp_path_factory.mktemp("story")
    from agent_inspect.sources import write_jsonl, write_parquet

    files = [write_jsonl(log, out / "s.jsonl"), samples.write_kcat_jsonl(log, out / "s.kcat.jsonl"),
             write_parquet(log, out / "s.parquet")]
    for f in files:
        assert ai.load(f).records.equals(log.records), f.name
    point = job.restore_point(job.checkpoints[-1].id)
    ex = ReplayExecutor(log, agent=job.agent, markers=point["markers"], rule="fixed",
                        plan={"inputs": point["replay"], "restored_seq": point["restored_seq"],
                              "pending": point["pending"]}, memory=point["short_term"])
    ex.run()
    assert ex.failure is None and ex.counters.rerun == 0          # the last attempt finished: all reusable


def test_production_restore_replays_from_its_markers(production: samples.Sample) -> None:
    runs = {}
    for rule in ("original", "fixed"):
        ex = production.executor(rule)
        ex.run()
        assert ex.failure is None, rule
        first = next(st_ for st_ in ex.step_list if st_.kind is StepKind.LOOKUP)
        assert first.detail["restored"] and first.event_id == production.plan["pending"][0][3]["id"]
        runs[rule] = ex.counters
    assert runs["fixed"].reused > runs["original"].reused
    assert runs["fixed"].calls_executed < runs["original"].calls_executed


def test_k1_variant_tells_the_same_story_with_k1_keys() -> None:
    log = ai.load(samples.path("production_k1"))
    assert set(log.records["key_format"]) == {"K1"} and log.errors.empty
    assert not log.records["business_key"].str.contains("_").any()
    result = ai.reconstruct(log, rule="original")
    assert len(result.divergences) > 0 and not (result.records["outcome"] == "FAIL").any()


# -- writers, API, CLI ---------------------------------------------------------------------------------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@settings(deadline=None, max_examples=30)
@given(rows=st.lists(st.tuples(st.integers(0, 2), _TEXT, st.one_of(st.none(), _TEXT),
                               st.one_of(st.none(), st.integers(0, 2**41))), max_size=12))
def test_kcat_writer_round_trips_through_the_loader(rows: list, tmp_path_factory: pytest.TempPathFactory) -> None:
    batch = RawBatch()
    offsets: dict[int, int] = {}
    for p, key, value, ts in rows:
        off = offsets.get(p, 0)
        offsets[p] = off + 1
        payload = None if value is None else json.dumps({"v": value}, ensure_ascii=False).encode()
        batch.append(p, off, ts, key.encode(), payload)
    log = ActionStateLog.from_raw([batch], SourceInfo(kind="kafka", location="t", topic="t<&>"))
    out = samples.write_kcat_jsonl(log, tmp_path_factory.mktemp("kcat") / "dump.jsonl")
    if not rows:
        assert out.read_bytes() == b""
        return
    back = ai.load_file(out, file_format="kcat-jsonl")
    assert back.source.topic == "t<&>"
    assert (back.raw.partition, back.raw.offset, back.raw.key, back.raw.value) == \
        (log.raw.partition, log.raw.offset, log.raw.key, log.raw.value)
    assert back.raw.timestamp_ms == log.raw.timestamp_ms


def test_public_names_and_light_import() -> None:
    assert set(samples.__all__) == {"SAMPLES", "FORMATS", "Sample", "generate", "scenario", "markers", "checkpoint", "path",
                                    "sample_dir", "write_samples", "write_kcat_jsonl", "TRACE_RULE", "INCONSISTENT",
                                    "run_recovery", "sample_trace",
                                    "fleet_records", "fleet_batches", "write_fleet"}
    assert {"N04", "G01", "S01", "P01", "production"} <= set(samples.SAMPLES)
    code = "import sys, agent_inspect.samples; print(sorted(m for m in ('pandas', 'pyarrow', 'greenlet') " \
           "if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_bad_names_are_clear_errors() -> None:
    with pytest.raises(ai.SourceError, match="no sample named 'nope'"):
        samples.path("nope")
    with pytest.raises(ai.SourceError, match="unknown sample format"):
        samples.path("G01", "csv")
    with pytest.raises(ai.SourceError, match="no sample named"):
        samples.generate("N99")


def test_cli_lists_and_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["samples", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == dict(samples.SAMPLES)
    assert main(["samples", "write", str(tmp_path), "--name", "G01", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["files"] == ["G01.jsonl", "G01.kcat.jsonl", "G01.parquet", "G01.markers.json", "G01.trace.log",
                             "G01.fixed-rule.trace.log"]
    for name in done["files"]:
        assert (tmp_path / name).read_bytes() == (COMMITTED / name).read_bytes()
    assert main(["samples", "write", str(tmp_path), "--name", "nope"]) == 2
    assert "no sample named 'nope'" in capsys.readouterr().err
