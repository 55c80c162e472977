//! Typed values from a column's declared type: a vendor's raw value (a JSON string, number, boolean,
//! list or object, or a decoded Avro value) to its canonical value (`shared/event/values.py`), or a
//! refusal that describes the value and never quotes it (`UnreadableValue`; reasons carry no row data).
//!
//! The one implementation of these rules. The syntax of Python's own readers stays theirs where the
//! rules name them (`int()`, `float()`, `Decimal()`, `date.fromisoformat`, `datetime.fromisoformat`,
//! `binascii.a2b_base64`, `bytes.fromhex`, the IANA zones of `zoneinfo`): the common spellings are read
//! here, the others handed to that reader. A float from the fast JSON decoder never becomes a value
//! where its digits matter: `InexactNumber` asks the caller for the exact decode. Digits in the
//! spellings read here (times, epoch seconds, zone-suffixed date-times) are ASCII.

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDate, PyDateTime, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyTzInfo};

use crate::json::json_string;
use crate::sqltype::is_py_space;

/// How a vendor renders binary values as text.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Encoding {
    /// One character per byte, ISO-8859-1 (Alibaba Canal).
    Latin1,
    Base64,
    /// base16 (OMS Debezium serializations).
    Hex,
    /// `[106, 103]` as text (Huawei DRS JSON); signed Java bytes are accepted.
    List,
}

impl Encoding {
    pub fn parse(name: &str) -> Option<Encoding> {
        Some(match name {
            "latin1" => Encoding::Latin1,
            "base64" => Encoding::Base64,
            "hex" => Encoding::Hex,
            "list" => Encoding::List,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Encoding::Latin1 => "latin1",
            Encoding::Base64 => "base64",
            Encoding::Hex => "hex",
            Encoding::List => "list",
        }
    }
}

/// The integers a column's declared type holds: a value beyond them is refused, never narrowed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Width {
    /// No bound (OMS `BIGINT`, an integer of any size).
    Any,
    I8,
    I16,
    I32,
    I64,
    U64,
    /// Signed or unsigned 64 bits (Huawei DRS's `bigint`, which never says which).
    Either64,
}

impl Width {
    fn bounds(self) -> Option<(i128, i128)> {
        Some(match self {
            Width::Any => return None,
            Width::I8 => (i8::MIN.into(), i8::MAX.into()),
            Width::I16 => (i16::MIN.into(), i16::MAX.into()),
            Width::I32 => (i32::MIN.into(), i32::MAX.into()),
            Width::I64 => (i64::MIN.into(), i64::MAX.into()),
            Width::U64 => (0, u64::MAX.into()),
            Width::Either64 => (i64::MIN.into(), u64::MAX.into()),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Width::Any => "int",
            Width::I8 => "int8",
            Width::I16 => "int16",
            Width::I32 => "int32",
            Width::I64 => "int64",
            Width::U64 => "uint64",
            Width::Either64 => "int64_or_uint64",
        }
    }
}

/// A column's conversion.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// An integer column, of the width its declared type holds.
    Int(Width),
    Year,
    Decimal,
    Float,
    /// String, enum, set and interval columns.
    Text,
    /// A JSON column: text as given, a nested value rendered compactly with its digits.
    JsonText,
    Boolean,
    Bytes(Encoding),
    /// MySQL BIT(n): the unsigned integer of its bits, given as a number or as binary text.
    BitBytes(Encoding),
    Date,
    /// Oracle's DATE: a date-time, its time of day optional.
    OracleDate,
    Time,
    LocalDateTime,
    /// A TIMESTAMP: an instant; a wall clock without zone is read in the source zone.
    Instant,
    Geometry,
    /// No declared type: the JSON value decides.
    Infer,
}

impl Kind {
    /// The name `shared.kernel.plan` maps to a lane's kind.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Int(width) => width.name(),
            Kind::Year => "year",
            Kind::Decimal => "decimal",
            Kind::Float => "float",
            Kind::Text => "text",
            Kind::JsonText => "json_text",
            Kind::Boolean => "boolean",
            Kind::Bytes(_) => "bytes",
            Kind::BitBytes(_) => "bit",
            Kind::Date => "date",
            Kind::OracleDate => "oracle_date",
            Kind::Time => "time",
            Kind::LocalDateTime => "local_datetime",
            Kind::Instant => "instant",
            Kind::Geometry => "geometry",
            Kind::Infer => "infer",
        }
    }
}

const INT64_DIGITS_SAFE: usize = 18;
const BIT_MAX: u128 = u64::MAX as u128;
const MICROS: i128 = 1_000_000;
/// datetime(1, 1, 1) and datetime(9999, 12, 31, 23, 59, 59, 999999) in microseconds since 1970.
const MIN_MICROS: i128 = -62_135_596_800 * MICROS;
const MAX_MICROS: i128 = 253_402_300_800 * MICROS - 1;

/// The Python objects the conversions meet or make, looked up once per process.
pub struct Py_ {
    unreadable: Py<PyAny>,
    inexact: Py<PyAny>,
    pub(crate) decimal: Py<PyAny>,
    big_int: Py<PyAny>,
    sql_time: Py<PyAny>,
    unparsed: Py<PyAny>,
    utc: Py<PyAny>,
    date_type: Py<PyAny>,
    datetime_type: Py<PyAny>,
    a2b_base64: Py<PyAny>,
    bytes_type: Py<PyAny>,
    zone: Py<PyAny>,
    pub(crate) int_type: Py<PyAny>,
    float_type: Py<PyAny>,
    round_floor: Py<PyAny>,
}

static PY: PyOnceLock<Py_> = PyOnceLock::new();

pub fn py_objects(py: Python<'_>) -> PyResult<&Py_> {
    PY.get_or_try_init(py, || {
        let errors = py.import("binlake.shared.parsing.errors")?;
        let values = py.import("binlake.shared.event.values")?;
        let datetime = py.import("datetime")?;
        let builtins = py.import("builtins")?;
        let decimal = py.import("decimal")?;
        Ok(Py_ {
            unreadable: errors.getattr("UnreadableValue")?.unbind(),
            inexact: py.import("binlake.shared.parsing.jsondoc")?.getattr("InexactNumber")?.unbind(),
            decimal: decimal.getattr("Decimal")?.unbind(),
            big_int: values.getattr("BigInt")?.unbind(),
            sql_time: values.getattr("SqlTime")?.unbind(),
            unparsed: values.getattr("Unparsed")?.unbind(),
            utc: datetime.getattr("UTC")?.unbind(),
            date_type: datetime.getattr("date")?.unbind(),
            datetime_type: datetime.getattr("datetime")?.unbind(),
            a2b_base64: py.import("binascii")?.getattr("a2b_base64")?.unbind(),
            bytes_type: builtins.getattr("bytes")?.unbind(),
            zone: py.import("binlake.shared.parsing.context")?.getattr("zone")?.unbind(),
            int_type: builtins.getattr("int")?.unbind(),
            float_type: builtins.getattr("float")?.unbind(),
            round_floor: decimal.getattr("ROUND_FLOOR")?.unbind(),
        })
    })
}

