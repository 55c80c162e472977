//! `drs-avro` flat records (`services/drs_avro/parser.py` -> `services/drs_json/parser.py`
//! -> `services/canal_json/flat.py`) in the fast lane.
//!
//! The lane exists only for a user schema that `services/drs_avro/plan.py` accepted: one record whose fields
//! are among the DRS flat names (so the Python parser reads it as the flat shape, never the
//! DTS-like one), each of a type `avro_reader` decodes. Per message it takes INSERT / UPDATE /
//! DELETE / INIT rows whose columns are all declared in `mysqlType` and whose values are null,
//! strings in the strict forms of `values.rs`, longs in integer columns, finite doubles in
//! float columns, bytes or DRS's byte-list text (`[106, 103]`) in binary columns, epoch-seconds
//! text in TIMESTAMP columns (DRS's rendering). Everything else returns `None` and takes the Python parser.

use std::sync::Arc;

use crate::decline::{self, Stage};
use crate::avro;
use crate::avro_reader::{Reader, Ty, Val};
use crate::event::{self, Coordinates, Profile, Record};
use crate::typed::{self, Entry, Image};
use crate::values::{self, KeyPart, Kind};

/// The planner's code for a binary column read from DRS's byte list (`services/drs_json/plan.py`, `BYTES_LIST`).
const BYTES_LIST_CODE: i64 = 100;

#[derive(Clone, Copy)]
pub enum Col {
    Std(Kind),
    /// Binary: an Avro bytes value is the column's bytes (`_plain` renders it as the byte-list
    /// text that the `list` bytes encoding reads back exactly).
    BytesList,
}

impl Col {
    pub fn from_code(code: i64) -> Col {
        if code == BYTES_LIST_CODE {
            Col::BytesList
        } else {
            Col::Std(Kind::from_code(code))
        }
    }
}

/// What the planner made of one `mysqlType` map.
pub type Plan = values::Plan<Col>;

/// The plan of a raw type map: None not planned yet, Some(None) declined by the planner.
pub type PlanFor<'f> = dyn Fn(&[u8]) -> Option<Option<Arc<Plan>>> + 'f;

/// The record's fields the lane reads, by their schema position.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Id,
    Es,
    Ts,
    Database,
    Table,
    Type,
    IsDdl,
    MysqlType,
    PkNames,
    Data,
    Old,
    /// Decoded (so the bytes are checked) but not read: `sql`, `sqlType`.
    Skipped,
}

impl Field {
    pub fn of(name: &str) -> Option<Field> {
        Some(match name {
            "id" => Field::Id,
            "es" => Field::Es,
            "ts" => Field::Ts,
            "database" => Field::Database,
            "table" => Field::Table,
            "type" => Field::Type,
            "isDdl" => Field::IsDdl,
            "mysqlType" => Field::MysqlType,
            "pkNames" => Field::PkNames,
            "data" => Field::Data,
            "old" => Field::Old,
            "sql" | "sqlType" => Field::Skipped,
            _ => return None,
        })
    }
}

pub struct Schema {
    pub fields: Vec<(Field, Ty)>,
}

pub enum Outcome<'a> {
    Records(Vec<Record>),
    /// The plan for this type map is unknown: ask the planner with (raw map, columns), then call again.
    NeedPlan(&'a [u8], Vec<(String, Option<String>)>),
    Decline,
}

pub fn parse<'a>(
    raw: &'a [u8],
    schema: &Schema,
    profile: &Profile,
    at: &Coordinates,
    plan_for: &PlanFor,
    zoned: values::ZoneReader,
) -> Outcome<'a> {
    parse_inner(raw, schema, profile, at, plan_for, zoned).unwrap_or(Outcome::Decline)
}

/// The values of one record, by field.
#[derive(Default)]
struct Doc<'v, 'a> {
    id: Option<&'v Val<'a>>,
    es: Option<&'v Val<'a>>,
    ts: Option<&'v Val<'a>>,
    database: Option<&'v Val<'a>>,
    table: Option<&'v Val<'a>>,
    kind: Option<&'v Val<'a>>,
    is_ddl: Option<&'v Val<'a>>,
    mysql_type: Option<&'v Val<'a>>,
    pk_names: Option<&'v Val<'a>>,
    data: Option<&'v Val<'a>>,
    old: Option<&'v Val<'a>>,
}

