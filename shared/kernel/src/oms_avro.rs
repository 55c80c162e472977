//! `oms-avro`: OceanBase OMS's DTS `Record` in plain Avro binary (`services/oms_avro/parser.py`,
//! `values.py`) in the fast lane.
//!
//! The schema is fixed (`services/oms_avro/dts_record.avsc`), so the record is walked field by
//! field with `avro_reader::Reader`'s primitives, and each image item is converted as it is read
//! (no decoded tree). Column types come from the MySQL type codes (`TYPE_CODES`, handed over by
//! `services/oms_avro/lane.py`), refined by the first non-null value as `_columns` does. Taken: INSERT, UPDATE,
//! DELETE and INIT records whose items are null, `EmptyObject`, canonical `Integer` texts,
//! `Character` in a UTF-8, ASCII or binary charset, strict `Decimal` texts, finite `Float`s,
//! `Timestamp`s, `DateTime`s and the four object / geometry records. Everything else (DDL,
//! heartbeats and transaction markers, `TimestampWithTimeZone`, other charsets, type codes
//! outside `TYPE_CODES`, a value in a column of unknown type, repeated column names, anything
//! doubtful in the bytes) returns `None` and takes the Python parser.

use std::borrow::Cow;
use std::fmt::Write;

use crate::decline::{self, Stage};
use crate::avro;
use crate::avro_reader::Reader;
use crate::event::{self, Coordinates, Profile, Record};
use crate::json::{self, json_string, Json};
use crate::typed::{self, Entry, Image};
use crate::values::{self, KeyPart, Kind, ZoneReader};

/// `RECORD_VERSION`: the only `Record.version` the parser knows.
const RECORD_VERSION: i64 = 1;
/// `SourceType`'s symbols, in schema order.
const SOURCE_TYPES: [&str; 13] = [
    "MySQL", "Oracle", "SQLServer", "PostgreSQL", "MongoDB", "Redis", "DB2", "PPAS", "DRDS", "HBASE", "HDFS", "FILE",
    "OTHER",
];
/// How many symbols `Operation` has; the row operations' indexes are below.
const OPERATIONS: usize = 17;
/// Branches of an image item's union: null, Integer, Character, Decimal, Float, Timestamp,
/// DateTime, TimestampWithTimeZone, BinaryGeometry, TextGeometry, BinaryObject, TextObject,
/// EmptyObject.
const ITEM_BRANCHES: usize = 13;
/// `INVALID_TIMESTAMP`: OMS's `Timestamp.timestamp` for an invalid MySQL TIMESTAMP.
const INVALID_TIMESTAMP: i64 = -9_223_372_022_400;
/// Micros since the epoch of 0001-01-01T00:00Z and 9999-12-31T23:59:59.999999Z (Python's datetime).
const INSTANT_MIN: i64 = -62_135_596_800_000_000;
const INSTANT_MAX: i64 = 253_402_300_799_999_999;

/// How a type code's column reads a `DateTime` item and refines its logical type: the code sets
/// of `services/oms_avro/values.py` (`YEAR_CODE`, `DATE_CODES`, `TIME_CODES`, `TIMESTAMP_CODES`,
/// `STRING_CODES`, `BLOB_CODES`); `Other` reads a `DateTime` as a local date-time.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Year,
    Date,
    Time,
    Timestamp,
    String,
    Blob,
    Other,
}

impl Family {
    pub fn of(name: &str) -> Option<Family> {
        Some(match name {
            "year" => Family::Year,
            "date" => Family::Date,
            "time" => Family::Time,
            "timestamp" => Family::Timestamp,
            "string" => Family::String,
            "blob" => Family::Blob,
            "other" => Family::Other,
            _ => return None,
        })
    }
}

/// One code of `TYPE_CODES`.
pub struct Code {
    /// The descriptor's `source_type`, `["null", "string"]`-encoded: `mysql:<code>`.
    source_type: Vec<u8>,
    logical: String,
    family: Family,
}

/// The type codes the lane knows, indexed by code (MySQL's are below 256).
pub struct Codes(Vec<Option<Code>>);