type Out<'py> = PyResult<Bound<'py, PyAny>>;

fn unreadable(py: Python<'_>, message: impl Into<String>) -> PyErr {
    match py_objects(py) {
        Ok(p) => match p.unreadable.bind(py).call1((message.into(),)) {
            Ok(error) => PyErr::from_value(error),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

/// A float from the fast JSON decoder where the digits matter: the caller decodes the message again.
fn inexact(py: Python<'_>) -> PyErr {
    match py_objects(py) {
        Ok(p) => match p.inexact.bind(py).call1(("a float needs its exact digits",)) {
            Ok(error) => PyErr::from_value(error),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

fn count(number: usize, noun: &str) -> String {
    if number == 1 {
        format!("1 {noun}")
    } else {
        format!("{number} {noun}s")
    }
}

/// A value's kind and size, never its content: "a string of 6 characters" (`errors.describe`).
pub fn describe(value: &Bound<'_, PyAny>) -> String {
    let py = value.py();
    if value.is_none() {
        return "null".into();
    }
    if value.is_instance_of::<PyBool>() {
        return "a boolean".into();
    }
    if let Ok(text) = value.cast::<PyString>() {
        let n = text.len().unwrap_or(0);
        return if n == 0 { "an empty string".into() } else { format!("a string of {}", count(n, "character")) };
    }
    if let Ok(data) = value.cast::<PyBytes>() {
        let n = data.as_bytes().len();
        return if n == 0 { "no bytes".into() } else { count(n, "byte") };
    }
    if value.is_instance_of::<pyo3::types::PyByteArray>() {
        let n = value.len().unwrap_or(0);
        return if n == 0 { "no bytes".into() } else { count(n, "byte") };
    }
    if let Ok(number) = value.cast::<PyInt>() {
        let negative = number.lt(0).unwrap_or(false);
        let digits = int_digits(number).unwrap_or(0);
        return format!("{} integer of {}", if negative { "a negative" } else { "an" }, count(digits, "digit"));
    }
    if let Ok(number) = value.cast::<PyFloat>() {
        return if number.value().is_finite() { "a floating-point number".into() } else { "a non-finite number".into() };
    }
    if let Ok(p) = py_objects(py) {
        if value.is_instance(p.decimal.bind(py)).unwrap_or(false) {
            let finite = value.call_method0(intern!(py, "is_finite")).and_then(|f| f.is_truthy()).unwrap_or(false);
            if !finite {
                return "a non-finite number".into();
            }
            let digits = value
                .call_method0(intern!(py, "as_tuple"))
                .and_then(|t| t.getattr(intern!(py, "digits")))
                .and_then(|d| d.len())
                .unwrap_or(0);
            return format!("a decimal number of {}", count(digits, "digit"));
        }
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        return format!("an array of {}", count(value.len().unwrap_or(0), "item"));
    }
    if value.is_instance_of::<PyDict>() {
        return format!("an object of {}", count(value.len().unwrap_or(0), "field"));
    }
    let name = value.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    format!("a value of type {name}")
}

/// The decimal digits of |number| (`errors._digits`: from the bit length beyond 13,000 bits).
fn int_digits(number: &Bound<'_, PyInt>) -> PyResult<usize> {
    if let Ok(n) = number.extract::<i128>() {
        return Ok(n.unsigned_abs().to_string().len());
    }
    let py = number.py();
    let magnitude = number.call_method0(intern!(py, "__abs__"))?;
    let bits: usize = magnitude.call_method0(intern!(py, "bit_length"))?.extract()?;
    if bits > 13_000 {
        return Ok((bits as f64 * 0.30103) as usize + 1);
    }
    Ok(magnitude.str()?.len()?)
}

fn describe_i128(n: i128) -> String {
    let digits = n.unsigned_abs().to_string().len();
    format!("{} integer of {}", if n < 0 { "a negative" } else { "an" }, count(digits, "digit"))
}

/// The conversion of one value (`kind`), with `zone` the source zone of wall-clock TIMESTAMPs.
pub fn convert<'py>(kind: Kind, value: &Bound<'py, PyAny>, zone: &Bound<'py, PyAny>) -> Out<'py> {
    let py = value.py();
    match kind {
        Kind::Int(width) => {
            let number = int(value)?;
            match width.bounds() {
                Some((low, high)) if !number.extract::<i128>().is_ok_and(|n| (low..=high).contains(&n)) => {
                    Err(unreadable(py, format!("expected an integer of {low}..{high}, got {}", describe(&number))))
                }
                _ => Ok(number),
            }
        }
        Kind::Year => {
            let number = int(value)?;
            let year: Option<i64> = number.extract().ok();
            match year {
                Some(y) if (0..=9999).contains(&y) => Ok(number),
                _ => Err(unreadable(py, format!("expected a year 0..9999, got {}", describe(&number)))),
            }
        }
        Kind::Decimal => decimal(value),
        Kind::Float => float(value),
        Kind::Text => text(value),
        Kind::JsonText => json_text(value),
        Kind::Boolean => boolean(value),
        Kind::Bytes(encoding) => bytes(value, encoding),
        Kind::BitBytes(encoding) => bit(value, encoding),
        Kind::Date => match value.cast::<PyString>() {
            Ok(t) => parse_date(py, t.to_str()?),
            Err(_) => Err(unreadable(py, format!("expected a date YYYY-MM-DD, got {}", describe(value)))),
        },
        Kind::OracleDate => match value.cast::<PyString>() {
            Ok(t) => {
                let text = t.to_str()?.trim_matches(is_py_space);
                if text.chars().count() > 10 {
                    parse_local_datetime(py, text)
                } else {
                    parse_local_datetime(py, &format!("{text} 00:00:00"))
                }
            }
            Err(_) => Err(unreadable(py, format!("expected a date-time, got {}", describe(value)))),
        },
        Kind::Time => match value.cast::<PyString>() {
            Ok(t) => parse_time(py, t.to_str()?),
            Err(_) => Err(unreadable(py, format!("expected a time HH:MM:SS, got {}", describe(value)))),
        },
        Kind::LocalDateTime => match value.cast::<PyString>() {
            Ok(t) => parse_local_datetime(py, t.to_str()?),
            Err(_) => {
                Err(unreadable(py, format!("expected a date-time YYYY-MM-DD HH:MM:SS, got {}", describe(value))))
            }
        },
        Kind::Instant => instant(value, zone),
        Kind::Geometry => {
            // Text renderings (WKT/EWKT, as OMS passes them) stay text; binary stays bytes.
            if value.is_instance_of::<PyString>() || value.is_instance_of::<PyBytes>() {
                Ok(value.clone())
            } else {
                Err(unreadable(py, format!("expected a geometry as text, got {}", describe(value))))
            }
        }
        Kind::Infer => infer(value),
    }
}

fn is_decimal(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = value.py();
    value.is_instance(py_objects(py)?.decimal.bind(py))
}

/// An int in int64 as itself, a wider one as `BigInt` (the canonical event's BigInteger).
fn integer_value<'py>(number: Bound<'py, PyAny>) -> Out<'py> {
    let py = number.py();
    if number.extract::<i64>().is_ok() {
        return Ok(number);
    }
    py_objects(py)?.big_int.bind(py).call1((number,))
}

fn int<'py>(value: &Bound<'py, PyAny>) -> Out<'py> {
    let py = value.py();
    let expected = || unreadable(py, format!("expected an integer, got {}", describe(value)));
    if let Ok(text) = value.cast_exact::<PyString>() {
        let s = text.to_str()?;
        if !s.is_empty() && s.len() <= INT64_DIGITS_SAFE && s.bytes().all(|b| b.is_ascii_digit()) {
            // The common Canal case: plain digits, certainly within int64.
            return Ok(s.parse::<i64>().map_err(|_| expected())?.into_pyobject(py)?.into_any());
        }
    }
    if value.is_exact_instance_of::<PyInt>() {
        return integer_value(value.clone());
    }
    if let Ok(text) = value.cast::<PyString>() {
        let s = text.to_str()?.trim_matches(is_py_space);
        if s.contains('_') {
            return Err(expected()); // int() reads "1_000", SQL does not
        }
        let parsed = py_objects(py)?.int_type.bind(py).call1((s,)); // accepts +/- and surrounding blanks
        return match parsed {
            Ok(number) => integer_value(number),
            Err(e) if e.is_instance_of::<PyValueError>(py) => Err(expected()),
            Err(e) => Err(e),
        };
    }
    if value.is_instance_of::<PyBool>() {
        return Ok(i64::from(value.is_truthy()?).into_pyobject(py)?.into_any()); // JSON true/false for TINYINT(1)
    }
    if let Ok(number) = value.cast::<PyFloat>() {
        let f = number.value();
        if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
            return Ok((f as i64).into_pyobject(py)?.into_any());
        }
        return Err(inexact(py));
    }
    if is_decimal(value)? {
        let finite = value.call_method0(intern!(py, "is_finite"))?.is_truthy()?;
        // int() of 1e4000000000 would run for ages: Python's own int <-> str limit, 4300 digits.
        if finite && value.call_method0(intern!(py, "adjusted"))?.extract::<i64>()? <= 4300 {
            let integral = value.call_method0(intern!(py, "to_integral_value"))?;
            if value.eq(&integral)? {
                return integer_value(py_objects(py)?.int_type.bind(py).call1((value,))?);
            }
        }
    }
    if value.is_instance_of::<PyInt>() {
        return integer_value(py_objects(py)?.int_type.bind(py).call1((value,))?);
    }
    Err(expected())
}

fn decimal<'py>(value: &Bound<'py, PyAny>) -> Out<'py> {
    let py = value.py();
    let p = py_objects(py)?;
    let number = if let Ok(text) = value.cast::<PyString>() {
        match p.decimal.bind(py).call1((text.to_str()?.trim_matches(is_py_space),)) {
            Ok(number) => number,
            Err(e) if e.is_instance(py, &py.import("decimal")?.getattr("InvalidOperation")?) => {
                return Err(unreadable(py, format!("expected a decimal number, got {}", describe(value))));
            }
            Err(e) => return Err(e),
        }
    } else if is_decimal(value)? {
        value.clone()
    } else if value.is_instance_of::<PyBool>() {
        return Err(unreadable(py, "expected a decimal number, got a boolean"));
    } else if value.is_instance_of::<PyInt>() {
        p.decimal.bind(py).call1((value,))?
    } else if value.is_instance_of::<PyFloat>() {
        return Err(inexact(py));
    } else {
        return Err(unreadable(py, format!("expected a decimal number, got {}", describe(value))));
    };
    if !number.call_method0(intern!(py, "is_finite"))?.is_truthy()? {
        return Err(unreadable(py, "a SQL decimal cannot be NaN or infinite"));
    }
    Ok(number)
}

