//! Oracle GoldenGate JSON (`services/ogg_json/parser.py`, operation-modeled) in the fast lane.
//!
//! Handles I / U / D operations whose images are JSON objects of untyped values:
//! GoldenGate sends no column types, so every column is inferred from its value exactly
//! as Maxwell's are (`inferred::convert`, `untyped_image`), and the event's columns,
//! images and key are written by the code Maxwell's lane shares (`inferred.rs`).
//! `op_ts` is read in UTC and `current_ts` in the source zone, both in their strict
//! forms (`YYYY-MM-DD[ T]HH:MM:SS(.f{1,6})?`, or `...Z`); in a zone other than UTC the
//! wall clock is converted by Python (`WallClock`). Everything else (truncates,
//! `_isMissing` markers, numbers where GoldenGate writes strings, anything the Python
//! parser would reject) returns `None` and takes the Python parser.

use std::borrow::Cow;

use crate::decline::{self, Stage};
use crate::avro;
use crate::debezium::{self, member, Member};
use crate::event::{self, Coordinates, Profile, Record};
use crate::inferred::{self, Dec, Image};
use crate::json::{self, json_string, Json};
use crate::values;

/// The lane's settings, read from the parse options when it is made.
pub struct Options {
    /// The event's `db_type`: option `db_type` upper-cased, else ORACLE.
    pub db_type: String,
    /// `db_type` has no schema level (the MySQL family): a two-part `table` is `database.table`.
    pub database_is_schema: bool,
}

/// Epoch milliseconds of a wall-clock date-time text in the source zone (Python's zone rules);
/// None: decline. None at all: the zone is UTC, read here.
pub type WallClock<'z> = Option<&'z dyn Fn(&str) -> Option<i64>>;

const BUILT: &[&str] = &["table", "op_type", "op_ts", "current_ts", "pos", "primary_keys", "tokens", "before", "after"];
const RBA_SCALE: u128 = 10_000_000_000;
const MAX_POS_DIGITS: usize = 30;
const MISSING_SUFFIX: &str = "_isMissing";
const TXID_TOKENS: &[&str] = &["txid", "TXID", "xid", "XID"];
const SCN_TOKENS: &[&str] = &["csn", "CSN", "scn", "SCN"];

/// The operation fields the lane reads, found in one pass over the members.
#[derive(Default)]
struct Fields<'d, 'a> {
    table: Option<&'d Json<'a>>,
    op_type: Option<&'d Json<'a>>,
    op_ts: Option<&'d Json<'a>>,
    current_ts: Option<&'d Json<'a>>,
    pos: Option<&'d Json<'a>>,
    primary_keys: Option<&'d Json<'a>>,
    tokens: Option<&'d Json<'a>>,
    before: Option<&'d Json<'a>>,
    after: Option<&'d Json<'a>>,
}

impl<'d, 'a> Fields<'d, 'a> {
    fn of(members: &'d [(Cow<'a, str>, Json<'a>)]) -> Self {
        let mut f = Fields::default();
        for (key, value) in members {
            let slot = match key.as_ref() {
                "table" => &mut f.table,
                "op_type" => &mut f.op_type,
                "op_ts" => &mut f.op_ts,
                "current_ts" => &mut f.current_ts,
                "pos" => &mut f.pos,
                "primary_keys" => &mut f.primary_keys,
                "tokens" => &mut f.tokens,
                "before" => &mut f.before,
                "after" => &mut f.after,
                _ => continue,
            };
            *slot = Some(value);
        }
        f
    }
}

/// `_time_ms` on the strict forms: `...Z` (an instant) or a wall clock, read in UTC unless
/// `wall_clock` reads it in the source zone. Null or absent: none; numbers (Python reads them
/// as epoch seconds) and other texts decline.
fn time_ms(value: Option<&Json>, wall_clock: WallClock) -> Result<Option<i64>, ()> {
    let text = match value {
        None | Some(Json::Null) => return Ok(None),
        Some(Json::Str(text)) => text,
        Some(_) => return Err(()),
    };
    if let Some(micros) = debezium::zoned(text) {
        return Ok(Some(micros.div_euclid(1000))); // epoch_ms_of floors
    }
    let micros = values::date_time(text).ok_or(())?;
    match wall_clock {
        None => Ok(Some(micros.div_euclid(1000))),
        Some(read) => read(text).map(Some).ok_or(()),
    }
}

