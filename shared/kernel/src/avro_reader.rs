//! Plain Avro binary (no container, no framing) decoded with a schema compiled once.
//!
//! `Reader`'s primitives (longs, strings, bytes, doubles, block counts, branch indexes) also
//! serve lanes that walk a fixed schema by hand (`oms_avro.rs`). `Ty` has only the constructs a
//! DRS flat record uses: null, boolean, int, long, double,
//! string, bytes, arrays, maps and unions of them. The schema arrives from
//! Python (`services/drs_avro/plan.py`) as a compact notation: `N` null, `Z`
//! boolean, `I` int, `L` long, `D` double, `S` string, `B` bytes, `[T` array,
//! `{T` map, `(T,T...)` union. Anything doubtful in the bytes (a negative block
//! count, a varint beyond 64 bits, a boolean byte other than 0/1, invalid UTF-8,
//! a union index out of range) returns `None`: the message goes to Python.

use std::str;

#[derive(Debug)]
pub enum Ty {
    Null,
    Boolean,
    Int,
    Long,
    Double,
    Str,
    Bytes,
    Array(Box<Ty>),
    Map(Box<Ty>),
    Union(Vec<Ty>),
}

impl Ty {
    /// The type of a notation, or None for anything malformed.
    pub fn compile(notation: &str) -> Option<Ty> {
        let mut at = 0;
        let ty = Ty::read(notation.as_bytes(), &mut at)?;
        (at == notation.len()).then_some(ty)
    }

    fn read(text: &[u8], at: &mut usize) -> Option<Ty> {
        let c = *text.get(*at)?;
        *at += 1;
        Some(match c {
            b'N' => Ty::Null,
            b'Z' => Ty::Boolean,
            b'I' => Ty::Int,
            b'L' => Ty::Long,
            b'D' => Ty::Double,
            b'S' => Ty::Str,
            b'B' => Ty::Bytes,
            b'[' => Ty::Array(Box::new(Ty::read(text, at)?)),
            b'{' => Ty::Map(Box::new(Ty::read(text, at)?)),
            b'(' => {
                let mut branches = vec![Ty::read(text, at)?];
                loop {
                    match *text.get(*at)? {
                        b',' => {
                            *at += 1;
                            branches.push(Ty::read(text, at)?);
                        }
                        b')' => {
                            *at += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
                Ty::Union(branches)
            }
            _ => return None,
        })
    }
}

/// A decoded value (int and long both as `Long`: fastavro gives a Python int for either).
#[derive(Debug)]
pub enum Val<'a> {
    Null,
    Bool(bool),
    Long(i64),
    Double(f64),
    Str(&'a str),
    Bytes(&'a [u8]),
    Array(Vec<Val<'a>>),
    /// The entries in order, and the map's own bytes (a cache key for type maps).
    Map(Vec<(&'a str, Val<'a>)>, &'a [u8]),
}

pub struct Reader<'a> {
    data: &'a [u8],
    pub at: usize,
}

/// Blocks of an array or map beyond this many items in all decline (a corrupt count).
const ITEMS_LIMIT: usize = 1 << 20;

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, at: 0 }
    }

    pub fn done(&self) -> bool {
        self.at == self.data.len()
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let part = self.data.get(self.at..end)?;
        self.at = end;
        Some(part)
    }

    pub fn long(&mut self) -> Option<i64> {
        let mut z: u64 = 0;
        for shift in (0..70).step_by(7) {
            let b = *self.data.get(self.at)?;
            self.at += 1;
            if shift == 63 && b > 1 {
                return None; // beyond 64 bits: Python would read a wider int
            }
            z |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Some(((z >> 1) as i64) ^ -((z & 1) as i64));
            }
        }
        None
    }

    /// An array or map block's item count (0: the end of the blocks).
    pub(crate) fn count(&mut self) -> Option<usize> {
        let n = self.long()?;
        // A negative count (followed by the block's size) is valid Avro, but not written by the
        // usual writers: left to Python.
        usize::try_from(n).ok().filter(|&n| n <= ITEMS_LIMIT)
    }

    /// An Avro bytes value (also a string's encoded text).
    pub(crate) fn raw(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.long()?).ok()?;
        self.take(n)
    }

    /// An Avro string; invalid UTF-8 (a decode error in fastavro) returns None.
    pub(crate) fn str(&mut self) -> Option<&'a str> {
        str::from_utf8(self.raw()?).ok()
    }

    /// The next `n` bytes (an Avro fixed's, a float's), or None past the end.
    pub(crate) fn fixed(&mut self, n: usize) -> Option<&'a [u8]> {
        self.take(n)
    }

    /// One byte (an Avro boolean's).
    pub(crate) fn raw_byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    pub(crate) fn double(&mut self) -> Option<f64> {
        Some(f64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A union branch or enum symbol index below `n`. A negative index is None: fastavro would
    /// pick an item from the end of its list (Python indexing) rather than fail.
    pub(crate) fn index(&mut self, n: usize) -> Option<usize> {
        usize::try_from(self.long()?).ok().filter(|&i| i < n)
    }

    pub fn value(&mut self, ty: &Ty) -> Option<Val<'a>> {
        Some(match ty {
            Ty::Null => Val::Null,
            Ty::Boolean => match self.take(1)?[0] {
                0 => Val::Bool(false),
                1 => Val::Bool(true),
                _ => return None,
            },
            Ty::Int | Ty::Long => Val::Long(self.long()?),
            Ty::Double => Val::Double(self.double()?),
            Ty::Str => Val::Str(self.str()?),
            Ty::Bytes => Val::Bytes(self.raw()?),
            Ty::Array(item) => {
                let mut items = Vec::new();
                loop {
                    let n = self.count()?;
                    if n == 0 {
                        break;
                    }
                    if items.len() + n > ITEMS_LIMIT {
                        return None;
                    }
                    for _ in 0..n {
                        items.push(self.value(item)?);
                    }
                }
                Val::Array(items)
            }
            Ty::Map(values) => {
                let start = self.at;
                let mut entries = Vec::new();
                loop {
                    let n = self.count()?;
                    if n == 0 {
                        break;
                    }
                    if entries.len() + n > ITEMS_LIMIT {
                        return None;
                    }
                    for _ in 0..n {
                        let key = self.str()?;
                        entries.push((key, self.value(values)?));
                    }
                }
                Val::Map(entries, &self.data[start..self.at])
            }
            Ty::Union(branches) => {
                let index = self.index(branches.len())?;
                self.value(&branches[index])?
            }
        })
    }
}
