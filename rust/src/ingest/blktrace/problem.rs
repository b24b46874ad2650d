//! What can be wrong with blktrace files, said the way the Python side reports it
//! (`file: what is wrong`, then a hint chosen by the problem's kind).

/// A problem with one per-CPU file; record numbers count from 0 here, from 1 in messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The first record's magic is byte-swapped.
    BigEndian,
    BadMagic {
        record: usize,
        offset: usize,
        magic: u32,
    },
    BadVersion {
        record: usize,
        version: u32,
    },
    /// The last record is cut short.
    Truncated {
        record: usize,
        offset: usize,
        present: usize,
    },
    /// A field of a damaged record does not fit its column (it would wrap into a wrong number).
    OutOfRange {
        record: usize,
        offset: usize,
        field: &'static str,
        value: u64,
        largest: u64,
    },
}

impl Problem {
    /// The kind the Python side picks its hint by.
    pub fn kind(&self) -> &'static str {
        match self {
            Problem::BigEndian => "big-endian",
            Problem::BadMagic { .. } => "bad-magic",
            Problem::BadVersion { .. } => "bad-version",
            Problem::Truncated { .. } => "truncated",
            Problem::OutOfRange { .. } => "out-of-range",
        }
    }

    /// What is wrong, in words.
    pub fn message(&self) -> String {
        match *self {
            Problem::BigEndian => {
                "big-endian blktrace file: only little-endian (x86, arm64) traces are supported"
                    .to_string()
            }
            Problem::BadMagic {
                record,
                offset,
                magic,
            } => {
                let what = if record == 0 {
                    "not a blktrace file"
                } else {
                    "corrupted blktrace file"
                };
                format!(
                    "{what}: bad magic 0x{magic:08x} in record {} at byte offset {offset} \
                     (expected 0x65617407)",
                    record + 1
                )
            }
            Problem::BadVersion { record, version } => format!(
                "unsupported blktrace version {version} in record {} (only version 7 is supported)",
                record + 1
            ),
            Problem::Truncated {
                record,
                offset,
                present,
            } => format!(
                "truncated blktrace file: record {} at byte offset {offset} is cut short \
                 ({present} of its bytes present)",
                record + 1
            ),
            Problem::OutOfRange {
                record,
                offset,
                field,
                value,
                largest,
            } => format!(
                "record {} at byte offset {offset}: {field} {value} is out of range (largest {})",
                record + 1,
                thousands(largest)
            ),
        }
    }
}

/// 9223372036854775807 -> "9,223,372,036,854,775,807", as Python's `{:,}` prints it.
fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() * 4 / 3);
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_which_record() {
        let bad = Problem::BadMagic {
            record: 0,
            offset: 0,
            magic: 0x1234,
        };
        assert_eq!(
            bad.message(),
            "not a blktrace file: bad magic 0x00001234 in record 1 at byte offset 0 \
             (expected 0x65617407)"
        );
        let range = Problem::OutOfRange {
            record: 2,
            offset: 96,
            field: "cpu",
            value: 4294967295,
            largest: i32::MAX as u64,
        };
        assert_eq!(
            range.message(),
            "record 3 at byte offset 96: cpu 4294967295 is out of range (largest 2,147,483,647)"
        );
        assert_eq!(range.kind(), "out-of-range");
    }

    #[test]
    fn thousands_groups_by_three() {
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(i64::MAX as u64), "9,223,372,036,854,775,807");
    }
}
