"""Results: the row schema, metrics from a ledger, raw rows on disk, report, claims, compare."""
