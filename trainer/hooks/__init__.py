"""turngym's additions to verl's trainer loop: health, curriculum, mixture, step dumps, failures, phase lines."""
