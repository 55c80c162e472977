//! Canal flat JSON (`services/canal_json/flat.py`, the Canal profile) in the fast lane.
//!
//! Handles INSERT / UPDATE / DELETE / INIT messages of the Canal profile (the
//! message has an `id`; values are strings) whose columns are all declared in
//! `mysqlType`; everything else (DDL, the OMS profile, `sqlType`-only
//! messages, inferred columns, values outside the strict forms of
//! `values.rs`, anything the Python parser would reject) returns `None` and
//! takes the Python parser.

use crate::avro;
use crate::event::{self, Source};
use crate::json::{self, Json};
use crate::values::{self, KeyPart, Kind};

/// What the planner made of one `mysqlType` object.
pub type Plan = values::Plan<Kind>;

/// The fixed parts of every record: the schema fingerprint and the source header.
pub struct Profile {
    pub fingerprint: [u8; 8],
    pub format_id: String,
    pub db_type: String,
}

pub struct Record {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    /// `database.table` as the runtime's table rules and metrics name it (the same for every row).
    pub table: String,
    pub op: &'static str,
    pub ts_ms: Option<i64>,
}

/// The message's `mysqlType` as (name, type text or None) pairs and its raw bytes (the plan cache key).
pub struct TypeMap<'a> {
    pub raw: &'a [u8],
    pub columns: Vec<(String, Option<String>)>,
}

pub enum Outcome<'a> {
    Records(Vec<Record>),
    /// The plan for this type map is unknown: ask the planner, then call again.
    NeedPlan(TypeMap<'a>),
    Decline,
}

const SECONDS_LIMIT: i64 = 100_000_000_000;
const BUILT: &[&str] = &["data", "old", "database", "table", "type", "isDdl", "es", "ts", "id", "gtid", "pkNames"];

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

/// `epoch_ms`: seconds or milliseconds by size.
pub fn epoch_ms(value: i64) -> i64 {
    if value.abs() < SECONDS_LIMIT {
        value * 1000
    } else {
        value
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

/// A converted image: the Avro union bytes of every value in one buffer, and each entry's place.
pub(crate) struct Image<'t> {
    pub(crate) buf: Vec<u8>,
    pub(crate) entries: Vec<Entry<'t>>,
}

pub(crate) struct Entry<'t> {
    pub(crate) name: &'t str,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) key: KeyPart<'t>,
}

impl<'t> Image<'t> {
    pub(crate) fn get(&self, name: &str) -> Option<&Entry<'t>> {
        self.entries.iter().find(|e| e.name == name)
    }

    pub(crate) fn bytes(&self, entry: &Entry<'t>) -> &[u8] {
        &self.buf[entry.start..entry.end]
    }
}

/// `RowTypes.convert` on the strict subset: every column declared, string or null values.
fn convert<'t>(row: &'t Json<'t>, plan: &Plan, zoned: values::ZoneReader) -> Option<Image<'t>> {
    json_image(row, plan, |kind, text, out| values::convert(kind, text, out, zoned))
}

/// A JSON row object converted on the strict subset: every column declared in `plan`, values
/// null or strings, each string read by `text` (the lane's converter of its kind).
pub(crate) fn json_image<'t, K: Copy>(
    row: &'t Json<'t>,
    plan: &values::Plan<K>,
    text: impl Fn(K, &'t str, &mut Vec<u8>) -> Option<KeyPart<'t>>,
) -> Option<Image<'t>> {
    let Json::Object(members, raw) = row else { return None };
    let mut image = Image { buf: Vec::with_capacity(raw.len() + 16), entries: Vec::with_capacity(members.len()) };
    for (index, (name, value)) in members.iter().enumerate() {
        let kind = plan.kind(name, index)?; // undeclared: an inferred column, left to Python
        let start = image.buf.len();
        let key = match value {
            Json::Null => {
                image.buf.push(0);
                KeyPart::Null
            }
            Json::Str(t) => text(kind, t, &mut image.buf)?,
            _ => return None,
        };
        image.entries.push(Entry { name, start, end: image.buf.len(), key });
    }
    Some(image)
}

/// The (name, type text or None) pairs of a `mysqlType` object for the planner; None: not an
/// object of strings and nulls, or empty (the `sqlType` path), left to Python.
pub(crate) fn type_columns(raw_map: &[u8]) -> Option<Vec<(String, Option<String>)>> {
    let Some(Json::Object(members, _)) = json::parse(raw_map) else { return None };
    if members.is_empty() {
        return None;
    }
    let mut columns = Vec::with_capacity(members.len());
    for (name, text) in &members {
        match text {
            Json::Str(t) => columns.push((name.to_string(), Some(t.to_string()))),
            Json::Null => columns.push((name.to_string(), None)),
            _ => return None,
        }
    }
    Some(columns)
}

