"""The text games: guess-number, wordle, maze, tic-tac-toe."""