fn opt_long(value: Option<&Val>) -> Option<Option<i64>> {
    match value {
        None | Some(Val::Null) => Some(None),
        Some(Val::Long(n)) => Some(Some(*n)),
        _ => None,
    }
}

/// `_name(doc, key, strip=True)` on an Avro value: null, or a string as `strip_name` reads it.
fn name<'a>(value: Option<&Val<'a>>) -> Option<Option<&'a str>> {
    match value {
        None | Some(Val::Null) => Some(None),
        Some(Val::Str(s)) => strip_name(s),
        _ => None,
    }
}

/// `_name`'s text: trailing blanks stripped (DRS's sample has `"table": "test "`), then empty ->
/// None. Python's `rstrip()` also strips Unicode blanks, so a name whose last character left is
/// non-ASCII declines (the outer None) rather than being judged here.
pub(crate) fn strip_name(s: &str) -> Option<Option<&str>> {
    let stripped = s.trim_end_matches(py_blank);
    match stripped.as_bytes().last() {
        None => Some(None),
        Some(&b) if b >= 0x80 => None,
        Some(_) => Some(Some(stripped)),
    }
}

/// `str.isspace()` in ASCII (`\t \n \v \f \r`, `\x1c`-`\x1f` and the space): what Python's
/// `strip()` removes from an ASCII text.
pub(crate) fn py_blank(c: char) -> bool {
    matches!(c, '\t'..='\r' | '\x1c'..=' ')
}

/// `epoch_ms`: seconds or milliseconds by size. `unsigned_abs`, not `abs`: any long arrives here
/// (the JSON lanes see at most 18 digits), and `i64::MIN.abs()` would wrap.
fn epoch_ms(value: i64) -> i64 {
    if value.unsigned_abs() < 100_000_000_000 {
        value * 1000
    } else {
        value
    }
}

/// Rows of `data` / `old`: null or an array of maps.
fn rows<'v, 'a>(value: Option<&'v Val<'a>>) -> Option<&'v [Val<'a>]> {
    match value {
        None | Some(Val::Null) => Some(&[]),
        Some(Val::Array(items)) => Some(items),
        _ => None,
    }
}

/// `from_list_text` on DRS's own rendering `[]` / `[106, -1]`: Java's signed bytes (or unsigned
/// ones up to 255, which Python reads alike) without leading zeros, separated by ", " (other
/// spacing, `+`, `-0`: Python).
fn byte_list(text: &str) -> Option<Vec<u8>> {
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    if inner.is_empty() {
        return Some(Vec::new());
    }
    let mut out = Vec::with_capacity(inner.len() / 3 + 1);
    for item in inner.split(", ") {
        let digits = item.strip_prefix('-').unwrap_or(item);
        let ok = !digits.is_empty() && digits.len() <= 3 && digits.bytes().all(|c| c.is_ascii_digit());
        if !ok || (digits.len() > 1 && digits.starts_with('0')) || item == "-0" {
            return None;
        }
        let n: i16 = item.parse().ok()?;
        if !(-128..=255).contains(&n) {
            return None;
        }
        out.push(n as u8); // `& 0xFF`: -1 is 255
    }
    Some(out)
}

const LONG: u8 = 0x04;
const DOUBLE: u8 = 0x06;
const BYTES: u8 = 0x0a;
const INSTANT: u8 = 0x16;

/// A DRS value text (Avro or JSON string) as `RowTypes.convert` converts it for the column, on
/// the strict subset.
pub(crate) fn text_value<'t>(
    col: Col,
    text: &'t str,
    out: &mut Vec<u8>,
    zoned: values::ZoneReader,
) -> Option<KeyPart<'t>> {
    match col {
        Col::Std(kind @ (Kind::InstantUtc | Kind::InstantZoned)) => match values::epoch_micros(text) {
            Some(micros) => {
                out.push(INSTANT);
                avro::long(out, micros);
                Some(KeyPart::Other)
            }
            None => values::convert(kind, text, out, zoned),
        },
        Col::Std(kind) => values::convert(kind, text, out, zoned),
        Col::BytesList => {
            out.push(BYTES);
            avro::bytes(out, &byte_list(text)?);
            Some(KeyPart::Other)
        }
    }
}

