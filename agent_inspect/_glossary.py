"""The one glossary: every term a view, report or CLI line shows, with the one line a tooltip says about it.

``GLOSSARY`` maps a term (as the views print it) to a one-line definition in plain English; the views'
tooltips (``title`` attributes) come from :func:`define`, and the documentation renders the same dict.
:func:`plural` writes counts with the right noun ("1 divergence", "2 divergences").
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

from agent_inspect._controls import show_controls

__all__ = ["GLOSSARY", "define", "define_column", "plural", "count_words", "first_few", "did_you_mean", "split_spec", "shown_text"]

GLOSSARY: dict[str, str] = {
    # what a restore does with a task (the outcomes of the prediction, the executor and the trace)
    "REUSE": "the restore takes the task's completed result from the action-state store; the action does not run again",
    "RESUME": "the restore runs the action again but replays the durable calls it had already finished",
    "RERUN": "the restore runs the action again from the start, with every durable (LLM or tool) call",
    "ABSENT": "the trace shows no execution of a task the prediction expected to run",
    "NOT_DISPATCHED": "the task was never dispatched in this attempt, so the restore neither reuses nor runs it",
    "FAIL": "the action failed during the replay",
    # record statuses of a reconstruction
    "live": "the record is in the rebuilt cache and would be reused",
    "evicted": "a divergence rule removed the record from the rebuilt cache, so its task runs again",
    "invalidated": "the record was dropped because an earlier record it depends on was removed",
    "superseded": "a later record of the same state key replaced this one",
    "pruned": "a later tombstone of its state key deleted the record, or it was pruned when its round completed",
    "tombstone": "a delete marker for a state key: it carries no value",
    "outside": "the record lies outside the restore's rebuild window (before the recovery markers), so the restore never reads it",
    "not-in-log": "the action's record is not in this log (known only from another record's lineage)",
    "error": "the record could not be decoded; it is kept with its position and reason",
    "refresh": "a checkpoint re-appended this state byte-identical after its marker (0.4 and later): not a new attempt",
    # words of the views
    "divergence": "a place where the rebuilt state differs from what the job would compute on replay, so recovery reruns or reuses the wrong thing",
    "divergences": "how many divergences the divergence rule found (each one lists the records it involves)",
    "◇": "the divergences this line is involved in (their numbers; see the divergence table)",
    "task": "one action run for one input event at one round of one business key (key, round, action)",
    "round": "the seq of a business key: one input event and everything it triggered",
    "attempt": "one run of the job over a key's round; a restore that runs it again starts another attempt",
    "calls": "durable LLM or tool calls recorded for the action (CallResult entries)",
    "calls executed": "durable calls the restore makes again: no finished result of them is in the store",
    "calls replayed": "durable calls whose recorded results the restore hands back instead of calling again",
    "calls re-submitted": "sub-agent calls the restore sends again with the same ids; the child's own row says whether the sub-agent runs again",
    "sub-agent calls made": "sub-agent calls the restore sends again as new calls: no call that leaves the job; the child's own row counts the calls it makes",
    "body ran": "the action's code runs in the restore (a rerun or a resume)",
    "calls differ": "the trace ran a different number of durable calls than the prediction expected",
    "records pinned by the 0.4 lineage rule": "records whose value format was decided by the 0.4 lineage rule (upstreamEventId present) rather than by their own fields",
    "runtime": "which upstream Flink Agents version wrote the log, and the evidence for it",
    "rule": "the divergence rule the restore applies: which stored results it may reuse",
    "what-if": "a rule other than the one the log's runtime ships: a hypothetical recovery",
    "markers": "the recovery markers: per partition, the offset where the restore's rebuild began",
    "windows": "the slices of the log (one per partition and offset range) the scan read in parallel",
    "failed windows": "windows whose read or reconstruction failed after retries; the rest of the scan is complete",
    "exposed to #1301": "keys with a round of more than one state before a later round: the upstream rule evicts the later rounds' saved completions on restore (#1301)",
    "lint flags": "records that break a rule of the log format (spec lints), kept and flagged",
    "stale_reuse_risk": "tasks the restore would reuse although their inputs changed (a stale result)",
    "at risk": "keys ordered by how much the restore would run again or reuse stale (at_risk() order)",
    "evict": "the rule removes cached records of a key (and every later round), so those tasks run again",
    "lookup": "the restore looks a task's result up in the rebuilt cache",
    "jobs": "the Flink job names the trace's records carry",
    "subtasks": "the Flink subtasks (parallel instances) the trace's records came from",
    "tied": "several rules explain the trace equally well (same agree and disagree counts)",
    "sub-agent call": "a call from an action to a sub-agent, named by the sub-agent and the function it ran",
    # the replay stepper's step kinds (the outcomes above name the reuse, resume and rerun steps)
    "rebuild": "the restore reads the log's rebuild window into the cache before it replays any task",
    "eviction": "a step where the divergence rule removed cached records of a key, so their tasks run again",
    "invalidation": "a step where records were dropped because an earlier record they depend on was removed",
    "persist": "the replayed task wrote its record to the action-state store",
    "round-complete": "every task of the round has finished",
    "prune": "the restore removed the cached records of a completed round",
    "step": "one decision of the replay (a lookup, a reuse, a durable call, a write …), in the order it happened",
    # the graphs' node kinds
    "event": "an input or output event of an action (the arrows show which action it started)",
    "action": "an action execution: one task's record in the log",
    "session": "one sub-agent session opened by a call, holding the child actions it ran",
    # divergence kinds (agent_inspect.store.DIVERGENCE_KINDS)
    "root-conflict": "two input events at one round of the key with different fingerprints",
    "count>1": "more than one cached record at this round of the key, so the rule evicts the key's later rounds",
    "miss-eviction": "the lookup found nothing cached, so the rule evicts the key's later rounds",
    "identity-mismatch": "the event id the log shows differs from the cached record's",
    "round-regression": "a record of an earlier round arrived after records of later rounds",
    "branch-change": "records of another branch of the key were dropped",
    "cross-key": "one key's miss evicted every key's later rounds (snapshot Kafka store)",
    "parser-crash": "the strict K1 key parser fails on a key text containing '_'",
    "undecodable": "a record in the rebuild window did not decode",
    "restore-failure": "a K2 restore check failed (malformed key, key group out of range, fingerprint)",
    # table columns (the data grid's headers, the rule comparison's and the fleet scan's tables)
    "pos": "the record's position in the loaded log (its row number; every view names records by it)",
    "business_key": "the key the agent's records are grouped by; all of one key's records share a partition",
    "partition": "the Kafka partition (or Fluss bucket) the records were read from",
    "offset": "the record's offset in its partition",
    "status": "what the reconstruction did with the record (live, evicted, superseded …; hover a value for its meaning)",
    "outcome": "what the restore does with the task: REUSE, RESUME, RERUN or NOT-DISPATCHED",
    "attempts": "how many times the job ran the key's rounds (a restore that runs a round again starts another)",
    "rounds": "how many rounds (input events) of the key the log holds",
    "key records": "how many records of the key the log holds",
    "history_bytes": "bytes of the key's records in the log (key and value)",
    "risk_rank": "the key's place in at_risk() under the chosen rule (1 = most at risk)",
    "exposed_1301": "the key has a round with more than one state before a later round: the upstream rule's first lookup of that round evicts the later rounds' saved completions, which run again (#1301)",
    "branch_change": "the key's log holds conflicting roots (different inputs) at one round: reusing the old branch's later results is stale (what #1301's fix must still prevent)",
    "lint_flags": "how many of the key's records break a rule of the log format (spec lints)",
    "reruns": "action bodies that run again in the recovery",
    "evictions": "cache entries the divergence rule removed (at the rebuild and during the replay)",
    "stale_reuses": "reuses of a record the case marks stale: a correctness failure",
    "calls run again": "durable LLM or tool calls the recovery executes again",
    "crashed": "a lookup FAILs: the job would crash and restart in a loop",
    "passed": "with expected: the outcome the case expects for this rule; without: no stale reuse",
    "expected": "the case states an expected outcome for this rule (False for rules it does not name, e.g. your "
                "own: then passed only means no stale reuse)",
    "broken": "the rule's first error (a hook raised or returned the wrong type), or empty",
    "reused": "tasks the restore REUSEs: their completed result comes from the action-state store and the action "
              "does not run again (in a trace: executions the job reported reused)",
    "resumed": "tasks the restore runs again with their finished durable calls replayed from the journal",
    "failed": "tasks whose lookup FAILs under the rule",
    "completed": "the record holds the action's finished result (true once the action finished)",
    "output events": "events the action emitted (its outputEvents)",
    "triggered by": "the event that started the action (its type)",
    "duration": "how long the action ran: from its first record's timestamp to its last's",
}


def define(term: str) -> str:
    """The glossary's one-line definition of ``term`` ("" when it has none)."""
    for spelling in (term, term.lower(), term.upper().replace("-", "_")):   # "not-dispatched" is NOT_DISPATCHED
        if spelling in GLOSSARY:
            return GLOSSARY[spelling]
    return ""


