//! OceanBase OMS "SharePlex" JSON (`services/oms_shareplex/parser.py`) in the fast lane.
//!
//! Takes `meta.op` ins / upd / del messages: no column types (every column inferred,
//! `inferred.rs`), no key names; an update's `key` is the prior row and `data` the changed
//! values, so its after image is `key` overlaid with `data` (`inferred::overlay`). `meta.time`
//! and `meta.posttime` are wall clocks of the source zone: read here in UTC, through Python's
//! zone rules (`services/oms_default/plan.py`, `wall_clock_reader`) elsewhere. Declined: DDL, unknown ops, times and
//! names outside the strict forms below, and everything the Python parser rejects.

use std::borrow::Cow;

use crate::decline::{self, Stage};
use crate::event::{Coordinates, Profile};
use crate::inferred;
use crate::json::{self, Json};
use crate::oms_json::{member, opt_text, py_space, Event, Names, Outcome};
use crate::values::{self, ZoneReader};

const BUILT: &[&str] = &["data", "meta", "key"];

/// `_split_table`: (tenant, database, table) from `meta.table`.
fn split_table(name: &str) -> (Option<&str>, Option<&str>, Option<&str>) {
    let parts: Vec<&str> = name.split('.').collect();
    match parts.as_slice() {
        [table] => (None, None, Some(*table)),
        [database, table] => (None, blank(database), blank(table)),
        [tenant, .., table] => (blank(tenant), blank(&name[tenant.len() + 1..name.len() - table.len() - 1]), blank(table)),
        [] => (None, None, None),
    }
}

/// `blank_to_none`.
fn blank(text: &str) -> Option<&str> {
    Some(text).filter(|t| !t.is_empty())
}

/// `_wall_clock_ms`: a strict `YYYY-MM-DD[ T]HH:MM:SS(.f{1,6})?` in the source zone, as epoch ms
/// (`zoned`: None in UTC, else Python's reading).
fn wall_clock_ms(value: Option<&Json>, zoned: Option<ZoneReader>) -> Result<Option<i64>, ()> {
    let Some(text) = opt_text(value)? else { return Ok(None) };
    let micros = values::date_time(text).ok_or(())?; // also: no blanks for Python's strip()
    match zoned {
        None => Ok(Some(micros.div_euclid(1000))),
        Some(read) => read(text).map(Some).ok_or(()),
    }
}

/// `_verbatim`: the text, or None when blank or `null` (any case, blanks around).
fn verbatim<'d>(value: Option<&'d Json>) -> Result<Option<&'d str>, ()> {
    let Some(text) = opt_text(value)? else { return Ok(None) };
    if text.starts_with(py_space) || text.ends_with(py_space) {
        return Err(()); // Python strips before comparing: left to it
    }
    Ok(Some(text).filter(|t| !t.eq_ignore_ascii_case("null")))
}

/// `_image`: a present, non-null object.
fn image<'d, 'a>(value: Option<&'d Json<'a>>) -> Result<(&'d Json<'a>, bool), ()> {
    match value {
        Some(image @ Json::Object(members, _)) => Ok((image, members.is_empty())),
        _ => Err(()),
    }
}

/// One message; `zoned` reads a wall clock of the source zone as epoch ms (None: the zone is UTC).
pub fn parse(raw: &[u8], profile: &Profile, at: &Coordinates, zoned: Option<ZoneReader>) -> Outcome {
    parse_inner(raw, profile, at, zoned).unwrap_or(Outcome::Decline)
}

fn parse_inner(raw: &[u8], profile: &Profile, at: &Coordinates, zoned: Option<ZoneReader>) -> Result<Outcome, ()> {
    let members = json::parse_message_exact(raw, BUILT).ok_or(())?;
    decline::at(Stage::Envelope);
    let Some(Json::Object(meta, _)) = member(&members, "meta") else { return Err(()) };
    decline::at(Stage::Operation);
    let op: &'static str = match member(meta, "op") {
        Some(Json::Str(kind)) if kind.is_ascii() => match kind.to_ascii_lowercase().as_str() {
            "ins" => "INSERT",
            "upd" => "UPDATE",
            "del" => "DELETE",
            _ => return Err(()), // ddl, blanks around, unknown: the Python parser
        },
        _ => return Err(()),
    };
    decline::at(Stage::Envelope);
    let (tenant, database, table) = match opt_text(member(meta, "table"))? {
        Some(name) => split_table(name),
        None => (None, None, None),
    };
    let table = table.ok_or(())?;
    let ts_ms = wall_clock_ms(member(meta, "time"), zoned)?;
    let ingest_ts_ms = wall_clock_ms(member(meta, "posttime"), zoned)?;
    let scn = verbatim(member(meta, "scn"))?;
    let names = Names {
        db_type: None,
        database,
        schema: None,
        table,
        tenant,
        scn,
        checkpoint: None,
        transaction_id: verbatim(member(meta, "trans"))?,
        sequence: verbatim(member(meta, "seq"))?.map(Cow::Borrowed),
    };

    decline::at(Stage::Values);
    let (data, data_empty) = image(member(&members, "data"))?;
    let data = inferred::convert(data).ok_or(())?;
    let (before, after, changed) = if op == "UPDATE" {
        let (prior, prior_empty) = image(member(&members, "key"))?;
        if prior_empty {
            return Err(());
        }
        let changed: Vec<&str> = data.entries.iter().map(|e| e.name).collect();
        let prior = inferred::convert(prior).ok_or(())?;
        let after = inferred::overlay(&prior, &data); // the whole prior row plus the changes
        (Some(prior), Some(after), Some(changed))
    } else {
        if data_empty {
            return Err(());
        }
        if op == "DELETE" {
            (Some(data), None, None)
        } else {
            (None, Some(data), None)
        }
    };
    let event = Event {
        op,
        names: &names,
        ts_ms,
        ingest_ts_ms,
        primary_key: &[],
        columns: None,
        before: before.as_ref(),
        after: after.as_ref(),
        changed: changed.as_deref(),
    };
    event.record(profile, at).map(Outcome::Record).ok_or(())
}
