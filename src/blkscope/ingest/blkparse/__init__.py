"""blkparse default-format text: the streaming reader over the compiled scanner, the reference
line parser, blkparse's trailing statistics; together they turn text into `events` batches."""
