//! The JSON view of a canonical event (`shared.codec.json_view`), rendered from its Avro record: the
//! one renderer of the view.
//!
//! It reads the event's Avro, never a Python event: `Encoder.json` (encode.rs) writes a
//! `ChangeEvent`'s body and renders it here (`render_body`), `Encoder.json_value` renders one image
//! value (`value`), the record key's values are rendered by `value` too, and `binlake normalize`
//! renders each record value its codec made straight from the single-object bytes (`render`,
//! `_kernel.render_json`). The spelling is orjson's, as the view was first defined by it: compact
//! layout, its string escapes, float spelling and date-time forms; the tests hold it to the golden
//! corpus's expected lines and to hand-written renderings of every value kind
//! (tests/shared/kernel/test_json_view_native.py).

use crate::avro_reader::Reader;
use crate::conversion::civil_from_days;
use crate::json::json_string as escaped;

/// The single-object encoding's marker; the 8-byte schema fingerprint follows it.
pub(crate) const MARKER: [u8; 2] = [0xC3, 0x01];

pub(crate) const OPS: [&str; 7] = ["INSERT", "UPDATE", "DELETE", "SNAPSHOT", "DDL", "TRUNCATE", "UPSERT"];
const SOURCE_OPTIONAL: [(&str, bool); 12] = [
    ("db_type", false),
    ("database", false),
    ("schema", false),
    ("table", false),
    ("tenant", false),
    ("binlog_file", false),
    ("binlog_pos", true),
    ("gtid", false),
    ("scn", false),
    ("checkpoint", false),
    ("transaction_id", false),
    ("sequence", false),
];

/// The JSON view of one record value with schema fingerprint `fingerprint`, or None when the bytes
/// are not such a record (another schema, truncated, trailing bytes).
pub fn render(value: &[u8], fingerprint: &[u8]) -> Option<Vec<u8>> {
    render_body(value.strip_prefix(&MARKER)?.strip_prefix(fingerprint)?)
}

/// The JSON view of an event's bare Avro body (no single-object header: `Encoder.json` renders the
/// body it has just written), or None when the bytes are not one such body.
pub(crate) fn render_body(body: &[u8]) -> Option<Vec<u8>> {
    let mut r = Reader::new(body);
    let mut out = Vec::with_capacity(body.len() * 2 + 256);
    event(&mut r, &mut out)?;
    r.done().then_some(out)
}

fn event(r: &mut Reader<'_>, out: &mut Vec<u8>) -> Option<()> {
    out.extend_from_slice(b"{\"op\":\"");
    out.extend_from_slice(OPS.get(r.index(OPS.len())?)?.as_bytes());
    out.extend_from_slice(b"\",\"source\":{\"format\":");
    string(out, r.str()?);
    for (name, long) in SOURCE_OPTIONAL {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\":");
        if long {
            optional_long(r, out)?;
        } else {
            optional_string(r, out)?;
        }
    }
    out.extend_from_slice(b"},\"order_key\":");
    string(out, r.str()?);
    out.extend_from_slice(b",\"ts_ms\":");
    optional_long(r, out)?;
    out.extend_from_slice(b",\"ingest_ts_ms\":");
    optional_long(r, out)?;
    out.extend_from_slice(b",\"primary_key\":");
    strings(r, out)?;
    out.extend_from_slice(b",\"columns\":[");
    let mut first = true;
    blocks(r, |r| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        column(r, out)
    })?;
    out.extend_from_slice(b"],\"before\":");
    image(r, out)?;
    out.extend_from_slice(b",\"after\":");
    image(r, out)?;
    out.extend_from_slice(b",\"changed_columns\":");
    match r.index(2)? {
        0 => out.extend_from_slice(b"null"),
        _ => strings(r, out)?,
    }
    out.extend_from_slice(b",\"ddl\":");
    match r.index(2)? {
        0 => out.extend_from_slice(b"null"),
        _ => {
            out.extend_from_slice(b"{\"sql\":");
            string(out, r.str()?);
            out.extend_from_slice(b",\"kind\":");
            string(out, r.str()?);
            out.push(b'}');
        }
    }
    out.extend_from_slice(b",\"origin\":{\"topic\":");
    string(out, r.str()?);
    out.extend_from_slice(b",\"partition\":");
    integer(out, r.long()?);
    out.extend_from_slice(b",\"offset\":");
    integer(out, r.long()?);
    out.extend_from_slice(b",\"row\":");
    integer(out, r.long()?);
    out.extend_from_slice(b"}}");
    Some(())
}

/// Each item of an array or map's blocks, read by `item`.
fn blocks<'a>(r: &mut Reader<'a>, mut item: impl FnMut(&mut Reader<'a>) -> Option<()>) -> Option<()> {
    loop {
        let n = r.count()?;
        if n == 0 {
            return Some(());
        }
        for _ in 0..n {
            item(r)?;
        }
    }
}

