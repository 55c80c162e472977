//! KafkaRiverCanal (`services/kafkariver_canal/parser.py`) in the fast lane.
//!
//! One row per message: `binlog` (`offset@file`), `time` / `canalTime` (ms), `db`, `table`,
//! `event` (`i` / `u` / `d`), `keys`, and `columns`, each `{"n", "t", "v", "null", "updated",
//! "origin_val"}`. Takes messages whose columns all carry a type `t` (the planner reads the
//! types as the Canal lane's `mysqlType`: MySQL rules, ISO-8859-1 binary) and whose values are
//! null or strings in the strict forms of `values.rs`. An UPDATE's before image is rebuilt as
//! Python does: `v` where `updated` is false, `origin_val` where it is true, nothing where the
//! flag is absent or `origin_val` is missing, and nothing for an empty `origin_val` that the
//! column's type cannot read (Canal's rendering of an old NULL). Everything else (untyped
//! columns, other value spellings, odd envelope fields, every message the Python parser would
//! reject) returns `None` and takes the Python parser.

use std::sync::Arc;

use crate::decline::{self, Stage};
use crate::avro;
use crate::event::{self, Coordinates, Profile, Record, Source};
use crate::json::{self, int_field, str_field, Json};
use crate::typed::{write_image, Entry, Image};
use crate::values::{self, KeyPart, Kind};

/// What the planner made of one message's column types.
pub type Plan = values::Plan<Kind>;

/// The lane's plan cache: the plan for a type key, Some(None) if the planner declined it, None
/// if not planned yet.
pub type PlanFor<'p> = &'p dyn Fn(&[u8]) -> Option<Option<Arc<Plan>>>;

pub enum Outcome {
    Record(Record),
    /// The plan for these column types is unknown: ask the planner with (cache key, (name, type)
    /// pairs), then call again.
    NeedPlan(Vec<u8>, Vec<(String, Option<String>)>),
    Decline,
}

const BUILT: &[&str] = &["binlog", "time", "canalTime", "db", "table", "event", "columns", "keys"];

#[derive(Default)]
struct Fields<'d, 'a> {
    binlog: Option<&'d Json<'a>>,
    time: Option<&'d Json<'a>>,
    canal_time: Option<&'d Json<'a>>,
    db: Option<&'d Json<'a>>,
    table: Option<&'d Json<'a>>,
    event: Option<&'d Json<'a>>,
    columns: Option<&'d Json<'a>>,
    keys: Option<&'d Json<'a>>,
}

impl<'d, 'a> Fields<'d, 'a> {
    fn of(members: &'d [(std::borrow::Cow<'a, str>, Json<'a>)]) -> Self {
        let mut f = Fields::default();
        for (key, value) in members {
            let slot = match key.as_ref() {
                "binlog" => &mut f.binlog,
                "time" => &mut f.time,
                "canalTime" => &mut f.canal_time,
                "db" => &mut f.db,
                "table" => &mut f.table,
                "event" => &mut f.event,
                "columns" => &mut f.columns,
                "keys" => &mut f.keys,
                _ => continue,
            };
            *slot = Some(value);
        }
        f
    }
}

/// One entry of `columns`, its members by name (`_entry`'s checks done: a name, a type text, a
/// boolean or absent `null`).
struct Column<'d, 'a> {
    name: &'d str,
    type_text: &'d str,
    value: Option<&'d Json<'a>>,
    null: Option<bool>,
    updated: Option<&'d Json<'a>>,
    origin_val: Option<&'d Json<'a>>,
}

impl<'d, 'a> Column<'d, 'a> {
    fn of(item: &'d Json<'a>) -> Option<Self> {
        let Json::Object(members, _) = item else { return None };
        let (mut name, mut type_text, mut null) = (None, None, None);
        let mut column = Column { name: "", type_text: "", value: None, null: None, updated: None, origin_val: None };
        for (key, value) in members {
            match key.as_ref() {
                "n" => name = Some(value),
                "t" => type_text = Some(value),
                "v" => column.value = Some(value),
                "null" => null = Some(value),
                "updated" => column.updated = Some(value),
                "origin_val" => column.origin_val = Some(value),
                _ => {}
            }
        }
        column.name = match name {
            Some(Json::Str(n)) if !n.is_empty() => n,
            _ => return None,
        };
        // An absent, null or empty type leaves the column untyped (inferred): the Python parser's.
        column.type_text = match type_text {
            Some(Json::Str(t)) if !t.is_empty() => t,
            _ => return None,
        };
        column.null = match null {
            None | Some(Json::Null) => None,
            Some(Json::Bool(b)) => Some(*b),
            Some(_) => return None,
        };
        Some(column)
    }

