"""Fuzzing, crash safety and soundness: malformed run files, frames, flags and specs; harnesses and
runs killed at random moments; planted anomalies found and valid runs left valid; the synthetic
run generator and planters (tests/support/synth/) themselves."""
