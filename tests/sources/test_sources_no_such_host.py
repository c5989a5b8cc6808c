"""A host name that does not resolve is said to be one, not a refused connection (Kafka), nor a bare client error
with nothing to do (Fluss)."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from tests.sources._fake_fluss import FakeFlussError

NOWHERE = "nosuchhost.invalid"   # .invalid never resolves (RFC 2606)


def test_kafka_says_no_such_host(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ai.BrokerUnreachable, match=rf"Kafka at {NOWHERE}:9092: no such host .*check the host name"):
        ai.load(f"kafka://{NOWHERE}:9092/t", timeout=10, progress=False)
    assert main(["summary", f"kafka://{NOWHERE}:9092/t"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such host" in err and "refused" not in err


def test_fluss_says_no_such_host() -> None:
    async def make(_props: dict[str, str]) -> object:
        raise FakeFlussError(-2, f"Invalid bootstrap address '{NOWHERE}:9123': failed to lookup address "
                                 f"information: Name or service not known.")

    with pytest.raises(ai.BrokerUnreachable, match=rf"Fluss at {NOWHERE}:9123: no such host .*check the host name"):
        ai.load_fluss(f"{NOWHERE}:9123", "db.t", connection_factory=make, progress=False)


def test_fluss_through_the_client_says_no_such_host() -> None:
    import fluss  # noqa: F401 - installed by the test command: this case goes through the client

    with pytest.raises(ai.BrokerUnreachable, match="no such host"):
        ai.load(f"fluss://{NOWHERE}:9123/db.t", timeout=10, progress=False)
