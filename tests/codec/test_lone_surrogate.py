"""A record whose JSON holds an escaped lone UTF-16 surrogate (``"\\uD800"``) loads.

Upstream's Jackson (``UTF8JsonGenerator``) writes a Java string cut inside a surrogate pair, e.g. a truncated LLM
answer ending in half an emoji, as ``\\uD800``: valid JSON that Jackson reads back. msgspec refuses it, so the record
was an error row ("not valid JSON: unexpected end of hex escape"). The value is read by the stdlib for just such
records and keeps the string as Python holds it; every view shows the surrogate as its escape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect import ValueFormatError
from agent_inspect.cli import main
from agent_inspect.codec import decode_action_state
from agent_inspect.widgets._common import decoded_value, pretty_json


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # G01 as kcat dumps it, input "B" cut in half a surrogate pair in every record that carries it
    text = ai.samples.path("G01", "kcat").read_text(encoding="utf-8")
    lone = text.replace('\\"input\\":\\"B\\"', '\\"input\\":\\"B\\\\uD800\\"')
    assert lone.count("uD800") == 3
    out = tmp_path_factory.mktemp("lone") / "G01.kcat.jsonl"
    out.write_text(lone, encoding="utf-8")
    return out


def test_the_record_loads_with_the_string_as_python_holds_it(dump: Path) -> None:
    log = ai.load(dump)
    assert len(log.errors) == 0 and len(log.records) == 6
    pos = [p for p in range(6) if b"uD800" in log.raw.value[p]][0]
    event = log.value(pos).task_event
    assert event.attrs() == {"input": "B\ud800"}
    assert bytes(event.attributes) == b'{"input":"B\\uD800"}'      # the raw part as Jackson wrote it
    assert ai.codec.canonical_json(event.attrs()) == b'{"input":"B\\uD800"}'
    # a pair written as two escapes (an emoji) was always read; a value that is no JSON still says so
    paired = bytes(log.raw.value[pos]).replace(b"B\\uD800", b"B\\uD83D\\uDE00")
    assert decode_action_state(paired).task_event.attrs() == {"input": "B\U0001F600"}
    with pytest.raises(ValueFormatError, match="not valid JSON"):
        decode_action_state(b'{"taskEvent": {"id": "x\\uD800}')


def test_every_view_shows_the_surrogate_escaped(dump: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    log = ai.load(dump)
    pred = ai.predict(log)
    assert "B\\ud800" in set(pred.tasks["input"])                  # an Arrow string column takes no surrogate
    for view in (pred, ai.reconstruct(log), log):
        view._repr_html_().encode("utf-8")                          # strict: a lone surrogate would raise
    assert "B\\ud800" in pred._repr_html_()
    pos = [p for p in range(6) if b"uD800" in log.raw.value[p]][0]
    assert decoded_value(log, pos)["taskEvent"]["attributes"] == {"input": "B\\ud800"}
    assert '"B\\\\ud800"' in pretty_json(log.value(pos))
    argv = ["explain", str(dump), "--key", "k", "--seq", "5", "--action", "IA"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "(input “B\\ud800”)" in out
    out.encode("utf-8")
    assert main([*argv, "--json"]) == 0
    json.loads(capsys.readouterr().out)
    assert main(["report", str(dump), "-o", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").stat().st_size > 0
    # written back as a dump and read again: the same record, the same string
    again = ai.load(ai.sources.write_jsonl(log, tmp_path / "again.jsonl"))
    assert len(again.errors) == 0 and again.value(pos).task_event.attrs() == {"input": "B\ud800"}
