"""Subcommands of the ``eos`` command line, one module each."""
