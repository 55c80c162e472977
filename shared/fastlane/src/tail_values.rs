//! Image values -> the mirror's typed values: the twin of `spark_sink/mirror/image_values.py`.
//!
//! The mirror without Spark (and the current-state read) must store what `image_values` makes of
//! a value, value for value (`tests/sink/test_tail_native_unit.py` checks the two against each
//! other). A text that only Python's parsers read the same way (`Decimal` and `float` accept
//! underscores, non-ASCII digits, `inf`/`nan`) is not guessed at: the conversion answers `Ask` and
//! the caller hands the value to the Python converter.

use std::hash::{Hash, Hasher};

/// An image value as the body holds it (the value union's branch, read).
#[derive(Clone, Copy, Debug)]
pub enum Raw<'a> {
    Null,
    Bool(bool),
    Long(i64),
    Double(f64),
    Str(&'a str),
    Bytes(&'a [u8]),
    /// A `BigInteger`'s or a `Decimal`'s digits.
    Digits(&'a str),
    Date(i64),
    Time(i64),
    Local(i64),
    Instant(i64),
    Unparsed,
}

/// A mirror column's type, as far as the conversion cares.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    Boolean,
    /// Bounds of an integral type.
    Integral(i64, i64),
    /// Precision and scale.
    Decimal(usize, usize),
    Floating,
    Text,
    Binary,
    Date,
    Local,
    Instant,
}

/// A typed value in `image_values`' forms: decimals as their digits at the target's scale, dates as
/// days, timestamps as microseconds.
#[derive(Clone, Debug)]
pub enum Typed {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
}

impl PartialEq for Typed {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Typed::Bool(a), Typed::Bool(b)) => a == b,
            (Typed::Int(a), Typed::Int(b)) => a == b,
            // Keys never hold floats (the fold declines a table keyed by one); bits are enough.
            (Typed::Float(a), Typed::Float(b)) => a.to_bits() == b.to_bits(),
            (Typed::Text(a), Typed::Text(b)) => a == b,
            (Typed::Bytes(a), Typed::Bytes(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Typed {}

impl Hash for Typed {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Typed::Bool(v) => v.hash(state),
            Typed::Int(v) => v.hash(state),
            Typed::Float(v) => v.to_bits().hash(state),
            Typed::Text(v) => v.hash(state),
            Typed::Bytes(v) => v.hash(state),
        }
    }
}

/// What a conversion made of a value: a typed value, NULL, or a question for Python.
#[derive(Debug, PartialEq)]
pub enum Converted {
    Value(Typed),
    Null,
    Ask,
}

/// `value` converted to `target` (`image_values.converter`).
pub fn convert(value: &Raw<'_>, target: Target) -> Converted {
    match target {
        Target::Boolean => match value {
            Raw::Bool(b) => Converted::Value(Typed::Bool(*b)),
            Raw::Long(n) => Converted::Value(Typed::Bool(*n != 0)),
            _ => Converted::Null,
        },
        Target::Integral(low, high) => match whole(value) {
            Some(Some(n)) if (i128::from(low)..=i128::from(high)).contains(&n) => {
                Converted::Value(Typed::Int(n as i64))
            }
            _ => Converted::Null,
        },
        Target::Decimal(precision, scale) => decimal(value, precision, scale),
        Target::Floating => match value {
            Raw::Double(d) => Converted::Value(Typed::Float(*d)),
            Raw::Long(n) => Converted::Value(Typed::Float(*n as f64)),
            Raw::Digits(text) => {
                let stripped = py_strip(text);
                if !plain_number(stripped) {
                    return Converted::Ask;
                }
                match stripped.parse::<f64>() {
                    Ok(f) => Converted::Value(Typed::Float(f)),
                    Err(_) => Converted::Ask,
                }
            }
            _ => Converted::Null,
        },
        Target::Text => match value {
            Raw::Str(s) => Converted::Value(Typed::Text((*s).to_owned())),
            Raw::Digits(s) => Converted::Value(Typed::Text((*s).to_owned())),
            Raw::Long(n) => Converted::Value(Typed::Text(n.to_string())),
            Raw::Double(d) => Converted::Value(Typed::Text(java_double(*d))),
            Raw::Bool(b) => Converted::Value(Typed::Text(if *b { "true" } else { "false" }.to_owned())),
            Raw::Bytes(b) => Converted::Value(Typed::Text(base64(b))),
            _ => Converted::Null,
        },
        Target::Binary => match value {
            Raw::Bytes(b) => Converted::Value(Typed::Bytes(b.to_vec())),
            _ => Converted::Null,
        },
        Target::Date => match value {
            Raw::Date(d) => Converted::Value(Typed::Int(*d)),
            _ => Converted::Null,
        },
        Target::Local => match value {
            Raw::Local(m) => Converted::Value(Typed::Int(*m)),
            _ => Converted::Null,
        },
        Target::Instant => match value {
            Raw::Instant(m) => Converted::Value(Typed::Int(*m)),
            _ => Converted::Null,
        },
    }
}

/// The integer an integral `try_cast` makes of a value (`_whole`): None for a branch that holds no
/// integer, `Some(None)` for digits that are not one (or beyond `i128`: out of every range).
fn whole(value: &Raw<'_>) -> Option<Option<i128>> {
    match value {
        Raw::Long(n) => Some(Some(i128::from(*n))),
        Raw::Digits(text) => Some(parse_int(text)),
        Raw::Bool(b) => Some(Some(i128::from(*b))),
        Raw::Time(m) => Some(Some(i128::from(*m))),
        _ => None,
    }
}

/// Python's `str.isspace`: Unicode white space and the four ASCII separators 0x1C-0x1F.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()`.
pub fn py_strip(text: &str) -> &str {
    text.trim_matches(py_space)
}

/// `_parse_int`: optional sign and ASCII digits between blanks, no point.
fn parse_int(text: &str) -> Option<i128> {
    let stripped = py_strip(text);
    let (negative, body) = match stripped.as_bytes().first() {
        Some(b'-') => (true, &stripped[1..]),
        Some(b'+') => (false, &stripped[1..]),
        _ => (false, stripped),
    };
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n: i128 = 0;
    for b in body.bytes() {
        n = n.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
    }
    Some(if negative { -n } else { n })
}

/// A number in the ASCII form both Python and Rust read alike: `[+-]digits[.digits][e[+-]digits]`
/// (either side of the point may be empty, not both).
fn plain_number(text: &str) -> bool {
    parts(text).is_some()
}

/// The parts of a `plain_number`: negative, integer digits, fraction digits, exponent text.
fn parts(text: &str) -> Option<(bool, &str, &str, &str)> {
    let bytes = text.as_bytes();
    let mut at = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            at = 1;
            true
        }
        Some(b'+') => {
            at = 1;
            false
        }
        _ => false,
    };
    let digits_from = |at: usize| bytes[at..].iter().take_while(|b| b.is_ascii_digit()).count() + at;
    let int_end = digits_from(at);
    let integer = &text[at..int_end];
    let mut fraction = "";
    let mut end = int_end;
    if bytes.get(end) == Some(&b'.') {
        let frac_end = digits_from(end + 1);
        fraction = &text[end + 1..frac_end];
        end = frac_end;
    }
    if integer.is_empty() && fraction.is_empty() {
        return None;
    }
    let mut exponent = "";
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let mut exp_at = end + 1;
        if matches!(bytes.get(exp_at), Some(b'+' | b'-')) {
            exp_at += 1;
        }
        let exp_end = digits_from(exp_at);
        if exp_end == exp_at {
            return None;
        }
        exponent = &text[end + 1..exp_end];
        end = exp_end;
    }
    (end == bytes.len()).then_some((negative, integer, fraction, exponent))
}

