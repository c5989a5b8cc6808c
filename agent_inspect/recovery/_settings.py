"""One resolved set of recovery settings (rule, markers, runtime, restore), so every verb answers one question the
same way. The default rule is the one the log's runtime ships; any other is a what-if, and says so.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from agent_inspect._errors import RecoveryError
from agent_inspect._glossary import count_words
from agent_inspect._types import MarkersLike, RuleLike
from agent_inspect.codec import MarkerSource, PlanSource
from agent_inspect.log import RuleMark, RuntimeInfo, resolve_runtime, rule_mark
from agent_inspect.recovery._plan import ReplayPlan
from agent_inspect.recovery._planview import PlanLike, as_plan
from agent_inspect.recovery._rebuild import Markers, normalize_markers, rebuild, rebuild_start, source_kind_of
from agent_inspect.recovery._refresh import check_moved_marker, refresh_positions
from agent_inspect.rules import FLAVOURS, guard_own, resolve_rule
from agent_inspect.store import DivergenceRule, RecoverySession, RuntimeModel, runtime_model

if TYPE_CHECKING:
    import pandas as pd

    from agent_inspect._types import LogLike
    from agent_inspect.log import ActionStateLog

__all__ = ["Recovery", "CallMatching", "RuleLike", "MarkersLike", "STORE_FLAVOURS", "SETTING_NAMES"]

CallMatching = Literal["position", "function-id"]
"""How a replayed durable call is matched to a recorded one: by position or by function id."""
STORE_FLAVOURS = ("auto", *FLAVOURS)
"""Store flavours of the original rule (spec §8.2–§8.3): ``"auto"`` picks the log's (Kafka/Fluss snapshot or segment)."""
SETTING_NAMES = ("rule", "markers", "runtime", "store_flavour", "kafka_pending", "plan", "agent", "call_matching",
                 "expected_fingerprint", "max_parallelism")
"""The overrides every verb accepts (``recovery=`` aside), with the same names and meanings everywhere."""


