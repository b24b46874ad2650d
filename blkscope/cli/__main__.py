"""`python -m blkscope.cli`."""

from blkscope.cli import main

main()