/// `_decimal`: digits rounded half up to `scale`, NULL beyond `precision`.
fn decimal(value: &Raw<'_>, precision: usize, scale: usize) -> Converted {
    let Raw::Digits(text) = value else {
        return match whole(value) {
            Some(Some(n)) => {
                let digits = n.unsigned_abs().to_string();
                if n != 0 && digits.len() > precision - scale {
                    return Converted::Null;
                }
                let mut out = n.to_string();
                if scale > 0 {
                    out.push('.');
                    out.extend(std::iter::repeat_n('0', scale));
                }
                Converted::Value(Typed::Text(out))
            }
            _ => Converted::Null,
        };
    };
    let Some((negative, integer, fraction, exponent)) = parts(py_strip(text)) else {
        return Converted::Ask;
    };
    // The value is `coefficient` x 10^`exp`.
    let exp: i64 = if exponent.is_empty() {
        0
    } else {
        match exponent.parse::<i64>() {
            Ok(e) if e.abs() <= 1_000_000_000 => e,
            _ => return Converted::Ask,
        }
    } - fraction.len() as i64;
    let coefficient: String = integer.chars().chain(fraction.chars()).collect();
    let coefficient = coefficient.trim_start_matches('0');
    // Digits of the value at the target's scale, rounded half up.
    let shift = exp + scale as i64;
    let scaled: String = if shift >= 0 {
        if coefficient.is_empty() {
            String::new()
        } else {
            if coefficient.len() as i64 + shift > precision as i64 {
                return Converted::Null;
            }
            let mut s = coefficient.to_owned();
            s.extend(std::iter::repeat_n('0', shift as usize));
            s
        }
    } else {
        let dropped = (-shift) as u64;
        let len = coefficient.len() as u64;
        let (kept, first_dropped) = if dropped > len {
            ("", b'0')
        } else {
            let cut = (len - dropped) as usize;
            (&coefficient[..cut], coefficient.as_bytes()[cut])
        };
        let mut digits = kept.as_bytes().to_vec();
        if first_dropped >= b'5' {
            increment(&mut digits);
        }
        String::from_utf8(digits).unwrap_or_default()
    };
    let scaled = scaled.trim_start_matches('0');
    if scaled.len() > precision {
        return Converted::Null;
    }
    let padded = format!("{scaled:0>width$}", width = scale + 1);
    let (int_part, frac_part) = padded.split_at(padded.len() - scale);
    let sign = if negative && !scaled.is_empty() { "-" } else { "" };
    Converted::Value(Typed::Text(if scale > 0 {
        format!("{sign}{int_part}.{frac_part}")
    } else {
        format!("{sign}{int_part}")
    }))
}

