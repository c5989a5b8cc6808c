"""The sample catalogue: generate a sample, write every sample file, find the committed ones."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import SourceError
from agent_inspect.samples._trace import TRACE_RULE

if TYPE_CHECKING:
    from agent_inspect._types import RuleLike
    from agent_inspect.agents import Agent
    from agent_inspect.executor import ReplayExecutor
    from agent_inspect.log import ActionStateLog
    from agent_inspect.samples._driver import AttemptInfo, CheckpointInfo

__all__ = ["SAMPLES", "SHOWS", "FORMATS", "Sample", "scenario", "generate", "markers", "path", "write_samples",
           "sample_dir", "run_recovery", "sample_trace"]

_PRODUCTION = ("production", "production_k1")
#: samples written as a post-0.4 runtime writes them (V4 values, K2 keys): name -> the scenario they retell
_V4 = {"subagents_v4": "S05"}
#: the production-like sample whose operator is post-0.4 main (V4, refresh rows, routing; K2 keys)
_PRODUCTION_V4 = "production_v4"

SAMPLES: Mapping[str, str] = {
    "N04": "cascade over two inputs: the #1301 reproduction (original reruns B, fixed reuses all)",
    "N07": "an incomplete action in a later round: original re-runs it (the model call repeats), fixed resumes",
    "G01": "canonical A-B-A branch change: C@6 read B's memory and must not be reused",
    "G02": "same-round child collision: B's W(x) must not reuse A's child at the same seq",
    "G03": "repeated failure: after a fixed-rule attempt re-ran A, C's stale record must stay dead",
    "S01": "sub-agent caller incomplete, child complete: P resumes, the child is reused",
    "S05": "sub-agent calls over two inputs: original re-runs B's caller and child agent",
    "P01": "key text with '_' under K1 keys: the snapshot's strict parser crashes",
    "subagents": "sub-agent calls over two keys (S03/S05 shapes): the original rule re-runs the child agent",
    "subagents_v4": "S05's sub-agent calls as post-0.4 main writes them: V4 values (subagentResultEvents), K2 keys",
    "production": "support agent, 40 keys, 4 attempts under the original rule, a branch change (K1.5 keys)",
    "production_k1": "the production story, smaller (14 keys), with K1 keys (no '_' in key texts)",
    "production_v4": "the support agent as post-0.4 main runs it: V4 values, routed chat with a fallback, a "
                     "mid-action checkpoint restored from its refresh rows (K2 keys)",
}
"""sample name -> what it shows (one line)"""

#: sample name -> what to look for (README text)
SHOWS: Mapping[str, str] = {
    "N04": "Restoring with its markers and replaying A, B: `original` reuses A's IA and WA, then count > 1 "
           "at (k, 5) evicts round 6, so B's IA and WA re-run (the model is asked again); `fixed` reuses all four.",
    "G01": "Restoring with its markers and replaying A, C: `original` reuses A and re-runs C; `naive` would "
           "reuse C (stale: it read B's memory); `fixed` invalidates k >= 5 (B's root conflicts with A's) and "
           "re-runs both.",
    "N07": "Restoring and replaying A, B: `original` evicts round 6, so B's WA re-runs from scratch and "
           "asks the model again; `fixed` reuses A, IA of B, and resumes WA, replaying the recorded answer.",
    "G02": "Restoring and replaying B (a different input at seq 5): B's IA emits the same W(x) as A's did. "
           "`original` and `naive` reuse WA's record (stale: computed from A's memory); `fixed` invalidates "
           "k >= 5 on the root conflict and re-runs WA.",
    "G03": "G01's log plus a third attempt that ran the `fixed` rule and re-executed A@5 (same state key as "
           "attempt 1's record, written after C@6). Replaying A, C: `fixed`'s rebuild drops B and the stale "
           "C@6, so A is reused and C re-runs; `lookup-only` would re-run both.",
    "S05": "Restoring and replaying A, B: `original` reuses A's caller, evicts round 6 and re-runs B's caller, "
           "whose call re-executes the child agent; `fixed` reuses both callers (children not dispatched).",
    "S01": "Restoring and replaying A: the caller P resumes and re-issues the call with the same ids; the "
           "regenerated bootstrap (new id, same attributes) finds the child's completed record, so CA is "
           "reused under every rule.",
    "P01": "Written by a store that parses K1 keys from the right (the snapshot's Kafka store cannot even "
           "write this history: its strict parser throws on WA's first miss). Restoring it with the snapshot "
           "Kafka store under `original` crashes at A's lookup (`parser-crash`); `fixed` reuses all four. "
           "Lints flag the key text.",
    "subagents": "Keys order-1 and order-2, each input calling sub-agent `reviewer` (CA1 → CA2); the job "
                 "died inside order-2's second call. Under `original` each key's first lookup sees count > 1 "
                 "and evicts the next round, so both second rounds re-run, caller and whole child graph. "
                 "Under `fixed` order-1 is reused and order-2's caller resumes, re-issuing its call with the "
                 "same ids: the children are reused.",
    "subagents_v4": "Every record carries `subagentResultEvents` (V4, `[]` in initial and call writes); the "
                    "child CA's completion holds its answer there, without lineage, and not in `outputEvents`. "
                    "`agent-inspect summary` reports runtime `main` from them, and its recovery runs as main does "
                    "(addendum §1.1): a re-run child's output goes to its call as a result event, not as a "
                    "forwarded envelope, and a reused child would answer from its stored result events. Its one key, "
                    "S05's `k`, shows by its digest: a K2 key holds no key text (spec §4.6), so that digest is "
                    "the business key every verb shows and takes.",
    "production": "A customer-support agent (`triage` + `audit` roots, ReAct-style `chat` ↔ `tool_call`, "
                  "compare questions fanning out, refund drafts reviewed by sub-agent `reviewer`; durable "
                  "calls `support_agent.vector_store.query`, `support_agent.chat_model.chat` with retries on "
                  "timeouts, `support_agent.tools.*` with a reconcilable `create_ticket`). Every recovery "
                  "ran the upstream `original` rule: count > 1 evictions re-ran later rounds, visible as "
                  "repeated initial/call/completed writes of one state key. Attempt 3 replays one key's "
                  "inputs in a different order: `fixed` reports a root conflict there. The last recovery "
                  "restores a checkpoint taken mid-round (a task in flight keeps its event id). Replaying "
                  "that recovery under `fixed` shows one identity mismatch (a re-executed parent's new "
                  "output id against its reused child's record: the known false mismatch of spec §10.3). "
                  "Some key texts contain `_` (harmless under K1.5).",
    "production_k1": "Under K1 the snapshot's Kafka store evicts across keys (case N09), so `original` "
                     "shows `cross-key` evictions too.",
    "production_v4": "The production support agent with post-0.4 main as the operator (`runtime=\"main\"`): every "
                     "record is V4 (`subagentResultEvents`; the reviewer child's completions carry its answer "
                     "there, without lineage), sub-agent calls reserve a PENDING caller slot first, and the first "
                     "chat turn of a question is routed (addendum §4): `route:support-router`, then "
                     "`chat:support-router:gpt-large` (FAILED on a timeout for some prompts) and the fallback "
                     "`chat:support-router:gpt-mini`, then `judge:support-router`, all with an empty `argsDigest`. "
                     "Every checkpoint re-appends each retained state byte-identical after its marker (refresh "
                     "rows, #1158/#1175): `reconstruct` shows them as `refresh`, never as attempts. The restore "
                     "shown is of a checkpoint taken in the middle of the last input's routed chat action (the fallback had "
                     "answered, the judge had not run; the job died right after it): its refresh rows bring the "
                     "pending state back, so the action RESUMEs with the route, the failed primary and the "
                     "fallback served from the record (zero repeated calls) and only the judge runs. Under `0.3` "
                     "(`--runtime 0.3`) the rebuild reads nothing before the marker and the action re-runs every "
                     "call. `agent-inspect summary` reports runtime `main` from the V4 records.",
}

FORMATS = ("jsonl", "kcat", "parquet", "markers")
"""file formats of every sample (``path(name, fmt)``)"""


@dataclass(frozen=True)
class Sample:
    """A generated sample: the topic as a log, and the restore it shows.

    ``markers``, ``plan`` and ``memory`` describe that restore: ``ai.reconstruct(sample.log,
    markers=sample.markers)``, or step through it with :meth:`executor`. ``checkpoints`` and
    ``attempts`` tell the job's story; ``agent`` is the agent that wrote the log.

    For example::

        sample = ai.samples.scenario("G01")            # the log, the restore it shows and the story
        sample.name, sample.markers, sample.info()
        ex = sample.executor()
        ex.run(); ex.counters
    """

    name: str
    description: str
    case: str | None
    log: ActionStateLog
    markers: tuple[Mapping[int, int], ...]
    plan: Mapping[str, Any]
    memory: Mapping[str, Mapping[str, Any]]
    restored_from: int
    checkpoints: tuple[CheckpointInfo, ...]
    attempts: tuple[AttemptInfo, ...]
    agent: Agent
    key_format: str
    num_partitions: int

    def executor(self, rule: RuleLike = "fixed", **options: Any) -> ReplayExecutor:
        """A :class:`~agent_inspect.ReplayExecutor` of the restore this sample shows, with its agent.

        The payloads are the generator's own, so they are trusted (unpickled) and memory envelopes
        decoded; ``options`` override any executor argument.
        """
        from agent_inspect.executor import Policies, ReplayExecutor, json_envelope_decoder

        kwargs: dict[str, Any] = dict(agent=self.agent, plan=self.plan, markers=list(self.markers),
                                      memory=self.memory, rule=rule, memory_decoder=json_envelope_decoder,
                                      policies=Policies(trust_payloads=True))
        kwargs.update(options)
        return ReplayExecutor(self.log, **kwargs)

    def info(self) -> dict[str, Any]:
        """The markers file's content (JSON-able)."""
        return {
            "sample": self.name, "description": self.description, "case": self.case,
            "key_format": self.key_format, "partitions": self.num_partitions, "records": len(self.log.records),
            "markers": [dict(m) for m in self.markers],
            "restore": {"checkpoint": self.restored_from, "restored_seq": dict(self.plan["restored_seq"]),
                        "pending": [list(t) for t in self.plan["pending"]],
                        "short_term": {k: dict(v) for k, v in self.memory.items()},
                        "replay": [list(i) for i in self.plan["inputs"]]},
            "checkpoints": [{"id": c.id, "attempt": c.attempt, "marker": dict(c.marker),
                             "source_position": c.source_position, "in_flight": c.in_flight}
                            for c in self.checkpoints],
            "attempts": [{"attempt": a.attempt, "restored_from": a.restored_from, "rule": a.rule,
                          "records": a.records, "ended": a.ended, "note": a.note} for a in self.attempts],
        }


