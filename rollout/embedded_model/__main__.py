"""`python -m rollout.embedded_model [template]`: moved to `python -m turngym.engines.embedded_model`; still runs."""

import warnings

from turngym.engines.embedded_model import main

# Run as a command, the warning names this module (__main__), so Python shows it by default.
warnings.warn(
    "python -m rollout.embedded_model moved to python -m turngym.engines.embedded_model",
    DeprecationWarning,
    stacklevel=1,
)
main()
