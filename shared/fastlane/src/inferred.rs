//! Columns typed by their values, for vendors that send no column types (Maxwell, GoldenGate,
//! CKafka's format one): `RowTypes.columns_for` with `inferred_logical`, in Avro.

use crate::avro;

/// `inferred_logical` of a converted value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Logical {
    Unknown,
    Boolean,
    Integer,
    Int64,
    Decimal,
    Str,
}

impl Logical {
    fn name(self) -> &'static str {
        match self {
            Logical::Unknown => "unknown",
            Logical::Boolean => "boolean",
            Logical::Integer => "integer",
            Logical::Int64 => "int64",
            Logical::Decimal => "decimal",
            Logical::Str => "string",
        }
    }
}

/// `UNTYPED.columns_for(after, before)` in Avro, from the images' (name, logical type) entries in
/// order: every name once, in order of first appearance, typed by its first non-null value
/// (`unknown` when all are null).
pub fn write_columns<'n>(out: &mut Vec<u8>, entries: impl IntoIterator<Item = (&'n str, Logical)>) {
    let mut columns: Vec<(&str, Logical)> = Vec::new();
    for (name, logical) in entries {
        match columns.iter_mut().find(|(seen, _)| *seen == name) {
            Some(column) => {
                if column.1 == Logical::Unknown {
                    column.1 = logical;
                }
            }
            None => columns.push((name, logical)),
        }
    }
    if !columns.is_empty() {
        avro::long(out, columns.len() as i64);
        for (name, logical) in &columns {
            avro::string(out, name);
            out.push(0); // source_type: none
            avro::string(out, logical.name());
            out.extend_from_slice(&[0, 0, 1]); // precision, scale: none; inferred: true
        }
    }
    out.push(0);
}
