"""A hand-written plain JSONL dump whose inline value holds an escaped lone surrogate (``"\\ud800"``, as Jackson writes
a Java string cut inside a surrogate pair) loads as the same record from Kafka or a kcat dump does, through the codec's
reader (before: an error row, "not valid JSON: unexpected end of hex escape"). Lines broken otherwise stay error rows."""

from __future__ import annotations

from pathlib import Path

import agent_inspect as ai


def _dumps(tmp_path: Path) -> tuple[Path, Path]:
    plain = ai.samples.path("G01").read_text(encoding="utf-8").replace('"input":"B"', '"input":"B\\ud800"')
    kcat = ai.samples.path("G01", "kcat").read_text(encoding="utf-8").replace('\\"input\\":\\"B\\"',
                                                                           '\\"input\\":\\"B\\\\uD800\\"')
    assert plain.count("ud800") == 3 and kcat.count("uD800") == 3
    (tmp_path / "G01.jsonl").write_text(plain, encoding="utf-8")
    (tmp_path / "G01.kcat.jsonl").write_text(kcat, encoding="utf-8")
    return tmp_path / "G01.jsonl", tmp_path / "G01.kcat.jsonl"


def test_a_plain_dump_reads_a_lone_surrogate_as_the_codec_does(tmp_path: Path) -> None:
    plain_path, kcat_path = _dumps(tmp_path)
    plain, kcat = ai.load(plain_path), ai.load(kcat_path)
    assert len(plain.errors) == 0 and len(plain.records) == 6
    pos = [p for p in range(6) if b"uD800" in plain.raw.value[p]]
    assert sum(bytes(plain.raw.value[p]).count(b"uD800") for p in pos) == 3
    event = plain.value(pos[0]).task_event
    assert event.attrs() == {"input": "B\ud800"}
    assert bytes(event.attributes) == b'{"input":"B\\uD800"}'            # the raw part as Jackson writes it
    for p in range(6):
        assert plain.value(p) == kcat.value(p)
    columns = ["state_key", "seq", "event_uuid", "task_event_type", "completed", "output_event_count"]
    assert plain.records[columns].equals(kcat.records[columns])
    assert ai.predict(plain).tasks["input"].tolist() == ai.predict(kcat).tasks["input"].tolist()


def test_lines_broken_otherwise_stay_error_rows(tmp_path: Path) -> None:
    good = ai.samples.path("G01").read_text(encoding="utf-8").splitlines()[0]
    cut = good.replace('"input":"A"', '"input":"A\\ud800')                      # a string never closed
    lone_key = good.replace('"key":"', '"key":"\\ud800', 1)                     # no state key has half a pair
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([good, cut, lone_key]) + "\n", encoding="utf-8")
    log = ai.load(path)
    assert len(log.records) == 3 and len(log.errors) == 2
    assert all("not valid JSON" in e for e in log.errors["error"])
