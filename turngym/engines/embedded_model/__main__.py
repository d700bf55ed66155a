"""`python -m engines.embedded_model [template]`: build the embedded model and print its directory."""

from engines.embedded_model import main

main()
