"""Tests of the entry points: the commands (exit codes, messages, output formats, progress)
and the library API (blkscope.open)."""
