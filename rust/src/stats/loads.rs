//! The findings' normal loads (analyze/evidence.py `NormalLoads`) start from each issuer's IO
//! per second of the trace: per device, process name, op, RWBS flags, whether the bio has a
//! sector, pid and bin (second) of its Q, the completed bios' bytes x time in flight, time in
//! flight, bytes and count. Summed here as the pass hands the bios over (`Issuers`), so that
//! the findings read a row per issuer and second instead of grouping every bio of a device.

use super::hash::FastMap;

/// What an issuer's rows are grouped by. The strings are the `Names` ids of `Issuers`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IssuerKey {
    pub major: i32,
    pub minor: i32,
    /// None: the bio has no process name.
    pub comm: Option<u32>,
    pub op: u32,
    pub flags: u32,
    pub has_sector: bool,
    pub pid: i64,
    pub bin: i64,
}

/// An issuer's completed bios in one second: sum((c - q) x bytes), sum(c - q), sum(bytes),
/// count (exact: i128 as the SQL's HUGEINT sums).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IssuerSums {
    pub byte_ns: i128,
    pub io_ns: i128,
    pub bytes: i128,
    pub ios: i64,
}

/// One completed bio as the normal loads count it.
#[derive(Clone, Copy, Debug)]
pub struct LoadBio {
    pub q_time_ns: i64,
    pub c_time_ns: i64,
    /// None: null (counts as 0 bytes).
    pub nsectors: Option<i64>,
}

/// The sums per issuer and bin of its Qs (`bin_ns` long: evidence.py's NORMAL_BIN_NS).
pub struct Issuers {
    bin_ns: i64,
    pub sums: FastMap<IssuerKey, IssuerSums>,
}

impl Issuers {
    pub fn new(bin_ns: i64) -> Result<Issuers, String> {
        if bin_ns <= 0 {
            return Err(format!("bins must be positive, got {bin_ns} ns"));
        }
        Ok(Issuers {
            bin_ns,
            sums: FastMap::default(),
        })
    }

    /// The bin of a Q at t: `q_time_ns // bin_ns`, which truncates toward zero as DuckDB's
    /// `//` does.
    pub fn bin_of(&self, t: i64) -> i64 {
        t / self.bin_ns
    }

    /// Count one completed bio of `key` (whose bin is its Q's second); Err where the SQL's
    /// BIGINT subtraction c - q would fail.
    pub fn add(&mut self, key: IssuerKey, bio: LoadBio) -> Result<(), String> {
        let in_flight = bio.c_time_ns.checked_sub(bio.q_time_ns).ok_or_else(|| {
            format!(
                "a bio's time in flight from {} ns to {} ns overflows",
                bio.q_time_ns, bio.c_time_ns
            )
        })?;
        let bytes = i128::from(bio.nsectors.unwrap_or(0)) * 512;
        let sums = self.sums.entry(key).or_default();
        sums.byte_ns += i128::from(in_flight) * bytes;
        sums.io_ns += i128::from(in_flight);
        sums.bytes += bytes;
        sums.ios += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(pid: i64, bin: i64) -> IssuerKey {
        IssuerKey {
            major: 8,
            minor: 0,
            comm: Some(0),
            op: 1,
            flags: 0,
            has_sector: true,
            pid,
            bin,
        }
    }

    #[test]
    fn a_bin_is_truncated_toward_zero() {
        let issuers = Issuers::new(1_000_000_000).unwrap();
        assert_eq!(issuers.bin_of(1_999_999_999), 1);
        assert_eq!(issuers.bin_of(-1_500_000_000), -1);
        assert_eq!(issuers.bin_of(0), 0);
        assert!(Issuers::new(0).is_err());
    }

    #[test]
    fn bios_sum_per_issuer_and_second() {
        let mut issuers = Issuers::new(1_000_000_000).unwrap();
        let bio = |q, c, n| LoadBio {
            q_time_ns: q,
            c_time_ns: c,
            nsectors: n,
        };
        issuers.add(key(7, 0), bio(100, 1_100, Some(8))).unwrap();
        issuers.add(key(7, 0), bio(200, 400, None)).unwrap();
        issuers.add(key(9, 0), bio(300, 400, Some(1))).unwrap();
        let expected = IssuerSums {
            byte_ns: 1_000 * 8 * 512,
            io_ns: 1_000 + 200,
            bytes: 8 * 512,
            ios: 2,
        };
        assert_eq!(issuers.sums[&key(7, 0)], expected);
        assert_eq!(issuers.sums[&key(9, 0)].byte_ns, 100 * 512);
        assert_eq!(issuers.sums.len(), 2);
    }

    #[test]
    fn a_time_in_flight_past_bigint_is_an_error() {
        let mut issuers = Issuers::new(1_000_000_000).unwrap();
        let far = LoadBio {
            q_time_ns: -2,
            c_time_ns: i64::MAX,
            nsectors: Some(8),
        };
        assert!(issuers.add(key(1, 0), far).is_err());
    }
}
