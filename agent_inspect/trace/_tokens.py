"""What a recovery re-spent on model calls: tokens (and cost) of the LLM calls executed again.

Observed: the trace's ``llm`` executions that were not served from a CallResult, with the token counts
upstream writes on them (``promptTokens`` / ``completionTokens`` in the record's ``attributes``; the
same names as its per-model token metrics, spec §14.3). Predicted: per task, the durable calls the
earlier attempt recorded for that task (the last action-state record of its state key, slots from the
first one the prediction does not replay), each costed at the mean tokens of that function id's
executed calls in the trace given as ``baseline`` (the first attempt's), else in the checked trace.
"""

from __future__ import annotations

import math
import tomllib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from agent_inspect._errors import InspectError
from agent_inspect._glossary import plural
from agent_inspect._html import HtmlPart, HtmlRepr, Strong, Table, Text
from agent_inspect._jsonable import jsonable_rows
from agent_inspect.trace._runtime import call_entity

if TYPE_CHECKING:
    from agent_inspect._types import PredictionLike, RuleLike
    from agent_inspect.recovery import ReplayPlan
    from agent_inspect.trace._model import TraceLog
    from agent_inspect.trace._verification import Verification

__all__ = ["TokenLedger", "Prices", "token_ledger", "call_tokens", "parse_prices", "prices_from_toml",
           "TOKEN_ATTRIBUTES", "human_tokens"]

TOKEN_ATTRIBUTES = ("promptTokens", "completionTokens")
"""trace ``attributes`` members holding an LLM execution's token counts: (input, output)"""
#: model (or function id) -> (USD per million input tokens, USD per million output tokens)
Prices = Mapping[str, tuple[float, float]]
CALL_TOKEN_COLUMNS = ["execution_id", "parent_execution_id", "business_key", "entity_name", "model", "replayed",
                      "input_tokens", "output_tokens"]
TASK_COLUMNS = ["key", "seq", "action", "rule", "outcome", "observed", "execution_id", "llm_calls_predicted",
                "input_tokens_predicted", "output_tokens_predicted", "cost_predicted", "llm_calls_observed",
                "input_tokens_observed", "output_tokens_observed", "cost_observed"]


#: more tokens than any model call has: a count above it is a damaged value, not a count (and a sum of counts under it
#: stays in 64 bits for millions of calls, where a 2**64 in one line stopped ``call_tokens`` with an OverflowError)
_MAX_TOKENS = 10 ** 12


def _int(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, float):
        v = int(v) if math.isfinite(v) else -1
    elif isinstance(v, str):
        text = v.strip()
        v = int(text) if text.isascii() and text.isdigit() and len(text) <= 13 else -1
    return v if isinstance(v, int) and 0 <= v <= _MAX_TOKENS else None


def call_tokens(trace: TraceLog) -> pd.DataFrame:
    """One row per ``llm`` execution of ``trace``: ids, key, name, model, ``replayed`` and the token counts its
    records carry (``<NA>`` when none does).

    For example::

        trace = ai.load_trace("sample_logs/production.trace.log")
        ai.trace.call_tokens(trace).head()             # one row per llm execution
    """
    calls = trace.calls()
    llm = calls[calls["entity_type"] == "llm"]
    good = trace.good
    recs = good[good["entity_type"] == "llm"]
    found: dict[str, tuple[int | None, int | None]] = {}
    keys: dict[str, Any] = {}
    for eid, bk, attrs in zip(recs["execution_id"], recs["business_key"].astype(object), recs["attributes"]):
        keys.setdefault(eid, bk)
        if isinstance(attrs, dict):
            i, o = _int(attrs.get(TOKEN_ATTRIBUTES[0])), _int(attrs.get(TOKEN_ATTRIBUTES[1]))
            if i is not None or o is not None:
                found[eid] = (i, o)
    frame = pd.DataFrame({
        "execution_id": llm["execution_id"].astype(object).to_numpy(),
        "parent_execution_id": llm["parent_execution_id"].astype(object).to_numpy(),
        "business_key": [keys.get(e) for e in llm["execution_id"]],
        "entity_name": llm["entity_name"].astype(object).to_numpy(),
        "model": llm["model"].astype(object).to_numpy(),
        "replayed": llm["replayed"].to_numpy(dtype=bool),
        "input_tokens": [found.get(e, (None, None))[0] for e in llm["execution_id"]],
        "output_tokens": [found.get(e, (None, None))[1] for e in llm["execution_id"]],
    }, columns=CALL_TOKEN_COLUMNS)
    for col in ("input_tokens", "output_tokens"):
        frame[col] = pd.array(frame[col], dtype="Int64")
    return frame


