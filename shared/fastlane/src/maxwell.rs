//! Maxwell JSON (`services/maxwell_json/parser.py`) in the fast lane.
//!
//! Handles insert / update / delete / bootstrap-insert row messages whose
//! values are JSON strings, booleans, nulls, integers (int64, or wider as
//! BigInt), other numbers (Decimal, written as `decimal_text`) and nested
//! objects / arrays of those (rendered back compactly, as orjson does).
//! Maxwell sends no column types, so every column is inferred from its value
//! (`RowTypes.columns_for` + `inferred_logical`), which is done here. Anything
//! else (DDL, heartbeats, bootstrap framing, Canal-looking messages, the
//! integer `-0`, odd envelope fields, every message the Python parser would
//! reject) returns `None` and takes the Python parser.

use std::borrow::Cow;

use crate::avro;
use crate::canal::{epoch_ms, int_field, json_string, str_field, Coordinates, Profile};
use crate::event::{self, Source};
use crate::inferred::{self, Logical};
use crate::json::{self, Json};
use crate::values;

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

/// How a value renders in the record key (`records._key_value`: the JSON view).
#[derive(Clone, Copy)]
enum KeyView {
    Null,
    Bool(bool),
    Number(i64),
    /// A JSON string: text, BigInt digits, decimal text, nested JSON text; a range of the image buffer.
    Text(usize, usize),
}

pub(crate) struct Entry<'t> {
    pub(crate) name: &'t str,
    start: usize,
    end: usize,
    logical: Logical,
    key: KeyView,
}

/// A converted image: every value's Avro union bytes in one buffer, and each entry's place.
pub(crate) struct Image<'t> {
    buf: Vec<u8>,
    pub(crate) entries: Vec<Entry<'t>>,
}

impl<'t> Image<'t> {
    pub(crate) fn get(&self, name: &str) -> Option<&Entry<'t>> {
        self.entries.iter().find(|e| e.name == name)
    }

    pub(crate) fn bytes(&self, entry: &Entry<'t>) -> &[u8] {
        &self.buf[entry.start..entry.end]
    }

    pub(crate) fn write_key(&self, out: &mut Vec<u8>, entry: Option<&Entry<'t>>) {
        match entry.map(|e| e.key) {
            None | Some(KeyView::Null) => out.extend_from_slice(b"null"),
            Some(KeyView::Bool(true)) => out.extend_from_slice(b"true"),
            Some(KeyView::Bool(false)) => out.extend_from_slice(b"false"),
            Some(KeyView::Number(n)) => out.extend_from_slice(n.to_string().as_bytes()),
            Some(KeyView::Text(start, end)) => {
                // The buffer holds only UTF-8 texts at these ranges (written from &str).
                let text = std::str::from_utf8(&self.buf[start..end]).unwrap_or_default();
                json_string(out, text);
            }
        }
    }
}

/// An Avro string branch holding `text`; the key view points at the text.
fn push_text(buf: &mut Vec<u8>, branch: u8, text: &str) -> KeyView {
    buf.push(branch);
    avro::long(buf, text.len() as i64);
    let start = buf.len();
    buf.extend_from_slice(text.as_bytes());
    KeyView::Text(start, buf.len())
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
}

/// A JSON integer's text (`-?digits`, no fraction or exponent), "-0" excepted (Python reads it as 0).
pub(crate) fn integer_text(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    all_digits(digits) && text != "-0"
}

/// `untyped_image`: `UNTYPED.convert` of a JSON object of column values (all inferred).
pub(crate) fn convert<'t>(value: &'t Json<'t>) -> Option<Image<'t>> {
    let Json::Object(members, raw) = value else { return None };
    let mut image = Image { buf: Vec::with_capacity(raw.len() + 16), entries: Vec::with_capacity(members.len()) };
    for (name, value) in members {
        let start = image.buf.len();
        let (logical, key) = match value {
            Json::Null => {
                image.buf.push(0);
                (Logical::Unknown, KeyView::Null)
            }
            Json::Bool(b) => {
                image.buf.extend_from_slice(&[0x02, *b as u8]);
                (Logical::Boolean, KeyView::Bool(*b))
            }
            Json::Str(text) => (Logical::Str, push_text(&mut image.buf, 0x08, text)),
            Json::Number(text) => number(text, &mut image.buf)?,
            Json::Array(_) | Json::Object(..) => {
                // A JSON column or a SET: compact JSON text (sqltypes._json_text).
                let mut rendered = Vec::with_capacity(64);
                compact(value, &mut rendered)?;
                let text = std::str::from_utf8(&rendered).ok()?;
                (Logical::Str, push_text(&mut image.buf, 0x08, text))
            }
            Json::Raw(_) => return None,
        };
        image.entries.push(Entry { name, start, end: image.buf.len(), logical, key });
    }
    Some(image)
}

