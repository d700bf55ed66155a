"""turngym's additions to verl's trainer loop, each a mixin of `TurngymTrainer` (trainer/task_runner.py).

Health, the curriculum, the adaptive mixture, step dumps, failed-episode counts, a line per phase, and the
inputs verl's advantage call cannot pass the estimators.
"""
