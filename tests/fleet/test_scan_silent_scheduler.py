"""A scheduler address where something accepts connections and never answers: one line within the timeout.

Dask's connect waits for the peer's greeting with no deadline, so ``Client(address, timeout=...)`` hung there
for good (``agent-inspect scan --scheduler`` at a proxy, a firewall or another service never returned).
"""

from __future__ import annotations

import time

import pytest

import agent_inspect as ai
from agent_inspect.cli import main


def test_a_silent_scheduler_fails_within_the_timeout(silent_peer: int) -> None:
    start = time.monotonic()
    with pytest.raises(ai.SourceError, match=r"no Dask scheduler answered at tcp://127.0.0.1:\d+ \(it accepted the "
                                             r"connection but did not answer within 2s"):
        ai.scan(ai.samples.path("G01", "parquet"), client=f"tcp://127.0.0.1:{silent_peer}", timeout=2)
    assert time.monotonic() - start < 30


def test_cli_says_so_in_one_line(silent_peer: int, capsys: pytest.CaptureFixture[str]) -> None:
    # Dask's address without its scheme is an address too; the scan's 10 s apply
    code = main(["scan", str(ai.samples.path("G01", "parquet")), "--scheduler", f"127.0.0.1:{silent_peer}",
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "did not answer within 10s" in err and "no --scheduler" in err


@pytest.mark.parametrize("address, why", [("127.0.0.1:9", "nothing accepts a connection there"),
                                          ("tcp://[::1", "not an address")])
def test_a_closed_port_or_a_broken_address_without_waiting(address: str, why: str) -> None:
    with pytest.raises(ai.SourceError, match=f"no Dask scheduler answered at .*{why}"):
        ai.scan(ai.samples.path("G01", "parquet"), client=address)


def test_a_timeout_that_is_no_wait_is_refused() -> None:
    with pytest.raises(ai.SourceError, match="timeout must be a positive"):
        ai.scan(ai.samples.path("G01", "parquet"), client="tcp://127.0.0.1:9", timeout=0)


def test_a_tls_scheduler_is_greeted_with_the_tls_of_dasks_configuration() -> None:
    # as distributed.Client(address) takes it: the greeting before a scan must not refuse a tls:// scheduler
    import dask
    from distributed import LocalCluster
    from distributed.security import Security

    sec = Security.temporary()
    tls = {"distributed.comm.tls.ca-file": sec.tls_ca_file, "distributed.comm.tls.client.cert": sec.tls_client_cert,
           "distributed.comm.tls.client.key": sec.tls_client_key}
    with LocalCluster(n_workers=0, processes=False, security=sec, host="127.0.0.1", dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tls://")
        with dask.config.set(tls):
            assert ai.sources.scheduler_answers(cluster.scheduler_address, timeout=10) is None
        assert "ssl_context" in (ai.sources.scheduler_answers(cluster.scheduler_address, timeout=10) or "")
