"""A checkpoint URL whose storage cannot be reached: one line naming the URL and what to do.

The client's error went out bare ("Connection refused", "Name or service not known", no URL), and pyarrow's HDFS
error without Java was a dozen lines (each libjvm path it tried).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.cli import main


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_closed_port_names_the_url_and_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"ftp://127.0.0.1:{_closed_port()}/checkpoints"    # fsspec's ftp connects as it opens
    with pytest.raises(ai.SourceError, match=rf"cannot reach {url} \(.*refused\); check the address"):
        ai.checkpoint.read(url)
    code = main(["reconstruct", str(ai.samples.path("G01")), "--checkpoint", url])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and url in err and "local folder" in err


def test_hdfs_without_java_is_one_line_that_says_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    import fsspec.core

    def no_jvm(url: str) -> object:
        raise OSError("Unable to load libjvm\n" + "\n".join(f"dlopen(/usr/lib/jvm/{i}/libjvm.so) failed" for i in range(9)))

    monkeypatch.setattr(fsspec.core, "url_to_fs", no_jvm)
    with pytest.raises(ai.SourceError) as info:
        ai.checkpoint.read("hdfs://namenode:8020/flink/checkpoints")
    message = str(info.value)
    assert "\n" not in message and "dlopen" not in message
    assert message.startswith("cannot open hdfs://namenode:8020/flink/checkpoints: Unable to load libjvm; ")
    assert "JAVA_HOME" in message


def test_a_read_that_times_out_is_unreachable_too(monkeypatch: pytest.MonkeyPatch) -> None:
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    class Silent(MemoryFileSystem):
        def info(self, path: str, **kwargs: object) -> dict[str, object]:   # what isfile asks, unswallowed
            raise TimeoutError("timed out")

    monkeypatch.setattr(fsspec.core, "url_to_fs", lambda url: (Silent(), "bucket/chk-1"))
    with pytest.raises(ai.SourceError, match=r"cannot reach memory://bucket/chk-1 \(timed out\)"):
        ai.checkpoint.read("memory://bucket/chk-1")


def test_a_refused_look_at_a_missing_path_is_not_there(monkeypatch: pytest.MonkeyPatch) -> None:
    """S3 answers 403 (``PermissionError``), not 404, for a key that is not there to credentials without
    ``s3:ListBucket``: such a look means "not there" (as fsspec's ``isfile`` has it), so a checkpoint directory whose
    ``_metadata`` those credentials may read is still read. Only a dead endpoint or no credentials at all end it."""
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    metadata = next(Path(ai.samples.checkpoint("production")).rglob("_metadata"))

    class GetObjectOnly(MemoryFileSystem):
        def info(self, path: str, **kwargs: object) -> dict[str, object]:
            if not path.endswith("/_metadata"):
                raise PermissionError("Access Denied")      # a HEAD of the directory itself: 403
            return super().info(path, **kwargs)

    fs = GetObjectOnly()
    fs.pipe("/bucket/chk-5/_metadata", metadata.read_bytes())
    monkeypatch.setattr(fsspec.core, "url_to_fs", lambda url, **options: (fs, "/bucket/chk-5"))
    files = ai.sources.open_checkpoint("memory://bucket/chk-5")
    assert files.metadata_file.endswith("/bucket/chk-5/_metadata") and files.metadata == metadata.read_bytes()
