"""The transaction coordinator: ``__transaction_state``, its state machine, markers, timeouts."""
