"""stopbench's framework-neutral core. It never imports an agent framework."""

__version__ = "0.1.0"
