//! Debezium JSON (`services/debezium_json/parser.py`, JsonConverter with schemas) in the fast lane.
//!
//! Handles `{"schema":S,"payload":P}` change events (op c, u, d, r) of the
//! standard (non-OMS) connectors whose row struct S declares every column of the
//! images; the planner (`services/debezium_json/plan.py`) reads S with the
//! parser's own Connect type mapping and answers a conversion kind per column.
//! With option `primary_key` the record key holds the key columns' values
//! (`key_value`: the kinds whose JSON view the key renders exactly, else decline).
//! The order key follows the connector (`mysql`/`mariadb` binlog position,
//! `postgresql` LSN, any other the input's Kafka order), as the parser's
//! `_position` under option `order=position` (the default; under `order=kafka`
//! the lane is off). A message without its connector's position declines.
//! Everything else (tombstones, schema-less and OMS messages, truncates,
//! schema changes, heartbeats, transaction markers, values outside the strict
//! forms below, anything the Python parser would reject) returns `None` and
//! takes the Python parser.

use std::borrow::{Borrow, Cow};
use std::sync::Arc;

use crate::decline::{self, Stage};
use crate::avro;
use crate::event::{self, epoch_ms, Coordinates, Profile, Record};
use crate::json::{self, json_string, Json};
use crate::values::{self, base64, two, KeyPart};

/// One column's conversion: the codes of `services/debezium_json/plan.py`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// Not read here (geometry, structs, arrays...): a non-null value declines.
    Unsupported,
    /// `int8`..`int64`: a JSON integer within that many bits.
    Int(u32),
    Float,
    Boolean,
    /// Strings, JSON, enums, sets, UUIDs, XML: a JSON string as it is.
    Text,
    /// `bytes`, base64 (Debezium's default `binary.handling.mode`).
    Bytes,
    /// Connect `Decimal`: base64 big-endian two's-complement unscaled bytes, this scale (0-40).
    Decimal(u32),
    /// Days since the epoch.
    Date,
    /// A TIME in this many microseconds per unit (0: nanoseconds, truncated toward zero).
    Time(i64),
    /// A DATETIME wall clock as epoch units (as `Time`).
    LocalTimestamp(i64),
    /// `ZonedTimestamp`: an ISO 8601 UTC string.
    Zoned,
    Year,
    /// `Bits`: a JSON integer, or base64 little-endian bytes.
    Bits,
    /// `VariableScaleDecimal`: `{"scale": n, "value": base64 unscaled bytes}`.
    VariableDecimal,
}

impl Kind {
    pub fn from_code(code: i64, scale: i64) -> Kind {
        match code {
            1 => Kind::Int(8),
            2 => Kind::Int(16),
            3 => Kind::Int(32),
            4 => Kind::Int(64),
            5 => Kind::Float,
            6 => Kind::Boolean,
            7 => Kind::Text,
            8 => Kind::Bytes,
            9 if (0..=40).contains(&scale) => Kind::Decimal(scale as u32),
            10 => Kind::Date,
            11 => Kind::Time(1000),
            12 => Kind::Time(1),
            13 => Kind::Time(0),
            14 => Kind::LocalTimestamp(1000),
            15 => Kind::LocalTimestamp(1),
            16 => Kind::LocalTimestamp(0),
            17 => Kind::Zoned,
            18 => Kind::Year,
            19 => Kind::Bits,
            20 => Kind::VariableDecimal,
            _ => Kind::Unsupported,
        }
    }
}

/// What the planner made of one schema.
pub type Plan = values::Plan<Kind>;

pub enum Outcome<'a> {
    Record(Record),
    /// The schema's plan is unknown: ask the planner with these bytes, then call again.
    NeedPlan(&'a [u8]),
    Decline,
}

