"""Reading a Flink checkpoint's files, read-only: local paths, ``file://`` and fsspec URLs (s3://, gs://, hdfs://…)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import SourceError
from agent_inspect.sources._urls import check_timeout, resolve_timeout, shown_url

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = ["CheckpointFiles", "open_checkpoint"]

_CHK = re.compile(r"^chk-(\d+)$")


@dataclass
class CheckpointFiles:
    """One checkpoint or savepoint directory: its ``_metadata`` and the state files it points to.

    For example::

        files = ai.sources.open_checkpoint("tests/fixtures/checkpoints/production/checkpoints")
        files.location, len(files.metadata), files.modified   # ai.checkpoint.read decodes them
    """

    location: str                       # the directory holding _metadata, as given (URL or path)
    metadata: bytes
    modified: datetime | None
    _fs: AbstractFileSystem | None = None   # None for local paths
    #: the ``_metadata`` file read (the file given, when a file was given), for messages about its bytes
    metadata_file: str = ""
    _timeout: float | None = None           # what the filesystem was told to wait, where it takes a timeout

    def read_state_file(self, path: str, *, relative: bool = False) -> bytes:
        """The bytes of a state file a handle names.

        Flink writes absolute paths for checkpoints (``s3a://…``, ``file:/…``, maybe of another machine) and
        relative ones for savepoints; a full checkpoint's files sit beside its ``_metadata``, so that is looked
        at first, then the path as written.
        """
        if relative:
            candidates = [self._join(path)]
        else:
            written = _strip_file_scheme(path) if self._fs is None else path
            candidates = [self._join(path.rstrip("/").rsplit("/", 1)[-1]), written]
        problems = []
        for candidate in candidates:
            try:
                return self._read(candidate)
            except FileNotFoundError:
                continue
            except Exception as exc:  # botocore's connection errors are no OSError
                # the storage may go silent after _metadata: that is no missing file
                if not _storage_error(exc, self.location, self._timeout):
                    raise
                problems.append(f"{candidate}: {exc}")
        detail = f" ({'; '.join(problems)})" if problems else ""
        raise SourceError(f"state file {path} is missing (also looked beside _metadata in {self.location}){detail}")

    def _join(self, name: str) -> str:
        return f"{self.location.rstrip('/')}/{name}" if self._fs is not None else str(Path(self.location) / name)

    def _read(self, path: str) -> bytes:
        if self._fs is None:
            return Path(path).read_bytes()
        data = self._fs.cat_file(path)
        return bytes(data)


def open_checkpoint(path_or_url: str | os.PathLike[str], *, checkpoint: int | None = None,
                    timeout: float | None = None) -> CheckpointFiles:
    """Locate and read ``_metadata`` under ``path_or_url``.

    Accepts a ``_metadata`` file, a checkpoint or savepoint directory, or a checkpoint base directory
    (``chk-N`` dirs directly or one job-id level down): there the latest completed ``chk-N`` (one holding
    ``_metadata``) is taken, or ``chk-{checkpoint}`` when given. ``timeout``: seconds the storage behind a URL
    may take to connect and to answer each request (default 10, as for a Kafka broker), handed to its fsspec
    filesystem where it takes such an option (ftp, sftp, s3, gs, az/abfs, smb; not hdfs, whose Hadoop settings
    apply; s3 with two attempts a request); a local path waits for nothing.

    For example::

        files = ai.sources.open_checkpoint("tests/fixtures/checkpoints/production/checkpoints")   # latest chk-N
        files.location
        ai.sources.open_checkpoint("tests/fixtures/checkpoints/production/savepoint", timeout=30).metadata_file
    """
    timeout = resolve_timeout(timeout)
    check_timeout(timeout)
    text = os.fspath(path_or_url)
    if "://" in text and not text.startswith("file://"):
        return _open_fsspec(text, checkpoint, timeout)
    local = Path(_strip_file_scheme(text))
    if not local.exists():
        raise SourceError(f"checkpoint path {text} does not exist")
    if local.is_file():
        return _local(local.parent, local)
    if (local / "_metadata").is_file() and checkpoint is None:
        return _local(local, local / "_metadata")
    chk = _pick([(p.name, str(p)) for p in _chk_dirs_local(local)],
                lambda d: (Path(d) / "_metadata").is_file(), checkpoint, text)
    return _local(Path(chk), Path(chk) / "_metadata")


def _strip_file_scheme(text: str) -> str:
    if text.startswith("file://"):
        return text[len("file://"):]
    if text.startswith("file:/"):
        return text[len("file:"):]
    return text


def _local(directory: Path, metadata: Path) -> CheckpointFiles:
    try:
        data = metadata.read_bytes()
        mtime = metadata.stat().st_mtime
    except OSError as exc:
        raise SourceError(f"cannot read {metadata}: {exc}") from None
    return CheckpointFiles(str(directory), data, datetime.fromtimestamp(mtime, tz=UTC), metadata_file=str(metadata))


def _chk_dirs_local(base: Path) -> list[Path]:
    found = [p for p in base.iterdir() if p.is_dir() and _CHK.match(p.name)]
    if not found:                                     # <base>/<job-id>/chk-N
        found = [c for p in base.iterdir() if p.is_dir() for c in p.iterdir() if c.is_dir() and _CHK.match(c.name)]
    return found


def _pick(dirs: list[tuple[str, str]], completed: Callable[[str], bool], checkpoint: int | None, where: str) -> str:
    numbered = sorted(((int(m.group(1)), path) for name, path in dirs if (m := _CHK.match(name))), reverse=True)
    if checkpoint is not None:
        for number, path in numbered:
            if number == checkpoint:
                if not completed(path):
                    raise SourceError(f"chk-{checkpoint} under {where} has no _metadata: it did not complete")
                return path
        raise SourceError(f"no chk-{checkpoint} under {where} (found: "
                          f"{', '.join(f'chk-{n}' for n, _ in numbered) or 'none'})")
    for _, path in numbered:
        if completed(path):
            return path
    raise SourceError(f"no completed checkpoint under {where}: no _metadata file and no chk-N directory holding one")


def _s3_options(timeout: float) -> dict[str, Any]:
    """s3fs's options for one checkpoint read: botocore's connect and read timeouts, and two attempts a request.

    A checkpoint read is a handful of requests, and the caller's ``timeout`` should bound the wait: botocore's
    default retries (up to 5 attempts a request) under s3fs's own (``S3FileSystem.retries``, 5 rounds, set on the
    instance by :func:`_one_s3_round`) made a silent endpoint cost 75 connections: 200 s at ``timeout=1``, 877 s at 10.
    ``total_max_attempts`` counts the first request (botocore's ``max_attempts`` would count retries only), so one
    retry is left for a throttled or dropped request. A fresh instance (``skip_instance_cache``): the endpoint and
    credentials come from the environment (``AWS_ENDPOINT_URL``, …), which fsspec's instance cache does not see."""
    return {"config_kwargs": {"connect_timeout": timeout, "read_timeout": timeout,
                              "retries": {"total_max_attempts": 2, "mode": "standard"}},
            "skip_instance_cache": True}


def _one_s3_round(fs: AbstractFileSystem) -> None:
    """s3fs retries on top of botocore (``retries``, a class attribute it takes from no option): one round."""
    for each in (fs, getattr(fs, "fs", None)):   # a chained URL (simplecache::s3://…) wraps it
        if each is None:
            continue
        protocols = getattr(each, "protocol", ())
        if "s3" in (protocols if isinstance(protocols, tuple) else (protocols,)) and hasattr(each, "retries"):
            each.retries = 1


#: Per fsspec protocol, the filesystem options that bound its waits by ``timeout`` seconds: a connection and each
#: reply (ftp: ftplib's socket timeout; sftp: paramiko's connect, banner and auth; s3: botocore's connect and read
#: per attempt, with its retries cut, see :func:`_s3_options`; gs: gcsfs's per-request timeout; az/abfs: adlfs's
#: connect and read; smb: smbprotocol's connect).
#: A protocol not named here (hdfs: pyarrow takes none; Hadoop's own settings apply) is opened as before.
_TIMEOUT_OPTIONS: dict[str, Callable[[float], dict[str, Any]]] = {
    "ftp": lambda t: {"timeout": t},
    "sftp": lambda t: {"timeout": t, "banner_timeout": t, "auth_timeout": t},
    "ssh": lambda t: {"timeout": t, "banner_timeout": t, "auth_timeout": t},
    "s3": _s3_options,
    "s3a": _s3_options,
    "gs": lambda t: {"requests_timeout": t},
    "gcs": lambda t: {"requests_timeout": t},
    "az": lambda t: {"connection_timeout": t, "read_timeout": t},
    "abfs": lambda t: {"connection_timeout": t, "read_timeout": t},
    "abfss": lambda t: {"connection_timeout": t, "read_timeout": t},
    "smb": lambda t: {"timeout": t},
}


def _timeout_options(url: str, timeout: float) -> dict[str, dict[str, Any]]:
    """The fsspec options that make the storage behind ``url`` wait at most ``timeout`` seconds, keyed by protocol
    as :func:`fsspec.core.url_to_fs` takes them: each protocol of a chained URL (``simplecache::s3://…``) gets its
    own, and what the URL itself says (host, port, a query) is kept."""
    options: dict[str, dict[str, Any]] = {}
    for part in url.split("::"):
        protocol = part.split("://", 1)[0] if "://" in part else part
        make = _TIMEOUT_OPTIONS.get(protocol.lower())
        if make is not None:
            options[protocol] = make(timeout)
    return options


def _open_fsspec(url: str, checkpoint: int | None, timeout: float) -> CheckpointFiles:
    try:
        import fsspec
    except ImportError:
        raise SourceError(f"reading {shown_url(url)} needs fsspec: pip install 'agent_inspect[checkpoint]' "
                          "(plus s3fs, gcsfs or the filesystem's fsspec package)") from None
    options = _timeout_options(url, timeout)
    bounded = timeout if options else None   # the wait a message may name: only one the filesystem was given
    try:
        fs, root = fsspec.core.url_to_fs(url, **options)   # some filesystems connect here already (ftp, hdfs)
    except (ImportError, ValueError) as exc:
        raise SourceError(f"cannot open {shown_url(url)}: {shown_url(url, _first_line(exc))} (install the filesystem's fsspec package, "
                          f"e.g. s3fs, gcsfs)") from None
    except OSError as exc:
        raise _unreachable(url, exc, bounded) from None
    _one_s3_round(fs)
    protocol = url.split("://", 1)[0]

    def unstrip(path: str) -> str:
        return path if "://" in path else f"{protocol}://{path}"

    def isfile(path: str) -> bool:
        return _kind(fs, path) == "file"

    try:
        if isfile(root):
            directory = root.rstrip("/").rsplit("/", 1)[0]
            metadata_path = root
        elif checkpoint is None and isfile(f"{root.rstrip('/')}/_metadata"):
            directory, metadata_path = root, f"{root.rstrip('/')}/_metadata"
        elif _kind(fs, root) == "directory":
            entries = [e for e in fs.ls(root, detail=False)]
            dirs = [(e.rstrip("/").rsplit("/", 1)[-1], e) for e in entries]
            if not any(_CHK.match(n) for n, _ in dirs):
                dirs = [(c.rstrip("/").rsplit("/", 1)[-1], c) for _, e in dirs if _kind(fs, e) == "directory"
                        for c in fs.ls(e, detail=False)]
            directory = _pick(dirs, lambda d: isfile(f"{d.rstrip('/')}/_metadata"), checkpoint, shown_url(url))
            metadata_path = f"{directory.rstrip('/')}/_metadata"
        else:
            raise SourceError(f"checkpoint path {shown_url(url)} does not exist")
        data = bytes(fs.cat_file(metadata_path))
        info = fs.info(metadata_path)
    except SourceError:
        raise
    except Exception as exc:  # botocore's connection and credential errors are no OSError
        if not _storage_error(exc, url, bounded):
            raise
        raise SourceError(f"cannot read checkpoint at {shown_url(url)}: {shown_url(url, _first_line(exc))}") from None
    modified = info.get("mtime") or info.get("LastModified") or info.get("updated") or info.get("created")
    when: datetime | None = None
    if isinstance(modified, datetime):
        when = modified if modified.tzinfo else modified.replace(tzinfo=UTC)
    elif isinstance(modified, (int, float)):
        when = datetime.fromtimestamp(float(modified), tz=UTC)
    return CheckpointFiles(unstrip(directory), data, when, fs, metadata_file=unstrip(metadata_path), _timeout=bounded)


def _first_line(exc: BaseException) -> str:
    """An exception's message on one line (pyarrow's HDFS error lists every libjvm path it tried, one a line)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _kind(fs: AbstractFileSystem, path: str) -> str | None:
    """``"file"``, ``"directory"`` or None (nothing there) for ``path``, as fsspec's ``isfile``/``isdir`` answer,
    except that storage which cannot be reached, or a client without credentials, raises: those swallow every
    error, so each existence check against a silent endpoint waited its own full timeout (and retries) before the
    read went on to the next, and missing credentials read as "does not exist"."""
    try:
        kind = fs.info(path).get("type")
    except FileNotFoundError:
        return None
    except Exception as exc:  # as fsspec's isfile: a filesystem's own error means "not there"
        # a refusal too (PermissionError): S3 answers 403, not 404, for a missing key to credentials without
        # s3:ListBucket, which may still read _metadata itself
        if _cannot_connect(exc) or _client_error(exc):
            raise
        return None
    return kind if isinstance(kind, str) else None


def _storage_error(exc: Exception, url: str, timeout: float | None) -> bool:
    """Whether ``exc`` is the storage's answer about a file (``OSError``, ``ValueError``, botocore's own error),
    which the caller words; False for any other error, which the caller raises as it is. Storage that could not be
    reached raises one line instead (:func:`_unreachable`; ``timeout``: the wait its filesystem was given)."""
    if _cannot_connect(exc):
        raise _unreachable(url, exc, timeout) from None
    return isinstance(exc, (OSError, ValueError)) or _client_error(exc)


def _cannot_connect(exc: BaseException) -> bool:
    """The storage did not answer or refused: a timeout, or a connection error (the built-in ``ConnectionError``,
    botocore's ``EndpointConnectionError``/``ConnectionClosedError``, which are no ``OSError``)."""
    names = {k.__name__ for k in type(exc).__mro__}
    return (_timed_out(exc) or isinstance(exc, ConnectionError)
            or bool(names & {"ConnectionError", "ConnectionClosedError", "EndpointConnectionError"}))


def _client_error(exc: BaseException) -> bool:
    """botocore's own errors (no credentials found, a bad parameter): said in one line, not as a traceback."""
    return any(k.__name__ == "BotoCoreError" for k in type(exc).__mro__)


def _timed_out(exc: BaseException) -> bool:
    """A wait ran out: the built-in ``TimeoutError`` (ftplib, asyncio) or a client's own (botocore's
    ``ConnectTimeoutError``, an ``OSError`` by way of requests)."""
    return isinstance(exc, TimeoutError) or any("Timeout" in k.__name__ for k in type(exc).__mro__)


def _unreachable(url: str, exc: BaseException, timeout: float | None) -> SourceError:
    """The storage behind ``url`` could not be reached (refused, timed out, no such host, no client library);
    ``timeout``: the wait its filesystem was given (None: its own, which a message cannot name)."""
    why = shown_url(url, _first_line(exc))
    url = shown_url(url)
    if timeout is not None and _timed_out(exc):
        said = (f"cannot reach {url}: no answer within {timeout:g}s ({why}); check the address and that the storage "
                f"answers, raise")
        local = "or copy the checkpoint to a local folder and pass that"
        return SourceError(f"{said} timeout=, {local}", cli=f"{said} --timeout, {local}")
    if "libjvm" in str(exc) or "libhdfs" in str(exc):
        return SourceError(f"cannot open {url}: {why}; hdfs:// is read through pyarrow, which needs Java and Hadoop's "
                           f"libhdfs (JAVA_HOME, HADOOP_HOME, CLASSPATH): set them, or copy the checkpoint to a local "
                           f"folder and pass that")
    return SourceError(f"cannot reach {url} ({why}); check the address, that the storage answers, and its "
                       f"credentials, or copy the checkpoint to a local folder and pass that")
