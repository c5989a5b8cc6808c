"""A selector string and the object form with the same settings give one side: equal units, kind and label.

``"log.jsonl@markers=FILE@runtime=0.3"`` is ``ai.diffing.select(log, markers=<FILE's markers>, runtime="0.3")``:
markers (like a rule) ask for a recovery, a runtime alone says how the log is read.
"""

from __future__ import annotations

import json

import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.diffing import SelectorError

SAMPLE = "production_v4"
PATH = str(ai.samples.path(SAMPLE))
MARKERS_FILE = str(ai.samples.path(SAMPLE, "markers"))
MARKERS = ai.samples.markers(SAMPLE)
LOG = ai.load(PATH)
KEY = "rbds8dUvYRFCcIUn2aHGnfAJ7/0gTM3Pf1i5QPfP/5k="   # the key restored mid-action


def _same(a: ai.diffing.Side, b: ai.diffing.Side) -> None:
    assert (a.kind, a.label, a.rule, a.runtime, a.what_if) == (b.kind, b.label, b.rule, b.runtime, b.what_if)
    # a prediction draws the event ids of the tasks it reruns anew each time (diffs never compare them)
    assert a.units.drop(columns="task_event_id").equals(b.units.drop(columns="task_event_id"))


@pytest.mark.parametrize(("selectors", "settings"), [
    ("", {}),
    ("@fixed", {"rule": "fixed"}),
    ("@reconstruct=fixed", {"rule": "fixed", "mode": "reconstruct"}),
    ("@markers={m}", {"markers": MARKERS}),
    ("@runtime=0.3", {"runtime": "0.3"}),
    ("@markers={m}@runtime=0.3", {"markers": MARKERS, "runtime": "0.3"}),
    ("@original@markers={m}@runtime=0.3", {"rule": "original", "markers": MARKERS, "runtime": "0.3"}),
    ("@fixed@markers={m}@key={k}", {"rule": "fixed", "markers": MARKERS, "key": KEY}),
    ("@attempt=2@runtime=0.3", {"attempt": 2, "runtime": "0.3"}),
    ("@key={k}@runtime=0.3", {"key": KEY, "runtime": "0.3"}),
])
def test_a_selector_string_is_the_object_form_with_its_settings(selectors: str, settings: dict) -> None:
    text = PATH + selectors.format(m=MARKERS_FILE, k=KEY)
    side = ai.diffing.as_side(text)
    _same(side, ai.diffing.select(LOG, **settings))
    _same(side, ai.diffing.select(text))


def test_markers_ask_for_a_recovery_and_a_runtime_alone_reads_the_log() -> None:
    # select(log, markers=m) was the log as written (354 units) while "…@markers=FILE" predicted 3 tasks;
    # select(log, runtime="0.3") read the log as 0.3 (746 units) while "…@runtime=0.3" predicted under 0.3
    with_markers = ai.diffing.select(LOG, markers=MARKERS)
    assert with_markers.kind == "prediction" and with_markers.label == f"{PATH}@predict=original@markers=" \
        + "{0: 354, 1: 258, 2: 614, 3: 290}"
    as_03 = ai.diffing.as_side(f"{PATH}@runtime=0.3")
    assert (as_03.kind, as_03.label, len(as_03.units)) == ("log", f"{PATH}@runtime=0.3", 746)
    assert len(ai.diffing.as_side(PATH).units) < 746    # the 0.4 reading: refresh rows are no executions
    with pytest.raises(ai.RecoveryError, match="kafka_pending='marker' does not fit this log"):
        ai.diffing.as_side(PATH, kafka_pending="marker")      # checked as select checks it (it was dropped)
    with pytest.raises(SelectorError, match="selects records as written"):
        ai.diffing.as_side(f"{PATH}@attempt=2@markers={MARKERS_FILE}")
    with pytest.raises(SelectorError, match="selects records as written"):
        ai.diffing.select(LOG, attempt=2, markers=MARKERS)
    assert ai.diffing.select(LOG, attempt=1, markers=MARKERS, mode="log").kind == "attempt"


