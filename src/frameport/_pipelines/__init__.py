"""Pipelines: exports that resume and prove they are complete, and tables kept in sync."""
