"""How turngym's session protocol lines up with OpenEnv's (openenv-core 0.3.0), as data for `GET /schema`.

OpenEnv serves one env type per server: `/reset` and `/step` over plain HTTP build a fresh env per
request (no episode survives between them), and episodes with state run over the WebSocket `/ws`. turngym
serves every registered env with HTTP sessions instead; the bodies keep OpenEnv's shapes (`observation`,
`reward`, `done`; `State` with `episode_id` and `step_count`). See docs/envs.md, "Envs as services".
"""

from __future__ import annotations

_MESSAGE = {
    "type": "object",
    "properties": {
        "role": {"type": "string"},
        "content": {"type": "string"},
        "tool_calls": {"type": "array", "items": {"type": "object"}},
        "tool_call_id": {"type": "string"},
        "name": {"type": "string"},
    },
    "required": ["role", "content"],
}

# An action message may say it was parsed already: `call_errors` (why calls could not be read) marks a
# turn the env uses as it is (see envs.core.assistant_turn for its bounds).
_ACTION_MESSAGE = {
    **_MESSAGE,
    "properties": {
        **_MESSAGE["properties"],
        "call_errors": {"type": "array", "items": {"type": "string"}},
    },
}

#: OpenEnv's `SchemaResponse` for every turngym env: the action, observation and state JSON schemas.
SCHEMAS = {
    "action": {
        "title": "TurngymAction",
        "description": (
            "The assistant's reply: its text, or a parsed assistant message with OpenAI tool_calls "
            "(and call_errors when the sender parsed the text itself)."
        ),
        "type": "object",
        "properties": {"action": {"anyOf": [{"type": "string"}, _ACTION_MESSAGE]}},
        "required": ["action"],
    },
    "observation": {
        "title": "TurngymObservation",
        "description": "Chat messages to append to the conversation (the opening ones after reset).",
        "type": "object",
        "properties": {"messages": {"type": "array", "items": _MESSAGE}},
        "required": ["messages"],
    },
    "state": {
        "title": "State",
        "type": "object",
        "properties": {
            "episode_id": {"type": ["string", "null"]},
            "step_count": {"type": "integer", "minimum": 0},
            "env_id": {"type": "string"},
            "turn": {"type": ["integer", "null"]},
            "episode_over": {"type": ["boolean", "null"]},
        },
    },
}