fn float<'py>(value: &Bound<'py, PyAny>) -> Out<'py> {
    let py = value.py();
    if value.is_instance_of::<PyFloat>() {
        return Ok(value.clone());
    }
    let p = py_objects(py)?;
    if let Ok(text) = value.cast::<PyString>() {
        let s = text.to_str()?.trim_matches(is_py_space);
        if let Some(f) = plain_float(s) {
            return Ok(PyFloat::new(py, f).into_any());
        }
        return match p.float_type.bind(py).call1((s,)) {
            Ok(f) => Ok(f),
            Err(e) if e.is_instance_of::<PyValueError>(py) => {
                Err(unreadable(py, format!("expected a floating-point number, got {}", describe(value))))
            }
            Err(e) => Err(e),
        };
    }
    if (value.is_instance_of::<PyInt>() || is_decimal(value)?) && !value.is_instance_of::<PyBool>() {
        return match p.float_type.bind(py).call1((value,)) {
            Ok(f) => Ok(f),
            Err(e) if e.is_instance_of::<PyOverflowError>(py) => {
                Err(unreadable(py, format!("a floating-point number cannot hold {}", describe(value))))
            }
            Err(e) => Err(e),
        };
    }
    Err(unreadable(py, format!("expected a floating-point number, got {}", describe(value))))
}

/// `-?digits(.digits)?` (what float() reads the same way in Rust), else None (float() decides).
fn plain_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix('-').unwrap_or(s);
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || (body.contains('.') && fraction.is_empty()) {
        return None;
    }
    s.parse().ok()
}

fn text<'py>(value: &Bound<'py, PyAny>) -> Out<'py> {
    let py = value.py();
    if value.is_instance_of::<PyString>() {
        return Ok(value.clone());
    }
    if value.is_instance_of::<PyBool>() {
        return Ok(PyString::new(py, if value.is_truthy()? { "true" } else { "false" }).into_any());
    }
    if value.is_instance_of::<PyInt>() || is_decimal(value)? {
        return Ok(value.str()?.into_any());
    }
    if value.is_instance_of::<PyFloat>() {
        return Err(inexact(py));
    }
    Err(unreadable(py, format!("expected a string, got {}", describe(value))))
}

