"""Which message gets which compression, and when: the framework-free token-saving planner.

:func:`plan_compressions` reads a neutral transcript and the compressions stored so far (the
middleware keeps them in agent state) and returns the new or changed ones. Each is computed once,
from the original text, so the bytes sent for a message change only when its entry changes, and
each change rewrites bytes the model was already sent (a prompt-cache break from that message on).

- ``compress_once=False`` (the reference behaviour): a tool output is head+tail truncated when it
  leaves the ``keep_recent_tool_messages`` window. With word compression on, a message is
  compressed at the "mid" ratio once it is ``perplexity_recent_cutoff`` calls old, and again (from
  the original) at the "old" ratio once it is ``perplexity_mid_cutoff`` calls old.
- ``compress_once=True`` (the default): a message is compressed once, by every lever on, at the
  ratio of its tier, when it has left the recent window of every lever. The compressions made on a
  call are written into the prompt on that call, together, if they pay for it within the calls the
  run is expected to have left (half the calls so far, at most ``payback_calls``) under the
  policy's cache pricing (:func:`tokenlean.cost.expected_net_saving`: the tokens they remove, read
  from the cache on each later call, must cover re-writing the cache from the first rewritten
  message on; :func:`tokenlean.cost.floor_pays` where the prompt may fall under the minimum
  cacheable length); the rewrite starts where that saving is largest, and what it leaves out stays
  whole for good (the messages after it only grow, and so the cost). A message not yet sent is
  rewritten for free: ``keep_recent_tool_messages=0`` compresses at first sight with no cache break
  at all.

A long transcript is not re-read on every call: :func:`plan_compressions` reads a *window* (the
transcript from some position on) and says how many of its leading messages are *settled*, with
the stage they keep for good and nothing pending, so the next call's window can start after them.
:func:`compression_edits` turns stored compressions into the edits an adapter applies.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from tokenlean._failopen import fail_open
from tokenlean.cost import expected_net_saving, floor_pays
from tokenlean.token_saving._entries import (
    EMPTY_ENTRY,
    CompressedEntry,
    applied_entry,
    build_entry,
    sent_message_tokens,
    sent_tokens,
)
from tokenlean.token_saving._head_tail import content_digest
from tokenlean.token_saving._policy import CompressionSettings, Stage
from tokenlean.tokens import TokenCounter
from tokenlean.transcript import Edit, Message

__all__ = [
    "CompressedEntry",
    "CompressionPlan",
    "compression_edits",
    "plan_compressions",
    "sent_tokens",
]

logger = logging.getLogger(__name__)


@dataclass
class CompressionPlan:
    """New or changed entries by message id, what they add to the stats, and how many leading
    messages of the window are settled (their stage is final and nothing of theirs pends)."""

    updates: dict[str, CompressedEntry] = field(default_factory=dict)
    stats: Counter[str] = field(default_factory=Counter)
    settled: int = 0


def plan_compressions(
    view: Sequence[Message],
    stored: Mapping[str, CompressedEntry],
    policy: CompressionSettings,
    counter: TokenCounter,
    *,
    before: int = 0,
) -> CompressionPlan:
    """The entries to add to ``stored`` for this transcript; a failing message is skipped.

    ``view`` may be a window: the transcript from some position on, where every message before
    it is settled; ``before`` is the tokens those messages are sent as (for the cache model).
    """
    plan = CompressionPlan()
    current: dict[int, CompressedEntry] = {}
    ages = _ages(view)
    for index, (message, (tools_after, calls_ago)) in enumerate(zip(view, ages, strict=True)):
        if message.id is None or message.role not in ("tool", "assistant"):
            continue
        with fail_open(
            logger, "could not compress message %s; left as is", message.id, level=logging.WARNING
        ) as guard:
            stage = policy.stage(message.role, tools_after, calls_ago)
            entry = _plan_one(message, stage, stored.get(message.id), policy, counter, plan)
        if not guard.failed and entry is not None:
            current[index] = entry
    if policy.compress_once:
        _release(view, current, policy, plan, counter, before)
    _count(plan, stored)
    plan.settled = _settled(view, ages, current, policy)
    return plan


def _settled(
    view: Sequence[Message],
    ages: Sequence[tuple[int, int]],
    current: Mapping[int, CompressedEntry],
    policy: CompressionSettings,
) -> int:
    """How many leading messages will never get a new or changed entry."""
    for index, message in enumerate(view):
        entry = current.get(index)
        if entry is not None and not entry["applied"]:
            return index
        if message.id is None or message.role not in ("tool", "assistant"):
            continue
        if not policy.final(message.role, *ages[index]):
            return index
    return len(view)


def compression_edits(
    view: Sequence[Message], entries: Mapping[str, CompressedEntry], *, offset: int = 0
) -> list[Edit]:
    """The edits that send each message of ``view`` as its applied entry says.

    An entry applies only to a message whose content still has the digest it was made from.
    """
    edits: list[Edit] = []
    for index, message in enumerate(view):
        entry = entries.get(message.id) if message.id is not None else None
        if entry is None or entry["content"] is None or not entry["applied"]:
            continue
        if content_digest(message.content) != entry["source"]:
            continue
        content = entry["content"]
        new = content if isinstance(content, str) else tuple(content)
        saved = entry["ht_tokens"] + entry["word_tokens"]
        edits.append(
            Edit(offset + index, message.id, new, f"compressed ({entry['stage']})", saved, 0)
        )
    return edits


def _ages(view: Sequence[Message]) -> list[tuple[int, int]]:
    """Per message: tool messages after it, and assistant messages (model calls) after it."""
    tools = calls = 0
    out: list[tuple[int, int]] = []
    for message in reversed(view):
        out.append((tools, calls))
        tools += message.role == "tool"
        calls += message.role == "assistant"
    return out[::-1]


def _plan_one(
    message: Message,
    stage: Stage | None,
    previous: CompressedEntry | None,
    policy: CompressionSettings,
    counter: TokenCounter,
    plan: CompressionPlan,
) -> CompressedEntry | None:
    """The message's entry from now on (new ones also go to ``plan.updates``)."""
    if previous is None and stage is None:
        return None
    if previous is not None and previous["source"] != content_digest(message.content):
        previous = None  # the message changed under us: its old entry no longer applies
    if previous is not None and (
        policy.compress_once or stage is None or stage.key == previous["stage"]
    ):
        plan.stats["perplexity_cache_hits"] += previous["classified"]
        return previous
    if stage is None:
        return None
    entry = build_entry(message.content, stage, policy, counter, applied=not policy.compress_once)
    if entry is None:
        return previous
    plan.updates[str(message.id)] = entry
    return entry


