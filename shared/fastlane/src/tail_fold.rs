//! A batch's row events folded per key in Rust: the twin of `spark_sink/mirror/fold_rows.py`.
//!
//! Python reads a batch (`TailReader.read`: `tail_read.rs`), makes its descriptors and plans from
//! what the batch lists, and asks per table for its fold (`Tail.fold`) or, for a key-less table, its
//! rows (`Tail.keyless`), giving each descriptor's route onto the mirror's physical columns and each
//! column's type. The fold keeps per key the newest sequence, whether it deletes, the newest DELETE,
//! and per column the newest event knowing it; a value is converted only once it has won (most are
//! overwritten in a busy table). What the fold cannot decide as Python would (a key column of a
//! floating type, a key whose text only Python's parsers read) makes it answer None, and Python folds
//! that table from its bodies (`Tail.bodies`).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::avro_shape::Shape;
use crate::tail_read::{entries, value_at, Batch, Entry, Kind, Layout, Role};
use crate::tail_values::{convert, key_text, Converted, Raw, Target, Typed};

/// A known value not converted yet: NULL (the column is routed elsewhere, or the value is null) or
/// the value of a branch at a position of the batch's data.
#[derive(Clone, Copy)]
enum Slot {
    Null,
    At(u8, usize),
}

/// What the batch knows of one key (`fold_rows.Folded`).
struct Row {
    key: Vec<Typed>,
    seq: usize,
    delete: bool,
    last_delete: Option<usize>,
    known: Vec<Option<(Slot, usize)>>,
}

/// A route: column name (UTF-8 bytes) -> (physical index, converted here or NULL).
type Route = FxMap<Vec<u8>, Vec<(usize, bool)>>;