const BOOLEAN: u8 = 0x02;
const LONG: u8 = 0x04;
const DOUBLE: u8 = 0x06;
const STRING: u8 = 0x08;
const BYTES: u8 = 0x0a;
const DECIMAL: u8 = 0x0e;
const DATE: u8 = 0x10;
const TIME: u8 = 0x12;
const LOCAL_DATE_TIME: u8 = 0x14;
const INSTANT: u8 = 0x16;

/// Days from 1970-01-01 of 0001-01-01 and 9999-12-31 (Python's date range).
const MIN_DAYS: i64 = -719_162;
const MAX_DAYS: i64 = 2_932_896;
/// Micros from 1970-01-01T00:00 of 0001-01-01T00:00 and 9999-12-31T23:59:59.999999.
const MIN_MICROS: i64 = -62_135_596_800_000_000;
const MAX_MICROS: i64 = 253_402_300_799_999_999;
const ROW_LIMIT: i64 = 1_000_000;
/// `order_key`'s bound for both components (20 digits).
const ORDER_MAX: u128 = 99_999_999_999_999_999_999;

/// A JSON integer in the int64 range (`-?digits`, no fraction or exponent).
fn integer(value: &Json) -> Option<i64> {
    let Json::Number(text) = value else { return None };
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) || digits.len() > 19 {
        return None;
    }
    text.parse().ok()
}

fn long_value(out: &mut Vec<u8>, branch: u8, n: i64) {
    out.push(branch);
    avro::long(out, n);
}

fn micros(n: i64, unit: i64) -> Option<i64> {
    if unit == 0 {
        Some(n / 1000) // nanoseconds, truncated toward zero as `_micros` does
    } else {
        n.checked_mul(unit)
    }
}

/// `Decimal(f"{unscaled}E{-scale}")` through `decimal_text`: for scales 0-40 always plain notation.
fn decimal(text: &str, scale: u32) -> Option<String> {
    if scale > 40 {
        return None;
    }
    let raw = base64(text)?;
    if raw.is_empty() || raw.len() > 16 {
        return None;
    }
    let mut n: i128 = if raw[0] & 0x80 != 0 { -1 } else { 0 };
    for &byte in &raw {
        n = (n << 8) | byte as i128;
    }
    let digits = n.unsigned_abs().to_string();
    let scale = scale as usize;
    let mut plain = String::with_capacity(digits.len() + scale + 3);
    if n < 0 {
        plain.push('-');
    }
    if scale == 0 {
        plain.push_str(&digits);
    } else {
        // At least one digit before the point: 0.0000000123 for 123 at scale 10.
        let padded =
            if digits.len() <= scale { format!("{}{}", "0".repeat(scale + 1 - digits.len()), digits) } else { digits };
        let (int_part, frac) = padded.split_at(padded.len() - scale);
        plain.push_str(int_part);
        plain.push('.');
        plain.push_str(frac);
    }
    Some(plain)
}

/// `VariableScaleDecimal`'s `{"scale": n, "value": base64}`, as `decimal`.
fn variable_decimal(value: &Json) -> Option<String> {
    let Json::Object(members, _) = value else { return None };
    let (Some(Json::Str(text)), Some(scale)) = (member(members, "value"), member(members, "scale")) else {
        return None;
    };
    decimal(text, u32::try_from(integer(scale)?).ok()?)
}

/// `Bits`: a JSON integer, or base64 little-endian bytes below 2^63.
fn bits(value: &Json) -> Option<i64> {
    match value {
        Json::Number(_) => integer(value),
        Json::Str(text) => {
            let raw = base64(text)?;
            if raw.len() > 8 {
                return None;
            }
            let n = raw.iter().rev().fold(0u64, |n, &b| n << 8 | b as u64);
            i64::try_from(n).ok() // wider: not an Avro long, left to Python
        }
        _ => None,
    }
}

