//! Tencent CKafka's format one (`services/ckafka_v1/parser.py`), DML messages, in the fast lane.
//!
//! `{"BINLOG_NAME", "BINLOG_POS", "DATABASE", "TABLE", "GLOBAL_ID", "NEW_VALUES", "OLD_VALUES",
//! "TIME", "TYPE"}`, one row per message, no column types and no key names: every column is
//! inferred from its value (`UNTYPED`). Takes TYPE I / i / l, U / u, D / d whose values are
//! strings or null (what CKafka writes: a string stays text) and whose `TIME` is a real
//! `yyyyMMddHHmmss` (read in the source zone). Everything else (the Canal-shaped DDL, numbers,
//! booleans and nested values in the images, odd envelope fields, every message the Python
//! parser would reject) returns `None` and takes the Python parser.

use crate::decline::{self, Stage};
use crate::avro;
use crate::event::{self, Coordinates, Profile, Record, Source};
use crate::inferred::{self, Logical};
use crate::json::{self, int_field, str_field, Json};
use crate::typed::{write_image, Entry, Image};
use crate::values::{self, KeyPart, Kind};

/// ms since the epoch of a `TIME` text (already checked to be a real wall clock) in the source
/// zone (None: decline); the lane reads UTC itself and has no reader then.
pub type TimeReader<'z> = Option<&'z dyn Fn(&str) -> Option<i64>>;

const BUILT: &[&str] =
    &["TYPE", "BINLOG_NAME", "BINLOG_POS", "DATABASE", "TABLE", "GLOBAL_ID", "NEW_VALUES", "OLD_VALUES", "TIME"];

#[derive(Default)]
struct Fields<'d, 'a> {
    kind: Option<&'d Json<'a>>,
    binlog_name: Option<&'d Json<'a>>,
    binlog_pos: Option<&'d Json<'a>>,
    database: Option<&'d Json<'a>>,
    table: Option<&'d Json<'a>>,
    global_id: Option<&'d Json<'a>>,
    new_values: Option<&'d Json<'a>>,
    old_values: Option<&'d Json<'a>>,
    time: Option<&'d Json<'a>>,
}

impl<'d, 'a> Fields<'d, 'a> {
    fn of(members: &'d [(std::borrow::Cow<'a, str>, Json<'a>)]) -> Self {
        let mut f = Fields::default();
        for (key, value) in members {
            let slot = match key.as_ref() {
                "TYPE" => &mut f.kind,
                "BINLOG_NAME" => &mut f.binlog_name,
                "BINLOG_POS" => &mut f.binlog_pos,
                "DATABASE" => &mut f.database,
                "TABLE" => &mut f.table,
                "GLOBAL_ID" => &mut f.global_id,
                "NEW_VALUES" => &mut f.new_values,
                "OLD_VALUES" => &mut f.old_values,
                "TIME" => &mut f.time,
                _ => continue,
            };
            *slot = Some(value);
        }
        f
    }
}

/// `UNTYPED.convert` of an image of strings and nulls (text stays text); None: another value.
fn convert<'t>(value: &'t Json<'t>) -> Option<Image<'t>> {
    let Json::Object(members, raw) = value else { return None };
    let mut image = Image { buf: Vec::with_capacity(raw.len()), entries: Vec::with_capacity(members.len()) };
    for (name, value) in members {
        let start = image.buf.len();
        let key = match value {
            Json::Null => {
                image.buf.push(0);
                KeyPart::Null
            }
            Json::Str(text) => values::convert(Kind::Text, text, &mut image.buf, &|_| None)?,
            _ => return None,
        };
        image.entries.push(Entry { name, start, end: image.buf.len(), key });
    }
    Some(image)
}

/// `opt_obj`: an image, None when absent or null (another JSON type: declined).
fn image<'t>(value: Option<&'t Json<'t>>) -> Option<Option<Image<'t>>> {
    match value {
        None | Some(Json::Null) => Some(None),
        Some(object) => convert(object).map(Some),
    }
}

/// `req_int` on `BINLOG_POS`, 0 to int64: a JSON integer or a string of ASCII digits (CKafka
/// sends both); signs, blanks and other digits are left to the Python parser.
fn position(value: Option<&Json>) -> Option<i64> {
    let n = match value? {
        Json::Str(text) if !text.is_empty() && text.len() <= 18 && text.bytes().all(|c| c.is_ascii_digit()) => {
            text.parse().ok()?
        }
        other => int_field(Some(other)).ok()??,
    };
    (n >= 0).then_some(n)
}

/// Absent, null or empty: what `_forbid` lets through.
fn forbidden(image: &Option<Image>) -> Option<()> {
    match image {
        Some(image) if !image.entries.is_empty() => None,
        _ => Some(()),
    }
}

