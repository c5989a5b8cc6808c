"""The report in words a user reads (issues #16 item 7, #12 item 7): the runtime's rule by default and any
other rule labelled a what-if, labelled summary facts, re-runs first, no empty or Python-shaped values."""

from __future__ import annotations

import html as htmllib
import json
import re
from pathlib import Path

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.report import render_report
from agent_inspect.report._report import affected_keys


def _text(page: str) -> str:
    page = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    return htmllib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


@pytest.fixture(scope="module")
def production_page() -> str:
    """The production sample under the fixed rule: one key loses records, 9 of 640 tasks re-run (issue #16)."""
    log = ai.load(ai.samples.path("production"))
    return render_report(log, rule="fixed", markers=ai.samples.markers("production"), max_keys=3)


def test_the_default_is_the_rule_the_runtime_ships(probe_log) -> None:
    text = _text(render_report(probe_log, max_keys=0))
    shipped = probe_log.runtime()
    assert "rule original ·" in text and "what-if" not in text
    assert f"runtime that wrote the log {shipped.name} (inferred: {shipped.evidence}; default rule original)" in text


def test_the_production_sample_under_fixed_is_a_what_if(production_page: str) -> None:
    text = _text(production_page)
    assert "rule fixed (what-if; 0.4 ships original) ·" in text
    assert "runtime that wrote the log 0.4 (inferred: all 1,045 records with output events carry lineage" in text


def test_another_rule_is_labelled_a_what_if(probe_log) -> None:
    text = _text(render_report(probe_log, rule="fixed", max_keys=0))
    shipped = probe_log.runtime()
    assert f"rule fixed (what-if; {shipped.name} ships original)" in text
    assert "what-if" not in _text(render_report(probe_log, rule="original:segment", max_keys=0))


def test_summary_facts_have_labels_and_count_keys_not_records(production_page: str) -> None:
    text = _text(production_page)
    # 274 records of 4 keys have '_' in their key text: the count is of keys, with the records beside it
    assert "business keys with key hazards 4 " in text and "records with key hazards 274 " in text
    assert "flagged_keys" not in text
    assert "records pinned by the 0.4 lineage rule 0 " in text
    assert re.search(r'<th title="[^"]*none of which carries upstreamEventId[^"]*">records pinned by the 0\.4 '
                     r"lineage rule</th>", production_page)


def test_no_key_with_nothing_evicted_and_no_python_tuples(production_page: str) -> None:
    text = _text(production_page)
    assert re.findall(r"· (\d+) records evicted or invalidated", text) == ["9"]
    assert not re.search(r"\(\d+,\)", text), "log positions print as numbers, not as a Python tuple"
    assert "identity-mismatch lookup" in text and "triggered by record 995" in text


def test_ledger_tasks_show_reruns_first(production_page: str) -> None:
    table = production_page.split("tasks, re-runs and evictions first (first column: dispatch order)")[1]
    outcomes = re.findall(r"<td[^>]*>(REUSE|RERUN|RESUME|FAIL|NOT-DISPATCHED)</td>", table.split("</table>")[0])
    # 640 tasks, 9 of them re-runs: the report's first 50 rows start with all nine (they used to be buried)
    assert len(outcomes) == 50 and outcomes[:9] == ["RERUN"] * 9 and "RERUN" not in outcomes[9:]
    assert "tasks in dispatch order" not in production_page


def test_affected_keys_leave_out_keys_with_nothing_removed() -> None:
    records = pd.DataFrame({"business_key": pd.Categorical(["a", "a", "b", "c"]),
                            "status": ["evicted", "live", "live", "invalidated"]})
    assert affected_keys(records, limit=3) == [("a", 1), ("c", 1)]


