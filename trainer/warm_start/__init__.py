"""Warm start: supervised fine-tuning on the envs' scripted experts before RL."""
