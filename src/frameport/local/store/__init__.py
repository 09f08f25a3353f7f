"""The SQL store: the SQLite file, metadata tables, row tables, queries compiled to SQL."""
