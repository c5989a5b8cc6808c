"""``agent-inspect verify`` of a fleet-sized log: every count of 1,000 or more has its thousands separator, as the
other verbs print theirs (it printed "1036 of 1486 tasks disagree")."""

from __future__ import annotations

import json
import re

import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.samples import write_fleet

# a bare run of 4+ digits: not part of a key (customer-000005), a path, a JSON marker map or a section number
_BARE = re.compile(r"(?<![\w.\-/\"§])\d{4,}(?![\w.\-/\"])")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("fleet")
    log = ai.load(write_fleet(folder / "fleet.parquet", 150))
    ex = ai.ReplayExecutor(log)
    ex.run()
    trace = folder / "fleet.trace.log"
    trace.write_text("".join(json.dumps(r) + "\n" for r in ai.trace.trace_from_executor(ex)), encoding="utf-8")
    return str(log.source.location), str(trace)


@pytest.mark.parametrize("extra", [[], ["--rule", "fixed"], ["--infer"]])
def test_verify_counts_have_thousands_separators(fleet: tuple[str, str], extra: list[str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    log, trace = fleet
    main(["verify", log, "--trace", trace, *extra])
    out = capsys.readouterr().out
    assert re.search(r"\d,\d{3} tasks", out), out[:300]        # the fleet is big enough to need them
    assert not _BARE.findall(out), _BARE.findall(out)[:5]
