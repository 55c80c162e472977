//! The canonical event's record: its single-object Avro value and its record key, from the Python
//! `ChangeEvent` a format returns (`shared/event/model.py`).
//!
//! The one writer of change_event.v1 (the Python codec calls it for every event, and tools and tests
//! encode through it); fastavro only decodes. Avro binary as the specification defines it: zig-zag
//! varint longs, length-prefixed strings and bytes, unions as the branch index then the value, arrays
//! and maps as blocks ended by a zero count, records as their fields in order.
//!
//! The record key is `[database, schema, table, [key values]]` as compact JSON (`event_key`), each key
//! value in its JSON view: it is rendered from the value's own Avro bytes by the JSON view's renderer
//! (`json_view.rs`), so the two cannot differ. The event's JSON view itself (`Encoder.json`, and
//! `Encoder.json_value` for one value: `shared.codec.json_view`) is rendered the same way, from the
//! body written here.

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDate, PyDateAccess, PyDateTime, PyDict, PyFloat, PyInt, PyList, PyString, PyTimeAccess, PyType};

use crate::avro;
use crate::avro_reader::Reader;
use crate::json::json_string;
use crate::conversion::days_from_civil;
use crate::json_view::{self, MARKER, OPS};


const NULL: u8 = 0x00;
const PRESENT: u8 = 0x02; // branch 1 of ["null", X]
const BOOLEAN: u8 = 0x02;
const LONG: u8 = 0x04;
const DOUBLE: u8 = 0x06;
const STRING: u8 = 0x08;
const BYTES: u8 = 0x0a;
const BIG_INTEGER: u8 = 0x0c;
const DECIMAL: u8 = 0x0e;
const DATE: u8 = 0x10;
const TIME: u8 = 0x12;
const LOCAL_DATE_TIME: u8 = 0x14;
const INSTANT: u8 = 0x16;
const UNPARSED: u8 = 0x18;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// The Python types and functions the encoder meets, looked up once per process.
struct Kinds {
    big_int: Py<PyType>,
    decimal: Py<PyType>,
    sql_time: Py<PyType>,
    unparsed: Py<PyType>,
    columns: Py<PyType>,
    decimal_text: Py<PyAny>,
    int_repr: Py<PyAny>,
    utc: Py<PyAny>,
}

static KINDS: PyOnceLock<Kinds> = PyOnceLock::new();

fn kinds(py: Python<'_>) -> PyResult<&Kinds> {
    KINDS.get_or_try_init(py, || {
        let values = py.import("binlake.shared.event.values")?;
        let model = py.import("binlake.shared.event.model")?;
        let ty = |module: &Bound<'_, PyModule>, name: &str| -> PyResult<Py<PyType>> {
            Ok(module.getattr(name)?.cast_into::<PyType>()?.unbind())
        };
        Ok(Kinds {
            big_int: ty(&values, "BigInt")?,
            decimal: ty(&py.import("decimal")?, "Decimal")?,
            sql_time: ty(&values, "SqlTime")?,
            unparsed: ty(&values, "Unparsed")?,
            columns: ty(&model, "Columns")?,
            decimal_text: values.getattr("decimal_text")?.unbind(),
            int_repr: py.import("builtins")?.getattr("int")?.getattr("__repr__")?.unbind(),
            utc: py.import("datetime")?.getattr("UTC")?.unbind(),
        })
    })
}

/// Writes events of change_event.v1 under one schema fingerprint.
#[pyclass(frozen, module = "binlake.shared.kernel._kernel")]
pub struct Encoder {
    fingerprint: [u8; 8],
}

#[pymethods]
impl Encoder {
    #[new]
    fn new(fingerprint: &[u8]) -> PyResult<Self> {
        let fingerprint =
            fingerprint.try_into().map_err(|_| PyValueError::new_err("a schema fingerprint is 8 bytes"))?;
        Ok(Encoder { fingerprint })
    }