def _factory(name: str, *, key_format: str, num_partitions: int, value_format: str = "V3",
             runtime: str = "0.3") -> Any:
    """``Job(agent, source, **overrides)`` with this sample's seed and defaults."""
    from functools import partial

    from agent_inspect.samples._driver import Job

    return partial(Job, key_format=key_format, seed=zlib.crc32(name.encode()), num_partitions=num_partitions,
                   value_format=value_format, runtime=runtime)


def scenario(name: str) -> Sample:
    """Generate sample ``name`` (see :data:`SAMPLES`) with its story; deterministic.

    For example::

        sample = ai.samples.scenario("N04")
        ai.reconstruct(sample.log, markers=sample.markers).records["status"].value_counts()
    """
    if name not in SAMPLES:
        raise SourceError(f"no sample named {name!r}; choose one of {', '.join(SAMPLES)}")
    if name in _PRODUCTION:
        from agent_inspect.samples._production import KEY_FORMATS, production_story

        make = _factory(name, key_format=KEY_FORMATS[name], num_partitions=4)
        job = production_story(make, k1=name == "production_k1")
        restore, case = job.attempts[-1].restored_from, None
        assert restore is not None    # the story ends with a restored attempt
    elif name == _PRODUCTION_V4:
        from agent_inspect.samples._production_v4 import production_v4_story

        job, restore = production_v4_story(_factory(name, key_format="K2", num_partitions=4, runtime="main"))
        case = None
    elif name in _V4:
        from agent_inspect.samples._small import SCENARIOS

        _, run = SCENARIOS[_V4[name]]
        case = None
        make = _factory(name, key_format="K2", num_partitions=1, value_format="V4")
        job, restore = run(make)
    else:
        from agent_inspect.samples._small import SCENARIOS

        case, run = SCENARIOS[name]
        make = _factory(name, key_format="K1.5", num_partitions=1)
        job, restore = run(make)
    point = job.restore_point(restore)
    log = job.log
    if name in _V4:
        from agent_inspect.samples._v4 import with_result_events

        log = with_result_events(log)
    return Sample(
        name=name, description=SAMPLES[name], case=case, log=log,
        markers=tuple(point["markers"]),
        plan={"inputs": point["replay"], "restored_seq": point["restored_seq"], "pending": point["pending"]},
        memory=point["short_term"], restored_from=restore, checkpoints=job.checkpoints,
        attempts=tuple(job.attempts), agent=job.agent, key_format=job.key_format,
        num_partitions=job.num_partitions)


