//! The order blkparse prints the events of all CPUs in.

/// A printed record: where it is, and what blkparse orders it by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrintedRecord {
    pub time: u64,
    pub cpu: u32,
    pub sequence: u32,
    pub is_message: bool,
    pub file: u32,
    pub index: u32,
}

/// Sort records (given in file order, then record order) by time, then CPU, then sequence;
/// except that on a time tie blkparse keeps printing from the CPU of the event it printed
/// last, since its merge of the per-CPU streams only switches CPU on a strictly earlier time.
/// Messages do not count as that last event: blkparse 1.2 drops bfq's, and the fio-sched
/// capture's order agrees only this way.
pub fn blkparse_order(rows: &mut [PrintedRecord]) {
    rows.sort_by_key(|r| (r.time, r.cpu, r.sequence));
    let mut done = 0;
    for k in 0..rows.len().saturating_sub(1) {
        let tie = rows[k + 1].time == rows[k].time && rows[k + 1].cpu != rows[k].cpu;
        if !tie || k < done {
            continue;
        }
        let time = rows[k].time;
        let start = rows[..k]
            .iter()
            .rposition(|r| r.time != time)
            .map_or(0, |p| p + 1);
        let end = rows[k..]
            .iter()
            .position(|r| r.time != time)
            .map_or(rows.len(), |p| k + p);
        done = end;
        let Some(last) = rows[..start].iter().rev().find(|r| !r.is_message) else {
            continue;
        };
        let last_cpu = last.cpu;
        rows[start..end].sort_by_key(|r| (r.cpu != last_cpu, r.cpu, r.sequence));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(time: u64, cpu: u32, sequence: u32, is_message: bool) -> PrintedRecord {
        PrintedRecord {
            time,
            cpu,
            sequence,
            is_message,
            file: cpu,
            index: sequence,
        }
    }

    fn order(rows: &[PrintedRecord]) -> Vec<(u64, u32)> {
        let mut rows = rows.to_vec();
        blkparse_order(&mut rows);
        rows.iter().map(|r| (r.time, r.cpu)).collect()
    }

    #[test]
    fn by_time_then_cpu() {
        let rows = [
            rec(2, 0, 1, false),
            rec(1, 1, 1, false),
            rec(1, 0, 2, false),
        ];
        // the tie at time 1 has no event before it: plain CPU order
        assert_eq!(order(&rows), vec![(1, 0), (1, 1), (2, 0)]);
    }

    #[test]
    fn a_tie_stays_on_the_last_cpu() {
        let rows = [
            rec(1, 1, 1, false),
            rec(2, 0, 2, false),
            rec(2, 1, 2, false),
        ];
        assert_eq!(order(&rows), vec![(1, 1), (2, 1), (2, 0)]);
    }

    #[test]
    fn messages_do_not_move_the_last_cpu() {
        let rows = [
            rec(1, 1, 1, false),
            rec(1, 0, 1, true),
            rec(2, 0, 2, false),
            rec(2, 1, 2, false),
        ];
        // the tie at 1: nothing before it. The tie at 2: the last event that is not a
        // message is CPU 1's at time 1 (time 1's tie sorted CPU 0's message before it).
        assert_eq!(order(&rows), vec![(1, 0), (1, 1), (2, 1), (2, 0)]);
    }

    #[test]
    fn equal_keys_keep_file_order() {
        let mut rows = [rec(1, 0, 1, false), rec(1, 0, 1, false)];
        rows[0].index = 9;
        rows[1].index = 3;
        blkparse_order(&mut rows);
        assert_eq!((rows[0].index, rows[1].index), (9, 3));
    }
}