def _release(
    view: Sequence[Message],
    current: dict[int, CompressedEntry],
    policy: CompressionSettings,
    plan: CompressionPlan,
    counter: TokenCounter,
    before: int,
) -> None:
    """Apply the batch of pending entries that pays back most within ``payback_calls``, and
    drop the others for good."""
    pending = sorted(i for i, e in current.items() if not e["applied"])
    if not pending:
        return
    sent_end = max((i for i, m in enumerate(view) if m.role == "assistant"), default=0)
    # upto[i]: tokens of the messages before i as the next prompt sends them (none rewritten)
    upto = [before]
    for i, message in enumerate(view):
        upto.append(upto[-1] + sent_message_tokens(message, applied_entry(current.get(i)), counter))
    prompt, new = upto[-1], upto[-1] - upto[sent_end]
    saved = [current[i]["ht_tokens"] + current[i]["word_tokens"] for i in pending]
    # a run is expected to go on about as long as it has gone so far (the window's calls: at
    # most what the run made), up to ``payback_calls``: a short run has little left to pay back
    remaining = min(policy.payback_calls, sum(m.role == "assistant" for m in view) // 2)
    # the counts miss the system prompt and tool schemas: a prompt that looks too short to
    # be cached may well be cached, so the rewrite is priced as if every prefix were
    pricing = replace(policy.pricing, min_cached=0, granularity=1)
    best, best_net = None, 0.0
    for k, start in enumerate(pending):
        net = expected_net_saving(
            pricing,
            prompt=prompt,
            prefix=min(upto[start], prompt - new),
            new=new,
            saved=sum(saved[k:]),
            remaining=remaining,
        )
        if not floor_pays(policy.pricing, saved=sum(saved[k:]), after=prompt - sum(saved[k:])):
            continue
        if (best is None and net >= 0) or net > best_net:
            best, best_net = k, net
    # what does not pay now never will (the messages after it only grow): it stays whole
    for k, i in enumerate(pending):
        released = current[i].copy()
        if best is None or k < best:
            released["content"] = None  # the message as it is, for good
            released["ht_chars"] = released["ht_tokens"] = 0
            released["word_chars"] = released["word_tokens"] = 0
        released["applied"] = True
        plan.updates[str(view[i].id)] = current[i] = released


def _count(plan: CompressionPlan, stored: Mapping[str, CompressedEntry]) -> None:
    """Add what the newly applied entries remove (beyond what their predecessors did)."""
    for message_id, entry in plan.updates.items():
        if not entry["applied"]:
            continue
        before = stored.get(message_id)
        if before is None or not before["applied"] or before["source"] != entry["source"]:
            before = EMPTY_ENTRY
        plan.stats.update(
            compressions=entry["ht_chars"] > 0 and before["ht_chars"] == 0,
            chars_saved=entry["ht_chars"] - before["ht_chars"],
            tokens_saved=entry["ht_tokens"] - before["ht_tokens"],
            perplexity_compressions=entry["word_chars"] > 0 and entry["stage"] != before["stage"],
            perplexity_chars_saved=entry["word_chars"] - before["word_chars"],
            perplexity_tokens_saved=entry["word_tokens"] - before["word_tokens"],
        )
