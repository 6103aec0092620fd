"""Cache safety of every registered strategy, in one place: which calls change bytes already sent.

Each strategy is replayed on the bundled real trajectories (and, with the shared data, on the
smallest run of each source) through a real ``create_agent``. A strategy either never changes a
byte the model was already sent, or rewrites sent messages in batches: then each message goes out
in at most a few forms, each form once it appears for good (never back to an earlier one). A new
strategy must say which it is here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.data import bundled_paths, trajectory_paths
from tokenlean.langchain._adapter import to_view
from tokenlean.replay._engine import replay
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._raw import CallPrompt
from tokenlean.replay._strategies import all_strategies, load_plugins
from tokenlean.testing import RecordedCall, prefix_breaks
from tokenlean.transcript import canonical

#: Strategies that never change a byte already sent (``shorten-with-tool`` lists
#: ``read_original`` from the first call, so its tool list never changes either).
NO_BREAK = frozenset({"none", "loop-guard", "budget-100k", "budget-unreached", "shorten-with-tool"})
#: The other ways in (:mod:`tokenlean.replay.builtin.ways_in`), replayed in their own loops:
#: none changes a byte already sent (each decides its tool list at a run's first call).
WAYS_IN = frozenset(
    {"pydantic-ai", "agentscope", "raw-anthropic", "raw-openai-chat", "raw-openai-responses"}
    | {"raw-gemini"}
)
#: The provider's own clearing (:mod:`tokenlean.replay.builtin.provider_clearing`): the server
#: clears down to the newest 3 results on every call past its trigger, so each result is sent in
#: at most two forms (as the client sent it, then the placeholder) and never back.
SERVER_CLEARING = frozenset(
    f"{stack}anthropic-clear-tool-uses{trigger}"
    for stack in ("", "recommended+")
    for trigger in ("", "-30k")
)
#: Strategies that only ever add ``read_original`` to the tool list, once, when a thread first
#: keeps an original (messages already sent never change).
OFFER_TOOL = frozenset(
    {
        "shorten",
        "shorten-conservative",
        "shorten-aggressive",
        "shorten-no-dedupe",
        "shorten-inputs",
        "recommended-anthropic",
        "recommended-openai",
    }
)
#: Strategies that rewrite sent messages: the most forms one message may be sent in.
REWRITES = {
    "context-editor": 2,
    "context-editor-plain": 2,
    "context-editor-10k": 2,
    "context-editor-plain-10k": 2,
    "token-saving": 2,
    "token-saving-once": 2,
    "token-saving-words": 4,  # original, head+tail, then the two word tiers
    "token-saving-words-once": 2,
}

load_plugins()
STRATEGIES = sorted(s.name for s in all_strategies())


def _smallest_per_source() -> list[Path]:
    by_source: dict[str, list[Path]] = {}
    for path in trajectory_paths():
        by_source.setdefault(path.parent.name, []).append(path)
    return [min(paths, key=lambda p: p.stat().st_size) for _, paths in sorted(by_source.items())]


PATHS = [*bundled_paths(), *_smallest_per_source()]


def _forms(calls: list[RecordedCall]) -> dict[str, list[str]]:
    """Per message id, the distinct forms it was sent in, in the order they appeared."""
    forms: dict[str, list[str]] = {}
    for call in calls:
        for message in to_view(call.messages):
            seen = forms.setdefault(message.id or "", [])
            text = canonical(message)
            if not seen or seen[-1] != text:
                seen.append(text)
    return forms


def _prompt_forms(prompts: list[CallPrompt]) -> dict[str, list[str]]:
    """:func:`_forms` of a way in's prompts."""
    forms: dict[str, list[str]] = {}
    for prompt in prompts:
        for message in prompt.messages:
            seen = forms.setdefault(message.id or "", [])
            text = canonical(message)
            if not seen or seen[-1] != text:
                seen.append(text)
    return forms


def _assert_forms(name: str, forms: dict[str, list[str]], *, most: int) -> None:
    for message_id, sent in forms.items():
        assert len(sent) <= most, f"{name} sent {message_id} in {len(sent)} forms"
        assert len(set(sent)) == len(sent), f"{name} sent an earlier form of {message_id} again"


def _prompt_breaks(prompts: list[CallPrompt]) -> list[int]:
    """The calls whose tools or messages do not start with the previous call's."""
    breaks = []
    for k in range(1, len(prompts)):
        before, now = prompts[k - 1], prompts[k]
        sent = [canonical(m) for m in before.messages]
        if now.tools != before.tools or [canonical(m) for m in now.messages][: len(sent)] != sent:
            breaks.append(k)
    return breaks


def test_every_strategy_declares_its_cache_behaviour() -> None:
    declared = NO_BREAK | OFFER_TOOL | WAYS_IN | SERVER_CLEARING | set(REWRITES)
    undeclared = [n for n in STRATEGIES if n not in declared]
    assert not undeclared, f"declare these strategies' expected breaks here: {undeclared}"


@pytest.mark.parametrize("name", STRATEGIES)
@pytest.mark.parametrize("path", PATHS, ids=lambda p: f"{p.parent.name}/{p.stem[:40]}")
def test_calls_change_sent_bytes_only_as_declared(name: str, path: Path) -> None:
    trajectory = load_trajectory(path)
    strategy = next(s for s in all_strategies() if s.name == name)
    if strategy.way_in is not None:
        if not strategy.available():
            pytest.skip(f"{name} needs a package this environment lacks")
        prompts = [p for p in strategy.way_in(trajectory) if p.turn is not None]
        if name in SERVER_CLEARING:
            _assert_forms(name, _prompt_forms(prompts), most=2)
            return
        assert _prompt_breaks(prompts) == [], f"{name} changed sent bytes"
        return
    calls = [c for c in replay(trajectory, strategy.factory()).calls if c.scripted]
    breaks = prefix_breaks(calls)
    if name in NO_BREAK:
        assert breaks == [], f"{name} changed sent bytes at (call, message) {breaks}"
        return
    if name in OFFER_TOOL:
        assert len(breaks) <= 1 and all(m == -1 for _, m in breaks), f"{name}: {breaks}"
        offered = ["read_original" in {t["function"]["name"] for t in c.tools} for c in calls]
        assert offered == sorted(offered), f"{name} withdrew read_original once offered"
        assert bool(breaks) == any(offered[1:]) and not (offered and offered[0] and breaks)
        return
    _assert_forms(name, _forms(calls), most=REWRITES[name])
    assert len(breaks) <= sum(len(f) - 1 for f in _forms(calls).values())
