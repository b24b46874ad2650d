"""blkscope: offline analysis of Linux block-layer traces."""

__version__ = "0.1.0"
