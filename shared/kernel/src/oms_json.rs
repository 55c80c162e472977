//! OceanBase OMS JSON serializations in the fast lane: what they share, and "Default" /
//! "DefaultExtendColumnType" (`services/oms_default/parser.py`, `types.py`).
//!
//! OMS writes column values in its text protocol: integers and decimals as JSON
//! numbers, binary as base64, times as text, TIMESTAMP as epoch-seconds text.
//! Default sends no types (every column inferred, `inferred.rs`);
//! DefaultExtendColumnType types the columns named by each image's
//! `__light_type`, read by the planner (`services/oms_default/plan.py`) with the
//! parser's own type words. Taken: INSERT / UPDATE / DELETE rows whose values
//! are in the forms of `typed` below. Declined (the Python parser does them):
//! DDL, heartbeats, an INSERT with a prior image or a DELETE with a new one,
//! typed images mixing declared with undeclared (or null-typed) columns,
//! Oracle-mode types, fractional numbers in envelope fields, and everything
//! the Python parser rejects.

use std::borrow::Cow;
use std::sync::Arc;

use crate::decline::{self, Stage};
use crate::avro;
use crate::event::{self, epoch_ms, Coordinates, Profile, Record};
use crate::inferred::{self, integer_text, push_text, Image, KeyView, Logical};
use crate::json::{self, json_string, Json};
use crate::values::{self, Kind, ZoneReader};

/// A typed column's conversion: the codes of `services/oms_default/plan.py`.
#[derive(Clone, Copy)]
pub enum Col {
    /// `values.rs`'s kinds on strings, plus the JSON numbers and booleans OMS writes for them.
    Std(Kind),
    /// A type word without a converter of its own (`sqltypes.infer`): read as an untyped value.
    Inferred,
    /// JSON: a string as it is, or a nested value as compact JSON text.
    Json,
    /// Binary, base64.
    Base64,
}

const INFERRED_CODE: i64 = 101;
const JSON_CODE: i64 = 102;
const BASE64_CODE: i64 = 103;

impl Col {
    pub fn from_code(code: i64) -> Col {
        match code {
            INFERRED_CODE => Col::Inferred,
            JSON_CODE => Col::Json,
            BASE64_CODE => Col::Base64,
            _ => Col::Std(Kind::from_code(code)),
        }
    }
}

/// What the planner made of one list of (column, type word).
pub type Plan = values::Plan<Col>;
/// The plan of a type list: None not planned yet, Some(None) declined by the planner.
pub type PlanFor<'f> = dyn Fn(&[u8]) -> Option<Option<Arc<Plan>>> + 'f;

pub enum Outcome {
    Record(Record),
    /// The plan of these (column, type word) pairs is unknown: ask the planner (the bytes are
    /// the cache key), then call again.
    NeedPlan(Vec<u8>, Vec<(String, Option<String>)>),
    Decline,
}

const BOOLEAN: u8 = 0x02;
const LONG: u8 = 0x04;
const DOUBLE: u8 = 0x06;
const BYTES: u8 = 0x0a;
const DECIMAL: u8 = 0x0e;
const INSTANT: u8 = 0x16;

/// One non-null value of a typed column, as `RowTypes.convert` converts it on the strict subset:
/// its Avro union bytes and key view (None: decline).
pub fn typed<'t>(col: Col, value: &'t Json<'t>, buf: &mut Vec<u8>, zoned: ZoneReader) -> Option<KeyView<'t>> {
    let key = match (col, value) {
        (Col::Inferred, _) => inferred::inferred(value, buf)?.1,
        (Col::Json, Json::Str(text)) => push_text(buf, 0x08, text),
        (Col::Json, Json::Array(_) | Json::Object(..)) => inferred::nested(value, buf)?,
        (Col::Base64, Json::Str(text)) => {
            buf.push(BYTES);
            avro::bytes(buf, &values::base64(text)?);
            KeyView::Borrowed(text) // its JSON view: the (canonical) base64 text itself
        }
        (Col::Std(kind @ (Kind::InstantUtc | Kind::InstantZoned)), Json::Str(text)) => match values::epoch_micros(text) {
            Some(micros) => long_value(buf, INSTANT, micros),
            None => values::convert(kind, text, buf, zoned)?.into(),
        },
        (Col::Std(kind), Json::Str(text)) => values::convert(kind, text, buf, zoned)?.into(),
        (Col::Std(kind), Json::Number(text)) => number(kind, text, buf)?,
        (Col::Std(Kind::Boolean), Json::Bool(b)) => {
            buf.extend_from_slice(&[BOOLEAN, *b as u8]);
            KeyView::Bool(*b)
        }
        _ => return None,
    };
    Some(key)
}

