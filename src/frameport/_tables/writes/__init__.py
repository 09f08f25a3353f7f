"""Writes to tables: creating a table from a frame's dtypes, bulk row writes of a frame
(`_rows`), and a stream of Arrow batches written with a rule for taken IDs (`_batches`)."""

from ._batches import ON_CONFLICT, OnConflict, WriteCounts, check_on_conflict, write_batches

__all__ = ["ON_CONFLICT", "OnConflict", "WriteCounts", "check_on_conflict", "write_batches"]
