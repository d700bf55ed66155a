"""turngym's shared layer: the ground floor the five user-facing packages (envs, tools, interactions,
rollout, trainer) stand on, under a name no user file takes.

- `turngym.chat`: messages, the engine contract, chat formats and tool-call parsers.
- `turngym.engines`: the engines that sample tokens, named models and the embedded tiny model.
- `turngym.serving`: the HTTP serving layer every turngym server shares.
- `turngym.common`: small helpers several layers share (registries, run_sync, CLI errors, deadlines).

They live here, not at the top level, so that a user's own `common.py` (or `chat.py`, `serving.py`,
`engines.py`) in the working folder does not shadow them. Nothing is imported here: `import turngym`
loads no torch, verl or subpackage.
"""