fn long_value<'t>(buf: &mut Vec<u8>, branch: u8, n: i64) -> KeyView<'t> {
    buf.push(branch);
    avro::long(buf, n);
    KeyView::Other
}

/// A JSON number in a typed column (the converters of `sqltypes` on Python's int or Decimal).
fn number<'t>(kind: Kind, text: &str, buf: &mut Vec<u8>) -> Option<KeyView<'t>> {
    let integer = integer_text(text); // "-0" is not one: Python's 0 would lose its sign
    Some(match kind {
        // `_int`: an int (BigInt beyond int64), as an untyped integer is.
        Kind::Int if integer => inferred::number(text, buf)?.1,
        Kind::Year if integer => {
            let n: i64 = text.parse().ok().filter(|n| (0..=9999).contains(n))?;
            buf.push(LONG);
            avro::long(buf, n);
            KeyView::Number(n)
        }
        // `_decimal`: Decimal(int) prints the integer's digits; Decimal(text) as an untyped number.
        Kind::Decimal if integer => push_text(buf, DECIMAL, text),
        Kind::Decimal => match inferred::number(text, buf)? {
            (Logical::Decimal, key) => key,
            _ => return None,
        },
        // `_float`: float(int) or float(Decimal), both correctly rounded as Rust reads the text.
        // Integers beyond int64 are declined: the fast decoder makes them floats of its own.
        Kind::Float => {
            if text == "-0" || (integer && text.parse::<i64>().is_err()) {
                return None;
            }
            let x: f64 = text.parse().ok().filter(|x: &f64| x.is_finite())?;
            buf.push(DOUBLE);
            buf.extend_from_slice(&x.to_le_bytes());
            KeyView::Other
        }
        // `_boolean` on an int: 0 and 1.
        Kind::Boolean => {
            let flag = match text {
                "0" => false,
                "1" => true,
                _ => return None,
            };
            buf.extend_from_slice(&[BOOLEAN, flag as u8]);
            KeyView::Bool(flag)
        }
        // `_instant_converter`: the number as epoch-seconds text.
        Kind::InstantUtc | Kind::InstantZoned => long_value(buf, INSTANT, values::epoch_micros(text)?),
        _ => return None,
    })
}

/// An image's columns typed by `plan` (every column declared there), `__light_type` left out.
fn typed_image<'t>(
    members: &'t [(Cow<'t, str>, Json<'t>)],
    raw_len: usize,
    plan: &Plan,
    zoned: ZoneReader,
) -> Option<Image<'t>> {
    let mut image = Image::with_capacity(raw_len, members.len());
    for (index, (name, value)) in columns(members).enumerate() {
        let col = plan.kind(name, index)?;
        image.push(name, |buf| {
            let key = match value {
                Json::Null => {
                    buf.push(0);
                    KeyView::Null
                }
                _ => typed(col, value, buf, zoned)?,
            };
            Some((Logical::Unknown, key))
        })?;
    }
    Some(image)
}

/// An untyped image (`UNTYPED.convert`), `__light_type` left out.
fn untyped_image<'t>(members: &'t [(Cow<'t, str>, Json<'t>)], raw_len: usize) -> Option<Image<'t>> {
    let mut image = Image::with_capacity(raw_len, members.len());
    for (name, value) in columns(members) {
        image.push(name, |buf| inferred::inferred(value, buf))?;
    }
    Some(image)
}

const LIGHT_TYPE: &str = "__light_type";

/// An image's column values: its members but `__light_type` (type metadata, never a column).
fn columns<'d, 'a>(members: &'d [(Cow<'a, str>, Json<'a>)]) -> impl Iterator<Item = (&'d str, &'d Json<'a>)> {
    members.iter().filter(|(name, _)| name != LIGHT_TYPE).map(|(name, value)| (name.as_ref(), value))
}

