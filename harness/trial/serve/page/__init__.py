"""The chat page stopbench ships for the browser path: a chat and a Stop button that aborts the fetch."""

from pathlib import Path

PAGE = Path(__file__).parent / "chat.html"