@pytest.mark.parametrize(("selectors", "own"), [
    ("", {"mode": "log"}),
    ("@fixed", {"rule": "fixed"}),
    ("@markers={m}", {"markers": MARKERS}),
    ("@attempt=1", {"attempt": 1}),
])
@pytest.mark.parametrize("shared", [
    {"runtime": "0.3"},
    {"rule": "original:kafka-k1", "markers": MARKERS},
    {"recovery": ai.Recovery.for_log(LOG, runtime="0.3")},
])
def test_settings_given_alongside_a_string_side_are_the_object_form_s(selectors: str, own: dict,
                                                                       shared: dict) -> None:
    # as_side("x.jsonl", …) without a rule selector dropped recovery= and every keyword setting; settings given to
    # every side never turn a side into a recovery (a plain or @attempt side stays records as written)
    if "markers" in own and "markers" in shared:
        return
    side = ai.diffing.as_side(PATH + selectors.format(m=MARKERS_FILE), **shared)
    if not selectors:                                    # a loaded log is its source's string side
        _same(ai.diffing.as_side(LOG, **shared), side)
    mode = "log" if "markers" not in own and "rule" not in own else None
    _same(side, ai.diffing.select(LOG, **{"mode": mode, **shared, **own}))


def test_the_cli_diffs_the_selectors_and_labels_them_as_the_api_does(capsys) -> None:
    a, b = f"{PATH}@markers={MARKERS_FILE}@runtime=0.4", f"{PATH}@fixed@markers={MARKERS_FILE}"
    assert main(["diff", a, b, "--json", "--limit", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    d = ai.diff(ai.diffing.select(LOG, markers=MARKERS, runtime="0.4"), ai.diffing.select(LOG, rule="fixed",
                                                                                          markers=MARKERS))
    assert (data["a"], data["b"]) == (d.a.label, d.b.label)
    assert data["sides"]["a"]["kind"] == "prediction" and data["sides"]["b"]["what_if"]
    assert main(["diff", f"{PATH}@runtime=0.3", PATH, "--json", "--limit", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sides"]["a"]["kind"] == "log" and data["a"] == f"{PATH}@runtime=0.3"


def test_explain_reads_a_selector_string_s_markers_as_a_diff_side_does() -> None:
    # ai.explain("log.jsonl@markers=FILE", ...) dropped the markers: it explained a restore of the whole loaded log
    task = (KEY, 5, "chat")
    given = ai.explain(LOG, *task, markers=MARKERS).to_dict()
    assert ai.explain(f"{PATH}@markers={MARKERS_FILE}", *task).to_dict() == given
    assert ai.explain(PATH, *task).to_dict() != given


def test_a_selector_s_label_reads_no_source() -> None:
    # the label is the canonical text of the selection: asking for it must not load a file or a topic (a label that
    # resolved its settings read the whole source, a broker connection for kafka://, from a property)
    sel = ai.diffing.parse_selector("kafka://127.0.0.1:1/no-such-topic@fixed@key=k")
    assert sel.label == "kafka://127.0.0.1:1/no-such-topic@predict=fixed@key=k"
    assert ai.diffing.parse_selector(f"{PATH}@rule=fixed").label == ai.diffing.parse_selector(f"{PATH}@fixed").label
    assert ai.diffing.select(f"{PATH}@fixed").label.endswith("@predict=fixed (what-if; main ships original)")


@pytest.mark.parametrize("read", [ai.diffing.select, ai.diffing.as_side, lambda text: ai.explain(text, KEY, 1, "a")],
                         ids=["select", "as_side", "explain"])
def test_every_reader_of_a_selector_reads_its_markers_before_its_source(read, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """One order for every side: a mistyped ``@markers=`` file is told before the source is read (a whole topic)."""
    import agent_inspect.log

    def load(*args: object, **options: object) -> None:
        raise AssertionError("the source was read before its selector's markers")

    monkeypatch.setattr(agent_inspect.log, "load", load)
    with pytest.raises(ai.InspectError, match="@markers file .* cannot be read"):
        read(f"{PATH}@markers={tmp_path / 'missing.json'}")
