"""`python -m blkscope`: the same command line as the `blkscope` script."""

from blkscope.cli import main

main()
