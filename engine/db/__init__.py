"""Service databases: SQLite files driven at simulated instants by nodes of the world (:mod:`engine.db.database`)."""

from engine.db.database import Database, DatabaseFolder, databases_of

__all__ = ["Database", "DatabaseFolder", "databases_of"]
