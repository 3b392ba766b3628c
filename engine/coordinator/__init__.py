"""The transaction coordinator, one module per mechanism (the map is in ``txn_coordinator.py``)."""
