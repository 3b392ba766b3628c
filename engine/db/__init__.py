"""Service databases: SQLite files driven at simulated instants by nodes of the world (:mod:`engine.db.database`)."""

from engine.db.database import Database, DatabaseFolder, connect_read_only, databases_of, read_only

__all__ = ["Database", "DatabaseFolder", "connect_read_only", "databases_of", "read_only"]
