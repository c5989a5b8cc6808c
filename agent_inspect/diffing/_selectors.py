"""The selector syntax of a diff side: ``SOURCE@selector…`` parsed, and read into :func:`select`'s settings.

A selector string is the object form written down: its settings are exactly the keywords ``select`` takes
(``@markers=FILE`` the file's markers), so both forms give one side (see :func:`agent_inspect.diffing.select`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import InspectError, SourceError

if TYPE_CHECKING:
    from agent_inspect.recovery import Recovery

__all__ = ["Selector", "SelectorError", "SELECTORS", "parse_selector", "read_selected"]

SELECTORS = ("rule", "predict", "reconstruct", "attempt", "key", "markers", "runtime")
"""The selectors of the string form ``SOURCE@name=value@…`` (see :func:`parse_selector`)."""

class SelectorError(InspectError):
    """A diff side or selector could not be understood (unknown selector, bad value, unsupported object)."""


@dataclass(frozen=True)
class Selector:
    """A parsed side selector: ``source`` plus what to take from it.

    ``mode`` is "log" (the records as written), "predict" (what a recovery under ``rule`` does with
    each task) or "reconstruct" (the status of each record under ``rule``). ``attempt`` keeps one
    attempt per business key; ``key`` one business key; ``markers`` a JSON file of recovery markers or a
    checkpoint (default: the whole loaded log is the window); ``runtime`` is carried to the recovery functions that
    accept it. These are :func:`~agent_inspect.diffing.select`'s keywords, read the same way: ``markers`` without a
    rule set up a recovery (the side predicts under the rule the runtime ships); ``runtime`` alone says how the
    log is read.

    For example::

        sel = ai.diffing.parse_selector("sample_logs/production.jsonl@fixed@key=user-0011")
        sel.source, sel.mode, sel.rule, sel.key
        sel.label          # "sample_logs/production.jsonl@predict=fixed@key=user-0011", from the text alone
        ai.diffing.select("sample_logs/production.jsonl@fixed@key=user-0011").label   # … "(what-if; 0.4 ships original)"
    """

    source: str
    mode: str = "log"
    rule: str | None = None
    attempt: int | None = None
    key: str | None = None
    markers: str | None = None
    runtime: str | None = None

    @property
    def label(self) -> str:
        """The selection in its canonical spelling (``@fixed`` reads ``@predict=fixed``), from the text alone: no
        source is read. The label of the side it resolves to, settings and what-if mark included, is
        ``ai.diffing.select(text).label``."""
        parts = [self.source]
        if self.mode != "log":
            parts.append(f"{self.mode}={self.rule}")
        parts += [f"{name}={value}" for name in ("attempt", "key", "markers", "runtime")
                  if (value := getattr(self, name)) is not None]
        return "@".join(parts)


# a selector name, or a bare built-in rule name (``fixed+round-regression``, ``original:kafka-k1``)
_SEGMENT = re.compile(r"^([a-z][a-z_+-]*(?::[a-z0-9][a-z0-9_-]*)?)(?:=(.+))?$")

# a rule of the user's, written bare as a built-in is (``@my_rule:MyRule``, ``@rules/my_rule.py:MyRule``)
_OWN_RULE = re.compile(r"^[\w./-]*[\w.]:[A-Za-z_]\w*$")


def parse_selector(text: str) -> Selector:
    """Parse ``SOURCE[@selector]…``.

    Selectors, each after an ``@``: ``rule=NAME`` or ``predict=NAME`` (the prediction under that rule:
    which tasks a recovery reuses, resumes or reruns), ``reconstruct=NAME`` (each record's status under
    that rule), a bare built-in rule name (``@fixed`` = ``@predict=fixed``; ``@fixed+round-regression``,
    ``@original:kafka-k1`` too), ``attempt=N`` (attempt N of each business key, 1-based), ``key=K`` (one
    business key), ``markers=FILE`` (a JSON list of ``{partition: offset}`` maps, or an object with such a
    ``markers`` list; or a checkpoint folder, ``_metadata`` file or URL, as ``--checkpoint``), ``runtime=NAME`` (the upstream version that wrote the log). Each is the keyword of
    :func:`~agent_inspect.diffing.select` of that name, with the same side and label: ``markers`` without a rule
    diff what the restore does under the rule the runtime ships; ``runtime`` alone reads the log as that version
    writes it (which rows are a checkpoint's refresh rows), and with a rule or markers restores under it.
    Examples: ``prod.jsonl@attempt=2@key=order-7``, ``kafka://b:9092/topic@original``,
    ``prod.jsonl@reconstruct=fixed@markers=prod.markers.json``.

    For example::

        ai.diffing.parse_selector("sample_logs/production.jsonl@attempt=2@key=user-0011")
        ai.diffing.parse_selector("kafka://broker:9092/topic@original")
    """
    from agent_inspect.rules import RULES

    if not isinstance(text, str) or not text.strip():
        raise SelectorError("empty diff side; pass a source such as log.jsonl or log.jsonl@attempt=2")
    parts = _joined_markers_file(text.split("@"))
    # segments after the source, read from the right; a segment that is no selector belongs to the source
    found: list[tuple[str, str | None]] = []
    while len(parts) > 1:
        m = _SEGMENT.match(parts[-1])
        if m is None:
            break
        name, value = m.group(1), m.group(2)
        if value is None and name.partition(":")[0] not in RULES:
            if name in SELECTORS:
                raise SelectorError(f"selector @{name} needs a value: @{name}=…")
            break
        if value is not None and name not in SELECTORS:
            raise SelectorError(f"unknown selector @{name}=…; use one of "
                                + ", ".join(f"@{s}=" for s in SELECTORS) + " or a rule name like @fixed")
        found.append((name, value))
        parts.pop()
    source = "@".join(parts)
    if not source:
        raise SelectorError(f"{text!r} names no source before its selectors")
    fields: dict[str, Any] = {"source": source}
    for name, value in reversed(found):
        if value is None:
            name, value = "predict", name
        if name in ("rule", "predict", "reconstruct"):
            if "rule" in fields:
                raise SelectorError(f"{text!r}: give one rule selector, not several")
            fields["mode"] = "reconstruct" if name == "reconstruct" else "predict"
            fields["rule"] = value
        elif name == "attempt":
            try:
                fields["attempt"] = int(str(value))
            except ValueError:
                raise SelectorError(f"@attempt={value}: the attempt is a number (1 is the first)") from None
            if fields["attempt"] < 1:
                raise SelectorError(f"@attempt={value}: attempts are numbered from 1")
        else:
            fields[name] = value
    return Selector(**fields)


def _joined_markers_file(parts: list[str]) -> list[str]:
    """``@markers=@FILE`` (``--markers``' own ``@FILE`` form) as one segment, its ``@`` kept for the reader."""
    out = parts[:1]
    for part in parts[1:]:
        if len(out) > 1 and out[-1] == "markers=":
            out[-1] += "@" + part
        else:
            out.append(part)
    return out


def read_selected(text: str, *, timeout: float | None = None) -> tuple[Selector, dict[str, Any], Any]:
    """``text`` parsed, the :func:`~agent_inspect.diffing.select` keywords it names (its markers read) and its
    source loaded, in that order for every side: a mistyped ``@markers=`` file is told before a whole topic is
    read, as every verb checks its settings before reading. ``timeout``: the source's and the markers' wait (None:
    the readers' 10 s)."""
    sel = parse_selector(text)
    settings = _selector_settings(sel, timeout=timeout)
    return sel, settings, _load_selected(sel.source, timeout=timeout)


def _selector_settings(sel: Selector, *, timeout: float | None) -> dict[str, Any]:
    """The :func:`~agent_inspect.diffing.select` keywords a parsed selector names, its markers file (or checkpoint)
    read; ``timeout``: seconds a checkpoint URL's storage may take to answer (default: the reader's 10)."""
    from agent_inspect.checkpoint import read_markers_text

    settings: dict[str, Any] = {name: getattr(sel, name) for name in ("attempt", "key", "runtime")
                                if getattr(sel, name) is not None}
    if sel.mode != "log":
        settings.update(mode=sel.mode, rule=sel.rule)
    if sel.markers is not None:     # read as --markers reads it: JSON, @FILE or FILE, or a checkpoint
        settings["markers"] = read_markers_text(sel.markers, option="@markers", timeout=timeout)
    return settings


def _load_selected(source: str, *, timeout: float | None) -> Any:
    """``ai.load(source)``, waiting ``timeout`` seconds (None: 10) for a Kafka broker or Fluss cluster (a file waits
    for nothing); a source that cannot be opened and ends in ``@word`` names an unknown selector (a segment that is
    no selector stays part of the source: paths may hold an ``@``)."""
    from agent_inspect.log import load
    from agent_inspect.rules import RULES
    from agent_inspect.sources import source_scheme

    remote = source_scheme(source) in ("kafka", "fluss")
    try:
        return load(source, **({"timeout": timeout} if remote else {}))   # a file's loader takes no timeout
    except SourceError:
        word = source.rpartition("@")[2] if "@" in source else ""
        if _OWN_RULE.match(word):
            raise SelectorError(f"@{word}: a rule of your own goes after @predict= (what a recovery does per task) "
                                f"or @reconstruct= (each record's status): …@predict={word}; a bare @NAME is a "
                                "built-in rule") from None
        if not _SEGMENT.match(word):
            raise
        known = [*RULES, *SELECTORS]
        close = difflib.get_close_matches(word, known, n=1)
        raise SelectorError(f"unknown selector @{word} (and no source {source!r} to open); use a rule name "
                            f"({', '.join(f'@{r}' for r in RULES)}) or one of "
                            + ", ".join(f"@{s}=" for s in SELECTORS)
                            + (f"; did you mean @{close[0]}{'' if close[0] in RULES else '='}?" if close else "")) \
            from None


def side_label(name: str, mode: str, settings: Recovery, *, attempt: int | None, key: str | None) -> str:
    """``SOURCE@predict=RULE@attempt=N@key=K@markers={…}@runtime=R`` and the rule's what-if mark: the selector
    string's order, from the resolved settings (markers and runtime when given), so both forms label alike."""
    from agent_inspect.recovery import rebuild_start

    mark = settings.rule_mark
    parts = [name] + ([f"{mode}={mark.name}"] if mode != "log" else [])
    parts += [f"{n}={v}" for n, v in (("attempt", attempt), ("key", key)) if v is not None]
    if mode != "log" and "markers" in settings.given:
        start = rebuild_start(settings.markers)
        parts.append("markers=" + ("[]" if start is not None and not start else "{" + ", ".join(
            f"{p}: {o}" for p, o in sorted((start or {}).items())) + "}"))
    if "runtime" in settings.given:
        parts.append(f"runtime={settings.runtime.name}")
    return "@".join(parts) + (mark.mark if mode != "log" else "")


def default_mode(recovery: Recovery | None, settings: Mapping[str, Any]) -> str:
    """A rule, markers or a whole recovery ask what a restore does; without them a side is the log as written."""
    asks = recovery is not None or settings.get("rule") is not None or settings.get("markers") is not None
    return "predict" if asks else "log"


def check_attempt(attempt: int | None, mode: str) -> None:
    """``attempt`` selects records as written: refused with a rule, markers or a recovery."""
    if attempt is not None and mode != "log":
        raise SelectorError(f"attempt={attempt} selects records as written, while a rule, markers or a recovery run one "
                            f"({mode}); drop one, or read the attempt under these settings with mode='log'")
