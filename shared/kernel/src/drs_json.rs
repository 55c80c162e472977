//! `drs-json` and `drs-json-c` (`services/drs_json/parser.py` -> `services/canal_json/flat.py`)
//! in the fast lane.
//!
//! Huawei DRS's JSON formats are Canal flat messages with DRS's value conventions, the same as
//! the `drs-avro` lane's (`drs.rs`: byte-list binaries, epoch-seconds TIMESTAMPs, stripped
//! names, `changed_columns` from full `old` images); this file reads the JSON envelope and hands
//! the rows to `drs::records`. It takes INSERT / UPDATE / DELETE / INIT messages of a MySQL
//! source (no `dbType`, or `MySQL`) whose columns are all declared in `mysqlType` and whose
//! values are null or strings in the strict forms of `values.rs` and `drs.rs`. A DELETE's row is
//! in `old` (DRS JSON) or `data` (JSON-C), as the lane was made. Everything else (DDL, the
//! Oracle variant, `sqlType`-only messages, anything the Python parser would reject) returns
//! `None` and takes the Python parser.

use std::borrow::Cow;

use crate::decline::{self, Stage};
use crate::drs::{self, Envelope, Outcome, Plan, PlanFor, Row};
use crate::event::{self, Coordinates, Profile};
use crate::json::{self, Json};
use crate::typed::{self, Image};
use crate::values;

/// Where a DELETE's row is (`FlatProfile.delete_row_in`).
#[derive(Clone, Copy)]
pub enum DeleteRowIn {
    /// DRS JSON.
    Old,
    /// DRS JSON-C.
    Data,
}

/// The members built; the others (`sql`, `sqlType`, `mysqlType`...) are checked and kept raw.
const BUILT: &[&str] =
    &["id", "type", "opType", "isDdl", "dbType", "es", "ts", "database", "table", "gtid", "data", "old", "pkNames"];

pub fn parse<'a>(
    raw: &'a [u8],
    delete_row_in: DeleteRowIn,
    profile: &Profile,
    at: &Coordinates,
    plan_for: &PlanFor,
    zoned: values::ZoneReader,
) -> Outcome<'a> {
    parse_inner(raw, delete_row_in, profile, at, plan_for, zoned).unwrap_or(Outcome::Decline)
}

/// The message fields the lane reads, found in one pass over the members.
#[derive(Default)]
struct Fields<'d, 'a> {
    id: Option<&'d Json<'a>>,
    kind: Option<&'d Json<'a>>,
    op_type: Option<&'d Json<'a>>,
    is_ddl: Option<&'d Json<'a>>,
    db_type: Option<&'d Json<'a>>,
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
    /// None: a member the lane leaves to Python (see `exponent_number`).
    fn of(members: &'d [(Cow<'a, str>, Json<'a>)]) -> Option<Self> {
        let mut f = Fields::default();
        for (key, value) in members {
            let slot = match key.as_ref() {
                "id" => &mut f.id,
                "type" => &mut f.kind,
                "opType" => &mut f.op_type,
                "isDdl" => &mut f.is_ddl,
                "dbType" => &mut f.db_type,
                "es" => &mut f.es,
                "ts" => &mut f.ts,
                "database" => &mut f.database,
                "table" => &mut f.table,
                "gtid" => &mut f.gtid,
                "data" => &mut f.data,
                "old" => &mut f.old,
                "pkNames" => &mut f.pk_names,
                "mysqlType" => &mut f.mysql_type,
                _ => match value {
                    Json::Raw(raw) if exponent_number(raw) => return None,
                    _ => continue,
                },
            };
            *slot = Some(value);
        }
        Some(f)
    }
}

/// `_refuse_huge_numbers` rejects a top-level number that the exact decoder reads as a Decimal
/// beyond 4300 digits (`1e5000`); DRS writes no such field, so any top-level number with an
/// exponent declines rather than being measured. (Longer digit runs `json.rs` declines itself.)
fn exponent_number(raw: &[u8]) -> bool {
    matches!(raw.first(), Some(b'-' | b'0'..=b'9')) && raw.iter().any(|&c| c == b'e' || c == b'E')
}

/// `order_by_id` / `opt_int(doc, "id")`, also `source.sequence` (`opt_str`): a JSON integer, or
/// a digit string without a sign or leading zeros (so that `str(id)` is the text itself).
fn sequence(value: Option<&Json>) -> Option<i64> {
    match value {
        Some(Json::Str(text)) => {
            let ok = !text.is_empty() && text.len() <= 18 && text.bytes().all(|c| c.is_ascii_digit());
            if !ok || (text.len() > 1 && text.starts_with('0')) {
                return None;
            }
            text.parse().ok()
        }
        number => json::int_field(number).ok()?,
    }
}

/// `_name(doc, key, strip=True)`: null, or a string as `drs::strip_name` reads it.
fn name<'d>(value: Option<&'d Json>) -> Option<Option<&'d str>> {
    drs::strip_name(json::str_field(value).ok()?.unwrap_or(""))
}

