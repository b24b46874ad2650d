"""The rows of `bios` and `requests` counted by the streaming pass as it writes them
(rust/src/pass/tally.rs), per device, op letter, RWBS, whether a sector is known and (requests)
kind. The `bio_counts` and `request_counts` tables (sql/_bio_counts_build.sql,
sql/_request_counts_build.sql) class them with op_class; the per-device summary and io_ratios
read those few rows instead of scanning bios and requests again."""

from __future__ import annotations

# the tables of the analysis connection the counts are left in
BIO_ROW_COUNTS = "internal._bio_row_counts"
REQUEST_ROW_COUNTS = "internal._request_row_counts"
