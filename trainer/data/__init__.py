"""Dataset rows: built from env seeds or the user's files, and a step's batch read back."""