/// A multiply-rotate hash (rustc's FxHash) for the fold's maps: SipHash's resistance to chosen keys is
/// not needed for one batch's column names and keys, and it was a tenth of the fold.
#[derive(Default)]
struct Fx(u64);

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Fx {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// Reads batches of changelog bodies of one schema.
#[pyclass(frozen, module = "binlake.shared.fastlane._native")]
pub struct TailReader {
    layout: Arc<Layout>,
    ops: Arc<Vec<String>>,
    row_ops: Arc<Vec<bool>>,
}

#[pymethods]
impl TailReader {
    /// `notation`: the event record's (`avro_shape.rs`, images tagged); `fields`: its field names;
    /// `kinds`: the image values' branch names; `ops`: the op symbols and which are row ops; `header`:
    /// the bodies' single-object header (magic and fingerprint).
    #[new]
    fn new(
        notation: &str,
        fields: Vec<String>,
        kinds: Vec<String>,
        ops: Vec<(String, bool)>,
        header: Vec<u8>,
        separator: String,
    ) -> PyResult<Self> {
        let bad = |what: &str| PyValueError::new_err(format!("not the changelog's event schema: {what}"));
        let Some(Shape::Record(record)) = Shape::compile(notation) else {
            return Err(bad("no record notation"));
        };
        if record.len() != fields.len() {
            return Err(bad("field names do not match the notation"));
        }
        let fields: Vec<(Shape, Role)> = record
            .into_iter()
            .zip(&fields)
            .map(|((shape, _), name)| (shape, Role::of(name)))
            .collect();
        let mut kinds_found = None;
        for (shape, role) in &fields {
            let fits = match role {
                Role::Op => matches!(shape, Shape::Enum(n) if *n == ops.len()),
                Role::OrderKey => matches!(shape, Shape::Str),
                Role::Ts => matches!(shape, Shape::Union(b) if b.len() == 2
                    && matches!(b[0], Shape::Null) && matches!(b[1], Shape::Long)),
                Role::PrimaryKey => matches!(shape, Shape::Array(item) if matches!(**item, Shape::Str)),
                Role::Columns => matches!(shape, Shape::Array(_)),
                Role::Before | Role::After => match shape {
                    Shape::Union(b) if b.len() == 2 && matches!(b[0], Shape::Null) => match &b[1] {
                        Shape::Map(values) => match &**values {
                            Shape::Tagged(branches) if branches.len() == kinds.len() => {
                                let found: Option<Vec<Kind>> =
                                    kinds.iter().zip(branches).map(|(k, s)| Kind::of(k, s)).collect();
                                kinds_found = found.clone().or(kinds_found.take());
                                found.is_some()
                            }
                            _ => false,
                        },
                        _ => false,
                    },
                    _ => false,
                },
                Role::Ddl => matches!(shape, Shape::Union(b) if b.len() == 2 && matches!(b[0], Shape::Null)
                    && matches!(&b[1], Shape::Record(f) if f.len() == 2
                        && matches!(f[0].0, Shape::Str) && matches!(f[1].0, Shape::Str))),
                Role::Origin => matches!(shape, Shape::Record(f) if f.len() == 4
                    && matches!(f[0].0, Shape::Str) && matches!(f[1].0, Shape::Int)
                    && matches!(f[2].0, Shape::Long) && matches!(f[3].0, Shape::Int)),
                Role::Other => true,
            };
            if !fits {
                return Err(bad(&format!("field {role:?}")));
            }
        }
        let kinds = kinds_found.ok_or_else(|| bad("no image values"))?;
        Ok(TailReader {
            layout: Arc::new(Layout { fields, kinds, header, separator }),
            ops: Arc::new(ops.iter().map(|(name, _)| name.clone()).collect()),
            row_ops: Arc::new(ops.iter().map(|(_, row)| *row).collect()),
        })
    }

    /// The batch of `bodies` (each of table `tables[i]`), or None where Python must read it.
    fn read(&self, tables: Vec<String>, bodies: Vec<Bound<'_, PyBytes>>) -> Option<Tail> {
        let slices: Vec<&[u8]> = bodies.iter().map(|b| b.as_bytes()).collect();
        let batch = Batch::read(&self.layout, &self.row_ops, &tables, &slices)?;
        let mut by_table = vec![Vec::new(); batch.tables.len()];
        for (i, event) in batch.events.iter().enumerate() {
            if self.row_ops[usize::from(event.op)] {
                by_table[event.table as usize].push(i);
            }
        }
        Some(Tail {
            layout: self.layout.clone(),
            ops: self.ops.clone(),
            row_ops: self.row_ops.clone(),
            batch,
            by_table,
        })
    }
}

/// A batch read by `TailReader.read`.
#[pyclass(frozen, module = "binlake.shared.fastlane._native")]
pub struct Tail {
    layout: Arc<Layout>,
    ops: Arc<Vec<String>>,
    row_ops: Arc<Vec<bool>>,
    batch: Batch,
    /// Per table, its row events' indexes in changelog order.
    by_table: Vec<Vec<usize>>,
}

/// A column's type from Python: (`boolean` | `integral` | `decimal` | `floating` | `string` |
/// `binary` | `date` | `local` | `instant`, two numbers: bounds, or precision and scale).
fn target(spec: &(String, i64, i64)) -> PyResult<Target> {
    let (kind, a, b) = spec;
    Ok(match kind.as_str() {
        "boolean" => Target::Boolean,
        "integral" => Target::Integral(*a, *b),
        "decimal" => Target::Decimal(
            usize::try_from(*a).map_err(|_| PyValueError::new_err("a negative precision"))?,
            usize::try_from(*b).ok().filter(|s| *s as i64 <= *a).ok_or_else(|| {
                PyValueError::new_err("a scale beyond the precision")
            })?,
        ),
        "floating" => Target::Floating,
        "string" => Target::Text,
        "binary" => Target::Binary,
        "date" => Target::Date,
        "local" => Target::Local,
        "instant" => Target::Instant,
        other => return Err(PyValueError::new_err(format!("no column type {other}"))),
    })
}

fn routes(given: Vec<Option<Vec<(String, usize, bool)>>>) -> Vec<Option<Route>> {
    given
        .into_iter()
        .map(|route| {
            route.map(|columns| {
                let mut out: Route = FxMap::default();
                for (name, i, converted) in columns {
                    out.entry(name.into_bytes()).or_default().push((i, converted));
                }
                out
            })
        })
        .collect()
}

fn typed_py(py: Python<'_>, value: &Typed) -> PyResult<Py<PyAny>> {
    match value {
        Typed::Bool(b) => b.into_py_any(py),
        Typed::Int(n) => n.into_py_any(py),
        Typed::Float(f) => f.into_py_any(py),
        Typed::Text(s) => s.into_py_any(py),
        Typed::Bytes(b) => Ok(PyBytes::new(py, b).into_any().unbind()),
    }
}

/// The arguments every table's fold shares.
struct Columns<'a> {
    targets: Vec<Target>,
    converters: &'a [Py<PyAny>],
    routes: Vec<Option<Route>>,
}

