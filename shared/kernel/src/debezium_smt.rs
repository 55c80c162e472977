//! Debezium rows flattened by ExtractNewRecordState (`services/debezium_smt/parser.py`) in the fast lane.
//!
//! Handles JsonConverter messages with schemas, exactly `{"schema":S,"payload":ROW}`, where
//! ROW is the new row (the deleted row when `__deleted` is true) plus the SMT's `__` metadata
//! fields, and S's struct declares every column (its `__` fields are metadata, never columns).
//! The planner (`services/debezium_smt/plan.py`) reads S with the parser's own Connect mapping; the
//! values, the event and the record key are written by the Debezium lane's code
//! (`debezium::record`). The table is `__db`/`__table`, else the topic's configured
//! `db.table`. Everything else (tombstones, schema-less rows, other formats' messages,
//! metadata in unusual forms, anything the Python parser would reject) returns `None` and
//! takes the Python parser.

use crate::decline::{self, Stage};
use crate::debezium::{self, member, opt_int, opt_str, Change, Envelope, Member, Outcome, PlanFor, Recent, Source};
use crate::event::{epoch_ms, Coordinates, Profile};
use crate::json::Json;

/// The lane's settings, read from the parse options when it is made.
pub struct Options {
    /// Option `primary_key`'s column names (`primary_key_option`), maybe none.
    pub primary_key: Vec<String>,
    /// Option `db_type` upper-cased, the source's type when the row names no `__source_connector`.
    pub db_type: Option<String>,
}

/// Key sets of whole messages of other formats (`_OTHER_FORMATS`): a row holding all of one is a reject.
const OTHER_FORMATS: &[&[&str]] = &[
    &["op", "source", "after"],
    &["op", "source", "before"],
    &["data", "isDdl", "type"],
    &["database", "table", "type", "data", "ts"],
    &["allMetaData"],
    &["op_type", "table"],
];

/// The SMT's metadata fields the parser reads (the other `__` fields are ignored).
#[derive(Default)]
struct Meta<'d, 'a> {
    deleted: Option<&'d Json<'a>>,
    op: Option<&'d Json<'a>>,
    table: Option<&'d Json<'a>>,
    db: Option<&'d Json<'a>>,
    schema: Option<&'d Json<'a>>,
    connector: Option<&'d Json<'a>>,
    file: Option<&'d Json<'a>>,
    pos: Option<&'d Json<'a>>,
    gtid: Option<&'d Json<'a>>,
    source_ts_ms: Option<&'d Json<'a>>,
    ts_ms: Option<&'d Json<'a>>,
}

/// The row's metadata and its columns (the members whose names do not start with `__`), in order.
fn split<'d, 'a>(row: &'d [Member<'a>]) -> (Meta<'d, 'a>, Vec<&'d Member<'a>>) {
    let mut meta = Meta::default();
    let mut columns = Vec::with_capacity(row.len());
    for item in row {
        let Some(name) = item.0.strip_prefix("__") else {
            columns.push(item);
            continue;
        };
        let slot = match name {
            "deleted" => &mut meta.deleted,
            "op" => &mut meta.op,
            "table" => &mut meta.table,
            "db" => &mut meta.db,
            "schema" => &mut meta.schema,
            "source_connector" => &mut meta.connector,
            "source_file" => &mut meta.file,
            "source_pos" => &mut meta.pos,
            "source_gtid" => &mut meta.gtid,
            "source_ts_ms" => &mut meta.source_ts_ms,
            "ts_ms" => &mut meta.ts_ms,
            _ => continue,
        };
        *slot = Some(&item.1);
    }
    (meta, columns)
}

/// `_op`: `__deleted` true is a DELETE, else `__op`, else UPSERT (an insert cannot be told from
/// an update). Spellings other than Debezium's own (`"TRUE"`, `" true"`) and contradictions
/// (rejects) decline.
fn op(meta: &Meta) -> Result<&'static str, ()> {
    let deleted = match meta.deleted {
        None | Some(Json::Null) => None,
        Some(Json::Bool(flag)) => Some(*flag),
        Some(Json::Str(text)) if text == "true" => Some(true),
        Some(Json::Str(text)) if text == "false" => Some(false),
        Some(_) => return Err(()),
    };
    let kind = match meta.op {
        None | Some(Json::Null) => None,
        Some(Json::Str(kind)) => Some(match kind.as_ref() {
            "c" => "INSERT",
            "u" => "UPDATE",
            "r" => "SNAPSHOT",
            "d" => "DELETE",
            _ => return Err(()),
        }),
        Some(_) => return Err(()),
    };
    match (deleted, kind) {
        (Some(true), None | Some("DELETE")) => Ok("DELETE"),
        (Some(true), Some(_)) | (Some(false), Some("DELETE")) => Err(()),
        (_, Some(op)) => Ok(op),
        (_, None) => Ok("UPSERT"),
    }
}