/// One Avro value as `RowTypes.convert` converts `_plain(value)` for the column, on the strict subset.
fn value<'t>(col: Col, v: &'t Val<'t>, out: &mut Vec<u8>, zoned: values::ZoneReader) -> Option<KeyPart<'t>> {
    match (col, v) {
        (_, Val::Null) => {
            out.push(0);
            Some(KeyPart::Null)
        }
        (_, Val::Str(text)) => text_value(col, text, out, zoned),
        (Col::Std(Kind::Int), Val::Long(n)) => {
            out.push(LONG);
            avro::long(out, *n);
            Some(KeyPart::Number(*n))
        }
        // float(Decimal(repr(x))) is x again for a finite double.
        (Col::Std(Kind::Float), Val::Double(x)) if x.is_finite() => {
            out.push(DOUBLE);
            out.extend_from_slice(&x.to_le_bytes());
            Some(KeyPart::Other)
        }
        (Col::BytesList, Val::Bytes(b)) => {
            out.push(BYTES);
            avro::bytes(out, b);
            Some(KeyPart::Other)
        }
        _ => None,
    }
}

/// A row of a DRS flat message, whichever encoding carried it (an Avro map, a JSON object).
pub(crate) trait Row {
    /// A null row (in `old`: no prior image for that row).
    fn is_null(&self) -> bool;
    /// `RowTypes.convert` of the row on the strict subset (None: decline).
    fn image<'t>(&'t self, plan: &Plan, zoned: values::ZoneReader) -> Option<Image<'t>>;
    /// `_changed_columns`: `old`'s columns also in this (new) row whose values differ, in `old`'s
    /// order (DRS's `old` is a full image); None where the lane is unsure.
    fn changed<'t>(&'t self, old: &'t Self) -> Option<Vec<&'t str>>;
}

impl Row for Val<'_> {
    fn is_null(&self) -> bool {
        matches!(self, Val::Null)
    }

    /// Repeated column names (Python keeps the last value) decline.
    fn image<'t>(&'t self, plan: &Plan, zoned: values::ZoneReader) -> Option<Image<'t>> {
        let Val::Map(members, raw) = self else { return None };
        let mut image = Image { buf: Vec::with_capacity(raw.len() + 16), entries: Vec::with_capacity(members.len()) };
        for (index, (name, v)) in members.iter().enumerate() {
            if members[..index].iter().any(|(other, _)| other == name) {
                return None;
            }
            let col = plan.kind(name, index)?; // undeclared: an inferred column, left to Python
            let start = image.buf.len();
            let key = value(col, v, &mut image.buf, zoned)?;
            image.entries.push(Entry { name, start, end: image.buf.len(), key });
        }
        Some(image)
    }

    fn changed<'t>(&'t self, old: &'t Self) -> Option<Vec<&'t str>> {
        let (Val::Map(new_members, _), Val::Map(old_members, _)) = (self, old) else { return None };
        let mut changed = Vec::new();
        for (column, was) in old_members {
            if let Some((_, now)) = new_members.iter().find(|(n, _)| n == column) {
                if differ(now, was)? {
                    changed.push(*column);
                }
            }
        }
        Some(changed)
    }
}

/// `new[name] != value` on two `_plain`ed values; None where the lane is unsure (mixed types).
fn differ(a: &Val, b: &Val) -> Option<bool> {
    Some(match (a, b) {
        (Val::Null, Val::Null) => false,
        (Val::Null, _) | (_, Val::Null) => true,
        (Val::Str(x), Val::Str(y)) => x != y,
        (Val::Long(x), Val::Long(y)) => x != y,
        (Val::Double(x), Val::Double(y)) => x != y,
        (Val::Bytes(x), Val::Bytes(y)) => x != y,
        _ => return None,
    })
}

