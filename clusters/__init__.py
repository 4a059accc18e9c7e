"""Where and what runs: hosts (netns, process, docker, ssh) and systems (own brokers, stock Kafka)."""
