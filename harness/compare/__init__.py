"""`fencepost compare`: runs and campaigns side by side, per system, protocol version
(truncation) and fault (collect.py: finding the runs and their verdicts, checked.py: a run
checked in memory; table.py: the aggregate per configuration; order.py: the order of rows;
significance.py: Fisher's exact test between rows; formats.py: text, JSON, markdown and
CSV; plot.py: invalid-run rates with their intervals). Nothing is written into the runs read."""
