"""Every verb that reads a dump prints job data inert, on a terminal or not: no escape sequence, bell or
carriage return from a key, an action name or a payload reaches the output, and ``--json`` stays valid JSON
that reads back the same values."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.cli import main

EVIL = "\x1b]0;pwned\x07\x1b[2J\x1b[8m\r\x9b2J\u202e\x7f"   # title, clear, conceal, CR, C1 CSI, RTL override, DEL
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")   # any control but tab and newline


def _taint(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _taint(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_taint(v) for v in value]
    if value in ("IA", "WA", "WorkEvent", "A", "B", "k"):   # action names, an event type, inputs, the key
        return value + EVIL
    return value


@pytest.fixture(scope="module")
def evil(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("evil")
    lines = []
    for line in ai.samples.path("N04").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record["key"] = record["key"][:-1] + "k" + EVIL
        record["value"] = _taint(record["value"])
        lines.append(json.dumps(record))
    (root / "evil.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    trace = [json.dumps(_taint(json.loads(line)))
             for line in ai.samples.path("N04").with_suffix(".trace.log").read_text(encoding="utf-8").splitlines()]
    (root / "evil.trace.log").write_text("\n".join(trace) + "\n", encoding="utf-8")
    return {"log": root / "evil.jsonl", "trace": root / "evil.trace.log", "root": root}


def _verbs(p: dict[str, Path]) -> list[list[str]]:
    log, trace, root = str(p["log"]), str(p["trace"]), p["root"]
    key = "k" + EVIL
    return [["summary", log], ["summary", log, "--explain"], ["summary", log, "--key", "nope" + EVIL],
            ["reconstruct", log], ["diff", log, log, "--rule", "fixed"],
            ["explain", log, "--key", key, "--seq", "5", "--action", "IA" + EVIL],
            ["explain", log, "--key", key, "--seq", "5", "--action", "nope" + EVIL],
            ["export", log, "-o", str(root / "out.jsonl")], ["markers", log, "--trace", trace],
            ["otel", log, "--trace", trace, "-o", str(root / "otel.json")],
            ["report", log, "-o", str(root / "report.html")], ["scan", log, "--workers", "1", "--no-progress"],
            ["verify", log, "--trace", trace], ["trace", "summary", trace]]


def test_every_verb_prints_job_data_inert(evil: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    seen = []
    for argv in _verbs(evil):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        out, err = capsys.readouterr()
        seen.append((argv[0], code))
        assert not RAW.search(out + err), (argv, RAW.findall(out + err), out + err)
    assert ("reconstruct", 0) in seen and ("summary", 0) in seen


def test_json_output_stays_valid_and_reads_back_the_data(evil: dict[str, Path],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    for verb in ("summary", "reconstruct"):
        assert main([verb, str(evil["log"]), "--json"]) == 0
        out = capsys.readouterr().out
        assert not RAW.search(out)
        read = json.loads(out)   # valid JSON, the payload's characters exact
        assert verb == "summary" or read["divergences"][0]["business_key"] == "k" + EVIL


def test_a_usage_error_quoting_an_argument_is_inert(capsys: pytest.CaptureFixture[str]) -> None:
    # argparse's errors were printed before the output was made inert: an extra argument's escapes were obeyed
    with pytest.raises(SystemExit):
        main(["reconstruct", "x.jsonl", "k" + EVIL])
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err and not RAW.search(err)