def generate(name: str) -> ActionStateLog:
    """The log of sample ``name`` as an :class:`~agent_inspect.log.ActionStateLog` (deterministic).

    For example::

        g01 = ai.samples.generate("G01")               # the same bytes as sample_logs/G01.jsonl
        len(g01.records)
    """
    return scenario(name).log


def sample_dir() -> Path:
    """The committed ``sample_logs/`` directory (of the source checkout, or the working directory).

    For example::

        sorted(p.name for p in ai.samples.sample_dir().glob("*.markers.json"))[:3]
    """
    for root in (Path(__file__).resolve().parents[2] / "sample_logs", Path.cwd() / "sample_logs"):
        if root.is_dir():
            return root
    raise SourceError("no sample_logs/ directory found; write one with `python -m agent_inspect.samples DIR`")


def path(name: str, fmt: str = "jsonl") -> Path:
    """The committed file of sample ``name`` in ``fmt``: "jsonl", "kcat" (kcat -J), "parquet" or "markers".

    For example::

        ai.samples.path("production"), ai.samples.path("G01", "parquet"), ai.samples.path("G01", "trace")
    """
    from agent_inspect.samples._write import FILE_SUFFIXES

    if name not in SAMPLES:
        raise SourceError(f"no sample named {name!r}; choose one of {', '.join(SAMPLES)}")
    fmt = {"kcat-jsonl": "kcat"}.get(fmt, fmt)
    if fmt not in FILE_SUFFIXES:
        raise SourceError(f"unknown sample format {fmt!r}; use one of {', '.join(FILE_SUFFIXES)}")
    found = sample_dir() / f"{name}{FILE_SUFFIXES[fmt]}"
    if not found.is_file():
        raise SourceError(f"sample file {found} is missing; regenerate with `python -m agent_inspect.samples`")
    return found


