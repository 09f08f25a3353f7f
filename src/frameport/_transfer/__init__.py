"""Chunked uploads and downloads."""