impl Codes {
    /// From (code, logical type, family) triples; None for a code beyond 255 or an unknown family.
    pub fn new(entries: Vec<(i64, String, String)>) -> Option<Codes> {
        let mut codes: Vec<Option<Code>> = (0..256).map(|_| None).collect();
        for (code, logical, family) in entries {
            let mut source_type = Vec::new();
            avro::opt_string(&mut source_type, Some(&format!("mysql:{code}")));
            let family = Family::of(&family)?;
            *codes.get_mut(usize::try_from(code).ok()?)? = Some(Code { source_type, logical, family });
        }
        Some(Codes(codes))
    }

    fn get(&self, code: i64) -> Option<&Code> {
        self.0.get(usize::try_from(code).ok()?)?.as_ref()
    }
}

/// One entry of `fields`.
struct Column<'a> {
    name: &'a str,
    code: &'a Code,
}

/// What `_columns` sees of a column's value in one image (the value, or none: null or absent).
#[derive(Clone, Copy, PartialEq)]
enum Seen {
    Nothing,
    Text,
    Bytes,
    /// A `Decimal` item: its precision and scale.
    Decimal(i64, i64),
    Other,
}

/// An image converted: the canonical values (absent columns left out) and what each field held.
struct Converted<'t> {
    image: Image<'t>,
    seen: Vec<Seen>,
}

/// The parts of a DTS `Record` the lane reads, its images converted.
struct Dts<'a> {
    id: i64,
    ts_ms: i64,
    /// `sourcePosition`, `safeSourcePosition`, `sourceTxid`.
    position: &'a str,
    safe_position: &'a str,
    txid: &'a str,
    source_type: usize,
    version: &'a str,
    op: &'static str,
    object_name: Option<&'a str>,
    /// `processTimestamps[0]`, else `bornTimestamp`.
    ingest_ts_ms: Option<i64>,
    pk_uk_info: Option<&'a str>,
    columns: Vec<Column<'a>>,
    before: Option<Converted<'a>>,
    after: Option<Converted<'a>>,
}

pub fn parse(
    raw: &[u8],
    codes: &Codes,
    profile: &Profile,
    at: &Coordinates,
    zoned: Option<ZoneReader>,
) -> Option<Record> {
    let dts = decode(raw, codes, zoned)?;
    decline::at(Stage::Envelope);
    let [database, schema, table] = object_name_parts(dts.object_name)?;
    let table = table?;
    decline::at(Stage::Keys);
    let primary_key = primary_key(dts.pk_uk_info)?;
    let identity = identity(&dts, &primary_key)?;

    let mut key = Vec::with_capacity(64);
    key.push(b'[');
    opt_json_string(&mut key, database.as_deref());
    key.push(b',');
    opt_json_string(&mut key, schema.as_deref());
    key.push(b',');
    json_string(&mut key, &table);
    // A key column absent from the new row of an UPDATE (null in Python's key) declines.
    values::key_values(&mut key, &primary_key, |name, key| identity.get(name)?.key.write(key))?;
    key.push(b']');

    let images = [&dts.before, &dts.after].iter().map(|c| c.as_ref().map_or(0, |c| c.image.buf.len())).sum::<usize>();
    decline::at(Stage::Envelope);
    let mut body = Vec::with_capacity(2 * images + 48 * dts.columns.len() + 256);
    body.extend_from_slice(b"\xc3\x01");
    body.extend_from_slice(&profile.fingerprint);
    avro::op(&mut body, dts.op);
    avro::string(&mut body, &profile.format_id);
    avro::opt_string(&mut body, Some(&db_type(dts.source_type, dts.version)?));
    avro::opt_string(&mut body, database.as_deref());
    avro::opt_string(&mut body, schema.as_deref());
    avro::opt_string(&mut body, Some(&table));
    body.extend_from_slice(&[0; 5]); // tenant, binlog_file, binlog_pos, gtid, scn
    let checkpoint = Some(dts.position).filter(|p| !p.is_empty());
    avro::opt_string(&mut body, checkpoint.or(Some(dts.safe_position).filter(|p| !p.is_empty())));
    avro::opt_string(&mut body, Some(dts.txid).filter(|t| !t.is_empty()));
    avro::opt_string(&mut body, Some(&dts.id.to_string())); // sequence: str(id)
    // `kafka_order_key`: `id` is a delivery sequence of one sync process, not a log position.
    let (major, minor) = event::input_order(at.partition, at.offset)?;
    event::order_key(&mut body, major, minor, 0);
    avro::opt_long(&mut body, Some(dts.ts_ms));
    avro::opt_long(&mut body, dts.ingest_ts_ms);
    avro::strings(&mut body, &primary_key);
    decline::at(Stage::Types);
    write_columns(&mut body, &dts.columns, dts.before.as_ref(), dts.after.as_ref())?;
    typed::write_image(&mut body, dts.before.as_ref().map(|c| &c.image));
    typed::write_image(&mut body, dts.after.as_ref().map(|c| &c.image));
    avro::row_tail::<&str>(&mut body, None, at.topic, at.partition, at.offset, 0);
    let name = format!("{}.{}", database.as_deref().unwrap_or(""), table);
    Some(Record { key, value: body, table: name, op: dts.op, ts_ms: Some(dts.ts_ms) })
}

