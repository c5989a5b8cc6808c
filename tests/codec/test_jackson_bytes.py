"""``canonical_json`` (the event-UUID bytes) and ``jackson_json`` (the value bytes) against what Jackson itself writes.

``tests/fixtures/jackson/expected.txt`` is the output of ``JacksonProbe.java`` (beside it) on ``probe.jsonl``, run
against the Jackson 2 that flink-dist 2.3.0 shades (2.20.1) with upstream's two mappers and ``writeValueAsBytes``:
strings with characters beyond U+FFFF, control characters, keys that sort differently in UTF-16, numbers, halves
of surrogate pairs. With a JDK and ``FLINK2_LIB`` set (scripts/gen_checkpoints.sh says how to get the jars), the
probe runs again and must print the committed file."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agent_inspect.codec import canonical_json, event_uuid
from agent_inspect.codec._json import jackson_json, parse_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "jackson"


def _cases() -> list[tuple[bytes, bytes, bytes, str]]:
    lines = (FIXTURES / "probe.jsonl").read_bytes().splitlines()
    written = (FIXTURES / "expected.txt").read_text(encoding="ascii").splitlines()
    assert written[0].startswith("jackson 2.") and len(written) == len(lines) + 1
    out = []
    for line, row in zip(lines, written[1:]):
        sorted_b64, plain_b64, uuid = row.split(" ")
        out.append((line, base64.b64decode(sorted_b64), base64.b64decode(plain_b64), uuid))
    return out


@pytest.mark.parametrize("n", range(9))
def test_our_bytes_are_jacksons(n: int) -> None:
    line, sorted_bytes, plain_bytes, uuid = _cases()[n]
    assert canonical_json(line) == sorted_bytes               # raw JSON in
    assert canonical_json(parse_json(line)) == sorted_bytes   # parsed values in
    assert jackson_json(parse_json(line)) == plain_bytes      # the value writer keeps insertion order
    assert event_uuid(line) == uuid


def test_the_probe_covers_every_line() -> None:
    assert len(_cases()) == 9


@pytest.mark.flink
def test_jackson_still_writes_the_committed_bytes(tmp_path: Path) -> None:
    lib = os.environ.get("FLINK2_LIB")
    jars = sorted(Path(lib).glob("flink-dist-*.jar")) if lib else []
    if not (shutil.which("javac") and shutil.which("java")) or not jars:
        pytest.skip("needs a JDK and FLINK2_LIB (a directory with flink-dist-*.jar)")
    subprocess.run(["javac", "-cp", str(jars[0]), "-d", str(tmp_path), str(FIXTURES / "JacksonProbe.java")],
                   check=True, timeout=300)
    done = subprocess.run(["java", "-cp", f"{jars[0]}{os.pathsep}{tmp_path}", "JacksonProbe"],
                          input=(FIXTURES / "probe.jsonl").read_bytes(), capture_output=True, check=True, timeout=300)
    assert done.stdout.decode("ascii") == (FIXTURES / "expected.txt").read_text(encoding="ascii")
