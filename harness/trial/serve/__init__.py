"""The serving dimension: the adapter's run hosted by a real server process, stopped by a client the way UIs stop it."""
