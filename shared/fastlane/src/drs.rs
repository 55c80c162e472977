//! `drs-avro` flat records (`services/drs_avro/parser.py` -> `services/drs_json/parser.py`
//! -> `services/canal_json/flat.py`) in the fast lane.
//!
//! The lane exists only for a user schema that `plan_drs.py` accepted: one record whose fields
//! are among the DRS flat names (so the Python parser reads it as the flat shape, never the
//! DTS-like one), each of a type `avro_reader` decodes. Per message it takes INSERT / UPDATE /
//! DELETE / INIT rows whose columns are all declared in `mysqlType` and whose values are null,
//! strings in the strict forms of `values.rs`, longs in integer columns, finite doubles in
//! float columns, bytes or DRS's byte-list text (`[106, 103]`) in binary columns, epoch-seconds
//! text in TIMESTAMP columns (DRS's rendering). Everything else returns `None` and takes the Python parser.

use std::sync::Arc;

use crate::avro;
use crate::avro_reader::{Reader, Ty, Val};
use crate::canal::{self, Coordinates, Entry, Image, Profile, Record};
use crate::values::{self, KeyPart, Kind};

/// The planner's code for a binary column read from DRS's byte list (`plan_drs.BYTES_LIST`).
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
    plan_for: &dyn Fn(&[u8]) -> Option<Option<Arc<Plan>>>,
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

/// `_name(doc, key, strip=True)`: trailing blanks stripped (DRS's sample has `"table": "test "`),
/// then empty -> None. Python's `rstrip()` also strips Unicode blanks, so a name whose last
/// character left is non-ASCII declines rather than being judged here.
fn name<'a>(value: Option<&Val<'a>>) -> Option<Option<&'a str>> {
    match value {
        None | Some(Val::Null) => Some(None),
        Some(Val::Str(s)) => {
            // str.isspace() in ASCII: \t \n \v \f \r, \x1c-\x1f and the space.
            let stripped = s.trim_end_matches(|c: char| matches!(c, '\t'..='\r' | '\x1c'..=' '));
            match stripped.as_bytes().last() {
                None => Some(None),
                Some(&b) if b >= 0x80 => None,
                Some(_) => Some(Some(stripped)),
            }
        }
        _ => None,
    }
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

