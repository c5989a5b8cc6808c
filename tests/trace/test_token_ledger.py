"""The token ledger: what a restore re-spent on LLM calls, observed in the trace and predicted per rule,
with prices; in ``verify --json``, the report and ``explain``, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.trace import call_tokens, parse_prices, prices_from_toml

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "sample_logs"
PROD = [str(LOGS / "production.jsonl"), "--trace", str(LOGS / "production.trace.log"),
        "--markers", f"@{LOGS / 'production.markers.json'}"]


def test_sample_traces_carry_token_counts_on_executed_model_calls() -> None:
    c = call_tokens(ai.load_trace(LOGS / "production.trace.log"))
    executed = c[~c["replayed"]]
    assert len(executed) == 175 and executed["input_tokens"].notna().all() and executed["output_tokens"].notna().all()
    assert (executed["input_tokens"] >= 400).all() and (executed["output_tokens"] >= 40).all()
    assert int(executed["input_tokens"].sum()) == 198943 and int(executed["output_tokens"].sum()) == 51329


def test_production_ledger_under_original_and_fixed_in_verify_json(capsys: pytest.CaptureFixture[str],
                                                                 tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('["support_agent.chat_model.chat"]\ninput = 2.5\noutput = 10\n', encoding="utf-8")
    assert main(["verify", *PROD, "--tokens-under", "fixed", "--prices", str(prices), "--price", "*=1/4",
                 "--json"]) == 0
    tokens = json.loads(capsys.readouterr().out)["tokens"]
    obs = tokens["observed"]
    assert obs["llm_calls"] == 175 and obs["tokens"] == 198943 + 51329 and obs["cost"] > 0
    by_rule = {r["rule"]: r for r in tokens["by_rule"]}
    assert set(by_rule) == {"original", "fixed"}
    orig, fixed = by_rule["original"], by_rule["fixed"]
    assert orig["llm_calls"] == 205 and fixed["llm_calls"] == 3
    assert orig["tokens"] > 50 * fixed["tokens"] > 0
    assert orig["cost"] > fixed["cost"] > 0
    assert tokens["headline"].startswith("this restore re-spent 250 k tokens (≈ $")
    assert "under fixed it would have re-spent 4.25 k" in tokens["headline"]


def test_production_ledger_in_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.html"
    assert main(["report", *PROD, "--tokens-under", "fixed", "-o", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {r["rule"] for r in data["tokens"]["by_rule"]} == {"original", "fixed"}
    html = out.read_text(encoding="utf-8")
    assert "Tokens re-spent" in html and "under fixed it would have re-spent 4.25 k" in html
    assert "LLM tokens re-spent, per rule" in html


def test_explain_gives_the_cost_of_one_task(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", *PROD, "--key", "user-0009", "--seq", "5", "--action", "chat", "--rule", "original",
                 "--price", "*=2/8", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["tokens"]
    assert row["key"] == "user-0009" and row["seq"] == 5 and row["action"] == "chat"
    assert row["llm_calls_predicted"] == 1 and row["input_tokens_observed"] > 0 and row["cost_observed"] > 0


def test_prices_and_their_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_prices(["qwen-max=1.6/6.4", "a=b=1/2"]) == {"qwen-max": (1.6, 6.4), "a=b": (1.0, 2.0)}
    assert prices_from_toml('["m"]\ninput = 1\noutput = 3.5\n') == {"m": (1.0, 3.5)}
    for bad in (["qwen-max=1.6"], ["=1/2"], ["m=x/1"]):
        with pytest.raises(ai.InspectError, match="MODEL=IN/OUT"):
            parse_prices(bad)
    with pytest.raises(ai.InspectError, match="needs numbers"):
        prices_from_toml('["m"]\ninput = "cheap"\n')
    with pytest.raises(ai.InspectError, match="bad prices file"):
        prices_from_toml("[[[")
    assert main(["verify", *PROD, "--price", "nonsense"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MODEL=IN/OUT" in err


def test_a_call_without_a_price_has_no_cost_not_a_free_one() -> None:
    """TokenLedger: "Cost is None without a price for the model". N04's one LLM call is shop_agent.ask_llm, with no
    model named: a price for "qwen-max" prices nothing, so the re-spent cost is unknown (it read $0.00), and a note
    names what has no price. Under fixed nothing runs again, so its cost stays 0."""
    log = ai.load(LOGS / "N04.jsonl")
    v = ai.verify(log, ai.load_trace(LOGS / "N04.trace.log"), markers=ai.samples.markers("N04"))
    ledger = v.with_tokens(rules=["fixed"], prices={"qwen-max": (1.6, 6.4)}).tokens
    assert ledger.observed["tokens"] == 1618 and ledger.observed["cost"] is None
    totals = ledger.totals.set_index("rule")["cost"]
    assert pd.isna(totals["original"]) and totals["fixed"] == 0.0
    assert ledger.tasks.loc[ledger.tasks["llm_calls_predicted"] > 0, "cost_predicted"].isna().all()
    assert ledger.headline().startswith("this restore re-spent 1.62 k tokens in 1 LLM call;")
    assert any("no price for shop_agent.ask_llm" in note for note in ledger.notes), ledger.notes
    priced = v.with_tokens(prices={"shop_agent.ask_llm": (1.6, 6.4)}).tokens
    assert priced.observed["cost"] == pytest.approx((1477 * 1.6 + 141 * 6.4) / 1e6) and priced.notes == ()


def test_a_trace_without_token_counts_says_so() -> None:
    log = ai.load(LOGS / "N04.jsonl")
    trace = ai.load_trace(LOGS / "N04.fixed-rule.trace.log")
    v = ai.verify(log, trace, markers=ai.samples.markers("N04")).with_tokens()
    assert v.tokens.observed["tokens"] is None or v.tokens.observed["llm_calls"] == 0
    assert v.to_dict()["tokens"]["headline"].startswith("this restore re")


def test_a_restore_that_runs_no_llm_call_spent_nothing_and_needs_no_note() -> None:
    """G01's recovery runs no LLM call, predicted or in its trace: 0 tokens is what the trace shows, not an unknown.
    The headline read "re-executed 0 LLM calls (the trace carries no token counts)" beside a note that the
    predicted tokens were unknown, though nothing was predicted."""
    log = ai.load(LOGS / "G01.jsonl")
    ledger = ai.verify(log, LOGS / "G01.trace.log", markers=ai.samples.markers("G01")).with_tokens().tokens
    assert ledger.headline() == "this restore re-executed no LLM call"
    assert ledger.observed["llm_calls"] == 0 and ledger.observed["tokens"] == 0 and ledger.notes == ()


def test_llm_calls_without_token_counts_are_unknown_once_in_the_headline_and_in_the_notes(tmp_path: Path) -> None:
    """Production's trace with the token attributes dropped: the calls are counted, their tokens unknown."""
    text = (LOGS / "production.trace.log").read_text(encoding="utf-8")
    stripped = text.replace('"attributes":{"promptTokens"', '"attributes":{"_p"').replace('"completionTokens"', '"_c"')
    assert stripped != text
    trace = tmp_path / "production.trace.log"
    trace.write_text(stripped, encoding="utf-8")
    log = ai.load(LOGS / "production.jsonl")
    ledger = ai.verify(log, trace, markers=ai.samples.markers("production")).with_tokens().tokens
    assert ledger.headline() == "this restore re-executed 175 LLM calls (the trace carries no token counts)"
    assert ledger.observed["tokens"] is None
    assert ledger.notes == ("no executed LLM call in the checked trace carries promptTokens/completionTokens: "
                            "observed and predicted tokens are unknown",)


