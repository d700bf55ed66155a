"""turngym chat: the ground floor every other package stands on.

What a conversation is (`Message` and its constructors) and the contract of whatever writes the
model's side of one (`Engine`, `chat_kwargs`). Standard library only; it imports no other turngym
package, so envs, tools, interactions, rollout and trainer can all use it.

>>> from chat import Message, user
>>> user("hi")
{'role': 'user', 'content': 'hi'}
"""

from chat.engine import Engine, chat_kwargs
from chat.message import Message, assistant, system, tool_result, user

__all__ = ["Engine", "Message", "assistant", "chat_kwargs", "system", "tool_result", "user"]