pub(crate) fn member<'d, 'a>(members: &'d [(Cow<'a, str>, Json<'a>)], key: &str) -> Option<&'d Json<'a>> {
    members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// `opt_str` on the forms taken: absent, null, a JSON string, or a JSON integer (Python's
/// `str(int)` is its text; "-0" and fractional numbers, which `str` rewrites, are declined).
pub(crate) fn opt_str<'d>(value: Option<&'d Json>) -> Result<Option<&'d str>, ()> {
    match value {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Str(text)) => Ok(Some(text.as_ref())),
        Some(Json::Number(text)) if integer_text(text) => Ok(Some(text)),
        Some(_) => Err(()),
    }
}

/// `blank_to_none(opt_str(...))`.
pub(crate) fn opt_text<'d>(value: Option<&'d Json>) -> Result<Option<&'d str>, ()> {
    Ok(opt_str(value)?.filter(|t| !t.is_empty()))
}

/// Whether `c` may be one of Python's `str.isspace()` characters (a superset: Rust's Unicode
/// White_Space plus the ASCII separators U+001C..U+001F).
pub(crate) fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `opt_int` on the forms taken: absent, null, or `-?digits{1,18}` as a JSON integer or a string.
pub(crate) fn opt_int(value: Option<&Json>) -> Result<Option<i64>, ()> {
    let text = match value {
        None | Some(Json::Null) => return Ok(None),
        Some(Json::Number(text)) => *text,
        Some(Json::Str(text)) => text.as_ref(),
        Some(_) => return Err(()),
    };
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(());
    }
    text.parse().map(Some).map_err(|_| ())
}

/// A source's names and positions, as the OMS parsers fill `Source` (the others are null).
#[derive(Default)]
pub struct Names<'s> {
    pub db_type: Option<Cow<'s, str>>,
    pub database: Option<&'s str>,
    pub schema: Option<&'s str>,
    pub table: &'s str,
    pub tenant: Option<&'s str>,
    pub scn: Option<&'s str>,
    pub checkpoint: Option<Cow<'s, str>>,
    pub transaction_id: Option<&'s str>,
    pub sequence: Option<Cow<'s, str>>,
}

/// One OMS row event: the record key and the Avro value.
pub struct Event<'e, 't> {
    pub op: &'static str,
    pub names: &'e Names<'e>,
    pub ts_ms: Option<i64>,
    pub ingest_ts_ms: Option<i64>,
    pub primary_key: &'e [&'e str],
    /// The Avro `columns` field; None: every column inferred from the images.
    pub columns: Option<&'e [u8]>,
    pub before: Option<&'e Image<'t>>,
    pub after: Option<&'e Image<'t>>,
    pub changed: Option<&'e [&'e str]>,
}

impl Event<'_, '_> {
    /// The record (None: a key column the key does not render here).
    pub fn record(&self, profile: &Profile, at: &Coordinates) -> Option<Record> {
        let names = self.names;
        let mut body = Vec::with_capacity(512);
        body.extend_from_slice(b"\xc3\x01");
        body.extend_from_slice(&profile.fingerprint);
        avro::op(&mut body, self.op);
        avro::string(&mut body, &profile.format_id);
        avro::opt_string(&mut body, names.db_type.as_deref());
        avro::opt_string(&mut body, names.database);
        avro::opt_string(&mut body, names.schema);
        avro::opt_string(&mut body, Some(names.table));
        avro::opt_string(&mut body, names.tenant);
        body.extend_from_slice(&[0, 0, 0]); // binlog_file, binlog_pos, gtid
        avro::opt_string(&mut body, names.scn);
        avro::opt_string(&mut body, names.checkpoint.as_deref());
        avro::opt_string(&mut body, names.transaction_id);
        avro::opt_string(&mut body, names.sequence.as_deref());
        // `kafka_order_key`: OMS gives no log position on every message (see the parsers).
        decline::at(Stage::Envelope);
        let (major, minor) = event::input_order(at.partition, at.offset)?;
        event::order_key(&mut body, major, minor, 0);
        avro::opt_long(&mut body, self.ts_ms);
        avro::opt_long(&mut body, self.ingest_ts_ms);
        avro::strings(&mut body, self.primary_key);
        match self.columns {
            Some(columns) => body.extend_from_slice(columns),
            None => inferred::write_columns(&mut body, [self.after, self.before]),
        }
        inferred::write_image(&mut body, self.before);
        inferred::write_image(&mut body, self.after);
        avro::row_tail(&mut body, self.changed, at.topic, at.partition, at.offset, 0);

        // The record key: [database, schema, table, [key values]] as orjson writes it.
        let mut key = Vec::with_capacity(64);
        key.push(b'[');
        for (i, part) in [names.database, names.schema, Some(names.table)].iter().enumerate() {
            if i > 0 {
                key.push(b',');
            }
            match part {
                Some(text) => json_string(&mut key, text),
                None => key.extend_from_slice(b"null"),
            }
        }
        decline::at(Stage::Keys);
        let identity = self.after.or(self.before)?;
        values::key_values(&mut key, self.primary_key, |name, key| identity.write_key(key, name))?;
        key.push(b']');
        let table = format!("{}.{}", names.database.unwrap_or(""), names.table);
        Some(Record { key, value: body, table, op: self.op, ts_ms: self.ts_ms })
    }
}