    /// The event's Avro body (no single-object header).
    fn body<'py>(&self, py: Python<'py>, event: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::with_capacity(512);
        write_event(py, event, &mut out, None)?;
        Ok(PyBytes::new(py, &out))
    }

    /// The event's record value: the single-object header, then the body.
    fn value<'py>(&self, py: Python<'py>, event: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = self.header();
        write_event(py, event, &mut out, None)?;
        Ok(PyBytes::new(py, &out))
    }

    /// The event's record key (`[database, schema, table, [key values]]`, compact JSON).
    fn key<'py>(&self, py: Python<'py>, event: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let mut scratch = Vec::with_capacity(256);
        let mut key = Vec::with_capacity(64);
        write_event(py, event, &mut scratch, Some(&mut key))?;
        Ok(PyBytes::new(py, &key))
    }

    /// (key, value) of the event's record.
    fn record<'py>(
        &self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let mut out = self.header();
        let mut key = Vec::with_capacity(64);
        write_event(py, event, &mut out, Some(&mut key))?;
        Ok((PyBytes::new(py, &key), PyBytes::new(py, &out)))
    }

    /// The event's JSON view (`shared.codec.json_view`): its Avro body, rendered by json_view.rs.
    fn json<'py>(&self, py: Python<'py>, event: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let mut body = Vec::with_capacity(512);
        write_event(py, event, &mut body, None)?;
        let text = json_view::render_body(&body)
            .ok_or_else(|| PyValueError::new_err("an event outside the JSON view's range"))?;
        Ok(PyBytes::new(py, &text))
    }

    /// One image value's JSON view: its Avro union value, rendered by json_view.rs.
    fn json_value<'py>(&self, py: Python<'py>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let mut encoded = Vec::with_capacity(32);
        self::value(py, kinds(py)?, value, &mut encoded)?;
        let mut out = Vec::with_capacity(encoded.len() * 2 + 8);
        let mut reader = Reader::new(&encoded);
        json_view::value(&mut reader, &mut out)
            .filter(|()| reader.done())
            .ok_or_else(|| PyValueError::new_err("a value outside the JSON view's range"))?;
        Ok(PyBytes::new(py, &out))
    }
}

impl Encoder {
    fn header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(512);
        out.extend_from_slice(&MARKER);
        out.extend_from_slice(&self.fingerprint);
        out
    }
}

/// The column descriptors' Avro (`columns` of change_event.v1), for the lanes' planners.
#[pyfunction]
pub fn encode_columns<'py>(py: Python<'py>, columns: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    write_columns(py, columns, &mut out)?;
    Ok(PyBytes::new(py, &out))
}

fn opt_str<'py>(value: &Bound<'py, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    if value.is_none() {
        out.push(NULL);
    } else {
        out.push(PRESENT);
        avro::string(out, value.cast::<PyString>()?.to_str()?);
    }
    Ok(())
}

fn opt_long(value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    if value.is_none() {
        out.push(NULL);
    } else {
        out.push(PRESENT);
        avro::long(out, value.extract::<i64>()?);
    }
    Ok(())
}

fn string(value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    avro::string(out, value.cast::<PyString>()?.to_str()?);
    Ok(())
}

fn strings(value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    let items = value.cast::<PyList>()?;
    if !items.is_empty() {
        avro::long(out, items.len() as i64);
        for item in items.iter() {
            string(&item, out)?;
        }
    }
    out.push(NULL);
    Ok(())
}

/// The event's fields in change_event.v1's order; with `key`, its record key as well.
fn write_event(py: Python<'_>, event: &Bound<'_, PyAny>, out: &mut Vec<u8>, key: Option<&mut Vec<u8>>) -> PyResult<()> {
    let op = event.getattr(intern!(py, "op"))?;
    let op = op.cast::<PyString>()?.to_str()?;
    let index = OPS.iter().position(|o| *o == op).ok_or_else(|| PyValueError::new_err(format!("unknown op {op:?}")))?;
    avro::long(out, index as i64);
    let source = event.getattr(intern!(py, "source"))?;
    string(&source.getattr(intern!(py, "format"))?, out)?;
    let database = source.getattr(intern!(py, "database"))?;
    let schema = source.getattr(intern!(py, "schema"))?;
    let table = source.getattr(intern!(py, "table"))?;
    opt_str(&source.getattr(intern!(py, "db_type"))?, out)?;
    opt_str(&database, out)?;
    opt_str(&schema, out)?;
    opt_str(&table, out)?;
    opt_str(&source.getattr(intern!(py, "tenant"))?, out)?;
    opt_str(&source.getattr(intern!(py, "binlog_file"))?, out)?;
    opt_long(&source.getattr(intern!(py, "binlog_pos"))?, out)?;
    for name in [intern!(py, "gtid"), intern!(py, "scn"), intern!(py, "checkpoint"), intern!(py, "transaction_id"), intern!(py, "sequence")] {
        opt_str(&source.getattr(name)?, out)?;
    }
    string(&event.getattr(intern!(py, "order_key"))?, out)?;
    opt_long(&event.getattr(intern!(py, "ts_ms"))?, out)?;
    opt_long(&event.getattr(intern!(py, "ingest_ts_ms"))?, out)?;
    let primary_key = event.getattr(intern!(py, "primary_key"))?;
    strings(&primary_key, out)?;
    write_columns(py, &event.getattr(intern!(py, "columns"))?, out)?;
    let before = event.getattr(intern!(py, "before"))?;
    let after = event.getattr(intern!(py, "after"))?;
    let k = kinds(py)?;
    image(py, k, &before, out)?;
    image(py, k, &after, out)?;
    let changed = event.getattr(intern!(py, "changed_columns"))?;
    if changed.is_none() {
        out.push(NULL);
    } else {
        out.push(PRESENT);
        strings(&changed, out)?;
    }
    let ddl = event.getattr(intern!(py, "ddl"))?;
    if ddl.is_none() {
        out.push(NULL);
    } else {
        out.push(PRESENT);
        string(&ddl.getattr(intern!(py, "sql"))?, out)?;
        string(&ddl.getattr(intern!(py, "kind"))?, out)?;
    }
    let origin = event.getattr(intern!(py, "origin"))?;
    string(&origin.getattr(intern!(py, "topic"))?, out)?;
    for name in [intern!(py, "partition"), intern!(py, "offset"), intern!(py, "row")] {
        avro::long(out, origin.getattr(name)?.extract::<i64>()?);
    }
    if let Some(key) = key {
        let image = if after.is_none() { before } else { after };
        write_key(py, k, key, [&database, &schema, &table], &primary_key, &image)?;
    }
    Ok(())
}

