//! `shared.kernel._kernel`: the normalizer's format-neutral kernel, in Rust.
//!
//! What every vendor format shares, done once, with no Python twin (the formats themselves are Python,
//! `services/<format>/`):
//!
//! - typed values from a column's declared type: the reading of type texts (`sqltype.rs`) and the
//!   conversion of raw values to canonical values (`conversion.rs`);
//! - the canonical event's record: its single-object Avro value and its record key (`encode.rs`);
//! - the JSON view of a record (`json_view.rs`);
//! - JSON messages read with exact numbers, as the standard library reads them with `Decimal`
//!   (`json_load.rs`);
//! - vendor Avro decoded as fastavro reads it (`avro_decode.rs`), with a strict JSON reader for schemas
//!   (`json.rs`).

mod avro;
mod avro_decode;
mod avro_reader;
mod conversion;
mod encode;
mod json;
mod json_load;
mod json_view;
mod objects;
mod sqltype;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The JSON view of a unified-topic record value (raises ValueError for other bytes).
#[pyfunction]
fn render_json<'py>(py: Python<'py>, value: &[u8], fingerprint: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    match json_view::render(value, fingerprint) {
        Some(text) => Ok(PyBytes::new(py, &text)),
        None => Err(PyValueError::new_err("not a canonical change event record of this schema")),
    }
}

#[pymodule]
fn _kernel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(render_json, m)?)?;
    m.add_class::<avro_decode::AvroDecoder>()?;
    m.add_class::<encode::Encoder>()?;
    m.add_class::<conversion::Conversion>()?;
    m.add_function(wrap_pyfunction!(conversion::py_describe, m)?)?;
    m.add_function(wrap_pyfunction!(conversion::convert_image, m)?)?;
    m.add_function(wrap_pyfunction!(conversion::py_bit_value, m)?)?;
    m.add_function(wrap_pyfunction!(sqltype::py_sql_type, m)?)?;
    m.add_function(wrap_pyfunction!(sqltype::py_jdbc_type_name, m)?)?;
    m.add_function(wrap_pyfunction!(encode::encode_columns, m)?)?;
    m.add_function(wrap_pyfunction!(json_load::load, m)?)?;
    m.add_function(wrap_pyfunction!(json_load::nests_deeper, m)?)?;
    Ok(())
}
