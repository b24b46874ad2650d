"""Tests of ingest: every input format into the dataset's tables, capture folders, the
clock model."""
