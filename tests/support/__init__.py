"""Helpers the tests share, and no tests: brokers, controllers and clusters as processes, builders
of batches and run directories, the synthetic run generator (synth/), the programs tests start
(crash harnesses, the lazyfs probe), and where things are (paths.py)."""
