"""InteractionEnv: a TextEnv whose other side is an `interactions.Interaction` (simulated user, teacher)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envs.core.assistant_turn import AssistantTurn
from envs.core.step_result import StepResult
from envs.core.text_env import TextEnv
from turngym.chat.message import Message, system, user

if TYPE_CHECKING:
    from interactions import Interaction, InteractionReply


class InteractionEnv(TextEnv):
    """Each text reply of the agent goes to the interaction, whose reply becomes the next user message.

    `interaction` is an Interaction, or the registered name of one (built with `interaction_config`).
    `reset(options=...)` passes the options to `interaction.start` as episode info, plus `rng` (the
    env's seeded generator). The episode ends when the interaction says it is done or when the env calls
    `end_episode(outcome)` (e.g. from a tool such as `place_order`); then `interaction.finish(outcome)`
    adds its final reward and metrics (`success` among them) to that step. Subclasses set up each
    episode by overriding `episode_info` and may add tools with `own_tools`.
    """

    #: The system message of every episode ("" for none).
    system_prompt: str = ""

    def __init__(
        self,
        *,
        interaction: Interaction | str | None = None,
        interaction_config: dict[str, Any] | None = None,
        system_prompt: str | None = None,
        tools=None,
        render_mode: str | None = None,
    ):
        super().__init__(tools=tools, render_mode=render_mode)
        if interaction is None:
            raise ValueError(
                f"{type(self).__name__} needs an `interaction` (an Interaction or a registered name)"
            )
        if isinstance(interaction, str):
            import interactions

            interaction = interactions.make(interaction, **(interaction_config or {}))
        elif interaction_config:
            raise ValueError("interaction_config only applies when `interaction` is a registered name")
        self.interaction = interaction
        if system_prompt is not None:
            self.system_prompt = system_prompt
        self.outcome: dict[str, Any] | None = None
        self.final_metrics: dict[str, Any] = {}

    # ----- what subclasses may override ----------------------------------------------------------
    def episode_info(self, options: dict[str, Any]) -> dict[str, Any]:
        """What `interaction.start` gets for this episode (default: the reset options)."""
        return dict(options)

    # ----- episode flow --------------------------------------------------------------------------
    def _reset(self, options: dict[str, Any]) -> tuple[list[Message], dict[str, Any]]:
        self.outcome = None
        self.final_metrics = {}
        info = self.episode_info(options)
        opening = self.interaction.start({**info, "rng": self.np_random})
        messages = [system(self.system_prompt)] if self.system_prompt else []
        public = {k: v for k, v in info.items() if _is_public(k, v)}
        return messages + list(opening), public

    async def _respond(self, turn: AssistantTurn) -> StepResult:
        # Async: a simulated user may be a model (`LLMUser`); a scripted one answers without waiting.
        return self._from_reply(await self.interaction.arespond(self._conversation(turn)))

    def _conversation(self, turn: AssistantTurn) -> list[Message]:
        return [*self.transcript, turn.as_message()]

    def _from_reply(self, reply: InteractionReply) -> StepResult:
        content, reward, done, metrics = reply
        metrics = dict(metrics or {})
        messages = [user(content)] if content else []
        info: dict[str, Any] = {k: v for k, v in metrics.items() if k != "format_error"}
        if metrics.get("format_error"):
            info["format_error"] = content or "the reply could not be used"
        result = StepResult(messages, float(reward), terminated=bool(done), info=info)
        if done:
            return self._merge_final(result, self.outcome)
        return result

    def end_episode(
        self, outcome: dict[str, Any] | None, messages: list[Message] | None = None
    ) -> StepResult:
        """End the episode with what the agent accomplished; the interaction's final verdict is added."""
        self.outcome = outcome
        return self._merge_final(StepResult(list(messages or []), terminated=True), outcome)

    def _merge_final(self, result: StepResult, outcome: dict[str, Any] | None) -> StepResult:
        reward, metrics = self.interaction.finish(outcome)
        self.final_metrics = dict(metrics or {})
        result.info.update(self.final_metrics)
        result.info.setdefault("success", False)
        return result.replace(reward=result.reward + float(reward))

    def expert_action(self) -> str:
        """The interaction's scripted expert reply."""
        return self.interaction.expert_reply(self.transcript)


def _is_public(key: str, value: Any) -> bool:
    # Hidden answers and goals must not leak into `info`, which agents and logs may see.
    return key not in {"answer", "goal", "hints", "solution", "rng"} and isinstance(
        value, str | int | float | bool
    )
