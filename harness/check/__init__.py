"""`fencepost check`: a run directory loaded into the checkers' input (loading.py, with the C
reader when it was built: native_load.py; consumer groups: loading_groups.py), every partition
checked in this process or in workers (checking.py), the verdict decided (verdict.py),
results.json and the printed summary made (summary.py), with the liveness section (liveness.py);
the time to first detection that compare and analyze share (detection.py)."""