/// `YYYY-MM-DDTHH:MM:SS(.f{1,6})?Z` (Debezium's rendering): micros since the epoch.
pub(crate) fn zoned(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b.len() > 27 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let year = two(b, 0)? * 100 + two(b, 2)?;
    let (month, day) = (two(b, 5)?, two(b, 8)?);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if year < 1 || day < 1 || day > month_days {
        return None;
    }
    let (hour, minute, second) = (two(b, 11)?, two(b, 14)?, two(b, 17)?);
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let frac = match &b[19..] {
        [b'Z'] => 0,
        [b'.', digits @ .., b'Z'] if (1..=6).contains(&digits.len()) && digits.iter().all(u8::is_ascii_digit) => {
            (0..6).fold(0i64, |m, i| m * 10 + digits.get(i).map_or(0, |d| (d - b'0') as i64))
        }
        _ => return None,
    };
    let days = values::days_from_civil(year, month, day);
    Some(((days * 24 + hour) * 60 + minute) * 60_000_000 + second * 1_000_000 + frac)
}

/// Append the Avro union bytes of one non-null JSON value read as `kind`; None: decline.
fn convert(kind: Kind, value: &Json, out: &mut Vec<u8>) -> Option<()> {
    match kind {
        Kind::Unsupported => return None,
        Kind::Int(bits) => {
            let n = integer(value)?;
            if bits < 64 && !(-(1i64 << (bits - 1))..(1i64 << (bits - 1))).contains(&n) {
                return None;
            }
            long_value(out, LONG, n);
        }
        Kind::Float => {
            let Json::Number(text) = value else { return None };
            // An integer is Python's float(int) (so "-0" is 0.0); other forms are read correctly rounded.
            let x = if text.bytes().all(|c| c.is_ascii_digit() || c == b'-') {
                integer(value)? as f64
            } else {
                text.parse::<f64>().ok()?
            };
            if !x.is_finite() {
                return None;
            }
            out.push(DOUBLE);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Kind::Boolean => {
            let flag = match value {
                Json::Bool(b) => *b,
                Json::Number("0") => false,
                Json::Number("1") => true,
                _ => return None,
            };
            out.extend_from_slice(&[BOOLEAN, flag as u8]);
        }
        Kind::Text => {
            let Json::Str(text) = value else { return None };
            out.push(STRING);
            avro::string(out, text);
        }
        Kind::Bytes => {
            let Json::Str(text) = value else { return None };
            out.push(BYTES);
            avro::bytes(out, &base64(text)?);
        }
        Kind::Decimal(scale) => {
            let Json::Str(text) = value else { return None };
            out.push(DECIMAL);
            avro::string(out, &decimal(text, scale)?);
        }
        Kind::Date => {
            let days = integer(value)?;
            if !(MIN_DAYS..=MAX_DAYS).contains(&days) {
                return None;
            }
            long_value(out, DATE, days);
        }
        Kind::Time(unit) => long_value(out, TIME, micros(integer(value)?, unit)?),
        Kind::LocalTimestamp(unit) => {
            let m = micros(integer(value)?, unit)?;
            if !(MIN_MICROS..=MAX_MICROS).contains(&m) {
                return None;
            }
            long_value(out, LOCAL_DATE_TIME, m);
        }
        Kind::Zoned => {
            let Json::Str(text) = value else { return None };
            long_value(out, INSTANT, zoned(text)?);
        }
        Kind::Bits => long_value(out, LONG, bits(value)?),
        Kind::VariableDecimal => {
            out.push(DECIMAL);
            avro::string(out, &variable_decimal(value)?);
        }
        Kind::Year => {
            let n = integer(value)?;
            if !(0..=9999).contains(&n) {
                return None;
            }
            long_value(out, LONG, n);
        }
    }
    Some(())
}

/// One member of a JSON object: a name and its value.
pub(crate) type Member<'a> = (Cow<'a, str>, Json<'a>);

/// `RowTypes.convert` + `columns_for` on the strict subset: an image whose columns are all declared.
/// `image` holds the columns (an image object's members, or the columns of a flattened row).
fn write_image<'a, M: Borrow<Member<'a>>>(out: &mut Vec<u8>, image: Option<&[M]>, plan: &Plan) -> Option<()> {
    let Some(columns) = image else {
        out.push(0);
        return Some(());
    };
    out.push(2);
    if !columns.is_empty() {
        avro::long(out, columns.len() as i64);
        for (index, column) in columns.iter().enumerate() {
            let (name, value) = column.borrow();
            let kind = plan.kind(name, index)?; // undeclared: an inferred column, left to Python
            avro::string(out, name);
            match value {
                Json::Null => out.push(0),
                _ => convert(kind, value, out)?,
            }
        }
    }
    out.push(0);
    Some(())
}

/// One key column's value as `records._key_value` renders it (a value `convert` took): Python's
/// plain ints and strs as they are, decimals and bytes as their JSON view's strings (`decimal_text`,
/// base64: canonical, so the text itself). Other kinds (floats, booleans, dates...) decline.
fn key_value(kind: Kind, value: &Json, key: &mut Vec<u8>) -> Option<()> {
    let owned;
    let part = match (kind, value) {
        (_, Json::Null) => KeyPart::Null,
        (Kind::Int(_) | Kind::Year, _) => KeyPart::Number(integer(value)?),
        (Kind::Bits, _) => KeyPart::Number(bits(value)?),
        (Kind::Text | Kind::Bytes, Json::Str(text)) => KeyPart::Text(text),
        (Kind::Decimal(scale), Json::Str(text)) => {
            owned = decimal(text, scale)?;
            KeyPart::Text(&owned)
        }
        (Kind::VariableDecimal, _) => {
            owned = variable_decimal(value)?;
            KeyPart::Text(&owned)
        }
        _ => KeyPart::Other,
    };
    part.write(key)
}

pub(crate) fn member<'d, 'a>(members: &'d [Member<'a>], key: &str) -> Option<&'d Json<'a>> {
    members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// `opt_int` on the forms taken: null, absent or a JSON integer in int64.
pub(crate) fn opt_int(value: Option<&Json>) -> Result<Option<i64>, ()> {
    match value {
        None | Some(Json::Null) => Ok(None),
        Some(v) => integer(v).map(Some).ok_or(()),
    }
}

/// `blank_to_none(opt_str(...))` on the forms taken: null, absent or a JSON string.
pub(crate) fn opt_str<'d>(value: Option<&'d Json>) -> Result<Option<&'d str>, ()> {
    match value {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Str(text)) => Ok(Some(text.as_ref()).filter(|t| !t.is_empty())),
        Some(_) => Err(()),
    }
}

