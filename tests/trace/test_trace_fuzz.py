"""Fuzz the trace reader: 30,000 mutated Trace Log lines (flipped bytes, truncation, wrong types, 1 MB attributes,
NULs, 900-deep nesting, timestamps out of range) in plain and gzip files. Nothing raises, and every line is kept,
as a record or as an error with its file, line and reason (or counted as an exact duplicate)."""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path
from typing import Any

import pandas as pd

from agent_inspect.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "sample_logs"
LINES = 30_000
FIELDS = ("timestamp", "detail", "inputRunId", "businessKey", "agentName", "entityType", "entityName", "executionId",
          "parentExecutionId", "entityMetadata", "status", "problemCategory", "attributes", "subtaskId")


def _odd_value(rnd: random.Random) -> Any:
    return rnd.choice([None, True, 0, -1, 2 ** 70, 1e308, -1e17, 1e17, "", "x" * 300, "2726-01-01T00:00:00Z",
                       "0001-01-01T00:00:00Z", [], [1, "a"], {}, {"a": {"b": None}}, "\u0000", "reused", "llm"])


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for i in range(depth):
        value = [value] if i % 2 else {"n": value}
    return value


def _mutate(line: str, rnd: random.Random) -> bytes:
    kind = rnd.randrange(9)
    raw = line.encode("utf-8")
    if kind == 0:                                       # flipped bytes
        b = bytearray(raw)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        return bytes(b)
    if kind == 1:                                       # truncation
        return raw[: rnd.randrange(len(raw))]
    if kind == 2:                                       # NULs
        b = bytearray(raw)
        for _ in range(rnd.randint(1, 3)):
            b.insert(rnd.randrange(len(b) + 1), 0)
        return bytes(b)
    obj = json.loads(line)
    if kind in (3, 4):                                  # wrong types
        for _ in range(rnd.randint(1, 3)):
            obj[rnd.choice(FIELDS)] = _odd_value(rnd)
    elif kind == 5:                                     # a field left out
        obj.pop(rnd.choice(list(obj)), None)
    elif kind == 6:                                     # timestamp out of pandas' range, or not a time
        obj["timestamp"] = rnd.choice(["2726-09-14T08:00:52.047Z", 10 ** 17, -10 ** 17, "Tuesday", 1.5e300])
    elif kind == 7:                                     # deep nesting
        obj["attributes"] = {"deep": _nested(rnd.choice([64, 300, 900]))}
    else:                                               # unchanged (some lines repeat: exact duplicates)
        pass
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")


def _lines(data: bytes) -> set[int]:
    """Line numbers (1-based) of the lines that hold anything but whitespace, as the reader splits them."""
    return {i + 1 for i, part in enumerate(data.split(b"\n")) if part.decode("utf-8", "replace").strip()}


def test_thirty_thousand_mutated_lines_are_each_kept_as_a_record_or_an_error(tmp_path: Path) -> None:
    rnd = random.Random(23)
    base = [ln for name in ("production", "subagents_v4", "production_v4")
            for ln in (LOGS / f"{name}.trace.log").read_text(encoding="utf-8").splitlines()]
    lines = [_mutate(rnd.choice(base), rnd) for _ in range(LINES)]
    for i in rnd.sample(range(LINES), 6):               # a few 1 MB attributes
        obj = json.loads(rnd.choice(base))
        obj["attributes"] = {"blob": "y" * (1 << 20)}
        lines[i] = json.dumps(obj).encode("utf-8")
    parts = [lines[:12_000], lines[12_000:24_000], lines[24_000:]]
    files = {tmp_path / "traces-job1-op-0.log": b"\n".join(parts[0]) + b"\n",
             tmp_path / "traces-job1-op-1.log": b"\n".join(parts[1]) + b"\n",
             tmp_path / "traces-job1-op-2.log.gz": b"\n".join(parts[2]) + b"\n"}
    for path, data in files.items():
        path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)

    trace = load_trace(tmp_path)
    s = trace.summary()                                 # and the derived tables do not raise either
    trace.executions()
    trace.calls()
    trace._repr_html_()

    errors = trace.errors
    assert list(errors.columns[:3]) == ["file", "line", "reason"]
    assert errors["reason"].map(lambda r: isinstance(r, str) and bool(r)).all()
    assert errors["file"].isin([str(p) for p in files]).all() and errors["line"].notna().all()
    assert len(errors) > LINES // 3 and len(trace.good) > LINES // 10     # both kinds in bulk
    assert s["duplicates_dropped"] > 0 and s["duplicates_dropped"] == len(trace.duplicates)
    reasons = " ".join(errors["reason"])
    for said in ("not valid JSON", "truncated JSON object", "outside the representable range", "not ISO-8601",
                 "is not valid UTF-8"):
        assert said in reasons, said
    assert trace.good["timestamp"].notna().all()

    for path, data in files.items():
        expected = _lines(data)
        kept: set[int] = set()
        for frame in (trace.records, trace.duplicates):
            kept |= set(frame.loc[frame["file"] == str(path), "line"].dropna().astype(int))
        # a broken pretty-printed object is one error for its lines
        for reason in errors.loc[errors["file"] == str(path), "reason"]:
            m = re.search(r"\(lines (\d+)-(\d+)\)", reason)
            if m:
                kept |= set(range(int(m.group(1)), int(m.group(2)) + 1))
        missing = sorted(expected - kept)
        assert not missing, (path.name, missing[:10])
    # no record is both good and an error, and every record says where it came from
    assert trace.records["file"].notna().all() and pd.api.types.is_integer_dtype(trace.records["line"])
