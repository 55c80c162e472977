//! The parts of a canonical row event that the lanes write alike: the `source` header, the
//! record key's opening, the order key and the binlog file index (`shared/parsing/order.py`),
//! with the record a lane returns, its fixed parts (`Profile`) and the input message's place.

use crate::avro;
use crate::json::json_string;

/// The fixed parts of every record: the schema fingerprint and the source header.
pub struct Profile {
    pub fingerprint: [u8; 8],
    pub format_id: String,
    pub db_type: String,
}

pub struct Record {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    /// `database.table` as the runtime's table rules and metrics name it (the same for every row).
    pub table: String,
    pub op: &'static str,
    pub ts_ms: Option<i64>,
}

pub struct Coordinates<'t> {
    pub topic: &'t str,
    pub partition: i64,
    pub offset: i64,
}

const SECONDS_LIMIT: i64 = 100_000_000_000;

/// `epoch_ms`: seconds or milliseconds by size.
pub fn epoch_ms(value: i64) -> i64 {
    if value.abs() < SECONDS_LIMIT {
        value * 1000
    } else {
        value
    }
}

/// The `source` fields a lane fills in; the others (`schema`, `tenant`, `scn`, `checkpoint`) are
/// null for every row lane.
pub struct Source<'a> {
    pub database: Option<&'a str>,
    pub table: &'a str,
    pub binlog_file: Option<&'a str>,
    pub binlog_pos: Option<i64>,
    pub gtid: Option<&'a str>,
    pub transaction_id: Option<&'a str>,
    pub sequence: Option<&'a str>,
}

impl<'a> Source<'a> {
    /// A source naming only its table; set the other fields with struct update syntax.
    pub fn of(database: Option<&'a str>, table: &'a str) -> Self {
        let (binlog_file, binlog_pos, gtid, transaction_id, sequence) = (None, None, None, None, None);
        Source { database, table, binlog_file, binlog_pos, gtid, transaction_id, sequence }
    }

    /// The event's `op` and its `source` record, in change_event.v1's field order.
    pub fn write(&self, out: &mut Vec<u8>, profile: &Profile, op: &str) {
        avro::op(out, op);
        avro::string(out, &profile.format_id);
        avro::opt_string(out, Some(&profile.db_type));
        avro::opt_string(out, self.database);
        out.push(0); // schema
        avro::opt_string(out, Some(self.table));
        out.push(0); // tenant
        avro::opt_string(out, self.binlog_file);
        avro::opt_long(out, self.binlog_pos);
        avro::opt_string(out, self.gtid);
        out.push(0); // scn
        out.push(0); // checkpoint
        avro::opt_string(out, self.transaction_id);
        avro::opt_string(out, self.sequence);
    }

    /// The record key's opening `[database,null,table` (`event_key`); the key values and `]` follow.
    pub fn key_head(&self) -> Vec<u8> {
        let mut key = Vec::with_capacity(48);
        key.push(b'[');
        match self.database {
            Some(db) => json_string(&mut key, db),
            None => key.extend_from_slice(b"null"),
        }
        key.extend_from_slice(b",null,");
        json_string(&mut key, self.table);
        key
    }

    /// `database.table` as the runtime's table rules and metrics name it.
    pub fn table_name(&self) -> String {
        format!("{}.{}", self.database.unwrap_or(""), self.table)
    }
}

/// What every record of a flat (Canal-shaped) message shares: the Avro source header, the
/// record key's opening `[database,null,table`, and the `database.table` name.
pub(crate) fn flat_head(
    profile: &Profile,
    op: &str,
    database: Option<&str>,
    table: &str,
    gtid: Option<&str>,
    id: i64,
) -> (Vec<u8>, Vec<u8>, String) {
    let sequence = id.to_string(); // sequence: str(id)
    let source = Source { gtid, sequence: Some(&sequence), ..Source::of(database, table) };
    let mut head = Vec::with_capacity(64);
    source.write(&mut head, profile, op);
    (head, source.key_head(), source.table_name())
}

/// `order_key`: `%020d.%020d.%06d`, as an Avro string. The caller keeps the parts in range
/// (major and minor below 10**20, the row below 10**6), as `order_key` requires.
pub fn order_key(out: &mut Vec<u8>, major: u128, minor: u128, row: usize) {
    let mut text = [b'0'; 48];
    let mut put = |mut n: u128, end: usize| {
        let mut i = end;
        while n > 0 {
            i -= 1;
            text[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(major, 20);
    put(minor, 41);
    put(row as u128, 48);
    text[20] = b'.';
    text[41] = b'.';
    avro::bytes(out, &text);
}

/// `%020d.%020d.%06d` for non-negative numbers (`order_key` on the flat lanes' i64 parts).
pub(crate) fn flat_order_key(out: &mut Vec<u8>, major: i64, minor: i64, row: usize) {
    order_key(out, major as u128, minor as u128, row);
}

/// `kafka_order_key`'s major and minor: the input partition and offset. None for negative
/// coordinates, which `order_key` rejects (never seen from Kafka).
pub fn input_order(partition: i64, offset: i64) -> Option<(u128, u128)> {
    Some((u128::try_from(partition).ok()?, u128::try_from(offset).ok()?))
}

/// `binlog_index`: the last run of digits in the file name's last 64 characters (at most 20);
/// None where Python rejects, and for non-ASCII tails (Python's `\d` also matches other
/// scripts' digits: left to it).
pub fn binlog_index(file_name: &str) -> Option<u128> {
    let start = file_name.char_indices().rev().nth(63).map_or(0, |(i, _)| i);
    let tail = &file_name[start..];
    if !tail.is_ascii() {
        return None;
    }
    let b = tail.as_bytes();
    let end = b.iter().rposition(u8::is_ascii_digit)? + 1;
    let begin = b[..end].iter().rposition(|c| !c.is_ascii_digit()).map_or(0, |i| i + 1);
    if end - begin > 20 {
        return None;
    }
    tail[begin..end].parse().ok()
}