fn strings(r: &mut Reader<'_>, out: &mut Vec<u8>) -> Option<()> {
    out.push(b'[');
    let mut first = true;
    blocks(r, |r| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        string(out, r.str()?);
        Some(())
    })?;
    out.push(b']');
    Some(())
}

fn column(r: &mut Reader<'_>, out: &mut Vec<u8>) -> Option<()> {
    out.extend_from_slice(b"{\"name\":");
    string(out, r.str()?);
    out.extend_from_slice(b",\"source_type\":");
    optional_string(r, out)?;
    out.extend_from_slice(b",\"logical_type\":");
    string(out, r.str()?);
    out.extend_from_slice(b",\"precision\":");
    optional_long(r, out)?;
    out.extend_from_slice(b",\"scale\":");
    optional_long(r, out)?;
    out.extend_from_slice(b",\"inferred\":");
    boolean(r, out)?;
    out.push(b'}');
    Some(())
}

fn image(r: &mut Reader<'_>, out: &mut Vec<u8>) -> Option<()> {
    if r.index(2)? == 0 {
        out.extend_from_slice(b"null");
        return Some(());
    }
    out.push(b'{');
    let mut first = true;
    blocks(r, |r| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        string(out, r.str()?);
        out.push(b':');
        value(r, out)
    })?;
    out.push(b'}');
    Some(())
}

/// One image value: the union's branch in the schema's order (null, boolean, long, double, string,
/// bytes, BigInteger, Decimal, Date, Time, LocalDateTime, Instant, Unparsed).
pub(crate) fn value(r: &mut Reader<'_>, out: &mut Vec<u8>) -> Option<()> {
    match r.index(13)? {
        0 => out.extend_from_slice(b"null"),
        1 => boolean(r, out)?,
        2 => integer(out, r.long()?),
        3 => float(out, r.double()?),
        4 | 6 | 7 => string(out, r.str()?),
        5 => {
            out.push(b'"');
            base64(out, r.raw()?);
            out.push(b'"');
        }
        8 => {
            out.push(b'"');
            date(out, r.long()?)?;
            out.push(b'"');
        }
        9 => {
            out.push(b'"');
            time(out, r.long()?);
            out.push(b'"');
        }
        branch @ (10 | 11) => {
            out.push(b'"');
            date_time(out, r.long()?)?;
            if branch == 11 {
                out.push(b'Z');
            }
            out.push(b'"');
        }
        _ => {
            out.extend_from_slice(b"{\"unparsed\":");
            string(out, r.str()?);
            out.push(b'}');
        }
    }
    Some(())
}

fn optional_string(r: &mut Reader<'_>, out: &mut Vec<u8>) -> Option<()> {
    match r.index(2)? {
        0 => out.extend_from_slice(b"null"),
        _ => string(out, r.str()?),
    }
    Some(())
}

fn optional_long(r: &mut Reader<'_>, out: &mut Vec<u8>) -> Option<()> {
    match r.index(2)? {
        0 => out.extend_from_slice(b"null"),
        _ => integer(out, r.long()?),
    }
    Some(())
}

fn boolean(r: &mut Reader<'_>, out: &mut Vec<u8>) -> Option<()> {
    match r.raw_byte()? {
        0 => out.extend_from_slice(b"false"),
        1 => out.extend_from_slice(b"true"),
        _ => return None,
    }
    Some(())
}

/// A JSON string: copied as it is when nothing in it needs an escape (a check the compiler vectorizes:
/// nearly every string), else escaped as orjson escapes (`json::json_string`).
fn string(out: &mut Vec<u8>, text: &str) {
    let plain = text.bytes().fold(true, |plain, b| plain & (b >= 0x20) & (b != b'"') & (b != b'\\'));
    if plain {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        escaped(out, text);
    }
}

fn integer(out: &mut Vec<u8>, value: i64) {
    if value < 0 {
        out.push(b'-');
    }
    digits(out, value.unsigned_abs(), 1);
}

/// `value` in decimal, zero-padded to at least `width` digits (no allocation: it runs per value).
fn digits(out: &mut Vec<u8>, mut value: u64, width: usize) {
    let mut buffer = [b'0'; 20];
    let mut start = buffer.len();
    while value > 0 {
        start -= 1;
        buffer[start] = b'0' + (value % 10) as u8;
        value /= 10;
    }
    out.extend_from_slice(&buffer[start.min(buffer.len() - width)..]);
}

