//! Avro records read into Python values, with fields the caller does not want skipped unbuilt.
//!
//! The changelog writer without Spark (`spark_sink/changelog/arrow_rows.py`) needs only an event's
//! envelope; fastavro reading it with an envelope-only reader schema still resolves every field of
//! the writer schema in Python-level code (about 60 µs an event, most of the writer's time). A
//! `Shape` is the writer schema compiled once (from Python: `arrow_rows.shape_notation`), each
//! record field marked kept or skipped; `read` walks a body and returns the kept values as fastavro
//! would give them, except records (tuples of their fields, skipped ones None) and enums (the
//! symbol's index), which the caller names.
//!
//! Notation: `N` null, `Z` boolean, `I` int, `L` long, `F` float, `D` double, `S` string, `B`
//! bytes, `E` enum, `[T` array, `{T` map, `(T,T...)` union, `|(T,T...)` a union whose value
//! comes with its branch index (`(index, value)`: the mirror without Spark tells an image value's
//! kind by it, `Date` from `Time`, where fastavro's plain values could not), `<T,T...>` record, `!T`
//! a record field read past, not built, `^T` a record field returned as its encoded bytes (the mirror
//! writer interns a table's column descriptors by them and builds each distinct one once). Where fastavro reads a value its own way (a negative block
//! count, a varint beyond 64 bits, a boolean byte other than 0/1, a kept string that is not
//! UTF-8, a union index out of range, an enum index out of its symbols) `read` returns None and the
//! caller asks fastavro: the result is fastavro's for every body either way. A skipped string is
//! not checked for UTF-8, as fastavro's skipping does not check it either.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::avro_reader::Reader;

#[derive(Debug)]
pub enum Shape {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Str,
    Bytes,
    Enum(usize),
    Array(Box<Shape>),
    Map(Box<Shape>),
    Union(Vec<Shape>),
    /// A union read as `(branch index, value)`.
    Tagged(Vec<Shape>),
    /// Each field and what becomes of it.
    Record(Vec<(Shape, Keep)>),
}

/// What `read` makes of a record field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Keep {
    /// Its value.
    Build,
    /// None: read past.
    Skip,
    /// Its encoded bytes.
    Raw,
}

impl Shape {
    /// The shape of a notation, or None for anything malformed. An enum is `E` followed by its
    /// symbol count and `;`.
    pub fn compile(notation: &str) -> Option<Shape> {
        let mut at = 0;
        let shape = Shape::read(notation.as_bytes(), &mut at)?;
        (at == notation.len()).then_some(shape)
    }

    fn list(text: &[u8], at: &mut usize, end: u8, fields: bool) -> Option<Vec<(Shape, Keep)>> {
        let mut items = Vec::new();
        loop {
            let keep = match text.get(*at) {
                Some(b'!') if fields => Keep::Skip,
                Some(b'^') if fields => Keep::Raw,
                _ => Keep::Build,
            };
            if keep != Keep::Build {
                *at += 1;
            }
            items.push((Shape::read(text, at)?, keep));
            let c = *text.get(*at)?;
            *at += 1;
            if c == end {
                return Some(items);
            }
            if c != b',' {
                return None;
            }
        }
    }

    fn read(text: &[u8], at: &mut usize) -> Option<Shape> {
        let c = *text.get(*at)?;
        *at += 1;
        Some(match c {
            b'N' => Shape::Null,
            b'Z' => Shape::Boolean,
            b'I' => Shape::Int,
            b'L' => Shape::Long,
            b'F' => Shape::Float,
            b'D' => Shape::Double,
            b'S' => Shape::Str,
            b'B' => Shape::Bytes,
            b'E' => {
                let end = text[*at..].iter().position(|&b| b == b';')? + *at;
                let n = std::str::from_utf8(&text[*at..end]).ok()?.parse().ok()?;
                *at = end + 1;
                Shape::Enum(n)
            }
            b'[' => Shape::Array(Box::new(Shape::read(text, at)?)),
            b'{' => Shape::Map(Box::new(Shape::read(text, at)?)),
            b'(' => Shape::Union(
                Shape::list(text, at, b')', false)?
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect(),
            ),
            b'|' => {
                if text.get(*at) != Some(&b'(') {
                    return None;
                }
                *at += 1;
                Shape::Tagged(
                    Shape::list(text, at, b')', false)?
                        .into_iter()
                        .map(|(s, _)| s)
                        .collect(),
                )
            }
            b'<' => Shape::Record(Shape::list(text, at, b'>', true)?),
            _ => return None,
        })
    }
}

fn float(r: &mut Reader<'_>) -> Option<f32> {
    let mut four = [0u8; 4];
    for b in four.iter_mut() {
        *b = r.raw_byte()?;
    }
    Some(f32::from_le_bytes(four))
}

