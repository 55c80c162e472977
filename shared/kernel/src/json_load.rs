//! JSON bytes to Python objects with exact numbers: what the standard library's
//! `json.JSONDecoder(parse_float=Decimal).decode(raw.decode())` returns, in one pass over the bytes.
//!
//! Integers become `int` (Python's own `int()` past 18 digits, with its digit limit), fractions and
//! exponents `decimal.Decimal` of their text, a repeated key keeps its first place and last value.
//! Where the document is not JSON, `load` says why in the standard library's words and at its position
//! (a character index), so a reject reads the same whichever decoder met the message first: the rules
//! and positions are those of CPython's `_json.c` in 3.11 and 3.12, on every Python (3.13 words a
//! trailing comma its own way). A `\u` escape of a lone UTF-16 surrogate is read
//! into the `str` as the standard library reads it (no UTF-8 encoder takes it), and `load` says the
//! document holds one: the caller looks for it in what remains (a repeated key may have replaced it).

use std::borrow::Cow;
use std::sync::{Mutex, MutexGuard, TryLockError};

use pyo3::sync::PyOnceLock;

use pyo3::exceptions::PyOverflowError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyList, PyString};

use crate::conversion::py_objects;
use crate::objects::new_str;
use crate::json::plain_run;

/// Nesting the reader refuses past (the caller's own limit, `jsondoc.MAX_DEPTH`, is lower).
const MAX_DEPTH: usize = 4096;

/// Object keys (and the Avro decoder's map keys), made once as Python strings and shared by every
/// document: a vendor's messages repeat the same few hundred keys, and a cached string is neither decoded
/// nor hashed again (its hash is kept in it). A direct-mapped table: a key's hash picks one slot, which
/// holds the last key that hashed there (a miss replaces it). Keys up to `KEY_CACHED_LEN` bytes.
static KEYS: PyOnceLock<Mutex<KeyTable>> = PyOnceLock::new();
pub(crate) type KeyTable = Vec<Option<(Box<str>, Py<PyString>)>>;
const KEY_CACHED_LEN: usize = 64;
const KEY_SLOTS: usize = 1 << 14;