/// Adds one to a string of ASCII digits.
fn increment(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, b'1');
}

/// A double as Java's `Double.toString` prints it (`image_values.java_double`).
pub fn java_double(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    let sign = if value < 0.0 { "-" } else { "" };
    // The shortest digits that read back as the value (as Python's repr), and the power of ten of
    // the first one.
    let scientific = format!("{:e}", value.abs());
    let (mantissa, power) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let power: i64 = power.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    let magnitude = value.abs();
    if (1e-3..1e7).contains(&magnitude) {
        if power >= 0 {
            let p = power as usize;
            let int_part: String = if digits.len() > p {
                digits[..=p].to_owned()
            } else {
                format!("{digits:0<width$}", width = p + 1)
            };
            let frac = if digits.len() > p + 1 { &digits[p + 1..] } else { "0" };
            format!("{sign}{int_part}.{frac}")
        } else {
            let zeros = "0".repeat((-power - 1) as usize);
            format!("{sign}0.{zeros}{digits}")
        }
    } else {
        let rest = if digits.len() > 1 { &digits[1..] } else { "0" };
        format!("{sign}{}.{rest}E{power}", &digits[..1])
    }
}

/// Standard base64 with padding (Python's `base64.b64encode`).
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The tombstones' text of a key (`image_values.key_text`): a JSON array of each value's canonical
/// text, as Spark's `to_json` writes it. Floating keys never come here (the fold declines them).
pub fn key_text(key: &[Typed], targets: &[Target]) -> String {
    let mut out = String::from("[");
    for (i, (value, target)) in key.iter().zip(targets).enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        escape_into(&mut out, &canonical(value, *target));
        out.push('"');
    }
    out.push(']');
    out
}

