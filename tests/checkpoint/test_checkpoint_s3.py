"""A Flink checkpoint on S3, the storage most Flink jobs checkpoint to: read from a real S3 server (moto's, on
127.0.0.1), found the documented way (the AWS environment: ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, …), it is
the checkpoint the local copy is; an endpoint that is silent or refuses fails in one line within about twice
``timeout``.

Against a silent endpoint ``timeout=1`` took 200 s and 75 connections (the default 10: 877 s): botocore tried each
request up to 5 times, s3fs retried that 5 times, and each of fsspec's existence checks (which swallow errors)
waited its own round. A refused endpoint was a traceback (botocore's ``EndpointConnectionError`` is no ``OSError``)
after 17 s, and so were missing credentials. And the endpoint of the first read stuck: fsspec's instance cache does
not see the environment.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import moto.server as moto_server
import pytest
import s3fs

import agent_inspect as ai
from agent_inspect.cli import main
from tests.support.unreachable import fails_within

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints" / "flink2-p4-file"
LOCAL = RUN / "checkpoints" / "chk-2"          # a hashmap checkpoint: keyed state in one file per subtask
BUCKET, JOB = "flink-state", "5d8a1c4e0b7f4d2a9c3e6f1a2b4c8d9e"
BASE = f"{BUCKET}/checkpoints"                  # state.checkpoints.dir: s3://flink-state/checkpoints
#: Two attempts of ``timeout`` each, botocore's backoff between them (under 1 s) and setting up the client, with room
#: for a busy machine; before, 200 s.
BOUND = 6.0


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    """moto's S3 server in a thread on 127.0.0.1 holding one job's checkpoints as Flink lays them out: chk-2
    completed (``_metadata`` and its state files), chk-3 still being written (state files, no ``_metadata``),
    shared/ and taskowned/ beside them; shut down at the end."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        fs = s3fs.S3FileSystem(endpoint_url=endpoint, key="testing", secret="testing", skip_instance_cache=True)
        fs.mkdir(BUCKET)
        for file in LOCAL.iterdir():
            fs.pipe_file(f"{BASE}/{JOB}/chk-2/{file.name}", file.read_bytes())
        some_state = next(f for f in LOCAL.iterdir() if f.name != "_metadata")
        fs.pipe_file(f"{BASE}/{JOB}/chk-3/{some_state.name}", some_state.read_bytes())
        fs.pipe_file(f"{BASE}/{JOB}/shared/placeholder", b"")
        fs.pipe_file(f"{BASE}/{JOB}/taskowned/placeholder", b"")
        yield endpoint
    finally:
        server.stop()


def _aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, endpoint: str) -> None:
    """The AWS environment a user sets for an S3-compatible store, and nothing of this machine's own."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")   # no credentials: never ask the link-local metadata host
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.fixture()
def on_s3(s3_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    _aws_env(monkeypatch, tmp_path, s3_server)
    return s3_server


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("url", [f"s3://{BASE}",                       # the job-id level down, latest completed
                                 f"s3://{BASE}/{JOB}",
                                 f"s3a://{BASE}/{JOB}/chk-2",          # Flink's own scheme for S3
                                 f"s3://{BASE}/{JOB}/chk-2/_metadata"])
def test_a_checkpoint_on_s3_is_the_checkpoint_the_local_copy_is(url: str, on_s3: str) -> None:
    local = ai.checkpoint.read(LOCAL)
    remote = ai.checkpoint.read(url)
    assert remote.path == f"{url.split('://')[0]}://{BASE}/{JOB}/chk-2"
    assert remote.timestamp is not None
    assert remote.keyed is not None and remote.keyed.tasks          # the state files were read from S3 too
    assert dataclasses.replace(remote, path=local.path, timestamp=local.timestamp) == local


def test_a_checkpoint_number_picks_it_and_an_unfinished_one_is_named(on_s3: str) -> None:
    assert ai.checkpoint.read(f"s3://{BASE}", checkpoint=2, keyed=False).checkpoint_id == 2
    with pytest.raises(ai.SourceError, match=r"^chk-3 under s3://.* has no _metadata: it did not complete$"):
        ai.checkpoint.read(f"s3://{BASE}/{JOB}", checkpoint=3)
    with pytest.raises(ai.SourceError, match=rf"^checkpoint path s3://{BUCKET}/elsewhere does not exist$"):
        ai.checkpoint.read(f"s3://{BUCKET}/elsewhere")


def test_the_command_line_reads_markers_from_s3(on_s3: str, capsys: pytest.CaptureFixture[str]) -> None:
    source = str(ai.samples.path("G01"))
    found = []
    for checkpoint in (str(LOCAL), f"s3://{BASE}/{JOB}"):
        assert main(["markers", source, "--checkpoint", checkpoint, "--json"]) == 0
        found.append(json.loads(capsys.readouterr().out))
    local, remote = (f["candidates"][0] for f in found)
    assert remote["source"] == "checkpoint" and remote["markers"] == local["markers"]


def test_each_read_takes_the_endpoint_the_environment_names(on_s3: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ai.checkpoint.read(f"s3://{BASE}", keyed=False).checkpoint_id == 2
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(ai.SourceError, match=r"^cannot reach s3://"):   # not the first read's endpoint again
        ai.checkpoint.read(f"s3://{BASE}", keyed=False)


def test_no_credentials_is_one_line_not_a_missing_path(on_s3: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(ai.SourceError, match=rf"^cannot read checkpoint at s3://{BASE}: Unable to locate credentials$"):
        ai.checkpoint.read(f"s3://{BASE}")


def test_a_silent_endpoint_fails_in_one_line_within_the_bound(silent_peer: int, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    _aws_env(monkeypatch, tmp_path, f"http://127.0.0.1:{silent_peer}")
    fails_within(f"s3://{BASE}/{JOB}", BOUND)


def test_a_refusing_endpoint_fails_in_one_line_at_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    _aws_env(monkeypatch, tmp_path, f"http://127.0.0.1:{_closed_port()}")
    url = f"s3a://{BASE}/{JOB}"
    start = time.monotonic()
    with pytest.raises(ai.SourceError, match=rf"^cannot reach {url} \(Could not connect to the endpoint URL"):
        ai.checkpoint.read(url, timeout=1)
    assert time.monotonic() - start < BOUND
    code = main(["reconstruct", str(ai.samples.path("G01")), "--checkpoint", url, "--timeout", "1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and url in err and "local folder" in err, err
