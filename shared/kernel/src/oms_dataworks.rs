//! OceanBase OMS "DataWorks 2.0" JSON (`services/oms_dataworks/parser.py`) in the fast lane.
//!
//! Takes version "2.0" messages of op INSERT / UPDATE / DELETE (case sensitive, as the
//! parser) whose columns are all declared in `schema.column` (or none is: every column
//! inferred), with values in the forms of `oms_json::typed`. The planner
//! (`services/oms_dataworks/plan.py`) reads each (name, type word) list once with the parser's
//! own column types. Declined: heartbeats, DDL, transaction markers, images holding
//! undeclared columns beside declared ones, and everything the Python parser rejects.

use std::borrow::Cow;

use crate::decline::{self, Stage};
use crate::event::{Coordinates, Profile};
use crate::json::{self, Json};
use crate::oms_json::{
    has_key_columns, member, opt_int, opt_str, opt_text, plan_key, row_image,
    Event, Names, Outcome, PlanFor,
};
use crate::values::ZoneReader;

const BUILT: &[&str] = &["version", "schema", "payload"];

type Members<'d, 'a> = &'d [(Cow<'a, str>, Json<'a>)];

/// `opt_obj`: absent or null (an empty object), or an object's members; another type is a reject.
fn opt_obj<'d, 'a>(value: Option<&'d Json<'a>>) -> Result<Members<'d, 'a>, ()> {
    match value {
        None | Some(Json::Null) => Ok(&[]),
        Some(Json::Object(members, _)) => Ok(members),
        Some(_) => Err(()),
    }
}

/// `_raw_image`: `payload.<key>.data`, None when absent (the image or its data null).
fn raw_image<'d, 'a>(payload: Members<'d, 'a>, key: &str) -> Result<Option<&'d Json<'a>>, ()> {
    match member(payload, key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Object(image, _)) => Ok(member(image, "data").filter(|data| !matches!(data, Json::Null))),
        Some(_) => Err(()),
    }
}

/// `_row_types`' pairs: (name, type word or None) of `schema.column`, names unique and non-empty.
fn declared<'d>(column: Option<&'d Json>) -> Result<Vec<(&'d str, Option<&'d str>)>, ()> {
    let items = match column {
        None | Some(Json::Null) => return Ok(Vec::new()),
        Some(Json::Array(items)) => items,
        Some(_) => return Err(()),
    };
    let mut out: Vec<(&str, Option<&str>)> = Vec::with_capacity(items.len());
    for item in items {
        let Json::Object(fields, _) = item else { return Err(()) };
        let name = match member(fields, "name") {
            Some(Json::Str(name)) if !name.is_empty() => name.as_ref(),
            _ => return Err(()),
        };
        let word = match member(fields, "type") {
            None | Some(Json::Null) => None,
            Some(Json::Str(word)) => Some(word.as_ref()),
            Some(_) => return Err(()),
        };
        if out.iter().any(|(seen, _)| *seen == name) {
            return Err(()); // a repeated column: Python keeps the first place and the last type
        }
        out.push((name, word));
    }
    Ok(out)
}

/// `str_list(schema.pk)`.
fn primary_key<'d>(value: Option<&'d Json>) -> Result<Vec<&'d str>, ()> {
    match value {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(Json::Array(names)) => {
            names.iter().map(|name| if let Json::Str(n) = name { Ok(n.as_ref()) } else { Err(()) }).collect()
        }
        Some(_) => Err(()),
    }
}

pub fn parse(raw: &[u8], profile: &Profile, at: &Coordinates, plan_for: &PlanFor, zoned: ZoneReader) -> Outcome {
    parse_inner(raw, profile, at, plan_for, zoned).unwrap_or(Outcome::Decline)
}