/// One key value's text, the same whatever the width its column is widened to (`image_values._canonical`).
fn canonical(value: &Typed, target: Target) -> String {
    match (value, target) {
        (Typed::Text(text), Target::Decimal(..)) if text.contains('.') => {
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        }
        (Typed::Int(days), Target::Date) => format!("{} 00:00:00", date_text(*days)),
        (Typed::Int(micros), Target::Local) => ntz_text(*micros),
        (Typed::Bytes(bytes), _) => bytes.iter().map(|b| format!("{b:02X}")).collect(),
        (Typed::Bool(b), _) => if *b { "true" } else { "false" }.to_owned(),
        (Typed::Int(n), _) => n.to_string(),
        (Typed::Float(f), _) => java_double(*f),
        (Typed::Text(text), _) => text.clone(),
    }
}

/// `json.dumps(text, ensure_ascii=False)`'s escapes, hex in upper case (`image_values._jackson`).
fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
}

/// A day count as Spark prints a date (`image_values._date_text`): proleptic Gregorian, a year beyond
/// 9999 with `+`, before 0 with `-`.
fn date_text(days: i64) -> String {
    let (year, month, day) = civil(days);
    let shown = if year > 9999 {
        format!("+{year}")
    } else if year < 0 {
        format!("-{:04}", -year)
    } else {
        format!("{year:04}")
    };
    format!("{shown}-{month:02}-{day:02}")
}

/// (year, month, day) of a day count since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Microseconds since 1970-01-01T00:00 as Spark prints a `timestamp_ntz` (`image_values._ntz_text`).
fn ntz_text(micros: i64) -> String {
    let days = micros.div_euclid(86_400_000_000);
    let rest = micros.rem_euclid(86_400_000_000);
    let (seconds, fraction) = (rest / 1_000_000, rest % 1_000_000);
    let mut text = format!(
        "{} {:02}:{:02}:{:02}",
        date_text(days),
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    if fraction != 0 {
        text.push('.');
        text.push_str(format!("{fraction:06}").trim_end_matches('0'));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(c: Converted) -> String {
        match c {
            Converted::Value(Typed::Text(s)) => s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn decimals_round_half_up() {
        assert_eq!(text(decimal(&Raw::Digits("1.005"), 10, 2)), "1.01");
        assert_eq!(text(decimal(&Raw::Digits("-1.004"), 10, 2)), "-1.00");
        assert_eq!(text(decimal(&Raw::Digits("-0.004"), 10, 2)), "0.00");
        assert_eq!(decimal(&Raw::Digits("9.995"), 3, 2), Converted::Null);
        assert_eq!(text(decimal(&Raw::Digits("1e2"), 5, 1)), "100.0");
        assert_eq!(text(decimal(&Raw::Digits(" 12 "), 5, 0)), "12");
        assert_eq!(decimal(&Raw::Digits("1_0"), 5, 0), Converted::Ask);
    }

    #[test]
    fn java_doubles() {
        assert_eq!(java_double(100.0), "100.0");
        assert_eq!(java_double(1e7), "1.0E7");
        assert_eq!(java_double(0.0015), "0.0015");
        assert_eq!(java_double(1.2345e-5), "1.2345E-5");
        assert_eq!(java_double(-1234567.0), "-1234567.0");
    }

    #[test]
    fn base64_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
    }
}