/// A top-level JSON number: int64, BigInt (wider integers) or Decimal.
fn number(text: &str, buf: &mut Vec<u8>) -> Option<(Logical, KeyView)> {
    if integer_text(text) {
        let digits = text.trim_start_matches('-');
        if digits.len() <= 19 {
            if let Ok(n) = text.parse::<i64>() {
                buf.push(0x04);
                avro::long(buf, n);
                return Some((Logical::Int64, KeyView::Number(n)));
            }
        }
        // BigInt: the source digits are int.__repr__'s (JSON has no leading zeros).
        return Some((Logical::Integer, push_text(buf, 0x0c, text)));
    }
    // A fraction or an exponent: Decimal(text) (the exact decode), written as decimal_text.
    let text = Dec::parse(text)?.text();
    Some((Logical::Decimal, push_text(buf, 0x0e, &text)))
}

/// A JSON number with a fraction or an exponent as Python's `Decimal(text)` holds it.
pub(crate) struct Dec {
    negative: bool,
    /// The coefficient's digits without leading zeros ("0" for zero).
    digits: String,
    exponent: i64,
}

impl Dec {
    /// `-?int(.frac)?([eE][+-]?exp)?`; exponents of more than 9 digits are declined.
    pub(crate) fn parse(text: &str) -> Option<Dec> {
        if !text.contains(['.', 'e', 'E']) {
            return None; // an integer ("-0" included): Python reads it as an int
        }
        let (negative, body) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exponent) = match body.find(['e', 'E']) {
            Some(at) => (&body[..at], Some(&body[at + 1..])),
            None => (body, None),
        };
        let (int_part, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if !all_digits(int_part) || (mantissa.contains('.') && !all_digits(frac)) {
            return None;
        }
        let exponent = match exponent {
            None => 0,
            Some(e) => {
                let unsigned = e.strip_prefix(['+', '-']).unwrap_or(e);
                if !all_digits(unsigned) || unsigned.len() > 9 {
                    return None;
                }
                e.parse::<i64>().ok()?
            }
        };
        let mut digits: String = int_part.trim_start_matches('0').to_string();
        if digits.is_empty() {
            digits.push_str(frac.trim_start_matches('0'));
        } else {
            digits.push_str(frac);
        }
        if digits.is_empty() {
            digits.push('0');
        }
        Some(Dec { negative, digits, exponent: exponent - frac.len() as i64 })
    }

    /// Any JSON number: an integer as `Decimal(int)`, else as `parse`.
    pub(crate) fn number(text: &str) -> Option<Dec> {
        if text.contains(['.', 'e', 'E']) {
            return Dec::parse(text);
        }
        let (negative, body) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if !all_digits(body) {
            return None;
        }
        let digits = body.trim_start_matches('0');
        let digits = if digits.is_empty() { "0" } else { digits };
        Some(Dec { negative, digits: digits.to_string(), exponent: 0 })
    }

    /// Python's `==` between two numbers (ints, Decimals): the same value, whatever the spelling
    /// (`1`, `1.0`, `1.00`, `1E+0`, and every zero are equal).
    pub(crate) fn equals(&self, other: &Dec) -> bool {
        self.normal() == other.normal()
    }

    /// (sign, digits without trailing zeros, exponent): one form per value.
    fn normal(&self) -> (bool, &str, i64) {
        if self.is_zero() {
            return (false, "0", 0);
        }
        let digits = self.digits.trim_end_matches('0');
        (self.negative, digits, self.exponent + (self.digits.len() - digits.len()) as i64)
    }

    fn is_zero(&self) -> bool {
        self.digits == "0"
    }

    fn adjusted(&self) -> i64 {
        self.exponent + self.digits.len() as i64 - 1
    }

    /// `str(Decimal)`: the specification's to-scientific-string.
    fn scientific(&self) -> String {
        let n = self.digits.len() as i64;
        let left = self.exponent + n;
        let dot = if self.exponent <= 0 && left > -6 { left } else { 1 };
        let mut out = String::with_capacity(self.digits.len() + 16);
        if self.negative {
            out.push('-');
        }
        if dot <= 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-dot) as usize));
            out.push_str(&self.digits);
        } else if dot >= n {
            out.push_str(&self.digits);
            out.push_str(&"0".repeat((dot - n) as usize));
        } else {
            out.push_str(&self.digits[..dot as usize]);
            out.push('.');
            out.push_str(&self.digits[dot as usize..]);
        }
        if left != dot {
            out.push_str(&format!("E{:+}", left - dot));
        }
        out
    }

    /// `f"{value:f}"`: plain notation with the coefficient's digits (zero with a positive
    /// exponent is rescaled to plain zero first).
    fn plain(&self) -> String {
        let (digits, exponent) =
            if self.is_zero() && self.exponent > 0 { ("0", 0) } else { (self.digits.as_str(), self.exponent) };
        let n = digits.len() as i64;
        let dot = exponent + n;
        let mut out = String::with_capacity(digits.len() + 48);
        if self.negative {
            out.push('-');
        }
        if dot < 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-dot) as usize));
            out.push_str(digits);
        } else if dot > n {
            out.push_str(digits);
            out.push_str(&"0".repeat((dot - n) as usize));
        } else {
            let (int_part, frac) = digits.split_at(dot as usize);
            out.push_str(if int_part.is_empty() { "0" } else { int_part });
            if !frac.is_empty() {
                out.push('.');
                out.push_str(frac);
            }
        }
        out
    }

    /// `decimal_text`: str() unless it is scientific and the exponents are moderate.
    fn text(&self) -> String {
        let scientific = self.scientific();
        if !scientific.contains('E') {
            return scientific;
        }
        if (-40..=40).contains(&self.exponent) && (-40..=40).contains(&self.adjusted()) {
            return self.plain();
        }
        scientific
    }
}