def test_the_verification_view_shows_the_ledger() -> None:
    from agent_inspect.widgets import VerificationView

    log = ai.load(LOGS / "N04.jsonl")
    v = ai.verify(log, LOGS / "N04.trace.log", markers=ai.samples.markers("N04")).with_tokens(rules=["fixed"])
    spent = v.tokens.tasks[(v.tokens.tasks["rule"] == v.rule) & (v.tokens.tasks["llm_calls_observed"] > 0)]
    assert len(spent), "N04's restore runs a model call again"
    view = VerificationView(v)
    assert "tokens: this restore re-spent" in view.summary.value and "under fixed" in view.summary.value
    row = spent.iloc[0]
    i = int(((view.tasks["key"] == row["key"]) & (view.tasks["action"] == row["action"])
             & (view.tasks["seq"] == row["seq"])).to_numpy().argmax())
    view.select(i)
    assert "LLM tokens run again" in view.detail.value
    assert f"observed {row['input_tokens_observed']} in" in view.detail.value
    assert "Tokens re-spent" in v._repr_html_()


def test_a_small_spend_never_reads_as_nothing() -> None:
    """N04's one re-run LLM call costs about $0.0033 at $1.6/$6.4 per million tokens: "< $0.01", not "≈ $0.00"
    (which reads as free); nothing re-spent is "≈ $0.00", and a larger spend keeps its cents."""
    log = ai.load(LOGS / "N04.jsonl")
    v = ai.verify(log, ai.load_trace(LOGS / "N04.trace.log"), markers=ai.samples.markers("N04"))
    small = v.with_tokens(rules=["fixed"], prices={"*": (1.6, 6.4)}).tokens.headline()
    assert small == ("this restore re-spent 1.62 k tokens (< $0.01) in 1 LLM call; "
                     "under fixed it would have re-spent 0 (≈ $0.00)")
    large = v.with_tokens(prices={"*": (1600, 6400)}).tokens.headline()
    assert large.startswith("this restore re-spent 1.62 k tokens (≈ $3.27) in 1 LLM call")


