//! Plain Avro binary's primitives (longs, strings, bytes, doubles, block counts, branch indexes),
//! read strictly: anything doubtful (a negative block count, a varint beyond 64 bits, invalid UTF-8,
//! an index out of range) returns `None`. The JSON view (`json_view.rs`) and the Avro decoder
//! (`avro_decode.rs`) read with it.

use std::str;

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
}
