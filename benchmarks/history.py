"""The compact key history of one big key: kernel time to first page and to each interaction.

Builds the same synthetic log as ``views.py`` (one key, a restore with different inputs half way, so
the fixed rule invalidates a suffix and the re-runs follow) and times, in one process:
- ``history-first-page``: ``KeyHistory(result, key)``: fold the records into lines, send page one;
- ``history-expand``: one line's records with their decoded values and reopen snippets;
- ``history-search``: a kernel search of every record's attributes and value;
- ``history-jump``: jump to the first divergence (turns the page);
- ``history-page``: the next page.
Targets: first page ≤ 0.5 s, every interaction ≤ 0.2 s. Usage: ``python benchmarks/history.py [--key-records N]``.
Times are CPU seconds of the kernel process (``time.process_time``). The last line is a JSON array of ``{"name", "seconds", "ratio", "target"}`` (ratio = target ÷ measured).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from views import build_log  # the shared synthetic log of the view benchmarks


def _time(fn: Any) -> tuple[float, Any]:
    """CPU seconds of ``fn()`` (a loaded, shared machine skews wall time, not this) and its value."""
    start = time.process_time()
    value = fn()
    return time.process_time() - start, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key-records", type=int, default=20_000, help="records of the key")
    args = parser.parse_args(argv)

    import agent_inspect as ai
    from agent_inspect.widgets import KeyHistory

    rounds = max(2, args.key_records // 4 * 2 // 3)
    t, log = _time(lambda: build_log(1, rounds, branch_at=rounds // 2))
    print(f"key log: {len(log.records):,} records built in {t:.1f} s")
    t, result = _time(lambda: ai.reconstruct(log, rule="fixed"))
    print(f"reconstruct (fixed): {t:.2f} s")
    results = []
    first_s, view = _time(lambda: KeyHistory(result, "user-0"))
    results.append(("history-first-page", first_s, 0.5))
    print(f"{len(view.lines):,} lines for {len(view.records):,} records; page of {len(view.rows)} lines; "
          f"rows payload {len(json.dumps(view.rows)) / 1024:.0f} KiB")
    results.append(("history-expand", _time(lambda: view.expand(3))[0], 0.2))
    results.append(("history-search", _time(lambda: view.search("t4"))[0], 0.2))
    print(view.search_info)
    view.search("")
    results.append(("history-jump", _time(view.jump_to_first_divergence)[0], 0.2))
    results.append(("history-page", _time(lambda: view.goto_page(view.page + 1))[0], 0.2))
    for name, s, _ in results:
        print(f"{name}: {s * 1000:.0f} ms CPU")
    print(json.dumps([{"name": n, "seconds": round(s, 4), "ratio": round(target / s, 3), "target": target}
                      for n, s, target in results]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