/// `_table_name` and the MySQL-family rule: (database, schema, table).
fn table_name<'t>(value: Option<&'t Json>, options: &Options) -> Option<(Option<&'t str>, Option<&'t str>, &'t str)> {
    let Some(Json::Str(name)) = value else { return None };
    let parts: Vec<&str> = name.split('.').collect();
    if parts.iter().any(|part| part.is_empty()) {
        return None;
    }
    match parts[..] {
        [catalog, schema, table] => Some((Some(catalog), Some(schema), table)),
        [schema, table] if options.database_is_schema => Some((Some(schema), None, table)),
        [schema, table] => Some((None, Some(schema), table)),
        [table] => Some((None, None, table)),
        _ => None,
    }
}

/// `_pos`: at most 30 ASCII digits, as (sequence number, RBA).
fn position<'d>(value: Option<&'d Json>) -> Option<(&'d str, u128, u128)> {
    let Some(Json::Str(pos)) = value else { return None }; // a number: str(int) in Python, declined
    if pos.is_empty() || pos.len() > MAX_POS_DIGITS || !pos.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let n: u128 = pos.parse().ok()?;
    Some((pos, n / RBA_SCALE, n % RBA_SCALE))
}

/// `_token`: the first of `names` present, as text (a string, empty for none, or an integer's digits).
fn token<'d>(tokens: &'d [Member], names: &[&str]) -> Result<Option<&'d str>, ()> {
    for name in names {
        match member(tokens, name) {
            None | Some(Json::Null) => continue,
            Some(Json::Str(text)) => return Ok(Some(text.as_ref()).filter(|t| !t.is_empty())),
            // str(int): a JSON integer's own digits ("-0" aside, which Python writes "0").
            Some(Json::Number(text)) if inferred::integer_text(text) => return Ok(Some(text)),
            Some(_) => return Err(()),
        }
    }
    Ok(None)
}

/// `str_list(primary_keys)`: null or an array of strings.
fn primary_key<'d>(value: Option<&'d Json>) -> Option<Vec<&'d str>> {
    match value {
        None | Some(Json::Null) => Some(Vec::new()),
        Some(Json::Array(names)) => names.iter().map(|n| if let Json::Str(n) = n { Some(n.as_ref()) } else { None }).collect(),
        Some(_) => None,
    }
}