fn json_text<'py>(value: &Bound<'py, PyAny>) -> Out<'py> {
    let py = value.py();
    if value.is_instance_of::<PyString>() {
        return Ok(value.clone());
    }
    if value.is_instance_of::<PyDict>() || value.is_instance_of::<PyList>() {
        let mut out = Vec::new();
        json(value, &mut out, 0)?;
        // Only UTF-8 text and ASCII go in: the rendering is text.
        return Ok(PyString::new(py, std::str::from_utf8(&out).map_err(|e| PyValueError::new_err(e.to_string()))?).into_any());
    }
    text(value)
}

/// A nested JSON value rendered compactly as orjson writes it, with every number's own digits (a
/// fast-decoded float asks for the exact decode); containers nest at most 254 deep, as in orjson.
fn json(value: &Bound<'_, PyAny>, out: &mut Vec<u8>, depth: usize) -> PyResult<()> {
    let py = value.py();
    if value.is_none() {
        out.extend_from_slice(b"null");
    } else if let Ok(flag) = value.cast::<PyBool>() {
        out.extend_from_slice(if flag.is_true() { b"true" } else { b"false" });
    } else if let Ok(text) = value.cast::<PyString>() {
        json_string(out, text.to_str()?);
    } else if value.is_instance_of::<PyInt>() {
        out.extend_from_slice(value.str()?.to_str()?.as_bytes());
    } else if value.is_instance_of::<PyFloat>() {
        return Err(inexact(py));
    } else if is_decimal(value)? {
        if !value.call_method0(intern!(py, "is_finite"))?.is_truthy()? {
            return Err(unreadable(py, "a JSON value cannot hold NaN or an infinite number"));
        }
        out.extend_from_slice(value.str()?.to_str()?.as_bytes());
    } else if let Ok(map) = value.cast::<PyDict>() {
        if depth >= 254 {
            return Err(PyTypeError::new_err("Recursion limit reached"));
        }
        out.push(b'{');
        for (i, (key, item)) in map.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let key = key.cast::<PyString>().map_err(|_| PyTypeError::new_err("Dict key must be str"))?;
            json_string(out, key.to_str()?);
            out.push(b':');
            json(&item, out, depth + 1)?;
        }
        out.push(b'}');
    } else if let Ok(items) = value.cast::<PyList>() {
        if depth >= 254 {
            return Err(PyTypeError::new_err("Recursion limit reached"));
        }
        out.push(b'[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json(&item, out, depth + 1)?;
        }
        out.push(b']');
    } else {
        let name = value.get_type().name()?;
        return Err(PyTypeError::new_err(format!("Type is not JSON serializable: {name}")));
    }
    Ok(())
}

fn boolean<'py>(value: &Bound<'py, PyAny>) -> Out<'py> {
    let py = value.py();
    if value.is_instance_of::<PyBool>() {
        return Ok(value.clone());
    }
    if let Ok(number) = value.cast::<PyInt>() {
        if let Ok(n @ (0 | 1)) = number.extract::<i64>() {
            return Ok(PyBool::new(py, n == 1).to_owned().into_any());
        }
    }
    if let Ok(text) = value.cast::<PyString>() {
        match text.to_str()?.trim_matches(is_py_space).to_lowercase().as_str() {
            "1" | "true" => return Ok(PyBool::new(py, true).to_owned().into_any()),
            "0" | "false" => return Ok(PyBool::new(py, false).to_owned().into_any()),
            _ => {}
        }
    }
    Err(unreadable(py, format!("expected a boolean (true/false/1/0), got {}", describe(value))))
}

fn bytes<'py>(value: &Bound<'py, PyAny>, encoding: Encoding) -> Out<'py> {
    let py = value.py();
    if let Ok(text) = value.cast::<PyString>() {
        return decode_text(text, encoding);
    }
    if let Ok(items) = value.cast::<PyList>() {
        let items: Vec<Bound<'py, PyAny>> = items.iter().collect();
        return from_int_list(py, &items);
    }
    Err(unreadable(py, format!("expected binary as {} text, got {}", encoding.name(), describe(value))))
}

fn decode_text<'py>(text: &Bound<'py, PyString>, encoding: Encoding) -> Out<'py> {
    let py = text.py();
    let p = py_objects(py)?;
    match encoding {
        Encoding::Latin1 => {
            let s = text.to_str()?;
            let mut out = Vec::with_capacity(s.len());
            for (position, c) in s.chars().enumerate() {
                if (c as u32) > 0xFF {
                    return Err(unreadable(
                        py,
                        format!(
                            "expected one character per byte (ISO-8859-1), found a character above U+00FF at position {position} of {}",
                            describe(text.as_any())
                        ),
                    ));
                }
                out.push(c as u32 as u8);
            }
            Ok(PyBytes::new(py, &out).into_any())
        }
        Encoding::Base64 => {
            let s = text.to_str()?;
            if let Some(position) = s.chars().position(|c| !c.is_ascii()) {
                return Err(unreadable(
                    py,
                    format!("invalid base64: a non-ASCII character at position {position} of {}", describe(text.as_any())),
                ));
            }
            let kwargs = PyDict::new(py);
            kwargs.set_item("strict_mode", true)?;
            match p.a2b_base64.bind(py).call((PyBytes::new(py, s.as_bytes()),), Some(&kwargs)) {
                Ok(data) => Ok(data),
                // binascii's messages name the rule broken, never the data.
                Err(e) if e.is_instance_of::<PyValueError>(py) => Err(unreadable(
                    py,
                    format!("invalid base64: {} (in {})", e.value(py).str()?, describe(text.as_any())),
                )),
                Err(e) => Err(e),
            }
        }
        Encoding::Hex => match p.bytes_type.bind(py).call_method1(intern!(py, "fromhex"), (text,)) {
            Ok(data) => Ok(data),
            Err(e) if e.is_instance_of::<PyValueError>(py) => {
                Err(unreadable(py, format!("invalid hex (base16) text: {}", describe(text.as_any()))))
            }
            Err(e) => Err(e),
        },
        Encoding::List => {
            let s = text.to_str()?;
            let body = s.trim_matches(is_py_space);
            if !(body.starts_with('[') && body.ends_with(']')) || body.len() < 2 {
                return Err(unreadable(
                    py,
                    format!("expected a byte list such as [106, 103], got {}", describe(text.as_any())),
                ));
            }
            let inner = body[1..body.len() - 1].trim_matches(is_py_space);
            if inner.is_empty() {
                return Ok(PyBytes::new(py, b"").into_any());
            }
            if let Some(data) = plain_byte_list(inner) {
                return Ok(PyBytes::new(py, &data).into_any());
            }
            let parts: Vec<Bound<'py, PyAny>> =
                inner.split(',').map(|part| PyString::new(py, part.trim_matches(is_py_space)).into_any()).collect();
            from_int_list(py, &parts)
        }
    }
}

