//! Column values from their vendor text to the canonical value union, in Avro.
//!
//! Each kind mirrors one converter of `shared/parsing/sqltypes.py` on the
//! strict subset of texts written here, where both give the same value; any
//! other text returns `None` and the whole message goes to the Python parser
//! (which converts it, or rejects it with a reason). Branch bytes are the
//! union index times two, in the order of change_event.v1's value union:
//! null, boolean, long, double, string, bytes, BigInteger, Decimal, Date,
//! Time, LocalDateTime, Instant, Unparsed.

use crate::avro;
use crate::json::json_string;

/// A column's conversion, chosen by the Python planner (`shared/kernel/plan.py`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// Not handled here (BIT, geometry, a zone other than UTC...): a non-null value declines.
    Unsupported,
    Int,
    Year,
    Decimal,
    Float,
    Text,
    Boolean,
    BytesLatin1,
    Date,
    Time,
    DateTime,
    InstantUtc,
    /// A TIMESTAMP read in another zone: the strict form here, the zone's rules in Python.
    InstantZoned,
}

/// Each kind's code, by the name of its constant in `shared/kernel/plan.py`: the one definition
/// of the codes the planners send. `from_code` reads it; the extension exports it (`KIND_CODES`),
/// and `tests/shared/kernel/test_kernel_kinds.py` checks `plan.py`'s constants against it name by name.
pub const KIND_CODES: [(&str, i64, Kind); 13] = [
    ("UNSUPPORTED", 0, Kind::Unsupported),
    ("INT", 1, Kind::Int),
    ("YEAR", 2, Kind::Year),
    ("DECIMAL", 3, Kind::Decimal),
    ("FLOAT", 4, Kind::Float),
    ("TEXT", 5, Kind::Text),
    ("BOOLEAN", 6, Kind::Boolean),
    ("BYTES_LATIN1", 7, Kind::BytesLatin1),
    ("DATE", 8, Kind::Date),
    ("TIME", 9, Kind::Time),
    ("DATETIME", 10, Kind::DateTime),
    ("INSTANT_UTC", 11, Kind::InstantUtc),
    ("INSTANT_ZONED", 12, Kind::InstantZoned),
];

impl Kind {
    /// A code's kind; a code not in `KIND_CODES` is `Unsupported` (a non-null value declines).
    pub fn from_code(code: i64) -> Kind {
        KIND_CODES.iter().find(|&&(_, c, _)| c == code).map_or(Kind::Unsupported, |&(_, _, kind)| kind)
    }

    /// Whether Python's converter reads the empty text (as `""` or `b""`: `Some(true)`) or raises
    /// ValueError on it (every number, boolean and date-time: `Some(false)`); None: not known here.
    pub fn reads_empty(self) -> Option<bool> {
        match self {
            Kind::Text | Kind::BytesLatin1 => Some(true),
            Kind::Unsupported => None,
            _ => Some(false),
        }
    }
}

pub(crate) const LONG: u8 = 0x04;
pub(crate) const DOUBLE: u8 = 0x06;
pub(crate) const STRING: u8 = 0x08;
pub(crate) const BYTES: u8 = 0x0a;
const BIG_INTEGER: u8 = 0x0c;
const DECIMAL: u8 = 0x0e;
pub(crate) const DATE: u8 = 0x10;
pub(crate) const TIME: u8 = 0x12;
pub(crate) const LOCAL_DATE_TIME: u8 = 0x14;
pub(crate) const INSTANT: u8 = 0x16;
pub(crate) const UNPARSED: u8 = 0x18;

/// How a converted value renders in the record key (the JSON view of a key column).
#[derive(Clone, Copy)]
pub enum KeyPart<'t> {
    Null,
    /// A JSON number (an int64).
    Number(i64),
    /// A JSON string (text, decimals, integers beyond int64): the vendor's text itself.
    Text(&'t str),
    /// Not renderable here: a key column of this kind declines.
    Other,
}

impl KeyPart<'_> {
    /// Append the value as `records._key_value` renders it and orjson writes it; None: `Other`, decline.
    pub fn write(self, key: &mut Vec<u8>) -> Option<()> {
        match self {
            KeyPart::Null => key.extend_from_slice(b"null"),
            KeyPart::Number(n) => key.extend_from_slice(n.to_string().as_bytes()),
            KeyPart::Text(t) => json_string(key, t),
            KeyPart::Other => return None,
        }
        Some(())
    }
}

