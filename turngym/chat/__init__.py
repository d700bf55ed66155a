"""turngym chat: the ground floor every other package stands on.

What a conversation is (`Message` and its constructors), the contract of whatever writes the
model's side of one (`Engine`, `chat_kwargs`), how tool calls are written in the model's text
(`turngym.chat.calls`: the formats and their markers) and how a conversation becomes token ids with special
tokens only from the template (`turngym.chat.encoder.ChatEncoder`, its render bounded by
`turngym.chat.render_deadline`), and how a whole episode is rendered into token segments with the template's
own stop and end-of-turn ids (`turngym.chat.format.ChatFormat`). It imports no other turngym package but `turngym.common` (the registry behind the
call formats, the thread deadline behind the render), so every package above can use it.
`import turngym.chat` loads the messages and the engine contract only; the rest loads when imported.

>>> from turngym.chat import Message, user
>>> user("hi")
{'role': 'user', 'content': 'hi'}
"""

from turngym.chat.engine import Engine, chat_kwargs
from turngym.chat.message import Message, assistant, system, tool_result, user

__all__ = ["Engine", "Message", "assistant", "chat_kwargs", "system", "tool_result", "user"]
