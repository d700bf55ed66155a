"""turngym common: the small helpers several layers share and none owns, on the ground floor.

- `turngym.common.registration`: `Registry` (register / make / spec / list by name) and `load_entry_point`;
  envs, interactions, built-in tools and tool-call formats are all registries of this kind.
- `turngym.common.run_sync`: a coroutine awaited from sync code, inside or outside a running event loop.
- `turngym.common.cli_errors`: every command line's way of reporting a user's mistake (one line, exit 2).
- `turngym.common.thread_deadline`: a call on this thread stopped once it runs past its time (tool runs,
  chat-template renders).
- `turngym.common.number_bounds`: `Bound`, what a number from outside may be (command-line keys, env keywords,
  sampling parameters), refused in one line otherwise.

Why "common" and not a name for what it holds: they have no concept in common but their users.
A registry, an event-loop bridge, a CLI convention and a watchdog would need four names, and four
one-module packages would add more to the root than they explain. What they share is their place:
standard library only, no turngym import, so every package (chat and serving included) may stand on
them. Anything with a concept of its own (chat, serving, tools) gets its own package instead.

Nothing is imported here: `import turngym.common.registration` loads that module alone, which keeps
`import envs` light.
"""
