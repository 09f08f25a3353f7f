"""Table queries as polars frames: eager, or lazy scans with columns, filters and row
limits pushed to the service (`_scan`), the polars predicate split into what the service
does and what polars does (`_predicate`). The ``polars`` extra is imported only when used."""

from ._scan import explain_scans, to_polars

__all__ = ["explain_scans", "to_polars"]
