"""Frozen snapshots of engine state, and text views that read like Kafka's own tools."""
