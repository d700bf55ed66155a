"""Wrappers for TextEnv, each doing one thing (EpisodeLimits: the two that `envs.make` applies, in one layer)."""

from envs.wrappers.action_format import ActionFormat
from envs.wrappers.episode_limits import EpisodeLimits
from envs.wrappers.max_turns import MaxTurns
from envs.wrappers.reward_shaping import RewardShaping
from envs.wrappers.text_wrapper import TextWrapper

__all__ = ["ActionFormat", "EpisodeLimits", "MaxTurns", "RewardShaping", "TextWrapper"]
