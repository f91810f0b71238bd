"""Contract tests every adapter must pass: `stopbench test-adapter NAME`
(or `pytest -p harness.testing.plugin --pyargs harness.testing --adapter NAME`)."""