/// `overlay(after, old)`: after's columns with old's values, then the columns only old has.
pub(crate) fn overlay<'t>(after: &Image<'t>, old: &Image<'t>) -> Image<'t> {
    let mut merged = Image { buf: Vec::with_capacity(after.buf.len() + old.buf.len()), entries: Vec::new() };
    let mut push = |name: &'t str, bytes: &[u8]| {
        let start = merged.buf.len();
        merged.buf.extend_from_slice(bytes);
        merged.entries.push(Entry { name, start, end: merged.buf.len(), key: KeyPart::Other });
    };
    for entry in &after.entries {
        match old.get(entry.name) {
            Some(changed) => push(entry.name, old.bytes(changed)),
            None => push(entry.name, after.bytes(entry)),
        }
    }
    for entry in &old.entries {
        if after.get(entry.name).is_none() {
            push(entry.name, old.bytes(entry));
        }
    }
    merged
}

pub(crate) fn write_image(out: &mut Vec<u8>, image: Option<&Image>) {
    match image {
        None => out.push(0),
        Some(image) => {
            out.push(2);
            if !image.entries.is_empty() {
                avro::long(out, image.entries.len() as i64);
                for entry in &image.entries {
                    avro::string(out, entry.name);
                    out.extend_from_slice(image.bytes(entry));
                }
            }
            out.push(0);
        }
    }
}

/// `%020d.%020d.%06d` for non-negative numbers (`event::order_key` on the flat lanes' i64 parts).
pub(crate) fn order_key(out: &mut Vec<u8>, major: i64, minor: i64, row: usize) {
    event::order_key(out, major as u128, minor as u128, row);
}

/// What every record of a flat (Canal-shaped) message shares: the Avro source header, the
/// record key's opening `[database,null,table`, and the `database.table` name.
pub(crate) fn flat_head(
    profile: &Profile,
    op: &str,
    database: Option<&str>,
    table: &str,
    gtid: Option<&str>,
    id: i64,
) -> (Vec<u8>, Vec<u8>, String) {
    let sequence = id.to_string(); // sequence: str(id)
    let source = Source { gtid, sequence: Some(&sequence), ..Source::of(database, table) };
    let mut head = Vec::with_capacity(64);
    source.write(&mut head, profile, op);
    (head, source.key_head(), source.table_name())
}

pub struct Coordinates<'t> {
    pub topic: &'t str,
    pub partition: i64,
    pub offset: i64,
}

pub fn parse<'a>(
    raw: &'a [u8],
    profile: &Profile,
    at: &Coordinates,
    plan_for: &dyn Fn(&[u8]) -> Option<Option<std::sync::Arc<Plan>>>,
    zoned: values::ZoneReader,
) -> Outcome<'a> {
    match parse_inner(raw, profile, at, plan_for, zoned) {
        Ok(outcome) => outcome,
        Err(()) => Outcome::Decline,
    }
}

/// The message fields the lane reads, found in one pass over the members.
#[derive(Default)]
struct Fields<'d, 'a> {
    id: Option<&'d Json<'a>>,
    kind: Option<&'d Json<'a>>,
    is_ddl: Option<&'d Json<'a>>,
    es: Option<&'d Json<'a>>,
    ts: Option<&'d Json<'a>>,
    database: Option<&'d Json<'a>>,
    table: Option<&'d Json<'a>>,
    gtid: Option<&'d Json<'a>>,
    data: Option<&'d Json<'a>>,
    old: Option<&'d Json<'a>>,
    pk_names: Option<&'d Json<'a>>,
    mysql_type: Option<&'d Json<'a>>,
}

impl<'d, 'a> Fields<'d, 'a> {
    fn of(members: &'d [(std::borrow::Cow<'a, str>, Json<'a>)]) -> Self {
        let mut f = Fields::default();
        for (key, value) in members {
            let slot = match key.as_ref() {
                "id" => &mut f.id,
                "type" => &mut f.kind,
                "isDdl" => &mut f.is_ddl,
                "es" => &mut f.es,
                "ts" => &mut f.ts,
                "database" => &mut f.database,
                "table" => &mut f.table,
                "gtid" => &mut f.gtid,
                "data" => &mut f.data,
                "old" => &mut f.old,
                "pkNames" => &mut f.pk_names,
                "mysqlType" => &mut f.mysql_type,
                _ => continue,
            };
            *slot = Some(value);
        }
        f
    }
}