def test_report_command_defaults_to_the_runtimes_rule(probe_path: Path, tmp_path: Path, capsys) -> None:
    assert main(["report", str(probe_path), "-o", str(tmp_path / "a.html"), "--keys", "0", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["rule"], info["what_if"], info["runtime"]["default_rule"]) == ("original", False, "original")
    assert main(["report", str(probe_path), "-o", str(tmp_path / "b.html"), "--keys", "0", "--rule", "fixed",
                 "--runtime", "main", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["rule"], info["what_if"], info["runtime"]["name"]) == ("fixed", True, "main")
    assert "rule fixed (what-if; main ships original)" in _text((tmp_path / "b.html").read_text())


def test_timelines_say_what_removed_a_record_in_a_readers_words() -> None:
    """A removed record's hover reason names the lookup that removed it and what that costs; the rule's
    words ("… > 1 -> evicted …") stay in the divergences' explanations, not in a record's reason."""
    log = ai.load(ai.samples.path("production"))
    page = render_report(log, rule="original", markers=ai.samples.markers("production"), max_keys=1)
    scripts = "".join(re.findall(r"<script>(.*?)</script>", page, flags=re.S))
    reasons = re.findall(r"status: evicted\\u003cbr\\u003ereason: (.*?)\\u003cbr", scripts)
    assert reasons
    for reason in reasons:
        assert reason.startswith("the lookup of ")
        assert reason.endswith("; its task runs again if the replay reaches it")
    assert "reason: original rule" not in scripts and "\\u003e 1 -\\u003e" not in scripts


def _tables(page: str) -> list[tuple[list[str], str]]:
    """(header texts, body) of every table of the page."""
    out = []
    for table in re.findall(r"<table.*?</table>", page, flags=re.S):
        heads = [htmllib.unescape(re.sub(r"<[^>]+>", "", h)).strip()
                 for h in re.findall(r"<thead>.*?</thead>", table, flags=re.S)[:1]
                 for h in re.findall(r"<th[^>]*>(.*?)</th>", h, flags=re.S)]
        out.append((heads, table))
    return out


def test_every_table_is_a_readers_names_no_internal_columns_and_positions_fold_into_records() -> None:
    """Issue 26 row 12 / item 8, every table of a report with a trace (ledger, trace reader, static views): no
    internal column, no raw sub-agent function id, no list of positions in a cell (they fold into a "records"
    link), no column empty in every row."""
    log = ai.load(ai.samples.path("production"))
    markers = ai.samples.markers("production")
    verification = ai.verify(log, ai.load_trace(ai.samples.path("production", "trace")), markers=markers)
    page = render_report(log, markers=markers, verification=verification, max_keys=0)
    tables = _tables(page)
    assert len(tables) >= 6
    uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    for heads, table in tables:
        assert not {"id", "cache_ops", "attribute_diff", "positions", "label", "router"} & set(heads), heads
        cells = [htmllib.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", table, re.S)
                 if "<details" not in c]
        assert not any("#" in c and uuid.search(c) for c in cells), "a sub-agent call by its function id"
        if "facts" not in table[:60]:   # a facts table lists partitions, not positions
            assert not any(re.fullmatch(r"\d+(, \d+){2,}", c.strip()) for c in cells), "positions listed in a cell"
        for n, head in enumerate(heads[1:]):
            column = re.findall(r"<tr><th>[^<]*</th>" + r"<td[^>]*>.*?</td>" * n + r"<td[^>]*>(.*?)</td>", table)
            assert not column or any(c.strip() for c in column), f"column {head!r} is empty in every row"
    ledger = page.split("what runs again, summed over keys")[1].split("</table>")[0]
    assert "reviewer (sub-agent call from review)" in ledger
    assert 'class="records"' in page.split('id="divergences"')[1]


def test_a_reconstructions_report_ledger_is_of_its_own_settings() -> None:
    """``write_report(ai.reconstruct(log, runtime="0.3", ...))``: the ledger and the why-section predicted the
    default runtime's restore (main: 1 RESUME, 2 NOT-DISPATCHED), not the reconstruction's (0.3: 14 REUSE)."""
    import agent_inspect as ai

    log, markers = ai.load(ai.samples.path("production_v4")), ai.samples.markers("production_v4")
    result = ai.reconstruct(log, markers=markers, runtime="0.3")
    want = ai.predict(log, markers=markers, runtime="0.3").tasks["outcome"].value_counts().to_dict()
    got = ai.report.prediction_of(result).tasks["outcome"].value_counts().to_dict()
    assert got == want == {"REUSE": 14, "RESUME": 1}
    page = ai.report.render_report(result, max_keys=0)
    ledger = page.split('id="ledger"')[1].split("</section>")[0]
    shown = re.sub(r"<[^>]*>", " ", ledger)      # the text, not the tooltips (the outcome's names every outcome)
    assert "REUSE: 14" in page and "NOT-DISPATCHED" not in shown


def test_the_ledger_says_the_predictions_warnings() -> None:
    """Markers naming none of the log's partitions: the report said only "no task", while ``predict`` (its view,
    ``agent-inspect reconstruct``) warns why; the ledger section now says the same sentences, escaped."""
    import html

    import agent_inspect as ai

    log = ai.load(ai.samples.path("N04"))
    warnings = ai.predict(log, markers=[{99: 5}]).warnings
    assert warnings
    page = ai.report.render_report(log, markers=[{99: 5}], max_keys=0)
    ledger = page.split('id="ledger"')[1].split("</section>")[0]
    assert all(f"<b>Warning:</b> {html.escape(w)}" in ledger for w in warnings)
    assert "Warning:" not in ai.report.render_report(log, markers=ai.samples.markers("N04"), max_keys=0)
