"""The strings that mark a tool call in each format: in a model's text and in the chat template.

The call-format registry (`turngym.chat.calls.formats`) hands these out with each format
(`get_format(name).markers`); the parsers read their tags from here. Nothing else in turngym writes
a marker by hand: it asks the registry.

>>> HERMES.in_text('<tool_call>\\n{"name": "f", "arguments": {}}\\n</tool_call>'), HERMES.in_text("42")
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CallMarkers:
    """Where a format's calls are: what opens one, what closes it, and what its chat templates hold.

    Attributes:
        opens: A call starts with one of these; a text holding none of them holds no call.
        close: What ends a call block ("" when the format has no closing tag).
        template: A chat template that writes this format holds one of these (to guess the format).
    """

    opens: tuple[str, ...]
    close: str = ""
    template: tuple[str, ...] = ()

    def in_text(self, text: str) -> bool:
        """Whether `text` holds one of the opening markers (it may hold calls; parse it to know).

        Args:
            text: What the model wrote.

        Returns:
            False when `text` certainly holds no call in this format.

        >>> MISTRAL.in_text('[TOOL_CALLS] [{"name": "f", "arguments": {}}]')
        True
        """
        return any(marker in text for marker in self.opens)

    def in_template(self, chat_template: str) -> bool:
        """Whether `chat_template` (its source text) writes calls in this format.

        Args:
            chat_template: A tokenizer's chat template.

        Returns:
            True when the template holds one of this format's template markers.

        >>> LLAMA3.in_template("{%- if message.role == 'ipython' %}")
        True
        """
        return any(marker in chat_template for marker in self.template)


#: Hermes / Qwen (ChatML): `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`.
HERMES = CallMarkers(opens=("<tool_call>",), close="</tool_call>", template=("<tool_call>",))
#: Llama 3.x: `<|python_tag|>{...}`, or a reply that is only the JSON object (hence "{").
LLAMA3 = CallMarkers(opens=("<|python_tag|>", "{"), template=("<|python_tag|>", "ipython"))
#: Mistral: `[TOOL_CALLS] [{...}]` (and v11's `[TOOL_CALLS]name[ARGS]{...}`).
MISTRAL = CallMarkers(opens=("[TOOL_CALLS]",), template=("[TOOL_CALLS]",))
