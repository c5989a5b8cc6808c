"""What the pages say in prose (lists, names, numbers a new user reads), checked against what the code does.

The code blocks run elsewhere (test_docs_code_blocks, test_readme_code); these are the sentences around them.
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import agent_inspect as ai
from agent_inspect._glossary import GLOSSARY, define
from tests.support.docs_site import REPO

DOCS = REPO / "docs"


def _text(page: str) -> str:
    return " ".join((DOCS / page if not page.endswith("README.md") else REPO / page).read_text(encoding="utf-8").split())


def test_the_divergence_rules_page_names_every_built_in_rule() -> None:
    built_in = _text("concepts/divergence-rules.md").split("Built-in rules:")[1].split("Every verb")[0]
    assert set(re.findall(r"`([^`]+)`", built_in)) == set(ai.rules.RULES)


def test_the_outcomes_page_lists_every_record_status_and_only_those() -> None:
    listed = re.search(r"The record statuses of a reconstruction \(([^)]*)\)", _text("concepts/outcomes.md"))
    assert listed is not None
    assert set(re.findall(r"`([^`]+)`", listed.group(1))) == set(ai.recovery.STATUSES)


def test_every_record_status_and_outcome_has_its_glossary_line() -> None:
    """The pages send a reader to the glossary for each status a reconstruction shows and each outcome."""
    assert [s for s in ai.recovery.STATUSES if not define(s)] == []
    for outcome in ai.store.Outcome:
        assert define(outcome.value), outcome
        assert outcome.value in GLOSSARY["outcome"] or outcome.value == "FAIL", outcome


def test_the_glossarys_pruned_covers_a_tombstones_delete() -> None:
    """G04's tombstones delete records of their state key: the reconstruction marks those ``pruned``."""
    case = next(c for c in ai.cases.load_cases([REPO / "cases" / "G04.toml"]) if c.id == "G04")
    built = ai.cases.build_case(case)
    status = ai.reconstruct(built.log, markers=list(built.markers)).records["status"].astype(str)
    assert (status == "pruned").sum() > 0 and (status == "tombstone").sum() > 0
    assert "tombstone" in define("pruned")


def test_the_glossarys_exposed_to_1301_says_what_the_scan_counts() -> None:
    """#1301 is the upstream rule evicting later rounds' saved completions when a round holds more than one state
    (N04 reproduces it); a branch change (conflicting roots) is what its fix must still protect: two columns."""
    doc = ai.fleet.ScanResult.__doc__ or ""
    assert "more than one state before a later round" in doc and "conflicting roots" in doc
    for term in ("exposed_1301", "exposed to #1301"):
        assert "more than one state" in define(term) and "conflicting roots" not in define(term), term
    assert "conflicting roots" in define("branch_change")


