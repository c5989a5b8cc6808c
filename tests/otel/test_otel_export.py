"""The OpenTelemetry export: span names, ids and attributes as upstream's converter has them, an OTLP JSON
file that reads back the same, and a real Arize Phoenix that receives the spans and gives them back."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.otel import spans_of
from agent_inspect.sources import read_otlp_json
from tests.support.phoenix import Phoenix, PhoenixLaunch, free_port, launch_phoenix, ready_phoenix, stop_phoenix

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "sample_logs"


def _sha(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).digest()[:n].hex()


@pytest.fixture(scope="module")
def production() -> Any:
    log = ai.load(LOGS / "production.jsonl")
    v = ai.verify(log, LOGS / "production.trace.log", markers=ai.samples.markers("production"))
    return v.with_tokens(prices={"support_agent.chat_model.chat": (2.5, 10.0), "*": (1.0, 4.0)})


@pytest.fixture(scope="module")
def n04_wrong_rule() -> Any:
    log = ai.load(LOGS / "N04.jsonl")
    return ai.verify(log, LOGS / "N04.fixed-rule.trace.log", markers=ai.samples.markers("N04"))


@pytest.fixture(scope="module")
def production_spans(production: Any) -> list[dict[str, Any]]:
    return spans_of(production)


@pytest.fixture(scope="module", autouse=True)
def phoenix_launch(request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixLaunch | None]:
    """Phoenix started with this module's first test when a selected test needs it: its first start (20-30 s,
    creating its database) runs on the other core beside the tests before it (its test comes last)."""
    if not any(item.module is request.module and "phoenix" in getattr(item, "fixturenames", ())
               for item in request.session.items):
        yield None
        return
    launch = launch_phoenix(tmp_path_factory.mktemp("phoenix"))
    try:
        yield launch
    finally:
        stop_phoenix(launch.proc)


@pytest.fixture(scope="module")
def phoenix(phoenix_launch: PhoenixLaunch | None) -> Phoenix:
    assert phoenix_launch is not None
    px = ready_phoenix(phoenix_launch)
    print(f"\nphoenix ready after {px.startup_s:.1f} s (pid {px.pid})")
    return px


def test_spans_follow_upstream_names_ids_and_attributes(production: Any, production_spans: list[dict[str, Any]]) -> None:
    spans = production_spans
    execs = production.trace.executions()
    calls = production.trace.calls()
    kinds = {s["name"].split(" ")[0] for s in spans}
    assert kinds == {"invoke_agent", "action", "chat", "execute_tool"}
    actions = [s for s in spans if s["name"].startswith("action ")]
    assert len(actions) == len(production.tasks)
    by_id = {s["span_id"]: s for s in spans}
    assert len(by_id) == len(spans), "span ids are unique"
    # an observed action execution *is* its execution's span: upstream's ids
    for e in execs.head(50).itertuples(index=False):
        s = by_id[_sha(e.execution_id, 8)]
        assert s["name"] == f"action {e.action}" and s["trace_id"] == _sha(e.input_run_id, 16)
        a = s["attributes"]
        assert a["flink_agents.execution_id"] == e.execution_id and a["flink_agents.input_run_id"] == e.input_run_id
        assert a["gen_ai.conversation.id"] == e.business_key and a["flink_agents.entity_type"] == "action"
        assert a["flink_agents.execution.status"] == e.statuses[-1]
        assert a["agent_inspect.verdict"] == "agree" and a["agent_inspect.rule"] == "original"
        root = by_id[s["parent_span_id"]]
        assert root["name"] == "invoke_agent production-agent" and root["parent_span_id"] is None
        assert root["trace_id"] == s["trace_id"]
    # durable calls under the execution that made them, with the model's tokens
    llm = calls[calls["entity_type"] == "llm"]
    assert len([s for s in spans if s["name"].startswith("chat ")]) == len(llm)
    c = llm.iloc[0]
    s = by_id[_sha(c.execution_id, 8)]
    assert s["parent_span_id"] == _sha(c.parent_execution_id, 8)
    assert s["attributes"]["gen_ai.operation.name"] == "chat"
    assert s["attributes"]["gen_ai.usage.input_tokens"] > 0 and s["attributes"]["gen_ai.usage.output_tokens"] > 0
    tools = [s for s in spans if s["name"].startswith("execute_tool ")]
    assert tools and all(t["attributes"]["gen_ai.operation.name"] == "execute_tool" for t in tools)
    # the store decisions behind a task are its events; a rerun's chain ends in its cause
    reruns = [s for s in actions if s["attributes"]["agent_inspect.predicted"] == "RERUN"]
    assert reruns and all(s["events"] for s in reruns)
    kinds_seen = {e["name"] for s in reruns for e in s["events"]}
    assert kinds_seen & {"evict", "invalidate", "remove", "tombstone", "prune", "window", "miss"}
    # cost on the action span: the tokens its LLM calls re-spent
    spent = [s for s in reruns if s["attributes"].get("agent_inspect.tokens.observed")]
    assert spent and all(s["attributes"]["agent_inspect.cost.observed"] > 0 for s in spent)


def test_a_disagreement_is_an_error_status_with_its_cause(n04_wrong_rule: Any) -> None:
    spans = spans_of(n04_wrong_rule)
    bad = [s for s in spans if s["name"].startswith("action ") and s["status"]["code"] == "ERROR"]
    assert len(bad) == len(n04_wrong_rule.disagreements) == 2
    for s in bad:
        assert s["attributes"]["agent_inspect.verdict"] == "disagree"
        assert s["attributes"]["agent_inspect.cause"] == "wrong-rule"
        assert s["status"]["message"].startswith("wrong-rule: it would agree under rule fixed")
    roots = [s for s in spans if s["parent_span_id"] is None]
    assert any(r["status"]["code"] == "ERROR" and r["attributes"]["agent_inspect.disagreements"] == 2 for r in roots)


def test_otlp_json_file_round_trips(production: Any, production_spans: list[dict[str, Any]], tmp_path: Path) -> None:
    out = ai.to_otel(production, path=tmp_path / "spans.json")
    assert out.spans == len(production_spans) and out.path == str(tmp_path / "spans.json")
    raw = json.loads((tmp_path / "spans.json").read_text())
    first = raw["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(first["traceId"]) == 32 and len(first["spanId"]) == 16, "OTLP JSON ids are hex"
    back = {s["span_id"]: s for s in read_otlp_json(tmp_path / "spans.json")}
    assert len(back) == len(production_spans)
    for s in production_spans:
        b = back[s["span_id"]]
        assert (b["name"], b["trace_id"], b["parent_span_id"], b["start_ns"], b["end_ns"]) == \
            (s["name"], s["trace_id"], s["parent_span_id"], s["start_ns"], s["end_ns"])
        assert b["attributes"] == s["attributes"]
        assert [(e["name"], e["time_ns"], e["attributes"]) for e in b["events"]] == \
            [(e["name"], e["time_ns"], e["attributes"]) for e in s["events"]]
        assert b["status"]["code"] == s["status"]["code"]
        assert b["resource"]["service.name"] == "agent_inspect"


def test_an_unreachable_endpoint_fails_fast_with_one_line(n04_wrong_rule: Any, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1/traces"
    t0 = time.monotonic()
    with pytest.raises(ai.InspectError, match="cannot reach the OpenTelemetry endpoint .*-o spans.json"):
        ai.to_otel(n04_wrong_rule, endpoint=url)
    assert time.monotonic() - t0 < 5
    code = main(["otel", str(LOGS / "N04.jsonl"), "--trace", str(LOGS / "N04.trace.log"), "--markers",
                 f"@{LOGS / 'N04.markers.json'}", "--endpoint", url])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "cannot reach" in err
    with pytest.raises(ai.InspectError, match="exactly one of"):
        ai.to_otel(n04_wrong_rule)


def test_a_prediction_without_a_trace_exports_unchecked_spans(tmp_path: Path) -> None:
    log = ai.load(LOGS / "N04.jsonl")
    out = ai.to_otel(log, path=tmp_path / "n04.json", markers=ai.samples.markers("N04"))
    spans = read_otlp_json(tmp_path / "n04.json")
    assert out.spans == len(spans) and out.errors == 0
    actions = [s for s in spans if s["name"].startswith("action ")]
    roots = {s["span_id"] for s in spans if s["parent_span_id"] is None}
    assert actions and all(s["attributes"]["agent_inspect.verdict"] == "unchecked" for s in actions)
    assert all(s["parent_span_id"] in roots and s["events"] for s in actions)
    assert all("flink_agents.execution_id" not in s["attributes"] for s in actions)


def test_a_task_the_trace_cannot_decide_is_undetermined_not_an_error() -> None:
    v = ai.verify(ai.load(LOGS / "G02.jsonl"), LOGS / "G02.trace.log", markers=ai.samples.markers("G02"))
    assert v.counts() == {"agree": 2, "disagree": 0, "undetermined": 1}
    actions = [s for s in spans_of(v) if s["name"].startswith("action ")]
    verdicts = sorted(s["attributes"]["agent_inspect.verdict"] for s in actions)
    assert verdicts == ["agree", "agree", "undetermined"]
    assert all(s["status"]["code"] == "UNSET" for s in spans_of(v))
    roots = [s for s in spans_of(v) if s["name"].startswith("invoke_agent")]
    assert roots and all(s["attributes"].get("agent_inspect.disagreements", 0) == 0 for s in roots)


def test_the_cli_json_names_the_rule_as_its_text_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a what-if export must say so to a script too, not only in the human line
    assert main(["otel", str(LOGS / "N04.jsonl"), "--markers", f"@{LOGS / 'N04.markers.json'}", "--rule", "fixed",
                 "-o", str(tmp_path / "n04.json"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rule"] == "fixed (what-if; 0.4 ships original)" and out["spans"] == len(read_otlp_json(tmp_path / "n04.json"))
    assert main(["otel", str(LOGS / "N04.jsonl"), "--markers", f"@{LOGS / 'N04.markers.json'}",
                 "-o", str(tmp_path / "n04.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rule"] == "original"


def test_root_spans_count_their_disagreements_in_one_pass_and_keep_one_order(tmp_path: Path) -> None:
    # each input run's root scanned every span for its errors, hashing the run id per span: 215k SHA-256 on the
    # production sample's 1,133 spans, 7.8 M (14 of 25 s) on a 500-key fleet; and roots came in hash-seed order
    import cProfile
    import pstats
    import subprocess
    import sys

    prediction = ai.predict(ai.load(LOGS / "production.jsonl"))      # the whole log: 1,133 spans in 190 traces
    profile = cProfile.Profile()
    spans = profile.runcall(spans_of, prediction)
    hashed = sum(n for (_, _, name), (_, n, *_) in pstats.Stats(profile).stats.items()  # type: ignore[attr-defined]
                 if name == "trace_id_of")
    assert len(spans) == 1133 and hashed <= 3 * len(spans)
    v = ai.verify(ai.load(LOGS / "N04.jsonl"), LOGS / "N04.fixed-rule.trace.log", markers=ai.samples.markers("N04"))
    roots = [s for s in spans_of(v) if s["parent_span_id"] is None]
    assert sum(s["attributes"]["agent_inspect.disagreements"] for s in roots) == 2
    code = "import sys, agent_inspect as ai; ai.to_otel(ai.load(sys.argv[1]), path=sys.argv[2])"
    outs = []
    # the two processes side by side (2 cores in CI)
    runs = {seed: subprocess.Popen([sys.executable, "-c", code, str(LOGS / "production.jsonl"),
                                    str(tmp_path / f"spans-{seed}.json")],
                                   env={**os.environ, "PYTHONHASHSEED": seed}) for seed in ("1", "2")}
    try:
        for seed, run in runs.items():
            assert run.wait(timeout=300) == 0
            # the spans in file order, without the SDK's random service.instance.id
            out = tmp_path / f"spans-{seed}.json"
            outs.append([{k: v for k, v in span.items() if k != "resource"} for span in read_otlp_json(out)])
    finally:
        for run in runs.values():
            if run.poll() is None:
                run.kill()
                run.wait()
    assert outs[0] == outs[1]


# last in the module: Phoenix starts beside the tests above (phoenix_launch)
@pytest.mark.slow
def test_phoenix_receives_the_spans_and_gives_them_back(phoenix: Phoenix, production: Any,
                                                         production_spans: list[dict[str, Any]],
                                                         n04_wrong_rule: Any,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    done = ai.to_otel(production, endpoint=phoenix.url, project="production")
    assert done.spans == len(production_spans)
    want = {s["span_id"]: s for s in production_spans}
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    while len(got) < len(want) and time.monotonic() < deadline:   # Phoenix inserts in the background
        time.sleep(0.5)
        got = phoenix.spans("production")
    assert len(got) == len(want)
    by_id = {s["context"]["span_id"]: s for s in got}
    assert set(by_id) == set(want)
    for sid, s in by_id.items():
        w = want[sid]
        assert s["name"] == w["name"] and s["context"]["trace_id"] == w["trace_id"]
        assert s["parent_id"] == w["parent_span_id"], "parent links kept"
        if w["parent_span_id"] is not None:
            assert w["parent_span_id"] in by_id
        for k in ("gen_ai.operation.name", "flink_agents.execution_id", "agent_inspect.verdict",
                  "gen_ai.usage.input_tokens"):
            if k in w["attributes"]:
                assert s["attributes"][k] == w["attributes"][k]
        assert len(s["events"]) == len(w["events"])
    # the CLI, on a trace that disagrees: the error status reaches the backend
    assert main(["otel", str(LOGS / "N04.jsonl"), "--trace", str(LOGS / "N04.fixed-rule.trace.log"), "--markers",
                 f"@{LOGS / 'N04.markers.json'}", "--endpoint", f"{phoenix.url}/v1/traces", "--project", "n04",
                 "--json"]) == 0
    sent = json.loads(capsys.readouterr().out)
    n04: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    while len(n04) < sent["spans"] and time.monotonic() < deadline:
        time.sleep(0.5)
        n04 = phoenix.spans("n04")
    assert len(n04) == sent["spans"] and sent["errors"] == 3
    errors = [s for s in n04 if s["status_code"] == "ERROR" and s["name"].startswith("action ")]
    assert len(errors) == 2 and all(s["attributes"]["agent_inspect.cause"] == "wrong-rule" for s in errors)
