"""The row format's versions: one migration function per change, applied in order (asv's `update_to_N`).

A row carries the version it was written in (`schema_version`). Reading a row of an older version runs every
migration from its version to `SCHEMA_VERSION`, so the rest of stopbench only ever sees rows of the current
format; `stopbench publish` stores rows migrated, so the published dataset is never decoded again. A row of a
newer version than this stopbench knows is refused (`NewerVersion`), never guessed at.

Changing the row format: bump `SCHEMA_VERSION` in harness/results/schema.py and add the function that turns a
row of the previous version into one of the new version to `MIGRATIONS` (a test migrates the oldest published
kind through all of them). Adding a field is a change too: its migration (`fields_added`) gives an older row the
value the schema declares for rows written before the field existed, so a published row always has every field
of its version (the declaration stays the one place that says what that value is).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from harness.results import schema
from harness.results.schema import SCHEMA_VERSION
from harness.tools.mcp_launch import DEFAULT_LAUNCH

Row = dict[str, Any]

#: the step a reason names, as version 1 rows say it (harness/results/metrics.py `status` wrote them):
#: `'stop' overran 5s`, `... during 'stop'`, `'settle_resume': the run was not quiet`, `stop: ...`
STEP_IN_REASON = re.compile(r"^'(\w+)' overran|during '(\w+)'|^'(\w+)': |\('(\w+)'[;)]|^(\w+): ")


def facts_out_of_text(row: Row) -> Row:
    """1 -> 2: `failed_step` and `mcp_launch` become fields. A row written before them carried both in text (the
    step named in `reason`; `tool_style` `mcp+<launch>`, which leaves the tool style `mcp`); a version 1 row that
    already has the fields keeps them."""
    if "failed_step" not in row:
        reason = row.get("reason")
        m = STEP_IN_REASON.search(reason) if isinstance(reason, str) else None
        row["failed_step"] = next((s for s in m.groups() if s), None) if m else None
    if "mcp_launch" not in row:
        style, _, launch = str(row.get("tool_style", "")).partition("+")
        if "tool_style" in row:
            row["tool_style"] = style
        row["mcp_launch"] = launch or DEFAULT_LAUNCH
    return row


def fields_added(*names: str) -> Callable[[Row], Row]:
    """N -> N + 1 where N + 1 added the fields `names`: a row without one gets the value schema.py declares for rows
    written before it existed (a row that has it, written by a stopbench that had the field, keeps its value)."""
    def add(row: Row) -> Row:
        for name in names:
            if name not in row:
                row[name] = schema.field(name).default(row)
        return row

    add.__name__ = add.__qualname__ = "fields_added_" + "_".join(names)
    add.__doc__ = f"Adds {', '.join(names)} (their values for rows written before they existed)."
    return add


#: the fields version 3 added (version 1 rows written after one existed keep its value)
ADDED_IN_3 = ("metrics_digest", "stop_delivery_ms", "billing_profile", "tokens_unread_after_stop",
              "effects_in_flight_client_gone", "provider", "serve_path", "client_stop", "served_stop_seen_ms",
              "served_run_ended", "served_run_ended_ms", "exit_status", "survivors_5s", "survivors_30s",
              "survivors_30s_rss_bytes", "survivors_30s_cpu_s", "usage_reported_tokens", "usage_unreported_tokens",
              "model_rule", "model_retries")

#: version N -> the function that makes a version N row a version N + 1 row
MIGRATIONS: dict[int, Callable[[Row], Row]] = {
    1: facts_out_of_text,
    # the metric code's digest (stopbench rederive), the stop's delivery to an adapter process, what a provider
    # bills after a disconnect, the in-flight effects whose client had gone, the model provider; the served stop
    # (its path, the client's stop, the server's reaction), an orchestrator's exit status and its census, the
    # framework's own usage beside the world's bill, the model's rule and the calls it asked again
    2: fields_added(*ADDED_IN_3),
}
OLDEST = min(MIGRATIONS)


class NewerVersion(ValueError):
    """Rows of a format version this stopbench does not know (written by a newer one)."""


class UnknownVersion(ValueError):
    """A version no stopbench wrote (not an int, or older than the oldest)."""


def check_version(version: Any, where: str) -> int:
    """`version` if this stopbench reads rows of it; else the error that names `where` and the version."""
    if not isinstance(version, int) or isinstance(version, bool) or version < OLDEST:
        raise UnknownVersion(f"{where}: schema_version {version!r} is not a row format version "
                             f"({OLDEST}..{SCHEMA_VERSION})")
    if version > SCHEMA_VERSION:
        raise NewerVersion(f"{where}: schema_version {version}; this stopbench reads rows up to version "
                           f"{SCHEMA_VERSION} (upgrade stopbench to read them)")
    return version


def migrate(row: Row) -> Row:
    """`row` (of any known version) as a row of the current version, in place."""
    version = row["schema_version"]
    while version < SCHEMA_VERSION:
        row = MIGRATIONS[version](row)
        version += 1
        row["schema_version"] = version
    return row