/// A key's slot: 8 bytes at a time, multiplied and folded (keys are short; a bounded table needs no
/// defence against chosen collisions).
fn slot(text: &str) -> usize {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = text.len() as u64;
    let mut chunks = text.as_bytes().chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        h = (h.rotate_left(5) ^ word).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    let rest = chunks.remainder();
    tail[..rest.len()].copy_from_slice(rest);
    h = (h.rotate_left(5) ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    (h >> 40) as usize % KEY_SLOTS
}

/// The key table, held by one reader for a whole document (one lock instead of one per key). None while
/// another reader holds it (a document read inside another's, by a finalizer the reader's allocations
/// ran): that reader makes its keys anew instead of waiting. A reader that panicked left every slot whole
/// (a slot is replaced in one move), so the table stays in use.
pub(crate) fn keys(py: Python<'_>) -> Option<MutexGuard<'static, KeyTable>> {
    match KEYS.get_or_init(py, || Mutex::new((0..KEY_SLOTS).map(|_| None).collect())).try_lock() {
        Ok(table) => Some(table),
        Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// A key as a Python string: the shared one from `table`, else made.
pub(crate) fn key_in<'py>(
    py: Python<'py>,
    table: &mut Option<MutexGuard<'static, KeyTable>>,
    text: &str,
) -> Bound<'py, PyString> {
    let Some(keys) = table else {
        return new_str(py, text);
    };
    if text.len() > KEY_CACHED_LEN {
        return new_str(py, text);
    }
    let entry = &mut keys[slot(text)];
    if let Some((cached, string)) = entry {
        if **cached == *text {
            return string.bind(py).clone();
        }
    }
    let made = new_str(py, text);
    *entry = Some((text.into(), made.clone().unbind()));
    made
}

/// Why a document is not read: a rule at a byte position, or a reason without one.
enum Stop {
    At(&'static str, usize),
    Reason(&'static str),
    /// Boxed: a `Read` travels back through every level of a document, and stays two words wide.
    Py(Box<PyErr>),
}

impl From<PyErr> for Stop {
    fn from(e: PyErr) -> Self {
        Stop::Py(Box::new(e))
    }
}

impl From<PyErr> for Box<Stop> {
    fn from(e: PyErr) -> Self {
        Box::new(Stop::Py(Box::new(e)))
    }
}

/// A value read, or why not. The reason is boxed: a `Read` comes back from every level of a document,
/// and at two words it travels in registers.
type Read<'py> = Result<Bound<'py, PyAny>, Box<Stop>>;

const UNTERMINATED: &str = "Unterminated string starting at";
const CONTROL: &str = "Invalid control character at";
const BAD_U_ESCAPE: &str = "Invalid \\uXXXX escape";
const EXPECTING_VALUE: &str = "Expecting value";

/// A string's text: UTF-8, or WTF-8 holding a lone surrogate escape (`"\\ud800"`), which Python's
/// `str` holds and Rust's does not.
enum Text<'a> {
    Plain(Cow<'a, str>),
    Surrogates(Vec<u8>),
}

impl Text<'_> {
    fn into_py(self, py: Python<'_>) -> PyResult<Bound<'_, PyString>> {
        match self {
            Text::Plain(text) => Ok(new_str(py, &text)),
            Text::Surrogates(bytes) => {
                let len = isize::try_from(bytes.len()).map_err(|_| PyOverflowError::new_err("a string beyond isize"))?;
                // SAFETY: a valid pointer and length; the call returns a new reference or NULL with an error set.
                unsafe {
                    let made = ffi::PyUnicode_DecodeUTF8(bytes.as_ptr().cast(), len, c"surrogatepass".as_ptr());
                    Ok(Bound::from_owned_ptr_or_err(py, made)?.cast_into_unchecked())
                }
            }
        }
    }
}

struct Loader<'a, 'py> {
    py: Python<'py>,
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    lone_surrogate: bool,
    /// The shared object keys, held while the document is read.
    keys: Option<MutexGuard<'static, KeyTable>>,
}

fn is_ws(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\n' || c == b'\r'
}

fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &d| Some((acc << 4) | (d as char).to_digit(16)?))
}

impl<'a, 'py> Loader<'a, 'py> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(is_ws) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Read<'py> {
        let i = self.pos;
        let rest = &self.b[i.min(self.b.len())..];
        let py = self.py;
        match rest.first() {
            Some(b'"') => {
                self.pos += 1;
                let text = self.string(i)?;
                Ok(text.into_py(py)?.into_any())
            }
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'n') if rest.starts_with(b"null") => self.literal(4, py.None().into_bound(py)),
            Some(b't') if rest.starts_with(b"true") => self.literal(4, PyBool::new(py, true).to_owned().into_any()),
            Some(b'f') if rest.starts_with(b"false") => self.literal(5, PyBool::new(py, false).to_owned().into_any()),
            Some(b'N') if rest.starts_with(b"NaN") => Err(Box::new(Stop::Reason("NaN is not valid JSON"))),
            Some(b'I') if rest.starts_with(b"Infinity") => Err(Box::new(Stop::Reason("Infinity is not valid JSON"))),
            Some(b'-') if rest.starts_with(b"-Infinity") => Err(Box::new(Stop::Reason("-Infinity is not valid JSON"))),
            _ => self.number(i),
        }
    }

    fn literal(&mut self, len: usize, value: Bound<'py, PyAny>) -> Read<'py> {
        self.pos += len;
        Ok(value)
    }

    fn digits(&self, mut i: usize) -> usize {
        while self.b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    }

    /// The longest number at `start` (`-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?`): a fraction or exponent
    /// not followed by a digit is left unread, as the standard library's scanner leaves it.
    fn number(&mut self, start: usize) -> Read<'py> {
        let b = self.b;
        let mut i = start;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = self.digits(i + 1),
            _ => return Err(Box::new(Stop::At(EXPECTING_VALUE, start))),
        }
        let mut exact = false;
        if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            exact = true;
            i = self.digits(i + 2);
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            let mut j = i + 1;
            if matches!(b.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            let end = self.digits(j);
            if end > j {
                exact = true;
                i = end;
            }
        }
        self.pos = i;
        let text = &self.src[start..i];
        let p = py_objects(self.py)?;
        if exact {
            return Ok(p.decimal.bind(self.py).call1((text,))?);
        }
        if i - start <= 18 {
            if let Ok(n) = text.parse::<i64>() {
                return Ok(PyInt::new(self.py, n).into_any());
            }
        }
        Ok(p.int_type.bind(self.py).call1((text,))?) // Python's digit limit applies, as in json.loads
    }

    /// A string whose opening quote is at `begin` (`pos` is past it).
    fn string(&mut self, begin: usize) -> Result<Text<'a>, Stop> {
        let b = self.b;
        let start = self.pos;
        let Some(run) = plain_run(&b[start..]) else {
            return Err(self.unterminated(begin, start));
        };
        let mut i = start + run;
        match b[i] {
            b'"' => {
                self.pos = i + 1;
                return Ok(Text::Plain(Cow::Borrowed(&self.src[start..i])));
            }
            b'\\' => {}
            _ => return Err(Stop::At(CONTROL, i)),
        }
        // UTF-8, or WTF-8 once a lone surrogate is written into it (`Text::Surrogates`).
        let mut out: Vec<u8> = Vec::with_capacity(i - start + 16);
        out.extend_from_slice(&b[start..i]);
        let mut lone = false;
        loop {
            match b.get(i) {
                None => return Err(Stop::At(UNTERMINATED, begin)),
                Some(b'"') => {
                    self.pos = i + 1;
                    if lone {
                        return Ok(Text::Surrogates(out));
                    }
                    // Valid UTF-8: runs of the (checked) input and whole characters only.
                    let text = String::from_utf8(out).map_err(|_| Stop::Reason("the reader broke a character"))?;
                    return Ok(Text::Plain(Cow::Owned(text)));
                }
                Some(b'\\') => i = self.escape(i, begin, &mut out, &mut lone)?,
                Some(&c) if c < 0x20 => return Err(Stop::At(CONTROL, i)),
                Some(_) => {
                    let run = i;
                    while b.get(i).is_some_and(|&d| d != b'"' && d != b'\\' && d >= 0x20) {
                        i += 1;
                    }
                    out.extend_from_slice(&b[run..i]);
                }
            }
        }
    }

    /// No closing quote after `from`: the first control character is the error, else the string is
    /// unterminated.
    fn unterminated(&self, begin: usize, from: usize) -> Stop {
        match self.b[from..].iter().position(|&c| c < 0x20) {
            Some(at) => Stop::At(CONTROL, from + at),
            None => Stop::At(UNTERMINATED, begin),
        }
    }

    /// The escape whose backslash is at `i`, appended to `out`; returns where the string goes on.
    fn escape(&mut self, i: usize, begin: usize, out: &mut Vec<u8>, lone: &mut bool) -> Result<usize, Stop> {
        let b = self.b;
        let Some(&e) = b.get(i + 1) else {
            return Err(Stop::At(UNTERMINATED, begin));
        };
        let simple = match e {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(i + 1, out, lone),
            _ => return Err(Stop::At("Invalid \\escape", i)),
        };
        out.push(simple as u8);
        Ok(i + 2)
    }

    /// A `\uXXXX` escape whose `u` is at `u` (with its low half, where a high surrogate has one).
    fn unicode_escape(&mut self, u: usize, out: &mut Vec<u8>, lone: &mut bool) -> Result<usize, Stop> {
        let b = self.b;
        let end = u + 5;
        if end >= b.len() {
            return Err(Stop::At(BAD_U_ESCAPE, u));
        }
        let mut code = hex4(&b[u + 1..end]).ok_or(Stop::At(BAD_U_ESCAPE, u))?;
        let mut after = end;
        if (0xD800..0xDC00).contains(&code) && end + 6 < b.len() && &b[end..end + 2] == b"\\u" {
            let low = hex4(&b[end + 2..end + 6]).ok_or(Stop::At(BAD_U_ESCAPE, end + 1))?;
            if (0xDC00..0xE000).contains(&low) {
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                after = end + 6;
            }
        }
        match char::from_u32(code) {
            Some(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            None => {
                // A lone surrogate: kept (WTF-8), as the standard library keeps it in its str; the caller
                // decides once the document is read (a repeated key may have replaced this string).
                self.lone_surrogate = true;
                *lone = true;
                out.extend_from_slice(&[0xE0 | (code >> 12) as u8, 0x80 | ((code >> 6) & 0x3F) as u8, 0x80 | (code & 0x3F) as u8]);
            }
        }
        Ok(after)
    }

    fn object(&mut self, depth: usize) -> Read<'py> {
        if depth > MAX_DEPTH {
            return Err(Box::new(Stop::Reason("the document nests too deeply")));
        }
        self.pos += 1;
        let dict = PyDict::new(self.py);
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(dict.into_any());
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(Box::new(Stop::At("Expecting property name enclosed in double quotes", self.pos)));
            }
            let begin = self.pos;
            self.pos += 1;
            let name = self.string(begin)?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(Box::new(Stop::At("Expecting ':' delimiter", self.pos)));
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth)?;
            let name = match name {
                Text::Plain(text) => key_in(self.py, &mut self.keys, &text),
                surrogates => surrogates.into_py(self.py)?,
            };
            dict.set_item(name, value)?;
            self.skip_ws();
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(dict.into_any());
                }
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                _ => return Err(Box::new(Stop::At("Expecting ',' delimiter", self.pos))),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Read<'py> {
        if depth > MAX_DEPTH {
            return Err(Box::new(Stop::Reason("the document nests too deeply")));
        }
        self.pos += 1;
        let mut items: Vec<Bound<'py, PyAny>> = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(PyList::empty(self.py).into_any());
        }
        loop {
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.peek() {
                Some(b']') => {
                    self.pos += 1;
                    return Ok(PyList::new(self.py, items)?.into_any());
                }
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                _ => return Err(Box::new(Stop::At("Expecting ',' delimiter", self.pos))),
            }
        }
    }

    /// The document: one value between optional white space.
    fn document(&mut self) -> Read<'py> {
        if self.b.starts_with(b"\xEF\xBB\xBF") {
            return Err(Box::new(Stop::At("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0)));
        }
        self.skip_ws();
        let value = self.value(0)?;
        self.skip_ws();
        if self.pos != self.b.len() {
            return Err(Box::new(Stop::At("Extra data", self.pos)));
        }
        Ok(value)
    }
}

/// Why a document was not read (see `load`).
type Problem = (&'static str, isize);

/// The character index of byte position `at` of valid UTF-8 `b`.
fn char_index(b: &[u8], at: usize) -> usize {
    b[..at.min(b.len())].iter().filter(|&&c| (c & 0xC0) != 0x80).count()
}

/// `raw` read as JSON: `(value, None)`, or `(None, (rule, position))` where it is not JSON or holds what
/// no `str` should: `position` is a character index for a syntax rule of the standard library's, -1
/// for a reason without one (`"utf-8"`: the bytes are not UTF-8; NaN, Infinity; nesting); or
/// `(value, ("surrogate", -1))`: the document, which holds a lone surrogate escape somewhere (read
/// into its `str` as the standard library reads it; it may be in a value a repeated key replaced). Raises what `int()` and `Decimal()` raise on a number they refuse.
#[pyfunction]
#[pyo3(name = "load_json")]
pub fn load<'py>(py: Python<'py>, raw: &[u8]) -> PyResult<(Bound<'py, PyAny>, Option<Problem>)> {
    let none = || py.None().into_bound(py);
    let Ok(src) = std::str::from_utf8(raw) else {
        return Ok((none(), Some(("utf-8", -1))));
    };
    let mut loader = Loader { py, src, b: raw, pos: 0, lone_surrogate: false, keys: keys(py) };
    match loader.document() {
        Ok(value) if loader.lone_surrogate => Ok((value, Some(("surrogate", -1)))),
        Ok(value) => Ok((value, None)),
        Err(stop) => match *stop {
            Stop::At(rule, at) => Ok((none(), Some((rule, char_index(raw, at) as isize)))),
            Stop::Reason(reason) => Ok((none(), Some((reason, -1)))),
            Stop::Py(e) => Err(*e),
        },
    }
}

/// Whether a JSON text nests arrays and objects deeper than `limit` (brackets inside strings are text).
/// Counted only when it has more than `limit` opening brackets (one vectorized pass), which almost no
/// message has. Read as bytes, not parsed: it answers for broken documents too (a quote no quote closes
/// is a character like any other), so the refusal comes before any other.
#[pyfunction]
pub fn nests_deeper(raw: &[u8], limit: usize) -> bool {
    if raw.len() <= limit || openings(raw) <= limit {
        return false;
    }
    let mut depth: isize = 0;
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'"' => {
                if let Some(end) = string_end(raw, i + 1) {
                    i = end + 1;
                    continue;
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > limit as isize {
                    return true;
                }
            }
            b']' | b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    false
}

/// How many `[` and `{` bytes `raw` holds: with bit 0x20 set, `[` (0x5B) and `{` (0x7B) alone become
/// `{`. Counted in byte-wide lanes per block of 255 bytes (a lane cannot overflow), which the compiler
/// vectorizes.
fn openings(raw: &[u8]) -> usize {
    raw.chunks(255)
        .map(|block| block.iter().fold(0u8, |n, &c| n + u8::from((c | 0x20) == b'{')) as usize)
        .sum()
}

/// The closing quote of a string whose text starts at `from` (a backslash takes the next byte with it).
fn string_end(raw: &[u8], mut from: usize) -> Option<usize> {
    while from < raw.len() {
        match raw[from] {
            b'"' => return Some(from),
            b'\\' if from + 1 < raw.len() => from += 2,
            b'\\' => return None,
            _ => from += 1,
        }
    }
    None
}