@dataclass(frozen=True)
class Recovery:
    """How a restore runs: resolved once, read by every verb.

    - ``rule``: the divergence rule. Default: the rule ``runtime`` ships; any other is a what-if (:attr:`what_if`).
    - ``markers``: ``{partition: offset}`` maps; None rebuilds from the whole loaded log, ``[]`` is a fresh start.
    - ``runtime``: the upstream version that wrote the log ("0.3", "0.4", "main"), given or inferred, with its
      evidence; ``model`` its recovery behaviours (:func:`agent_inspect.store.runtime_model`, with ``kafka_pending``).
    - ``store_flavour``: the original rule's store flavour ("auto", "kafka-k1", "fluss-k1", "segment").
    - ``plan`` / ``agent``: None means the markers' source's plan (a checkpoint: :attr:`plan_source`), else the
      log's own later attempt, and the log's agent as recorded.
    - ``call_matching`` ("position" or "function-id", #1016), ``expected_fingerprint``, ``max_parallelism``: how
      replayed calls meet their slots, and the K2 restore checks (spec §6.5).
    - ``provenance``: where each setting came from, in words; ``given``: the settings passed explicitly.

    For example::

        r = ai.Recovery.for_log(log, markers=ai.samples.markers("production"))
        print(r.describe())                      # every setting and where it came from
        ai.predict(log, recovery=r), ai.reconstruct(log, recovery=r)
    """

    rule: DivergenceRule
    markers: Markers
    runtime: RuntimeInfo
    model: RuntimeModel
    store_flavour: str = "auto"
    plan: ReplayPlan | None = None
    agent: object | None = None
    call_matching: CallMatching = "position"
    expected_fingerprint: str | None = None
    max_parallelism: int | None = None
    provenance: Mapping[str, str] = field(default_factory=dict, compare=False)
    given: Mapping[str, object] = field(default_factory=dict, compare=False, repr=False)
    plan_source: PlanSource | None = field(default=None, repr=False)

    @classmethod
    def for_log(cls, log: LogLike | pd.DataFrame | None = None, *, rule: RuleLike | None = None,
                markers: MarkersLike = None, runtime: str | RuntimeInfo | None = None,
                store_flavour: str | None = None, kafka_pending: str | None = None, plan: PlanLike | None = None,
                agent: object | None = None, call_matching: CallMatching | None = None,
                expected_fingerprint: str | None = None, max_parallelism: int | None = None) -> Recovery:
        """Resolve the settings for ``log`` (an ``ActionStateLog``, a records frame, or None); every argument left
        None takes its default (the inferred runtime, the rule it ships, the whole log, the plan the log implies)."""
        info = resolve_runtime("auto" if runtime is None else runtime, log)
        provenance = {"runtime": f"{info.name}: {'inferred' if info.inferred else 'given'} ({info.evidence})"}
        flavour = "auto" if store_flavour is None else store_flavour
        if flavour not in STORE_FLAVOURS:
            raise RecoveryError(f"unknown store flavour {flavour!r}; use one of {', '.join(STORE_FLAVOURS)}")
        resolved_rule = _resolve_rule(rule, info, flavour)
        mark = rule_mark(resolved_rule, info)
        # an unknown runtime is modelled as the current release: name the one whose rule and behaviours apply
        shipper = info.name if info.name == info.model else f"{info.model} (the model of an {info.name} runtime)"
        if mark.what_if:      # the one what-if mark every label carries: "fixed (what-if; 0.4 ships original): given"
            provenance["rule"] = f"{mark.label}: given"
        elif rule is None and flavour == "auto":
            provenance["rule"] = f"{resolved_rule.name}: the rule {shipper} ships"
        else:
            provenance["rule"] = f"{mark.name}: given (the rule {shipper} ships)"
        provenance["store_flavour"] = "from the log's source" if flavour == "auto" else "given"
        marker_list, provenance["markers"] = _markers(markers)
        model = runtime_model(info, kafka_pending=kafka_pending)
        if kafka_pending == "marker" and log is not None:
            check_moved_marker(log, info, markers)
        provenance["model"] = ("kafka_pending given" if kafka_pending is not None else
                               f"the recovery behaviours of {shipper}")
        if plan is not None:
            if not isinstance(plan, ReplayPlan | Mapping):
                raise RecoveryError("plan must be a ReplayPlan or a mapping of its fields ({'inputs': [(key, value), "
                                    f"...]}}), got {type(plan).__name__}")
            plan = as_plan(plan)   # the mapping form too ({"inputs": [(key, value), ...]}), as the executor takes it
        plan_source, provenance["plan"] = _plan_source(markers, plan)
        provenance["agent"] = "given" if agent is not None else "as recorded in the log"
        matching: CallMatching = "position" if call_matching is None else call_matching
        if matching not in ("position", "function-id"):
            raise RecoveryError(f"unknown call_matching {matching!r}; use 'position' or 'function-id'")
        if max_parallelism is not None and (isinstance(max_parallelism, bool) or not isinstance(max_parallelism, numbers.Integral)
                                            or not 1 <= max_parallelism <= 1 << 15):   # "128" was a numpy error
            raise RecoveryError(f"max_parallelism takes the job's maximum parallelism, an int from 1 to 32768 "
                                f"(Flink's range), got {max_parallelism!r}")
        values = (rule, markers, runtime, store_flavour, kafka_pending, plan, agent, call_matching,
                  expected_fingerprint, max_parallelism)    # in the order of SETTING_NAMES
        given = {name: value for name, value in zip(SETTING_NAMES, values, strict=True) if value is not None}
        return cls(rule=resolved_rule, markers=marker_list, runtime=info, model=model, store_flavour=flavour,
                   plan=plan, agent=agent, call_matching=matching, expected_fingerprint=expected_fingerprint,
                   max_parallelism=max_parallelism, provenance=provenance, given=given, plan_source=plan_source)

    @classmethod
    def resolve(cls, log: LogLike | pd.DataFrame | None = None, recovery: Recovery | None = None,
                **overrides: object) -> Recovery:
        """What every verb does first: ``recovery`` with ``overrides`` applied, or settings for ``log``. Overrides
        that are None are not given; one of ``rule`` or ``runtime`` re-resolves what depends on it."""
        unknown = set(overrides) - set(SETTING_NAMES)
        if unknown:
            raise RecoveryError(f"unknown recovery {count_words(len(unknown), 'setting')} {', '.join(sorted(unknown))}; "
                                f"use {', '.join(SETTING_NAMES)}")
        given: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}  # checked by for_log
        if recovery is None:
            return cls.for_log(log, **given)
        return recovery.replace(log, **given) if given else recovery

    def replace(self, log: LogLike | pd.DataFrame | None = None, **overrides: object) -> Recovery:
        """A copy with ``overrides`` (the :data:`SETTING_NAMES`) applied, re-resolved against ``log``: given settings
        stay given, defaults are resolved again (without a ``log``, the runtime stays)."""
        merged: dict[str, Any] = {**self.given, **overrides}  # checked by for_log
        if log is None and merged.get("runtime") is None:
            merged["runtime"] = self.runtime
        return Recovery.for_log(log, **merged)

    def replay_plan(self, log: LogLike | None, *, refresh: Collection[int] | None = None) -> ReplayPlan:
        """The plan this recovery replays: the given one, else the markers' source's (:attr:`plan_source`: a
        checkpoint's keyed state over the log's inputs), else the log's own later attempt in the rebuild window
        (``refresh``: the log's refresh-row positions when the caller has them, else they are found again)."""
        if self.plan is not None:
            return self.plan
        if log is None:
            raise RecoveryError("no log and no plan: pass plan={'inputs': [(key, value), ...]} to run a fresh job")
        source = cast("ActionStateLog", log)
        if self.plan_source is not None:
            return self.plan_source.replay_plan(source, runtime=self.runtime, kafka_pending=self.model.kafka_pending,
                                                refresh=refresh, agent=self.agent)
        return ReplayPlan.from_log(source, markers=self.markers, runtime=self.runtime,
                                   kafka_pending=self.model.kafka_pending, refresh=refresh, agent=self.agent)

    def rebuild(self, log: LogLike | None, *, source_kind: str | None = None) -> RecoverySession:
        """The session a restore under these settings rebuilds from ``log`` (empty without a log); ``source_kind``
        ("kafka" / "fluss") picks the original rule's snapshot flavour (default: the log's)."""
        kind = source_kind if source_kind is not None else (source_kind_of(log) if log is not None else None)
        session = RecoverySession(self.rule, source_kind=kind or "kafka")
        if log is None:
            return session
        source = cast("ActionStateLog", log)
        return rebuild(source, self.rule, self.markers, session=session, expected_fingerprint=self.expected_fingerprint,
                       max_parallelism=self.max_parallelism, refresh=refresh_positions(source, self.model))

    @property
    def what_if(self) -> bool:
        """True when the rule is not the one the runtime ships (or is, in a store flavour other than the log's):
        the answer is hypothetical."""
        return self.rule_mark.what_if

    @property
    def rule_mark(self) -> RuleMark:
        """The rule as :func:`~agent_inspect.log.rule_mark` names it under the runtime: name, what-if, what ships."""
        return rule_mark(self.rule, self.runtime)

    @property
    def rule_label(self) -> str:
        """The rule's name (with its store flavour when one was given: ``original:kafka-k1``), marked as a what-if
        when it is one (for results, views and reports)."""
        return self.rule_mark.label

    @property
    def markers_label(self) -> str:
        """The rebuild window in words, with where its markers came from: ``{0: 248, 1: 245} (given)`` (several
        maps merged by minimum), ``[] (a fresh start: nothing is rebuilt)``, or the whole loaded log."""
        merged = rebuild_start(self.markers)
        if merged is None:
            return self.provenance.get("markers") or "none given: the whole loaded log is the rebuild window"
        if not merged:
            return "[] (a fresh start: nothing is rebuilt)"
        return f"{_markers_words(self.markers)} ({self.provenance.get('markers') or 'given'})"

    def as_dict(self) -> dict[str, object]:
        """JSON-ready settings with their provenance (CLI ``--json``, reports, copied links)."""
        return {"rule": self.rule.name, "what_if": self.what_if, "markers": _jsonable_markers(self.markers),
                "runtime": self.runtime.name, "runtime_inferred": self.runtime.inferred,
                "store_flavour": self.store_flavour, "kafka_pending": self.model.kafka_pending,
                "call_matching": self.call_matching, "expected_fingerprint": self.expected_fingerprint,
                "max_parallelism": self.max_parallelism,
                "plan": "given" if self.plan is not None else
                        "from the log" if self.plan_source is None else f"from {self.plan_source.path}",
                "agent": "given" if self.agent is not None else "as recorded",
                "provenance": dict(self.provenance)}

    def describe(self) -> str:
        """One line per setting: its value and where it came from."""
        return "\n".join(f"{name}: {words}" for name, words in self.provenance.items())

    def __repr__(self) -> str:
        return (f"Recovery(rule={self.rule_label!r}, runtime={self.runtime.name!r}, "
                f"markers={_markers_words(self.markers)}, store_flavour={self.store_flavour!r})")


