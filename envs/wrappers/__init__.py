"""Wrappers for TextEnv, each doing one thing."""

from envs.wrappers.action_format import ActionFormat
from envs.wrappers.max_turns import MaxTurns
from envs.wrappers.reward_shaping import RewardShaping
from envs.wrappers.text_wrapper import TextWrapper

__all__ = ["ActionFormat", "MaxTurns", "RewardShaping", "TextWrapper"]
