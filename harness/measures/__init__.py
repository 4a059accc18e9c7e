"""What a run's history measures, for the check (liveness) and the report alike: the nemesis's
faults as time bands (bands.py) and each consumer's realtime lag (lag.py). Below both: it reads
the history through harness/rundir/ and imports nothing else of the harness."""