/// The record, field by field in schema order (then the optional `bornTimestamp`); None for
/// anything but a row change or anything doubtful in the bytes.
fn decode<'a>(raw: &'a [u8], codes: &'a Codes, zoned: Option<ZoneReader>) -> Option<Dts<'a>> {
    let mut r = Reader::new(raw);
    if r.long()? != RECORD_VERSION {
        return None;
    }
    let id = r.long()?;
    let ts_ms = r.long()?.checked_mul(1000)?;
    let (position, safe_position, txid) = (r.str()?, r.str()?, r.str()?);
    let source_type = r.index(SOURCE_TYPES.len())?;
    let version = r.str()?;
    decline::at(Stage::Operation);
    let op: &'static str = match r.index(OPERATIONS)? {
        0 => "INSERT",
        1 => "UPDATE",
        2 => "DELETE",
        16 => "SNAPSHOT", // INIT, the full load
        _ => return None, // DDL, heartbeats, transaction markers: the Python parser
    };
    decline::at(Stage::Read);
    let object_name = match r.index(2)? {
        0 => None,
        _ => Some(r.str()?),
    };
    let process_ts = first_long(&mut r)?;
    let pk_uk_info = pk_uk_info(&mut r)?;
    decline::at(Stage::Types);
    let columns = fields(&mut r, codes)?;
    decline::at(Stage::Values);
    let before = image(&mut r, &columns, zoned)?;
    let after = image(&mut r, &columns, zoned)?;
    // Newer DTS releases append `bornTimestamp`: one long that must end the message.
    decline::at(Stage::Read);
    let born = if r.done() { None } else { Some(r.long()?) };
    if !r.done() {
        return None;
    }
    let ingest_ts_ms = process_ts.or(born);
    Some(Dts {
        id,
        ts_ms,
        position,
        safe_position,
        txid,
        source_type,
        version,
        op,
        object_name,
        ingest_ts_ms,
        pk_uk_info,
        columns,
        before,
        after,
    })
}

/// The image `event_key` reads the key values from (the new row, a DELETE's prior row), once
/// the images fit the operation and the image `require_key_columns` checks has every key column.
fn identity<'d, 'a>(dts: &'d Dts<'a>, primary_key: &[Cow<str>]) -> Option<&'d Image<'a>> {
    let (before, after) = (dts.before.as_ref(), dts.after.as_ref());
    let (required, identity) = match (dts.op, before, after) {
        ("DELETE", Some(before), None) => (before, before),
        ("UPDATE", _, Some(after)) => (before.unwrap_or(after), after),
        ("INSERT" | "SNAPSHOT", None, Some(after)) => (after, after),
        _ => return None, // an image missing, or one too many: a reject
    };
    let complete = primary_key.iter().all(|name| required.image.get(name).is_some());
    complete.then_some(&identity.image)
}

fn opt_json_string(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(t) => json_string(out, t),
        None => out.extend_from_slice(b"null"),
    }
}

