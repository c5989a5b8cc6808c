"""Value-format detection (spec §2.2): which upstream versions a decoded value fits, by its shape."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from agent_inspect.codec._values import (
    _NULL,
    PYTHON_EVENT,
    SUBAGENT_EVENT,
    VALUE_FORMATS,
    ActionState,
    _as_envelope,
)

__all__ = ["VALUE_FORMATS", "detect_value_format", "value_format_candidates", "newest_format", "format_bit",
           "row_mask", "lineage_rule_applies", "LINEAGE_RULE_BIT", "ROW_MASKS"]

# --- format detection ------------------------------------------------------------------------

_BIT = {f: 1 << i for i, f in enumerate(VALUE_FORMATS)}
_ALL = (1 << len(VALUE_FORMATS)) - 1
_LEGACY = _BIT["V0"] | _BIT["V1"]
_MODERN = _ALL & ~_LEGACY
_RAW_JSON_ERA = _LEGACY | _BIT["V2a"]
_ENVELOPE_ERA = _BIT["V2b"] | _BIT["V3"] | _BIT["V3+"]
_LINEAGE_ERA = _BIT["V3"] | _BIT["V3+"]
_NO_LINEAGE_ERA = _ALL & ~_LINEAGE_ERA
_V4 = _BIT["V4"]
_DEFAULT = _BIT["V2a"] | _BIT["V2b"] | _BIT["V3"]  # what an initial record fits (§2.2)
#: Set (above the format bits) in a row mask when the lineage rule took V3 away (internal; the log counts them).
LINEAGE_RULE_BIT = 1 << len(VALUE_FORMATS)


def _narrow(mask: int, allowed: int) -> int:
    # A contradicting signal is ignored rather than leaving no candidate at all.
    return (mask & allowed) or mask


(_F_LEGACY, _F_MODERN, _F_LINEAGE, _F_V3PLUS, _F_CALL_OLD, _F_CALL_NEW, _F_ENVELOPE, _F_RAW,
 _F_OUTPUT, _F_OUTPUT_LINEAGE) = (1 << i for i in range(10))
_FLAG_BITS = 10


def _event_flags(ev: Any) -> int:
    f = _F_LEGACY if (ev.type is None or ev.event_class == PYTHON_EVENT or ev.source_timestamp is not None) \
        else _F_MODERN
    if ev.upstream_event_id is not None or ev.upstream_action_name is not None:
        f |= _F_LINEAGE
    if ev.delegate is not None:
        f |= _F_V3PLUS | _event_flags(ev.delegate)
    elif ev.attachments or ev.event_class == SUBAGENT_EVENT:
        f |= _F_V3PLUS
    return f


def outputs_flags(f: int) -> int:
    """The OR of the output events' flags, plus whether there are modern outputs and whether any has lineage."""
    if f & _F_MODERN:
        return f | _F_OUTPUT | (_F_OUTPUT_LINEAGE if f & _F_LINEAGE else 0)
    return f


def _mask_of_flags(f: int) -> int:
    mask = _ALL & ~_BIT["V0"] & ~_V4  # V4 only by its property (value_format_candidates)
    if f & _F_LEGACY:  # a missing event type is the strongest era signal
        mask = _narrow(mask, _LEGACY)
    elif f & _F_MODERN:
        mask = _narrow(mask, _MODERN)
    if f & _F_LINEAGE:
        mask = _narrow(mask, _LINEAGE_ERA)
    mask = _narrow(mask, _BIT["V3+"] if f & _F_V3PLUS else _ALL & ~_BIT["V3+"])
    if f & _F_CALL_OLD and not f & _F_CALL_NEW:
        mask = _narrow(mask, _LEGACY)
    elif f & _F_CALL_NEW and not f & _F_CALL_OLD:
        mask = _narrow(mask, _MODERN)
    if f & _F_ENVELOPE and not f & _F_RAW:
        mask = _narrow(mask, _ENVELOPE_ERA)
    elif f & _F_RAW and not f & _F_ENVELOPE:
        mask = _narrow(mask, _RAW_JSON_ERA)
    if f & _F_OUTPUT and not f & _F_OUTPUT_LINEAGE:
        # The lineage rule (issue #12 item 2): from 0.4 on every output event gets lineage when the
        # action's outputs are finalized, so outputs none of which carries it were not written by V3.
        ruled = _narrow(mask, _NO_LINEAGE_ERA)
        if ruled != mask:
            return ruled | LINEAGE_RULE_BIT
    return mask


#: Row mask per flag combination: format candidates, plus LINEAGE_RULE_BIT where that rule applied.
ROW_MASKS = [_mask_of_flags(f) for f in range(1 << _FLAG_BITS)]
_MASKS = [m & ~LINEAGE_RULE_BIT for m in ROW_MASKS]


def _state_flags(state: Any) -> int:
    te = state.task_event
    f = 0
    for ev in state.output_events:
        f |= _event_flags(ev)
    f = outputs_flags(f) | (0 if te is None else _event_flags(te))
    for cr in state.call_results:
        f |= _F_CALL_OLD if cr.status is None else _F_CALL_NEW
    for updates in (state.sensory_memory_updates, state.short_term_memory_updates):
        for mu in updates:
            if mu.value != _NULL:
                f |= _F_ENVELOPE if _as_envelope(mu.value) is not None else _F_RAW
    return f


def row_mask(state: Any) -> int:
    """Like :func:`value_format_candidates`, with LINEAGE_RULE_BIT where the lineage rule applied (internal)."""
    if state.memory_updates is not UNSET:
        return _BIT["V0"]
    if state.subagent_result_events is not UNSET:
        return _V4  # the property's presence, an empty list included, is V4 (addendum §1.2)
    return ROW_MASKS[_state_flags(state)]


def value_format_candidates(state: Any) -> int:
    """Bitmask over VALUE_FORMATS of the formats this record fits (internal; used by the log)."""
    return row_mask(state) & ~LINEAGE_RULE_BIT


def lineage_rule_applies(state: Any) -> bool:
    """Whether the lineage rule took V3 away from this record's candidates (outputs, none with lineage)."""
    return bool(row_mask(state) & LINEAGE_RULE_BIT)


def newest_format(mask: int) -> str:
    """The newest format in a candidate mask (internal)."""
    for f in reversed(VALUE_FORMATS):
        if mask & _BIT[f]:
            return f
    return "V3"


def format_bit(fmt: str) -> int:
    """The candidate-mask bit of a format id (internal)."""
    return _BIT[fmt]


def detect_value_format(state: ActionState) -> tuple[str, bool]:
    """``(format_id, inferred)``: the value format this record pins, or the newest it fits (inferred=True).

    V4 is the presence of ``subagentResultEvents``. A record with output events none of which carries
    lineage is not V3 (the lineage rule: 0.4+ runtimes bind lineage to every output event).

    For example::

        ai.codec.detect_value_format(log.value(0))      # ("V3", True): the newest format it fits
    """
    mask = value_format_candidates(state)
    return newest_format(mask), mask & (mask - 1) != 0