/// `instant_from_epoch_text` on `digits{1,11}(.digits{1,9})?`: micros, the fraction floored.
fn epoch_micros(text: &str) -> Option<i64> {
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

/// `from_list_text` on DRS's own rendering `[]` / `[106, 103]`: unsigned bytes without leading
/// zeros, separated by ", " (signed bytes, other spacing: Python).
fn byte_list(text: &str) -> Option<Vec<u8>> {
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    if inner.is_empty() {
        return Some(Vec::new());
    }
    let mut out = Vec::with_capacity(inner.len() / 3 + 1);
    for item in inner.split(", ") {
        let ok = !item.is_empty() && item.len() <= 3 && item.bytes().all(|c| c.is_ascii_digit());
        if !ok || (item.len() > 1 && item.starts_with('0')) {
            return None;
        }
        out.push(u8::try_from(item.parse::<u16>().ok()?).ok()?);
    }
    Some(out)
}

const LONG: u8 = 0x04;
const DOUBLE: u8 = 0x06;
const BYTES: u8 = 0x0a;
const INSTANT: u8 = 0x16;

/// One value as `RowTypes.convert` converts `_plain(value)` for the column, on the strict subset.
fn value<'t>(col: Col, v: &'t Val<'t>, out: &mut Vec<u8>, zoned: values::ZoneReader) -> Option<KeyPart<'t>> {
    match (col, v) {
        (_, Val::Null) => {
            out.push(0);
            Some(KeyPart::Null)
        }
        (Col::Std(kind @ (Kind::InstantUtc | Kind::InstantZoned)), Val::Str(text)) => match epoch_micros(text) {
            Some(micros) => {
                out.push(INSTANT);
                avro::long(out, micros);
                Some(KeyPart::Other)
            }
            None => values::convert(kind, text, out, zoned),
        },
        (Col::Std(kind), Val::Str(text)) => values::convert(kind, text, out, zoned),
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
        (Col::BytesList, Val::Str(text)) => {
            out.push(BYTES);
            avro::bytes(out, &byte_list(text)?);
            Some(KeyPart::Other)
        }
        _ => None,
    }
}

/// A row map converted; repeated column names (Python keeps the last value) decline.
fn convert<'t>(row: &'t Val<'t>, plan: &Plan, zoned: values::ZoneReader) -> Option<Image<'t>> {
    let Val::Map(members, raw) = row else { return None };
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

fn parse_inner<'a>(
    raw: &'a [u8],
    schema: &Schema,
    profile: &Profile,
    at: &Coordinates,
    plan_for: &dyn Fn(&[u8]) -> Option<Option<Arc<Plan>>>,
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
    let id = opt_long(doc.id)??;
    if id < 0 {
        return None;
    }
    let kind = match doc.kind {
        Some(Val::Str(k)) if k.is_ascii() => k.to_ascii_uppercase(),
        _ => return None,
    };
    let op: &'static str = match kind.as_str() {
        "INSERT" => "INSERT",
        "UPDATE" => "UPDATE",
        "DELETE" => "DELETE",
        "INIT" => "SNAPSHOT",
        _ => return None, // DDL, INIT_DDL and the unknown: Python
    };
    match doc.is_ddl {
        None | Some(Val::Null) | Some(Val::Bool(false)) => {}
        _ => return None,
    }
    let es_ms = opt_long(doc.es)?.map(epoch_ms);
    let ts_ms = opt_long(doc.ts)?.map(epoch_ms);
    let database = name(doc.database)?;
    let table = name(doc.table)??;
    let data = rows(doc.data)?;
    let old = rows(doc.old)?;
    // "either": a DELETE's row is in data, or in old when data is empty.
    let rows = if op == "DELETE" && data.is_empty() { old } else { data };
    if rows.is_empty() || rows.len() > 999_999 {
        return None;
    }
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

    // The flat reader's header; gtid is not a field of an accepted schema.
    let (head, key_head, table_name) = canal::flat_head(profile, op, database, table, None, id);

    let mut records = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        let converted = convert(row, &plan, zoned)?;
        let (before, after, changed): (Option<Image>, Option<Image>, Option<Vec<&str>>) = if op == "DELETE" {
            (Some(converted), None, None)
        } else {
            match olds.get(index) {
                None => (None, Some(converted), None),
                Some(old_row) => {
                    let old_image = convert(old_row, &plan, zoned)?;
                    // DRS's `old` is a full image: changed = old's columns also in the new row
                    // whose values differ (`_changed_columns`), in old's order.
                    let (Val::Map(new_members, _), Val::Map(old_members, _)) = (row, old_row) else {
                        return None;
                    };
                    let mut changed = Vec::new();
                    for (column, was) in old_members {
                        if let Some((_, now)) = new_members.iter().find(|(n, _)| n == column) {
                            if differ(now, was)? {
                                changed.push(*column);
                            }
                        }
                    }
                    (Some(canal::overlay(&converted, &old_image)), Some(converted), Some(changed))
                }
            }
        };
        let identity = if op == "DELETE" { before.as_ref() } else { after.as_ref() }?;

        // The record key: [database, schema, table, [key values]] as orjson writes it.
        let mut key = Vec::with_capacity(key_head.len() + 32);
        key.extend_from_slice(&key_head);
        // A missing key column: rejected by Python.
        values::key_values(&mut key, &primary_key, |column, key| identity.get(column)?.key.write(key))?;
        key.push(b']');

        let images = before.as_ref().map_or(0, |i| i.buf.len()) + after.as_ref().map_or(0, |i| i.buf.len());
        let mut body = Vec::with_capacity(head.len() + plan.columns_avro.len() + 2 * images + 256);
        body.extend_from_slice(b"\xc3\x01");
        body.extend_from_slice(&profile.fingerprint);
        body.extend_from_slice(&head);
        canal::order_key(&mut body, id, 0, index);
        avro::opt_long(&mut body, es_ms);
        avro::opt_long(&mut body, ts_ms);
        avro::strings(&mut body, &primary_key);
        body.extend_from_slice(&plan.columns_avro);
        canal::write_image(&mut body, before.as_ref());
        canal::write_image(&mut body, after.as_ref());
        avro::row_tail(&mut body, changed.as_deref(), at.topic, at.partition, at.offset, index as i64);
        records.push(Record { key, value: body, table: table_name.clone(), op, ts_ms: es_ms });
    }
    Some(Outcome::Records(records))
}
