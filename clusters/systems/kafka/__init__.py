"""Stock Apache Kafka as a system under test (docs/README.md, Layout): the jars (dist.py), the
options and what they mean for Kafka's configuration (options.py, config.py), a small
synchronous Kafka-protocol client for control-plane questions (wire.py), and the
`System` itself (system.py).
"""
