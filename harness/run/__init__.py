"""`fencepost run`: the test spec, the results store, the phases of a run, live progress."""