/// The order key's space for a connector (`_BINLOG_CONNECTORS`, `_LSN_CONNECTORS` in the parser).
enum Space {
    Binlog,
    Lsn,
    Kafka,
}

/// `connector.lower()` in the parser (the lane declines non-ASCII connectors before this).
fn space(connector: Option<&str>) -> Space {
    match connector {
        Some(c) if c.eq_ignore_ascii_case("mysql") || c.eq_ignore_ascii_case("mariadb") => Space::Binlog,
        Some(c) if c.eq_ignore_ascii_case("postgresql") => Space::Lsn,
        _ => Space::Kafka,
    }
}

/// `binlog_index`: the trailing digits of the file name (ASCII names only: `\d` is Unicode in Python).
fn binlog_index(file: &str) -> Option<u128> {
    if !file.is_ascii() {
        return None;
    }
    let tail = &file[file.len().saturating_sub(64)..];
    let trimmed = tail.trim_end_matches(|c: char| !c.is_ascii_digit());
    let digits = &trimmed[trimmed.trim_end_matches(|c: char| c.is_ascii_digit()).len()..];
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    digits.parse().ok()
}

/// The event's source, as the parsers of the Debezium family fill it.
#[derive(Default)]
pub(crate) struct Source<'t> {
    pub db_type: Option<String>,
    pub database: Option<&'t str>,
    pub schema: Option<&'t str>,
    pub table: &'t str,
    pub binlog_file: Option<&'t str>,
    pub binlog_pos: Option<i64>,
    pub gtid: Option<&'t str>,
    pub scn: Option<&'t str>,
    pub transaction_id: Option<&'t str>,
    pub sequence: Option<&'t str>,
}