fn parse_inner(
    raw: &[u8],
    profile: &Profile,
    at: &Coordinates,
    plan_for: &PlanFor,
    zoned: ZoneReader,
) -> Result<Outcome, ()> {
    let members = json::parse_message_exact(raw, BUILT).ok_or(())?;
    decline::at(Stage::Envelope);
    match member(&members, "version") {
        Some(Json::Str(version)) if version == "2.0" => {}
        _ => return Err(()),
    }
    let Some(Json::Object(payload, _)) = member(&members, "payload") else { return Err(()) };
    decline::at(Stage::Operation);
    let op: &'static str = match member(payload, "op") {
        Some(Json::Str(op)) => match op.as_ref() {
            "INSERT" => "INSERT",
            "UPDATE" => "UPDATE",
            "DELETE" => "DELETE",
            _ => return Err(()), // heartbeats, DDL, markers, unknown ops: the Python parser
        },
        _ => return Err(()),
    };
    decline::at(Stage::Envelope);
    let stamps = opt_obj(member(payload, "timestamp"))?;
    let event_ms = opt_int(member(stamps, "eventTime"))?;
    let system_ms = opt_int(member(stamps, "systemTime"))?;
    let checkpoint = opt_int(member(stamps, "checkpointTime"))?;

    let schema = opt_obj(member(&members, "schema"))?;
    let src = opt_obj(member(schema, "source"))?;
    let db_type = match opt_text(member(src, "dbType"))? {
        None => None,
        Some(text) if text.is_ascii() => Some(text.to_ascii_uppercase()),
        Some(_) => return Err(()), // Unicode upper(): left to Python
    };
    let mut database = opt_text(member(src, "dbName"))?;
    let mut tenant = None;
    if let (Some(name), Some(kind)) = (database, db_type.as_deref()) {
        if kind.starts_with("OB_") {
            if let Some((head, rest)) = name.split_once('.') {
                (tenant, database) = (Some(head), Some(rest)); // kept even when empty, as Python
            }
        }
    }
    let table = opt_text(member(src, "table"))?.ok_or(())?;
    let scn = opt_str(member(payload, "scn"))?.filter(|scn| !scn.is_empty() && *scn != "null");
    let names = Names {
        db_type: db_type.map(Cow::Owned),
        database,
        schema: opt_text(member(src, "schema"))?,
        table,
        tenant,
        scn,
        checkpoint: checkpoint.map(|c| Cow::Owned(c.to_string())),
        transaction_id: None,
        sequence: None,
    };
    decline::at(Stage::Keys);
    let primary_key = primary_key(member(schema, "pk"))?;

    decline::at(Stage::Envelope);
    let raw_before = raw_image(payload, "before")?;
    let raw_after = raw_image(payload, "after")?;
    match op {
        "DELETE" if raw_before.is_none() || raw_after.is_some() => return Err(()),
        "INSERT" if raw_before.is_some() => return Err(()),
        "INSERT" | "UPDATE" if raw_after.is_none() => return Err(()),
        _ => {}
    }
    decline::at(Stage::Types);
    let order = declared(member(schema, "column"))?;
    // Every image column declared, or none is (all inferred); a mix is declined.
    for image in [raw_before, raw_after].into_iter().flatten() {
        let Json::Object(columns, _) = image else { return Err(()) };
        if !order.is_empty() && columns.iter().any(|(name, _)| !order.iter().any(|(n, _)| n == name)) {
            return Err(());
        }
    }
    let plan = if order.is_empty() {
        None
    } else {
        let key = plan_key(order.iter().copied());
        match plan_for(&key) {
            Some(Some(plan)) => Some(plan),
            Some(None) => return Err(()),
            None => {
                let columns = order.iter().map(|(n, w)| (n.to_string(), w.map(str::to_string))).collect();
                return Ok(Outcome::NeedPlan(key, columns));
            }
        }
    };
    let plan = plan.as_deref();
    decline::at(Stage::Values);
    let before = raw_before.map(|image| row_image(image, plan, zoned)).transpose()?;
    let after = raw_after.map(|image| row_image(image, plan, zoned)).transpose()?;
    // require_key_columns: the prior row when there is one, else the new row.
    decline::at(Stage::Keys);
    let checked = if before.is_some() { before.as_ref() } else { after.as_ref() };
    if !has_key_columns(&primary_key, checked) {
        return Err(());
    }
    let event = Event {
        op,
        names: &names,
        ts_ms: event_ms,
        ingest_ts_ms: system_ms,
        primary_key: &primary_key,
        columns: plan.map(|p| p.columns_avro.as_slice()),
        before: before.as_ref(),
        after: after.as_ref(),
        changed: None,
    };
    event.record(profile, at).map(Outcome::Record).ok_or(())
}
