//! Maxwell JSON (`services/maxwell_json/parser.py`) in the fast lane.
//!
//! Handles insert / update / delete / bootstrap-insert row messages whose
//! values are JSON strings, booleans, nulls, integers (int64, or wider as
//! BigInt), other numbers (Decimal, written as `decimal_text`) and nested
//! objects / arrays of those (rendered back compactly, as orjson does).
//! Maxwell sends no column types, so every column is inferred from its value
//! (`RowTypes.columns_for` + `inferred_logical`, in `inferred.rs`). Anything
//! else (DDL, heartbeats, bootstrap framing, Canal-looking messages, the
//! integer `-0`, odd envelope fields, every message the Python parser would
//! reject) returns `None` and takes the Python parser. The order key follows
//! option `order` for every message (`by_position`): the input's Kafka order
//! (a `position` only fills the source), or the binlog position, where a
//! message without one declines (the parser rejects it).

use std::borrow::Cow;

use crate::decline::{self, Stage};
use crate::avro;
use crate::event::{self, epoch_ms, Coordinates, Profile, Source};
use crate::inferred::{convert, overlay, write_columns, write_image, Image};
use crate::json::{self, int_field, str_field, Json};
use crate::values::{self, all_digits};

/// One message's only record.
pub struct Record {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    /// `database.table` as the runtime's table rules and metrics name it.
    pub table: String,
    pub op: &'static str,
    pub ts_ms: i64,
}

const BUILT: &[&str] = &[
    "type",
    "database",
    "table",
    "ts",
    "xid",
    "xoffset",
    "commit",
    "position",
    "gtid",
    "primary_key",
    "primary_key_columns",
    "data",
    "old",
];
/// Fields whose mere presence makes the Python parser call the message Canal-style (a reject).
const CANAL_FIELDS: &[&str] = &["isDdl", "pkNames", "mysqlType", "sqlType"];
const SEQ_SCALE: u128 = 10_000_000_000;
const COMMIT_SEQ: i64 = 9_999_999_999;
const MAX_FILE_NAME: usize = 512;

#[derive(Default)]
struct Fields<'d, 'a> {
    kind: Option<&'d Json<'a>>,
    database: Option<&'d Json<'a>>,
    table: Option<&'d Json<'a>>,
    ts: Option<&'d Json<'a>>,
    xid: Option<&'d Json<'a>>,
    xoffset: Option<&'d Json<'a>>,
    commit: Option<&'d Json<'a>>,
    position: Option<&'d Json<'a>>,
    gtid: Option<&'d Json<'a>>,
    primary_key: Option<&'d Json<'a>>,
    primary_key_columns: Option<&'d Json<'a>>,
    data: Option<&'d Json<'a>>,
    old: Option<&'d Json<'a>>,
    canal: bool,
}

impl<'d, 'a> Fields<'d, 'a> {
    fn of(members: &'d [(Cow<'a, str>, Json<'a>)]) -> Self {
        let mut f = Fields::default();
        for (key, value) in members {
            let slot = match key.as_ref() {
                "type" => &mut f.kind,
                "database" => &mut f.database,
                "table" => &mut f.table,
                "ts" => &mut f.ts,
                "xid" => &mut f.xid,
                "xoffset" => &mut f.xoffset,
                "commit" => &mut f.commit,
                "position" => &mut f.position,
                "gtid" => &mut f.gtid,
                "primary_key" => &mut f.primary_key,
                "primary_key_columns" => &mut f.primary_key_columns,
                "data" => &mut f.data,
                "old" => &mut f.old,
                other => {
                    f.canal |= CANAL_FIELDS.contains(&other);
                    continue;
                }
            };
            *slot = Some(value);
        }
        f
    }
}

