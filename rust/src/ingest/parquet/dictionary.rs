//! A column chunk's dictionary of strings: each distinct value once (the dictionary page, in
//! the order first seen) and each row's index into it. The events' strings are mostly a few
//! letters (action, RWBS, op), so a string of up to 7 bytes is its own 64-bit key in a small
//! open-addressed table; longer ones (process names) go through a hash map.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const SHORT: usize = 7;
const EMPTY: u64 = u64::MAX;

/// A string of at most SHORT bytes as one number: its bytes, and its length in the top byte
/// (so "a" and "a\0" differ, and no key is EMPTY).
/// Built a byte at a time: a copy into a word through memory costs a call and a stalled load.
#[inline]
fn short_key(v: &[u8]) -> u64 {
    let word = v
        .iter()
        .enumerate()
        .fold(0u64, |word, (k, &b)| word | u64::from(b) << (8 * k));
    word | ((v.len() as u64) << 56)
}

/// A fast hash for process names (FxHash's step): std's SipHash would cost more than the rest
/// of the lookup.
#[derive(Default)]
struct NameHasher(u64);

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        for piece in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..piece.len()].copy_from_slice(piece);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl NameHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// The dictionary of one column chunk being built.
pub struct Dictionary<'a> {
    /// (key, index) slots of the short strings; EMPTY where free.
    slots: Vec<(u64, u32)>,
    short_entries: usize,
    long: HashMap<&'a [u8], u32, BuildHasherDefault<NameHasher>>,
    /// The dictionary page so far: PLAIN byte arrays (a 4-byte length, then the bytes).
    pub page: Vec<u8>,
    pub entries: usize,
}

impl<'a> Dictionary<'a> {
    /// An empty dictionary writing its page into `page` (cleared; its memory reused).
    pub fn new(mut page: Vec<u8>) -> Dictionary<'a> {
        page.clear();
        Dictionary {
            slots: vec![(EMPTY, 0); 256],
            short_entries: 0,
            long: HashMap::default(),
            page,
            entries: 0,
        }
    }

    fn add_entry(&mut self, v: &[u8]) -> u32 {
        self.page.extend_from_slice(&(v.len() as u32).to_le_bytes());
        self.page.extend_from_slice(v);
        self.entries += 1;
        self.entries as u32 - 1
    }

    fn slot_of(&self, key: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut at = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & mask;
        while self.slots[at].0 != key && self.slots[at].0 != EMPTY {
            at = (at + 1) & mask;
        }
        at
    }

    /// Double the table when it is half full, so probes stay short.
    fn grow(&mut self) {
        let doubled = vec![(EMPTY, 0); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        for (key, index) in old.into_iter().filter(|s| s.0 != EMPTY) {
            let at = self.slot_of(key);
            self.slots[at] = (key, index);
        }
    }

    /// The index of `v`, added if new.
    #[inline]
    pub fn index(&mut self, v: &'a [u8]) -> u32 {
        if v.len() <= SHORT {
            let key = short_key(v);
            let at = self.slot_of(key);
            if self.slots[at].0 == key {
                return self.slots[at].1;
            }
            let index = self.add_entry(v);
            self.slots[at] = (key, index);
            self.short_entries += 1;
            if self.short_entries * 2 > self.slots.len() {
                self.grow();
            }
            return index;
        }
        if let Some(&index) = self.long.get(v) {
            return index;
        }
        let index = self.add_entry(v);
        self.long.insert(v, index);
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_distinct_value_once_in_first_seen_order() {
        let mut d = Dictionary::new(Vec::new());
        let values: [&[u8]; 6] = [b"Q", b"kworker/u4:2", b"Q", b"", b"Q\0", b"kworker/u4:2"];
        let codes: Vec<u32> = values.iter().map(|v| d.index(v)).collect();
        assert_eq!(codes, vec![0, 1, 0, 2, 3, 1]);
        assert_eq!(d.entries, 4);
        assert_eq!(&d.page[..5], &[1, 0, 0, 0, b'Q']);
    }

    #[test]
    fn the_table_grows_past_half_full() {
        let mut d = Dictionary::new(Vec::new());
        let names: Vec<String> = (0..1000).map(|k| format!("p{k}")).collect();
        for (k, name) in names.iter().enumerate() {
            assert_eq!(d.index(name.as_bytes()), k as u32);
        }
        for (k, name) in names.iter().enumerate() {
            assert_eq!(d.index(name.as_bytes()), k as u32);
        }
        assert_eq!(d.entries, 1000);
    }
}
