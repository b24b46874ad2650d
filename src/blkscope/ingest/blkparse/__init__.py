"""blkparse default-format text: the numba scanner, the reference line parser, blkparse's
trailing statistics, and the streaming reader that turns text into `events` batches."""
