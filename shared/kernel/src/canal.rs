//! Canal flat JSON (`services/canal_json/flat.py`, the Canal profile) in the fast lane.
//!
//! Handles INSERT / UPDATE / DELETE / INIT messages of the Canal profile (the
//! message has an `id`; values are strings) whose columns are all declared in
//! `mysqlType`; everything else (DDL, the OMS profile, `sqlType`-only
//! messages, inferred columns, values outside the strict forms of
//! `values.rs`, anything the Python parser would reject) returns `None` and
//! takes the Python parser.

use crate::decline::{self, Stage};
use crate::avro;
use crate::event::{epoch_ms, flat_head, flat_order_key, Coordinates, Profile, Record};
use crate::json::{self, int_field, str_field, Json};
use crate::typed::{json_image, overlay, type_columns, write_image, Image};
use crate::values::{self, Kind};

/// What the planner made of one `mysqlType` object.
pub type Plan = values::Plan<Kind>;

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

const BUILT: &[&str] = &["data", "old", "database", "table", "type", "isDdl", "es", "ts", "id", "gtid", "pkNames"];

/// `RowTypes.convert` on the strict subset: every column declared, string or null values.
fn convert<'t>(row: &'t Json<'t>, plan: &Plan, zoned: values::ZoneReader) -> Option<Image<'t>> {
    json_image(row, plan, |kind, text, out| values::convert(kind, text, out, zoned))
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
    decline::at(Stage::Envelope);
    // The Canal profile only: a message without "id" is read with OMS conventions.
    let id = int_field(doc.id)?.ok_or(())?;
    decline::at(Stage::Operation);
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
    decline::at(Stage::Envelope);
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
    decline::at(Stage::Types);
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
        decline::at(Stage::Values);
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
        decline::at(Stage::Keys);

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
        flat_order_key(&mut body, major, minor, index);
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
