"""The replay's checkpointer: LangGraph's in-memory one, keeping only each thread's newest
checkpoint.

A replay resumes its thread at each user turn from the newest checkpoint and never travels back,
yet :class:`~langgraph.checkpoint.memory.InMemorySaver` keeps every checkpoint with a serialized
copy of the whole message list as it was then: memory quadratic in a session's length (153 MB of
copies for a 2 MB Claude Code session). This one forgets a thread's older checkpoints, their
pending writes and the channel values no newer checkpoint reads, as soon as a newer one is saved.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver

__all__ = ["LatestSaver"]


class LatestSaver(InMemorySaver):
    """An :class:`InMemorySaver` that holds one checkpoint per thread (and namespace)."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved = super().put(config, checkpoint, metadata, new_versions)
        where: dict[str, Any] = saved["configurable"]
        self._forget_older(where, checkpoint["channel_versions"])
        return saved

    def _forget_older(self, where: dict[str, Any], versions: ChannelVersions) -> None:
        thread, ns, newest = where["thread_id"], where["checkpoint_ns"], where["checkpoint_id"]
        checkpoints = self.storage[thread][ns]
        for old in [c for c in checkpoints if c != newest]:
            del checkpoints[old]
            self.writes.pop((thread, ns, old), None)
        stale = [
            key
            for key in self.blobs
            if key[0] == thread and key[1] == ns and versions.get(key[2]) != key[3]
        ]
        for key in stale:
            del self.blobs[key]
