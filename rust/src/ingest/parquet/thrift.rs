//! Thrift's compact protocol, the few parts a Parquet footer and page headers use: structs of
//! numbered fields, i32/i64 (zigzag varints), binary, bool, lists.

/// The compact protocol's type codes of a field or list element.
#[derive(Clone, Copy)]
#[repr(u8)]
pub enum Kind {
    True = 1,
    False = 2,
    Byte = 3,
    I16 = 4,
    I32 = 5,
    I64 = 6,
    Binary = 8,
    List = 9,
    Struct = 12,
}

/// Bytes of one thrift message being written: fields are numbered relative to the previous
/// field of the same struct, so the id of each open struct's last field is kept.
pub struct Compact {
    pub out: Vec<u8>,
    last_id: Vec<i16>,
}

impl Compact {
    /// A message whose top struct is open (a footer or a page header has no field header).
    pub fn new() -> Compact {
        Compact {
            out: Vec::with_capacity(256),
            last_id: vec![0],
        }
    }

    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    fn zigzag(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    fn field(&mut self, id: i16, kind: Kind) {
        let last = self.last_id.last_mut().expect("a struct is open");
        let delta = id - *last;
        *last = id;
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | kind as u8);
        } else {
            self.out.push(kind as u8);
            self.zigzag(i64::from(id));
        }
    }

    pub fn field_i16(&mut self, id: i16, v: i16) {
        self.field(id, Kind::I16);
        self.zigzag(i64::from(v));
    }

    pub fn i32(&mut self, id: i16, v: i32) {
        self.field(id, Kind::I32);
        self.zigzag(i64::from(v));
    }

    pub fn i64(&mut self, id: i16, v: i64) {
        self.field(id, Kind::I64);
        self.zigzag(v);
    }

    pub fn i8(&mut self, id: i16, v: i8) {
        self.field(id, Kind::Byte);
        self.out.push(v as u8);
    }

    pub fn binary(&mut self, id: i16, v: &[u8]) {
        self.field(id, Kind::Binary);
        self.elem_binary(v);
    }

    pub fn bool(&mut self, id: i16, v: bool) {
        self.field(id, if v { Kind::True } else { Kind::False });
    }

    /// Open a struct field; `end` closes it.
    pub fn begin(&mut self, id: i16) {
        self.field(id, Kind::Struct);
        self.last_id.push(0);
    }

    /// Close the innermost open struct (a field's, a list element's, or the message's).
    pub fn end(&mut self) {
        self.out.push(0);
        self.last_id.pop();
    }

    /// A list field of `len` elements of `kind`; the elements follow (elem_*, begin_elem).
    pub fn list(&mut self, id: i16, kind: Kind, len: usize) {
        self.field(id, Kind::List);
        if len < 15 {
            self.out.push(((len as u8) << 4) | kind as u8);
        } else {
            self.out.push(0xF0 | kind as u8);
            self.varint(len as u64);
        }
    }

    pub fn elem_i32(&mut self, v: i32) {
        self.zigzag(i64::from(v));
    }

    pub fn elem_binary(&mut self, v: &[u8]) {
        self.varint(v.len() as u64);
        self.out.extend_from_slice(v);
    }

    /// Open a struct that is a list element; `end` closes it.
    pub fn begin_elem(&mut self) {
        self.last_id.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_numbered_by_their_step_from_the_last() {
        let mut t = Compact::new();
        t.i32(1, -1);
        t.i64(3, 300);
        t.binary(20, b"ab");
        t.bool(21, true);
        t.end();
        assert_eq!(
            t.out,
            vec![0x15, 0x01, 0x26, 0xd8, 0x04, 0x08, 0x28, 0x02, b'a', b'b', 0x11, 0x00]
        );
    }

    #[test]
    fn a_long_list_has_its_length_after_the_header() {
        let mut t = Compact::new();
        t.list(1, Kind::I32, 20);
        assert_eq!(t.out, vec![0x19, 0xf5, 20]);
    }
}
