"""Tests of harness/: the CLI, run specs and run directories, reading and checking runs, reports,
trace, compare, campaigns, the results index, serve and analyze."""