/// A byte list's items when every one is plainly written (`-?[0-9]{1,3}` between blanks) and in
/// -128..255: what `from_int_list` reads them as, without a Python `int()` per item. Any other
/// spelling (a sign `+`, `_`, other digits) or a value out of range: None, and `from_int_list` decides.
fn plain_byte_list(inner: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(inner.len() / 3 + 1);
    for part in inner.split(',') {
        let item = part.trim_matches(is_py_space).as_bytes();
        let (negative, digits) = match item.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, item),
        };
        if digits.is_empty() || digits.len() > 3 || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let magnitude = digits.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
        let n = if negative { -magnitude } else { magnitude };
        if !(-128..=255).contains(&n) {
            return None;
        }
        out.push((n & 0xFF) as u8);
    }
    Some(out)
}

/// Bytes from a list of byte values (signed Java bytes accepted), each item read by int().
fn from_int_list<'py>(py: Python<'py>, items: &[Bound<'py, PyAny>]) -> Out<'py> {
    let p = py_objects(py)?;
    let mut out = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let number = if item.is_exact_instance_of::<PyInt>() {
            item.clone()
        } else {
            match p.int_type.bind(py).call1((item,)) {
                Ok(n) => n,
                Err(e) if e.is_instance_of::<PyTypeError>(py) || e.is_instance_of::<PyValueError>(py) => {
                    return Err(unreadable(py, format!("byte list item {index} is not an integer: {}", describe(item))));
                }
                Err(e) => return Err(e),
            }
        };
        match number.extract::<i64>() {
            Ok(n) if (-128..=255).contains(&n) && !item.is_instance_of::<PyBool>() => out.push((n & 0xFF) as u8),
            _ => return Err(unreadable(py, format!("byte list item {index} is outside -128..255: {}", describe(item)))),
        }
    }
    Ok(PyBytes::new(py, &out).into_any())
}

/// A BIT value: at most 64 bits, never negative; beyond int64 a `BigInt` (the canonical BigInteger),
/// as every integer wider than a long.
fn bit_value<'py>(py: Python<'py>, number: Bound<'py, PyAny>) -> Out<'py> {
    match number.extract::<u128>() {
        Ok(n) if n <= BIT_MAX => integer_value(number),
        _ => Err(unreadable(py, format!("expected a BIT value of at most 64 bits, got {}", describe(&number)))),
    }
}

fn bit<'py>(value: &Bound<'py, PyAny>, encoding: Encoding) -> Out<'py> {
    let py = value.py();
    if value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>() {
        return bit_value(py, value.clone());
    }
    if encoding == Encoding::Latin1 {
        if let Ok(text) = value.cast::<PyString>() {
            // Canal renders BIT as its number.
            let stripped = text.to_str()?.trim_matches(is_py_space);
            let digits = PyString::new(py, stripped);
            if digits.call_method0(intern!(py, "isdigit"))?.is_truthy()? {
                return bit_value(py, py_objects(py)?.int_type.bind(py).call1((digits,))?);
            }
        }
    }
    let raw = bytes(value, encoding)?;
    let number = py_objects(py)?.int_type.bind(py).call_method1(intern!(py, "from_bytes"), (raw, "big"))?;
    bit_value(py, number)
}

fn infer<'py>(value: &Bound<'py, PyAny>) -> Out<'py> {
    let py = value.py();
    if value.is_instance_of::<PyString>() || value.is_instance_of::<PyBool>() {
        return Ok(value.clone());
    }
    if value.is_instance_of::<PyInt>() {
        return integer_value(value.clone());
    }
    if value.is_instance_of::<PyFloat>() {
        return Err(inexact(py));
    }
    if is_decimal(value)? {
        if !value.call_method0(intern!(py, "is_finite"))?.is_truthy()? {
            return Err(unreadable(py, "a SQL value cannot be NaN or infinite"));
        }
        return Ok(value.clone());
    }
    if value.is_instance_of::<PyDict>() || value.is_instance_of::<PyList>() {
        return json_text(value);
    }
    Err(unreadable(py, format!("unsupported JSON value: {}", describe(value))))
}

// ------------------------------------------------------------------ dates and times

/// Days from 1970-01-01 to a civil date (H. Hinnant's `days_from_civil`).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = year - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `days` after 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month as u8, day as u8)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn number(b: &[u8]) -> Option<i64> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
}

/// `YYYY-MM-DD` of a real calendar date in years 1..9999.
fn strict_date(b: &[u8]) -> Option<(i64, i64, i64)> {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (number(&b[0..4])?, number(&b[5..7])?, number(&b[8..10])?);
    ((1..=9999).contains(&y) && (1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m)).then_some((y, m, d))
}

/// `YYYY-MM-DD[ T]HH:MM:SS[.f]` with 1 to 9 fraction digits (beyond six cut, as `_trim_fraction`):
/// (days since 1970, microseconds of the day).
fn strict_date_time(text: &str) -> Option<(i64, i64)> {
    let b = text.as_bytes();
    if b.len() < 19 || (b[10] != b' ' && b[10] != b'T') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, m, d) = strict_date(&b[..10])?;
    let (hour, minute, second) = (number(&b[11..13])?, number(&b[14..16])?, number(&b[17..19])?);
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut micros = 0;
    if b.len() > 19 {
        let fraction = b[19..].strip_prefix(b".")?;
        if fraction.is_empty() || fraction.len() > 9 {
            return None;
        }
        let six = &fraction[..fraction.len().min(6)];
        micros = number(six)? * 10_i64.pow(6 - six.len() as u32);
        number(fraction)?;
    }
    Some((days_from_civil(y, m, d), ((hour * 60 + minute) * 60 + second) * 1_000_000 + micros))
}

/// MySQL zero dates and dates with zero parts: 0000-00-00, 2020-00-00, 2020-01-00.
fn is_zero_date(text: &str) -> bool {
    let head: Vec<char> = text.chars().take(10).collect();
    if head.len() != 10 {
        return false;
    }
    let part = |from: usize, to: usize| head[from..to].iter().collect::<String>();
    part(0, 4) == "0000" || part(5, 7) == "00" || part(8, 10) == "00"
}

fn unparsed<'py>(py: Python<'py>, text: &str) -> Out<'py> {
    py_objects(py)?.unparsed.bind(py).call1((text,))
}

fn parse_date<'py>(py: Python<'py>, text: &str) -> Out<'py> {
    if let Some((y, m, d)) = strict_date(text.as_bytes()) {
        return Ok(PyDate::new(py, y as i32, m as u8, d as u8)?.into_any());
    }
    match py_objects(py)?.date_type.bind(py).call_method1(intern!(py, "fromisoformat"), (text,)) {
        Ok(date) => Ok(date),
        Err(e) if e.is_instance_of::<PyValueError>(py) => {
            if is_zero_date(text) {
                unparsed(py, text)
            } else {
                Err(unreadable(py, format!("expected a date YYYY-MM-DD, got {}", describe(&PyString::new(py, text)))))
            }
        }
        Err(e) => Err(e),
    }
}

