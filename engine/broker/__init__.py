"""Brokers, the replicas they host, replication, and the controller."""