/// `by_position`: option `order=position` (`by_position` in the parser's `_order`).
pub fn parse(raw: &[u8], profile: &Profile, by_position: bool, at: &Coordinates) -> Option<Record> {
    // Only the fields read are built; the rest (server_id, thread_id...) is checked and skipped.
    let members = json::parse_message(raw, BUILT)?;
    let doc = Fields::of(&members);
    decline::at(Stage::Operation);
    if doc.canal {
        return None; // the Python parser rejects a Canal-style message
    }
    let op: &'static str = match doc.kind {
        Some(Json::Str(kind)) => match kind.as_ref() {
            "insert" => "INSERT",
            "update" => "UPDATE",
            "delete" => "DELETE",
            "bootstrap-insert" => "SNAPSHOT",
            _ => return None, // DDL, heartbeats, bootstrap framing, unknown types
        },
        _ => return None,
    };
    decline::at(Stage::Envelope);
    let database = str_field(doc.database).ok()?.filter(|s| !s.is_empty());
    let table = str_field(doc.table).ok()?.filter(|s| !s.is_empty())?;
    let ts_ms = epoch_ms(int_field(doc.ts).ok()??);

    // Images: data is the after image (the deleted row for delete); old only on update.
    decline::at(Stage::Values);
    let data = convert(doc.data?)?;
    let old = match doc.old {
        None | Some(Json::Null) => None,
        Some(old) if op == "UPDATE" => Some(convert(old)?),
        Some(_) => return None, // 'old' on another op: a reject
    };
    let (before, after, changed): (Option<Image>, Option<&Image>, Option<Vec<&str>>) = match (op, &old) {
        ("DELETE", _) => (None, None, None),
        ("UPDATE", Some(old)) => {
            (Some(overlay(&data, old)), Some(&data), Some(old.entries.iter().map(|e| e.name).collect()))
        }
        _ => (None, Some(&data), None),
    };
    let before = if op == "DELETE" { Some(&data) } else { before.as_ref() };

    decline::at(Stage::Keys);
    // _primary_key: names must be strings; a value list of another length is inconsistent.
    let primary_key: Vec<&str> = match doc.primary_key_columns {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(names)) => {
            let mut out = Vec::with_capacity(names.len());
            for name in names {
                let Json::Str(n) = name else { return None };
                out.push(n.as_ref());
            }
            out
        }
        Some(_) => return None,
    };
    match doc.primary_key {
        None | Some(Json::Null) => {}
        Some(Json::Array(values)) => {
            if !primary_key.is_empty() && values.len() != primary_key.len() {
                return None;
            }
        }
        Some(_) => return None,
    }
    // require_key_columns on before (else after); the key reads after (else before).
    let identity = before.or(after)?;
    if primary_key.iter().any(|name| identity.get(name).is_none()) {
        return None;
    }
    let key_image = after.or(before)?;

    decline::at(Stage::Envelope);
    // _tx_sequence: xoffset, else the commit row's sequence, else 0.
    let commit = match doc.commit {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(_) => return None,
    };
    let seq = match int_field(doc.xoffset).ok()? {
        Some(x) if (0..COMMIT_SEQ).contains(&x) => x,
        Some(_) => return None,
        None if commit => COMMIT_SEQ,
        None => 0,
    } as u128;
    let xid = int_field(doc.xid).ok()?;
    // _position: "file:offset", split at the last colon.
    let position = match str_field(doc.position).ok()? {
        None => None,
        Some(text) => {
            let (file_name, offset) = text.rsplit_once(':')?;
            if file_name.is_empty()
                || file_name.chars().count() > MAX_FILE_NAME
                || !all_digits(offset)
                || offset.len() > 10
            {
                return None;
            }
            Some((file_name, offset.parse::<i64>().ok()?))
        }
    };
    // `_order`: one key space for the stream, option `order`; never chosen by `position`'s presence.
    let (major, minor) = if !by_position {
        event::input_order(at.partition, at.offset)? // `kafka_order_key`; a position only fills the source
    } else {
        match position {
            Some((file_name, offset)) => (event::binlog_index(file_name)?, offset as u128 * SEQ_SCALE + seq),
            None => return None, // no position under order=position: a reject
        }
    };
    let gtid = str_field(doc.gtid).ok()?.filter(|s| !s.is_empty());

    let transaction_id = xid.map(|x| x.to_string()); // str(xid)
    let source = Source {
        binlog_file: position.map(|(file, _)| file),
        binlog_pos: position.map(|(_, offset)| offset),
        gtid,
        transaction_id: transaction_id.as_deref(),
        ..Source::of(database, table)
    };
    let mut body = Vec::with_capacity(256 + 2 * raw.len());
    body.extend_from_slice(b"\xc3\x01");
    body.extend_from_slice(&profile.fingerprint);
    source.write(&mut body, profile, op);
    event::order_key(&mut body, major, minor, 0);
    avro::opt_long(&mut body, Some(ts_ms));
    body.push(0); // ingest_ts_ms
    avro::strings(&mut body, &primary_key);
    write_columns(&mut body, [after, before]);
    write_image(&mut body, before);
    write_image(&mut body, after);
    avro::row_tail(&mut body, changed.as_deref(), at.topic, at.partition, at.offset, 0);

    // The record key: [database, schema, table, [key values]] as orjson writes it.
    let mut key = source.key_head();
    values::key_values(&mut key, &primary_key, |name, key| key_image.write_key(key, name))?;
    key.push(b']');

    Some(Record { key, value: body, table: source.table_name(), op, ts_ms })
}
