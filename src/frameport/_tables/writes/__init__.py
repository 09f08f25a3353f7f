"""Writes to tables: creating a table from a frame's dtypes, and bulk row writes."""
