"""A read checkpoint is accepted as ``markers=`` by every verb and by ``--checkpoint`` on the command line."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect.recovery import predict, reconstruct

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
PRODUCTION = FIXTURES / "production"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def log() -> ai.ActionStateLog:
    return ai.load(ai.samples.path("production"))


@pytest.fixture(scope="module")
def ckpt() -> ai.checkpoint.Checkpoint:
    return ai.checkpoint.read(PRODUCTION / "checkpoints")


def ids() -> object:
    counter = itertools.count()
    return lambda: f"id-{next(counter)}"


def test_the_sample_checkpoint_holds_the_sample_markers(ckpt: ai.checkpoint.Checkpoint) -> None:
    assert ckpt.recovery_markers() == ai.samples.markers("production")
    assert ckpt.merged == ai.samples.markers("production")[0]


BUFFERED = "83d1e6e1-ebb0-434a-bf79-cb1705d9383a"   # user-0009's input that arrived while its round 4 ran


def same_but_the_buffered_input(from_ckpt: pd.DataFrame, from_file: pd.DataFrame) -> None:
    """The checkpoint's prediction is the markers file's, but user-0009's buffered input keeps its event id (the
    source replays an input with a fresh one; the buffer restores the event it held)."""
    held = from_ckpt["event_id"] == BUFFERED
    assert held.any() and set(from_ckpt.loc[held, "business_key"]) == {"user-0009"}
    assert set(from_ckpt.loc[held, "seq"]) == {5} and from_file.loc[held, "event_id"].str.startswith("id-").all()
    # one fresh id fewer is drawn, so the later ones are numbered one lower: the same ids on the same rows otherwise
    ids_ckpt, ids_file = from_ckpt["event_id"].mask(held, "input"), from_file["event_id"].mask(held, "input")
    assert (pd.factorize(ids_ckpt)[0] == pd.factorize(ids_file)[0]).all()
    recorded = ~ids_file.astype(str).str.startswith("id-")
    assert (ids_ckpt[recorded] == ids_file[recorded]).all()
    pd.testing.assert_frame_equal(from_ckpt.drop(columns="event_id"), from_file.drop(columns="event_id"))


def test_predict_from_the_checkpoint_equals_predict_from_the_markers_file(
        log: ai.ActionStateLog, ckpt: ai.checkpoint.Checkpoint) -> None:
    from_file = predict(log, markers=ai.samples.markers("production"), new_id=ids())
    from_ckpt = predict(log, markers=ckpt, new_id=ids())
    same_but_the_buffered_input(from_ckpt.tasks, from_file.tasks)
    assert len(from_ckpt.tasks) > 0


def test_the_checkpoints_plan_holds_the_samples_real_pending_tasks_and_predicts_the_same(
        log: ai.ActionStateLog, ckpt: ai.checkpoint.Checkpoint) -> None:
    restore = json.loads(ai.samples.path("production", "markers").read_text())["restore"]
    assert ckpt.keyed is not None
    assert [(t.key, t.seq, t.action, t.event.type, dict(t.event.attributes), t.event.id)
            for v in ckpt.keyed.tasks.values() for t in v] == [
        (key, seq, action, e["type"], e["attributes"], e["id"]) for key, seq, action, e in restore["pending"]]
    plan = ckpt.replay_plan(log)
    markers = ai.samples.markers("production")
    assert plan.pending == ai.ReplayPlan.from_log(log, markers=markers).pending
    from_file = predict(log, markers=markers, new_id=ids())
    same_but_the_buffered_input(predict(log, markers=ckpt, plan=plan, new_id=ids()).tasks, from_file.tasks)


def test_reconstruct_replay_and_plan_take_the_checkpoint(log: ai.ActionStateLog,
                                                        ckpt: ai.checkpoint.Checkpoint) -> None:
    markers = ai.samples.markers("production")
    a, b = reconstruct(log, markers=ckpt), reconstruct(log, markers=markers)
    pd.testing.assert_frame_equal(a.records, b.records)
    assert a.markers == b.markers
    plan = ckpt.replay_plan(log)
    assert [i if i.event.id != BUFFERED else replace(i, event=ai.agents.AgentEvent(
        i.event.type, i.event.attributes, None, "org.apache.flink.agents.api.Event")) for i in plan.inputs] == \
        list(ai.ReplayPlan.from_log(log, markers=markers).inputs)
    ex = ai.ReplayExecutor(log, markers=ckpt)
    assert ex is not None


def test_the_cli_checkpoint_option_equals_the_markers_file() -> None:
    source = str(ai.samples.path("production"))
    markers_file = str(ai.samples.path("production", "markers"))

    def run(*args: str) -> dict[str, object]:
        out = subprocess.run([sys.executable, "-m", "agent_inspect", "reconstruct", source, "--json", "--no-ledger",
                              *args], capture_output=True, text=True, cwd=ROOT, check=True)
        return json.loads(out.stdout)

    from_checkpoint, from_file = run("--checkpoint", str(PRODUCTION / "checkpoints")), run("--markers", "@" + markers_file)
    settings_cp, settings_file = from_checkpoint.pop("settings"), from_file.pop("settings")
    # where the markers and the replayed inputs came from is said, and differs; the answer does not
    assert str(from_checkpoint.pop("markers_label")).endswith("(read from checkpoint 4 (Flink 2.x) at "
                                                             f"{PRODUCTION / 'checkpoints' / 'chk-4'})")
    assert from_file.pop("markers_label") == "{0: 248, 1: 245, 2: 215, 3: 444} (given)"
    assert str(from_checkpoint.pop("plan")).startswith("from checkpoint 4's keyed state")
    assert from_file.pop("plan") == "from the log's own later attempt"
    assert from_checkpoint == from_file
    assert settings_cp["markers"] == settings_file["markers"]  # type: ignore[index]
    assert str(settings_cp["provenance"]["markers"]).startswith("read from checkpoint 4")  # type: ignore[index]
    bad = subprocess.run([sys.executable, "-m", "agent_inspect", "reconstruct", source, "--checkpoint",
                          str(FIXTURES / "flink2-other-job" / "savepoint")], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2
    assert "no 'recoveryMarker' operator state" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    both = subprocess.run([sys.executable, "-m", "agent_inspect", "reconstruct", source, "--checkpoint", "x",
                           "--markers", "{}"], capture_output=True, text=True, cwd=ROOT)
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_the_keyed_restore_is_the_samples_restore(log: ai.ActionStateLog) -> None:
    restore = json.loads(ai.samples.path("production", "markers").read_text())["restore"]
    ckpt = ai.checkpoint.read(PRODUCTION / "savepoint")          # a savepoint: the pending task lists are read too
    assert ckpt.keyed is not None
    assert dict(ckpt.keyed.message_seq) == restore["restored_seq"]
    assert ckpt.keyed.pending_tasks == tuple(sorted({p[0] for p in restore["pending"]}))
    plan = ckpt.replay_plan(log)
    assert {k: plan.restored_seq[k] for k in restore["restored_seq"]} == restore["restored_seq"]
    inferred = ai.ReplayPlan.from_log(log, markers=ckpt)
    assert {k: v for k, v in plan.restored_seq.items() if k in inferred.restored_seq} == \
        {k: restore["restored_seq"].get(k, v) for k, v in inferred.restored_seq.items()}



def test_report_and_verify_restore_from_the_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agent_inspect.cli import main

    source = str(ai.samples.path("production"))
    trace = str(ai.samples.path("production", "trace"))
    assert main(["report", source, "--checkpoint", str(PRODUCTION / "savepoint"), "-o", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").stat().st_size > 0
    capsys.readouterr()
    assert main(["verify", source, "--trace", trace, "--checkpoint", str(PRODUCTION / "checkpoints"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["agree"] is True


def test_explain_on_the_command_line_restores_the_checkpoint(capsys: pytest.CaptureFixture[str]) -> None:
    """The buffered input's task explained from the checkpoint reads as from the markers file."""
    from agent_inspect.cli import main

    source = str(ai.samples.path("production"))
    said = []
    for option in (["--checkpoint", str(ai.samples.checkpoint("production"))],
                   ["--markers", str(ai.samples.path("production", "markers"))]):
        assert main(["explain", source, "--key", "user-0009", "--seq", "5", "--action", "chat", *option]) == 0
        said.append(capsys.readouterr().out)
    assert said[0] == said[1] and said[0].startswith("chat at round 5 of user-0009 (input “is the keyboard in stock”)")