/// `_source`: the row's `__table` (and `__db`), else the configured `db.table` (`source_table`).
fn source<'t>(meta: &Meta<'t, '_>, options: &Options, source_table: Option<&'t str>) -> Result<Source<'t>, ()> {
    let database = opt_str(meta.db)?;
    let (database, table) = match opt_str(meta.table)? {
        Some(table) => (database, table),
        None => {
            // No table configured either: a CONFIG reject, left to the Python parser.
            let configured = source_table.filter(|t| !t.is_empty()).ok_or(())?;
            let (configured_db, table) = configured.rsplit_once('.').unwrap_or(("", configured));
            (database.or(Some(configured_db).filter(|d| !d.is_empty())), table)
        }
    };
    let db_type = match opt_str(meta.connector)? {
        // Python's str.upper(): the same on ASCII only.
        Some(connector) if connector.is_ascii() => Some(connector.to_ascii_uppercase()),
        Some(_) => return Err(()),
        None => options.db_type.clone(),
    };
    Ok(Source {
        db_type,
        database,
        schema: opt_str(meta.schema)?,
        table,
        binlog_file: opt_str(meta.file)?,
        binlog_pos: opt_int(meta.pos)?,
        gtid: opt_str(meta.gtid)?,
        ..Source::default()
    })
}

/// One message; `source_table` is the topic's configured `db.table` (maybe none), `known` the
/// schemas seen recently (`debezium::envelope`'s shortcut).
pub fn parse<'a>(
    raw: &'a [u8],
    profile: &Profile,
    options: &Options,
    source_table: Option<&str>,
    at: &Coordinates,
    known: &Recent,
    plan_for: &PlanFor,
) -> Outcome<'a> {
    parse_inner(raw, profile, options, source_table, at, known, plan_for).unwrap_or(Outcome::Decline)
}

fn parse_inner<'a>(
    raw: &'a [u8],
    profile: &Profile,
    options: &Options,
    source_table: Option<&str>,
    at: &Coordinates,
    known: &Recent,
    plan_for: &PlanFor,
) -> Result<Outcome<'a>, ()> {
    let Envelope { schema, payload, plan: known_plan, members } = debezium::envelope(raw, known).ok_or(())?;
    decline::at(Stage::Envelope);
    if members != 2 {
        return Err(()); // not exactly {schema, payload}: the whole message is a schema-less row
    }
    let Json::Object(row, _) = &payload else { return Err(()) }; // null: a tombstone
    if OTHER_FORMATS.iter().any(|keys| keys.iter().all(|key| member(row, key).is_some())) {
        return Err(());
    }
    let (meta, columns) = split(row);
    if columns.is_empty() {
        return Err(());
    }
    decline::at(Stage::Operation);
    let op = op(&meta)?;
    decline::at(Stage::Envelope);
    let source = source(&meta, options, source_table)?;
    // `__source_ts_ms` 0 means unknown.
    let ts_ms = opt_int(meta.source_ts_ms)?.filter(|&t| t != 0).map(epoch_ms);
    let ingest_ts_ms = opt_int(meta.ts_ms)?.map(epoch_ms);
    // Kafka order: the message holds no source position.
    let order = (u128::try_from(at.partition).map_err(|_| ())?, u128::try_from(at.offset).map_err(|_| ())?);
    decline::at(Stage::Types);
    let plan = match known_plan.map(Some).or_else(|| plan_for(schema)) {
        Some(Some(plan)) => plan,
        Some(None) => return Err(()), // the planner declined this schema
        None => return Ok(Outcome::NeedPlan(schema)),
    };
    let image = Some(columns.as_slice());
    let (before, after) = if op == "DELETE" { (image, None) } else { (None, image) };
    let change = Change { op, source, order, ts_ms, ingest_ts_ms, before, after };
    debezium::record(&change, profile, &options.primary_key, &plan, at).map(Outcome::Record).ok_or(())
}
