"""The table engine: one read of a table query, from its plan to Arrow batches."""
