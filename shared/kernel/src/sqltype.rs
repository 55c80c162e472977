//! Reading a vendor's column type text: `decimal(10,4)`, `bigint(20) unsigned`, `VARCHAR2(20)`, OMS's
//! `INT64`... into a logical type, precision, scale and the conversion its values take
//! (`conversion.rs`). The one definition of these rules (`shared.parsing.sqltypes.sql_type` asks it).
//!
//! Dialects differ in what the same word means: OceanBase OMS uses `BIGINT` for integers beyond int64
//! (its `INT64` is the signed 64-bit type), Oracle's `DATE` carries a time of day, and Huawei DRS writes
//! MySQL's integer types without their `UNSIGNED` (`bigint` for both), so in the `drs` dialect an integer
//! word gets the type that holds both readings: `int` is int64, `bigint` is DECIMAL(20,0).

use crate::conversion::{Encoding, Kind, Width};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Dialect {
    Mysql,
    Drs,
    Oms,
    Oracle,
}

impl Dialect {
    pub fn parse(name: &str) -> Option<Dialect> {
        Some(match name {
            "mysql" => Dialect::Mysql,
            "drs" => Dialect::Drs,
            "oms" => Dialect::Oms,
            "oracle" => Dialect::Oracle,
            _ => return None,
        })
    }
}

/// What a type text means: its logical type (one of the canonical event's `LOGICAL_TYPES`), precision,
/// scale, and the conversion of its values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlType {
    pub logical: &'static str,
    pub precision: Option<i64>,
    pub scale: Option<i64>,
    pub kind: Kind,
}

/// (word, signed logical type, unsigned logical type).
const INT_WIDTH: [(&str, &str, &str); 11] = [
    ("tinyint", "int8", "int16"),
    ("smallint", "int16", "int32"),
    ("mediumint", "int32", "int32"),
    ("int", "int32", "int64"),
    ("integer", "int32", "int64"),
    ("bigint", "int64", "uint64"),
    ("int64", "int64", "uint64"),
    ("int8", "int8", "int16"),
    ("int16", "int16", "int32"),
    ("int32", "int32", "int64"),
    ("long", "int64", "uint64"),
];

const STRINGS: [&str; 25] = [
    "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "string", "var_string", "character",
    "character varying", "nchar", "nvarchar", "national char", "national varchar", "varchar2", "nvarchar2",
    "clob", "nclob", "long varchar", "rowid", "urowid", "xmltype", "longvarchar", "longnvarchar", "uuid",
];

const BINARIES: [&str; 12] = [
    "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "bytes", "raw", "long raw", "bfile",
    "longvarbinary", "bytea",
];

const GEOMETRIES: [&str; 9] = [
    "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
    "geometrycollection", "geomcollection",
];

/// java.sql.Types codes, as Canal and DRS send them in `sqlType`.
const JDBC_TYPES: [(i64, &str); 28] = [
    (-7, "bit"), (-6, "tinyint"), (5, "smallint"), (4, "int"), (-5, "bigint"), (6, "float"), (7, "float"),
    (8, "double"), (2, "decimal"), (3, "decimal"), (1, "char"), (12, "varchar"), (-1, "text"), (-15, "nchar"),
    (-9, "nvarchar"), (-16, "text"), (91, "date"), (92, "time"), (93, "datetime"), (-2, "binary"),
    (-3, "varbinary"), (-4, "blob"), (2004, "blob"), (2005, "text"), (2011, "text"), (16, "boolean"),
    (2013, "time"), (2014, "timestamp"),
];

/// A type name for a java.sql.Types code (messages without type text), or None.
pub fn jdbc_type_name(code: i64) -> Option<&'static str> {
    JDBC_TYPES.iter().find(|(c, _)| *c == code).map(|(_, name)| *name)
}

/// Python's `str.isspace` (Unicode White_Space, and the four information separators U+001C..U+001F).
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn words(text: &str) -> Vec<&str> {
    text.split(is_py_space).filter(|w| !w.is_empty()).collect()
}

/// The numbers of a parenthesised parameter list (`10,4`): each part trimmed, digits only, others skipped.
fn params(inside: &str) -> Vec<i64> {
    if inside.is_empty() {
        return Vec::new();
    }
    inside
        .split(',')
        .map(|part| part.trim_matches(is_py_space))
        .filter(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|part| part.parse().ok())
        .collect()
}

/// The type of a vendor's column type text (`None`: no type given, the value decides).
pub fn sql_type(text: Option<&str>, dialect: Dialect, bytes: Encoding) -> SqlType {
    let Some(text) = text else {
        return SqlType { logical: "unknown", precision: None, scale: None, kind: Kind::Infer };
    };
    let lowered = text.trim_matches(is_py_space).to_lowercase();
    let (head, inside, mut rest) = match lowered.split_once('(') {
        None => (lowered.as_str(), "", String::new()),
        Some((head, tail)) => match tail.split_once(')') {
            Some((inside, rest)) => (head, inside, rest.to_string()),
            None => (head, tail, String::new()),
        },
    };
    let head_words = words(head);
    let rest_words = words(&rest);
    // ZEROFILL implies UNSIGNED in MySQL.
    let unsigned = head_words.iter().chain(&rest_words).any(|w| *w == "unsigned" || *w == "zerofill");
    let mut base =
        head_words.iter().filter(|w| !matches!(**w, "unsigned" | "signed" | "zerofill")).copied().collect::<Vec<_>>().join(" ");
    if base.starts_with("timestamp") && lowered.contains("time zone") {
        rest = "with time zone".to_string();
        base = "timestamp".to_string();
    }
    let params = params(inside);
    let (logical, precision, scale) = logical(&base, &params, unsigned, &rest, dialect);
    SqlType { logical, precision, scale, kind: kind(logical, &base, dialect, bytes) }
}

