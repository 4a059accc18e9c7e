"""Tests of checkers/: each anomaly checker on hand-made histories, the linearizability search
(checkers/linear), and the verdicts of the seeds' worked examples (examples/)."""
