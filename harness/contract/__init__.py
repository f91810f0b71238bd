"""The contract between the harness and an adapter, and the kit that keeps an adapter to its framework's docs."""
