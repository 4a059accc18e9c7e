"""The run: test spec, phases, history recorder, results store, report and CLI."""
