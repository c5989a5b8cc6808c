"""Histories checked per second by the rule safety checker, for the ``fixed`` rule.

    .venv/bin/python benchmarks/rules_check.py [--histories N] [--repeat R] [--seed S]

Histories have at most 3 keys × 4 rounds × 3 attempts (the generator's defaults). Generation drives
the replay executor in production mode, once per history; checking then rebuilds and replays the
judged recovery under the rule with the static predictor's dispatch loop. The measured rate is
checking only (histories generated and their rebuild windows prepared beforehand, best of R runs of
wall-clock time; CPU time is reported too, since the machine is shared);
generation and preparation rates are reported beside it. The last line is a JSON array of objects
with ``name``, ``ratio`` (measured ÷ target) and ``target`` (1).
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from agent_inspect.checker import HistoryOptions, check, generate_history
    from agent_inspect.checker._check import _history_subject, history_seeds

    options = HistoryOptions(keys=3, rounds=4, attempts=3)
    seeds = history_seeds(args.seed, args.histories)
    t0 = time.perf_counter()
    histories = [generate_history(s, options) for s in seeds]
    generate_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for h in histories:
        _history_subject(h)
    prepare_s = time.perf_counter() - t0
    best = best_cpu = float("inf")
    report = None
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        report = check("fixed", seeds=seeds, options=options, minimize=False)
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    n = len(histories)
    rate = n / best
    target_rate = 1000.0
    totals = report.totals if report is not None else {}
    print(f"generated {n} histories in {generate_s:.1f} s ({n / generate_s:.1f}/s, "
          f"{sum(len(h.log) for h in histories) / n:.0f} records and "
          f"{sum(len(h.attempts) for h in histories) / n:.1f} attempts on average)")
    print(f"prepared rebuild windows in {prepare_s:.2f} s ({n / prepare_s:.0f}/s)")
    print(f"checked fixed in {best:.3f} s best of {args.repeat}: {rate:.0f} histories/s "
          f"({totals.get('tasks', 0) / n:.1f} tasks per history; {n / best_cpu:.0f}/s of CPU time); "
          f"target {target_rate:.0f}/s")
    print(json.dumps([{"name": "rules_check_fixed", "ratio": round(rate / target_rate, 3), "target": 1,
                       "histories_per_s": round(rate, 1), "target_histories_per_s": target_rate,
                       "histories_per_cpu_s": round(n / best_cpu, 1),
                       "histories": n, "generate_histories_per_s": round(n / generate_s, 1),
                       "prepare_histories_per_s": round(n / prepare_s, 1),
                       "stale_reuses": totals.get("stale_reuses"),
                       "avoidable_reruns": totals.get("avoidable_reruns")}]))


if __name__ == "__main__":
    main()
