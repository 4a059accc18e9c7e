"""`fencepost compare`: runs and campaigns side by side, per system, protocol version
(truncation) and fault (collect.py: finding the runs and their verdicts; table.py: the
aggregate per configuration; plot.py: invalid-run rates with their intervals)."""
