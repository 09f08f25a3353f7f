"""Rows: who may read and write a row, how a row is written, update operators."""