/// `[-]HH:MM:SS[.fraction]`, hours up to three digits (MySQL allows 838), fraction cut at six digits.
fn parse_time<'py>(py: Python<'py>, text: &str) -> Out<'py> {
    let shape = || unreadable(py, format!("expected a time [-]HH:MM:SS[.ffffff], got {}", describe(&PyString::new(py, text))));
    let s = text.trim_matches(is_py_space);
    let (negative, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (clock, fraction) = match body.split_once('.') {
        Some((clock, fraction)) => (clock, Some(fraction)),
        None => (body, None),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    let [hours, minutes, seconds] = parts[..] else { return Err(shape()) };
    if !(1..=3).contains(&hours.len()) || minutes.len() != 2 || seconds.len() != 2 {
        return Err(shape());
    }
    let (Some(h), Some(m), Some(sec)) = (number(hours.as_bytes()), number(minutes.as_bytes()), number(seconds.as_bytes()))
    else {
        return Err(shape());
    };
    let mut micros = 0;
    if let Some(fraction) = fraction {
        if !(1..=9).contains(&fraction.len()) || number(fraction.as_bytes()).is_none() {
            return Err(shape());
        }
        let six = &fraction[..fraction.len().min(6)];
        micros = number(six.as_bytes()).unwrap_or(0) * 10_i64.pow(6 - six.len() as u32);
    }
    if m > 59 || sec > 59 {
        return Err(unreadable(
            py,
            format!(
                "expected a time [-]HH:MM:SS[.ffffff] with minutes and seconds below 60, got {}",
                describe(&PyString::new(py, text))
            ),
        ));
    }
    let total = ((h * 60 + m) * 60 + sec) * 1_000_000 + micros;
    py_objects(py)?.sql_time.bind(py).call1((if negative { -total } else { total },))
}

/// Cut fractional seconds to six digits (fromisoformat wants at most six): the first `.` followed by
/// seven or more digits, in a text longer than `YYYY-MM-DD HH:MM:SS.ffffff`.
fn trim_fraction(text: &str) -> String {
    if text.chars().count() <= 26 {
        return text.to_string();
    }
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(dot) = b[i..].iter().position(|&c| c == b'.') {
        let start = i + dot + 1;
        let run = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
        if run >= 7 {
            return format!("{}{}", &text[..start + 6], &text[start + run..]);
        }
        i = start;
    }
    text.to_string()
}

fn local_date_time<'py>(py: Python<'py>, days: i64, micros_of_day: i64, zone: Option<&Bound<'py, PyTzInfo>>) -> Out<'py> {
    let (y, mo, d) = civil_from_days(days);
    let seconds = micros_of_day / 1_000_000;
    Ok(PyDateTime::new(
        py,
        y as i32,
        mo,
        d,
        (seconds / 3600) as u8,
        (seconds / 60 % 60) as u8,
        (seconds % 60) as u8,
        (micros_of_day % 1_000_000) as u32,
        zone,
    )?
    .into_any())
}

fn parse_local_datetime<'py>(py: Python<'py>, text: &str) -> Out<'py> {
    if let Some((days, micros)) = strict_date_time(text) {
        return local_date_time(py, days, micros, None);
    }
    let shape = || {
        unreadable(
            py,
            format!("expected a date-time YYYY-MM-DD HH:MM:SS[.ffffff], got {}", describe(&PyString::new(py, text))),
        )
    };
    match py_objects(py)?.datetime_type.bind(py).call_method1(intern!(py, "fromisoformat"), (trim_fraction(text),)) {
        Ok(value) => {
            if value.getattr(intern!(py, "tzinfo"))?.is_none() {
                Ok(value)
            } else {
                Err(unreadable(py, "expected a date-time without zone, got one with a zone offset"))
            }
        }
        Err(e) if e.is_instance_of::<PyValueError>(py) => {
            if is_zero_date(text) {
                unparsed(py, text)
            } else {
                Err(shape())
            }
        }
        Err(e) => Err(e),
    }
}

/// A MySQL TIMESTAMP in any rendering vendors use, as a UTC instant: epoch seconds with an optional
/// fraction, ISO 8601 with `Z` or an offset, a date-time followed by an IANA zone name, or a wall clock
/// read in `zone` (the configured source zone).
fn instant<'py>(value: &Bound<'py, PyAny>, zone: &Bound<'py, PyAny>) -> Out<'py> {
    let py = value.py();
    if let Ok(text) = value.cast::<PyString>() {
        let text = text.to_str()?;
        return match parse_instant(py, text, zone) {
            Err(e) if e.is_instance_of::<PyOverflowError>(py) => Err(unreadable(
                py,
                format!("expected a timestamp within years 1-9999 in UTC, got {}", describe(value)),
            )),
            other => other,
        };
    }
    if (value.is_instance_of::<PyInt>() || is_decimal(value)?) && !value.is_instance_of::<PyBool>() {
        return instant_from_epoch_text(py, value.str()?.to_str()?);
    }
    if value.is_instance_of::<PyFloat>() {
        return Err(inexact(py));
    }
    Err(unreadable(py, format!("expected a timestamp, got {}", describe(value))))
}

fn utc<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyTzInfo>> {
    Ok(py_objects(py)?.utc.bind(py).clone().cast_into::<PyTzInfo>()?)
}

/// A wall clock in `zone`, as a UTC instant (the zone's rules: its earlier offset at a gap or a fold).
fn in_zone<'py>(py: Python<'py>, local: Bound<'py, PyAny>, zone: &Bound<'py, PyAny>) -> Out<'py> {
    let utc = utc(py)?;
    if zone.is(&utc) {
        let kwargs = PyDict::new(py);
        kwargs.set_item("tzinfo", &utc)?;
        return local.call_method(intern!(py, "replace"), (), Some(&kwargs));
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("tzinfo", zone)?;
    local.call_method(intern!(py, "replace"), (), Some(&kwargs))?.call_method1(intern!(py, "astimezone"), (utc,))
}