# -- prices ----------------------------------------------------------------------------------------

def parse_prices(specs: Iterable[str]) -> dict[str, tuple[float, float]]:
    """``["MODEL=IN/OUT", …]`` (USD per million input / output tokens) as a price table.

    For example::

        ai.trace.parse_prices(["qwen-max=1.6/6.4"])    # {"qwen-max": (1.6, 6.4)}
    """
    out: dict[str, tuple[float, float]] = {}
    for spec in specs:
        model, eq, rest = str(spec).rpartition("=")
        a, slash, b = rest.partition("/")
        try:
            if not eq or not model or not slash:
                raise ValueError
            out[model.strip()] = (float(a), float(b))
        except ValueError:
            raise InspectError(f"bad price {spec!r}: write MODEL=IN/OUT, USD per million input/output tokens, "
                               "e.g. qwen-max=1.6/6.4") from None
    return out


def prices_from_toml(text: str) -> dict[str, tuple[float, float]]:
    """A price table from TOML: one table per model with ``input`` and ``output`` (USD per million tokens)::

        ["qwen-max"]
        input = 1.6
        output = 6.4

    For example::

        ai.trace.prices_from_toml('["qwen-max"]\\ninput = 1.6\\noutput = 6.4\\n')
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InspectError(f"bad prices file: {exc}") from None
    out: dict[str, tuple[float, float]] = {}
    for model, entry in data.items():
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), (int, float)) for k in ("input", "output")):
            raise InspectError(f"bad prices file: [{model!r}] needs numbers input = … and output = … (USD per "
                               "million tokens)")
        out[str(model)] = (float(entry["input"]), float(entry["output"]))
    return out


def _price_of(prices: Prices | None, *names: Any) -> tuple[float, float] | None:
    if not prices:
        return None
    for n in names:
        if isinstance(n, str) and n in prices:
            return prices[n]
    return prices.get("*")


def human_tokens(n: float | int | None) -> str:
    """1234567 -> "1.2 M", 40000 -> "40 k"."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "unknown"
    n = float(n)
    if n >= 1e6:
        return f"{n / 1e6:.1f} M"
    if n >= 1e3:
        return f"{n / 1e3:.3g} k"
    return f"{int(n)}"