/// `processTimestamps` (`["null", {"type": "array", "items": "long"}]`): its first item, if any.
fn first_long(r: &mut Reader) -> Option<Option<i64>> {
    let mut first = None;
    if r.index(2)? == 1 {
        loop {
            let n = r.count()?;
            if n == 0 {
                break;
            }
            for _ in 0..n {
                let stamp = r.long()?;
                first.get_or_insert(stamp);
            }
        }
    }
    Some(first)
}

/// `tags` (a map of strings): the value of `pk_uk_info`, the last one if repeated (a dict's).
fn pk_uk_info<'a>(r: &mut Reader<'a>) -> Option<Option<&'a str>> {
    let mut found = None;
    loop {
        let n = r.count()?;
        if n == 0 {
            break;
        }
        for _ in 0..n {
            let (key, value) = (r.str()?, r.str()?);
            if key == "pk_uk_info" {
                found = Some(value);
            }
        }
    }
    Some(found)
}

/// `fields` as an array of `Field` records of known type codes with distinct names; null, the
/// string branch, an unknown code or a repeated name (one image entry for two fields) declines.
fn fields<'a>(r: &mut Reader<'a>, codes: &'a Codes) -> Option<Vec<Column<'a>>> {
    if r.index(3)? != 2 {
        return None;
    }
    let mut columns: Vec<Column<'a>> = Vec::new();
    loop {
        let n = r.count()?;
        if n == 0 {
            break;
        }
        for _ in 0..n {
            let name = r.str()?;
            let code = codes.get(r.long()?)?;
            columns.push(Column { name, code });
        }
    }
    let repeated = if columns.len() <= 32 {
        columns.iter().enumerate().any(|(i, c)| columns[..i].iter().any(|o| o.name == c.name))
    } else {
        let mut names = std::collections::HashSet::with_capacity(columns.len());
        !columns.iter().all(|c| names.insert(c.name))
    };
    (!repeated).then_some(columns)
}

/// `beforeImages` / `afterImages`: None when null, one item per field; the string branch (DDL
/// text in a row change) or another count of items declines.
fn image<'t>(r: &mut Reader<'t>, columns: &[Column<'t>], zoned: Option<ZoneReader>) -> Option<Option<Converted<'t>>> {
    match r.index(3)? {
        0 => return Some(None),
        1 => return None,
        _ => {}
    }
    let mut converted = Converted {
        image: Image { buf: Vec::with_capacity(32 * columns.len()), entries: Vec::with_capacity(columns.len()) },
        seen: Vec::with_capacity(columns.len()),
    };
    loop {
        let n = r.count()?;
        if n == 0 {
            break;
        }
        for _ in 0..n {
            let column = columns.get(converted.seen.len())?;
            let start = converted.image.buf.len();
            match item(r, column.code.family, &mut converted.image.buf, zoned)? {
                None => converted.seen.push(Seen::Nothing), // EmptyObject NONE: not in the image
                Some((seen, key)) => {
                    converted.seen.push(seen);
                    let end = converted.image.buf.len();
                    converted.image.entries.push(Entry { name: column.name, start, end, key });
                }
            }
        }
    }
    (converted.seen.len() == columns.len()).then_some(Some(converted))
}

/// One image item (`values.convert`) appended to `out` as the canonical value union: Some(None)
/// for an absent value (EmptyObject NONE), None to decline.
fn item<'t>(
    r: &mut Reader<'t>,
    family: Family,
    out: &mut Vec<u8>,
    zoned: Option<ZoneReader>,
) -> Option<Option<(Seen, KeyPart<'t>)>> {
    let no_zone: ZoneReader = &|_: &str| None; // the kinds read here (Int, Decimal) never ask it
    let (seen, key) = match r.index(ITEM_BRANCHES)? {
        0 => {
            out.push(0);
            (Seen::Nothing, KeyPart::Null)
        }
        1 => {
            r.long()?; // precision
            (Seen::Other, values::convert(Kind::Int, r.str()?, out, no_zone)?)
        }
        2 => {
            let charset = r.str()?;
            character(charset, r.raw()?, out)?
        }
        3 => {
            let key = values::convert(Kind::Decimal, r.str()?, out, no_zone)?;
            let (precision, scale) = (r.long()?, r.long()?);
            // Read past 32 bits (as fastavro reads an int), the canonical schema's int cannot hold
            // them: the parser rejects the event (check_event).
            i32::try_from(precision).ok()?;
            i32::try_from(scale).ok()?;
            (Seen::Decimal(precision, scale), key)
        }
        4 => {
            let value = r.double()?;
            r.long()?; // precision
            r.long()?; // scale
            if !value.is_finite() {
                return None;
            }
            out.push(values::DOUBLE);
            out.extend_from_slice(&value.to_le_bytes());
            (Seen::Other, KeyPart::Other)
        }
        5 => {
            let seconds = r.long()?;
            instant(seconds, r.long()?, out)?;
            (Seen::Other, KeyPart::Other)
        }
        6 => {
            let mut parts = [None; 7];
            for part in &mut parts {
                *part = if r.index(2)? == 1 { Some(r.long()?) } else { None };
            }
            (Seen::Other, date_time(&parts, family, out, zoned)?)
        }
        8 | 10 => {
            r.str()?; // the type name
            values::tagged(values::BYTES, r.raw()?, out);
            (Seen::Bytes, KeyPart::Other)
        }
        9 | 11 => {
            r.str()?;
            let text = r.str()?;
            values::tagged(values::STRING, text.as_bytes(), out);
            (Seen::Text, KeyPart::Text(text))
        }
        12 => match r.index(2)? {
            0 => {
                out.push(0); // EmptyObject NULL: a null value
                (Seen::Nothing, KeyPart::Null)
            }
            _ => return Some(None),
        },
        _ => return None, // TimestampWithTimeZone: zone names and offsets stay with Python
    };
    Some(Some((seen, key)))
}