/// `compact_local_to_ms`'s `yyyyMMddHHmmss`, fixed width and a real date-time: ms since
/// 1970-01-01T00:00 of that wall clock. (`strptime` also reads some narrower fields; such texts
/// are not real fixed-width date-times and are declined.)
fn wall_clock_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 14 {
        return None;
    }
    let two = |at: usize| values::two(b, at);
    let days = values::real_date(two(0)? * 100 + two(2)?, two(4)?, two(6)?)?;
    let (hour, minute, second) = (two(8)?, two(10)?, two(12)?);
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000)
}

/// `_time_ms`: no time for an absent, null or empty `TIME`.
fn time_ms(value: Option<&Json>, zoned: TimeReader) -> Option<Option<i64>> {
    let text = match str_field(value).ok()? {
        None | Some("") => return Some(None),
        Some(text) => text,
    };
    let utc = wall_clock_ms(text)?;
    match zoned {
        None => Some(Some(utc)),
        Some(read) => read(text).map(Some),
    }
}

/// A value's column as `inferred_logical` types it: text, or `unknown` for a null.
fn inferred_column<'t>(entry: &Entry<'t>) -> (&'t str, Logical) {
    (entry.name, if matches!(entry.key, KeyPart::Null) { Logical::Unknown } else { Logical::Str })
}

pub fn parse(raw: &[u8], profile: &Profile, at: &Coordinates, zoned: TimeReader) -> Option<Record> {
    let members = json::parse_message(raw, BUILT)?;
    let doc = Fields::of(&members);
    decline::at(Stage::Operation);
    let op: &'static str = match doc.kind {
        Some(Json::Str(kind)) => match kind.as_ref() {
            "I" | "i" | "l" => "INSERT",
            "U" | "u" => "UPDATE",
            "D" | "d" => "DELETE",
            _ => return None, // other spellings, and the Canal-shaped DDL (no TYPE)
        },
        _ => return None,
    };
    decline::at(Stage::Envelope);
    let binlog_name = str_field(doc.binlog_name).ok()??;
    let binlog_pos = position(doc.binlog_pos)?;
    let database = str_field(doc.database).ok()??;
    let database = Some(database).filter(|s| !s.is_empty());
    let table = str_field(doc.table).ok()?.filter(|s| !s.is_empty())?;
    decline::at(Stage::Values);
    let new_values = image(doc.new_values)?;
    let old_values = image(doc.old_values)?;
    // `_need`: the type's images must be there; `_forbid`: the other one absent, null or empty.
    let (before, after) = match op {
        "INSERT" => {
            forbidden(&old_values)?;
            (None, Some(new_values?))
        }
        "DELETE" => {
            forbidden(&new_values)?;
            (Some(old_values?), None)
        }
        _ => (Some(old_values?), Some(new_values?)),
    };
    // Only columns in both images can be judged: one missing from OLD_VALUES is unknown, not
    // changed. Strings and nulls are the same value exactly when their Avro bytes are equal.
    let changed: Option<Vec<&str>> = match (op, &before, &after) {
        ("UPDATE", Some(old), Some(new)) => Some(
            new.entries
                .iter()
                .filter(|e| old.get(e.name).is_some_and(|o| old.bytes(o) != new.bytes(e)))
                .map(|e| e.name)
                .collect(),
        ),
        _ => None,
    };
    decline::at(Stage::Envelope);
    let gtid = str_field(doc.global_id).ok()?.filter(|s| !s.is_empty());
    let ts_ms = time_ms(doc.time, zoned)?;
    // `kafka_order_key`: this format's messages carry no position on DDL, so none uses one.
    let (major, minor) = event::input_order(at.partition, at.offset)?;

    let source = Source {
        binlog_file: Some(binlog_name),
        binlog_pos: Some(binlog_pos),
        gtid,
        ..Source::of(database, table)
    };
    let mut body = Vec::with_capacity(256 + 2 * raw.len());
    body.extend_from_slice(b"\xc3\x01");
    body.extend_from_slice(&profile.fingerprint);
    source.write(&mut body, profile, op);
    event::order_key(&mut body, major, minor, 0);
    avro::opt_long(&mut body, ts_ms);
    body.push(0); // ingest_ts_ms
    body.push(0); // primary_key: format one names no key columns
    // columns_for(after, before): the images' columns typed by their values.
    let entries = after.iter().chain(before.iter()).flat_map(|image| image.entries.iter());
    inferred::write_descriptors(&mut body, entries.map(inferred_column));
    write_image(&mut body, before.as_ref());
    write_image(&mut body, after.as_ref());
    avro::row_tail(&mut body, changed.as_deref(), at.topic, at.partition, at.offset, 0);

    // No key columns: the record key is the table's, [database, schema, table].
    let mut key = source.key_head();
    key.push(b']');
    Some(Record { key, value: body, table: source.table_name(), op, ts_ms })
}
