"""The result of a fleet scan: per-key and per-partition frames, bad records, failed partitions."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from agent_inspect._glossary import plural
from agent_inspect.fleet._task import CALLS_PREFIX

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog, RuntimeInfo, SourceSpec
    from agent_inspect.recovery import Reconstruction

__all__ = ["ScanResult", "RESULT_FILES", "OUTCOME_COLUMNS", "SUMMARY_LABELS", "tasks_text"]

SUMMARY_LABELS = {"windows": "windows", "failed": "failed windows", "records": "records", "keys": "business keys",
                  "errors": "bad records", "exposed_1301": "keys exposed to #1301",
                  "branch_change": "keys with a branch change", "lint_flagged": "keys with lint flags"}
"""The fleet-wide counts of :meth:`ScanResult.summary` in the words the CLI and the report label them with.

For example::

    s = ai.scan("sample_logs/production.jsonl").summary()
    {label: s[name] for name, label in ai.fleet.SUMMARY_LABELS.items()}   # {'windows': 1, 'failed windows': 0, …}
"""

OUTCOME_COLUMNS = {"reused": "reused", "resumed": "resumed", "rerun": "re-run", "failed": "failed",
                   "not_dispatched": "not dispatched"}
"""The per-rule columns that count tasks by outcome (REUSE, RESUME, RERUN, FAIL, NOT-DISPATCHED), each with its
word for readers: every task has one, so they add up to the tasks ``predict`` lists.

For example::

    s = ai.scan("sample_logs/production.jsonl").summary()["original"]
    s["tasks"] == sum(s[c] for c in ai.fleet.OUTCOME_COLUMNS)
