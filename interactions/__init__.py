"""turngym interactions: simulated users and feedback givers that drive conversation envs.

user = interactions.make("answer-feedback", max_attempts=3)
opening = user.start({"question": "2 + 2?", "answer": 4})
reply, reward, done, metrics = user.respond(conversation)
"""

from interactions.interaction import Interaction, InteractionOutcome, InteractionReply
from interactions.loading import InteractionConfigError, load_interactions
from interactions.registry import (
    InteractionSpec,
    UnknownInteractionError,
    list_interactions,
    make,
    register,
    spec,
)

__all__ = [
    "Interaction",
    "InteractionConfigError",
    "InteractionOutcome",
    "InteractionReply",
    "InteractionSpec",
    "ModelParticipant",
    "UnknownInteractionError",
    "list_interactions",
    "load_interactions",
    "make",
    "register",
    "spec",
]


def __getattr__(name: str):
    # Resolved on use: the participant loads the chat-template machinery, which `import interactions`
    # (and so `import envs`) does not need.
    if name == "ModelParticipant":
        from interactions.model_participant import ModelParticipant

        return ModelParticipant
    raise AttributeError(f"module 'interactions' has no attribute {name!r}")