/// `decode_text` for the charsets read here: the UTF-8 family and ASCII as text, `binary` as bytes.
fn character<'t>(charset: &str, raw: &'t [u8], out: &mut Vec<u8>) -> Option<(Seen, KeyPart<'t>)> {
    let is = |name: &str| charset_is(charset, name);
    if is("binary") {
        values::tagged(values::BYTES, raw, out);
        return Some((Seen::Bytes, KeyPart::Other));
    }
    let text = if is("utf8mb4") || is("utf8") || is("utf8mb3") || (is("ascii") && raw.is_ascii()) {
        std::str::from_utf8(raw).ok()?
    } else {
        return None; // latin1 (MySQL's cp1252), GBK...: Python's codecs
    };
    values::tagged(values::STRING, raw, out);
    Some((Seen::Text, KeyPart::Text(text)))
}

/// Whether a charset is `name` (lower-case ASCII) as `decode_text` compares them: case and `-` /
/// `_` ignored. Non-ASCII never matches (`str.lower()` maps some non-ASCII letters to ASCII ones:
/// declined).
fn charset_is(charset: &str, name: &str) -> bool {
    let mut spelled = charset.bytes().filter(|c| !matches!(c, b'-' | b'_')).map(|c| c.to_ascii_lowercase());
    charset.is_ascii() && name.bytes().all(|c| spelled.next() == Some(c)) && spelled.next().is_none()
}

/// `_instant`: OMS's invalid-TIMESTAMP marker kept as its text, else seconds and micros since
/// the epoch within Python's datetime range.
fn instant(seconds: i64, micros: i64, out: &mut Vec<u8>) -> Option<()> {
    if seconds == INVALID_TIMESTAMP {
        values::tagged(values::UNPARSED, seconds.to_string().as_bytes(), out);
        return Some(());
    }
    if !(0..1_000_000).contains(&micros) {
        return None;
    }
    let total = seconds.checked_mul(1_000_000)?.checked_add(micros)?;
    if !(INSTANT_MIN..=INSTANT_MAX).contains(&total) {
        return None;
    }
    values::long_value(values::INSTANT, total, out);
    Some(())
}

