"""Registrations of the envs that ship with turngym (entry points are strings: nothing loads until `make`)."""

from __future__ import annotations

from envs.registry.registration import register

register(
    "guess-number-v0",
    "envs.games.guess_number:GuessNumberEnv",
    category="text-game",
    description="Find a hidden number from higher/lower feedback.",
    max_turns=20,
)

register(
    "wordle-v0",
    "envs.games.wordle:WordleEnv",
    category="text-game",
    description="Find a hidden 5-letter word from per-letter feedback.",
    max_turns=12,
)

register(
    "math-tutor-v0",
    "envs.conversations.math_tutor:MathTutorEnv",
    category="conversation",
    description="Solve a generated arithmetic or word problem; hints after wrong answers, reward decays per attempt.",
    max_turns=12,
)

register(
    "maze-v0",
    "envs.games.maze:MazeEnv",
    category="text-game",
    description="Walk through a grid maze drawn as text to the goal.",
    max_turns=50,
)

register(
    "shop-assistant-v0",
    "envs.conversations.shop_assistant:ShopAssistantEnv",
    category="conversation",
    description="Ask a customer what they want, search a bundled catalogue with tools, order a matching product.",
    max_turns=16,
)

register(
    "tic-tac-toe-v0",
    "envs.games.tic_tac_toe:TicTacToeEnv",
    category="text-game",
    description="Three in a row against a built-in opponent (random, heuristic or perfect).",
    max_turns=10,
)

register(
    "code-sandbox-v0",
    "envs.code.code_sandbox:CodeSandboxEnv",
    category="code",
    description="Solve a programming problem: test code with `python`, submit against hidden tests in a sandbox.",
    max_turns=12,
)

register(
    "calculator-qa-v0",
    "envs.tool_use.calculator_qa:CalculatorQAEnv",
    category="tool-use",
    description="Exact answers to big-number arithmetic and word problems, with the `calculator` tool.",
    max_turns=8,
)

register(
    "search-qa-v0",
    "envs.tool_use.search_qa:SearchQAEnv",
    category="tool-use",
    description="Answer questions from a bundled fact corpus with `search`; hard ones combine facts with `calculator`.",
    max_turns=10,
)

register(
    "sokoban-v0",
    "envs.games.sokoban:SokobanEnv",
    category="text-game",
    description="Push every box onto a target in a warehouse drawn as text (RAGEN's Sokoban; solvable levels).",
    max_turns=50,
)

register(
    "frozen-lake-v0",
    "envs.games.frozen_lake:FrozenLakeEnv",
    category="text-game",
    description="Cross a frozen lake to the goal without falling through a hole; hard ice slips (RAGEN's FrozenLake).",
    max_turns=120,
)

register(
    "repo-fix-v0",
    "envs.repo_fix.repo_fix_env:RepoFixEnv",
    category="code",
    description="Fix a failing test in a generated multi-file Python repository with shell/read/edit; hidden tests grade.",
    max_turns=20,
)

# TextArena's one- and two-player games (`textarena/<TextArena id>`), from a static table: TextArena itself
# is imported on the first make.
from envs.textarena.register_games import register_textarena_games  # noqa: E402

register_textarena_games()
