"""Conversation envs: the agent talks with a simulated participant (an `interactions.Interaction`)."""
