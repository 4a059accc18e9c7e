"""fencepost's own Kafka-protocol broker and controller (a server in its own right: imports nothing of fencepost)."""
