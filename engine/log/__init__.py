"""The partition log and its side state: record batches, producer state, the transaction index."""
