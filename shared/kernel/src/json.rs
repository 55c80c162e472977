//! A small JSON reader that refuses rather than guesses (the Avro decoder reads its schemas with it),
//! and orjson's string rendering (`json_string`), which the record keys, the JSON view and JSON
//! columns are written with.
//!
//! The reader keeps numbers as their source text (no float rounding), decodes strings (escapes,
//! surrogate pairs), and returns `None` for anything it does not read with certainty: invalid JSON,
//! a lone surrogate, an object with a repeated key, nesting deeper than `MAX_DEPTH`.

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};

const MAX_DEPTH: usize = 64;
/// Longer numbers are declined: Python's exact decoder refuses integers of more than 4300
/// digits (a reject), which orjson cannot hold either.
const MAX_NUMBER_LEN: usize = 1000;

pub enum Json<'a> {
    Null,
    Bool(bool),
    /// A number's source text: `-?int(.frac)?(e[+-]?exp)?`.
    Number(&'a str),
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    /// Members in source order.
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

/// Objects with fewer members than this are searched for a repeated key one member at a time.
const SCAN_MEMBERS: usize = 16;

/// Whether `key` is already a member's: a scan of the members, which a wide row's hundreds of
/// columns made quadratic; past `SCAN_MEMBERS` a set of the keys' hashes answers first (`hashes`,
/// empty until then), and the scan only confirms a hash seen before.
fn repeated(members: &[(Cow<'_, str>, Json<'_>)], key: &str, hashes: &mut HashSet<u64>) -> bool {
    if members.len() < SCAN_MEMBERS {
        return members.iter().any(|(k, _)| k == key);
    }
    if hashes.is_empty() {
        hashes.extend(members.iter().map(|(k, _)| key_hash(k)));
    }
    !hashes.insert(key_hash(key)) && members.iter().any(|(k, _)| k == key)
}

fn key_hash(key: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}

pub fn parse(raw: &[u8]) -> Option<Json<'_>> {
    let text = std::str::from_utf8(raw).ok()?;
    let mut reader = Reader { src: text, bytes: raw, pos: 0 };
    reader.skip_ws();
    let value = reader.value(0)?;
    reader.skip_ws();
    if reader.pos != raw.len() {
        return None;
    }
    Some(value)
}

/// orjson's string rendering (short escapes for the usual five, `\u00XX` for other controls).
pub fn json_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    for &b in text.as_bytes() {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            c if c < 0x20 => out.extend_from_slice(format!("\\u{:04x}", c).as_bytes()),
            c => out.push(c),
        }
    }
    out.push(b'"');
}

/// Where the first `"`, `\\` or control character of `text` is (the end of a run of plain
/// string bytes), found with SIMD: strings are most of a message's bytes.
pub(crate) fn plain_run(text: &[u8]) -> Option<usize> {
    let end = memchr::memchr2(b'"', b'\\', text)?;
    // A branch-free check the compiler vectorizes; a control character is rare (and invalid).
    let controls = text[..end].iter().fold(false, |seen, &c| seen | (c < 0x20));
    if controls {
        return text[..end].iter().position(|&c| c < 0x20);
    }
    Some(end)
}

