"""Short-term and sensory memory of the simulated operator, copy-on-write over a read-only base."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["Memory"]


class Memory(Mapping[str, Any]):
    """Flat dotted-path memory (``user.profile.tier`` → value) as the operator keeps it per key.

    The ``base`` mapping is never modified: the first write after construction or after :meth:`snapshot` copies
    the data, so snapshots handed out earlier stay valid and cost nothing until the next write.

    For example::

        memory = ai.executor.Memory({"user.tier": "gold"})      # the base mapping is never modified
        memory.set("user.name", "Ada")
        memory.snapshot()
    """

    def __init__(self, base: Mapping[str, Any] | None = None) -> None:
        self._data: dict[str, Any] = dict(base) if base else {}
        self._shared = False

    def __getitem__(self, path: str) -> Any:
        return self._data[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def _own(self) -> dict[str, Any]:
        if self._shared:
            self._data = dict(self._data)
            self._shared = False
        return self._data

    def set(self, path: str, value: Any) -> None:
        """Write ``value`` at ``path`` (upstream ``set(path, value)``)."""
        self._own()[path] = value

    def new_object(self, path: str) -> None:
        """Create an object node at ``path``; recorded upstream as a null-valued update (§5.4)."""
        self._own()[path] = None

    def clear(self) -> None:
        """Drop everything (the operator clears sensory memory when a round completes)."""
        self._data = {}
        self._shared = False

    def snapshot(self) -> Mapping[str, Any]:
        """A read-only view of the current contents that later writes do not change."""
        self._shared = True
        return MappingProxyType(self._data)

    def __repr__(self) -> str:
        return f"Memory({self._data!r})"