/// What every row of a DRS flat message shares, read from its envelope.
pub(crate) struct Envelope<'t> {
    pub(crate) op: &'static str,
    /// The DRS event sequence: the order key's major (the input offset is its minor) and
    /// `source.sequence`.
    pub(crate) id: i64,
    pub(crate) es_ms: Option<i64>,
    pub(crate) ts_ms: Option<i64>,
    pub(crate) database: Option<&'t str>,
    pub(crate) table: &'t str,
    pub(crate) gtid: Option<&'t str>,
    pub(crate) primary_key: Vec<&'t str>,
}

/// The records of a DRS flat message (`parse_flat` + `_changed_columns`): `rows` are the images
/// read (a DELETE's deleted rows, else the new rows), `olds` an UPDATE's prior images.
pub(crate) fn records<R: Row>(
    envelope: &Envelope,
    rows: &[R],
    olds: &[R],
    plan: &Plan,
    profile: &Profile,
    at: &Coordinates,
    zoned: values::ZoneReader,
) -> Option<Vec<Record>> {
    let Envelope { op, id, es_ms, ts_ms, database, table, gtid, ref primary_key } = *envelope;
    decline::at(Stage::Envelope);
    // `order_by_id`: DRS's event sequence, then the input offset (for messages sharing an id).
    if id < 0 || at.offset < 0 || rows.is_empty() || rows.len() > 999_999 {
        return None;
    }
    let (head, key_head, table_name) = event::flat_head(profile, op, database, table, gtid, id);

    let mut records = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        decline::at(Stage::Values);
        let converted = row.image(plan, zoned)?;
        let (before, after, changed): (Option<Image>, Option<Image>, Option<Vec<&str>>) = if op == "DELETE" {
            (Some(converted), None, None)
        } else {
            match olds.get(index).filter(|old| !old.is_null()) {
                None => (None, Some(converted), None),
                Some(old_row) => {
                    let old_image = old_row.image(plan, zoned)?;
                    let changed = row.changed(old_row)?;
                    (Some(typed::overlay(&converted, &old_image)), Some(converted), Some(changed))
                }
            }
        };
        decline::at(Stage::Keys);
        let identity = if op == "DELETE" { before.as_ref() } else { after.as_ref() }?;

        // The record key: [database, schema, table, [key values]] as orjson writes it.
        let mut key = Vec::with_capacity(key_head.len() + 32);
        key.extend_from_slice(&key_head);
        // A missing key column: rejected by Python.
        values::key_values(&mut key, primary_key, |column, key| identity.get(column)?.key.write(key))?;
        key.push(b']');

        let images = before.as_ref().map_or(0, |i| i.buf.len()) + after.as_ref().map_or(0, |i| i.buf.len());
        let mut body = Vec::with_capacity(head.len() + plan.columns_avro.len() + 2 * images + 256);
        body.extend_from_slice(b"\xc3\x01");
        body.extend_from_slice(&profile.fingerprint);
        body.extend_from_slice(&head);
        event::flat_order_key(&mut body, id, at.offset, index);
        avro::opt_long(&mut body, es_ms);
        avro::opt_long(&mut body, ts_ms);
        avro::strings(&mut body, primary_key);
        body.extend_from_slice(&plan.columns_avro);
        typed::write_image(&mut body, before.as_ref());
        typed::write_image(&mut body, after.as_ref());
        avro::row_tail(&mut body, changed.as_deref(), at.topic, at.partition, at.offset, index as i64);
        records.push(Record { key, value: body, table: table_name.clone(), op, ts_ms: es_ms });
    }
    Some(records)
}

/// A row op of the flat reader (`_ROW_OPS`) from the message's `type`; None: DDL, INIT_DDL,
/// unknown or non-ASCII types (Python's `upper()` is Unicode-wide), left to Python.
pub(crate) fn row_op(kind: &str) -> Option<&'static str> {
    if !kind.is_ascii() {
        return None;
    }
    Some(match kind.to_ascii_uppercase().as_str() {
        "INSERT" => "INSERT",
        "UPDATE" => "UPDATE",
        "DELETE" => "DELETE",
        "INIT" => "SNAPSHOT",
        _ => return None,
    })
}

