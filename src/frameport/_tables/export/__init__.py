"""Parquet exports of a table read: streamed, or resumable in ``$sequence`` segments, with
the report and checks of what was written."""
