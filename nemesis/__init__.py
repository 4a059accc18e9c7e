"""Faults and their schedules; every fault has a heal."""