@pytest.mark.parametrize("content, says", [(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", " is not a prices file (not UTF-8 text)"),
                                           (b'{"0": 1', ": Invalid statement (at line 1, column 1)")])
def test_a_prices_file_that_is_no_toml_is_named_in_one_line(content: bytes, says: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # a binary file was a UnicodeDecodeError traceback; broken TOML said "bad prices file: …" without the file
    prices = tmp_path / "prices.toml"
    prices.write_bytes(content)
    g01 = ai.samples.path("G01")
    assert main(["verify", str(g01), "--trace", str(ai.samples.path("G01", "trace")), "--markers",
                 str(ai.samples.path("G01", "markers")), "--prices", str(prices)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--prices file '{prices}'{says}" in err


@pytest.mark.parametrize("count", [2 ** 64, 1e300, "9" * 40, "\u00b2", -5, 10 ** 13])
def test_a_damaged_token_count_is_unknown_and_the_rest_is_counted(tmp_path: Path, count: object) -> None:
    """One llm record whose promptTokens is no count (2**64 stopped call_tokens, and so ai.to_otel, with an
    OverflowError; a superscript digit passed str.isdigit): that call's input tokens are unknown, the others kept."""
    lines = (LOGS / "production.trace.log").read_text(encoding="utf-8").splitlines()
    recs = [json.loads(ln) for ln in lines]
    i = next(k for k, r in enumerate(recs) if "promptTokens" in (r.get("attributes") or {}))
    recs[i]["attributes"]["promptTokens"] = count
    trace = tmp_path / "production.trace.log"
    trace.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    c = call_tokens(ai.load_trace(trace))
    executed = c[~c["replayed"]]
    assert int(executed["input_tokens"].isna().sum()) == 1 and int(executed["output_tokens"].sum()) == 51329
    v = ai.verify(ai.load(LOGS / "production.jsonl"), trace, markers=ai.samples.markers("production"))
    assert "spans" in str(ai.to_otel(v, path=tmp_path / "spans.json"))