/// orjson's spelling of a double: the shortest digits that read back the same, in plain notation
/// when the decimal exponent is in -5..16 (`100.0`, `0.00001`), else scientific (`1e+16`, `1.5e-7`);
/// NaN and the infinities as `null`.
fn float(out: &mut Vec<u8>, value: f64) {
    if !value.is_finite() {
        out.extend_from_slice(b"null");
        return;
    }
    // Rust's `{:e}` is the shortest round-trip form: "-1.2345e-7", "0e0".
    let sci = format!("{value:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    out.extend_from_slice(sign.as_bytes());
    if !(-5..16).contains(&exponent) {
        out.extend_from_slice(mantissa.as_bytes());
        out.push(b'e');
        if exponent > 0 {
            out.push(b'+');
        }
        integer(out, i64::from(exponent));
        return;
    }
    if exponent < 0 {
        out.extend_from_slice(b"0.");
        for _ in 0..(-exponent - 1) {
            out.push(b'0');
        }
        out.extend_from_slice(digits.as_bytes());
        return;
    }
    let point = exponent as usize + 1;
    if digits.len() <= point {
        out.extend_from_slice(digits.as_bytes());
        for _ in digits.len()..point {
            out.push(b'0');
        }
        out.extend_from_slice(b".0");
    } else {
        out.extend_from_slice(&digits.as_bytes()[..point]);
        out.push(b'.');
        out.extend_from_slice(&digits.as_bytes()[point..]);
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (Python's `base64.b64encode`).
fn base64(out: &mut Vec<u8>, data: &[u8]) {
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(BASE64[(n >> 18) as usize & 63]);
        out.push(BASE64[(n >> 12) as usize & 63]);
        out.push(if chunk.len() > 1 { BASE64[(n >> 6) as usize & 63] } else { b'=' });
        out.push(if chunk.len() > 2 { BASE64[n as usize & 63] } else { b'=' });
    }
}

/// The civil date `days` after 1970-01-01, as `YYYY-MM-DD`; None outside
/// Python's years 1-9999 (no Python event holds such a date).
fn date(out: &mut Vec<u8>, days: i64) -> Option<()> {
    let (year, month, day) = civil_from_days(days);
    if !(1..=9999).contains(&year) {
        return None;
    }
    digits(out, year as u64, 4);
    out.push(b'-');
    digits(out, month as u64, 2);
    out.push(b'-');
    digits(out, day as u64, 2);
    Some(())
}

/// A SQL TIME (`SqlTime.isoformat`): `[-]HH:MM:SS[.ffffff]`, hours beyond 23 as they are.
fn time(out: &mut Vec<u8>, micros: i64) {
    if micros < 0 {
        out.push(b'-');
    }
    let all = micros.unsigned_abs();
    let (rest, frac) = (all / 1_000_000, all % 1_000_000);
    let (hours, minutes, seconds) = (rest / 3600, rest / 60 % 60, rest % 60);
    clock(out, hours, minutes, seconds, frac);
}

/// `YYYY-MM-DDTHH:MM:SS[.ffffff]` of microseconds since 1970-01-01T00:00 (orjson's datetime form).
fn date_time(out: &mut Vec<u8>, micros: i64) -> Option<()> {
    let (days, in_day) = (micros.div_euclid(86_400_000_000), micros.rem_euclid(86_400_000_000));
    date(out, days)?;
    let (seconds, frac) = (in_day / 1_000_000, in_day % 1_000_000);
    out.push(b'T');
    clock(out, seconds as u64 / 3600, seconds as u64 / 60 % 60, seconds as u64 % 60, frac as u64);
    Some(())
}

/// `HH:MM:SS[.ffffff]` (hours as many digits as they take, at least two).
fn clock(out: &mut Vec<u8>, hours: u64, minutes: u64, seconds: u64, frac: u64) {
    digits(out, hours, 2);
    out.push(b':');
    digits(out, minutes, 2);
    out.push(b':');
    digits(out, seconds, 2);
    if frac != 0 {
        out.push(b'.');
        digits(out, frac, 6);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spelled(value: f64) -> String {
        let mut out = Vec::new();
        float(&mut out, value);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn floats_as_orjson_spells_them() {
        let cases = [
            (1e20, "1e+20"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e-7, "1.5e-7"),
            (1e-6, "1e-6"),
            (2.5e-5, "0.000025"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (100.0, "100.0"),
            (12345678.9, "12345678.9"),
            (1.2345678901234568e17, "1.2345678901234568e+17"),
            (5e-324, "5e-324"),
            (f64::NAN, "null"),
        ];
        for (value, text) in cases {
            assert_eq!(spelled(value), text, "{value:e}");
        }
    }

    #[test]
    fn dates_and_times() {
        let mut out = Vec::new();
        date(&mut out, 0).unwrap();
        date(&mut out, -719_162).unwrap();
        time(&mut out, -(838 * 3600 + 59 * 60 + 59) * 1_000_000 - 5);
        date_time(&mut out, -1).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "1970-01-010001-01-01-838:59:59.0000051969-12-31T23:59:59.999999");
    }
}
