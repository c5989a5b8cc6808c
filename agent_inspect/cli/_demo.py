"""``agent-inspect demo``: JupyterLab on the notebooks, or (``--cli``) the analysis of the sample log."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import secrets
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from agent_inspect._errors import InspectError
from agent_inspect._glossary import plural
from agent_inspect._jsonable import jsonable
from agent_inspect.cli._numbers import port as port_number

__all__ = ["register"]

_FIRST_NOTEBOOK = "01_production_recovery.ipynb"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo", help="open JupyterLab on the notebooks (or --cli: analyse the sample log in the terminal)",
        description="Start JupyterLab on 127.0.0.1 serving the notebooks of notebooks/ (or --notebooks DIR) and "
                    "print the exact URL with its token. With --cli, or when JupyterLab is not installed, print "
                    "the analysis of the production-like sample log instead: summary, reconstruction under the "
                    "original and the fixed rule, and the re-execution ledger.")
    parser.add_argument("--cli", action="store_true", help="terminal analysis instead of JupyterLab")
    parser.add_argument("--json", action="store_true", help="with --cli: one JSON object instead of text")
    parser.add_argument("--port", type=port_number, default=None, help="port for JupyterLab (default: 8888 or a free one)")
    parser.add_argument("--token", default=None, help="token for JupyterLab (default: a fresh random one, printed)")
    parser.add_argument("--browser", action=argparse.BooleanOptionalAction, default=None,
                        help="open a web browser (default: only when a display is available)")
    parser.add_argument("--notebooks", type=Path, default=None, help="folder of notebooks to serve")
    parser.add_argument("--sample", default=None, help="with --cli: the log to analyse, a file or a sample's name "
                                                       "(default: the production sample)")
    parser.add_argument("--markers", default=None, help="with --sample: recovery markers as JSON, e.g. '{\"0\": 120}'")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.cli or args.json:
        return _cli_analysis(args.sample, args.markers, as_json=args.json)
    if importlib.util.find_spec("jupyterlab") is None:
        print("agent-inspect: JupyterLab is not installed (pip install 'agent_inspect[views]'); "
              "showing the terminal analysis instead", file=sys.stderr)
        return _cli_analysis(args.sample, args.markers, as_json=False)
    # JupyterLab would start and the option be dropped without a word
    given = [flag for flag, value in (("--sample", args.sample), ("--markers", args.markers)) if value is not None]
    if given:
        raise InspectError(f"{' and '.join(given)} {'goes' if len(given) == 1 else 'go'} with --cli "
                           "(the terminal analysis); add --cli, or leave it out to open the notebooks")
    return _jupyterlab(args)


# -- JupyterLab ---------------------------------------------------------------------------------------


def notebooks_dir(explicit: Path | None = None) -> Path:
    """The folder holding the user notebooks (the repository's ``notebooks/``)."""
    candidates = [explicit] if explicit else [Path.cwd() / "notebooks", Path(__file__).resolve().parents[2] / "notebooks"]
    for candidate in candidates:
        if candidate is not None and (candidate / _FIRST_NOTEBOOK).is_file():
            return candidate.resolve()
    where = explicit or candidates[-1]
    raise InspectError(f"no notebooks at {where}; run from a checkout of agent_inspect or pass --notebooks DIR")


def _free_port(preferred: int = 8888) -> int:
    for port in (preferred, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            bound: int = s.getsockname()[1]
            return bound
    raise InspectError("no free TCP port on 127.0.0.1; pass --port")


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) or sys.platform in ("darwin", "win32")


def lab_argv(root: Path, *, port: int, token: str, browser: bool) -> list[str]:
    """The ``jupyter lab`` arguments the demo runs with (loopback only, fixed port, explicit token)."""
    argv = [
        f"--ServerApp.root_dir={root}", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
        f"--LabApp.default_url=/lab/tree/{_FIRST_NOTEBOOK}",
    ]
    if not browser:
        argv.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")
    return argv


def _jupyterlab(args: argparse.Namespace) -> int:
    root = notebooks_dir(args.notebooks)
    port = args.port or _free_port()
    token = args.token if args.token is not None else secrets.token_hex(24)
    browser = _has_display() if args.browser is None else args.browser
    url = f"http://127.0.0.1:{port}/lab/tree/{_FIRST_NOTEBOOK}?token={token}"
    print(f"agent-inspect demo: starting JupyterLab on {root} (port {port}) ...", flush=True)
    threading.Thread(target=_announce_when_listening, args=(port, url), daemon=True).start()
    from jupyterlab.labapp import LabApp

    LabApp.launch_instance(argv=lab_argv(root, port=port, token=token, browser=browser))
    return 0


def _announce_when_listening(port: int, url: str, timeout: float = 300.0) -> None:
    """Print the URL once the server listens on ``port``, so that opening it at once never meets a refused
    connection (JupyterLab takes seconds to start); nothing is printed if it never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
        except OSError:
            time.sleep(0.1)
            continue
        print(f"agent-inspect demo: JupyterLab is ready\n  open {url}\n  stop with Ctrl-C", flush=True)
        return


# -- terminal analysis --------------------------------------------------------------------------------


def _sample(explicit: str | None, markers: str | None) -> tuple[str, Any]:
    """The log to analyse and its markers: ``explicit`` (with ``--markers``) or the production sample."""
    from agent_inspect import samples
    from agent_inspect.cli._markers_args import parse_markers

    if explicit and not os.path.exists(explicit) and explicit in samples.SAMPLES:   # a name `samples list` shows
        return str(samples.path(explicit)), parse_markers(markers) if markers else samples.markers(explicit)
    if explicit and "://" not in explicit and not os.path.exists(explicit):   # neither a file nor a sample
        raise InspectError(f"--sample {explicit!r} is neither a file nor a sample; the samples are "
                           f"{', '.join(samples.SAMPLES)} (`agent-inspect samples list` says what each shows)")
    if explicit:
        return explicit, parse_markers(markers)
    if markers is not None:   # the production sample comes with its own: these would be dropped without a word
        raise InspectError("--markers goes with --sample (the default sample is restored from its own markers); "
                           "pass --sample FILE or a sample's name too")
    return str(samples.path("production")), samples.markers("production")


def analysis(log: Any, *, markers: Any = None, rules: tuple[str, ...] = ("original", "fixed")) -> dict[str, Any]:
    """Summary, per-rule reconstruction totals and the ledger of a log, as plain JSON-able data."""
    from agent_inspect.recovery import reconstruct
    from agent_inspect.report import ledger_totals, prediction_of

    out: dict[str, Any] = {"source": str(getattr(log.source, "location", "")), "summary": jsonable(log.summary())}
    for rule in rules:
        result = reconstruct(log, rule=rule, markers=markers)
        records = result.records
        statuses = records["status"].astype("string").fillna("unknown").value_counts().to_dict() \
            if "status" in records.columns else {}
        divergences = result.divergences
        explanations = []
        if "explanation" in getattr(divergences, "columns", ()):
            explanations = [str(e) for e in divergences["explanation"].head(5)]
        what_if = result.recovery is not None and result.recovery.what_if
        out[rule] = {"statuses": {str(k): int(v) for k, v in statuses.items()},
                     "what_if": bool(what_if), "rule_label": result.rule_label,
                     "divergences": int(len(divergences)), "explanations": explanations,
                     "ledger": ledger_totals(prediction_of(result), result)}
    return out


def _cli_analysis(sample: str | None, markers: str | None, *, as_json: bool) -> int:
    from agent_inspect.cli._summary import summary_text
    from agent_inspect.log import load, rule_mark

    source, parsed = _sample(sample, markers)
    log = load(source)
    runtime = log.runtime()       # the runtime each reconstruction below resolves (no runtime= given)
    data = analysis(log, markers=parsed)
    data["markers"] = parsed
    if sample is None:            # the 0.4+ sample beside the production one
        data["beside"] = {_V4_SAMPLE: v4_analysis()}
    if as_json:
        json.dump(data, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    print(f"== {data['source']}" + (f" restored from markers {data['markers']}" if data["markers"] else ""))
    print(summary_text(data["summary"], explain=False, indent="  "))
    rules = ("original", "fixed")
    for rule in rules:
        part = data[rule]
        mark = rule_mark(rule, runtime).mark      # " (what-if; 0.4 ships original)" or "", as the label has it
        print(f"\n== reconstruct under rule {rule!r}{mark}: "
              f"{plural(part['divergences'], 'divergence')}")
        print("  records: " + ", ".join(f"{k} {v}" for k, v in sorted(part["statuses"].items()) if v))
        for line in part["explanations"]:
            print(f"  - {line}")
    rows = _ledger_rows([data[r]["ledger"] for r in rules])
    if rows:
        what_ifs = [r for r in rules if data[r]["what_if"]]
        print("\n== re-execution ledger: what the restore runs again"
              + (f" ({', '.join(what_ifs)}: {'a what-if' if len(what_ifs) == 1 else 'what-ifs'})" if what_ifs else ""))
        print(f"  {'':<56}" + "".join(f"{r:>10}" for r in rules))
        for label, counts in rows:
            print(f"  {label:<56}" + "".join(f"{c:>10}" for c in counts))
    if "beside" in data:
        _print_v4(data["beside"][_V4_SAMPLE])
    print("\nOpen the notebooks with `agent-inspect demo` or write a report with "
          "`agent-inspect report SOURCE -o report.html`.")
    return 0


# -- the 0.4+ sample beside it ------------------------------------------------------------------------

_V4_SAMPLE = "production_v4"


def v4_analysis() -> dict[str, Any]:
    """The 0.4+ production sample: summary (V4, runtime and evidence), what its records are under the original
    rule (refresh rows included), and its restore of a mid-action checkpoint: each task and its durable calls."""
    from agent_inspect import samples
    from agent_inspect.log import load
    from agent_inspect.recovery import predict, reconstruct

    log = load(samples.path(_V4_SAMPLE))
    markers = samples.markers(_V4_SAMPLE)
    info = json.loads(samples.path(_V4_SAMPLE, "markers").read_text(encoding="utf-8"))
    summary = jsonable(log.summary())
    statuses = reconstruct(log, rule="original", markers=markers).records["status"].astype("string").value_counts()
    pred = predict(log, rule="original", markers=markers)     # the plan inferred from the log (refresh rows)
    tasks = [{"action": str(t.action), "outcome": str(t.outcome)} for t in pred.tasks.itertuples()]
    totals = pred.ledger_totals()
    calls = {f"{k}:{n}": int(c) for k, n, c in zip(totals["kind"], totals["name"], totals["count"]) if k != "body"}
    return {"source": str(samples.path(_V4_SAMPLE)), "value_formats": summary.get("value_formats"),
            "runtime": summary.get("runtime"), "records": summary.get("records"),
            "statuses": {str(k): int(v) for k, v in statuses.items() if v},
            "restore": {"checkpoint": info["restore"]["checkpoint"], "tasks": tasks, "calls": calls}}


def _print_v4(v4: dict[str, Any]) -> None:
    runtime = v4.get("runtime") or {}
    print(f"\n== beside it, the 0.4+ sample: {v4['source']}")
    formats = ", ".join(f"{k}: {n:,}" for k, n in (v4["value_formats"] or {}).items())
    print(f"  {'records':<16} {v4['records']:,}")
    print(f"  {'value formats':<16} {formats}")
    print(f"  {'runtime':<16} {runtime.get('name')} ({runtime.get('evidence')})")
    print("  records under rule 'original': " + ", ".join(f"{k} {n:,}" for k, n in sorted(v4["statuses"].items())))
    restore = v4["restore"]
    print(f"\n== its restore of checkpoint {restore['checkpoint']}, taken mid-action (refresh rows bring the "
          "pending state back)")
    for t in restore["tasks"]:
        print(f"  {t['action']:<16} {t['outcome']}")
    if not any(item.startswith("call:") for item in restore["calls"]):
        print(f"  {'durable call run again':<24} {'none':<36}")
    for item, count in sorted(restore["calls"].items()):
        kind, _, name = item.partition(":")
        label = {"replayed": "served from the journal", "call": "durable call run again",
                 "subagent": "sub-agent call sent again", "resubmit": "sub-agent call re-submitted"}.get(kind, kind)
        print(f"  {label:<24} {name:<36} {count:>4}")


def _ledger_rows(ledgers: list[dict[str, int]]) -> list[tuple[str, list[int]]]:
    """Terminal rows: bodies rerun, then bodies and durable calls by name; sub-agent calls summed."""
    groups: dict[str, dict[str, list[int]]] = {}
    for i, ledger in enumerate(ledgers):
        for item, count in ledger.items():
            kind, _, name = item.partition(":")
            if kind in ("subagent", "resubmit"):   # sub-agent calls are named <session>#<call>: summed
                kind, name = ("sub-agent calls" if kind == "subagent" else "sub-agent calls re-submitted"), ""
            row = groups.setdefault(kind, {}).setdefault(name, [0] * len(ledgers))
            row[i] += count
    titles = {"bodies rerun": "action bodies run again", "body": "  body", "call": "  durable call",
              "replayed": "  served from the journal", "reconciler": "  reconciler", "sub-agent calls": "sub-agent calls"}
    rows = []
    for kind in ("bodies rerun", "body", "call", "replayed", "reconciler", "sub-agent calls",
                 "sub-agent calls re-submitted", *groups):
        for name, counts in sorted(groups.pop(kind, {}).items()):
            rows.append((f"{titles.get(kind, kind)} {name}".rstrip()[:56], counts))
    return rows
