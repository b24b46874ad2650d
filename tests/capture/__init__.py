"""Tests of `blkscope capture`: the block sources, the files it writes, tracefs restored
(the live ones need root)."""