/// The record key's key values (`event_key`): `,[v1,v2...]` after `[database,schema,table`, nothing
/// without key columns. `value` appends one column's rendering (None: decline the message).
pub fn key_values<S: AsRef<str>>(
    key: &mut Vec<u8>,
    primary_key: &[S],
    mut value: impl FnMut(&str, &mut Vec<u8>) -> Option<()>,
) -> Option<()> {
    if primary_key.is_empty() {
        return Some(());
    }
    key.extend_from_slice(b",[");
    for (i, name) in primary_key.iter().enumerate() {
        if i > 0 {
            key.push(b',');
        }
        value(name.as_ref(), key)?;
    }
    key.push(b']');
    Some(())
}

/// Micros since the epoch of a wall-clock TIMESTAMP text in the source zone (None: decline).
pub type ZoneReader<'z> = &'z dyn Fn(&str) -> Option<i64>;

/// Append the Avro union bytes of `text` read as `kind` to `out`; None: not in the strict subset.
pub fn convert<'t>(kind: Kind, text: &'t str, out: &mut Vec<u8>, zoned: ZoneReader) -> Option<KeyPart<'t>> {
    match kind {
        Kind::InstantZoned => {
            date_time(text)?; // the strict form first: zero dates and the like stay with Python
            long_value(INSTANT, zoned(text)?, out)
        }
        Kind::Unsupported => None,
        Kind::Int => integer(text, None, out),
        Kind::Year => integer(text, Some(9999), out),
        Kind::Decimal => decimal(text, out),
        Kind::Float => float(text, out),
        Kind::Text => {
            tagged(STRING, text.as_bytes(), out);
            Some(KeyPart::Text(text))
        }
        Kind::Boolean => boolean(text, out),
        Kind::BytesLatin1 => latin1(text, out),
        Kind::Date => date(text, out),
        Kind::Time => time(text, out),
        Kind::DateTime => long_value(LOCAL_DATE_TIME, date_time(text)?, out),
        Kind::InstantUtc => long_value(INSTANT, date_time(text)?, out),
    }
}

pub(crate) fn tagged(branch: u8, data: &[u8], out: &mut Vec<u8>) {
    out.push(branch);
    avro::bytes(out, data);
}

pub(crate) fn long_value(branch: u8, n: i64, out: &mut Vec<u8>) -> Option<KeyPart<'static>> {
    out.push(branch);
    avro::long(out, n);
    Some(KeyPart::Other)
}

/// One or more ASCII digits.
pub(crate) fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
}

/// Digits with no superfluous leading zero ("0" alone is fine).
fn canonical_digits(s: &str) -> bool {
    all_digits(s) && (s.len() == 1 || !s.starts_with('0'))
}

/// `_int` (and `_year` with a maximum): `-?digits`, canonical, at most 38 digits.
fn integer<'t>(text: &'t str, max: Option<i64>, out: &mut Vec<u8>) -> Option<KeyPart<'t>> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if !canonical_digits(digits) || digits.len() > 38 || text == "-0" {
        return None;
    }
    let n: i128 = if digits.len() <= 18 {
        text.parse::<i64>().ok()? as i128
    } else {
        text.parse().ok()?
    };
    if let Some(top) = max {
        if !(0..=top as i128).contains(&n) {
            return None;
        }
    }
    if (i64::MIN as i128..=i64::MAX as i128).contains(&n) {
        out.push(LONG);
        avro::long(out, n as i64);
        Some(KeyPart::Number(n as i64))
    } else {
        // BigInt: the same digits (canonical, so int.__repr__ gives them back).
        tagged(BIG_INTEGER, text.as_bytes(), out);
        Some(KeyPart::Text(text))
    }
}

/// `_decimal` then `decimal_text`: `-?int(.frac)?` with at most 40 digits on either side of the
/// point, where `str(Decimal(text))` (or its `:f` form) is the text itself.
fn decimal<'t>(text: &'t str, out: &mut Vec<u8>) -> Option<KeyPart<'t>> {
    let body = text.strip_prefix('-').unwrap_or(text);
    let (int_part, frac) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    if !canonical_digits(int_part) || int_part.len() > 40 {
        return None;
    }
    if let Some(f) = frac {
        if !all_digits(f) || f.len() > 40 {
            return None;
        }
    }
    tagged(DECIMAL, text.as_bytes(), out);
    Some(KeyPart::Text(text))
}

