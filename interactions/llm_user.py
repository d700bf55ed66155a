"""LLMUser: a user role-played by a language model through any rollout engine."""

from __future__ import annotations

from typing import Any, TypeVar

from interactions.interaction import Interaction, InteractionOutcome, InteractionReply
from interactions.model_participant import ModelParticipant
from turngym.chat.engine import Engine
from turngym.chat.message import Message
from turngym.common.run_sync import run_sync

T = TypeVar("T")

DEFAULT_INSTRUCTIONS = (
    "You are role-playing a user who is talking to an AI assistant. Stay in character and never say you "
    "are an AI. Reply with one or two short sentences, as the user would.\n"
    "Persona: {persona}\nYour goal: {goal}\n"
    "When your goal has been fully met, end your message with {done_marker}."
)


class LLMUser(Interaction):
    """Plays a persona with `engine` + `tokenizer`: the conversation is shown to the model with the roles
    swapped (the agent speaks as `user`, this participant as `assistant`), then its completion is the
    user's next message.

    `engine`: an `Engine` (any object with `async generate(request_id, *, prompt_ids, sampling_params)`
    returning something with `token_ids`, and optionally `log_probs`, `stop_reason`). `tokenizer`: a Hugging Face
    tokenizer with a chat template, or the path of one (loaded offline). `persona`/`goal` may also come
    per episode through `episode_info`. The user is done when it writes `done_marker` (that counts as
    success) or after `max_turns` replies. Tool messages are not shown to the user.

    The model behind it is a `ModelParticipant` (`self.model`, shared with the game opponents): what is
    the user's own is the persona prompt, the swapped roles and what an empty reply means (`"..."`).
    """

    def __init__(
        self,
        *,
        engine: Engine,
        tokenizer: Any,
        persona: str = "A friendly customer.",
        goal: str = "Get a helpful answer to your question.",
        opening: str | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        sampling_params: dict[str, Any] | None = None,
        max_new_tokens: int = 96,
        max_turns: int | None = None,
        done_marker: str = "[DONE]",
    ):
        self.model = ModelParticipant(
            engine,
            tokenizer,
            name="LLMUser",
            request_prefix="llm-user",
            sampling_params=sampling_params,
            max_new_tokens=max_new_tokens,
            on_empty_reply='the user says "..."',
        )
        self.engine, self.tokenizer = self.model.engine, self.model.tokenizer
        self.chat = self.model.format.chat
        self.sampling_params = self.model.sampling_params
        self.persona, self.goal, self.opening = persona, goal, opening
        self.instructions = instructions
        self.max_turns = max_turns
        self.done_marker = done_marker
        self._begin({})

    def _begin(self, info: dict[str, Any]) -> None:
        self.episode_persona = info.get("persona", self.persona)
        self.episode_goal = info.get("goal", self.goal)
        self.turns = 0
        self.satisfied = False
        self.generated_tokens = 0

    def system_prompt(self) -> str:
        """The instructions the role-playing model gets."""
        return self.instructions.format(
            persona=self.episode_persona, goal=self.episode_goal, done_marker=self.done_marker
        )

    def start(self, episode_info: dict[str, Any]) -> list[Message]:
        """The opening line: the configured one, else generated from the persona."""
        self._begin(episode_info)
        opening = episode_info.get("opening", self.opening)
        if opening is None:
            opening = run_sync(self._generate([], seed=_seed_from(episode_info)))[0]
        return [{"role": "user", "content": opening}]

    def respond(self, messages: list[Message]) -> InteractionReply:
        """Blocking `arespond` (runs in a worker thread when an event loop is running here)."""
        return run_sync(self.arespond(messages))

    async def arespond(self, messages: list[Message]) -> InteractionReply:
        """Ask the engine for the user's next message."""
        self.turns += 1
        text, meta = await self._generate(messages)
        if self.done_marker in text:
            self.satisfied = True
            text = text.replace(self.done_marker, "").strip() or "Thanks, that's all."
        done = self.satisfied or (self.max_turns is not None and self.turns >= self.max_turns)
        return InteractionReply(text, 0.0, done, {**meta, "user_turns": self.turns})

    async def _generate(self, messages: list[Message], seed: int | None = None) -> tuple[str, dict[str, Any]]:
        reply = await self.model.reply(self._conversation(messages), seed=seed)
        self.generated_tokens += len(reply.token_ids)
        meta = {"user_tokens": len(reply.token_ids), "user_stop_reason": reply.stop_reason}
        return reply.text or "...", meta

    def _conversation(self, messages: list[Message]) -> list[Message]:
        conversation = [{"role": "system", "content": self.system_prompt()}, *swap_roles(messages)]
        if len(conversation) == 1:
            conversation.append({"role": "user", "content": "(The assistant is waiting for you to start.)"})
        return conversation

    def encode(self, conversation: list[Message]) -> list[int]:
        """Prompt ids for the role-playing model: the chat template with a generation prompt.

        Contents are plain text (the agent's replies are in them): only the template's markup becomes
        special ids, so the agent cannot write a system turn into this prompt.
        """
        return self.model.prompt(conversation).ids

    def finish(self, outcome: dict[str, Any] | None = None) -> InteractionOutcome:
        """Success when the user said its goal was met."""
        return InteractionOutcome(
            0.0, {"success": self.satisfied, "user_turns": self.turns, "user_tokens": self.generated_tokens}
        )


def swap_roles(messages: list[Message]) -> list[Message]:
    """The conversation from the user's side: agent turns become `user`, user turns `assistant`."""
    swapped = []
    for m in messages:
        role, content = m.get("role"), m.get("content")
        if role not in ("user", "assistant") or not isinstance(content, str) or not content.strip():
            continue  # system prompts and tool traffic belong to the agent's side
        swapped.append({"role": "assistant" if role == "user" else "user", "content": content})
    return swapped


def _seed_from(info: dict[str, Any]) -> int | None:
    rng = info.get("rng")
    return int(rng.integers(2**31 - 1)) if rng is not None else None
