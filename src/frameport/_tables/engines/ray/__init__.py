"""Ray Data datasets of table queries and tables (`frameport.ray`): a datasource with one read
task per planned range (`_source`) and a datasink writing each block through the load's write
path (`_sink`). Importing this package imports Ray (the ``ray`` extra).
"""

from ._sink import TableDatasink, WriteReports
from ._source import BYTES_PER_PARTITION, TableDatasource

__all__ = ["BYTES_PER_PARTITION", "TableDatasink", "TableDatasource", "WriteReports"]
