"""stopbench's framework-neutral core. It never imports an agent framework."""

__version__ = "0.1.0"

#: the import names of the harness and of the adapters: `harness` and `adapters` in the repository,
#: `stopbench.harness` and `stopbench.adapters` in a built wheel (setup.py moves them there)
PACKAGE = __name__
ADAPTERS = __name__[: -len("harness")] + "adapters"
