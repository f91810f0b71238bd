"""`python -m stopbench`: the `stopbench` command."""

from stopbench.cli import main

raise SystemExit(main())