/// `event_key`: `[database, schema, table]`, then `[key values]` when the event names a primary key and
/// has an image (a value the image lacks is `null`).
fn write_key(
    py: Python<'_>,
    k: &Kinds,
    key: &mut Vec<u8>,
    names: [&Bound<'_, PyAny>; 3],
    primary_key: &Bound<'_, PyAny>,
    image: &Bound<'_, PyAny>,
) -> PyResult<()> {
    key.push(b'[');
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            key.push(b',');
        }
        if name.is_none() {
            key.extend_from_slice(b"null");
        } else {
            json_string(key, name.cast::<PyString>()?.to_str()?);
        }
    }
    let primary_key = primary_key.cast::<PyList>()?;
    if !primary_key.is_empty() && !image.is_none() {
        let image = image.cast::<PyDict>()?;
        key.extend_from_slice(b",[");
        let mut encoded = Vec::with_capacity(32);
        for (i, name) in primary_key.iter().enumerate() {
            if i > 0 {
                key.push(b',');
            }
            encoded.clear();
            match image.get_item(&name)? {
                None => encoded.push(NULL),
                Some(v) => value(py, k, &v, &mut encoded)?,
            }
            let mut reader = Reader::new(&encoded);
            json_view::value(&mut reader, key)
                .ok_or_else(|| PyValueError::new_err("a key value outside the JSON view's range"))?;
        }
        key.push(b']');
    }
    key.push(b']');
    Ok(())
}

/// `columns`: the descriptors, once per table shape where the list is a `Columns` (its `rendered_avro`).
fn write_columns(py: Python<'_>, columns: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    let k = kinds(py)?;
    let shared = columns.is_exact_instance(k.columns.bind(py));
    if shared {
        let cached = columns.getattr(intern!(py, "rendered_avro"))?;
        if !cached.is_none() {
            out.extend_from_slice(cached.cast::<PyBytes>()?.as_bytes());
            return Ok(());
        }
    }
    let start = out.len();
    let items = columns.cast::<PyList>()?;
    if !items.is_empty() {
        avro::long(out, items.len() as i64);
        for column in items.iter() {
            string(&column.getattr(intern!(py, "name"))?, out)?;
            opt_str(&column.getattr(intern!(py, "source_type"))?, out)?;
            string(&column.getattr(intern!(py, "logical_type"))?, out)?;
            opt_long(&column.getattr(intern!(py, "precision"))?, out)?;
            opt_long(&column.getattr(intern!(py, "scale"))?, out)?;
            out.push(u8::from(column.getattr(intern!(py, "inferred"))?.is_truthy()?));
        }
    }
    out.push(NULL);
    if shared {
        columns.setattr(intern!(py, "rendered_avro"), PyBytes::new(py, &out[start..]))?;
    }
    Ok(())
}

/// An optional image: null, or a map of column name to value.
fn image(py: Python<'_>, k: &Kinds, image: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    if image.is_none() {
        out.push(NULL);
        return Ok(());
    }
    out.push(PRESENT);
    let map = image.cast::<PyDict>()?;
    if !map.is_empty() {
        avro::long(out, map.len() as i64);
        for (name, v) in map.iter() {
            avro::string(out, name.cast::<PyString>()?.to_str()?);
            value(py, k, &v, out)?;
        }
    }
    out.push(NULL);
    Ok(())
}

