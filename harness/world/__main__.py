"""`python -m harness.world [--port N] [--scenarios DIR]`: the world on its own (also what the harness starts)."""

from harness.world.server import main

if __name__ == "__main__":
    main()
