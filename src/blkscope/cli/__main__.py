"""`python -m blkscope.cli`."""

from blkscope.cli import run

# guarded: `fleet add`'s worker processes are spawned, and a spawned child imports the main
# module again (as __mp_main__): unguarded, each worker would run the command line itself
if __name__ == "__main__":
    run()
