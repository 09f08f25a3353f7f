"""The Spark tests, sharing one local Spark session (`conftest.py`)."""
