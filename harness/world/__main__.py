"""`python -m harness.world [--port N] [--scenarios DIR]`: the world on its own."""

from harness.cli import main

if __name__ == "__main__":
    import sys

    main(["world", *sys.argv[1:]])