impl<'a> Columns<'a> {
    /// The physical columns' targets and converters (one each) and each descriptor's route onto them.
    fn new(
        routes: Vec<Option<Vec<(String, usize, bool)>>>,
        targets: &[(String, i64, i64)],
        converters: &'a [Py<PyAny>],
    ) -> PyResult<Self> {
        let targets: Vec<Target> = targets.iter().map(target).collect::<PyResult<_>>()?;
        if converters.len() != targets.len() {
            return Err(PyValueError::new_err("routes and types do not agree"));
        }
        Ok(Columns { targets, converters, routes: self::routes(routes) })
    }

    fn width(&self) -> usize {
        self.targets.len()
    }
}

impl Tail {
    fn table_id(&self, table: &str) -> Option<usize> {
        self.batch.tables.iter().position(|t| t == table)
    }

    fn seq(&self, event: usize) -> &str {
        &self.batch.events[event].seq
    }

    /// An event's image's entries into `out` (none for an absent image).
    fn image<'s>(&'s self, event: usize, before: bool, out: &mut Vec<Entry<'s>>) -> Option<()> {
        let e = &self.batch.events[event];
        match if before { e.before } else { e.after } {
            None => {
                out.clear();
                Some(())
            }
            Some(range) => entries(&self.layout, &self.batch.data, range, out),
        }
    }

    fn has_image(&self, event: usize, before: bool) -> bool {
        let e = &self.batch.events[event];
        if before {
            e.before.is_some()
        } else {
            e.after.is_some()
        }
    }

    fn op(&self, event: usize) -> &str {
        &self.ops[usize::from(self.batch.events[event].op)]
    }

    /// `Projection.values`: physical column -> slot, for the columns the image knows.
    fn slots(route: &Route, image: &[Entry<'_>], width: usize, only: Option<&[usize]>) -> Vec<Option<Slot>> {
        let mut out = vec![None; width];
        for entry in image {
            if let Some(columns) = route.get(entry.name) {
                for &(i, converted) in columns {
                    if only.is_some_and(|o| !o.contains(&i)) {
                        continue;
                    }
                    // A null value reads as NULL in every column: no special case.
                    out[i] = Some(if converted { Slot::At(entry.branch, entry.at) } else { Slot::Null });
                }
            }
        }
        out
    }

    /// A slot's typed value for a key (None: NULL; Err: Python must decide).
    fn key_value(&self, slot: Slot, target: Target) -> Result<Option<Typed>, ()> {
        match slot {
            Slot::Null => Ok(None),
            Slot::At(branch, at) => {
                let raw = value_at(&self.layout, &self.batch.data, branch, at).ok_or(())?;
                match convert(&raw, target) {
                    Converted::Value(v) => Ok(Some(v)),
                    Converted::Null => Ok(None),
                    Converted::Ask => Err(()),
                }
            }
        }
    }

    /// A slot's value as Python's converter makes it.
    fn py_value(&self, py: Python<'_>, slot: Slot, target: Target, converter: &Py<PyAny>) -> PyResult<Py<PyAny>> {
        let Slot::At(branch, at) = slot else { return Ok(py.None()) };
        let raw = value_at(&self.layout, &self.batch.data, branch, at)
            .ok_or_else(|| PyValueError::new_err("a value read before no longer reads"))?;
        match convert(&raw, target) {
            Converted::Value(v) => typed_py(py, &v),
            Converted::Null => Ok(py.None()),
            Converted::Ask => {
                let Raw::Digits(text) = raw else {
                    return Err(PyValueError::new_err("only digits are left to Python"));
                };
                let tagged = (branch, (text,));
                converter.call1(py, (tagged,))
            }
        }
    }

    /// `Projection.key_of`: the key's typed values in an image, by name (None where it lacks one).
    fn key_of(&self, image: &[Entry<'_>], names: &[String], targets: &[Target]) -> Result<Vec<Option<Typed>>, ()> {
        names
            .iter()
            .zip(targets)
            .map(|(name, target)| match image.iter().rev().find(|e| e.name == name.as_bytes()) {
                None => Ok(None),
                Some(e) => self.key_value(Slot::At(e.branch, e.at), *target),
            })
            .collect()
    }
}

struct Folding {
    rows: Vec<Row>,
    index: FxMap<Vec<Typed>, usize>,
}

#[pymethods]
impl Tail {
    /// The distinct column descriptors in the order the batch meets them: (encoded `columns`, key).
    fn descriptors<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, Vec<String>)> {
        self.batch
            .descriptors
            .iter()
            .map(|d| (PyBytes::new(py, &self.batch.data[d.columns.0..d.columns.1]), d.key.clone()))
            .collect()
    }

    /// Per (table, descriptor) of the row events, the first sequence: (table, descriptor, sequence).
    fn firsts(&self) -> Vec<(String, u32, String)> {
        let mut first: HashMap<(usize, u32), usize> = HashMap::new();
        for (t, events) in self.by_table.iter().enumerate() {
            for &i in events {
                let slot = first.entry((t, self.batch.events[i].desc)).or_insert(i);
                if self.seq(i) < self.seq(*slot) {
                    *slot = i;
                }
            }
        }
        let mut out: Vec<(String, u32, String)> = first
            .into_iter()
            .map(|((t, d), i)| (self.batch.tables[t].clone(), d, self.seq(i).to_owned()))
            .collect();
        out.sort();
        out
    }

    /// The control events (not row ops): (table, op, sequence, ts_ms, DDL sql, DDL kind).
    #[allow(clippy::type_complexity)]
    fn controls(&self) -> Vec<(String, String, String, Option<i64>, Option<String>, Option<String>)> {
        self.batch
            .events
            .iter()
            .filter(|e| !self.row_ops[usize::from(e.op)])
            .map(|e| {
                let (sql, kind) = match &e.ddl {
                    Some((sql, kind)) => (Some(sql.clone()), Some(kind.clone())),
                    None => (None, None),
                };
                (
                    self.batch.tables[e.table as usize].clone(),
                    self.ops[usize::from(e.op)].clone(),
                    e.seq.clone(),
                    e.ts,
                    sql,
                    kind,
                )
            })
            .collect()
    }

    /// The tables with row events and how many each has, in the order the batch meets them.
    fn row_counts(&self) -> Vec<(String, usize)> {
        self.batch
            .tables
            .iter()
            .zip(&self.by_table)
            .filter(|(_, events)| !events.is_empty())
            .map(|(t, events)| (t.clone(), events.len()))
            .collect()
    }

    /// A table's row events' ops and times, in changelog order (the batch's statistics).
    fn summary(&self, table: &str) -> (Vec<String>, Vec<Option<i64>>) {
        let events = self.table_id(table).map(|t| self.by_table[t].as_slice()).unwrap_or(&[]);
        (
            events.iter().map(|&i| self.op(i).to_owned()).collect(),
            events.iter().map(|&i| self.batch.events[i].ts).collect(),
        )
    }

    /// A table's row events' bodies and descriptors (for Python to read them itself).
    fn bodies<'py>(&self, py: Python<'py>, table: &str) -> (Vec<Bound<'py, PyBytes>>, Vec<u32>) {
        let events = self.table_id(table).map(|t| self.by_table[t].as_slice()).unwrap_or(&[]);
        (
            events
                .iter()
                .map(|&i| {
                    let (a, b) = self.batch.events[i].body;
                    PyBytes::new(py, &self.batch.data[a..b])
                })
                .collect(),
            events.iter().map(|&i| self.batch.events[i].desc).collect(),
        )
    }

    /// A keyed table's fold (module doc): (per key column its values, per physical column (values,
    /// sequences) or None for a key column, sequences, deletes, last deletes, tombstone key texts),
    /// or None.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (table, routes, targets, converters, key_index, key_names, truncated_at))]
    fn fold<'py>(
        &self,
        py: Python<'py>,
        table: &str,
        routes: Vec<Option<Vec<(String, usize, bool)>>>,
        targets: Vec<(String, i64, i64)>,
        converters: Vec<Py<PyAny>>,
        key_index: Vec<usize>,
        key_names: Vec<String>,
        truncated_at: Option<&str>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let cols = Columns::new(routes, &targets, &converters)?;
        let width = cols.width();
        if key_index.iter().any(|&i| i >= width) || key_names.len() != key_index.len() {
            return Err(PyValueError::new_err("types and key do not agree"));
        }
        let key_targets: Vec<Target> = key_index.iter().map(|&i| cols.targets[i]).collect();
        if key_targets.contains(&Target::Floating) {
            return Ok(None); // float keys compare as Python's floats do (0.0 == -0.0; NaN): Python folds
        }
        let Some(events) = self.table_id(table).map(|t| &self.by_table[t]) else {
            return Ok(None);
        };
        let mut state = Folding { rows: Vec::new(), index: FxMap::default() };
        let (mut before, mut after, mut image) = (Vec::new(), Vec::new(), Vec::new());
        for &i in events {
            if truncated_at.is_some_and(|t| self.seq(i) <= t) {
                continue;
            }
            let event = &self.batch.events[i];
            let Some(Some(route)) = cols.routes.get(event.desc as usize) else {
                return Err(PyValueError::new_err("a descriptor of the table has no route"));
            };
            let op = self.op(i);
            let delete = op == "DELETE";
            if op == "UPDATE" && self.has_image(i, true) && self.has_image(i, false) {
                if self.image(i, true, &mut before).is_none() || self.image(i, false, &mut after).is_none() {
                    return Ok(None);
                }
                let (Ok(old), Ok(new)) =
                    (self.key_of(&before, &key_names, &key_targets), self.key_of(&after, &key_names, &key_targets))
                else {
                    return Ok(None);
                };
                if old != new {
                    let moved = Self::slots(route, &before, width, Some(&key_index));
                    if self.apply(&mut state, &cols, &key_index, &moved, i, true).is_err() {
                        return Ok(None);
                    }
                }
            }
            if self.image(i, delete, &mut image).is_none() {
                return Ok(None);
            }
            let values = Self::slots(route, &image, width, None);
            if self.apply(&mut state, &cols, &key_index, &values, i, delete).is_err() {
                return Ok(None);
            }
        }
        self.folded(py, &state, &cols, &key_index).map(Some)
    }

    /// A key-less table's new rows (`fold_rows.keyless_rows`, one per origin): (per physical column
    /// its values, sequences, ops, origins).
    #[pyo3(signature = (table, routes, targets, converters, truncated_at))]
    fn keyless<'py>(
        &self,
        py: Python<'py>,
        table: &str,
        routes: Vec<Option<Vec<(String, usize, bool)>>>,
        targets: Vec<(String, i64, i64)>,
        converters: Vec<Py<PyAny>>,
        truncated_at: Option<&str>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let cols = Columns::new(routes, &targets, &converters)?;
        let width = cols.width();
        let events: &[usize] = self.table_id(table).map(|t| self.by_table[t].as_slice()).unwrap_or(&[]);
        let columns: Vec<Bound<'py, PyList>> = (0..width).map(|_| PyList::empty(py)).collect();
        let (seqs, ops, origins) = (PyList::empty(py), PyList::empty(py), PyList::empty(py));
        let mut seen: HashSet<&str> = HashSet::new();
        let mut image = Vec::new();
        for &i in events {
            let event = &self.batch.events[i];
            let origin = &event.seq[event.origin_at..];
            if truncated_at.is_some_and(|t| self.seq(i) <= t) || !seen.insert(origin) {
                continue;
            }
            let Some(Some(route)) = cols.routes.get(event.desc as usize) else {
                return Err(PyValueError::new_err("a descriptor of the table has no route"));
            };
            let op = self.op(i);
            if self.image(i, op == "DELETE", &mut image).is_none() {
                return Ok(None);
            }
            let slots = Self::slots(route, &image, width, None);
            for (c, slot) in slots.into_iter().enumerate() {
                let value = match slot {
                    None => py.None(),
                    Some(slot) => self.py_value(py, slot, cols.targets[c], &cols.converters[c])?,
                };
                columns[c].append(value)?;
            }
            seqs.append(self.seq(i))?;
            ops.append(op)?;
            origins.append(origin)?;
        }
        let columns = PyList::new(py, columns)?;
        Ok(Some(PyTuple::new(py, [columns, seqs, ops, origins])?))
    }
}

