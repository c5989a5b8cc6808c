"""A Kafka follower that never has new records: a live log or view without a broker."""

from __future__ import annotations

from agent_inspect.raw import RawBatch, SourceInfo


class IdleFollower:
    """What ``LiveLog`` polls, with nothing to poll."""

    info = SourceInfo(kind="kafka", location="kafka://idle/topic", topic="topic")

    def poll(self) -> RawBatch:
        return RawBatch()

    def close(self) -> None:
        pass
