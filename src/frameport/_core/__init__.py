"""The request layer."""