fn logical(
    base: &str,
    params: &[i64],
    unsigned: bool,
    rest: &str,
    dialect: Dialect,
) -> (&'static str, Option<i64>, Option<i64>) {
    let first = params.first().copied();
    if base == "bool" || base == "boolean" {
        return ("boolean", None, None);
    }
    if base == "bigint" && dialect == Dialect::Oms {
        return ("integer", None, None); // OMS BIGINT: "integers beyond 64 bits"
    }
    if let Some(&(_, signed, wide)) = INT_WIDTH.iter().find(|(word, _, _)| *word == base) {
        if dialect == Dialect::Drs && !unsigned {
            // Signedness unstated: 18446744073709551615 is as likely as -1. A type that holds both
            // readings (an int64 column would lose every unsigned value past 2**63-1).
            return if wide == "uint64" { ("decimal", Some(20), Some(0)) } else { (wide, None, None) };
        }
        return (if unsigned { wide } else { signed }, None, None);
    }
    match base {
        "decimal" | "numeric" | "dec" | "fixed" | "number" | "bigdecimal" => {
            // DECIMAL(p) and Oracle NUMBER(p) both mean scale 0; bare NUMBER is unconstrained.
            let scale = params.get(1).copied().or(first.map(|_| 0));
            ("decimal", first, scale)
        }
        "float" if dialect == Dialect::Oracle => ("decimal", None, None), // a binary-precision NUMBER
        "float" => (if first.is_some_and(|p| p > 24) { "float64" } else { "float32" }, None, None),
        "double" | "double precision" | "real" | "binary_double" | "float64" => ("float64", None, None),
        "binary_float" | "float32" => ("float32", None, None),
        "json" => ("json", None, None),
        "enum" => ("enum", None, None),
        "set" => ("set", None, None),
        _ if STRINGS.contains(&base) => ("string", None, None),
        _ if base.starts_with("interval") => ("interval", None, None),
        _ if BINARIES.contains(&base) => ("bytes", None, None),
        "bit" => ("bit", Some(first.unwrap_or(1)), None),
        "date" => (if dialect == Dialect::Oracle { "datetime" } else { "date" }, None, None),
        "time" | "localtime" => ("time", first, None),
        "datetime" | "localdatetime" | "datetime2" | "smalldatetime" => ("datetime", first, None),
        "timestamp" if dialect == Dialect::Oracle => {
            (if rest.contains("time zone") { "timestamp" } else { "datetime" }, first, None)
        }
        "timestamp" => ("timestamp", first, None),
        "zoned_datetime" | "timestamptz" | "timestamp_with_timezone" | "timestamp with time zone" => {
            ("timestamp", None, None)
        }
        "year" => ("year", None, None),
        _ if GEOMETRIES.contains(&base) => ("geometry", None, None),
        _ => ("unknown", None, None),
    }
}

fn kind(logical: &str, base: &str, dialect: Dialect, bytes: Encoding) -> Kind {
    if matches!(logical, "int8" | "int16" | "int32" | "int64" | "uint64" | "integer")
        || INT_WIDTH.iter().any(|(word, _, _)| *word == base)
    {
        // The width the logical type holds: a value beyond it is refused (MySQL's int(11) holds no 3e9).
        // DRS's bigint, typed DECIMAL(20,0), holds either reading of 64 bits: its values are integers.
        return Kind::Int(match logical {
            "int8" => Width::I8,
            "int16" => Width::I16,
            "int32" => Width::I32,
            "int64" => Width::I64,
            "uint64" => Width::U64,
            "decimal" => Width::Either64,
            _ => Width::Any,
        });
    }
    match logical {
        "decimal" => Kind::Decimal,
        "float32" | "float64" => Kind::Float,
        "boolean" => Kind::Boolean,
        "string" | "enum" | "set" | "interval" => Kind::Text,
        "json" => Kind::JsonText,
        "bytes" => Kind::Bytes(bytes),
        "bit" => Kind::BitBytes(bytes),
        "date" => Kind::Date,
        "time" => Kind::Time,
        "datetime" if dialect == Dialect::Oracle && base == "date" => Kind::OracleDate,
        "datetime" => Kind::LocalDateTime,
        "timestamp" => Kind::Instant,
        "year" => Kind::Year,
        "geometry" => Kind::Geometry,
        _ => Kind::Infer,
    }
}

/// `sql_type(text, dialect, bytes_encoding)`: (logical type, precision, scale, conversion name).
#[pyo3::pyfunction(name = "sql_type")]
#[pyo3(signature = (text, dialect = "mysql", bytes_encoding = "latin1"))]
pub fn py_sql_type(
    text: Option<&str>,
    dialect: &str,
    bytes_encoding: &str,
) -> pyo3::PyResult<(&'static str, Option<i64>, Option<i64>, &'static str)> {
    let dialect = Dialect::parse(dialect)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("unknown type dialect {dialect:?}")))?;
    let bytes = Encoding::parse(bytes_encoding)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("unknown bytes encoding {bytes_encoding:?}")))?;
    let t = sql_type(text, dialect, bytes);
    Ok((t.logical, t.precision, t.scale, t.kind.name()))
}

/// A type name for a java.sql.Types code, for messages without type text (None: no such code, however
/// large the integer).
#[pyo3::pyfunction(name = "jdbc_type_name")]
pub fn py_jdbc_type_name(code: &pyo3::Bound<'_, pyo3::types::PyInt>) -> Option<&'static str> {
    pyo3::types::PyAnyMethods::extract::<i64>(code.as_any()).ok().and_then(jdbc_type_name)
}
