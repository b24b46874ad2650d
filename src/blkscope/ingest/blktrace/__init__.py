"""blktrace binaries (the per-CPU `struct blk_io_trace` files): find their records and turn them
into `events` rows exactly as blkparse would print them (the compiled decoder does)."""