/// `_float`: a plain JSON-style number, read with correct rounding (as CPython's float()).
fn float(text: &str, out: &mut Vec<u8>) -> Option<KeyPart<'static>> {
    let body = text.strip_prefix('-').unwrap_or(text);
    let mantissa_end = body.find(['e', 'E']).unwrap_or(body.len());
    let (mantissa, exponent) = body.split_at(mantissa_end);
    let (int_part, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    if !all_digits(int_part) || frac.is_some_and(|f| !all_digits(f)) {
        return None;
    }
    if !exponent.is_empty() {
        let e = &exponent[1..];
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        if !all_digits(e) || e.len() > 4 {
            return None;
        }
    }
    let value: f64 = text.parse().ok()?;
    if !value.is_finite() {
        return None;
    }
    out.push(DOUBLE);
    out.extend_from_slice(&value.to_le_bytes());
    Some(KeyPart::Other)
}

/// `_boolean` on its four plain spellings.
fn boolean(text: &str, out: &mut Vec<u8>) -> Option<KeyPart<'static>> {
    let flag = match text {
        "1" | "true" => 1u8,
        "0" | "false" => 0u8,
        _ => return None,
    };
    out.extend_from_slice(&[0x02, flag]);
    Some(KeyPart::Other)
}

/// Canal's binary rendering: each character is one byte (ISO-8859-1).
fn latin1(text: &str, out: &mut Vec<u8>) -> Option<KeyPart<'static>> {
    if text.is_ascii() {
        tagged(BYTES, text.as_bytes(), out);
        return Some(KeyPart::Other);
    }
    let mut data = Vec::with_capacity(text.len());
    for c in text.chars() {
        let code = c as u32;
        if code > 0xFF {
            return None; // not ISO-8859-1: the Python parser words the reject
        }
        data.push(code as u8);
    }
    tagged(BYTES, &data, out);
    Some(KeyPart::Other)
}