/// One row change of the Debezium family (one event per message), ready to write.
pub(crate) struct Change<'t, 'i, M> {
    pub op: &'static str,
    pub source: Source<'t>,
    /// The order key's major and minor components (row 0).
    pub order: (u128, u128),
    pub ts_ms: Option<i64>,
    pub ingest_ts_ms: Option<i64>,
    pub before: Option<&'i [M]>,
    pub after: Option<&'i [M]>,
}

/// The record of a change: the single-object Avro value, and the record key
/// `[database, schema, table, [key values]]` as orjson writes it. None (decline): a key column
/// missing from the identifying image (the new row, else the deleted one: a reject in Python) or
/// not renderable here, or a value outside the strict forms.
pub(crate) fn record<'a, M: Borrow<Member<'a>>>(
    change: &Change<'_, '_, M>,
    profile: &Profile,
    primary_key: &[String],
    plan: &Plan,
    at: &Coordinates,
) -> Option<Record> {
    let source = &change.source;
    decline::at(Stage::Keys);
    let identity = change.after.or(change.before)?;
    let position = |name: &str| identity.iter().position(|m| m.borrow().0 == name);
    if primary_key.iter().any(|name| position(name).is_none()) {
        return None;
    }
    decline::at(Stage::Envelope);
    let (major, minor) = change.order;
    if major > ORDER_MAX || minor > ORDER_MAX {
        return None; // `order_key`'s sortable range: a reject
    }

    let columns = change.before.map_or(0, <[M]>::len) + change.after.map_or(0, <[M]>::len);
    let mut body = Vec::with_capacity(plan.columns_avro.len() + 32 * columns + 256);
    body.extend_from_slice(b"\xc3\x01");
    body.extend_from_slice(&profile.fingerprint);
    avro::op(&mut body, change.op);
    avro::string(&mut body, &profile.format_id);
    avro::opt_string(&mut body, source.db_type.as_deref());
    avro::opt_string(&mut body, source.database);
    avro::opt_string(&mut body, source.schema);
    avro::opt_string(&mut body, Some(source.table));
    body.push(0); // tenant
    avro::opt_string(&mut body, source.binlog_file);
    avro::opt_long(&mut body, source.binlog_pos);
    avro::opt_string(&mut body, source.gtid);
    avro::opt_string(&mut body, source.scn);
    body.push(0); // checkpoint (OMS only)
    avro::opt_string(&mut body, source.transaction_id);
    avro::opt_string(&mut body, source.sequence);
    avro::string(&mut body, &format!("{:020}.{:020}.000000", major, minor));
    avro::opt_long(&mut body, change.ts_ms);
    avro::opt_long(&mut body, change.ingest_ts_ms);
    avro::strings(&mut body, primary_key);
    body.extend_from_slice(&plan.columns_avro);
    decline::at(Stage::Values);
    write_image(&mut body, change.before, plan)?;
    write_image(&mut body, change.after, plan)?;
    // Debezium sends no changed columns; one row per message.
    avro::row_tail::<&str>(&mut body, None, at.topic, at.partition, at.offset, 0);

    let mut key = Vec::with_capacity(64);
    key.push(b'[');
    for (i, part) in [source.database, source.schema, Some(source.table)].iter().enumerate() {
        if i > 0 {
            key.push(b',');
        }
        match part {
            Some(text) => json_string(&mut key, text),
            None => key.extend_from_slice(b"null"),
        }
    }
    decline::at(Stage::Keys);
    values::key_values(&mut key, primary_key, |name, key| {
        let index = position(name)?;
        key_value(plan.kind(name, index)?, &identity[index].borrow().1, key)
    })?;
    key.push(b']');
    let table = format!("{}.{}", source.database.unwrap_or(""), source.table);
    Some(Record { key, value: body, table, op: change.op, ts_ms: change.ts_ms })
}

