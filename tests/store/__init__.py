"""Tests of the dataset on disk: atomic commits, one writer at a time, faults mid-write, the
Dataset handle."""
