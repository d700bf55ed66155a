"""The layer that gives an env its tools: `EnvTools` (the tools, their per-episode copies and the per-turn
limits), one tool turn run under those limits (`tool_turn`), the tools given with `tools=`
(`extra_tools`) and the checks of the limits (`turn_limits`). It reaches the env only through
`own_tools()` and `after_tool_call`.
"""