/// Items of one array or map beyond this many in all decline (a corrupt count; items of no bytes, such
/// as nulls, would otherwise let a short body ask for millions).
const ITEMS_LIMIT: usize = 1 << 20;

/// Blocks of an array or map: calls `each` once per item.
pub(crate) fn blocks(r: &mut Reader<'_>, mut each: impl FnMut(&mut Reader<'_>) -> Option<()>) -> Option<()> {
    let mut total: usize = 0;
    loop {
        let n = r.count()?;
        if n == 0 {
            return Some(());
        }
        total = total.checked_add(n).filter(|&t| t <= ITEMS_LIMIT)?;
        for _ in 0..n {
            each(r)?;
        }
    }
}

/// Reads past one value of `shape` without building it.
pub(crate) fn skip(r: &mut Reader<'_>, shape: &Shape) -> Option<()> {
    match shape {
        Shape::Null => {}
        Shape::Boolean => {
            r.raw_byte()?;
        }
        Shape::Int | Shape::Long => {
            r.long()?;
        }
        Shape::Float => {
            float(r)?;
        }
        Shape::Double => {
            r.double()?;
        }
        Shape::Str | Shape::Bytes => {
            r.raw()?;
        }
        Shape::Enum(n) => {
            r.index(*n)?;
        }
        Shape::Array(item) => blocks(r, |r| skip(r, item))?,
        Shape::Map(values) => blocks(r, |r| {
            r.raw()?;
            skip(r, values)
        })?,
        Shape::Union(branches) | Shape::Tagged(branches) => {
            let i = r.index(branches.len())?;
            skip(r, &branches[i])?;
        }
        Shape::Record(fields) => {
            for (field, _) in fields {
                skip(r, field)?;
            }
        }
    }
    Some(())
}

/// One value of `shape` as a Python object; None where fastavro should decide (module doc).
fn build(py: Python<'_>, r: &mut Reader<'_>, shape: &Shape) -> Option<Py<PyAny>> {
    Some(match shape {
        Shape::Null => py.None(),
        Shape::Boolean => match r.raw_byte()? {
            0 => false.into_py_any(py).ok()?,
            1 => true.into_py_any(py).ok()?,
            _ => return None,
        },
        Shape::Int | Shape::Long => r.long()?.into_py_any(py).ok()?,
        Shape::Float => f64::from(float(r)?).into_py_any(py).ok()?,
        Shape::Double => r.double()?.into_py_any(py).ok()?,
        Shape::Str => r.str()?.into_py_any(py).ok()?,
        Shape::Bytes => PyBytes::new(py, r.raw()?).into_any().unbind(),
        Shape::Enum(n) => r.index(*n)?.into_py_any(py).ok()?,
        Shape::Array(item) => {
            let list = PyList::empty(py);
            blocks(r, |r| list.append(build(py, r, item)?).ok())?;
            list.into_any().unbind()
        }
        Shape::Map(values) => {
            let dict = PyDict::new(py);
            blocks(r, |r| {
                let key = r.str()?;
                dict.set_item(key, build(py, r, values)?).ok()
            })?;
            dict.into_any().unbind()
        }
        Shape::Union(branches) => {
            let i = r.index(branches.len())?;
            build(py, r, &branches[i])?
        }
        Shape::Tagged(branches) => {
            let i = r.index(branches.len())?;
            let value = build(py, r, &branches[i])?;
            (i, value).into_py_any(py).ok()?
        }
        Shape::Record(fields) => {
            let mut items = Vec::with_capacity(fields.len());
            for (field, keep) in fields {
                match keep {
                    Keep::Build => items.push(build(py, r, field)?),
                    Keep::Skip => {
                        skip(r, field)?;
                        items.push(py.None());
                    }
                    Keep::Raw => {
                        let start = r.at;
                        skip(r, field)?;
                        items.push(PyBytes::new(py, r.since(start)).into_any().unbind());
                    }
                }
            }
            PyTuple::new(py, items).ok()?.into_any().unbind()
        }
    })
}

/// A compiled shape, reading many bodies per call.
#[pyclass(frozen, module = "binlake.shared.fastlane._native")]
pub struct AvroShape {
    shape: Shape,
}

#[pymethods]
impl AvroShape {
    #[new]
    fn new(notation: &str) -> PyResult<Self> {
        Shape::compile(notation)
            .map(|shape| AvroShape { shape })
            .ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!("not a shape notation: {notation}"))
            })
    }

    /// Each body's value, read from byte `offset` on (None where fastavro should read it).
    fn read_many<'py>(
        &self,
        py: Python<'py>,
        bodies: Vec<Bound<'py, PyBytes>>,
        offset: usize,
    ) -> Vec<Py<PyAny>> {
        bodies
            .iter()
            .map(|body| {
                let data = body.as_bytes();
                data.get(offset..)
                    .and_then(|rest| build(py, &mut Reader::new(rest), &self.shape))
                    .unwrap_or_else(|| py.None())
            })
            .collect()
    }
}
