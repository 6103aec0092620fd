"""The loop guard's ladder: how a detection goes on to a nudge, a forced answer, an end.

Every adapter of the loop guard (LangChain, AgentScope) reads the agent's steps, keeps an
:class:`Episode` in the agent's state, and asks :func:`react` what to do before a model call;
it only translates the answer (a message to append, ``tool_choice="none"``, the run ended) into
its framework. An episode ends after ``recovery_steps`` steps with no stuck pattern, and a later
loop starts again from the first rung.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from tokenlean import checks
from tokenlean.loop_guard._detect import Detection, LoopDetector
from tokenlean.loop_guard._step import Step

__all__ = [
    "IGNORED_FINAL",
    "RECOVERY_STEPS",
    "RESPONSES",
    "Episode",
    "Ladder",
    "Reaction",
    "Response",
    "Text",
    "default_end",
    "default_final",
    "default_nudge",
]

Response = Literal["nudge", "final", "end"]
RESPONSES: tuple[Response, ...] = ("nudge", "final", "end")
#: The trigger recorded when the model kept calling tools after being asked for its answer.
IGNORED_FINAL = "ignored-final"
#: Steps without a stuck pattern after which an episode is over (by default).
RECOVERY_STEPS = 20

Text = str | Callable[[Detection | None], str]


def default_nudge(detection: Detection | None) -> str:
    what = f" ({detection.describe()})" if detection else ""
    return (
        f"You seem to be repeating yourself without making progress{what}. Do not repeat that "
        "step again: try a different approach, or give your final answer if you have enough."
    )


def default_final(detection: Detection | None) -> str:
    what = f" ({detection.describe()})" if detection else ""
    return (
        f"You are still repeating yourself{what}. Tools are disabled for your next reply: give "
        "your final answer now with what you have found, and say what is left unfinished."
    )


def default_end(detection: Detection | None) -> str:
    what = f" ({detection.describe()})" if detection else ""
    return f"Run stopped by the loop guard: the agent kept repeating itself{what}."


@dataclass(frozen=True, slots=True)
class Episode:
    """How far up the ladder the current episode is (step counts; -1 for never)."""

    level: int = 0  # rungs of the ladder used in this episode
    seen_at: int = -1  # step count at the last detection
    final_at: int = -1  # step count at which the forced-answer call is due

    def to_record(self) -> dict[str, int]:
        return {"level": self.level, "seen_at": self.seen_at, "final_at": self.final_at}

    @classmethod
    def from_record(cls, raw: object) -> Episode:
        """The stored episode, or a fresh one (a missing or malformed record starts over)."""
        if not isinstance(raw, Mapping):
            return cls()
        try:
            return cls(
                int(raw.get("level", 0)), int(raw.get("seen_at", -1)), int(raw.get("final_at", -1))
            )
        except (TypeError, ValueError):
            return cls()

    def forces_answer(self, steps: int) -> bool:
        """Whether the call made after ``steps`` steps is the forced-answer call."""
        return self.final_at >= 0 and self.final_at == steps


@dataclass(frozen=True, slots=True)
class Reaction:
    """What :meth:`Ladder.react` decided: the episode to store, and the rung to act on
    (``None``: nothing to do but store it)."""

    episode: Episode
    rung: Response | None = None
    trigger: str = ""
    detection: Detection | None = None


@dataclass(frozen=True, slots=True)
class Ladder:
    """The detector, the rungs and the texts (see :class:`tokenlean.langchain.LoopGuardMiddleware`
    for each argument)."""

    detector: LoopDetector
    responses: tuple[Response, ...] = RESPONSES
    recovery_steps: int = RECOVERY_STEPS
    texts: Mapping[Response, Text] | None = None

    def __post_init__(self) -> None:
        checks.instance(self.detector, "detector", LoopDetector, "a LoopDetector")
        object.__setattr__(self, "responses", _ladder(self.responses))
        checks.integer(self.recovery_steps, "recovery_steps", at_least=1)
        texts: dict[Response, Text] = {
            "nudge": default_nudge,
            "final": default_final,
            "end": default_end,
        }
        texts.update(self.texts or {})
        for rung, text in texts.items():
            if isinstance(text, str):
                checks.text(text, f"{rung}_text", blank=False)
            else:
                checks.function(text, f"{rung}_text", wanted="a non-empty string or a function")
        object.__setattr__(self, "texts", texts)

    def react(self, steps: Sequence[Step], since: int, episode: Episode) -> Reaction | None:
        """What to do before the next call, given the steps so far (``since``: the steps
        before the latest new user request); ``None`` when nothing is new."""
        n = len(steps)
        if n <= episode.seen_at:
            return None  # nothing new since the last detection
        detection = self.detector.detect(steps, since=since)
        if detection is not None and detection.last_step < episode.seen_at:
            # The pattern already answered, followed only by steps the detector leaves out
            # (polls, exempt tools): they do not climb the ladder either.
            detection = None
        trigger: str | None = detection.pattern if detection else None
        if trigger is None and _ignored_final(steps, episode):
            trigger = IGNORED_FINAL
        if trigger is None:
            return None
        level = episode.level if n - episode.seen_at <= self.recovery_steps else 0
        rung = self._rung(level)
        used = level + 1 if rung is not None and level < len(self.responses) else level
        new = Episode(used, n, n if rung == "final" else -1)
        return Reaction(new, rung, trigger, detection)

    def text(self, rung: Response, detection: Detection | None) -> str:
        text = (self.texts or {})[rung]
        return text if isinstance(text, str) else text(detection)

    def _rung(self, level: int) -> Response | None:
        if level < len(self.responses):
            return self.responses[level]
        return "end" if self.responses[-1] == "end" else None


def _ladder(responses: Sequence[Response]) -> tuple[Response, ...]:
    if isinstance(responses, str):  # its letters would be read as the ladder
        raise checks.ArgumentTypeError(
            f"responses must be a sequence of {RESPONSES} such as ('nudge', 'final'), "
            f"not a bare string, got {responses!r}"
        )
    ladder = tuple(checks.sequence(responses, "responses", of=f"{RESPONSES}"))
    if not ladder or any(r not in RESPONSES for r in ladder):
        raise ValueError(f"responses must be a non-empty sequence of {RESPONSES}, got {ladder}")
    if "end" in ladder[:-1]:
        raise ValueError("'end' can only be the last response: nothing runs after it")
    return ladder


def _ignored_final(steps: Sequence[Step], episode: Episode) -> bool:
    """The model answered the forced-answer call with tool calls instead of an answer."""
    final_at = episode.final_at
    return 0 <= final_at < len(steps) and bool(steps[final_at]["action"])