/// `dbType` of a MySQL source: absent, null, blank, or `MySQL` in any case (the flat reader's
/// db_type MYSQL and its MySQL type rules). Oracle and the other sources are left to Python.
fn mysql_source(value: Option<&Json>) -> Option<()> {
    let text = json::str_field(value).ok()?.unwrap_or("");
    let word = text.trim_matches(drs::py_blank);
    (text.is_ascii() && (word.is_empty() || word.eq_ignore_ascii_case("MYSQL"))).then_some(())
}

/// `type`, and `opType` when sent: `_kind` rejects them when they differ, so the lane takes only
/// an ASCII `opType` equal to `type` but for case.
fn row_op(kind: Option<&Json>, op_type: Option<&Json>) -> Option<&'static str> {
    let Some(Json::Str(kind)) = kind else { return None };
    let op = drs::row_op(kind)?;
    match op_type {
        None | Some(Json::Null) => Some(op),
        Some(Json::Str(other)) if other.is_ascii() && other.eq_ignore_ascii_case(kind) => Some(op),
        _ => None,
    }
}

/// Rows of `data` / `old`: null or an array.
fn rows<'d, 'a>(value: Option<&'d Json<'a>>) -> Option<&'d [Json<'a>]> {
    match value {
        None | Some(Json::Null) => Some(&[]),
        Some(Json::Array(items)) => Some(items),
        _ => None,
    }
}

impl Row for Json<'_> {
    fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    fn image<'t>(&'t self, plan: &Plan, zoned: values::ZoneReader) -> Option<Image<'t>> {
        typed::json_image(self, plan, |col, text, out| drs::text_value(col, text, out, zoned))
    }

    fn changed<'t>(&'t self, old: &'t Self) -> Option<Vec<&'t str>> {
        let (Json::Object(new_members, _), Json::Object(old_members, _)) = (self, old) else { return None };
        let mut changed = Vec::new();
        for (column, was) in old_members {
            let Some((_, now)) = new_members.iter().find(|(n, _)| n == column) else { continue };
            // `new[name] != value` on strings and nulls (the only values `image` takes).
            let differs = match (now, was) {
                (Json::Null, Json::Null) => false,
                (Json::Str(a), Json::Str(b)) => a != b,
                (Json::Null, Json::Str(_)) | (Json::Str(_), Json::Null) => true,
                _ => return None,
            };
            if differs {
                changed.push(column.as_ref());
            }
        }
        Some(changed)
    }
}

fn parse_inner<'a>(
    raw: &'a [u8],
    delete_row_in: DeleteRowIn,
    profile: &Profile,
    at: &Coordinates,
    plan_for: &PlanFor,
    zoned: values::ZoneReader,
) -> Option<Outcome<'a>> {
    let members = json::parse_message(raw, BUILT)?;
    decline::at(Stage::Envelope);
    let doc = Fields::of(&members)?;
    let id = sequence(doc.id)?;
    decline::at(Stage::Operation);
    let op = row_op(doc.kind, doc.op_type)?;
    match doc.is_ddl {
        None | Some(Json::Null) | Some(Json::Bool(false)) => {}
        _ => return None,
    }
    decline::at(Stage::Envelope);
    mysql_source(doc.db_type)?;
    let es_ms = json::int_field(doc.es).ok()?.map(event::epoch_ms);
    let ts_ms = json::int_field(doc.ts).ok()?.map(event::epoch_ms);
    let database = name(doc.database)?;
    let table = name(doc.table)??;
    let gtid = json::str_field(doc.gtid).ok()?.filter(|s| !s.is_empty());
    let (data, old) = (rows(doc.data)?, rows(doc.old)?);
    let none: &[Json] = &[];
    let (rows, olds, unread) = match (op, delete_row_in) {
        ("DELETE", DeleteRowIn::Old) => (old, none, data),
        ("DELETE", DeleteRowIn::Data) => (data, none, old),
        ("UPDATE", _) => (data, old, none),
        _ => (data, none, old),
    };
    // `_refuse_huge_numbers` looks into every row of data and old, read or not: the lane takes
    // only messages whose every row it reads (strings and nulls only).
    if !unread.is_empty() || olds.len() > rows.len() {
        return None;
    }
    let primary_key: Vec<&str> = match doc.pk_names {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(names)) => {
            let mut out = Vec::with_capacity(names.len());
            for n in names {
                let Json::Str(n) = n else { return None };
                out.push(n.as_ref());
            }
            out
        }
        Some(_) => return None,
    };
    decline::at(Stage::Types);
    let raw_map = match doc.mysql_type {
        Some(Json::Raw(raw_map)) if raw_map.first() == Some(&b'{') => *raw_map,
        _ => return None, // no mysqlType: Oracle's columnType, or the sqlType (JDBC codes) path
    };
    let plan = match plan_for(raw_map) {
        Some(Some(plan)) => plan,
        Some(None) => return None, // the planner declined this type map
        None => return Some(Outcome::NeedPlan(raw_map, typed::type_columns(raw_map)?)),
    };
    let envelope = Envelope { op, id, es_ms, ts_ms, database, table, gtid, primary_key };
    drs::records(&envelope, rows, olds, &plan, profile, at, zoned).map(Outcome::Records)
}
