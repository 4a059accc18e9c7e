"""Tests of broker/, the own Kafka-protocol broker: its codec, storage, server and controller, and
the broker as a process spoken to by raw requests and real clients."""