# -- the ledger ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TokenLedger(HtmlRepr):
    """Tokens of the LLM calls a recovery executed again, per task and in total.

    ``tasks``: one row per (rule, task) with the LLM calls, input/output tokens and cost predicted (from
    the earlier attempt's recorded calls) and, for the checked rule, observed in the trace. ``totals``:
    one row per rule (the checked rule first) with the same sums; ``observed``: the trace's sums.
    Cost is None without a price for the model.

    For example::

        v = ai.verify(log, ai.load_trace("sample_logs/production.trace.log"), markers=markers)
        ledger = ai.trace.token_ledger(v, prices={"*": (1.6, 6.4)})
        ledger.totals, ledger.headline()
    """

    tasks: pd.DataFrame
    totals: pd.DataFrame
    observed: dict[str, Any]
    rule: str
    notes: tuple[str, ...] = ()
    per_call: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False, compare=False)

    def headline(self) -> str:
        """One sentence: what the restore re-spent, and what each other rule would have."""
        o = self.observed
        cost = f" ({_usd(o['cost'])})" if o.get("cost") is not None else ""
        if not o["llm_calls"]:
            text = "this restore re-executed no LLM call"
        elif o.get("tokens") is None:
            text = f"this restore re-executed {plural(o['llm_calls'], 'LLM call')} (the trace carries no token counts)"
        else:
            text = f"this restore re-spent {human_tokens(o['tokens'])} tokens{cost} in {plural(o['llm_calls'], 'LLM call')}"
        for r in self.totals.itertuples(index=False):
            if r.rule == self.rule:
                continue
            c = f" ({_usd(r.cost)})" if r.cost is not None and not pd.isna(r.cost) else ""
            text += f"; under {r.rule} it would have re-spent {human_tokens(r.tokens)}{c}"
        return text

    def for_task(self, key: object, seq: int, action: str, rule: str | None = None) -> dict[str, Any] | None:
        """The ledger row of one task under ``rule`` (default: the checked rule), or None."""
        t = self.tasks
        hit = t[(t["key"].astype(str) == str(key)) & (t["seq"].astype(object) == seq)
                & (t["action"].astype(str) == str(action)) & (t["rule"] == (rule or self.rule))]
        return jsonable_rows(hit.head(1))[0] if len(hit) else None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data."""
        return {"headline": self.headline(), "rule": self.rule, "observed": dict(self.observed),
                "by_rule": jsonable_rows(self.totals), "notes": list(self.notes)}

    def _html_parts(self) -> Iterable[HtmlPart]:
        yield Text(Strong("Tokens re-spent"), " — ", self.headline())
        yield Table(self.totals, caption="per rule (predicted) and as the trace shows it (observed)")
        spent = self.tasks[(self.tasks["rule"] == self.rule)
                           & (self.tasks["llm_calls_predicted"].fillna(0) + self.tasks["llm_calls_observed"].fillna(0) > 0)]
        yield Table(spent, max_rows=30, caption="tasks that re-spent tokens")


def _means(per_call: pd.DataFrame) -> dict[str, tuple[float, float]]:
    ex = per_call[~per_call["replayed"] & per_call["input_tokens"].notna()]
    out: dict[str, tuple[float, float]] = {}
    for name, g in ex.groupby("entity_name", sort=False):
        out[str(name)] = (float(g["input_tokens"].astype("float64").mean()),
                          float(g["output_tokens"].astype("float64").fillna(0).mean()))
    return out


def _recorded_calls(log: Any) -> dict[str, list[str]]:
    """state key -> function ids of the durable calls its last record holds (the earlier attempt's calls)."""
    if log is None:
        return {}
    recs = log.records
    ok = recs[recs["error"].isna() & (recs["call_count"].fillna(0) > 0)]
    last = ok.groupby("state_key", sort=False, observed=True).tail(1)
    out: dict[str, list[str]] = {}
    for pos, sk in zip(last.index, last["state_key"]):
        try:
            value = log.value(int(pos))
        except Exception:  # noqa: BLE001 - an undecodable value is a decode error row elsewhere; no calls known
            continue
        out[str(sk)] = [str(c.function_id) for c in (getattr(value, "call_results", ()) or ())]
    return out


def _task_rows(rule: str, tasks: pd.DataFrame, recorded: Mapping[str, list[str]],
               means: Mapping[str, tuple[float, float]], prices: Prices | None,
               call_kind: Callable[[str | None], str | None], unknown: list[int],
               unpriced: set[str]) -> list[dict[str, Any]]:
    rows = []
    for t in tasks.itertuples(index=False):
        if t.outcome == "NOT-DISPATCHED":
            continue
        executed = int(t.calls_executed) if t.body_ran and not pd.isna(t.calls_executed) else 0
        replayed = int(t.calls_replayed) if not pd.isna(t.calls_replayed) else 0
        slots = list(recorded.get(str(t.state_key), ()))[replayed:replayed + executed]
        unknown[0] += max(0, executed - len(slots))
        n = 0
        i = o = 0.0
        cost: float | None = 0.0 if prices else None
        known = True
        for fid in slots:
            if call_kind(fid) != "llm":
                continue
            n += 1
            m = means.get(fid)
            if m is None:
                known = False
                continue
            i, o = i + m[0], o + m[1]
            p = _price_of(prices, fid)
            if prices and p is None:
                unpriced.add(str(fid))
                cost = None                 # a call without a price: the task's cost is unknown, not 0
            elif cost is not None and p is not None:
                cost += (m[0] * p[0] + m[1] * p[1]) / 1e6
        rows.append({"key": t.key, "seq": t.seq, "action": t.action, "rule": rule, "outcome": t.outcome,
                     "llm_calls_predicted": n, "input_tokens_predicted": round(i) if known or i else None,
                     "output_tokens_predicted": round(o) if known or o else None, "cost_predicted": cost})
    return rows


def token_ledger(verification: Verification, *, prices: Prices | None = None, rules: Sequence[RuleLike] = (),
                 baseline: TraceLog | None = None, plan: ReplayPlan | None = None, restore: Mapping[str, Any] | None = None,
                 call_kind: Callable[[str | None], str | None] = call_entity) -> TokenLedger:
    """The token ledger of a checked recovery (``ai.verify(...)``'s result).

    ``rules``: other rules to predict the same restore under ("what would ``fixed`` have re-spent?").
    ``prices``: model -> (USD per million input, per million output tokens), matched on the call's model,
    then its function id (``"*"`` for any). ``baseline``: the trace of the first attempt, whose executed
    calls give each function id's tokens per call (default: the checked trace). ``plan`` / ``restore``: as
    given to ``verify`` (by default the plan is read from the trace again), for ``rules``.

    For example::

        v = ai.verify(log, ai.load_trace("sample_logs/production.trace.log"), markers=markers)
        ledger = ai.trace.token_ledger(v, rules=["fixed"])   # what fixed would have re-spent too
        ledger.totals
    """
    v = verification
    # ai.verify sets both: a Verification made otherwise has nothing to count
    trace, prediction = cast("TraceLog", v.trace), cast("PredictionLike", v.prediction)
    per_call = call_tokens(trace)
    base_calls = call_tokens(baseline) if baseline is not None else per_call
    means = _means(base_calls)
    notes: list[str] = []
    recorded = _recorded_calls(v.log)
    unknown = [0]
    unpriced: set[str] = set()
    rows = _task_rows(v.rule, prediction.tasks, recorded, means, prices, call_kind, unknown, unpriced)
    others: list[str] = []
    if rules:
        from agent_inspect.recovery import predict
        from agent_inspect.trace import plan_from_trace

        if plan is None and v.log is not None:
            plan = plan_from_trace(trace, v.log, markers=v.markers, restore=restore)
        for r in rules:
            # the checked restore's settings, under another rule
            alt = predict(v.log, recovery=getattr(v.prediction, "recovery", None), plan=plan, rule=r, markers=v.markers)
            name = str(getattr(alt, "rule", r))
            others.append(name)
            rows += _task_rows(name, alt.tasks, recorded, means, prices, call_kind, unknown, unpriced)
    predicted_unknown = not means and any(row["llm_calls_predicted"] for row in rows)   # no predicted call: 0 known
    if unknown[0]:
        notes.append(f"{plural(unknown[0], 'predicted call')} {'goes' if unknown[0] == 1 else 'go'} past what the earlier attempt recorded: their tokens are "
                     "not counted")
    # observed, per execution of the checked rule's tasks
    executed = per_call[~per_call["replayed"]]
    by_parent: dict[Any, tuple[int, int, int, float | None]] = {}
    for parent, g in executed.groupby("parent_execution_id", sort=False):
        i = int(g["input_tokens"].fillna(0).sum())
        o = int(g["output_tokens"].fillna(0).sum())
        cost = _cost(g, prices, unpriced)
        by_parent[parent] = (len(g), i, o, cost)
    tasks = pd.DataFrame(rows, columns=[c for c in TASK_COLUMNS if c not in (
        "observed", "execution_id", "llm_calls_observed", "input_tokens_observed", "output_tokens_observed",
        "cost_observed")])
    checked = v.tasks
    obs_rows = {}
    for t in checked.itertuples(index=False):
        if isinstance(t.execution_id, str) and t.predicted is not None:
            obs_rows[(t.key, t.seq, t.action, t.predicted)] = (t.observed, t.execution_id)
    observed_col, exec_col, n_col, i_col, o_col, c_col = [], [], [], [], [], []
    # a trace without an executed LLM call shows 0 tokens spent; with calls, only their counts tell
    has_tokens = executed.empty or bool(executed["input_tokens"].notna().any())
    for t in tasks.itertuples(index=False):
        hit = obs_rows.get((t.key, t.seq, t.action, t.outcome)) if t.rule == v.rule else None
        observed_col.append(hit[0] if hit else None)
        exec_col.append(hit[1] if hit else None)
        got: tuple[int | None, int | None, int | None, float | None] = (
            by_parent.get(hit[1], (0, 0, 0, 0.0 if prices else None)) if hit else (None, None, None, None))
        n_col.append(got[0])
        i_col.append(got[1] if has_tokens else None)
        o_col.append(got[2] if has_tokens else None)
        c_col.append(got[3] if has_tokens else None)
    tasks.insert(5, "observed", observed_col)
    tasks.insert(6, "execution_id", exec_col)
    tasks["llm_calls_observed"], tasks["input_tokens_observed"] = n_col, i_col
    tasks["output_tokens_observed"], tasks["cost_observed"] = o_col, c_col
    for col in ("seq", "llm_calls_predicted", "input_tokens_predicted", "output_tokens_predicted",
                "llm_calls_observed", "input_tokens_observed", "output_tokens_observed"):
        tasks[col] = pd.array(pd.to_numeric(tasks[col], errors="coerce").round(), dtype="Int64") \
            if col != "seq" else tasks[col].astype("Int64")
    for col in ("cost_predicted", "cost_observed"):
        tasks[col] = pd.to_numeric(tasks[col], errors="coerce").astype("float64")
    totals = []
    for r in [v.rule, *others]:
        sub = tasks[tasks["rule"] == r]
        i = sub["input_tokens_predicted"]
        o = sub["output_tokens_predicted"]
        unknown_tokens = bool(i.isna().all()) and int(sub["llm_calls_predicted"].sum()) > 0
        totals.append({"rule": r, "llm_calls": int(sub["llm_calls_predicted"].sum()),
                       "input_tokens": None if unknown_tokens else int(i.fillna(0).sum()),
                       "output_tokens": None if unknown_tokens else int(o.fillna(0).sum()),
                       "tokens": None if unknown_tokens else int(i.fillna(0).sum() + o.fillna(0).sum()),
                       "cost": float(sub["cost_predicted"].sum())
                       if prices and not sub["cost_predicted"].isna().any() else None})
    obs_i = int(executed["input_tokens"].fillna(0).sum())
    obs_o = int(executed["output_tokens"].fillna(0).sum())
    observed = {"llm_calls": int(len(executed)), "input_tokens": obs_i if has_tokens else None,
                "output_tokens": obs_o if has_tokens else None, "tokens": obs_i + obs_o if has_tokens else None,
                "cost": _cost(executed, prices, unpriced) if has_tokens else None,
                "llm_calls_replayed": int(per_call["replayed"].sum())}
    if unpriced:
        notes.append(f"no price for {', '.join(sorted(unpriced))}: a cost that needs one is unknown (price it by "
                     "model or function id, or '*' for any)")
    unknown_in: dict[str, list[str]] = defaultdict(list)   # trace -> the tokens it leaves unknown: one note each
    if len(executed) and not has_tokens:
        unknown_in["checked"].append("observed")
    if predicted_unknown:
        unknown_in["baseline" if baseline is not None else "checked"].append("predicted")
    notes[:0] = [f"no executed LLM call in the {which} trace carries {TOKEN_ATTRIBUTES[0]}/{TOKEN_ATTRIBUTES[1]}: "
                 f"{' and '.join(words)} tokens are unknown" for which, words in unknown_in.items()]
    return TokenLedger(tasks=tasks, totals=pd.DataFrame(totals, columns=["rule", "llm_calls", "input_tokens",
                                                                         "output_tokens", "tokens", "cost"]),
                       observed=observed, rule=v.rule, notes=tuple(notes), per_call=per_call)


def _cost(calls: pd.DataFrame, prices: Prices | None, unpriced: set[str]) -> float | None:
    """The calls' cost; None without prices, or when a call has no price (its names go into ``unpriced``)."""
    if not prices:
        return None
    total: float | None = 0.0
    for name, model, i, o in zip(calls["entity_name"], calls["model"], calls["input_tokens"], calls["output_tokens"]):
        p = _price_of(prices, model, name)
        if p is None:
            unpriced.add(str(model) if isinstance(model, str) else str(name))
            total = None
        elif total is not None:
            total += ((0 if pd.isna(i) else int(i)) * p[0] + (0 if pd.isna(o) else int(o)) * p[1]) / 1e6
    return total


def _usd(cost: float) -> str:
    """A cost in words: "≈ $1,234.56", or "< $0.01" for a cost that rounds to nothing but is not nothing (a
    restore's few thousand tokens), so a spend never reads as $0.00."""
    return "< $0.01" if 0 < cost < 0.005 else f"≈ ${cost:,.2f}"
