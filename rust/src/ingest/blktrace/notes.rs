//! Notes: records that are not IO events. blktrace writes a process-name note per pid (so
//! blkparse can print names) and a timestamp note pairing the trace clock with the wall clock.

use std::collections::HashMap;

use super::record::{Record, RecordKind};

/// A timestamp note: the wall clock at trace time `time` on one device and CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallNote {
    pub dev_major: i32,
    pub dev_minor: i32,
    pub cpu: u32,
    /// The note's own time on the trace clock.
    pub time: u64,
    pub wall_ns: u64,
}

/// What the notes of a trace said.
#[derive(Default, Debug)]
pub struct Notes {
    /// Process names by pid, as the note's bytes up to the first NUL; a later note (in file
    /// order) replaces an earlier one, as blkparse's table does.
    pub comms: HashMap<u32, Vec<u8>>,
    pub wall_notes: Vec<WallNote>,
    /// Notes other than messages.
    pub count: u64,
}

impl Notes {
    /// Take what a note record says (messages are events, not notes, here).
    pub fn read(&mut self, record: &Record<'_>) {
        let kind = record.trace.kind();
        if !matches!(
            kind,
            RecordKind::ProcessName | RecordKind::Timestamp | RecordKind::OtherNote
        ) {
            return;
        }
        self.count += 1;
        let payload = record.payload_after_cgroup();
        match kind {
            RecordKind::ProcessName => {
                self.comms
                    .insert(record.trace.pid, up_to_nul(payload).to_vec());
            }
            RecordKind::Timestamp if payload.len() >= 8 => {
                let sec = u32::from_le_bytes(payload[..4].try_into().unwrap());
                let nsec = u32::from_le_bytes(payload[4..8].try_into().unwrap());
                self.wall_notes.push(WallNote {
                    dev_major: record.trace.dev_major(),
                    dev_minor: record.trace.dev_minor(),
                    cpu: record.trace.cpu,
                    time: record.trace.time,
                    wall_ns: u64::from(sec) * 1_000_000_000 + u64::from(nsec),
                });
            }
            _ => {}
        }
    }
}

/// A C string in a fixed-size field: the bytes before the first NUL.
pub fn up_to_nul(bytes: &[u8]) -> &[u8] {
    match memchr::memchr(0, bytes) {
        Some(end) => &bytes[..end],
        None => bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::tests::record_bytes;
    use super::super::record::{category, record_offsets, records};
    use super::*;

    const NOTE: u32 = category::NOTIFY << 16;

    #[test]
    fn process_names_and_wall_clock() {
        let mut stamp = 5u32.to_le_bytes().to_vec();
        stamp.extend(7u32.to_le_bytes());
        let mut data = record_bytes(NOTE, 10, 42, b"fio\0\0\0\0\0");
        data.extend(record_bytes(NOTE | 1, 11, 0, &stamp));
        data.extend(record_bytes(NOTE | 9, 12, 0, b""));
        data.extend(record_bytes(NOTE | 2, 13, 0, b"a message"));
        let offsets = record_offsets(&data).unwrap();
        let mut notes = Notes::default();
        for r in records(&data, &offsets) {
            notes.read(&r);
        }
        assert_eq!(notes.comms[&42], b"fio");
        assert_eq!(notes.wall_notes[0].wall_ns, 5_000_000_007);
        assert_eq!(notes.wall_notes[0].time, 11);
        assert_eq!(notes.count, 3, "the message is not counted");
    }

    #[test]
    fn a_cgroup_id_comes_before_the_name() {
        let mut payload = vec![1u8; 8];
        payload.extend(b"kworker\0");
        let data = record_bytes(NOTE | (1 << 8), 10, 7, &payload);
        let offsets = record_offsets(&data).unwrap();
        let mut notes = Notes::default();
        notes.read(&records(&data, &offsets).next().unwrap());
        assert_eq!(notes.comms[&7], b"kworker");
        assert_eq!(up_to_nul(b"abc"), b"abc");
    }
}