const HEAD: &[u8] = b"{\"schema\":";
const SEPARATOR: &[u8] = b",\"payload\":";

/// The payload of `raw` if it is laid out exactly as `{"schema":` + `known` + `,"payload":` + P + `}`.
///
/// `known` is a schema this lane read before, so one complete JSON object: objects are
/// self-delimiting, so the schema's value in `raw` is `known` and nothing else, and when P alone
/// is one JSON value, the whole message is the two-member object the full read would find. The
/// schema (most of the bytes) is then compared, not read again (`envelope.py` does the same).
fn known_payload<'a>(raw: &'a [u8], known: &[u8]) -> Option<Json<'a>> {
    let rest = raw.strip_prefix(HEAD)?.strip_prefix(known)?.strip_prefix(SEPARATOR)?;
    json::parse(rest.strip_suffix(b"}")?)
}

/// A schema seen recently (its bytes) with its plan, tried by the shortcut above.
pub type Known = (Arc<[u8]>, Arc<Plan>);
pub type Recent = [Known];
/// The plan of a schema: None not planned yet, Some(None) declined by the planner.
pub type PlanFor<'f> = dyn Fn(&[u8]) -> Option<Option<Arc<Plan>>> + 'f;

/// A JsonConverter message `{"schema":S,...,"payload":P,...}` with S an object first.
pub(crate) struct Envelope<'a> {
    /// S's bytes (the plan cache's key).
    pub schema: &'a [u8],
    pub payload: Json<'a>,
    /// S's plan when S is a schema seen recently (the shortcut: S compared, not read).
    pub plan: Option<Arc<Plan>>,
    /// How many members the message has.
    pub members: usize,
}

/// `raw` as a JsonConverter message with a schema; None: another layout (no schema, so inferred
/// types; `payload` first...), left to the Python parser.
pub(crate) fn envelope<'a>(raw: &'a [u8], known: &Recent) -> Option<Envelope<'a>> {
    for (schema, plan) in known {
        if let Some(payload) = known_payload(raw, schema) {
            let schema = &raw[HEAD.len()..HEAD.len() + schema.len()];
            return Some(Envelope { schema, payload, plan: Some(plan.clone()), members: 2 });
        }
    }
    // The schema is checked and kept as bytes (the plan cache key); only the payload is built.
    let members = json::parse_message(raw, &["payload"])?;
    let count = members.len();
    let mut members = members.into_iter();
    let Some((key, Json::Raw(schema))) = members.next() else { return None };
    if key != "schema" || schema.first() != Some(&b'{') {
        return None;
    }
    let (_, payload) = members.find(|(k, _)| k == "payload")?;
    Some(Envelope { schema, payload, plan: None, members: count })
}

/// One message; `known` are the schemas seen recently (the shortcut above).
/// `primary_key` are option `primary_key`'s column names (`primary_key_option`), maybe none.
pub fn parse<'a>(
    raw: &'a [u8],
    profile: &Profile,
    primary_key: &[String],
    at: &Coordinates,
    known: &Recent,
    plan_for: &PlanFor,
) -> Outcome<'a> {
    parse_inner(raw, profile, primary_key, at, known, plan_for).unwrap_or(Outcome::Decline)
}