/// orjson's compact rendering of a nested value (`sqltypes._json_text`).
fn compact(value: &Json, out: &mut Vec<u8>) -> Option<()> {
    match value {
        Json::Null => out.extend_from_slice(b"null"),
        Json::Bool(true) => out.extend_from_slice(b"true"),
        Json::Bool(false) => out.extend_from_slice(b"false"),
        Json::Number(text) if integer_text(text) => out.extend_from_slice(text.as_bytes()),
        // A fraction or exponent inside a nested value: str(Decimal) spliced in (sqltypes._exact_json).
        Json::Number(text) => out.extend_from_slice(Dec::parse(text)?.scientific().as_bytes()),
        Json::Str(text) => json_string(out, text),
        Json::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                compact(item, out)?;
            }
            out.push(b']');
        }
        Json::Object(members, _) => {
            out.push(b'{');
            for (i, (name, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_string(out, name);
                out.push(b':');
                compact(item, out)?;
            }
            out.push(b'}');
        }
        Json::Raw(_) => return None,
    }
    Some(())
}

/// `overlay(data, old)`: data's columns with old's values, then the columns only old has.
fn overlay<'t>(after: &Image<'t>, old: &Image<'t>) -> Image<'t> {
    let mut merged = Image { buf: Vec::with_capacity(after.buf.len() + old.buf.len()), entries: Vec::new() };
    let mut push = |source: &Image<'t>, entry: &Entry<'t>| {
        let start = merged.buf.len();
        merged.buf.extend_from_slice(source.bytes(entry));
        // Only the image's bytes, names and value kinds are read later (the key comes from `data`).
        merged.entries.push(Entry {
            name: entry.name,
            start,
            end: merged.buf.len(),
            logical: entry.logical,
            key: KeyView::Null,
        });
    };
    for entry in &after.entries {
        match old.get(entry.name) {
            Some(changed) => push(old, changed),
            None => push(after, entry),
        }
    }
    for entry in &old.entries {
        if after.get(entry.name).is_none() {
            push(old, entry);
        }
    }
    merged
}

pub(crate) fn write_image(out: &mut Vec<u8>, image: Option<&Image>) {
    match image {
        None => out.push(0),
        Some(image) => {
            out.push(2);
            if !image.entries.is_empty() {
                avro::long(out, image.entries.len() as i64);
                for entry in &image.entries {
                    avro::string(out, entry.name);
                    out.extend_from_slice(image.bytes(entry));
                }
            }
            out.push(0);
        }
    }
}

/// `UNTYPED.columns_for(after, before)` of converted images (`inferred::write_columns`).
pub(crate) fn write_columns(out: &mut Vec<u8>, images: [Option<&Image>; 2]) {
    let entries = images.into_iter().flatten().flat_map(|image| &image.entries);
    inferred::write_columns(out, entries.map(|e| (e.name, e.logical)));
}

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

pub fn parse(raw: &[u8], profile: &Profile, at: &Coordinates) -> Option<Record> {
    // Only the fields read are built; the rest (server_id, thread_id...) is checked and skipped.
    let members = json::parse_message(raw, BUILT)?;
    let doc = Fields::of(&members);
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
    let database = str_field(doc.database).ok()?.filter(|s| !s.is_empty());
    let table = str_field(doc.table).ok()?.filter(|s| !s.is_empty())?;
    let ts_ms = epoch_ms(int_field(doc.ts).ok()??);

    // Images: data is the after image (the deleted row for delete); old only on update.
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
    let (major, minor) = match position {
        Some((file_name, offset)) => (event::binlog_index(file_name)?, offset as u128 * SEQ_SCALE + seq),
        None => {
            let x = xid.unwrap_or(0);
            let seconds = ts_ms.div_euclid(1000);
            if x < 0 || !(0..SEQ_SCALE as i64).contains(&seconds) {
                return None;
            }
            let (x, seconds) = (x as u128, seconds as u128);
            (seconds * SEQ_SCALE + x / SEQ_SCALE, (x % SEQ_SCALE) * SEQ_SCALE + seq)
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
    values::key_values(&mut key, &primary_key, |name, key| {
        key_image.write_key(key, key_image.get(name));
        Some(())
    })?;
    key.push(b']');

    Some(Record { key, value: body, table: source.table_name(), op, ts_ms })
}