fn parse_instant<'py>(py: Python<'py>, text: &str, zone: &Bound<'py, PyAny>) -> Out<'py> {
    // The common renderings: "YYYY-MM-DD HH:MM:SS[.ffffff]" (Canal) and "...Z" (Debezium).
    let (wall, z) = match text.strip_suffix('Z') {
        Some(rest) => (rest, true),
        None => (text, false),
    };
    if wall.len() <= 26 {
        if let Some((days, micros)) = strict_date_time(wall) {
            let utc = utc(py)?;
            if z || zone.is(&utc) {
                return local_date_time(py, days, micros, Some(&utc));
            }
            return in_zone(py, local_date_time(py, days, micros, None)?, zone);
        }
    }
    let p = py_objects(py)?;
    let chars = text.chars().count();
    let last = text.chars().last();
    if (19..=27).contains(&chars)
        && text.chars().nth(4) == Some('-')
        && matches!(text.chars().nth(10), Some(' ' | 'T'))
        && ((chars <= 26 && last.is_some_and(|c| c.is_ascii_digit())) || last == Some('Z'))
    {
        if let Ok(value) = p.datetime_type.bind(py).call_method1(intern!(py, "fromisoformat"), (text,)) {
            if !value.getattr(intern!(py, "tzinfo"))?.is_none() {
                return value.call_method1(intern!(py, "astimezone"), (utc(py)?,)); // the text's own offset
            }
            return in_zone(py, value, zone);
        }
    }
    let stripped = text.trim_matches(is_py_space);
    if looks_numeric(stripped) {
        return instant_from_epoch_text(py, stripped);
    }
    if let Some((local, name)) = zone_suffixed(stripped) {
        let upper = name.to_ascii_uppercase();
        if !(upper.starts_with("AM") || upper.starts_with("PM")) {
            let worded = || {
                unreadable(
                    py,
                    format!(
                        "expected a timestamp (a date-time followed by an IANA zone name), got {}",
                        describe(&PyString::new(py, text))
                    ),
                )
            };
            let local = match parse_local_datetime(py, local) {
                Ok(v) => v,
                Err(e) if e.is_instance_of::<PyValueError>(py) => return Err(worded()),
                Err(e) => return Err(e),
            };
            if local.is_instance(p.unparsed.bind(py))? {
                return unparsed(py, text);
            }
            let tz = match p.zone.bind(py).call1((name,)) {
                Ok(tz) => tz,
                Err(e) if e.is_instance_of::<PyValueError>(py) => return Err(worded()), // it names the zone
                Err(e) => return Err(e),
            };
            let kwargs = PyDict::new(py);
            kwargs.set_item("tzinfo", tz)?;
            return local
                .call_method(intern!(py, "replace"), (), Some(&kwargs))?
                .call_method1(intern!(py, "astimezone"), (utc(py)?,));
        }
    }
    let iso = trim_fraction(&stripped.replace('Z', "+00:00"));
    match p.datetime_type.bind(py).call_method1(intern!(py, "fromisoformat"), (iso,)) {
        Ok(value) => {
            if value.getattr(intern!(py, "tzinfo"))?.is_none() {
                in_zone(py, value, zone)
            } else {
                value.call_method1(intern!(py, "astimezone"), (utc(py)?,))
            }
        }
        Err(e) if e.is_instance_of::<PyValueError>(py) => {
            if is_zero_date(stripped) {
                unparsed(py, text)
            } else {
                Err(unreadable(
                    py,
                    format!(
                        "expected a timestamp (epoch seconds, ISO 8601 or YYYY-MM-DD HH:MM:SS), got {}",
                        describe(&PyString::new(py, text))
                    ),
                ))
            }
        }
        Err(e) => Err(e),
    }
}

/// `-?digits(.digits)?`: epoch seconds.
fn looks_numeric(text: &str) -> bool {
    let body = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = body.split_once('.').map_or((body, None), |(w, f)| (w, Some(f)));
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && fraction.is_none_or(|f| f.is_empty() || digits(f))
}

/// `date-time zone`: the text before the last blank run, ending in a digit and holding no line break,
/// and a zone name `[A-Za-z][A-Za-z0-9_+-/]*` after it.
fn zone_suffixed(text: &str) -> Option<(&str, &str)> {
    let cut = text.rfind(is_py_space)?;
    let name = &text[cut + text[cut..].chars().next()?.len_utf8()..];
    let mut chars = name.chars();
    if !chars.next()?.is_ascii_alphabetic() || !chars.all(|c| c.is_ascii_alphanumeric() || "_+-/".contains(c)) {
        return None;
    }
    let local = text[..cut].trim_end_matches(is_py_space);
    (local.ends_with(|c: char| c.is_ascii_digit()) && !local.contains('\n')).then_some((local, name))
}

/// `SECONDS[.fraction]` since the epoch (OMS, DRS JSON), exact to the microsecond (floored).
fn instant_from_epoch_text<'py>(py: Python<'py>, text: &str) -> Out<'py> {
    let described = || describe(&PyString::new(py, text));
    let micros = match epoch_micros(text) {
        Some(Ok(micros)) => micros,
        Some(Err(())) => {
            return Err(unreadable(py, format!("expected epoch seconds within years 1-9999, got {}", described())));
        }
        None => {
            // Other spellings (an exponent, blanks): Decimal reads them.
            let p = py_objects(py)?;
            let seconds = match p.decimal.bind(py).call1((text,)) {
                Ok(s) => s,
                Err(e) if e.is_instance(py, &py.import("decimal")?.getattr("InvalidOperation")?) => {
                    return Err(unreadable(py, format!("expected epoch seconds, got {}", described())));
                }
                Err(e) => return Err(e),
            };
            if !seconds.call_method0(intern!(py, "is_finite"))?.is_truthy()?
                || seconds.call_method0(intern!(py, "adjusted"))?.extract::<i64>()? > 20
            {
                return Err(unreadable(py, format!("expected epoch seconds within years 1-9999, got {}", described())));
            }
            let kwargs = PyDict::new(py);
            kwargs.set_item("rounding", p.round_floor.bind(py))?;
            let scaled = seconds.call_method1(intern!(py, "scaleb"), (6,))?.call_method(
                intern!(py, "to_integral_value"),
                (),
                Some(&kwargs),
            )?;
            p.int_type.bind(py).call1((scaled,))?.extract::<i128>()?
        }
    };
    if !(MIN_MICROS..=MAX_MICROS).contains(&micros) {
        return Err(unreadable(
            py,
            format!("expected microseconds since the epoch within years 1-9999, got {}", describe_i128(micros)),
        ));
    }
    let micros = micros as i64;
    let utc = utc(py)?;
    local_date_time(py, micros.div_euclid(86_400_000_000), micros.rem_euclid(86_400_000_000), Some(&utc))
}

