"""`python -m blkscope`: the same command line as the `blkscope` script."""

from blkscope.cli import run

# guarded for `fleet add`'s spawned workers (see blkscope/cli/__main__.py)
if __name__ == "__main__":
    run()