fn parse_inner<'a>(
    raw: &'a [u8],
    schema: &Schema,
    profile: &Profile,
    at: &Coordinates,
    plan_for: &PlanFor,
    zoned: values::ZoneReader,
) -> Option<Outcome<'a>> {
    let mut reader = Reader::new(raw);
    let mut decoded = Vec::with_capacity(schema.fields.len());
    for (field, ty) in &schema.fields {
        decoded.push((*field, reader.value(ty)?));
    }
    if !reader.done() {
        return None; // bytes left over: Python rejects the message
    }
    let mut doc = Doc::default();
    for (field, v) in &decoded {
        let slot = match field {
            Field::Id => &mut doc.id,
            Field::Es => &mut doc.es,
            Field::Ts => &mut doc.ts,
            Field::Database => &mut doc.database,
            Field::Table => &mut doc.table,
            Field::Type => &mut doc.kind,
            Field::IsDdl => &mut doc.is_ddl,
            Field::MysqlType => &mut doc.mysql_type,
            Field::PkNames => &mut doc.pk_names,
            Field::Data => &mut doc.data,
            Field::Old => &mut doc.old,
            Field::Skipped => continue,
        };
        *slot = Some(v);
    }

    // The DRS event sequence: required, and the order key's major.
    decline::at(Stage::Envelope);
    let id = opt_long(doc.id)??;
    decline::at(Stage::Operation);
    let op = match doc.kind {
        Some(Val::Str(k)) => row_op(k)?,
        _ => return None,
    };
    match doc.is_ddl {
        None | Some(Val::Null) | Some(Val::Bool(false)) => {}
        _ => return None,
    }
    decline::at(Stage::Envelope);
    let es_ms = opt_long(doc.es)?.map(epoch_ms);
    let ts_ms = opt_long(doc.ts)?.map(epoch_ms);
    let database = name(doc.database)?;
    let table = name(doc.table)??;
    let data = rows(doc.data)?;
    let old = rows(doc.old)?;
    // "either": a DELETE's row is in data, or in old when data is empty.
    let rows = if op == "DELETE" && data.is_empty() { old } else { data };
    let olds = if op == "UPDATE" { old } else { &[] };
    let primary_key: Vec<&str> = match doc.pk_names {
        None | Some(Val::Null) => Vec::new(),
        Some(Val::Array(names)) => {
            let mut out = Vec::with_capacity(names.len());
            for n in names {
                let Val::Str(n) = n else { return None };
                out.push(*n);
            }
            out
        }
        _ => return None,
    };
    decline::at(Stage::Types);
    let Some(Val::Map(type_map, raw_map)) = doc.mysql_type else {
        return None; // no mysqlType: the sqlType (JDBC codes) path
    };
    let plan = match plan_for(raw_map) {
        Some(Some(plan)) => plan,
        Some(None) => return None, // the planner declined this type map
        None => {
            if type_map.is_empty() {
                return None; // an empty mysqlType: the sqlType path
            }
            let mut columns: Vec<(String, Option<String>)> = Vec::with_capacity(type_map.len());
            for (index, (column, text)) in type_map.iter().enumerate() {
                if type_map[..index].iter().any(|(other, _)| other == column) {
                    return None; // a repeated name: Python keeps the last text
                }
                match text {
                    Val::Str(t) => columns.push((column.to_string(), Some(t.to_string()))),
                    Val::Null => columns.push((column.to_string(), None)),
                    _ => return None,
                }
            }
            return Some(Outcome::NeedPlan(raw_map, columns));
        }
    };
    // gtid is not a field of an accepted schema.
    let envelope = Envelope { op, id, es_ms, ts_ms, database, table, gtid: None, primary_key };
    records(&envelope, rows, olds, &plan, profile, at, zoned).map(Outcome::Records)
}
