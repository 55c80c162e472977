//! A small JSON reader that refuses rather than guesses.
//!
//! The fast lane must read a message exactly as the Python parser's decoder
//! (orjson) does, or not at all. This reader keeps numbers as their source
//! text (no float rounding), decodes strings (escapes, surrogate pairs), and
//! returns `None` for anything it does not read with certainty: invalid JSON,
//! a lone surrogate, an object with a repeated key (orjson keeps the last
//! value at the first position; the Python parser then decides), nesting
//! deeper than `MAX_DEPTH`. A `None` sends the message to the Python parser,
//! which accepts or rejects it with a worded reason.
//!
//! Also the lanes' strict readers of a scalar field (`int_field`, `str_field`) and orjson's
//! string rendering (`json_string`), which the record keys and JSON views are written with.

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};

const MAX_DEPTH: usize = 64;
/// Longer numbers are declined: Python's exact decoder refuses integers of more than 4300
/// digits (a reject), which orjson cannot hold either.
const MAX_NUMBER_LEN: usize = 1000;
/// `parse_message_exact`'s bound for numbers with a fraction or an exponent: the exact decoder
/// reads them as `Decimal`, of any length (OMS prints doubles' exact expansions, 1100 digits
/// for 1e-300).
const MAX_FRACTIONAL_LEN: usize = 100_000;

pub enum Json<'a> {
    Null,
    Bool(bool),
    /// A number's source text: `-?int(.frac)?(e[+-]?exp)?`.
    Number(&'a str),
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    /// Members in source order, with the raw source bytes of the whole object.
    Object(Vec<(Cow<'a, str>, Json<'a>)>, &'a [u8]),
    /// A value checked but not built (`parse_message`): its source bytes.
    Raw(&'a [u8]),
}

/// A top-level object whose members named in `built` are built; the others are
/// checked (valid JSON, same acceptance as `parse`) and kept as `Json::Raw`.

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

pub fn parse_message<'a>(raw: &'a [u8], built: &[&str]) -> Option<Vec<(Cow<'a, str>, Json<'a>)>> {
    read_message(raw, built, MAX_NUMBER_LEN)
}

/// `parse_message` for a format whose Python parser reads every message holding a fractional
/// number with the exact decoder (`decode_and_parse(numbers_are_values=True)`): such numbers
/// are taken up to `MAX_FRACTIONAL_LEN` characters.
pub fn parse_message_exact<'a>(raw: &'a [u8], built: &[&str]) -> Option<Vec<(Cow<'a, str>, Json<'a>)>> {
    read_message(raw, built, MAX_FRACTIONAL_LEN)
}

