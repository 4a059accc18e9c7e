"""Synthetic Kafka runs for tests and benchmarks.

`generate` simulates a topic and writes histories that are valid by
construction; `plant` edits such a run so it holds one chosen anomaly; `run`
holds the data both work on (history lines, final logs, ground truth) and writes
run directories; `edit` has the history-editing helpers the planters share.
"""
