"""Clients: acks=all producers, consumers, final reads (docs/WORKLOADS.md).

- `ProducerWorkload(bootstrap, recorder, partitions, processes, ProducerOptions(...), seed=)`
  (producer.py) — one process per send in flight; ok/fail/info by outcomes.py
- `ConsumerWorkload(bootstrap, recorder, partitions, processes, ConsumerOptions(...))`
  (consumer.py) — assign or subscribe; every poll and position change recorded
- `final_read_lines(...)` (final_read.py)
- `ClientRecorder`, `Done`, `WorkloadConfigError` (recording.py); messages.py turns a
  consumed message into a record

Workloads get their recorder from the harness and never import it (docs/README.md, Layout);
`harness/run/scheduler.py` drives them.
"""