impl Tail {
    /// `fold_rows._apply`: one event's known columns onto its key's row. Err: Python must fold.
    fn apply(
        &self,
        state: &mut Folding,
        cols: &Columns<'_>,
        key_index: &[usize],
        values: &[Option<Slot>],
        event: usize,
        delete: bool,
    ) -> Result<(), ()> {
        let mut key = Vec::with_capacity(key_index.len());
        for &k in key_index {
            match values[k] {
                None => return Ok(()),
                Some(slot) => match self.key_value(slot, cols.targets[k])? {
                    None => return Ok(()),
                    Some(v) => key.push(v),
                },
            }
        }
        let seq = self.seq(event);
        let row = match state.index.get(&key) {
            Some(&at) => {
                let row = &mut state.rows[at];
                if seq > self.seq(row.seq) {
                    row.seq = event;
                    row.delete = delete;
                }
                if delete && row.last_delete.is_none_or(|d| seq > self.seq(d)) {
                    row.last_delete = Some(event);
                }
                row
            }
            None => {
                state.index.insert(key.clone(), state.rows.len());
                state.rows.push(Row {
                    key,
                    seq: event,
                    delete,
                    last_delete: delete.then_some(event),
                    known: vec![None; values.len()],
                });
                state.rows.last_mut().ok_or(())?
            }
        };
        for (i, slot) in values.iter().enumerate() {
            let Some(slot) = slot else { continue };
            if key_index.contains(&i) {
                continue;
            }
            if row.known[i].is_none_or(|(_, at)| seq > self.seq(at)) {
                row.known[i] = Some((*slot, event));
            }
        }
        Ok(())
    }

