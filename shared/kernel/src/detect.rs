//! `auto`'s format detection (`services/auto/parser.py: detect`) on the lane's JSON reader.
//!
//! The same rules, first match wins, on the same decoded members: key presence,
//! and the few values the rules look at (`payload`, `meta`, `mysqlType` and the OMS images
//! as objects, `version` and `type` as strings, `data` as an array, the
//! truthiness of `data` and `old`). `None` for anything the reader declines
//! (not one JSON object, repeated keys...) or no rule matches: the lane then
//! declines the message and the Python path detects (or rejects) it.

use crate::json::{parse_message_exact, Json};

/// The members whose values a rule reads; the others are only checked and looked up by name.
const BUILT: &[&str] = &["payload", "prevStruct", "postStruct", "version", "meta", "data", "type", "old", "mysqlType"];
/// Types MySQL always declares with a size: Canal's `mysqlType` carries it, DRS JSON's does not.
const SIZED_TYPES: &[&str] = &["char", "varchar", "binary", "varbinary", "decimal"];

pub fn detect(raw: &[u8]) -> Option<&'static str> {
    let members = parse_message_exact(raw, BUILT)?;
    let get = |name: &str| members.iter().find(|(key, _)| key == name).map(|(_, value)| value);
    let has = |name: &str| get(name).is_some();
    let text_is = |name: &str, wanted: &str| matches!(get(name), Some(Json::Str(text)) if text == wanted);
    if has("__deleted") || object_has(get("payload"), "__deleted") {
        return Some("debezium-smt");
    }
    if has("BINLOG_NAME") || has("NEW_VALUES") || has("OLD_VALUES") {
        return Some("ckafka-v1");
    }
    if has("binlog") && has("columns") && has("event") {
        return Some("kafkariver-canal");
    }
    if has("allMetaData") {
        if object_has(get("prevStruct"), "__light_type") || object_has(get("postStruct"), "__light_type") {
            return Some("oms-extend-column-type");
        }
        return Some("oms-default");
    }
    if text_is("version", "2.0") && has("payload") {
        return Some("oms-dataworks");
    }
    if object_has(get("meta"), "op") {
        return Some("oms-shareplex");
    }
    if has("payload") || (has("op") && has("source")) || (has("ddl") && has("databaseName")) {
        return Some("debezium-json");
    }
    if has("op_type") && has("table") {
        return Some("ogg-json");
    }
    if has("isDdl") || (has("type") && matches!(get("data"), Some(Json::Array(_)))) {
        if has("opType") || has("columnType") || has("dbType") {
            return Some("drs-json");
        }
        if text_is("type", "DELETE") && !truthy(get("data"))? && truthy(get("old"))? {
            return Some("drs-json");
        }
        if has("id") && sizes_left_out(get("mysqlType")) {
            return Some("drs-json");
        }
        return Some("canal-json");
    }
    if has("type") && has("database") && has("ts") {
        return Some("maxwell-json");
    }
    None
}

/// Whether a `mysqlType` object names a sized type without its size (the Python `_unsized`; a built
/// object has no repeated key, so its members are Python's `values()`).
fn sizes_left_out(types: Option<&Json<'_>>) -> bool {
    matches!(types, Some(Json::Object(members, _))
        if members.iter().any(|(_, name)| matches!(name, Json::Str(text) if SIZED_TYPES.contains(&text.as_ref()))))
}

/// Python's `isinstance(value, dict) and key in value`.
fn object_has(value: Option<&Json<'_>>, key: &str) -> bool {
    matches!(value, Some(Json::Object(members, _)) if members.iter().any(|(name, _)| name == key))
}

/// Python's truthiness of a decoded JSON value (a missing member is `None`: false); `None` when
/// it depends on float rounding.
fn truthy(value: Option<&Json<'_>>) -> Option<bool> {
    Some(match value {
        None | Some(Json::Null) => false,
        Some(Json::Bool(flag)) => *flag,
        Some(Json::Number(text)) => {
            let mantissa = text.split(['e', 'E']).next().unwrap_or(text);
            let zero = !mantissa.bytes().any(|digit| (b'1'..=b'9').contains(&digit));
            // Zero in any spelling (-0, 0.00, 0e5) is false as int, float or Decimal; a non-zero
            // integer is true; a non-zero fraction may round to 0.0 in orjson (1e-400): not decided here.
            if zero {
                false
            } else if text.bytes().any(|c| matches!(c, b'.' | b'e' | b'E')) {
                return None;
            } else {
                true
            }
        }
        Some(Json::Str(text)) => !text.is_empty(),
        Some(Json::Array(items)) => !items.is_empty(),
        Some(Json::Object(members, _)) => !members.is_empty(),
        Some(Json::Raw(_)) => return None, // not built: never asked (BUILT holds every member read here)
    })
}
