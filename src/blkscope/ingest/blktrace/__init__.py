"""blktrace binaries (the per-CPU `struct blk_io_trace` files): read the records, decode their
payloads, and turn them into `events` rows exactly as blkparse would print them."""
