"""The one exception hierarchy of agent_inspect, rooted in :class:`InspectError`."""

from __future__ import annotations

from agent_inspect._controls import show_controls

__all__ = [
    "InspectError",
    "SourceError",
    "BrokerUnreachable",
    "DataLossError",
    "UnknownPartitionError",
    "DecodeError",
    "KeyFormatError",
    "ValueFormatError",
    "RecoveryError",
    "CaseFileError",
    "ReplayError",
    "CheckpointFormatError",
]


class InspectError(Exception):
    """Base of every error agent_inspect raises on purpose; the message is one line saying what to do.

    A message may quote a key, an action name or a file name from the job: as text (a traceback, ``str(error)``)
    its control characters are written out, so a terminal shows them and never obeys them; ``args`` keep them.
    ``cli`` is the message in a command-line user's words where the Python words name a keyword or a call the
    command line has not (``--timeout`` for ``timeout=``); the CLI prints :meth:`cli_text`.
    """

    def __init__(self, *args: object, cli: str | None = None) -> None:
        super().__init__(*args)
        self.cli = cli   # kept by pickling (a scan's worker sends errors back): it is in the instance's __dict__

    def __str__(self) -> str:
        return show_controls(super().__str__())

    def cli_text(self) -> str:
        """The one line the command line prints: ``cli`` where the error has command-line words, else ``str()``."""
        return show_controls(self.cli) if self.cli is not None else str(self)


class SourceError(InspectError):
    """A source (Kafka topic, Fluss table, dump file) could not be read."""


class BrokerUnreachable(SourceError):
    """The broker or cluster did not answer within the configured timeout."""


class DataLossError(SourceError):
    """A recovery marker points below the earliest retained offset, or records were deleted while a load read them."""


class UnknownPartitionError(SourceError):
    """A marker or option names a partition/bucket the source does not have."""


class DecodeError(InspectError):
    """A record's key or value could not be decoded."""


class KeyFormatError(DecodeError):
    """A state key matches none of the known key formats (spec §4.7)."""


class ValueFormatError(DecodeError):
    """A value is not a well-formed ActionState of any known version (spec §5)."""


class RecoveryError(InspectError):
    """A reconstruction or prediction could not be computed from the given inputs."""


class CaseFileError(InspectError):
    """A case file is malformed (docs/reference/cases.md)."""


class ReplayError(InspectError):
    """The replay executor was driven into an invalid state, or a policy denied a call."""


class CheckpointFormatError(DecodeError):
    """A Flink checkpoint or savepoint is corrupt, truncated, of an unknown version, or not an agent job's."""
