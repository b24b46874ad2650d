"""Tests of which files own the traced sectors: file maps made by capture or by hand."""
