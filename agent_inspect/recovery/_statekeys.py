"""State keys of replay writes and lookups, in the log's key format (spec §4)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agent_inspect import codec
from agent_inspect._errors import ReplayError
from agent_inspect.recovery._plan import KeyIdentity, key_identity, last_state_keys

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog

__all__ = ["KeyMaker"]

# K2 fingerprints cannot be computed offline (§4.6); keys absent from the log get this placeholder.
_PLACEHOLDER_FINGERPRINT = "A" * 43 + "="


class KeyMaker:
    """Computes state keys per business key: identities from the plan, then the log, then the key text.

    For example::

        keys = ai.executor.KeyMaker(log, key_format=None)        # identities from the log's own records
        keys.identity("user-0001").key_group, keys.state_key("user-0001", 1, "uuid-e", "uuid-a")
    """

    def __init__(self, log: ActionStateLog | None, *, key_format: str | None, max_parallelism: int = 128) -> None:
        self._log = log
        self._max_parallelism = max_parallelism
        self._ids: dict[str, KeyIdentity] = {}
        self.format = key_format or self._infer_format()

    def _infer_format(self) -> str:
        if self._log is None or not len(self._log.records):
            return "K1.5"
        formats = self._log.records["key_format"]
        counts = formats.value_counts()
        counts = counts[counts > 0]
        if counts.empty:
            return "K1.5"
        top = counts.index[counts == counts.max()]
        # a tie goes to the format seen first, as a count in log order would have it
        return str(formats[formats.isin(top)].iloc[0]) if len(top) > 1 else str(top[0])

    def register(self, identities: Mapping[str, KeyIdentity] | None) -> None:
        """Use the plan's key identities (``ReplayPlan.keys``)."""
        for key, ident in dict(identities or {}).items():
            self._ids[str(key)] = ident
            self._ids.setdefault(str(ident.business_key), ident)

    def business_key(self, key: str) -> str:
        """The log's business key of plan key ``key`` (the key text, or the digest for K1.6/K2); ``key`` itself
        when it cannot be told (a digest absent from the log: its tasks fail to look up with that reason)."""
        try:
            return str(self.identity(key).business_key)
        except ReplayError:
            return key

    def identity(self, key: str) -> KeyIdentity:
        ident = self._ids.get(key)
        if ident is None:
            ident = self._ids[key] = self._make(key)
            self._ids.setdefault(str(ident.business_key), ident)
        return ident

    def _make(self, key: str) -> KeyIdentity:
        if self._log is not None and len(self._log.records):
            last = last_state_keys(self._log)
            sk = last.get(key)
            if sk is None and self.format in ("K1.6", "K2"):
                sk = last.get(codec.string_key_digest(key))     # a plan may name a K2 key by its text
            if sk is not None:
                # the key's own records say how the job addresses it (a log may mix formats across keys)
                ident = key_identity(key, sk)
                if ident.key_format in ("K1.6", "K2") and ident.key_digest is not None:
                    ident = dataclasses.replace(ident, business_key=ident.key_digest)
                return ident
        fmt = self.format
        text: str | None
        digest: str | None
        if fmt in ("K1.6", "K2") and len(key) == 44 and key.endswith("="):   # a digest: base64 of a SHA-256
            digest, text = key, None
        else:
            text = key
            digest = codec.string_key_digest(key) if fmt in ("K1.6", "K2") else None
        group = None
        if fmt in ("K1.5-draft", "K1.5", "K1.6", "K2"):
            if text is None:
                raise ReplayError(f"key {key!r} is a digest absent from the log; give its KeyIdentity in the plan")
            group = codec.key_group(codec.java_string_hash(text), self._max_parallelism)
        fingerprint = self._fingerprint() if fmt == "K2" else None
        # K1.6/K2 logs name a key by its digest (§4.6): that is the business key the store indexes
        return KeyIdentity(business_key=digest if digest is not None else key, key_format=fmt, key_text=text,
                           key_group=group, key_digest=digest, serializer_fingerprint=fingerprint)

    def _fingerprint(self) -> str:
        if self._log is not None:
            for sk in self._log.records["state_key"].dropna()[:50]:
                try:
                    fp = codec.parse_state_key(str(sk)).serializer_fingerprint
                except Exception:  # noqa: BLE001 - unparsable keys are skipped
                    continue
                if fp:
                    return fp
        return _PLACEHOLDER_FINGERPRINT

    def key_text(self, key: str) -> str | None:
        return self.identity(key).key_text

    def state_key(self, key: str, seq: int, event_uuid: str, action_uuid: str) -> str:
        return self.identity(key).state_key(seq, event_uuid, action_uuid)
