//! Canal flat JSON (`services/canal_json/flat.py`, the Canal profile) in the fast lane.
//!
//! Handles INSERT / UPDATE / DELETE / INIT messages of the Canal profile (the
//! message has an `id`; values are strings) whose columns are all declared in
//! `mysqlType`; everything else (DDL, the OMS profile, `sqlType`-only
//! messages, inferred columns, values outside the strict forms of
//! `values.rs`, anything the Python parser would reject) returns `None` and
//! takes the Python parser.

use std::borrow::Cow;

use crate::avro;
use crate::json::{self, Json};
use crate::values::{self, KeyPart, Kind, Value};

/// What the planner made of one `mysqlType` object.
pub struct Plan {
    pub names: Vec<String>,
    pub kinds: Vec<Kind>,
    /// The Avro `columns` field (the descriptors array), as the Python writer encodes it.
    pub columns_avro: Vec<u8>,
}

impl Plan {
    fn kind(&self, name: &str) -> Option<Kind> {
        self.names.iter().position(|n| n == name).map(|i| self.kinds[i])
    }
}

/// The fixed parts of every record: the schema fingerprint and the source header.
pub struct Profile {
    pub fingerprint: [u8; 8],
    pub format_id: String,
    pub db_type: String,
}

pub struct Record {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    /// `database.table` as the runtime's table rules and metrics name it.
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
const ORDER_MAX: i64 = i64::MAX; // order_key's own bound (10**20 - 1) is above any i64

fn int_field(doc: &Json, key: &str) -> Result<Option<i64>, ()> {
    match doc.get(key) {
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

fn str_field<'d>(doc: &'d Json, key: &str) -> Result<Option<&'d str>, ()> {
    match doc.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Str(text)) => Ok(Some(text.as_ref())),
        Some(_) => Err(()),
    }
}

/// `epoch_ms`: seconds or milliseconds by size.
fn epoch_ms(value: i64) -> i64 {
    if value.abs() < SECONDS_LIMIT {
        value * 1000
    } else {
        value
    }
}

/// orjson's string rendering (short escapes for the usual five, `\u00XX` for other controls).
fn json_string(out: &mut Vec<u8>, text: &str) {
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

type Image<'a> = Vec<(Cow<'a, str>, Value)>;

/// `RowTypes.convert` on the strict subset: every column declared, string or null values.
fn convert<'a>(row: &Json<'a>, plan: &Plan) -> Option<Image<'a>> {
    let Json::Object(members, _) = row else { return None };
    let mut image = Vec::with_capacity(members.len());
    for (name, value) in members {
        let kind = plan.kind(name)?; // undeclared: an inferred column, left to Python
        let converted = match value {
            Json::Null => values::null(),
            Json::Str(text) => values::convert(kind, text)?,
            _ => return None,
        };
        image.push((name.clone(), converted));
    }
    Some(image)
}

fn lookup<'i, 'a>(image: &'i Image<'a>, name: &str) -> Option<&'i Value> {
    image.iter().find(|(n, _)| n == name).map(|(_, v)| v)
}

fn write_image(out: &mut Vec<u8>, image: Option<&Image>) {
    match image {
        None => out.push(0),
        Some(entries) => {
            out.push(2);
            if !entries.is_empty() {
                avro::long(out, entries.len() as i64);
                for (name, value) in entries {
                    avro::string(out, name);
                    out.extend_from_slice(&value.avro);
                }
            }
            out.push(0);
        }
    }
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
    plan_for: &dyn Fn(&[u8]) -> Option<Option<std::rc::Rc<Plan>>>,
) -> Outcome<'a> {
    match parse_inner(raw, profile, at, plan_for) {
        Ok(outcome) => outcome,
        Err(()) => Outcome::Decline,
    }
}

