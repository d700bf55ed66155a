"""`Interaction`: the other side of a conversation env (a simulated user or a feedback giver)."""

from __future__ import annotations

from typing import Any, NamedTuple

from turngym.chat.message import Message


class InteractionReply(NamedTuple):
    """What the participant says back: its message (None for silence), a reward, whether it is done."""

    content: str | None
    reward: float = 0.0
    done: bool = False
    metrics: dict[str, Any] = {}


class InteractionOutcome(NamedTuple):
    """The participant's final verdict on the episode: extra reward plus metrics (`success` among them)."""

    reward: float = 0.0
    metrics: dict[str, Any] = {}


class Interaction:
    """A simulated participant: `start` opens an episode, `respond` answers each agent turn, `finish` scores.

    `start(episode_info)` gets what the env knows about the episode (e.g. the problem, a hidden goal,
    and `rng`, the env's seeded `numpy.random.Generator`: use it, never the global RNGs) and returns the
    opening messages. `respond(messages)` gets the whole conversation so far, the agent's last turn
    included, and returns an `InteractionReply`. `finish(outcome)` is called once when the episode ends;
    `outcome` holds what the env observed the agent accomplish (e.g. the order it placed).
    Configuration arrives as constructor keyword arguments (from `interactions.make` or YAML).
    """

    #: Set by the registry when built through `interactions.make`.
    name: str = ""

    def start(self, episode_info: dict[str, Any]) -> list[Message]:
        """Begin an episode; return the opening messages (usually one `user` message)."""
        raise NotImplementedError(f"{type(self).__name__}.start is not implemented")

    def respond(self, messages: list[Message]) -> InteractionReply:
        """Answer the agent's last turn."""
        raise NotImplementedError(f"{type(self).__name__}.respond is not implemented")

    async def arespond(self, messages: list[Message]) -> InteractionReply:
        """Async twin of `respond`; participants that do I/O (an LLM user) override this one."""
        return self.respond(messages)

    def finish(self, outcome: dict[str, Any] | None = None) -> InteractionOutcome:
        """Score the episode once it ends (default: nothing more to add)."""
        return InteractionOutcome()

    def expert_reply(self, messages: list[Message]) -> str:
        """What a scripted expert agent would say next, when this participant knows (for tests/baselines)."""
        raise NotImplementedError(f"{type(self).__name__} has no scripted expert")
