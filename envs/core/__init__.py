"""What every env is made of: the base env `TextEnv`, the env contract it keeps, its actions and results.

- `text_env`: `TextEnv`, one reset path and one step path, the episode's bookkeeping and its end;
- `protocol`: `EnvProtocol`, the members the rollout, the registry and the env server may call;
- `assistant_turn`: one turn's action read into text and tool calls; `step_result`: what a turn returns;
- `spaces`, `errors`, `reset_options`, `transcript`, `episode_end`: the spaces, the errors, the reset
  options an env declares, the conversation so far, the answer to a step after the end;
- `seeding`, `lazy_seeding`, `splitmix`: Gymnasium's seeding, built on first draw, and a cheap generator.

Nothing is imported here: `import envs` loads what it needs.
"""