"""

#: Files a scan writes beside its Parquet parts (``output=DIR``), read back by :meth:`ScanResult.open`.
RESULT_FILES = {"keys": "_scan_keys.parquet", "partitions": "_scan_partitions.parquet",
                "errors": "_scan_errors.parquet", "failures": "_scan_failures.parquet", "meta": "_scan.json"}
_FAILURE_COLUMNS = ["window", "partition", "path", "start", "end", "reason"]


@dataclass(frozen=True, eq=False)
class ScanResult:
    """A fleet scan: what a restore would do to every business key of a topic or dump.

    - ``keys``: one row per business key — partition, records, rounds, attempts, history bytes, bad
      records, ``exposed_1301`` (a round with more than one state before a later round: the upstream rule
      evicts the later rounds' saved completions, issue #1301), ``branch_change`` (conflicting roots at one
      round: what #1301's fix must still protect), lint flags,
      runtime evidence (key/value formats seen); then per rule ``<rule>_reused`` / ``_resumed`` /
      ``_rerun`` / ``_failed`` / ``_not_dispatched`` tasks (one per outcome: they add up to the key's tasks),
      ``_evictions``, ``_calls`` (durable calls executed again),
      ``_calls_subagent`` (sub-agent calls sent again: no call that leaves the job),
      ``_stale_reuse_risk`` (reuses at or after a round with conflicting roots) and ``_crashed``, then one
      ``<rule>_calls:<function>`` count per function the rule executes again anywhere (0 where a key does
      not; a sub-agent call is named by its sub-agent and caller, the ledger's ``label``, and counted here too):
      :meth:`calls_by_function` sums them over the fleet.
    - ``partitions``: one row per window read (records, keys, bad records, bytes, seconds, worker, the runtime,
      store flavour and store kind it was read as, and ``reread``: read again under the input's runtime and store
      kind, its own records alone having shown others).
    - ``runtime``: the runtime every key was predicted under: the one given, else the one the whole input's records
      show (as ``ai.load`` of it infers it; windows whose own records showed another were read again under it);
      ``runtime_provenance`` says which, with the evidence.
    - ``errors``: a sample of bad records per window, with their positions (counts are in ``partitions``).
    - ``failures``: windows whose task failed after retries, with the reason; the rest completed.
    - ``fleet_wide``: rules whose analysis spans partitions on this source (the snapshot Kafka store with
      K1 keys under the original rule: every subtask loads every key and its eviction ignores the key);
      their columns come from one task that read every window.

    For example::

        result = ai.scan("sample_logs/production.jsonl", markers=ai.samples.markers("production"))
        result.at_risk(10), result.keys, len(result.failures)   # windows that failed after retries
    """

    keys: pd.DataFrame
    partitions: pd.DataFrame
    errors: pd.DataFrame
    failures: pd.DataFrame
    source: str
    rules: tuple[str, ...]
    markers: Mapping[int, int] | None = None
    runtime: str = "auto"
    output: str | None = None
    dashboard: str | None = None
    seconds: float | None = None
    fleet_wide: tuple[str, ...] = ()
    spec: SourceSpec | None = field(default=None, repr=False)
    #: the scanned rules that are what-ifs (not the rule the runtime ships, or it in a store flavour other than
    #: the one the windows' records run)
    what_if: tuple[str, ...] = ()
    #: the original rule's store flavour the windows' records run ("segment", "kafka-k1", "fluss-k1"; several
    #: joined by "+"; None when no window held a parsed key)
    store_flavour: str | None = None
    #: where ``runtime`` came from, in words ("0.4: inferred from the whole input (…)", "0.3: given (…)"), as
    #: ``Recovery.provenance["runtime"]`` says it; None for a scan saved before it was recorded
    runtime_provenance: str | None = None

    def rule_label(self, rule: str) -> str:
        """``rule``, marked as a what-if when it is one (:func:`agent_inspect.log.rule_label`, under the runtime and
        store flavour the scan read its windows as)."""
        from dataclasses import replace

        from agent_inspect.log import rule_mark

        if rule not in self.what_if:
            return rule
        return rule_mark(rule, replace(_scanned_runtime(self.runtime), store_flavour=self.store_flavour)).label

    @property
    def store_flavour_text(self) -> str | None:
        """The store flavour in words: the flavour, or, when the windows differ, each flavour with its windows
        (``"mixed across windows: kafka-k1 (1 window), segment (3 windows)"``)."""
        if "store_flavour" not in self.partitions.columns:
            return self.store_flavour
        seen = self.partitions["store_flavour"].dropna().astype(str).value_counts()
        if len(seen) < 2:
            return self.store_flavour
        return "mixed across windows: " + ", ".join(f"{f} ({plural(int(seen[f]), 'window')})" for f in sorted(seen.index))

    @property
    def complete(self) -> bool:
        """True when every planned window was scanned."""
        return bool(self.failures.empty)

    def at_risk(self, n: int | None = 20, rule: str | None = None) -> pd.DataFrame:
        """Keys ranked by risk under ``rule`` (default: the first rule scanned, usually "original"):
        stale-reuse risk, then crashes, durable calls executed again, bodies run again (resumed or re-run),
        history size."""
        rule = rule or self.rules[0]
        if rule not in self.rules:
            raise ValueError(f"rule {rule!r} was not scanned; scanned: {', '.join(self.rules)}")
        k = self.keys
        score = pd.DataFrame({
            "risk": k[f"{rule}_stale_reuse_risk"], "crashed": k[f"{rule}_crashed"].astype(int),
            "calls": k[f"{rule}_calls"], "rerun": k[f"{rule}_rerun"] + k[f"{rule}_resumed"],
            "bytes": k["history_bytes"]})
        order = score.sort_values(["risk", "crashed", "calls", "rerun", "bytes"], ascending=False, kind="stable").index
        cols = ["business_key", "partition", "records", "attempts", "history_bytes", "exposed_1301", "branch_change",
                "lint_flags",
                *[f"{r}_{c}" for r in self.rules for c in ("stale_reuse_risk", "resumed", "rerun", "calls", "evictions")]]
        ranked = k.loc[order, cols].reset_index(drop=True)
        return ranked if n is None else ranked.head(n)

    def calls_by_function(self, rule: str | None = None) -> pd.Series:
        """Calls ``rule`` (default: the first rule scanned) would send again, per function, summed over every key,
        most first: its durable calls (``<rule>_calls``) and its sub-agent calls (``<rule>_calls_subagent``), each
        named by its sub-agent and caller (so the rows sum to both totals)."""
        rule = rule or self.rules[0]
        if rule not in self.rules:
            raise ValueError(f"rule {rule!r} was not scanned; scanned: {', '.join(self.rules)}")
        prefix = f"{rule}{CALLS_PREFIX}"
        cols = [c for c in self.keys.columns if c.startswith(prefix)]
        totals = self.keys[cols].sum().astype("int64") if cols else pd.Series(dtype="int64")
        totals.index = [c[len(prefix):] for c in cols]
        return totals.rename_axis("function").rename("calls").sort_values(ascending=False, kind="stable")

    def summary(self) -> dict[str, Any]:
        """Totals: windows, records, keys, bad records, failures, and per rule its tasks, each outcome's count
        (:data:`OUTCOME_COLUMNS`: they add up to the tasks), evictions and calls (also per function id)."""
        k = self.keys
        out: dict[str, Any] = {
            "source": self.source, "runtime": self.runtime, "runtime_provenance": self.runtime_provenance,
            "store_flavour": self.store_flavour, "windows": len(self.partitions) + len(self.failures),
            "failed": len(self.failures), "records": int(self.partitions["records"].sum()) if len(self.partitions) else 0,
            "keys": len(k), "errors": int(self.partitions["errors"].sum()) if len(self.partitions) else 0,
            "exposed_1301": int(k["exposed_1301"].sum()) if len(k) else 0,
            "branch_change": int(k["branch_change"].sum()) if len(k) else 0,
            "lint_flagged": int((k["lint_flags"] != "").sum()) if len(k) else 0,
        }
        for r in self.rules:
            out[r] = {c: int(k[f"{r}_{c}"].sum()) if len(k) and f"{r}_{c}" in k.columns else 0
                      for c in (*OUTCOME_COLUMNS, "evictions", "calls", "calls_subagent", "stale_reuse_risk")}
            out[r]["tasks"] = sum(out[r][c] for c in OUTCOME_COLUMNS)
            out[r]["crashed_keys"] = int(k[f"{r}_crashed"].sum()) if len(k) else 0
            out[r]["what_if"] = r in self.what_if
            out[r]["rule_label"] = self.rule_label(r)
            out[r]["calls_by_function"] = {str(f): int(n) for f, n in self.calls_by_function(r).items()}
        return out

    def to_dict(self) -> dict[str, Any]:
        """The summary, the at-risk ranking and the failures as JSON-ready data (the CLI's ``--json``)."""
        return {"summary": self.summary(),
                "at_risk": json.loads(self.at_risk(20).to_json(orient="records")),
                "failures": json.loads(self.failures.to_json(orient="records")),
                "output": self.output, "dashboard": self.dashboard}

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the frames and the scan's settings beside its Parquet parts (done by ``output=``)."""
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        for name in ("keys", "partitions", "errors", "failures"):
            frame = getattr(self, name).copy()
            if "output" in frame.columns:
                frame["output"] = frame["output"].map(lambda v: json.dumps(list(v)) if v is not None else "[]")
            frame.to_parquet(root / RESULT_FILES[name], index=False)
        meta = {"source": self.source, "rules": list(self.rules), "what_if": list(self.what_if), "runtime": self.runtime,
                "runtime_provenance": self.runtime_provenance, "store_flavour": self.store_flavour, "markers": None if self.markers is None else {str(p): o for p, o in self.markers.items()},
                "seconds": self.seconds, "fleet_wide": list(self.fleet_wide), "output": self.output}
        (root / RESULT_FILES["meta"]).write_text(json.dumps(meta, sort_keys=True))
        return root

    @classmethod
    def open(cls, directory: str | os.PathLike[str]) -> ScanResult:
        """Reopen a scan saved with ``output=DIR`` (its frames; the records stay in the Parquet parts)."""
        from agent_inspect._errors import SourceError

        root = Path(directory)
        if not (root / RESULT_FILES["meta"]).is_file():
            raise SourceError(f"{str(root)!r} is not a scan directory (no {RESULT_FILES['meta']}); "
                              f"write one with ai.scan(source, output=DIR)")
        meta = json.loads((root / RESULT_FILES["meta"]).read_text())
        frames = {n: pd.read_parquet(root / RESULT_FILES[n]) for n in ("keys", "partitions", "errors", "failures")}
        keys = frames["keys"].columns
        lacks = (["the store flavour"] if "store_flavour" not in meta else []) + \
            (["the NOT-DISPATCHED counts"] if [r for r in meta["rules"] if f"{r}_reused" in keys
                                               and f"{r}_not_dispatched" not in keys] else [])
        if lacks:   # read as they are, they would say "no parsed key" and "0 tasks not dispatched": not known
            raise SourceError(f"{str(root)!r} was saved by an older agent_inspect, without {' and '.join(lacks)}; "
                              f"re-run the scan (ai.scan(source, output=DIR) or agent-inspect scan SOURCE -o DIR)")
        if "output" in frames["partitions"].columns:
            frames["partitions"]["output"] = frames["partitions"]["output"].map(json.loads)
        markers = meta.get("markers")
        # the records: here when this is the scan's output directory, else where the scan wrote them (if anywhere)
        here = any(p.is_dir() and p.name.startswith("partition=") for p in root.iterdir())
        output = str(root) if here else meta.get("output")
        return cls(keys=frames["keys"], partitions=frames["partitions"], errors=frames["errors"],
                   failures=frames["failures"], source=meta["source"], rules=tuple(meta["rules"]),
                   markers=None if markers is None else {int(p): int(o) for p, o in markers.items()},
                   runtime=meta.get("runtime", "auto"), what_if=tuple(meta.get("what_if", ())), output=output, seconds=meta.get("seconds"),
                   fleet_wide=tuple(meta.get("fleet_wide", ())), store_flavour=meta.get("store_flavour"),
                   runtime_provenance=meta.get("runtime_provenance"))

    def load_key(self, business_key: str) -> ActionStateLog:
        """The log of one business key: from the scan's Parquet output when there is one, else from the source."""
        from agent_inspect.log import load

        if self.output is not None:
            return load(self.output, business_keys=[business_key])
        if self.source.startswith("kafka://"):
            spec = self.spec  # the client settings the scan used (SASL/SSL…), when this result still has them
            options: dict[str, Any] = {"progress": False}
            if spec is not None:
                options.update(config=dict(spec.config), timeout=spec.timeout)
            return load(self.source, business_keys=[business_key], **options)
        return load(self.source, business_keys=[business_key])

    def reconstruct(self, business_key: str, rule: str | None = None) -> Reconstruction:
        """The reconstruction of one key (its log reopened, see :meth:`load_key`) under ``rule``."""
        from agent_inspect.recovery import reconstruct

        runtime = _scanned_runtime(self.runtime)
        return reconstruct(self.load_key(business_key), rule=rule or self.rules[0], markers=self.markers,
                           runtime=runtime.name if runtime.name == runtime.model else "auto")

    def __repr__(self) -> str:
        s = self.summary()
        counts = ", ".join((plural(s["windows"], "window"), plural(s["records"], "record"), plural(s["keys"], "key"),
                            plural(s["errors"], "bad record")))
        return f"ScanResult({s['source']!r}, runtime {s['runtime']}: {counts}, {plural(s['failed'], 'failed window')})"

    def _repr_html_(self) -> str:
        from agent_inspect._html import escape, frame_html, labelled

        s = self.summary()
        per_rule = "; ".join(
            f"<code>{escape(self.rule_label(r))}</code>: {escape(tasks_text(s[r]))}; "
            f"{plural(s[r]['rerun'] + s[r]['resumed'], 'body', 'bodies')} "
            f"re-run, {plural(s[r]['calls'], 'durable call')} re-executed, {plural(s[r]['stale_reuse_risk'], 'reuse')} "
            "at risk" for r in self.rules)
        fail = (f" {labelled('b', plural(s['failed'], 'window') + ' failed', term='failed windows')}." if s["failed"] else "")
        flavour = f", store flavour {escape(self.store_flavour_text)}" if self.store_flavour_text else ""
        html = (f"<div class='agent-inspect ai-scan-result'><p><b>Fleet scan</b> of <code>{escape(self.source)}</code> "
                f"(runtime {escape(self.runtime)}{flavour}): "
                f"{labelled('span', plural(s['windows'], 'window'), term='windows')}, {plural(s['records'], 'record')}, "
                f"{plural(s['keys'], 'key')}, {plural(s['errors'], 'bad record')}, "
                f"{labelled('span', plural(s['exposed_1301'], 'key') + ' exposed to #1301', term='exposed to #1301')}."
                f"{fail}</p><p>{per_rule}</p>"
                + frame_html(self.at_risk(10), caption="most at risk"))
        if s["failed"]:
            html += frame_html(self.failures[_FAILURE_COLUMNS], caption="failed windows")
        return html + "</div>"


def tasks_text(counts: Mapping[str, int]) -> str:
    """One rule's tasks of a scan summary and what each outcome takes of them, in words.

    For example::

        counts = {"tasks": 4, "reused": 1, "resumed": 0, "rerun": 2, "failed": 0, "not_dispatched": 1}
        ai.fleet.tasks_text(counts)   # '4 tasks: 1 reused, 0 resumed, 2 re-run, 0 failed, 1 not dispatched'
    """
    return (f"{plural(counts['tasks'], 'task')}: "
            + ", ".join(f"{int(counts[c]):,} {word}" for c, word in OUTCOME_COLUMNS.items()))


def _scanned_runtime(runtime: str) -> RuntimeInfo:
    """The runtime a scan ran as; "unknown" (no window held a decoded record) models the default runtime."""
    from agent_inspect.log import RUNTIMES, RuntimeInfo, resolve_runtime

    if runtime in RUNTIMES or runtime == "auto":
        return resolve_runtime(runtime)
    return RuntimeInfo(runtime, True, "no window held a decoded record")