fn parse_inner<'a>(
    raw: &'a [u8],
    profile: &Profile,
    at: &Coordinates,
    plan_for: &dyn Fn(&[u8]) -> Option<Option<std::sync::Arc<Plan>>>,
    zoned: values::ZoneReader,
) -> Result<Outcome<'a>, ()> {
    // Only the fields read are built; the rest (sqlType, sql...) is checked and skipped.
    let members = json::parse_message(raw, BUILT).ok_or(())?;
    let doc = Fields::of(&members);
    // The Canal profile only: a message without "id" is read with OMS conventions.
    let id = int_field(doc.id)?.ok_or(())?;
    let kind = match doc.kind {
        Some(Json::Str(k)) if k.is_ascii() => k.to_ascii_uppercase(),
        _ => return Err(()),
    };
    let op: &'static str = match kind.as_str() {
        "INSERT" => "INSERT",
        "UPDATE" => "UPDATE",
        "DELETE" => "DELETE",
        "INIT" => "SNAPSHOT",
        _ => return Err(()),
    };
    match doc.is_ddl {
        None | Some(Json::Null) | Some(Json::Bool(false)) => {}
        _ => return Err(()),
    }
    let es_ms = int_field(doc.es)?.map(epoch_ms);
    let ts_ms = int_field(doc.ts)?.map(epoch_ms);
    let database = str_field(doc.database)?.filter(|s| !s.is_empty());
    let table = str_field(doc.table)?.filter(|s| !s.is_empty()).ok_or(())?;
    let gtid = str_field(doc.gtid)?.filter(|s| !s.is_empty());
    // `order_by_input`: the input's Kafka order (a flat message holds no log position).
    let (major, minor) = (at.partition, at.offset);
    if major < 0 || minor < 0 {
        return Err(());
    }
    let rows = match doc.data {
        Some(Json::Array(rows)) if !rows.is_empty() => rows,
        _ => return Err(()),
    };
    if rows.len() > 999_999 {
        return Err(());
    }
    let olds = if op == "UPDATE" {
        match doc.old {
            None | Some(Json::Null) => None,
            Some(Json::Array(olds)) => Some(olds),
            Some(_) => return Err(()),
        }
    } else {
        None
    };
    let primary_key: Vec<&str> = match doc.pk_names {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(names)) => {
            let mut out = Vec::with_capacity(names.len());
            for name in names {
                let Json::Str(n) = name else { return Err(()) };
                out.push(n.as_ref());
            }
            out
        }
        Some(_) => return Err(()),
    };
    let raw_map = match doc.mysql_type {
        Some(Json::Raw(raw_map)) if raw_map.first() == Some(&b'{') => *raw_map,
        _ => return Err(()), // sqlType-only (JDBC codes) or no types: the Python parser
    };
    let plan = match plan_for(raw_map) {
        Some(Some(plan)) => plan,
        Some(None) => return Err(()), // the planner declined this type map
        None => {
            let columns = type_columns(raw_map).ok_or(())?;
            return Ok(Outcome::NeedPlan(TypeMap { raw: raw_map, columns }));
        }
    };

    let (head, key_head, table_name) = flat_head(profile, op, database, table, gtid, id);

    let mut records = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        let converted = convert(row, &plan, zoned).ok_or(())?;
        let (before, after, changed): (Option<Image>, Option<Image>, Option<Vec<&str>>) = if op == "DELETE" {
            (Some(converted), None, None)
        } else {
            let old = olds.and_then(|o| o.get(index)).filter(|o| !matches!(o, Json::Null));
            match old {
                None => (None, Some(converted), None),
                Some(old_row) => {
                    let old_image = convert(old_row, &plan, zoned).ok_or(())?;
                    let changed = old_image.entries.iter().map(|e| e.name).collect();
                    (Some(overlay(&converted, &old_image)), Some(converted), Some(changed))
                }
            }
        };
        let identity = if op == "DELETE" { before.as_ref() } else { after.as_ref() };
        let identity = identity.ok_or(())?;

        // The record key: [database, schema, table, [key values]] as orjson writes it.
        let mut key = Vec::with_capacity(key_head.len() + 32);
        key.extend_from_slice(&key_head);
        // A missing key column: rejected by Python.
        values::key_values(&mut key, &primary_key, |name, key| identity.get(name)?.key.write(key)).ok_or(())?;
        key.push(b']');

        let images = before.as_ref().map_or(0, |i| i.buf.len()) + after.as_ref().map_or(0, |i| i.buf.len());
        let mut body = Vec::with_capacity(head.len() + plan.columns_avro.len() + 2 * images + 256);
        body.extend_from_slice(b"\xc3\x01");
        body.extend_from_slice(&profile.fingerprint);
        body.extend_from_slice(&head);
        order_key(&mut body, major, minor, index);
        avro::opt_long(&mut body, es_ms);
        avro::opt_long(&mut body, ts_ms);
        avro::strings(&mut body, &primary_key);
        body.extend_from_slice(&plan.columns_avro);
        write_image(&mut body, before.as_ref());
        write_image(&mut body, after.as_ref());
        avro::row_tail(&mut body, changed.as_deref(), at.topic, at.partition, at.offset, index as i64);
        records.push(Record { key, value: body, table: table_name.clone(), op, ts_ms: es_ms });
    }
    Ok(Outcome::Records(records))
}