struct Reader<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn skip_ws(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            if b == b' ' || b == b'\n' || b == b'\r' || b == b'\t' {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn eat(&mut self, literal: &[u8]) -> Option<()> {
        if self.bytes[self.pos..].starts_with(literal) {
            self.pos += literal.len();
            Some(())
        } else {
            None
        }
    }

    fn value(&mut self, depth: usize) -> Option<Json<'a>> {
        if depth > MAX_DEPTH {
            return None;
        }
        match *self.bytes.get(self.pos)? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => self.string().map(Json::Str),
            b't' => self.eat(b"true").map(|_| Json::Bool(true)),
            b'f' => self.eat(b"false").map(|_| Json::Bool(false)),
            b'n' => self.eat(b"null").map(|_| Json::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn object(&mut self, depth: usize) -> Option<Json<'a>> {
        self.pos += 1;
        let mut members: Vec<(Cow<'a, str>, Json<'a>)> = Vec::with_capacity(16);
        let mut hashes = HashSet::new();
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Some(Json::Object(members));
        }
        loop {
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b'"') {
                return None;
            }
            let key = self.string()?;
            if repeated(&members, &key, &mut hashes) {
                return None; // a repeated key: the Python parser decides
            }
            self.skip_ws();
            self.eat(b":")?;
            self.skip_ws();
            let value = self.value(depth + 1)?;
            members.push((key, value));
            self.skip_ws();
            match *self.bytes.get(self.pos)? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(Json::Object(members));
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<Json<'a>> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Some(Json::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match *self.bytes.get(self.pos)? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(Json::Array(items));
                }
                _ => return None,
            }
        }
    }

    fn number(&mut self) -> Option<Json<'a>> {
        let start = self.pos;
        let b = self.bytes;
        if b.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match b.get(self.pos)? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                while matches!(b.get(self.pos), Some(b'0'..=b'9')) {
                    self.pos += 1;
                }
            }
            _ => return None,
        }
        if b.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            let digits = self.pos;
            while matches!(b.get(self.pos), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
            if self.pos == digits {
                return None;
            }
        }
        if matches!(b.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(b.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            let digits = self.pos;
            while matches!(b.get(self.pos), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
            if self.pos == digits {
                return None;
            }
        }
        if self.pos - start > MAX_NUMBER_LEN {
            return None;
        }
        Some(Json::Number(&self.src[start..self.pos]))
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.src.get(self.pos..self.pos + 4)?;
        if !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.pos += 4;
        u32::from_str_radix(digits, 16).ok()
    }

    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.pos += 1; // the opening quote
        let start = self.pos;
        let b = self.bytes;
        // The common case: no escapes, borrowed as is.
        let n = plain_run(&b[self.pos..])?;
        self.pos += n;
        match b[self.pos] {
            b'"' => {
                let text = &self.src[start..self.pos];
                self.pos += 1;
                return Some(Cow::Borrowed(text));
            }
            b'\\' => {}
            _ => return None, // raw control characters are invalid JSON
        }
        let mut out = String::with_capacity(self.pos - start + 16);
        out.push_str(&self.src[start..self.pos]);
        loop {
            let c = *b.get(self.pos)?;
            match c {
                b'"' => {
                    self.pos += 1;
                    return Some(Cow::Owned(out));
                }
                b'\\' => {
                    self.pos += 1;
                    let e = *b.get(self.pos)?;
                    self.pos += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let unit = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&unit) {
                                // A high surrogate must be followed by a low one; anything else
                                // (a lone surrogate) is left to the Python parser.
                                self.eat(b"\\u")?;
                                let low = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&low) {
                                    return None;
                                }
                                0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&unit) {
                                return None;
                            } else {
                                unit
                            };
                            out.push(char::from_u32(code)?);
                        }
                        _ => return None,
                    }
                }
                c if c < 0x20 => return None,
                _ => {
                    // Copy the run up to the next quote or backslash (valid UTF-8: the input was checked).
                    let run = self.pos;
                    while let Some(&d) = b.get(self.pos) {
                        if d == b'"' || d == b'\\' || d < 0x20 {
                            break;
                        }
                        self.pos += 1;
                    }
                    out.push_str(&self.src[run..self.pos]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(keys: &[String]) -> Vec<u8> {
        let members: Vec<String> = keys.iter().map(|k| format!("\"{k}\":1")).collect();
        format!("{{{}}}", members.join(",")).into_bytes()
    }

    fn members(json: Option<Json<'_>>) -> Option<usize> {
        match json? {
            Json::Object(members) => Some(members.len()),
            _ => None,
        }
    }

    #[test]
    fn a_repeated_key_is_refused_in_small_and_wide_objects() {
        for width in [3, SCAN_MEMBERS - 1, SCAN_MEMBERS, SCAN_MEMBERS + 1, 500] {
            let mut keys: Vec<String> = (0..width).map(|i| format!("c{i}")).collect();
            assert_eq!(members(parse(&object(&keys))), Some(width), "{width}");
            for at in [0, width / 2, width - 1] {
                keys.push(keys[at].clone());
                assert!(parse(&object(&keys)).is_none(), "{width}, repeating {at}");
                keys.pop();
            }
            // Nested objects are read with the same rule.
            let nested = format!("{{\"data\":{}}}", String::from_utf8(object(&keys)).unwrap());
            assert_eq!(members(parse(nested.as_bytes())), Some(1), "{width}");
            keys.push(keys[0].clone());
            let nested = format!("{{\"data\":{}}}", String::from_utf8(object(&keys)).unwrap());
            assert!(parse(nested.as_bytes()).is_none(), "{width}");
        }
    }
}
