"""Upstream cross-language event snapshots decode as events and keep one identity across languages."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from agent_inspect.codec import Event, event_uuid

# unmodified upstream data (apache/flink-agents e2e-test/cross-language-event-snapshots), see its README
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "flink-agents-event-snapshots"
JAVA = sorted((FIXTURES / "java").glob("*.json"))
PYTHON = sorted((FIXTURES / "python").glob("*.json"))
# The Python SDK writes extra attributes for these two events, so their identities legitimately differ.
DIFFERENT_ATTRIBUTES = {"chat_request_event.json", "tool_response_event.json"}


def test_fixture_directory_is_complete():
    assert len(JAVA) == 11 and len(PYTHON) == 12


@pytest.mark.parametrize("path", JAVA + PYTHON, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_decodes_as_event(path):
    event = msgspec.json.decode(path.read_bytes(), type=Event)
    assert event.id == "00000000-0000-0000-0000-000000000001"
    assert event.type and isinstance(event.attrs(), dict)
    assert event.extra == {} and event.event_class is None


@pytest.mark.parametrize("java", JAVA, ids=lambda p: p.name)
def test_event_uuid_is_the_same_from_java_and_python(java):
    py = FIXTURES / "python" / java.name
    java_event = msgspec.json.decode(java.read_bytes(), type=Event)
    py_event = msgspec.json.decode(py.read_bytes(), type=Event)
    assert java_event.type == py_event.type
    same = event_uuid(java_event.attributes) == event_uuid(py_event.attributes)
    assert same is (java.name not in DIFFERENT_ATTRIBUTES)
    # identity is over parsed attributes, so pretty-printing and property order never matter
    assert event_uuid(java_event.attributes) == event_uuid(java_event.attrs())
