"""The controller of the own brokers (`python -m broker controller`): registrations, sessions, elections, ISRs.

- the controller <-> broker wire protocol and snapshot dataclasses: broker/common/controller_protocol.py
  (shared with the brokers)
- state.py: the pure state machine; election.py: its per-partition rules
- store.py: the durable state file and the data directory lock
- requests.py: request fields checked and applied; server.py: connections, pushes, session expiry
- changes.py: what changed between two snapshots, for the log
- config.py, main.py: the command line and the process
"""
