"""Record block, writeback and memory-pressure traces on a production host into a capture folder."""
