"""Fluss loader against a fake of the pyfluss surface (no Fluss server can run here)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import agent_inspect as ai
from agent_inspect.sources._fluss import read_fluss
from tests.sources._fake_fluss import Behaviour, FakeTable, factory
from tests.sources._records import make_records

BUCKETS = 3


def _table(earliest: dict[int, int] | None = None) -> FakeTable:
    buckets: dict[int, list[dict[str, object]]] = {b: [] for b in range(BUCKETS)}
    for key, value in make_records(6, 2):
        text = key.split("_", 1)[0]
        buckets[int(text.rsplit("-", 1)[1]) % BUCKETS].append(
            {"state_key": key, "state_payload": value, "agent_key": text})
    return FakeTable(buckets=buckets, earliest=earliest or {})


def _rows(batch) -> list[tuple[int, int, bytes, bytes, str]]:  # type: ignore[no-untyped-def]
    return list(zip(batch.partition, batch.offset, batch.key, batch.value, batch.agent_key))


def test_reads_every_bucket_in_offset_order() -> None:
    table = _table(earliest={1: 10})
    make = factory({"flink_agents.states": table})
    log = ai.load("fluss://fluss-host:9123/flink_agents.states", connection_factory=make, progress=False)
    expected = [(b, table.first(b) + i, r["state_key"].encode(), r["state_payload"], r["agent_key"])
                for b in range(BUCKETS) for i, r in enumerate(table.buckets[b])]
    assert _rows(log.raw) == expected
    assert log.source.kind == "fluss" and log.source.topic == "flink_agents.states"
    assert dict(log.source.end_offsets) == {b: table.latest(b) for b in range(BUCKETS)}
    assert log.source.location == "fluss://fluss-host:9123/flink_agents.states"
    assert make.seen[0]["bootstrap.servers"] == "fluss-host:9123"
    assert log.errors.empty


def test_markers_merge_by_minimum_and_must_cover_every_bucket() -> None:
    table = _table()
    make = factory({"db.t": table})
    batch, info = read_fluss("h:1", "db.t", markers=[{0: 3, 1: 1, 2: 4}, {0: 2, 1: 3, 2: 4}],
                             connection_factory=make, progress=False)
    assert dict(info.start_offsets) == {0: 2, 1: 1, 2: 4}
    assert sorted((p, o) for p, o, *_ in _rows(batch)) == [(b, o) for b in range(BUCKETS)
                                                     for o in range(info.start_offsets[b], table.latest(b))]
    with pytest.raises(ai.UnknownPartitionError, match="bucket set 0,1 does not match the buckets 0-2"):
        read_fluss("h:1", "db.t", markers={0: 0, 1: 0}, connection_factory=make, progress=False)
    with pytest.raises(ai.UnknownPartitionError, match="names bucket 7"):
        read_fluss("h:1", "db.t", markers={0: 0, 1: 0, 2: 0, 7: 0}, connection_factory=make, progress=False)


def test_marker_below_earliest_is_data_loss() -> None:
    make = factory({"db.t": _table(earliest={0: 5})})
    with pytest.raises(ai.DataLossError, match="bucket 0: start offset 2 .*earliest retained offset is 5"):
        read_fluss("h:1", "db.t", markers={0: 2, 1: 0, 2: 0}, connection_factory=make, progress=False)
    batch, info = read_fluss("h:1", "db.t", markers={0: 2, 1: 0, 2: 0}, allow_data_loss=True,
                             connection_factory=make, progress=False)
    assert info.start_offsets[0] == 5 and info.options["data_loss"] == {0: {"asked": 2, "read_from": 5}}
    assert min(o for p, o in zip(batch.partition, batch.offset) if p == 0) == 5


def test_marker_beyond_latest_is_data_loss() -> None:
    make = factory({"db.t": _table()})
    with pytest.raises(ai.DataLossError, match="recreated or truncated"):
        read_fluss("h:1", "db.t", markers={0: 99, 1: 0, 2: 0}, connection_factory=make, progress=False)


def test_live_table_read_is_bounded_at_latest_offsets_taken_first() -> None:
    table = _table()
    ends = {b: table.latest(b) for b in range(BUCKETS)}
    make = factory({"db.t": table}, Behaviour(grow_by=5))
    batch, info = read_fluss("h:1", "db.t", connection_factory=make, progress=False)
    assert dict(info.end_offsets) == ends and table.latest(0) == ends[0] + 5
    assert len(batch) == sum(ends.values()) and b"late_0" not in batch.key


def test_business_keys_filter() -> None:
    make = factory({"db.t": _table()})
    batch, info = read_fluss("h:1", "db.t", business_keys=["user-4"], connection_factory=make, progress=False)
    assert {k.split(b"_")[0] for k in batch.key} == {b"user-4"} and len(batch) == 4
    assert info.options["business_keys"] == ["user-4"]



def test_business_keys_with_no_record_get_the_one_check_and_close_matches() -> None:
    """``load_fluss`` reads every bucket, so a mistyped key gets its close matches from the whole table, as a file's."""
    make = factory({"db.t": _table()})
    with pytest.raises(ai.InspectError, match=r"business key 'usr-4' has no records in fluss://h:1/db.t; "
                                              r"did you mean 'user-4'"):
        ai.load_fluss("h:1", "db.t", business_keys=["usr-4"], connection_factory=make, progress=False)
    with pytest.warns(UserWarning, match=r"no records of business key 'usr-4' .* the other 1 asked for"):
        log = ai.load_fluss("h:1", "db.t", business_keys=["user-4", "usr-4"], connection_factory=make, progress=False)
    assert log.keys() == ["user-4"] and log.source.options["missing_business_keys"] == ["usr-4"]
    others: set[str] = set()
    read_fluss("h:1", "db.t", business_keys=["user-4"], connection_factory=make, progress=False, other_keys=others)
    assert others == {f"user-{i}" for i in range(6)} - {"user-4"}