fn parse_inner<'a>(
    raw: &'a [u8],
    profile: &Profile,
    at: &Coordinates,
    plan_for: &dyn Fn(&[u8]) -> Option<Option<std::rc::Rc<Plan>>>,
) -> Result<Outcome<'a>, ()> {
    let doc = json::parse(raw).ok_or(())?;
    let Json::Object(..) = doc else { return Err(()) };
    // The Canal profile only: a message without "id" is read with OMS conventions.
    let id = int_field(&doc, "id")?.ok_or(())?;
    let kind = match doc.get("type") {
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
    match doc.get("isDdl") {
        None | Some(Json::Null) | Some(Json::Bool(false)) => {}
        _ => return Err(()),
    }
    let es_ms = int_field(&doc, "es")?.map(epoch_ms);
    let ts_ms = int_field(&doc, "ts")?.map(epoch_ms);
    let database = str_field(&doc, "database")?.filter(|s| !s.is_empty());
    let table = str_field(&doc, "table")?.filter(|s| !s.is_empty()).ok_or(())?;
    let gtid = str_field(&doc, "gtid")?.filter(|s| !s.is_empty());
    let (major, minor) = (es_ms.unwrap_or(0), id);
    if !(0..=ORDER_MAX).contains(&major) || !(0..=ORDER_MAX).contains(&minor) {
        return Err(());
    }
    let rows = match doc.get("data") {
        Some(Json::Array(rows)) if !rows.is_empty() => rows,
        _ => return Err(()),
    };
    if rows.len() > 999_999 {
        return Err(());
    }
    let olds = if op == "UPDATE" {
        match doc.get("old") {
            None | Some(Json::Null) => None,
            Some(Json::Array(olds)) => Some(olds),
            Some(_) => return Err(()),
        }
    } else {
        None
    };
    let primary_key: Vec<&str> = match doc.get("pkNames") {
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
    let type_map = match doc.get("mysqlType") {
        Some(map @ Json::Object(members, raw_map)) if !members.is_empty() => {
            let _ = map;
            (members, *raw_map)
        }
        _ => return Err(()), // sqlType-only (JDBC codes) or no types: the Python parser
    };
    let plan = match plan_for(type_map.1) {
        Some(Some(plan)) => plan,
        Some(None) => return Err(()), // the planner declined this type map
        None => {
            let mut columns = Vec::with_capacity(type_map.0.len());
            for (name, text) in type_map.0 {
                match text {
                    Json::Str(t) => columns.push((name.to_string(), Some(t.to_string()))),
                    Json::Null => columns.push((name.to_string(), None)),
                    _ => return Err(()),
                }
            }
            return Ok(Outcome::NeedPlan(TypeMap { raw: type_map.1, columns }));
        }
    };

    // The header every record of this message shares.
    let mut head = Vec::with_capacity(64);
    let op_index = match op {
        "INSERT" => 0,
        "UPDATE" => 1,
        "DELETE" => 2,
        _ => 3, // SNAPSHOT
    };
    avro::long(&mut head, op_index);
    avro::string(&mut head, &profile.format_id);
    avro::opt_string(&mut head, Some(&profile.db_type));
    avro::opt_string(&mut head, database);
    head.push(0); // schema
    avro::opt_string(&mut head, Some(table));
    head.push(0); // tenant
    head.push(0); // binlog_file
    head.push(0); // binlog_pos
    avro::opt_string(&mut head, gtid);
    head.push(0); // scn
    head.push(0); // checkpoint
    head.push(0); // transaction_id
    avro::opt_string(&mut head, Some(&id.to_string())); // sequence: str(id)

    let mut key_head = Vec::with_capacity(48);
    key_head.push(b'[');
    match database {
        Some(db) => json_string(&mut key_head, db),
        None => key_head.extend_from_slice(b"null"),
    }
    key_head.extend_from_slice(b",null,");
    json_string(&mut key_head, table);
    let table_name = format!("{}.{}", database.unwrap_or(""), table);

    let mut records = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        let converted = convert(row, &plan).ok_or(())?;
        let (before, after, changed): (Option<Image>, Option<Image>, Option<Vec<Cow<str>>>) = if op == "DELETE" {
            (Some(converted), None, None)
        } else {
            let old = olds.and_then(|o| o.get(index)).filter(|o| !matches!(o, Json::Null));
            match old {
                None => (None, Some(converted), None),
                Some(old_row) => {
                    let old_image = convert(old_row, &plan).ok_or(())?;
                    let changed: Vec<Cow<str>> = old_image.iter().map(|(n, _)| n.clone()).collect();
                    // overlay(after, old): after's columns with old's values, then old-only columns.
                    let mut merged: Image = Vec::with_capacity(converted.len() + old_image.len());
                    for (name, value) in &converted {
                        let v = lookup(&old_image, name).unwrap_or(value);
                        merged.push((name.clone(), Value { avro: v.avro.clone(), key: KeyPart::Other }));
                    }
                    for (name, value) in &old_image {
                        if lookup(&converted, name).is_none() {
                            merged.push((name.clone(), Value { avro: value.avro.clone(), key: KeyPart::Other }));
                        }
                    }
                    (Some(merged), Some(converted), Some(changed))
                }
            }
        };
        let identity = if op == "DELETE" { before.as_ref() } else { after.as_ref() };
        let identity = identity.ok_or(())?;

        // The record key: [database, schema, table, [key values]] as orjson writes it.
        let mut key = key_head.clone();
        if !primary_key.is_empty() {
            key.extend_from_slice(b",[");
            for (i, name) in primary_key.iter().enumerate() {
                if i > 0 {
                    key.push(b',');
                }
                let value = lookup(identity, name).ok_or(())?; // a missing key column: rejected by Python
                if value.avro == [0] {
                    key.extend_from_slice(b"null");
                    continue;
                }
                match &value.key {
                    KeyPart::Number(n) => key.extend_from_slice(n.to_string().as_bytes()),
                    KeyPart::Text(t) => json_string(&mut key, t),
                    KeyPart::Other => return Err(()),
                }
            }
            key.push(b']');
        }
        key.push(b']');

        let mut body = Vec::with_capacity(head.len() + plan.columns_avro.len() + 512);
        body.extend_from_slice(b"\xc3\x01");
        body.extend_from_slice(&profile.fingerprint);
        body.extend_from_slice(&head);
        avro::string(&mut body, &format!("{:020}.{:020}.{:06}", major, minor, index));
        avro::opt_long(&mut body, es_ms);
        avro::opt_long(&mut body, ts_ms);
        avro::strings(&mut body, &primary_key);
        body.extend_from_slice(&plan.columns_avro);
        write_image(&mut body, before.as_ref());
        write_image(&mut body, after.as_ref());
        match &changed {
            None => body.push(0),
            Some(names) => {
                body.push(2);
                avro::strings(&mut body, names);
            }
        }
        body.push(0); // ddl
        avro::string(&mut body, at.topic);
        avro::long(&mut body, at.partition);
        avro::long(&mut body, at.offset);
        avro::long(&mut body, index as i64);
        records.push(Record { key, value: body, table: table_name.clone(), op, ts_ms: es_ms });
    }
    Ok(Outcome::Records(records))
}
