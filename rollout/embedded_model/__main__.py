"""`python -m rollout.embedded_model [template]`: build the embedded model and print its directory."""

from rollout.embedded_model import main

main()
