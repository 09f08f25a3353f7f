"""frameport: the service's tables and buckets as DataFrames, Arrow tables and Parquet files."""

__version__ = "0.1.0"

__all__ = ["__version__"]
