"""Parquet exports of a table read: streamed (`export_streamed`), or resumable in ``$sequence``
segments kept beside the target (`export_resumable`), each returning the report and checks of
what was written (`ExportReport`); `column_encodings` says how their system columns are
encoded."""

from ._parquet import column_encodings
from ._report import ExportChecks, ExportReport
from ._resumable import export_resumable
from ._streamed import export_streamed

__all__ = [
    "ExportChecks",
    "ExportReport",
    "column_encodings",
    "export_resumable",
    "export_streamed",
]
