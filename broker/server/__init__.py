"""The broker's network server: `python -m fencepost.broker serve` (see kafka_server.KafkaServer for the assembly).

One concept per module, named after Kafka's broker code:
- `network`: asyncio socket server, 4-byte framing, in-order responses per connection.
- `codec`: request header/body decoding and response encoding (kafka-python's generated classes).
- `kafka_apis`: dispatch of a frame to its API handler; errors become error responses or closed connections.
- `apis/`: one module per API family (produce, fetch, metadata, offsets, groups, topics, ...).
- `replica_manager`, `partition`: hosted partitions, leader epochs, ISR, high watermark, appends, reads.
- `metadata_cache`: topics, partitions, leaders as this broker knows them.
- `local_controller`: single-node stand-in for the controller (topic creation, epochs, topics.json).
- `group_coordinator`, `offset_store`: classic consumer groups and their committed offsets.
- `producer_id_manager`: producer ids for idempotent producers.
- `config`, `errors`, `record_batches`, `log_backend`: support.
The storage layer (`broker.storage`) owns the on-disk logs; what the broker shares with the
controller (their protocol, logging, config errors, topic rules, atomic files, mode names) is in
`broker.common`. This package imports nothing of the controller package.
"""
