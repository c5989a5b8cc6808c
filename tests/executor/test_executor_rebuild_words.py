"""The executor's rebuild step says what the restore starts from: the rule as labelled everywhere (a what-if
says so) and markers that leave the log's partitions out (as ``predict``'s warnings)."""

from __future__ import annotations

import agent_inspect as ai


def test_markers_naming_no_partition_of_the_log_are_said_at_the_rebuild():
    log = ai.load(ai.samples.path("N04"))
    ex = ai.ReplayExecutor(log, markers=[{99: 5}])
    rebuild = ex.step()
    assert rebuild is not None and rebuild.kind is ai.executor.StepKind.REBUILD
    assert "none of the log's (partition 0)" in (rebuild.reason or "")
    assert list(ai.predict(log, markers=[{99: 5}]).warnings) == ai.recovery.marker_warnings([{99: 5}], [0])
    assert all(w in (rebuild.reason or "") for w in ai.recovery.marker_warnings([{99: 5}], [0]))


def test_the_bundled_markers_need_no_warning():
    log = ai.load(ai.samples.path("N04"))
    rebuild = ai.ReplayExecutor(log, markers=ai.samples.markers("N04")).step()
    assert rebuild is not None and rebuild.reason == "1 marker, rule original"


def test_a_what_if_rule_is_labelled_at_the_rebuild():
    log = ai.load(ai.samples.path("production_v4"))
    ex = ai.ReplayExecutor(log, rule="fixed", markers=ai.samples.markers("production_v4"))
    rebuild = ex.step()
    assert rebuild is not None
    assert ex.recovery.what_if and ai.log.rule_label(ex.recovery.rule, ex.recovery.runtime) in (rebuild.reason or "")
    assert "what-if" in (rebuild.reason or "")


def test_the_safety_report_names_its_rule_and_a_what_if() -> None:
    log, markers = ai.load(ai.samples.path("production_v4")), ai.samples.markers("production_v4")
    ex = ai.ReplayExecutor(log, rule="fixed", markers=markers)
    ex.run()
    report = ex.report()
    assert report.rule_label == ex.recovery.rule_label == "fixed (what-if; main ships original)"
    assert "under rule <code>fixed (what-if; main ships original)</code>" in report._repr_html_()
    shipped = ai.ReplayExecutor(log, markers=markers)
    shipped.run()
    assert "under rule <code>original</code>" in shipped.report()._repr_html_()


def test_predict_and_the_rebuild_step_hand_marker_warnings_their_log(monkeypatch) -> None:
    """The partitions of the log are read in one place, ``marker_warnings``: both callers pass the log itself."""
    import agent_inspect.executor._engine as executor_engine
    import agent_inspect.recovery._predict as predict_module
    from agent_inspect.recovery import marker_warnings

    log = ai.load(ai.samples.path("production"))
    markers = [{0: 248, 2: 215}]                                   # partitions 1 and 3 have no marker
    said = marker_warnings(markers, log)
    assert said == marker_warnings(markers, log.records) == marker_warnings(markers, [3, 1, 0, 2, -1])
    assert said == ["partitions 1, 3 have no marker: the rebuild reads none of their records and replays none of "
                    "their inputs"]
    assert marker_warnings(markers, None) == [] and marker_warnings(None, log) == []
    given = []

    def spy(markers, partitions):
        given.append(partitions)
        return marker_warnings(markers, partitions)

    monkeypatch.setattr(predict_module, "marker_warnings", spy)
    monkeypatch.setattr(executor_engine, "marker_warnings", spy)
    assert said[0] in ai.predict(log, markers=markers).warnings
    rebuild = ai.ReplayExecutor(log, markers=markers).step()
    assert rebuild is not None and said[0] in (rebuild.reason or "")
    assert len(given) == 2 and all(g is log for g in given)
