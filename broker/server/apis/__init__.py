"""The Kafka APIs the broker answers, one module per API family, each a subclass of `ApiHandler`."""