    /// The fold's rows as Python columns (`fold`'s answer).
    fn folded<'py>(
        &self,
        py: Python<'py>,
        state: &Folding,
        cols: &Columns<'_>,
        key_index: &[usize],
    ) -> PyResult<Bound<'py, PyTuple>> {
        let mut seq_cache: Vec<Option<Bound<'py, PyString>>> = vec![None; self.batch.events.len()];
        let mut seq_of = |event: usize| -> Bound<'py, PyString> {
            seq_cache[event].get_or_insert_with(|| PyString::new(py, self.seq(event))).clone()
        };
        let keys = PyList::empty(py);
        for position in 0..key_index.len() {
            let values: Vec<Py<PyAny>> =
                state.rows.iter().map(|r| typed_py(py, &r.key[position])).collect::<PyResult<_>>()?;
            keys.append(PyList::new(py, values)?)?;
        }
        let known = PyList::empty(py);
        for (i, target) in cols.targets.iter().enumerate() {
            if key_index.contains(&i) {
                known.append(py.None())?;
                continue;
            }
            let (values, seqs) = (PyList::empty(py), PyList::empty(py));
            for row in &state.rows {
                match row.known[i] {
                    None => {
                        values.append(py.None())?;
                        seqs.append(py.None())?;
                    }
                    Some((slot, at)) => {
                        values.append(self.py_value(py, slot, *target, &cols.converters[i])?)?;
                        seqs.append(seq_of(at))?;
                    }
                }
            }
            known.append(PyTuple::new(py, [values, seqs])?)?;
        }
        let seqs = PyList::new(py, state.rows.iter().map(|r| seq_of(r.seq)))?;
        let deletes = PyList::new(py, state.rows.iter().map(|r| r.delete))?;
        let last: Vec<Py<PyAny>> = state
            .rows
            .iter()
            .map(|r| r.last_delete.map_or_else(|| py.None(), |d| seq_of(d).into_any().unbind()))
            .collect();
        let last = PyList::new(py, last)?;
        let key_targets: Vec<Target> = key_index.iter().map(|&i| cols.targets[i]).collect();
        let texts = PyList::new(py, state.rows.iter().map(|r| key_text(&r.key, &key_targets)))?;
        PyTuple::new(
            py,
            [keys.into_any(), known.into_any(), seqs.into_any(), deletes.into_any(), last.into_any(), texts.into_any()],
        )
    }
}
