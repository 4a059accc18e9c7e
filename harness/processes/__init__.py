"""The harness's own processes: a function run in a forked process and its result taken back
(forked.py), SIGTERM taken as Ctrl-C while a block runs (interrupts.py), output that outlives a
closed reader (pipes.py)."""