@pytest.mark.parametrize("call", ["create", "get_table", "list_offsets", "poll"])
def test_silent_peer_times_out(call: str) -> None:
    make = factory({"db.t": _table()}, Behaviour(silent=call))
    start = time.monotonic()
    with pytest.raises(ai.BrokerUnreachable, match="did not answer within 0.3s"):
        read_fluss("h:1", "db.t", timeout=0.3, connection_factory=make, progress=False)
    assert time.monotonic() - start < 3


def test_silent_peer_times_out_inside_a_running_loop() -> None:
    # Jupyter runs an event loop; the loader must still answer (from a worker thread) within the timeout.
    make = factory({"db.t": _table()}, Behaviour(silent="create"))

    async def notebook_cell() -> None:
        with pytest.raises(ai.BrokerUnreachable):
            ai.load_fluss("h:1", "db.t", timeout=0.3, connection_factory=make, progress=False)

    # a thread of its own, so the cell's loop is the only one, whatever else the test session runs
    outcome: list[BaseException | None] = []

    def kernel() -> None:
        try:
            asyncio.run(notebook_cell())
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - reported below
            outcome.append(exc)

    start = time.monotonic()
    thread = threading.Thread(target=kernel)
    thread.start()
    thread.join(10)
    assert outcome == [None]
    assert time.monotonic() - start < 3


def test_refused_connection_and_missing_table_and_wrong_table_kind() -> None:
    with pytest.raises(ai.BrokerUnreachable, match="Connection refused"):
        read_fluss("h:1", "db.t", connection_factory=factory({}, Behaviour(refuse=True)), progress=False)
    with pytest.raises(ai.SourceError, match="does not exist"):
        read_fluss("h:1", "db.missing", connection_factory=factory({"db.t": _table()}), progress=False)
    pk = _table()
    pk.primary_key = True
    with pytest.raises(ai.SourceError, match="primary-key table"):
        read_fluss("h:1", "db.t", connection_factory=factory({"db.t": pk}), progress=False)
    with pytest.raises(ai.SourceError, match="database.table"):
        read_fluss("h:1", "no_dot", connection_factory=factory({}), progress=False)


def test_config_is_passed_through_without_secrets_in_the_source_info() -> None:
    make = factory({"db.t": _table()})
    _, info = read_fluss("h:1", "db.t", config={"security.protocol": "SASL", "security.sasl.password": "pw"},
                         connection_factory=make, progress=False)
    assert make.seen[0]["security.sasl.password"] == "pw"
    assert info.options["config"] == {"security.protocol": "SASL"}
    assert "pw" not in repr(info)


def test_real_client_closed_port_is_broker_unreachable() -> None:
    from tests.support.tansu import free_port

    with pytest.raises(ai.BrokerUnreachable, match="Connection refused"):
        read_fluss(f"127.0.0.1:{free_port()}", "db.t", timeout=5, progress=False)


def test_a_missing_table_names_the_close_tables_in_one_line() -> None:
    # the Kafka loader named a misspelt topic's close matches; a misspelt Fluss table got none
    tables = {"agents.action_state": _table(), "agents.other": _table()}
    with pytest.raises(ai.SourceError) as exc:
        read_fluss("h:1", "agents.action_stat", connection_factory=factory(tables), progress=False)
    message = str(exc.value)
    assert "agents.action_stat" in message and "check the database.table name" in message and "\n" not in message
    assert "; did you mean 'agents.action_state'" in message
    with pytest.raises(ai.SourceError, match=r"did you mean 'agents\.action_state'"):   # a misspelt database
        read_fluss("h:1", "agent.action_state", connection_factory=factory(tables), progress=False)
    with pytest.raises(ai.SourceError, match=r"check the database\.table name$"):          # nothing close
        read_fluss("h:1", "x.zzz", connection_factory=factory(tables), progress=False)