# columns named by a word the glossary defines under another term ("seq" is a sentence word too)
_COLUMN_TERMS = {"seq": "round", "position": "pos", "positions": "pos", "task_event_type": "triggered by",
                 "call_count": "calls", "output_event_count": "output events", "calls_executed": "calls executed",
                 "calls_replayed": "calls replayed", "calls_resubmitted": "calls re-submitted", "calls_subagent": "sub-agent calls made",
                 "body_ran": "body ran"}


def define_column(column: str, *, rules: Iterable[str] = (), aliases: Mapping[str, str] | None = None) -> str:
    """What a table column counts: the glossary's line for ``column``, or for it without a ``<rule>_`` prefix
    of one of ``rules`` ("fixed_rerun" is "rerun" under rule fixed). ``aliases`` maps a column to the term it
    means where the column's own name is another term ("calls" of a comparison are "calls run again")."""
    aliases = {**_COLUMN_TERMS, **(aliases or {})}
    for rule in rules:
        if column.startswith(f"{rule}_"):
            bare = column[len(rule) + 1:]
            meaning = define(aliases.get(bare, bare))
            return f"under rule {rule}: {meaning}" if meaning else ""
    return define(aliases.get(column, column))


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun``, made plural unless the count is one: ``plural(1, "divergence")`` → "1 divergence"."""
    n = int(count)
    word = noun if n == 1 else (many if many is not None else noun + "s")
    return f"{n:,} {word}"


def count_words(count: int, noun: str, many: str | None = None) -> str:
    """Only the noun of :func:`plural` ("divergence" for one, "divergences" otherwise)."""
    return noun if int(count) == 1 else (many if many is not None else noun + "s")


def first_few(items: Iterable[object], most: int, *, counted: bool = True, total: int | None = None) -> str:
    """The first ``most`` of ``items`` joined by ", ", then what is left out: how many (" and 3 more") when
    ``counted``, else an ellipsis (", …"). The one way every message and repr lists a long run of names:
    ``first_few("abcde", 3)`` → "a, b, c and 2 more"; ``first_few("abcde", 3, counted=False)`` → "a, b, c, …".
    ``total`` counts all the items when ``items`` holds only the first few: ``first_few("abc", 3, total=5)`` →
    "a, b, c and 2 more". The names are a log's (keys, actions): their control characters are written out
    (:func:`show_controls`)."""
    shown = list(items)
    count = len(shown) if total is None else max(total, len(shown))
    text = ", ".join(show_controls(str(item)) for item in shown[:most])
    listed = min(len(shown), most)
    if count <= listed:
        return text
    return text + (f" and {count - listed:,} more" if counted else ", …")


def did_you_mean(names: Iterable[str], pool: Iterable[str]) -> str:
    """The hint after an unknown name: ``"; did you mean 'user-0019'?"`` with the (up to 3 per name) entries of
    ``pool`` closest to ``names`` (``difflib``), or "" when none is close. The one close-match helper: unknown
    business keys of a load and of a breakpoint both use it."""
    candidates = sorted(set(map(str, pool)))
    close = list(dict.fromkeys(m for k in names for m in difflib.get_close_matches(str(k), candidates, n=3)))
    return f"; did you mean {', '.join(map(repr, close))}?" if close else ""


_SPEC = re.compile(r"\s*\((?:see )?spec (§[^():]*?)(?::\s*([^()]*))?\)|[,;]?\s*\bspec (§[\d.,§ –-]*\d)")


def split_spec(text: str) -> tuple[str, str]:
    """``text`` without its spec references, and the references ("spec §8.2, §10.3"; "" when none):
    a headline reads in plain words, the sections go in its details line."""
    refs: list[str] = []

    def keep(m: re.Match[str]) -> str:
        refs.append((m.group(1) or m.group(3) or "").strip())
        words = m.group(2)
        return f" ({words.strip()})" if words else ""

    plain = _SPEC.sub(keep, text).strip()
    return plain, ("spec " + "; ".join(r for r in refs if r)) if refs else ""


_LONE = re.compile("[\ud800-\udfff]")


def shown_text(text: str) -> str:
    """``text`` as a label can carry it: a lone UTF-16 surrogate (valid in a record's JSON as ``\\uD800``, but
    no UTF-8 text, so no Arrow column, terminal or HTML file takes it) is written as its escape, ``\\ud800``."""
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _LONE.search(text) else text