/// `_date_time`: a `DateTime` item read by its column's family (year, date, time, date-time;
/// a TIMESTAMP's date-time is a wall clock of the source zone).
fn date_time(
    parts: &[Option<i64>; 7],
    family: Family,
    out: &mut Vec<u8>,
    zoned: Option<ZoneReader>,
) -> Option<KeyPart<'static>> {
    match family {
        Family::Year => {
            let year = parts[0]?;
            out.push(values::LONG);
            avro::long(out, year);
            return Some(KeyPart::Number(year));
        }
        Family::Time => {
            values::long_value(values::TIME, time(parts)?, out);
            return Some(KeyPart::Other);
        }
        _ => {}
    }
    let with_time = family != Family::Date;
    let (branch, n) = match local(parts, with_time)? {
        Local::Invalid(text) => {
            values::tagged(values::UNPARSED, text.as_bytes(), out);
            return Some(KeyPart::Other);
        }
        Local::Real(days) if !with_time => (values::DATE, days),
        Local::Real(micros) if family == Family::Timestamp => match zoned {
            None => (values::INSTANT, micros), // UTC: the wall clock is the instant
            Some(zoned) => (values::INSTANT, zoned(&wall_clock_text(parts))?),
        },
        Local::Real(micros) => (values::LOCAL_DATE_TIME, micros),
    };
    values::long_value(branch, n, out)
}

/// `_local`'s outcome: a real date (days) or date-time (wall-clock micros), or an invalid one's text.
enum Local {
    Real(i64),
    Invalid(String),
}

/// `_local`: year, month and day (and the clock, `with_time`) required; a time of day out of
/// range declines (a reject); an invalid date (MySQL's zero dates...) is kept as `_render`'s
/// text, for parts small enough to render here.
fn local(parts: &[Option<i64>; 7], with_time: bool) -> Option<Local> {
    let (year, month, day) = (parts[0]?, parts[1]?, parts[2]?);
    let mut clock = 0;
    if with_time {
        let (hour, minute, second, micros) = (parts[3]?, parts[4]?, parts[5]?, parts[6].unwrap_or(0));
        if !(0..24).contains(&hour) || !(0..60).contains(&minute) || !(0..60).contains(&second) {
            return None;
        }
        if !(0..1_000_000).contains(&micros) {
            return None;
        }
        clock = ((hour * 60 + minute) * 60 + second) * 1_000_000 + micros;
    }
    if let Some(days) = values::real_date(year, month, day) {
        return Some(Local::Real(if with_time { days * 86_400_000_000 + clock } else { days }));
    }
    // Negative or huge parts render differently (`-001`) or overflow C ints in Python: declined.
    if !(0..=9999).contains(&year) || !(0..=99).contains(&month) || !(0..=99).contains(&day) {
        return None;
    }
    let mut text = format!("{year:04}-{month:02}-{day:02}");
    if with_time {
        text.push(' ');
        clock_text(&mut text, parts);
    }
    Some(Local::Invalid(text))
}

/// `_render`'s time of day: `HH:MM:SS`, then `.ffffff` when `millis` is non-zero.
fn clock_text(text: &mut String, parts: &[Option<i64>; 7]) {
    let part = |i: usize| parts[i].unwrap_or(0);
    let _ = write!(text, "{:02}:{:02}:{:02}", part(3), part(4), part(5));
    if part(6) != 0 {
        let _ = write!(text, ".{:06}", part(6));
    }
}

/// A real date-time as `YYYY-MM-DD HH:MM:SS[.ffffff]`, the form `plan.instant_reader` reads.
fn wall_clock_text(parts: &[Option<i64>; 7]) -> String {
    let part = |i: usize| parts[i].unwrap_or(0);
    let mut text = format!("{:04}-{:02}-{:02} ", part(0), part(1), part(2));
    clock_text(&mut text, parts);
    text
}

/// `_time`: a signed MySQL TIME (negative when any part is) up to 838:59:59.999999, in micros.
fn time(parts: &[Option<i64>; 7]) -> Option<i64> {
    let (hour, minute, second, micros) = (parts[3]?, parts[4]?, parts[5]?, parts[6].unwrap_or(0));
    let negative = hour.min(minute).min(second).min(micros) < 0;
    let (hour, minute, second, micros) =
        (hour.unsigned_abs(), minute.unsigned_abs(), second.unsigned_abs(), micros.unsigned_abs());
    if minute > 59 || second > 59 || micros > 999_999 || hour > 838 {
        return None;
    }
    let total = (((hour * 60 + minute) * 60 + second) * 1_000_000 + micros) as i64;
    Some(if negative { -total } else { total })
}

