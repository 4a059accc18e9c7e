"""The controller of the own brokers (`python -m fencepost.broker controller`): registrations, sessions,
elections, ISRs.

- broker/common/controller_protocol.py (not here): the controller <-> broker wire protocol and snapshot
  dataclasses; broker.common also holds the rest the brokers share (logging, config errors, topic rules,
  atomic files, mode names). This package imports nothing of the server package.
- state.py: the pure state machine; election.py: its per-partition rules
- store.py: the durable state file and the data directory lock
- requests.py: request fields checked and applied; server.py: connections, pushes, session expiry
- changes.py: what changed between two snapshots, for the log
- config.py, main.py: the command line and the process
"""