def test_the_runtimes_table_names_the_formats_each_sample_was_written_in() -> None:
    """concepts/runtimes.md's table, against what the bundled samples decode to and which runtime they read as."""
    rows = {}
    for line in (DOCS / "concepts" / "runtimes.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 4:
            rows[cells[0]] = dict(zip(("0.3", "0.4", "main"), cells[1:]))
    for name in ai.samples.SAMPLES:
        log = ai.load(ai.samples.path(name))
        runtime = log.runtime().name
        for column, row in (("key_format", "State key"), ("value_format", "Value")):
            cell = re.findall(r"K[\d.]+|V[\d][a-z+]*", rows[row][runtime])
            found = set(log.records[column].dropna().astype(str))
            assert found <= set(cell), (name, runtime, row, found, rows[row][runtime])


def test_the_readmes_layers_are_the_import_contracts() -> None:
    config = configparser.ConfigParser()
    config.read(REPO / ".importlinter")
    layers = [line.strip() for line in config["importlinter:contract:layers"]["layers"].strip().splitlines()]
    public = [layer for layer in layers if not layer.startswith("_")]
    said = re.search(r"one-way layers \((.*?)\):", _text("README.md"))
    assert said is not None
    assert [step.strip("` ") for step in said.group(1).split("→")] == public


def test_the_demo_help_counts_the_notebooks_right() -> None:
    from agent_inspect.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    text = " ".join(commands["demo"].description.split())
    words = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
    n = len(list((REPO / "notebooks").glob("*.ipynb")))
    for word in re.findall(r"\b(\w+) notebooks\b", text):
        assert words.get(word, n) == n, f"the demo's help says {word} notebooks; notebooks/ holds {n}"
    assert f"The {['zero', 'one', *words][n] if n < 9 else n} notebooks" in _text("notebooks/index.md")


def test_the_readmes_inferred_markers_with_the_trace_predict_the_checkpoints_restore() -> None:
    """README: from the log alone the first candidate lands late; with the trace it predicts the same restore."""
    log = ai.load(ai.samples.path("production"))
    trace = ai.load_trace(ai.samples.path("production", "trace"))
    true = ai.samples.markers("production")
    best = ai.infer_markers(log, trace)[0].markers
    assert best != true                  # so the README must not call it exact
    differ = {p: (true[0][p], best[0][p]) for p in true[0] if true[0][p] != best[0][p]}
    assert differ == {3: (444, 447)}
    a, b = ai.predict(log, markers=true).tasks, ai.predict(log, markers=best).tasks
    columns = ["business_key", "seq", "action", "outcome"]
    assert a[columns].astype(str).values.tolist() == b[columns].astype(str).values.tolist()
    text = _text("README.md")
    assert "first candidate is exact" not in text and "partition 3 three records later" in text


def test_the_tracing_guide_names_the_token_attributes_the_export_writes(tmp_path: Path) -> None:
    named = re.search(r"as the OpenTelemetry attributes \(([^)]*)\)", _text("guides/tracing-tool.md"))
    assert named is not None
    log = ai.load(ai.samples.path("N04"))
    v = ai.verify(log, ai.load_trace(ai.samples.path("N04", "trace")), markers=ai.samples.markers("N04"))
    ai.to_otel(v, path=tmp_path / "spans.json")
    spans = (tmp_path / "spans.json").read_text(encoding="utf-8")
    for attribute in re.findall(r"`([^`]+)`", named.group(1)):
        assert f'"{attribute}"' in spans, attribute


def test_the_case_files_page_says_where_every_bundled_case_comes_from() -> None:
    """Each file of cases/ is a matrix row of the spec or is named in the page's opening paragraph."""
    matrix = set(re.findall(r"^\| ([A-Z]\d\d) \|", (DOCS / "spec" / "divergence-cases.md").read_text(encoding="utf-8"),
                            re.M))
    opening = _text("reference/cases.md").split("Case files are TOML")[0]
    named = set(re.findall(r"`([A-Z]\d\d)`", opening))
    for first, last in re.findall(r"`([A-Z]\d\d)`–`([A-Z]\d\d)`", opening):
        named |= {f"{first[0]}{n:02d}" for n in range(int(first[1:]), int(last[1:]) + 1)}
    bundled = {p.stem for p in (REPO / "cases").glob("*.toml")}
    assert bundled - matrix - named == set()


def test_the_store_flavour_follows_the_key_format_not_the_runtime() -> None:
    """concepts/runtimes.md: production_k1 (K1 keys) evicts across keys read as 0.3 or as 0.4 alike."""
    log = ai.load(ai.samples.path("production_k1"))
    markers = ai.samples.markers("production_k1")
    for runtime in ("0.3", "0.4"):
        kinds = set(ai.reconstruct(log, markers=markers, runtime=runtime).divergences["kind"])
        assert "cross-key" in kinds, runtime
    text = _text("concepts/runtimes.md")
    assert "follows from each record's key format and the source, whatever the runtime" in text


def test_the_diff_guides_attempts_are_counted_per_key() -> None:
    """guides/read-a-diff.md: four runs of the job, three attempts of user-0011, one of a key no restore rewrote."""
    log = ai.load(ai.samples.path("production"))
    attempts = log.records.join(ai.history.annotate(log)).groupby("business_key")["attempt"].max()
    assert "4 attempts" in ai.samples.SAMPLES["production"]
    assert attempts["user-0011"] == 3 and attempts.min() == 1
    assert "four runs of the job left `user-0011` with three attempts" in _text("guides/read-a-diff.md")


def test_the_runtimes_page_gives_refresh_rows_to_every_runtime_that_keeps_pending_states() -> None:
    """concepts/runtimes.md, against ai.store.runtime_model: 0.4 keeps pending states too (addendum §2)."""
    page = (DOCS / "concepts" / "runtimes.md").read_text(encoding="utf-8")
    notable = next(line for line in page.splitlines() if line.startswith("| Notable"))
    cells = dict(zip(("0.3", "0.4", "main"), [c.strip() for c in notable.strip().strip("|").split("|")][1:]))
    timeline = page.split("timeline")[1].split("```")[0]
    entries = dict(re.findall(r"^ {4}(\S+) :(.*(?:\n {6,}:.*)*)", timeline, re.M))
    for runtime in ("0.3", "0.4", "main"):
        keeps = ai.store.runtime_model(runtime).keeps_pending
        said = "refresh rows" in entries[runtime] or "refresh rows" in cells[runtime] or (
            cells[runtime].startswith("as 0.4") and ai.store.runtime_model("0.4").keeps_pending)
        assert said == keeps, (runtime, keeps, cells[runtime], entries[runtime])


def test_the_glossarys_reused_is_the_reuse_outcome_not_a_record_status() -> None:
    """No record status is "reused": the word counts the tasks a restore REUSEs (scan, checker, trace status)."""
    assert "reused" not in ai.recovery.STATUSES
    assert "REUSE" in define("reused") and not define("reused").startswith("the record")