/// `_object_name` and the row-change reading of its parts: [database, schema, table], a dot
/// inside a name escaped as `\u002E`, empty parts None; no name or more than three parts declines.
fn object_name_parts(text: Option<&str>) -> Option<[Option<Cow<'_, str>>; 3]> {
    let text = text.filter(|t| !t.is_empty())?;
    let parts: Vec<&str> = text.split('.').collect();
    Some(match parts.as_slice() {
        [table] => [None, None, clean(table)],
        [database, table] => [clean(database), None, clean(table)],
        [database, schema, table] => [clean(database), clean(schema), clean(table)],
        _ => return None,
    })
}

/// One part of a name: escaped dots restored (as Python's two `replace` calls), empty -> None.
fn clean(part: &str) -> Option<Cow<'_, str>> {
    let name = if part.contains("\\u002") {
        Cow::Owned(part.replace("\\u002E", ".").replace("\\u002e", "."))
    } else {
        Cow::Borrowed(part)
    };
    Some(name).filter(|n| !n.is_empty())
}

/// `_primary_key`: `{"PRIMARY": [names]}` from `tags.pk_uk_info` (no text, no PRIMARY: none).
/// JSON the lane's reader does not take with certainty (repeated keys, NaN...) declines.
fn primary_key(info: Option<&str>) -> Option<Vec<Cow<'_, str>>> {
    let Some(text) = info.filter(|t| !t.is_empty()) else { return Some(Vec::new()) };
    let Json::Object(members, _) = json::parse(text.as_bytes())? else { return None };
    match members.into_iter().find(|(name, _)| *name == "PRIMARY").map(|(_, value)| value) {
        None | Some(Json::Null) => Some(Vec::new()),
        Some(Json::Array(items)) => items.into_iter().map(|item| if let Json::Str(name) = item { Some(name) } else { None }).collect(),
        Some(_) => None, // not an array of names: a reject
    }
}

/// `_db_type`: `OB_MYSQL` / `OB_ORACLE` for OceanBase (`version` OBMySQL...), else the source type
/// upper-cased. A non-ASCII version declines (Unicode upper-casing).
fn db_type(source_type: usize, version: &str) -> Option<String> {
    if !version.is_ascii() {
        return None;
    }
    let upper = version.to_ascii_uppercase();
    Some(match upper.strip_prefix("OB") {
        Some(rest) => format!("OB_{rest}"),
        None => SOURCE_TYPES[source_type].to_ascii_uppercase(),
    })
}

/// `_columns`: one descriptor per field, its logical type from the code, refined by the first
/// image (after, then before) holding a value: BINARY/VARBINARY (bytes under a string code) and
/// TEXT (text under a BLOB code); a DECIMAL item gives its precision and scale. A value under a
/// code of unknown type (an inferred type in Python) declines.
fn write_columns(
    out: &mut Vec<u8>,
    columns: &[Column],
    before: Option<&Converted>,
    after: Option<&Converted>,
) -> Option<()> {
    if columns.is_empty() {
        out.push(0);
        return Some(());
    }
    avro::long(out, columns.len() as i64);
    for (i, column) in columns.iter().enumerate() {
        let seen_in = |image: Option<&Converted>| image.map_or(Seen::Nothing, |c| c.seen[i]);
        let first = match seen_in(after) {
            Seen::Nothing => seen_in(before),
            seen => seen,
        };
        let code = column.code;
        let logical = match (code.family, first) {
            _ if code.logical == "unknown" && first != Seen::Nothing => return None,
            (Family::String, Seen::Bytes) => "bytes",
            (Family::Blob, Seen::Text) => "string",
            _ => code.logical.as_str(),
        };
        avro::string(out, column.name);
        out.extend_from_slice(&code.source_type);
        avro::string(out, logical);
        match first {
            Seen::Decimal(precision, scale) if logical == "decimal" => {
                avro::opt_long(out, Some(precision));
                avro::opt_long(out, Some(scale));
            }
            _ => out.extend_from_slice(&[0, 0]),
        }
        out.push(0); // inferred: false
    }
    out.push(0);
    Some(())
}
