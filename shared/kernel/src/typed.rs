//! Row images of typed columns (the kinds a planner chose, `values.rs`), as the Canal, DRS,
//! KafkaRiverCanal, CKafka and OMS Avro lanes build them: every value's Avro union bytes in one
//! buffer, with each entry's place and its JSON view for the record key. Also the flat
//! (Canal-shaped) lanes' reading of a JSON row object and of a `mysqlType` map for the planner.

use crate::avro;
use crate::json::{self, Json};
use crate::values::{self, KeyPart};

/// A converted image: the Avro union bytes of every value in one buffer, and each entry's place.
pub(crate) struct Image<'t> {
    pub(crate) buf: Vec<u8>,
    pub(crate) entries: Vec<Entry<'t>>,
}

pub(crate) struct Entry<'t> {
    pub(crate) name: &'t str,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) key: KeyPart<'t>,
}

impl<'t> Image<'t> {
    pub(crate) fn get(&self, name: &str) -> Option<&Entry<'t>> {
        self.entries.iter().find(|e| e.name == name)
    }

    pub(crate) fn bytes(&self, entry: &Entry<'t>) -> &[u8] {
        &self.buf[entry.start..entry.end]
    }
}

/// A JSON row object converted on the strict subset: every column declared in `plan`, values
/// null or strings, each string read by `text` (the lane's converter of its kind).
pub(crate) fn json_image<'t, K: Copy>(
    row: &'t Json<'t>,
    plan: &values::Plan<K>,
    text: impl Fn(K, &'t str, &mut Vec<u8>) -> Option<KeyPart<'t>>,
) -> Option<Image<'t>> {
    let Json::Object(members, raw) = row else { return None };
    let mut image = Image { buf: Vec::with_capacity(raw.len() + 16), entries: Vec::with_capacity(members.len()) };
    for (index, (name, value)) in members.iter().enumerate() {
        let kind = plan.kind(name, index)?; // undeclared: an inferred column, left to Python
        let start = image.buf.len();
        let key = match value {
            Json::Null => {
                image.buf.push(0);
                KeyPart::Null
            }
            Json::Str(t) => text(kind, t, &mut image.buf)?,
            _ => return None,
        };
        image.entries.push(Entry { name, start, end: image.buf.len(), key });
    }
    Some(image)
}

/// The (name, type text or None) pairs of a `mysqlType` object for the planner; None: not an
/// object of strings and nulls, or empty (the `sqlType` path), left to Python.
pub(crate) fn type_columns(raw_map: &[u8]) -> Option<Vec<(String, Option<String>)>> {
    let Some(Json::Object(members, _)) = json::parse(raw_map) else { return None };
    if members.is_empty() {
        return None;
    }
    let mut columns = Vec::with_capacity(members.len());
    for (name, text) in &members {
        match text {
            Json::Str(t) => columns.push((name.to_string(), Some(t.to_string()))),
            Json::Null => columns.push((name.to_string(), None)),
            _ => return None,
        }
    }
    Some(columns)
}

/// `overlay(after, old)`: after's columns with old's values, then the columns only old has.
pub(crate) fn overlay<'t>(after: &Image<'t>, old: &Image<'t>) -> Image<'t> {
    let mut merged = Image { buf: Vec::with_capacity(after.buf.len() + old.buf.len()), entries: Vec::new() };
    let mut push = |name: &'t str, bytes: &[u8]| {
        let start = merged.buf.len();
        merged.buf.extend_from_slice(bytes);
        merged.entries.push(Entry { name, start, end: merged.buf.len(), key: KeyPart::Other });
    };
    for entry in &after.entries {
        match old.get(entry.name) {
            Some(changed) => push(entry.name, old.bytes(changed)),
            None => push(entry.name, after.bytes(entry)),
        }
    }
    for entry in &old.entries {
        if after.get(entry.name).is_none() {
            push(entry.name, old.bytes(entry));
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