def _resolve_rule(rule: Any, info: RuntimeInfo, flavour: str) -> DivergenceRule:
    if rule is None:
        rule = info.default_rule
    if flavour != "auto":
        name = rule if isinstance(rule, str) else getattr(rule, "name", None)
        if name != "original" and not (isinstance(name, str) and name.startswith("original:")):
            said = f"applies to the original rule only, not {name!r}"
            raise RecoveryError(f"store_flavour={flavour!r} {said}", cli=f"--store-flavour {flavour} {said}")
        if isinstance(rule, str):
            rule = f"original:{flavour}"
    return guard_own(resolve_rule(rule))


def _markers(markers: object) -> tuple[Markers, str]:
    if markers is None:
        return None, "none given: the whole loaded log is the rebuild window"
    if isinstance(markers, MarkerSource):   # a read checkpoint (ai.checkpoint) or anything like it
        words = str(getattr(markers, "provenance", None) or f"from {type(markers).__name__}")
        maps = markers.recovery_markers()
        normalize_markers(maps)   # raises on malformed markers, here rather than mid-verb
        return maps, words
    if isinstance(markers, Mapping):
        markers = [markers]
    if not isinstance(markers, Sequence) or isinstance(markers, str | bytes):
        raise RecoveryError(f"markers must be a list of {{partition: offset}} maps, got {type(markers).__name__}")
    listed = [dict(m) if isinstance(m, Mapping) else m for m in markers]
    normalize_markers(listed)
    return listed, "given" if listed else "given: an empty list, a fresh start (nothing is rebuilt)"


def _plan_source(markers: object, plan: object) -> tuple[PlanSource | None, str]:
    """The source whose plan the restore replays (None: the given plan, or the log's), and why, in words."""
    if plan is not None:
        return None, "given"
    if isinstance(markers, PlanSource):
        if markers.holds_plan():
            return markers, markers.plan_words()
        return None, f"from the log's own later attempt: {markers.plan_words()}"
    return None, "from the log's own later attempt"


def _jsonable_markers(markers: Markers) -> object:
    if markers is None:
        return None
    if isinstance(markers, Mapping):
        markers = [markers]
    return [{str(k): v for k, v in dict(m).items()} for m in markers]


def _markers_words(markers: Markers) -> str:
    merged = rebuild_start(markers)
    if merged is None:
        return "whole log"
    return "fresh start" if not merged else "{" + ", ".join(f"{p}: {o}" for p, o in sorted(merged.items())) + "}"
