"""Clients: acks=all producers, consumers, final reads."""
