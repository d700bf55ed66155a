"""How each adapted TextArena game reads a move, told to the model in the system prompt.

Every game reads the first bracketed token of the reply; text around it is allowed. The wording follows
each game's own prompt in TextArena 0.7.4.
"""

from __future__ import annotations

GENERIC = "write your move in square brackets as the game's rules describe, e.g. `[4]`."

ACTION_FORMATS: dict[str, str] = {
    "Game2048": "one direction in brackets: `[Up]`, `[Down]`, `[Left]` or `[Right]`.",
    "Bandit": "the colour of the button to press in brackets, e.g. `[red]`.",
    "Blackjack": "`[Hit]` to draw a card or `[Stand]` to hold.",
    "Countdown": "`[i j op]`: combine the numbers at indices i and j with op (+ - * /), e.g. `[0 2 *]`.",
    "Crosswords": "`[row column letter]`, e.g. `[3 4 A]`.",
    "Cryptarithm": "`[letter digit]` to assign a digit to a letter, e.g. `[A 5]`.",
    "FifteenPuzzle": "the direction to slide in brackets: `[up]`, `[down]`, `[left]` or `[right]`.",
    "FrozenLake": "`[up]`, `[down]`, `[left]` or `[right]` (or `[w]`, `[a]`, `[s]`, `[d]`).",
    "GuessTheNumber": "your guess as a number in brackets, e.g. `[5]`.",
    "LightsOut": "`[row col]` of the light to press (0-indexed), e.g. `[2 3]`.",
    "LogicPuzzle": "`[row col X]` or `[row col O]` to mark a grid cell, e.g. `[park Alice X]`.",
    "Mastermind": "your code guess as digits in brackets, e.g. `[2 1 4 5]`.",
    "Minesweeper": "`[row col]` of the cell to reveal, e.g. `[3 2]`.",
    "PegJump": "`[from to]` positions of the jumping peg, e.g. `[4 1]`.",
    "RushHour": "a car letter and `+` (forward) or `-` (backward), e.g. `[A+]`.",
    "Secretary": "`[accept]` to take the current value or `[continue]` to see the next.",
    "Set": "three card indices in brackets forming a Set, e.g. `[0 5 9]`.",
    "Slitherlink": "`[h r c]` or `[v r c]` to toggle a horizontal or vertical edge.",
    "Sokoban": "`[up]`, `[down]`, `[left]` or `[right]` (or `[w]`, `[a]`, `[s]`, `[d]`).",
    "Sudoku": "`[row column number]` (1-indexed), e.g. `[5 3 7]`.",
    "ThreeCardMonte": "the cup holding the ball, e.g. `[1]`.",
    "TowerOfHanoi": "`[source target]` towers, e.g. `[A C]`.",
    "Klondike": "a move as the game's rules list it, e.g. `[draw]`.",
    "Alquerque": "`[from to]` squares, e.g. `[a2 a3]`.",
    "Battleship": "the coordinate to fire at, e.g. `[a4]`.",
    "Breakthrough": "`[from-to]` in UCI-like notation, e.g. `[a2a3]`.",
    "Briscola": "`[play X]` with X the position (1-3) of the card in your hand.",
    "Chopsticks": "`[attack M O]` (your hand, opponent's hand) or `[split L R]`.",
    "ColonelBlotto": "units per field, e.g. `[A4 B2 C2]`.",
    "ConnectFour": "the column to drop into, e.g. `[col 4]`.",
    "Crusade": "`[from to]` knight move, e.g. `[b1 c3]`.",
    "GameOfPureStrategy": "one card from your hand in brackets, e.g. `[Q]` or `[10]`.",
    "GermanWhist": "`[play X]` with X the position of the card in your hand.",
    "Golf": "`[draw]`, `[take]`, `[swap X Y]` or `[discard]` as the game allows.",
    "HighSociety": "one money card to bid, e.g. `[7]`.",
    "IndianPoker": "`[check]`, `[bet X]`, `[call]`, `[raise X]` or `[fold]`.",
    "IteratedMatchingPennies": "`[heads]` or `[tails]`.",
    "IteratedPrisonersDilemma": "free talk in the conversation rounds; then `[Cooperate]` or `[Defect]`.",
    "IteratedRockPaperScissors": "`[rock]`, `[paper]` or `[scissors]`.",
    "IteratedTwoThirdsAverage": "your number in brackets, e.g. `[33]`.",
    "KuhnPoker": "`[check]`, `[bet]`, `[call]` or `[fold]`.",
    "LinesOfAction": "`[from-to]` coordinates, e.g. `[b1b3]`.",
    "MemoryGame": "two cards to flip as `[row1 col1 row2 col2]`, e.g. `[0 1 1 0]`.",
    "Nim": "`[pile quantity]`, e.g. `[0 3]`.",
    "Othello": "`[row, col]`, e.g. `[2, 3]`.",
    "PigDice": "`[roll]` or `[hold]`.",
    "SimpleBlindAuction": "`[Bid on Item X: amount]` in the bidding phase; free talk before.",
    "SimpleNegotiation": "`[Offer: ... -> ...]`, `[Accept]` or `[Deny]`, as the game's rules describe.",
    "SimpleTak": "the cell to place a stone in, e.g. `[12]`.",
    "Snake": "`[up]`, `[down]`, `[left]` or `[right]` (or w/s/a/d).",
    "Stratego": "`[from to]`, e.g. `[A0 B0]`.",
    "Surround": "`[up]`, `[down]`, `[left]` or `[right]` (or w/s/a/d).",
    "Tak": "`[place ...]` or `[move ...]` as the game's rules describe.",
    "TicTacToe": "the cell number 0-8, e.g. `[4]`.",
    "TruthAndDeception": "free talk; at the end the guesser picks a fact, e.g. `[Fact 1]`.",
    "TwoDollar": "`[Propose] $X.XX`, `[Accept]` or `[Reject]`.",
    "UltimateTicTacToe": "`[macro micro]` (two numbers 0-8), e.g. `[7 8]`.",
    "IteratedUltimatumGame": "`[Offer: $X]` as proposer, `[Accept]` or `[Reject]` as responder.",
    "WildTicTacToe": "a mark and a cell, e.g. `[X 4]`.",
    "LiarsDice": "`[Bid: quantity, face]` or `[Call]`.",
    "Poker": "`[Check]`, `[Call]`, `[Fold]`, `[Bet X]` or `[Raise X]`.",
    "Santorini": "`[worker source dest build]`, e.g. `[N1C1C2B2]`.",
    "NewRecruit": "`[Propose] ...`, `[Accept]` or `[Reject]`.",
    "QuantumTicTacToe": "two empty cells for a spooky mark, e.g. `[0,4]`.",
    "SpiteAndMalice": "`[draw]`, `[play card pile]` or `[discard card pile]`.",
}


def action_format(game_name: str) -> str:
    """The action format of TextArena game `game_name` (its module name, e.g. `Sudoku`)."""
    return ACTION_FORMATS.get(game_name, GENERIC)
