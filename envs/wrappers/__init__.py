"""Wrappers for TextEnv. Every one calls its `on_reset`/`on_step` hooks on every reset and step.

`EpisodeLimits` is the layer `envs.make` applies (a turn limit and a charge for unreadable replies);
`MaxTurns` and `ActionFormat` are it with one of the two settings; `RewardShaping` rescales rewards.
"""

from envs.wrappers.action_format import ActionFormat
from envs.wrappers.episode_limits import EpisodeLimits
from envs.wrappers.max_turns import MaxTurns
from envs.wrappers.reward_shaping import RewardShaping
from envs.wrappers.text_wrapper import TextWrapper

__all__ = ["ActionFormat", "EpisodeLimits", "MaxTurns", "RewardShaping", "TextWrapper"]