fn parse_inner<'a>(
    raw: &'a [u8],
    profile: &Profile,
    primary_key: &[String],
    at: &Coordinates,
    known: &Recent,
    plan_for: &PlanFor,
) -> Result<Outcome<'a>, ()> {
    let Envelope { schema, payload, plan: known_plan, .. } = envelope(raw, known).ok_or(())?;
    decline::at(Stage::Envelope);
    let Json::Object(payload, _) = &payload else { return Err(()) };
    decline::at(Stage::Operation);
    let op: &'static str = match member(payload, "op") {
        Some(Json::Str(k)) => match k.as_ref() {
            "c" => "INSERT",
            "u" => "UPDATE",
            "d" => "DELETE",
            "r" => "SNAPSHOT",
            _ => return Err(()),
        },
        _ => return Err(()),
    };
    decline::at(Stage::Envelope);
    let Some(Json::Object(source, _)) = member(payload, "source") else { return Err(()) };

    // `_is_oms` and the MongoDB reject: both left to the Python parser.
    if matches!(member(source, "name"), Some(Json::Str(name)) if name == "OMS") {
        return Err(());
    }
    let connector = opt_str(member(source, "connector"))?;
    if let Some(c) = connector {
        if !c.is_ascii() || c.to_ascii_uppercase().starts_with("OB_") || c.eq_ignore_ascii_case("mongodb") {
            return Err(());
        }
    }
    let table = opt_str(member(source, "table"))?.ok_or(())?; // else --source-table: the Python parser
    let transaction_id = match member(payload, "transaction") {
        None | Some(Json::Null) => None,
        Some(Json::Object(t, _)) => opt_str(member(t, "id"))?,
        Some(_) => return Err(()),
    };
    let binlog_file = opt_str(member(source, "file"))?;
    let binlog_pos = opt_int(member(source, "pos"))?;
    let header = Source {
        db_type: connector.map(|c| c.to_ascii_uppercase()),
        database: opt_str(member(source, "db"))?,
        schema: opt_str(member(source, "schema"))?,
        table,
        binlog_file,
        binlog_pos,
        gtid: opt_str(member(source, "gtid"))?,
        scn: opt_str(member(source, "scn"))?,
        transaction_id,
        sequence: opt_str(member(source, "sequence"))?,
    };
    // `_source_ts_ms`: 0 means unknown.
    let ts_ms = opt_int(member(source, "ts_ms"))?.filter(|&t| t != 0).map(epoch_ms);
    let ingest_ts_ms = opt_int(member(payload, "ts_ms"))?;
    // `_position`: the key space of the stream's connector, never of which fields this message carries
    // (the lane runs under option order=position, the default, only).
    let order: (u128, u128) = match space(connector) {
        Space::Binlog => {
            // No file or pos: a reject.
            let (Some(file), Some(pos)) = (binlog_file, binlog_pos) else { return Err(()) };
            let row = opt_int(member(source, "row"))?.unwrap_or(0);
            if !(0..ROW_LIMIT).contains(&row) || pos < 0 {
                return Err(());
            }
            (binlog_index(file).ok_or(())?, pos as u128 * ROW_LIMIT as u128 + row as u128)
        }
        Space::Lsn => match opt_int(member(source, "lsn"))? {
            Some(lsn) if lsn >= 0 => (lsn as u128, 0),
            _ => return Err(()), // no lsn: a reject; a negative one is outside the sortable range
        },
        // No log position known for this connector: `kafka_order_key` (never the change time, which can go back).
        Space::Kafka => event::input_order(at.partition, at.offset).ok_or(())?,
    };
    if order.1 > ORDER_MAX {
        return Err(()); // `order_key`'s sortable range: a reject
    }
    decline::at(Stage::Types);
    let plan = match known_plan.map(Some).or_else(|| plan_for(schema)) {
        Some(Some(plan)) => plan,
        Some(None) => return Err(()), // the planner declined this schema
        None => return Ok(Outcome::NeedPlan(schema)),
    };
    decline::at(Stage::Values);
    let image = |name: &str| match member(payload, name) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Object(members, _)) => Ok(Some(members.as_slice())),
        Some(_) => Err(()),
    };
    let (before, after) = match op {
        "DELETE" => (Some(image("before")?.ok_or(())?), None),
        "UPDATE" => (image("before")?, Some(image("after")?.ok_or(())?)),
        _ => (None, Some(image("after")?.ok_or(())?)), // an INSERT's before is ignored
    };
    let change = Change { op, source: header, order, ts_ms, ingest_ts_ms, before, after };
    record(&change, profile, primary_key, &plan, at).map(Outcome::Record).ok_or(())
}