/// Microseconds (floored) of `-?digits(.digits)?`; Some(Err) beyond 21 integer digits (`adjusted() > 20`);
/// None for other spellings.
fn epoch_micros(text: &str) -> Option<Result<i128, ()>> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let significant = whole.trim_start_matches('0');
    if significant.len() > 21 {
        return Some(Err(()));
    }
    let whole_value: i128 = if significant.is_empty() { 0 } else { significant.parse().ok()? };
    let six = &fraction[..fraction.len().min(6)];
    let fraction_micros: i128 = if six.is_empty() { 0 } else { six.parse::<i128>().ok()? * 10_i128.pow(6 - six.len() as u32) };
    let rest_nonzero = fraction.len() > 6 && fraction[6..].bytes().any(|b| b != b'0');
    let magnitude = whole_value * MICROS + fraction_micros;
    Some(Ok(if negative { -magnitude - i128::from(rest_nonzero) } else { magnitude }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        for days in [-719_162, -1, 0, 1, 11_017, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, i64::from(m), i64::from(d)), days);
        }
    }

    #[test]
    fn epoch_seconds() {
        assert_eq!(epoch_micros("1.5"), Some(Ok(1_500_000)));
        assert_eq!(epoch_micros("-1.0000001"), Some(Ok(-1_000_001)));
        assert_eq!(epoch_micros("1e5"), None);
        assert_eq!(epoch_micros("1234567890123456789012"), Some(Err(())));
    }

    #[test]
    fn zone_suffix() {
        assert_eq!(zone_suffixed("2020-11-25 00:01:02 Asia/Shanghai"), Some(("2020-11-25 00:01:02", "Asia/Shanghai")));
        assert_eq!(zone_suffixed("2020-11-25 00:01:02 PM"), Some(("2020-11-25 00:01:02", "PM")));
        assert_eq!(zone_suffixed("2020-11-25T00:01:02"), None);
    }
}

/// A column's conversion as Python calls it: `conversion(value)` is the canonical value, or raises
/// `UnreadableValue` (or `InexactNumber`, for a float whose digits matter).
#[pyclass(frozen, module = "binlake.shared.kernel._kernel")]
pub struct Conversion {
    pub kind: Kind,
    zone: Py<PyAny>,
}

#[pymethods]
impl Conversion {
    #[new]
    #[pyo3(signature = (kind, bytes_encoding = None, zone = None))]
    fn new(py: Python<'_>, kind: &str, bytes_encoding: Option<&str>, zone: Option<Py<PyAny>>) -> PyResult<Self> {
        let encoding = || -> PyResult<Encoding> {
            let name = bytes_encoding.ok_or_else(|| PyValueError::new_err(format!("{kind} needs a bytes_encoding")))?;
            Encoding::parse(name).ok_or_else(|| PyValueError::new_err(format!("unknown bytes encoding {name:?}")))
        };
        let kind = match kind {
            "int" => Kind::Int(Width::Any),
            "int8" => Kind::Int(Width::I8),
            "int16" => Kind::Int(Width::I16),
            "int32" => Kind::Int(Width::I32),
            "int64" => Kind::Int(Width::I64),
            "uint64" => Kind::Int(Width::U64),
            "int64_or_uint64" => Kind::Int(Width::Either64),
            "year" => Kind::Year,
            "decimal" => Kind::Decimal,
            "float" => Kind::Float,
            "text" => Kind::Text,
            "json_text" => Kind::JsonText,
            "boolean" => Kind::Boolean,
            "bytes" => Kind::Bytes(encoding()?),
            "bit" => Kind::BitBytes(encoding()?),
            "date" => Kind::Date,
            "oracle_date" => Kind::OracleDate,
            "time" => Kind::Time,
            "local_datetime" => Kind::LocalDateTime,
            "instant" => Kind::Instant,
            "geometry" => Kind::Geometry,
            "infer" => Kind::Infer,
            other => return Err(PyValueError::new_err(format!("unknown conversion {other:?}"))),
        };
        let zone = match zone {
            Some(zone) => zone,
            None => py_objects(py)?.utc.clone_ref(py),
        };
        Ok(Conversion { kind, zone })
    }

    fn __call__<'py>(&self, value: &Bound<'py, PyAny>) -> Out<'py> {
        convert(self.kind, value, self.zone.bind(value.py()))
    }

    /// The conversion's name (`int`, `text`, `instant`...).
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind.name()
    }

    /// The text encoding of binary values (`bytes` and `bit`), else None.
    #[getter]
    fn bytes_encoding(&self) -> Option<&'static str> {
        match self.kind {
            Kind::Bytes(e) | Kind::BitBytes(e) => Some(e.name()),
            _ => None,
        }
    }

    /// The source zone of wall-clock TIMESTAMPs.
    #[getter]
    fn zone(&self, py: Python<'_>) -> Py<PyAny> {
        self.zone.clone_ref(py)
    }

    fn __repr__(&self) -> String {
        format!("Conversion({:?})", self.kind.name())
    }
}

/// `errors.describe`: a value's kind and size, never its content.
#[pyfunction(name = "describe")]
pub fn py_describe(value: &Bound<'_, PyAny>) -> String {
    describe(value)
}

/// A BIT value of at most 64 bits (an int), or `UnreadableValue`.
#[pyfunction(name = "bit_value")]
pub fn py_bit_value<'py>(value: &Bound<'py, PyAny>) -> Out<'py> {
    bit_value(value.py(), value.clone())
}

/// `RowTypes.convert`'s loop: each value of a raw image converted by its column's conversion
/// (`converters`: name -> `Conversion` or any Python callable; an undeclared column is inferred). A
/// value its conversion refuses (ValueError, TypeError, ArithmeticError) ends the loop: the result is
/// then (name, value, exception), which the caller words; any other exception (`InexactNumber`) raises.
#[pyfunction]
pub fn convert_image<'py>(raw: &Bound<'py, PyDict>, converters: &Bound<'py, PyDict>) -> Out<'py> {
    let py = raw.py();
    let out = crate::objects::new_dict(py, raw.len());
    let utc = py_objects(py)?.utc.bind(py).clone();
    for (name, value) in raw.iter() {
        if value.is_none() {
            out.set_item(name, value)?;
            continue;
        }
        let converter = converters.get_item(&name)?;
        let converted = match &converter {
            None => {
                // Undeclared: inferred. Text, booleans and int64s are their own values.
                if value.is_exact_instance_of::<PyString>()
                    || value.is_exact_instance_of::<PyBool>()
                    || (value.is_exact_instance_of::<PyInt>() && value.extract::<i64>().is_ok())
                {
                    out.set_item(name, value)?;
                    continue;
                }
                convert(Kind::Infer, &value, &utc)
            }
            Some(c) => match c.cast::<Conversion>() {
                Ok(native) => {
                    let native = native.get();
                    if native.kind == Kind::Text && value.is_exact_instance_of::<PyString>() {
                        out.set_item(name, value)?;
                        continue;
                    }
                    convert(native.kind, &value, native.zone.bind(py))
                }
                Err(_) => c.call1((&value,)),
            },
        };
        match converted {
            Ok(v) => out.set_item(name, v)?,
            Err(e)
                if e.is_instance_of::<PyValueError>(py)
                    || e.is_instance_of::<PyTypeError>(py)
                    || e.is_instance_of::<pyo3::exceptions::PyArithmeticError>(py) =>
            {
                return Ok(PyTuple::new(py, [name, value, e.into_value(py).into_bound(py).into_any()])?.into_any());
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out.into_any())
}
