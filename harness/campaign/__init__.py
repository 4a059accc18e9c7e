"""Campaigns (docs/CAMPAIGNS.md): a matrix of runs, run one after another on fresh clusters
(plan.py: the file and its runs; conductor.py: running, resuming, the outcome of each run;
junit.py: the JUnit XML a CI reads)."""