    /// `_value`: null where `null` is true whatever `v` holds, else `v` read as `kind`.
    fn value<'t>(&'t self, kind: Kind, image: &mut Image<'t>, zoned: values::ZoneReader) -> Option<()> {
        let start = image.buf.len();
        let key = match (self.null, self.value) {
            (Some(true), _) => null(&mut image.buf),
            (None, Some(Json::Null)) => null(&mut image.buf),
            (_, Some(Json::Str(text))) => values::convert(kind, text, &mut image.buf, zoned)?,
            // No `v` while not marked null, a null `v` marked not null: rejects; other JSON: Python's.
            _ => return None,
        };
        image.entries.push(Entry { name: self.name, start, end: image.buf.len(), key });
        Some(())
    }

    /// `_old_value`: an updated column's prior value where it is known (nothing pushed where not).
    fn old_value<'t>(&'t self, kind: Kind, before: &mut Image<'t>, zoned: values::ZoneReader) -> Option<()> {
        let start = before.buf.len();
        match self.origin_val {
            None => return Some(()), // updated, old value not given: unknown
            Some(Json::Null) => {
                null(&mut before.buf);
            }
            Some(Json::Str(text)) => {
                if text.is_empty() && !kind.reads_empty()? {
                    return Some(()); // an empty old value the type cannot read: unknown
                }
                values::convert(kind, text, &mut before.buf, zoned)?;
            }
            Some(_) => return None,
        }
        before.entries.push(Entry { name: self.name, start, end: before.buf.len(), key: KeyPart::Other });
        Some(())
    }
}

fn null(buf: &mut Vec<u8>) -> KeyPart<'static> {
    buf.push(0);
    KeyPart::Null
}

/// `_binlog`: `offset@file` -> (file, offset). Python strips the text first; the first character
/// is a digit here, so a text whose last character is a blank (or non-ASCII: Unicode blanks) is
/// declined rather than stripped.
fn binlog(text: &str) -> Option<(&str, i64)> {
    let last = *text.as_bytes().last()?;
    if last >= 0x80 || matches!(last, b'\t'..=b'\r' | 0x1c..=b' ') {
        return None;
    }
    let (offset, file) = text.split_once('@')?;
    if file.is_empty() || offset.is_empty() || offset.len() > 19 || !offset.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((file, offset.parse().ok()?)) // beyond int64: a reject
}

/// The plan cache's key for the columns' (name, type) pairs, in order (length-prefixed, so
/// unambiguous).
fn type_key(columns: &[Column]) -> Vec<u8> {
    let mut key = Vec::with_capacity(columns.len() * 24);
    for column in columns {
        for part in [column.name, column.type_text] {
            key.extend_from_slice(&(part.len() as u32).to_le_bytes());
            key.extend_from_slice(part.as_bytes());
        }
    }
    key
}

pub fn parse(
    raw: &[u8],
    profile: &Profile,
    at: &Coordinates,
    plan_for: PlanFor,
    zoned: values::ZoneReader,
) -> Outcome {
    parse_inner(raw, profile, at, plan_for, zoned).unwrap_or(Outcome::Decline)
}