/// `require_key_columns`: every key column in the image (else a reject in Python).
pub(crate) fn has_key_columns(primary_key: &[&str], image: Option<&Image>) -> bool {
    match image {
        None => true,
        Some(image) => primary_key.iter().all(|name| image.get(name).is_some()),
    }
}

// ------------------------------------------------------------------ Default, ExtendColumnType

const OCEANBASE: &[&str] = &["OCEANBASE", "OB_MYSQL", "OB_ORACLE", "OB_IN_ORACLE_MODE"];
const ORACLE_MODE: &[&str] = &["ORACLE", "OB_ORACLE", "OB_IN_ORACLE_MODE"];
const SCHEMA_NAMED: &[&str] = &["ORACLE", "OB_ORACLE", "OB_IN_ORACLE_MODE", "DB2", "DB2_LUW"];
const KEY_SEPARATOR: char = '\u{1}';

/// Default's `dbType`: `blank_to_none(text.strip().upper())` on printable ASCII (else declined).
fn db_type(value: Option<&Json>) -> Result<Option<String>, ()> {
    match opt_str(value)? {
        None | Some("") => Ok(None),
        Some(text) if text.bytes().all(|c| c.is_ascii_graphic()) => Ok(Some(text.to_ascii_uppercase())),
        Some(_) => Err(()),
    }
}

/// `_names`: (tenant, database, schema) from `db`.
fn split_db<'s>(db: Option<&'s str>, db_type: Option<&str>) -> (Option<&'s str>, Option<&'s str>, Option<&'s str>) {
    let mut tenant = None;
    let mut db = db;
    if let (Some(text), Some(kind)) = (db, db_type) {
        if OCEANBASE.contains(&kind) {
            if let Some((head, rest)) = text.split_once('.') {
                tenant = Some(head).filter(|t| !t.is_empty());
                db = Some(rest).filter(|d| !d.is_empty());
            }
        }
    }
    if db_type.is_some_and(|kind| SCHEMA_NAMED.contains(&kind)) {
        (tenant, None, db)
    } else {
        (tenant, db, None)
    }
}

/// An image: absent or null, or an object (the image itself and its members).
type RawImage<'d, 'a> = Option<(&'d Json<'a>, &'d [(Cow<'a, str>, Json<'a>)])>;

fn raw_image<'d, 'a>(value: Option<&'d Json<'a>>) -> Result<RawImage<'d, 'a>, ()> {
    match value {
        None | Some(Json::Null) => Ok(None),
        Some(image @ Json::Object(members, _)) => Ok(Some((image, members))),
        Some(_) => Err(()),
    }
}

/// `split_image`'s types: the image's `__light_type` as (column, type word) pairs.
fn light_types<'d>(image: RawImage<'d, '_>) -> Result<Vec<(&'d str, &'d str)>, ()> {
    let Some(light) = image.and_then(|(_, members)| member(members, LIGHT_TYPE)) else { return Ok(Vec::new()) };
    let entries = match light {
        Json::Null => return Ok(Vec::new()),
        Json::Object(entries, _) => entries,
        _ => return Err(()),
    };
    let mut out = Vec::with_capacity(entries.len());
    for (name, spec) in entries {
        let Json::Object(spec, _) = spec else { return Err(()) };
        match member(spec, "schemaType") {
            None | Some(Json::Null) => {} // no type given: the column is inferred
            Some(Json::Str(word)) if !word.chars().all(py_space) => out.push((name.as_ref(), word.as_ref())),
            _ => return Err(()), // a blank word or another JSON type: a reject
        }
    }
    Ok(out)
}

