//! Thrift's compact protocol, the few parts a Parquet footer and page headers use: structs of
//! numbered fields, i32/i64 (zigzag varints), binary, bool, lists; written by `Compact`, read
//! by `Reader` (which skips the fields it is not asked for, of any type).

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

/// A thrift message being read: the caller walks each struct's fields (`field` until None),
/// reads those it knows and `skip`s the rest.
pub struct Reader<'a> {
    bytes: &'a [u8],
    pub at: usize,
    last_id: Vec<i16>,
}

/// A message that ends early or holds a type code thrift does not have.
#[derive(Debug)]
pub struct Malformed;

impl<'a> Reader<'a> {
    /// A reader at the start of a message whose top struct is open.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader {
            bytes,
            at: 0,
            last_id: vec![0],
        }
    }

    fn byte(&mut self) -> Result<u8, Malformed> {
        let b = *self.bytes.get(self.at).ok_or(Malformed)?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, Malformed> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(Malformed)
    }

    fn zigzag(&mut self) -> Result<i64, Malformed> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// The next field of the open struct: (id, type code); None at its end (the struct is
    /// closed then).
    pub fn field(&mut self) -> Result<Option<(i16, u8)>, Malformed> {
        let header = self.byte()?;
        if header == 0 {
            self.last_id.pop();
            return Ok(None);
        }
        let delta = header >> 4;
        let id = if delta == 0 {
            i16::try_from(self.zigzag()?).map_err(|_| Malformed)?
        } else {
            self.last_id.last().ok_or(Malformed)? + i16::from(delta)
        };
        *self.last_id.last_mut().ok_or(Malformed)? = id;
        Ok(Some((id, header & 0x0f)))
    }

    pub fn i32(&mut self) -> Result<i32, Malformed> {
        i32::try_from(self.zigzag()?).map_err(|_| Malformed)
    }

    pub fn i64(&mut self) -> Result<i64, Malformed> {
        self.zigzag()
    }

    pub fn binary(&mut self) -> Result<&'a [u8], Malformed> {
        let len = usize::try_from(self.varint()?).map_err(|_| Malformed)?;
        let end = self.at.checked_add(len).ok_or(Malformed)?;
        let v = self.bytes.get(self.at..end).ok_or(Malformed)?;
        self.at = end;
        Ok(v)
    }

    /// A list's header: (element type code, length).
    pub fn list(&mut self) -> Result<(u8, usize), Malformed> {
        let header = self.byte()?;
        let len = if header >> 4 == 15 {
            usize::try_from(self.varint()?).map_err(|_| Malformed)?
        } else {
            usize::from(header >> 4)
        };
        Ok((header & 0x0f, len))
    }

    /// Enter a struct (a field's or a list element's) just announced.
    pub fn begin(&mut self) {
        self.last_id.push(0);
    }

    /// Pass over a value of type code `kind` (a field's, or a list element's).
    pub fn skip(&mut self, kind: u8) -> Result<(), Malformed> {
        match kind {
            1 | 2 => {}
            3 => {
                self.byte()?;
            }
            4..=6 => {
                self.varint()?;
            }
            7 => {
                self.at += 8;
                if self.at > self.bytes.len() {
                    return Err(Malformed);
                }
            }
            8 => {
                self.binary()?;
            }
            9 | 10 => {
                let (element, len) = self.list()?;
                for _ in 0..len {
                    self.skip_element(element)?;
                }
            }
            11 => {
                let len = self.varint()?;
                if len > 0 {
                    let kinds = self.byte()?;
                    for _ in 0..len {
                        self.skip_element(kinds >> 4)?;
                        self.skip_element(kinds & 0x0f)?;
                    }
                }
            }
            12 => {
                self.begin();
                while let Some((_, kind)) = self.field()? {
                    self.skip(kind)?;
                }
            }
            _ => return Err(Malformed),
        }
        Ok(())
    }

    /// A list element: a bool takes a byte there (a field's is in its header).
    fn skip_element(&mut self, kind: u8) -> Result<(), Malformed> {
        if kind == 1 || kind == 2 {
            self.byte()?;
            return Ok(());
        }
        self.skip(kind)
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
    fn a_reader_reads_what_the_writer_wrote_and_skips_the_rest() {
        let mut t = Compact::new();
        t.i32(1, -1);
        t.begin(2);
        t.list(1, Kind::Binary, 2);
        t.elem_binary(b"x");
        t.elem_binary(b"yz");
        t.bool(3, false);
        t.end();
        t.i64(20, 1 << 40);
        t.binary(21, b"ab");
        t.end();
        let mut r = Reader::new(&t.out);
        assert_eq!(r.field().unwrap(), Some((1, Kind::I32 as u8)));
        assert_eq!(r.i32().unwrap(), -1);
        assert_eq!(r.field().unwrap(), Some((2, Kind::Struct as u8)));
        r.skip(Kind::Struct as u8).unwrap();
        assert_eq!(r.field().unwrap(), Some((20, Kind::I64 as u8)));
        assert_eq!(r.i64().unwrap(), 1 << 40);
        assert_eq!(r.field().unwrap(), Some((21, Kind::Binary as u8)));
        assert_eq!(r.binary().unwrap(), b"ab");
        assert_eq!(r.field().unwrap(), None);
        assert_eq!(r.at, t.out.len());
    }

    #[test]
    fn a_long_list_has_its_length_after_the_header() {
        let mut t = Compact::new();
        t.list(1, Kind::I32, 20);
        assert_eq!(t.out, vec![0x19, 0xf5, 20]);
    }
}