fn parse_inner(
    raw: &[u8],
    profile: &Profile,
    at: &Coordinates,
    plan_for: PlanFor,
    zoned: values::ZoneReader,
) -> Option<Outcome> {
    let members = json::parse_message(raw, BUILT)?;
    let doc = Fields::of(&members);
    decline::at(Stage::Operation);
    let op: &'static str = match doc.event {
        Some(Json::Str(kind)) => match kind.as_ref() {
            "i" | "I" => "INSERT",
            "u" | "U" => "UPDATE",
            "d" | "D" => "DELETE",
            _ => return None,
        },
        _ => return None,
    };
    decline::at(Stage::Envelope);
    let (binlog_file, offset) = binlog(str_field(doc.binlog).ok()??)?;
    let database = str_field(doc.db).ok()??;
    let database = Some(database).filter(|s| !s.is_empty());
    let table = str_field(doc.table).ok()?.filter(|s| !s.is_empty())?;
    let primary_key: Vec<&str> = match doc.keys {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(names)) => {
            names.iter().map(|n| if let Json::Str(n) = n { Some(n.as_ref()) } else { None }).collect::<Option<_>>()?
        }
        Some(_) => return None,
    };
    let ts_ms = int_field(doc.time).ok()?;
    let ingest_ts_ms = int_field(doc.canal_time).ok()?;
    let major = event::binlog_index(binlog_file)?;

    decline::at(Stage::Types);
    let columns: Vec<Column> = match doc.columns {
        Some(Json::Array(items)) if !items.is_empty() => items.iter().map(Column::of).collect::<Option<_>>()?,
        _ => return None,
    };
    for (i, column) in columns.iter().enumerate() {
        if columns[..i].iter().any(|c| c.name == column.name) {
            return None; // a column twice: a reject
        }
    }
    let key = type_key(&columns);
    let plan = match plan_for(&key) {
        Some(Some(plan)) => plan,
        Some(None) => return None, // the planner declined these types
        None => {
            let pairs = columns.iter().map(|c| (c.name.to_string(), Some(c.type_text.to_string()))).collect();
            return Some(Outcome::NeedPlan(key, pairs));
        }
    };
    let kinds: Vec<Kind> =
        columns.iter().enumerate().map(|(i, c)| plan.kind(c.name, i)).collect::<Option<_>>()?;

    decline::at(Stage::Values);
    let mut row = Image { buf: Vec::with_capacity(raw.len()), entries: Vec::with_capacity(columns.len()) };
    for (column, &kind) in columns.iter().zip(&kinds) {
        column.value(kind, &mut row, zoned)?;
    }
    let prior = if op == "UPDATE" { Some(prior(&columns, &kinds, &row, zoned)?) } else { None };
    let (before, after, changed): (Option<&Image>, Option<&Image>, Option<&[&str]>) = match (&prior, op) {
        (Some((before, changed)), _) => (Some(before), Some(&row), Some(changed)),
        (None, "DELETE") => (Some(&row), None, None),
        (None, _) => (None, Some(&row), None),
    };

    let source = Source { binlog_file: Some(binlog_file), binlog_pos: Some(offset), ..Source::of(database, table) };
    // The record key: [database, schema, table, [key values]] from the row (after, else before).
    let mut key = source.key_head();
    decline::at(Stage::Keys);
    values::key_values(&mut key, &primary_key, |name, key| row.get(name)?.key.write(key))?;
    key.push(b']');

    let mut body = Vec::with_capacity(128 + plan.columns_avro.len() + 2 * row.buf.len() + 16 * columns.len());
    body.extend_from_slice(b"\xc3\x01");
    body.extend_from_slice(&profile.fingerprint);
    source.write(&mut body, profile, op);
    event::order_key(&mut body, major, offset as u128, 0);
    avro::opt_long(&mut body, ts_ms);
    avro::opt_long(&mut body, ingest_ts_ms);
    avro::strings(&mut body, &primary_key);
    body.extend_from_slice(&plan.columns_avro);
    write_image(&mut body, before);
    write_image(&mut body, after);
    avro::row_tail(&mut body, changed, at.topic, at.partition, at.offset, 0);
    Some(Outcome::Record(Record { key, value: body, table: source.table_name(), op, ts_ms }))
}

/// An UPDATE's before image and changed columns, rebuilt column by column as Python does.
fn prior<'t>(
    columns: &'t [Column<'t, 't>],
    kinds: &[Kind],
    row: &Image<'t>,
    zoned: values::ZoneReader,
) -> Option<(Image<'t>, Vec<&'t str>)> {
    let mut before = Image { buf: Vec::with_capacity(row.buf.len()), entries: Vec::with_capacity(columns.len()) };
    let mut changed = Vec::new();
    for ((column, &kind), entry) in columns.iter().zip(kinds).zip(&row.entries) {
        match column.updated {
            None | Some(Json::Null) => {} // no flag: not in before, not changed
            Some(Json::Bool(false)) => {
                let start = before.buf.len();
                before.buf.extend_from_slice(row.bytes(entry));
                before.entries.push(Entry { name: column.name, start, end: before.buf.len(), key: KeyPart::Other });
            }
            Some(Json::Bool(true)) => {
                changed.push(column.name);
                column.old_value(kind, &mut before, zoned)?;
            }
            Some(_) => return None,
        }
    }
    Some((before, changed))
}