/// `row_types`' order: the declared columns the images hold, new image first; post's word
/// wins over prev's. Err: the images mix declared and undeclared columns (declined: the
/// descriptors would interleave the plan's and inferred ones).
fn declared_order<'d>(
    images: [RawImage<'d, '_>; 2],
    types: [&[(&'d str, &'d str)]; 2],
) -> Result<Vec<(&'d str, &'d str)>, ()> {
    let mut order: Vec<(&str, &str)> = Vec::with_capacity(types[0].len().max(types[1].len()));
    let mut undeclared = false;
    for (_, members) in images.into_iter().flatten() {
        for (name, _) in columns(members) {
            if order.iter().any(|(seen, _)| *seen == name) {
                continue;
            }
            match types.iter().find_map(|t| t.iter().find(|(n, _)| *n == name).map(|(_, w)| *w)) {
                Some(word) => order.push((name, word)),
                None => undeclared = true,
            }
        }
    }
    if undeclared && !order.is_empty() {
        return Err(());
    }
    Ok(order)
}

/// The plan cache key of a type list: each name and word with its length (no word: u32::MAX).
pub(crate) fn plan_key<'w>(order: impl Iterator<Item = (&'w str, Option<&'w str>)>) -> Vec<u8> {
    let mut key = Vec::with_capacity(512);
    for (name, word) in order {
        for part in [Some(name), word] {
            let len = part.map_or(u32::MAX, |p| p.len() as u32);
            key.extend_from_slice(&len.to_le_bytes());
            key.extend_from_slice(part.unwrap_or_default().as_bytes());
        }
    }
    key
}

/// An image typed by `plan` (every column declared there), or untyped; not an object: a reject.
pub(crate) fn row_image<'t>(value: &'t Json<'t>, plan: Option<&Plan>, zoned: ZoneReader) -> Result<Image<'t>, ()> {
    let Json::Object(members, raw) = value else { return Err(()) };
    match plan {
        Some(plan) => typed_image(members, raw.len(), plan, zoned),
        None => untyped_image(members, raw.len()),
    }
    .ok_or(())
}

/// `if not post` / `if not prev`: the image an op needs, absent or without columns, is a reject.
fn needed<'d, 'a>(raw: RawImage<'d, 'a>) -> Result<&'d Json<'a>, ()> {
    raw.filter(|(_, members)| columns(members).next().is_some()).map(|(image, _)| image).ok_or(())
}

/// The fields of a Default message the lane reads.
#[derive(Default)]
struct Fields<'d, 'a> {
    kind: Option<&'d Json<'a>>,
    meta: Option<&'d Json<'a>>,
    prev: Option<&'d Json<'a>>,
    post: Option<&'d Json<'a>>,
}

const DEFAULT_BUILT: &[&str] = &["recordType", "allMetaData", "prevStruct", "postStruct"];

/// One Default (`extend` false) or DefaultExtendColumnType (`extend` true) message.
pub fn parse_default(
    raw: &[u8],
    profile: &Profile,
    extend: bool,
    at: &Coordinates,
    plan_for: &PlanFor,
    zoned: ZoneReader,
) -> Outcome {
    default_inner(raw, profile, extend, at, plan_for, zoned).unwrap_or(Outcome::Decline)
}

