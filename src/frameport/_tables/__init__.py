"""Table reads and writes."""
