"""Parquet exports of a table read: streamed (`export_streamed`), or resumable in ``$sequence``
segments kept beside the target (`export_resumable`), each returning the report and checks of
what was written (`ExportReport`)."""

from ._report import ExportChecks, ExportReport
from ._resumable import export_resumable
from ._streamed import export_streamed

__all__ = ["ExportChecks", "ExportReport", "export_resumable", "export_streamed"]
