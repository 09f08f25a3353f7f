"""Table queries as polars frames: eager, or lazy scans with columns, filters and row
limits pushed to the service. The ``polars`` extra is imported only when used."""

from ._scan import explain_scans

__all__ = ["explain_scans"]