fn default_inner(
    raw: &[u8],
    profile: &Profile,
    extend: bool,
    at: &Coordinates,
    plan_for: &PlanFor,
    zoned: ZoneReader,
) -> Result<Outcome, ()> {
    let members = json::parse_message_exact(raw, DEFAULT_BUILT).ok_or(())?;
    let mut doc = Fields::default();
    for (key, value) in &members {
        let slot = match key.as_ref() {
            "recordType" => &mut doc.kind,
            "allMetaData" => &mut doc.meta,
            "prevStruct" => &mut doc.prev,
            "postStruct" => &mut doc.post,
            _ => continue,
        };
        *slot = Some(value);
    }
    decline::at(Stage::Operation);
    let op: &'static str = match doc.kind {
        Some(Json::Str(kind)) if kind.is_ascii() => match kind.to_ascii_uppercase().as_str() {
            "INSERT" => "INSERT",
            "UPDATE" => "UPDATE",
            "DELETE" => "DELETE",
            _ => return Err(()), // HEARTBEAT, DDL, unknown: the Python parser
        },
        _ => return Err(()),
    };
    decline::at(Stage::Envelope);
    let Some(Json::Object(meta, _)) = doc.meta else { return Err(()) };
    let field = |name: &str| member(meta, name);

    let db_type = db_type(field("dbType"))?;
    let (tenant, database, schema) = split_db(opt_text(field("db"))?, db_type.as_deref());
    let table = opt_text(field("table_name"))?.ok_or(())?;
    let ts_ms = opt_int(field("timestamp"))?.map(epoch_ms);
    let sequence = opt_text(field("storeDataSequence"))?;
    let oracle_mode = db_type.as_deref().is_some_and(|kind| ORACLE_MODE.contains(&kind));
    let names = Names {
        db_type: db_type.map(Cow::Owned),
        database,
        schema,
        table,
        tenant,
        scn: None,
        checkpoint: opt_text(field("checkpoint"))?.map(Cow::Borrowed),
        transaction_id: opt_text(field("uniqueId"))?,
        sequence: sequence.map(Cow::Borrowed),
    };
    decline::at(Stage::Keys);
    let primary_key: Vec<&str> = match opt_str(field("record_primary_key"))? {
        None | Some("") => Vec::new(),
        Some(text) => text.split(KEY_SEPARATOR).collect(),
    };
    if primary_key.iter().any(|name| name.is_empty()) {
        return Err(());
    }

    decline::at(Stage::Envelope);
    let prev = raw_image(doc.prev)?;
    let post = raw_image(doc.post)?;
    // The image this op ignores must be absent: the typed path would read its types and names.
    if (op == "INSERT" && prev.is_some()) || (op == "DELETE" && post.is_some()) {
        return Err(());
    }
    let images = [post, prev];
    decline::at(Stage::Types);
    let types = [light_types(post)?, light_types(prev)?];
    let has_light = images.iter().flatten().any(|(_, members)| member(members, LIGHT_TYPE).is_some());
    if !extend && has_light {
        return Err(()); // Default with __light_type: a wrong_format reject
    }
    // No types for the images' columns: every column inferred, as in Default.
    let order = declared_order(images, [&types[0], &types[1]])?;
    let plan = if order.is_empty() {
        None
    } else {
        if oracle_mode {
            return Err(()); // Oracle-mode DATE is a date-time: not planned here
        }
        let key = plan_key(order.iter().map(|(name, word)| (*name, Some(*word))));
        match plan_for(&key) {
            Some(Some(plan)) => Some(plan),
            Some(None) => return Err(()),
            None => {
                let columns = order.iter().map(|(n, w)| (n.to_string(), Some(w.to_string()))).collect();
                return Ok(Outcome::NeedPlan(key, columns));
            }
        }
    };
    let plan = plan.as_deref();
    decline::at(Stage::Values);
    let before = if op == "INSERT" { None } else { Some(row_image(needed(prev)?, plan, zoned)?) };
    let after = if op == "DELETE" { None } else { Some(row_image(needed(post)?, plan, zoned)?) };
    decline::at(Stage::Keys);
    if !has_key_columns(&primary_key, before.as_ref()) || !has_key_columns(&primary_key, after.as_ref()) {
        return Err(());
    }
    let event = Event {
        op,
        names: &names,
        ts_ms,
        ingest_ts_ms: None,
        primary_key: &primary_key,
        columns: plan.map(|p| p.columns_avro.as_slice()),
        before: before.as_ref(),
        after: after.as_ref(),
        changed: None,
    };
    event.record(profile, at).map(Outcome::Record).ok_or(())
}