/// The two ASCII digits at `at` as a number (None: not two digits there).
pub(crate) fn two(b: &[u8], at: usize) -> Option<i64> {
    let (h, l) = (*b.get(at)?, *b.get(at + 1)?);
    if h.is_ascii_digit() && l.is_ascii_digit() {
        Some(((h - b'0') * 10 + (l - b'0')) as i64)
    } else {
        None
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's days_from_civil).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD`, a real date in years 1-9999 (zero dates go to the Python parser).
fn ymd(b: &[u8]) -> Option<i64> {
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let year = two(b, 0)? * 100 + two(b, 2)?;
    real_date(year, two(b, 5)?, two(b, 8)?)
}

/// Days since 1970-01-01 of a real date in years 1-9999 (what `datetime.date` accepts), else None
/// (no such date, zero dates included).
pub(crate) fn real_date(year: i64, month: i64, day: i64) -> Option<i64> {
    if !(1..=9999).contains(&year) || !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

fn date(text: &str, out: &mut Vec<u8>) -> Option<KeyPart<'static>> {
    let b = text.as_bytes();
    if b.len() != 10 {
        return None;
    }
    long_value(DATE, ymd(b)?, out)
}

/// Up to six fraction digits as microseconds ("5" is 500000).
fn fraction(digits: &[u8], max_len: usize) -> Option<i64> {
    if digits.is_empty() || digits.len() > max_len || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut micros = 0i64;
    for i in 0..6 {
        micros = micros * 10 + digits.get(i).map_or(0, |d| (d - b'0') as i64);
    }
    Some(micros)
}

/// `parse_time`: `-?H{1,3}:MM:SS(.f{1,9})?`, minutes and seconds below 60.
fn time(text: &str, out: &mut Vec<u8>) -> Option<KeyPart<'static>> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let b = body.as_bytes();
    let colon = b.iter().position(|&c| c == b':')?;
    if !(1..=3).contains(&colon) || !b[..colon].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let hours: i64 = body[..colon].parse().ok()?;
    let rest = &b[colon..];
    if rest.len() < 6 || rest[0] != b':' || rest[3] != b':' {
        return None;
    }
    let (minutes, seconds) = (two(rest, 1)?, two(rest, 4)?);
    if minutes > 59 || seconds > 59 {
        return None;
    }
    let frac = match &rest[6..] {
        [] => 0,
        [b'.', digits @ ..] => fraction(digits, 9)?,
        _ => return None,
    };
    let micros = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + frac;
    long_value(TIME, if negative { -micros } else { micros }, out)
}

/// `YYYY-MM-DD HH:MM:SS(.f{1,6})?` (or `T`): micros since 1970-01-01T00:00 of that wall clock.
pub(crate) fn date_time(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 19 || b.len() > 26 || (b[10] != b' ' && b[10] != b'T') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let days = ymd(&b[..10])?;
    let (hour, minute, second) = (two(b, 11)?, two(b, 14)?, two(b, 17)?);
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let frac = match &b[19..] {
        [] => 0,
        [b'.', digits @ ..] => fraction(digits, 6)?,
        _ => return None,
    };
    Some(((days * 24 + hour) * 60 + minute) * 60_000_000 + second * 1_000_000 + frac)
}

/// `instant_from_epoch_text` on `digits{1,11}(.digits{1,9})?`: micros, the fraction floored.
pub(crate) fn epoch_micros(text: &str) -> Option<i64> {
    let (whole, frac) = match text.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (text, None),
    };
    let digits = |s: &str, max: usize| !s.is_empty() && s.len() <= max && s.bytes().all(|c| c.is_ascii_digit());
    if !digits(whole, 11) || !frac.map_or(true, |f| digits(f, 9)) {
        return None;
    }
    let mut micros: i64 = whole.parse::<i64>().ok()? * 1_000_000;
    if let Some(f) = frac {
        let mut six = [b'0'; 6];
        for (slot, c) in six.iter_mut().zip(f.bytes()) {
            *slot = c;
        }
        micros += std::str::from_utf8(&six).ok()?.parse::<i64>().ok()?;
    }
    // Python's datetime ends at 9999-12-31 23:59:59.999999.
    (micros <= 253_402_300_799_999_999).then_some(micros)
}

fn base64_digit(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

/// Strict, canonical base64 (padded, no whitespace, zero trailing bits): a subset of what
/// `binascii.a2b_base64(strict_mode=True)` accepts, decoded the same way.
pub(crate) fn base64(text: &str) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    if b.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    for (i, chunk) in b.chunks(4).enumerate() {
        let last = i + 1 == b.len() / 4;
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            n = n << 6 | base64_digit(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        match pad {
            0 => out.extend_from_slice(&bytes),
            1 if n & 0xff == 0 => out.extend_from_slice(&bytes[..2]),
            2 if n & 0xffff == 0 => out.push(bytes[0]),
            _ => return None, // non-zero trailing bits: not canonical, left to Python
        }
    }
    Some(out)
}

/// What a lane's planner made of one type map or schema: the column names, each one's
/// conversion kind, and the Avro `columns` field (the descriptors array) as the Python writer
/// encodes it.
pub struct Plan<K> {
    pub names: Vec<String>,
    pub kinds: Vec<K>,
    pub columns_avro: Vec<u8>,
}

impl<K: Copy> Plan<K> {
    /// The kind of column `name`; `hint` is where it usually is (rows list columns in the declared order).
    pub fn kind(&self, name: &str, hint: usize) -> Option<K> {
        if self.names.get(hint).is_some_and(|n| n == name) {
            return Some(self.kinds[hint]);
        }
        self.names.iter().position(|n| n == name).map(|i| self.kinds[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_codes_are_one_to_one() {
        for (i, &(name, code, kind)) in KIND_CODES.iter().enumerate() {
            assert_eq!(Kind::from_code(code), kind, "{name}");
            for &(other, other_code, other_kind) in &KIND_CODES[i + 1..] {
                assert!(name != other && code != other_code && kind != other_kind, "{name} and {other}");
            }
        }
        for code in [-1, 13, 100, 101, 102, 103, i64::MAX] {
            assert_eq!(Kind::from_code(code), Kind::Unsupported, "{code}");
        }
    }
}
