-- Buckets of values: log2 buckets (latency_hist, io_dist) and the finer value buckets of exact
-- percentiles (exact_quantiles, _stage_buckets). Integer operations only: exact for every BIGINT,
-- where a double log2 needs a correction near powers of two from 2^49 on.

-- x with its bits shifted right by k or-ed in.
CREATE MACRO or_shifted(
    x,  -- a BIGINT
    k   -- the shift
) RETURNS BIGINT AS
x | (x >> k);

-- The number of bits of a BIGINT x >= 0: floor(log2(x)) + 1, 0 for 0. Every bit below the
-- highest set one is set (six shifts), then the bits are counted.
CREATE MACRO bit_width(
    x  -- a BIGINT >= 0
) RETURNS INTEGER AS
bit_count(or_shifted(or_shifted(or_shifted(or_shifted(or_shifted(or_shifted(x, 1), 2), 4), 8), 16), 32))::INTEGER;

-- The exact floor(log2(x)) of a BIGINT x >= 1.
CREATE MACRO log2_floor(
    x  -- a BIGINT >= 1
) RETURNS INTEGER AS
bit_width(x) - 1;

-- The log2 bucket of v: b with 2^b <= v < 2^(b+1), -1 for v <= 0.
CREATE MACRO log2_bucket(
    v  -- a BIGINT
) RETURNS INTEGER AS
CASE WHEN v <= 0 THEN -1 ELSE log2_floor(v) END;

-- The value bucket of a value x >= 0: x below 256, else shift * 512 + its top 8 bits, the
-- shift (bit_width(x) - 8) being the one that keeps them: buckets 1/128 to 1/256 of the value
-- wide.
CREATE MACRO magnitude_bucket(
    x  -- a BIGINT >= 0
) RETURNS BIGINT AS
bit_width(x >> 8)::BIGINT * 512 + (x >> bit_width(x >> 8));

-- The value bucket of any BIGINT v, ordered as the values are: negative values are mirrored
-- below 0 as -(v + 1) (the most negative BIGINT has no opposite). Without a CASE: v >> 63 is -1
-- for them (0 otherwise), and xor with -1 is ~x = -(x + 1); a CASE writing magnitude_bucket out
-- in both branches is several times slower, and _bio_stages buckets every latency.
CREATE MACRO value_bucket(
    v  -- a BIGINT
) RETURNS BIGINT AS
xor(magnitude_bucket(xor(v, v >> 63)), v >> 63);

-- The log2 bucket (log2_bucket) of the values in value bucket b.
CREATE MACRO value_bucket_log2(
    b  -- a value_bucket()
) RETURNS INTEGER AS
CASE WHEN b <= 0 THEN -1 WHEN b < 512 THEN log2_floor(b) ELSE (b // 512 + 7)::INTEGER END;
