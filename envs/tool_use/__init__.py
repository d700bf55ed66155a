"""Tool-use envs: questions that need the registry's tools (calculator, search) to answer."""
