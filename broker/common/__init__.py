"""What the broker process and the controller process share: neither imports the other, both import this.

- controller_protocol.py: the controller <-> broker wire protocol and the snapshot dataclasses
- modes.py: the names of the truncation and flush modes (the one spelling of each list)
- config.py: ConfigError and HOST:PORT parsing for the command lines
- topics.py: Kafka's topic-name rules and topic-config checks
- logging_setup.py: the process log (stderr and an optional file)
- durable_file.py: small files replaced atomically and fsynced

Rules: modules here import nothing of `broker.server` or `broker.controller`
(nor of the rest of fencepost); `broker.storage` may import them.
"""