def run_recovery(sample: Sample | str, rule: str = TRACE_RULE) -> tuple[ReplayExecutor, list[dict[str, Any]]]:
    """Run ``sample``'s restore (a :class:`Sample` or its name) with the executor under ``rule``; returns the
    executor (``.to_log()`` is the topic after the recovery) and the Trace Log records the runtime writes
    meanwhile. Deterministic.

    For example::

        ex, trace_records = ai.samples.run_recovery(ai.samples.scenario("G01"), "original")
        ex.to_log().records.shape, len(trace_records)
    """
    from agent_inspect.trace import trace_from_executor

    if isinstance(sample, str):      # a name, as markers() / path() / checkpoint() take
        sample = scenario(sample)
    seed = zlib.crc32(f"{sample.name}:{rule}".encode())
    ex = sample.executor(rule=rule, seed=seed)
    ex.run()
    ts = sample.log.records["timestamp"].dropna()
    start = int(ts.max().value // 1_000_000) + 47_000 if len(ts) else 0
    inputs = [v for _k, v in sample.plan["inputs"]]
    return ex, trace_from_executor(ex, agent_name=f"{sample.name}-agent", inputs=inputs, start_ms=start, seed=seed)


def sample_trace(sample: Sample | str, rule: str = TRACE_RULE) -> list[dict[str, Any]]:
    """The Trace Log records of ``sample``'s restore (a :class:`Sample` or its name), run by the executor
    under ``rule``.

    For example::

        records = ai.samples.sample_trace("G01")   # the Trace Log of its restore, as G01.trace.log holds it
        records[0]
    """
    return run_recovery(sample, rule)[1]


def _write_traces(s: Sample, base: Path) -> list[Path]:
    """The sample's Trace Log (and its inconsistent variant, if it has one)."""
    from agent_inspect.samples._trace import INCONSISTENT, inconsistent_suffix
    from agent_inspect.samples._write import FILE_SUFFIXES
    from agent_inspect.sources import write_trace

    out = [write_trace(sample_trace(s, TRACE_RULE), f"{base}{FILE_SUFFIXES['trace']}")]
    if s.name in INCONSISTENT:
        other = INCONSISTENT[s.name]
        out.append(write_trace(sample_trace(s, other), f"{base}{inconsistent_suffix(other)}"))
    return out


def markers(name: str) -> list[dict[int, int]]:
    """The recovery markers of the restore sample ``name`` shows (from its committed markers file).

    For example::

        ai.samples.markers("production")               # [{partition: offset}, ...] of the restore it shows
    """
    import json

    data = json.loads(path(name, "markers").read_text(encoding="utf-8"))
    return [{int(p): int(o) for p, o in m.items()} for m in data["markers"]]


def checkpoint(name: str) -> Path:
    """The checkpoint directory of the restore sample ``name`` shows: a real Flink 2.x retained checkpoint
    (``chk-N/_metadata``, its keyed state inline) holding the sample's markers, restored seqNums, pending task
    and buffered input. It ships inside the package; ``scripts/gen_checkpoints.sh`` writes it with real Flink.

    For example::

        chk = ai.checkpoint.read(ai.samples.checkpoint("production"))   # the latest chk-N in it
        ai.predict(ai.load(ai.samples.path("production")), markers=chk)  # restores what the checkpoint holds
    """
    found = Path(__file__).resolve().parent / "checkpoints" / name
    if not found.is_dir():
        have = sorted(p.name for p in found.parent.iterdir() if p.is_dir())
        raise SourceError(f"sample {name!r} ships no checkpoint; these do: {', '.join(have)}")
    return found


def write_samples(directory: str | os.PathLike[str] | None = None, *,
                  names: Iterable[str] | None = None) -> list[Path]:
    """Generate samples (default: all) and write each in every format, plus ``README.md``.

    Files per sample: ``<name>.jsonl`` (plain JSONL), ``<name>.kcat.jsonl`` (kcat -J),
    ``<name>.parquet`` and ``<name>.markers.json``. Output is byte-identical on every run.

    For example::

        ai.samples.write_samples("regenerated/", names=["G01"])   # byte-identical to sample_logs/G01.*
    """
    from agent_inspect.samples._readme import readme
    from agent_inspect.samples._write import FILE_SUFFIXES, write_kcat_jsonl, write_markers
    from agent_inspect.sources import write_jsonl, write_parquet

    out = Path(directory) if directory is not None else Path(__file__).resolve().parents[2] / "sample_logs"
    out.mkdir(parents=True, exist_ok=True)
    chosen = list(SAMPLES) if names is None else list(names)
    written: list[Path] = []
    samples = []
    for name in chosen:
        s = scenario(name)
        samples.append(s)
        base = out / name
        written.append(write_jsonl(s.log, f"{base}{FILE_SUFFIXES['jsonl']}"))
        written.append(write_kcat_jsonl(s.log, f"{base}{FILE_SUFFIXES['kcat']}"))
        written.append(write_parquet(s.log, f"{base}{FILE_SUFFIXES['parquet']}"))
        written.append(write_markers(s.info(), f"{base}{FILE_SUFFIXES['markers']}"))
        written += _write_traces(s, base)
    if names is None:
        readme_path = out / "README.md"
        readme_path.write_text(readme(samples, SHOWS), encoding="utf-8")
        written.append(readme_path)
    return written
