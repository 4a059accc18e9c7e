"""Pure checkers: the ops and final records of one partition in, anomalies out.

Nothing here reads files or imports the rest of fencepost; the harness CLI and
the Spark pipeline call the same functions (docs/CAMPAIGNS.md).
"""