/// One image value: its union branch (in schema order: null, boolean, long, double, string, bytes,
/// BigInteger, Decimal, Date, Time, LocalDateTime, Instant, Unparsed), then its body. Dispatched on
/// the exact type: `bool` and `BigInt` are `int` subclasses with branches of their own, and
/// `datetime` is a `date` subclass.
fn value(py: Python<'_>, k: &Kinds, v: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    if v.is_none() {
        out.push(NULL);
    } else if let Ok(text) = v.cast_exact::<PyString>() {
        out.push(STRING);
        avro::string(out, text.to_str()?);
    } else if v.is_exact_instance_of::<PyInt>() {
        let n: i64 = v.extract().map_err(|_| PyOverflowError::new_err("an int beyond int64 that is no BigInt"))?;
        out.push(LONG);
        avro::long(out, n);
    } else if let Ok(flag) = v.cast_exact::<PyBool>() {
        out.push(BOOLEAN);
        out.push(u8::from(flag.is_true()));
    } else if let Ok(number) = v.cast_exact::<PyFloat>() {
        out.push(DOUBLE);
        out.extend_from_slice(&number.value().to_le_bytes());
    } else if let Ok(data) = v.cast_exact::<PyBytes>() {
        out.push(BYTES);
        avro::bytes(out, data.as_bytes());
    } else if v.is_exact_instance(k.decimal.bind(py)) {
        out.push(DECIMAL);
        // str() is the text unless it took scientific notation: then `decimal_text` decides.
        let plain = v.str()?;
        if plain.to_str()?.contains('E') {
            string(&k.decimal_text.bind(py).call1((v,))?, out)?;
        } else {
            string(plain.as_any(), out)?;
        }
    } else if let Ok(at) = v.cast_exact::<PyDateTime>() {
        let local = days(at.get_year(), at.get_month(), at.get_day()) * MICROS_PER_DAY
            + ((i64::from(at.get_hour()) * 60 + i64::from(at.get_minute())) * 60 + i64::from(at.get_second()))
                * 1_000_000
            + i64::from(at.get_microsecond());
        let zone = at.getattr(intern!(py, "tzinfo"))?;
        if zone.is_none() {
            out.push(LOCAL_DATE_TIME);
            avro::long(out, local);
        } else {
            let offset = if zone.is(k.utc.bind(py)) { 0 } else { utc_offset_micros(py, at)? };
            out.push(INSTANT);
            avro::long(out, local - offset);
        }
    } else if let Ok(day) = v.cast_exact::<PyDate>() {
        out.push(DATE);
        avro::long(out, days(day.get_year(), day.get_month(), day.get_day()));
    } else if v.is_exact_instance(k.sql_time.bind(py)) {
        out.push(TIME);
        avro::long(out, v.getattr(intern!(py, "micros"))?.extract::<i64>()?);
    } else if v.is_exact_instance(k.big_int.bind(py)) {
        out.push(BIG_INTEGER);
        string(&k.int_repr.bind(py).call1((v,))?, out)?;
    } else if v.is_exact_instance(k.unparsed.bind(py)) {
        out.push(UNPARSED);
        string(&v.getattr(intern!(py, "text"))?, out)?;
    } else {
        let name = v.get_type().name()?;
        return Err(PyTypeError::new_err(format!("not a canonical value: {name}")));
    }
    Ok(())
}

/// An aware datetime's `utcoffset()` in microseconds.
fn utc_offset_micros(py: Python<'_>, at: &Bound<'_, PyDateTime>) -> PyResult<i64> {
    let delta = at.call_method0(intern!(py, "utcoffset"))?;
    let day: i64 = delta.getattr(intern!(py, "days"))?.extract()?;
    let seconds: i64 = delta.getattr(intern!(py, "seconds"))?.extract()?;
    let micros: i64 = delta.getattr(intern!(py, "microseconds"))?.extract()?;
    Ok((day * 86_400 + seconds) * 1_000_000 + micros)
}

/// Days from 1970-01-01 to a civil date.
fn days(year: i32, month: u8, day: u8) -> i64 {
    days_from_civil(i64::from(year), i64::from(month), i64::from(day))
}

#[cfg(test)]
mod tests {
    use super::days;

    #[test]
    fn civil_days() {
        assert_eq!(days(1970, 1, 1), 0);
        assert_eq!(days(1969, 12, 31), -1);
        assert_eq!(days(2000, 3, 1), 11_017);
        assert_eq!(days(1, 1, 1), -719_162);
        assert_eq!(days(9999, 12, 31), 2_932_896);
    }
}
