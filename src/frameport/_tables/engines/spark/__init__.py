"""The Spark source named ``frameport`` (`frameport.spark`): checked options (`_options`),
the data source (`_source`), its batch reader (`_reader`), Spark's pushed filters as the DSL
(`_filters`) and Spark's types for ``to_arrow``'s (`_types`). Importing this package imports
pyspark (the ``spark`` extra).
"""

from ._options import SourceOptions, source_options
from ._source import PUSHDOWN_SETTING, FilteringDataSource, FrameportDataSource

__all__ = [
    "PUSHDOWN_SETTING",
    "FilteringDataSource",
    "FrameportDataSource",
    "SourceOptions",
    "source_options",
]
