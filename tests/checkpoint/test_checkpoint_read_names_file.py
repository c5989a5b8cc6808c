"""A file that is no checkpoint, given to ai.checkpoint.read: the error names that file, not its directory."""

from __future__ import annotations

from pathlib import Path

import pytest

import agent_inspect as ai


def test_a_file_that_is_no_checkpoint_is_named(tmp_path: Path) -> None:
    """It said "sample_logs: not a Flink checkpoint _metadata file" for sample_logs/production.jsonl."""
    dump = ai.samples.path("production")
    with pytest.raises(ai.CheckpointFormatError) as raised:
        ai.checkpoint.read(dump)
    message = str(raised.value)
    assert message.startswith(f"{dump}: not a Flink checkpoint _metadata file")
    assert "chk-N directory" in message and "\n" not in message
    # a checkpoint directory's own _metadata is still named by its directory, as before
    empty = tmp_path / "chk-2"
    empty.mkdir()
    (empty / "_metadata").write_bytes(b"")
    with pytest.raises(ai.CheckpointFormatError, match=rf"^{empty}: _metadata is truncated"):
        ai.checkpoint.read(tmp_path)


def test_the_keyed_restore_prints_in_one_line() -> None:
    """`chk.keyed` at a prompt printed every key's seqNums, memory sizes and the whole Kryo task tree (10 kB)."""
    keyed = ai.checkpoint.read(ai.samples.checkpoint("production")).keyed
    assert keyed is not None
    text = repr(keyed)
    assert text == ("KeyedRestore(29 keys, 1 key with pending tasks (user-0009), 1 key with buffered inputs "
                    "(user-0009), all read)")


def test_the_checkpoint_repr_writes_the_operators_control_characters_out() -> None:
    """The operator's uid or name is the _metadata file's text: its escape sequences reached the terminal."""
    from dataclasses import replace

    chk = ai.checkpoint.read(ai.samples.checkpoint("production"))
    text = repr(replace(chk, operator="agent\x1b]0;pwned\x07\x1b[2J\u202e", flink_version="1.20\r\x9b2J"))
    assert " (checkpoint, Flink 1.20\\x0d\\u009b2J) of agent\\x1b]0;pwned\\x07\\x1b[2J\\u202e: " in text
