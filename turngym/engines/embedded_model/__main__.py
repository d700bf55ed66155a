"""`python -m turngym.engines.embedded_model [template]`: build the embedded model and print its directory."""

from turngym.engines.embedded_model import main

main()