/// An image: `untyped_image` of a JSON object without `_isMissing` markers (`present_columns`
/// then drops columns: the Python parser's), with its members (the values `same` compares).
fn image<'d, 'a>(value: Option<&'d Json<'a>>) -> Result<Option<(Image<'d>, &'d [Member<'a>])>, ()> {
    match value {
        None | Some(Json::Null) => Ok(None),
        Some(object @ Json::Object(members, _)) => {
            if members.iter().any(|(name, _)| name.ends_with(MISSING_SUFFIX)) {
                return Err(());
            }
            Ok(Some((inferred::convert(object).ok_or(())?, members.as_slice())))
        }
        Some(_) => Err(()),
    }
}

/// `_same` of two converted values, given as (JSON value, Avro value bytes): Python's `==`,
/// except that booleans equal only booleans. Equal values have equal bytes, but for numbers
/// read as Decimals (`1.0` is `1` and `1.00`), which compare by value.
fn same(a: (&Json, &[u8]), b: (&Json, &[u8])) -> Option<bool> {
    if let (Json::Number(x), Json::Number(y)) = (a.0, b.0) {
        if x.contains(['.', 'e', 'E']) || y.contains(['.', 'e', 'E']) {
            return Some(Dec::number(x)?.equals(&Dec::number(y)?));
        }
    }
    Some(a.1 == b.1)
}

/// The columns present in both images whose values differ, in `after`'s order.
fn changed<'t>(before: &(Image<'t>, &[Member]), after: &(Image<'t>, &[Member])) -> Option<Vec<&'t str>> {
    let mut names = Vec::new();
    for (index, entry) in after.0.entries.iter().enumerate() {
        let Some(old) = before.0.get(entry.name) else { continue };
        let old_index = before.0.entries.iter().position(|e| e.name == entry.name)?;
        let old_value = (&before.1[old_index].1, before.0.bytes(old));
        if !same(old_value, (&after.1[index].1, after.0.bytes(entry)))? {
            names.push(entry.name);
        }
    }
    Some(names)
}

/// One message; `wall_clock` reads `current_ts` in a source zone other than UTC.
pub fn parse(raw: &[u8], profile: &Profile, options: &Options, at: &Coordinates, wall_clock: WallClock) -> Option<Record> {
    // Only the fields read are built; the rest is checked and skipped.
    let members = json::parse_message(raw, BUILT)?;
    let doc = Fields::of(&members);
    decline::at(Stage::Operation);
    let op: &'static str = match doc.op_type {
        Some(Json::Str(kind)) => match kind.as_ref() {
            "I" => "INSERT",
            "U" => "UPDATE",
            "D" => "DELETE",
            _ => return None, // T (a TRUNCATE event) and unknown ops
        },
        _ => return None,
    };
    decline::at(Stage::Envelope);
    let (database, schema, table) = table_name(doc.table, options)?;
    let ts_ms = time_ms(doc.op_ts, None).ok()?; // op_ts is UTC
    let ingest_ts_ms = time_ms(doc.current_ts, wall_clock).ok()?;
    let (pos, major, minor) = position(doc.pos)?;
    let tokens: &[Member] = match doc.tokens {
        None | Some(Json::Null) => &[],
        Some(Json::Object(tokens, _)) => tokens,
        Some(_) => return None,
    };
    let scn = token(tokens, SCN_TOKENS).ok()?;
    let transaction_id = token(tokens, TXID_TOKENS).ok()?;
    decline::at(Stage::Keys);
    let primary_key = primary_key(doc.primary_keys)?;

    decline::at(Stage::Values);
    let before = image(doc.before).ok()?;
    let after = image(doc.after).ok()?;
    // require_key_columns' image: the new row of an insert, the old one of a delete, and of an
    // update the old one when given. The record key reads the new row, else the old one.
    let identity = match (op, &before, &after) {
        ("INSERT", None, Some(after)) => after,
        ("DELETE", Some(before), None) => before,
        ("UPDATE", Some(before), _) => before,
        ("UPDATE", None, Some(after)) => after,
        _ => return None, // a missing or superfluous image: rejects
    };
    decline::at(Stage::Keys);
    if primary_key.iter().any(|name| identity.0.get(name).is_none()) {
        return None;
    }
    decline::at(Stage::Values);
    let changed = match (&before, &after) {
        (Some(before), Some(after)) => Some(changed(before, after)?),
        _ => None,
    };
    let (before, after) = (before.as_ref().map(|i| &i.0), after.as_ref().map(|i| &i.0));

    let mut body = Vec::with_capacity(256 + 2 * raw.len());
    body.extend_from_slice(b"\xc3\x01");
    body.extend_from_slice(&profile.fingerprint);
    avro::op(&mut body, op);
    avro::string(&mut body, &profile.format_id);
    avro::opt_string(&mut body, Some(&options.db_type));
    avro::opt_string(&mut body, database);
    avro::opt_string(&mut body, schema);
    avro::opt_string(&mut body, Some(table));
    body.extend_from_slice(&[0, 0, 0, 0]); // tenant, binlog_file, binlog_pos, gtid
    avro::opt_string(&mut body, scn);
    avro::opt_string(&mut body, Some(pos)); // checkpoint: pos verbatim
    avro::opt_string(&mut body, transaction_id);
    body.push(0); // sequence
    event::order_key(&mut body, major, minor, 0);
    avro::opt_long(&mut body, ts_ms);
    avro::opt_long(&mut body, ingest_ts_ms);
    avro::strings(&mut body, &primary_key);
    inferred::write_columns(&mut body, [after, before]);
    inferred::write_image(&mut body, before);
    inferred::write_image(&mut body, after);
    avro::row_tail(&mut body, changed.as_deref(), at.topic, at.partition, at.offset, 0);

    // The record key: [database, schema, table, [key values]] as orjson writes it.
    decline::at(Stage::Keys);
    let key_image = after.or(before)?;
    let mut key = Vec::with_capacity(64);
    key.push(b'[');
    for part in [database, schema] {
        match part {
            Some(text) => json_string(&mut key, text),
            None => key.extend_from_slice(b"null"),
        }
        key.push(b',');
    }
    json_string(&mut key, table);
    values::key_values(&mut key, &primary_key, |name, key| key_image.write_key(key, name))?;
    key.push(b']');

    let table_name = format!("{}.{}", database.unwrap_or(""), table);
    Some(Record { key, value: body, table: table_name, op, ts_ms })
}