fn read_message<'a>(raw: &'a [u8], built: &[&str], max_fractional: usize) -> Option<Vec<(Cow<'a, str>, Json<'a>)>> {
    let text = std::str::from_utf8(raw).ok()?;
    let mut reader = Reader { src: text, bytes: raw, pos: 0, max_fractional };
    reader.skip_ws();
    if reader.bytes.get(reader.pos) != Some(&b'{') {
        return None;
    }
    reader.pos += 1;
    let mut members: Vec<(Cow<'a, str>, Json<'a>)> = Vec::with_capacity(16);
    let mut hashes = HashSet::new();
    reader.skip_ws();
    if reader.bytes.get(reader.pos) == Some(&b'}') {
        reader.pos += 1;
    } else {
        loop {
            reader.skip_ws();
            if reader.bytes.get(reader.pos) != Some(&b'"') {
                return None;
            }
            let key = reader.string()?;
            if repeated(&members, &key, &mut hashes) {
                return None;
            }
            reader.skip_ws();
            reader.eat(b":")?;
            reader.skip_ws();
            let value = if built.contains(&key.as_ref()) {
                reader.value(1)?
            } else {
                let start = reader.pos;
                reader.skip_value(1)?;
                Json::Raw(&raw[start..reader.pos])
            };
            members.push((key, value));
            reader.skip_ws();
            match *reader.bytes.get(reader.pos)? {
                b',' => reader.pos += 1,
                b'}' => {
                    reader.pos += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    reader.skip_ws();
    if reader.pos != raw.len() {
        return None;
    }
    Some(members)
}

pub fn parse(raw: &[u8]) -> Option<Json<'_>> {
    let text = std::str::from_utf8(raw).ok()?;
    let mut reader = Reader { src: text, bytes: raw, pos: 0, max_fractional: MAX_NUMBER_LEN };
    reader.skip_ws();
    let value = reader.value(0)?;
    reader.skip_ws();
    if reader.pos != raw.len() {
        return None;
    }
    Some(value)
}

/// A JSON integer field of at most 18 digits; None: absent or null.
pub(crate) fn int_field(value: Option<&Json>) -> Result<Option<i64>, ()> {
    match value {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Number(text)) => {
            let digits = text.strip_prefix('-').unwrap_or(text);
            if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return Err(()); // fractions, exponents, huge values: the Python parser decides
            }
            text.parse().map(Some).map_err(|_| ())
        }
        Some(_) => Err(()),
    }
}

/// A string field; None: absent or null (numbers, which Python may turn into text, are declined).
pub(crate) fn str_field<'d>(value: Option<&'d Json>) -> Result<Option<&'d str>, ()> {
    match value {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Str(text)) => Ok(Some(text.as_ref())),
        Some(_) => Err(()),
    }
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
fn plain_run(text: &[u8]) -> Option<usize> {
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
    /// The longest number with a fraction or an exponent taken (integers: `MAX_NUMBER_LEN`).
    max_fractional: usize,
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

    /// Check one value without building it (repeated keys inside are not looked for: nobody reads it).
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match *self.bytes.get(self.pos)? {
            b'{' | b'[' => {
                let close = if self.bytes[self.pos] == b'{' { b'}' } else { b']' };
                let is_object = close == b'}';
                self.pos += 1;
                self.skip_ws();
                if self.bytes.get(self.pos) == Some(&close) {
                    self.pos += 1;
                    return Some(());
                }
                loop {
                    self.skip_ws();
                    if is_object {
                        if self.bytes.get(self.pos) != Some(&b'"') {
                            return None;
                        }
                        self.skip_string()?;
                        self.skip_ws();
                        self.eat(b":")?;
                        self.skip_ws();
                    }
                    self.skip_value(depth + 1)?;
                    self.skip_ws();
                    match *self.bytes.get(self.pos)? {
                        b',' => self.pos += 1,
                        c if c == close => {
                            self.pos += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => self.skip_string(),
            _ => self.value(depth).map(|_| ()),
        }
    }

    fn skip_string(&mut self) -> Option<()> {
        // The same checks as `string` (escapes, surrogates, controls) without building the text.
        let n = plain_run(&self.bytes[self.pos + 1..])?;
        if self.bytes[self.pos + 1 + n] == b'"' {
            self.pos += n + 2;
            return Some(());
        }
        self.string().map(|_| ())
    }

    fn object(&mut self, depth: usize) -> Option<Json<'a>> {
        let start = self.pos;
        self.pos += 1;
        let mut members: Vec<(Cow<'a, str>, Json<'a>)> = Vec::with_capacity(16);
        let mut hashes = HashSet::new();
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Some(Json::Object(members, &self.bytes[start..self.pos]));
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
                    return Some(Json::Object(members, &self.bytes[start..self.pos]));
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
        let mut integer = true;
        if b.get(self.pos) == Some(&b'.') {
            integer = false;
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
            integer = false;
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
        let limit = if integer { MAX_NUMBER_LEN } else { self.max_fractional };
        if self.pos - start > limit {
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

    #[test]
    fn a_repeated_key_declines_in_small_and_wide_objects() {
        for width in [3, SCAN_MEMBERS - 1, SCAN_MEMBERS, SCAN_MEMBERS + 1, 500] {
            let mut keys: Vec<String> = (0..width).map(|i| format!("c{i}")).collect();
            let built: Vec<&str> = Vec::new();
            assert_eq!(parse_message(&object(&keys), &built).map(|m| m.len()), Some(width), "{width}");
            for at in [0, width / 2, width - 1] {
                keys.push(keys[at].clone());
                assert!(parse_message(&object(&keys), &built).is_none(), "{width}, repeating {at}");
                keys.pop();
            }
            // Nested objects (built members) are read with the same rule.
            let nested = format!("{{\"data\":{}}}", String::from_utf8(object(&keys)).unwrap());
            assert!(parse_message(nested.as_bytes(), &["data"]).is_some(), "{width}");
            keys.push(keys[0].clone());
            let nested = format!("{{\"data\":{}}}", String::from_utf8(object(&keys)).unwrap());
            assert!(parse_message(nested.as_bytes(), &["data"]).is_none(), "{width}");
        }
    }
}
