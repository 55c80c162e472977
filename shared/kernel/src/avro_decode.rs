//! Vendor Avro binary to Python objects: `AvroDecoder`, a schema compiled once, then one datum at
//! a time, exactly as fastavro 1.13.1's `schemaless_reader(fo, schema, None,
//! return_record_name=True)` returns it (the parsers of `oms-avro` and `drs-avro`).
//!
//! Types: null, boolean, int, long, float, double, bytes, string, record, enum, array, map,
//! union, fixed and named references. Python values: records as dicts (fields in order), arrays as
//! lists, maps as dicts, enums as their symbol, bytes and fixed as bytes, int and long as int,
//! float and double as float. A union branch becomes `(full name, value)` where fastavro makes it
//! one: an inline record, or any named type given by name (a record, enum or fixed); an inline
//! enum or fixed stays bare.
//!
//! The schema arrives as JSON text. A fastavro-parsed schema (a record carrying
//! `__fastavro_parsed` and `__named_schemas`) is read as fastavro reads it: names are full
//! already, references are literal, the named types of `__named_schemas` are known. Any other
//! schema is resolved as `fastavro.parse_schema` resolves it (a name without a dot takes the
//! enclosing namespace). A logical type fastavro converts (`int-date`, `bytes-decimal`, ...), an
//! `error` or `request` type and anything malformed do not compile (ValueError): the caller keeps
//! fastavro for such a schema.
//!
//! Bytes that are not a datum of the schema raise ValueError naming the problem and its byte
//! offset, never the bytes: truncation, a varint beyond 64 bits, a negative length, a union or
//! enum index out of range (negative too: fastavro would index from the end), a boolean byte
//! other than 0 or 1 (fastavro reads any non-zero byte as true), invalid UTF-8, values nested
//! deeper than `MAX_DEPTH`, more than `EMPTY_ITEMS_LIMIT` items of no bytes in one array. As
//! fastavro: an int is read as a long (no 32-bit check), a negative block count's byte size is
//! read and not checked, a repeated map key keeps its first position and its last value.
//! Nothing is allocated for a declared length or count before the bytes it needs are there.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::MutexGuard;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyString, PyTuple};

use crate::avro_reader::Reader;
use crate::json::{self, Json};
use crate::json_load::{self, KeyTable};
use crate::objects;

/// Records, arrays and maps nested deeper than this raise ValueError (a recursive schema).
pub const MAX_DEPTH: usize = 512;
/// Items that take no bytes (null, an empty record) in one array: more raise ValueError.
const EMPTY_ITEMS_LIMIT: usize = 1 << 20;
/// fastavro 1.13.1's `LOGICAL_READERS`: `<type>-<logicalType>` pairs it converts.
const LOGICAL: [&str; 10] = [
    "bytes-decimal",
    "fixed-decimal",
    "int-date",
    "int-time-millis",
    "long-local-timestamp-micros",
    "long-local-timestamp-millis",
    "long-time-micros",
    "long-timestamp-micros",
    "long-timestamp-millis",
    "string-uuid",
];

type Id = usize;

enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    Str,
    Record { name: String, fields: Vec<(Py<PyString>, Id)> },
    Enum(Vec<Py<PyString>>),
    Fixed(usize),
    Array(Id),
    Map(Id),
    /// Branches, each with the name it is returned under (a tuple), or none (bare).
    Union(Vec<(Id, Option<Py<PyString>>)>),
    /// A named type given by name, until the compiler resolves it.
    Ref(String),
}

/// A schema compiled for decoding.
#[pyclass(frozen, module = "binlake.shared.kernel._kernel")]
pub struct AvroDecoder {
    nodes: Vec<Node>,
    /// The fewest bytes a datum of each node takes.
    least: Vec<usize>,
    top: Id,
}

#[pymethods]
impl AvroDecoder {
    #[new]
    fn new(py: Python<'_>, schema_json: &str) -> PyResult<Self> {
        compile(py, schema_json).map_err(|why| PyValueError::new_err(format!("cannot compile the Avro schema: {why}")))
    }

    /// (datum, the position after it) of the datum at `start`.
    #[pyo3(signature = (raw, start = 0))]
    fn decode<'py>(&self, py: Python<'py>, raw: &[u8], start: i64) -> PyResult<Bound<'py, PyTuple>> {
        let start = usize::try_from(start)
            .ok()
            .filter(|&s| s <= raw.len())
            .ok_or_else(|| PyValueError::new_err(format!("start {start} is outside the data's {} bytes", raw.len())))?;
        let mut reader = Reader::new(raw);
        reader.at = start;
        let mut run = Run { py, data: raw, reader, nodes: &self.nodes, least: &self.least, keys: json_load::keys(py) };
        let top = self.top;
        // A panic (a bug) must not cross into Python as a PanicException, which callers catching
        // ValueError would not expect.
        let value = catch_unwind(AssertUnwindSafe(|| run.value(top, 0)))
            .map_err(|_| PyValueError::new_err("the kernel's Avro decoder failed (a bug in the decoder)"))??;
        let end = run.reader.at.into_pyobject(py)?.into_any();
        PyTuple::new(py, [value, end])
    }
}

// ------------------------------------------------------------------ decoding

struct Run<'a, 'py> {
    py: Python<'py>,
    data: &'a [u8],
    reader: Reader<'a>,
    nodes: &'a [Node],
    least: &'a [usize],
    /// The shared map keys (JSON object keys too), held while the datum is read.
    keys: Option<MutexGuard<'static, KeyTable>>,
}

fn invalid(why: String) -> PyErr {
    PyValueError::new_err(why)
}

impl<'a, 'py> Run<'a, 'py> {
    fn left(&self) -> usize {
        self.data.len() - self.reader.at
    }

    /// A varint; `what` names it in an error.
    fn long(&mut self, what: &str) -> PyResult<i64> {
        self.long_of(|| what.to_string())
    }

    /// A varint named in an error by `what()` (made only then: no allocation on the hot path).
    fn long_of(&mut self, what: impl FnOnce() -> String) -> PyResult<i64> {
        let at = self.reader.at;
        self.reader.long().ok_or_else(|| {
            let what = what();
            let tail = &self.data[at.min(self.data.len())..];
            let ends = tail.iter().take(10).position(|b| b & 0x80 == 0);
            if ends.is_none() && tail.len() < 10 {
                invalid(format!("truncated: {what} at byte {at} runs past the end ({} bytes)", self.data.len()))
            } else {
                invalid(format!("{what} at byte {at} runs beyond 64 bits"))
            }
        })
    }

    /// The bytes of a string or bytes value: its length, then as many bytes.
    fn sized(&mut self, what: &str) -> PyResult<(usize, &'a [u8])> {
        let at = self.reader.at;
        let n = self.long_of(|| format!("the length of {what}"))?;
        let n = usize::try_from(n).map_err(|_| invalid(format!("{what} at byte {at} has a negative length ({n})")))?;
        let body = self.reader.at;
        let part = self.reader.fixed(n).ok_or_else(|| {
            invalid(format!("truncated: {what} at byte {at} declares {n} bytes, {} left", self.data.len() - body))
        })?;
        Ok((body, part))
    }

    fn text(&mut self, what: &str) -> PyResult<&'a str> {
        let (body, part) = self.sized(what)?;
        std::str::from_utf8(part).map_err(|e| {
            invalid(format!("{what} at byte {body} is not UTF-8 (invalid at byte {})", body + e.valid_up_to()))
        })
    }

    fn exactly(&mut self, n: usize, what: &str) -> PyResult<&'a [u8]> {
        let at = self.reader.at;
        let left = self.left();
        self.reader.fixed(n).ok_or_else(|| invalid(format!("truncated: {what} at byte {at} needs {n} bytes, {left} left")))
    }

    /// A union branch or enum symbol index below `n`.
    fn index(&mut self, n: usize, what: &str) -> PyResult<usize> {
        let at = self.reader.at;
        let i = self.long(what)?;
        usize::try_from(i)
            .ok()
            .filter(|&i| i < n)
            .ok_or_else(|| invalid(format!("{what} at byte {at} is {i}, outside 0..{n}")))
    }

    /// The next block's item count (0: the blocks end); a negative count's byte size is skipped
    /// (read, not checked, as fastavro does).
    fn block(&mut self, what: &str) -> PyResult<(usize, usize)> {
        let at = self.reader.at;
        let n = self.long_of(|| format!("a block count of {what}"))?;
        if n < 0 {
            self.long_of(|| format!("a block size of {what}"))?;
        }
        Ok((at, n.unsigned_abs().try_into().unwrap_or(usize::MAX)))
    }

    /// Refuses a block of `n` items of `least` bytes each that the bytes left cannot hold.
    fn room(&self, at: usize, n: usize, least: usize, what: &str) -> PyResult<()> {
        if least > 0 && n > self.left() / least {
            return Err(invalid(format!(
                "truncated: a block of {what} at byte {at} declares {n} items of at least {least} bytes, {} left",
                self.left()
            )));
        }
        Ok(())
    }

    fn value(&mut self, id: Id, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let nodes = self.nodes;
        Ok(match &nodes[id] {
            Node::Null => py.None().into_bound(py),
            Node::Boolean => {
                let at = self.reader.at;
                match self.exactly(1, "a boolean")?[0] {
                    0 => PyBool::new(py, false).to_owned().into_any(),
                    1 => PyBool::new(py, true).to_owned().into_any(),
                    _ => return Err(invalid(format!("a boolean at byte {at} is neither 0 nor 1"))),
                }
            }
            Node::Int => self.long("an int")?.into_pyobject(py)?.into_any(),
            Node::Long => self.long("a long")?.into_pyobject(py)?.into_any(),
            Node::Float => {
                let bytes = self.exactly(4, "a float")?;
                let value = f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                PyFloat::new(py, f64::from(value)).into_any()
            }
            Node::Double => {
                let at = self.reader.at;
                let left = self.left();
                let value = self
                    .reader
                    .double()
                    .ok_or_else(|| invalid(format!("truncated: a double at byte {at} needs 8 bytes, {left} left")))?;
                PyFloat::new(py, value).into_any()
            }
            Node::Bytes => PyBytes::new(py, self.sized("a bytes value")?.1).into_any(),
            Node::Str => objects::new_str(py, self.text("a string")?).into_any(),
            Node::Fixed(size) => PyBytes::new(py, self.exactly(*size, "a fixed")?).into_any(),
            Node::Enum(symbols) => {
                let i = self.index(symbols.len(), "an enum symbol index")?;
                symbols[i].bind(py).clone().into_any()
            }
            Node::Union(branches) => {
                let i = self.index(branches.len(), "a union branch index")?;
                let (branch, name) = &branches[i];
                let value = self.value(*branch, depth)?;
                match name {
                    Some(name) => PyTuple::new(py, [name.bind(py).clone().into_any(), value])?.into_any(),
                    None => value,
                }
            }
            Node::Record { fields, .. } => {
                let depth = self.deeper(depth)?;
                let record = objects::new_dict(py, fields.len());
                for (name, field) in fields {
                    record.set_item(name.bind(py), self.value(*field, depth)?)?;
                }
                record.into_any()
            }
            Node::Array(items) => {
                let depth = self.deeper(depth)?;
                let list = PyList::empty(py);
                let least = self.least[*items];
                loop {
                    let (at, n) = self.block("an array")?;
                    if n == 0 {
                        break;
                    }
                    self.room(at, n, least, "an array")?;
                    if least == 0 && n > EMPTY_ITEMS_LIMIT - list.len().min(EMPTY_ITEMS_LIMIT) {
                        return Err(invalid(format!(
                            "an array at byte {at} holds more than {EMPTY_ITEMS_LIMIT} items of no bytes"
                        )));
                    }
                    for _ in 0..n {
                        list.append(self.value(*items, depth)?)?;
                    }
                }
                list.into_any()
            }
            Node::Map(values) => {
                let depth = self.deeper(depth)?;
                let mut map: Option<Bound<'py, PyDict>> = None;
                // A key takes at least its length byte.
                let least = self.least[*values].saturating_add(1);
                loop {
                    let (at, n) = self.block("a map")?;
                    if n == 0 {
                        break;
                    }
                    self.room(at, n, least, "a map")?;
                    // Sized by the first block (usually the only one), once its count is known sound.
                    let map = map.get_or_insert_with(|| objects::new_dict(py, n));
                    for _ in 0..n {
                        // Map keys repeat from datum to datum (column names): shared, as JSON object keys.
                        let text = self.text("a map key")?;
                        let key = json_load::key_in(py, &mut self.keys, text);
                        map.set_item(key, self.value(*values, depth)?)?;
                    }
                }
                map.unwrap_or_else(|| PyDict::new(py)).into_any()
            }
            Node::Ref(_) => return Err(invalid("an unresolved named type (a bug in the decoder)".to_string())),
        })
    }

    fn deeper(&self, depth: usize) -> PyResult<usize> {
        if depth >= MAX_DEPTH {
            return Err(invalid(format!(
                "values nest deeper than {MAX_DEPTH} levels at byte {} (a recursive schema)",
                self.reader.at
            )));
        }
        Ok(depth + 1)
    }
}

// ------------------------------------------------------------------ compiling

struct Compiler<'py> {
    py: Python<'py>,
    nodes: Vec<Node>,
    names: HashMap<String, Id>,
    /// A fastavro-parsed schema: names are full, references literal, redefinitions harmless.
    literal: bool,
}

fn compile(py: Python<'_>, text: &str) -> Result<AvroDecoder, String> {
    let schema = json::parse(text.as_bytes())
        .ok_or("not JSON (or nested deeper than the kernel's JSON reader reads, or an object repeats a key)")?;
    // fastavro marks a parsed schema on its top object, or on each branch of a top-level union.
    let parts: Vec<&Json> = match &schema {
        Json::Array(branches) => branches.iter().collect(),
        other => vec![other],
    };
    let parsed = |part: &&Json| member(part, "__fastavro_parsed").is_some_and(|v| matches!(v, Json::Bool(true)));
    let literal = parts.iter().any(parsed);
    let mut compiler = Compiler { py, nodes: Vec::new(), names: HashMap::new(), literal };
    if literal {
        for part in &parts {
            if let Some(Json::Object(named)) = member(part, "__named_schemas") {
                for (_, definition) in named {
                    compiler.node(definition, "")?;
                }
            }
        }
    }
    let top = compiler.node(&schema, "")?;
    compiler.finish(top)
}

fn member<'j, 'a>(json: &'j Json<'a>, key: &str) -> Option<&'j Json<'a>> {
    match json {
        Json::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    }
}

fn text_member<'j>(json: &'j Json<'_>, key: &str, what: &str) -> Result<&'j str, String> {
    match member(json, key) {
        Some(Json::Str(s)) => Ok(s),
        Some(_) => Err(format!("{what}'s {key:?} is not a string")),
        None => Err(format!("{what} has no {key:?}")),
    }
}

impl Compiler<'_> {
    fn push(&mut self, node: Node) -> Id {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// A reference's full name, as fastavro resolves it in namespace `ns`.
    fn full_name(&self, name: &str, ns: &str) -> String {
        if self.literal || name.contains('.') || ns.is_empty() {
            name.to_string()
        } else {
            format!("{ns}.{name}")
        }
    }

    /// A named type's (full name, namespace of what it encloses), as fastavro's `schema_name`.
    fn define(&self, json: &Json, ns: &str, what: &str) -> Result<(String, String), String> {
        let name = text_member(json, "name", what)?;
        if self.literal {
            let enclosing = name.rsplit_once('.').map_or("", |(space, _)| space);
            return Ok((name.to_string(), enclosing.to_string()));
        }
        let space = match member(json, "namespace") {
            None => ns,
            Some(Json::Str(s)) => s,
            Some(Json::Null) => "",
            Some(_) => return Err(format!("{what} {name:?}'s namespace is not a string")),
        };
        Ok(match name.rsplit_once('.') {
            Some((enclosing, _)) => (name.to_string(), enclosing.to_string()),
            None if !space.is_empty() => (format!("{space}.{name}"), space.to_string()),
            None => (name.to_string(), String::new()),
        })
    }

    fn register(&mut self, name: &str, id: Id) -> Result<(), String> {
        if self.names.contains_key(name) {
            if self.literal {
                return Ok(()); // __named_schemas and the schema itself define the same types
            }
            return Err(format!("redefined named type {name:?}"));
        }
        self.names.insert(name.to_string(), id);
        Ok(())
    }

    fn node(&mut self, json: &Json, ns: &str) -> Result<Id, String> {
        match json {
            Json::Str(name) => Ok(match primitive(name) {
                Some(node) => self.push(node),
                None => {
                    let full = self.full_name(name, ns);
                    self.push(Node::Ref(full))
                }
            }),
            Json::Array(branches) => {
                let mut compiled = Vec::with_capacity(branches.len());
                for branch in branches {
                    let id = self.node(branch, ns)?;
                    let tag = match branch {
                        Json::Str(name) if primitive(name).is_none() => Some(self.full_name(name, ns)),
                        Json::Object(..) => match &self.nodes[id] {
                            Node::Record { name, .. } => Some(name.clone()),
                            _ => None,
                        },
                        _ => None,
                    };
                    compiled.push((id, tag.map(|t| PyString::new(self.py, &t).unbind())));
                }
                Ok(self.push(Node::Union(compiled)))
            }
            Json::Object(..) => self.object(json, ns),
            _ => Err("a type that is neither a name, a list nor an object".to_string()),
        }
    }

    fn object(&mut self, json: &Json, ns: &str) -> Result<Id, String> {
        let kind = match member(json, "type") {
            Some(Json::Str(kind)) => kind.as_ref(),
            Some(_) => return Err("a type object whose \"type\" is not a name".to_string()),
            None => return Err("a type object without \"type\"".to_string()),
        };
        if let Some(Json::Str(logical)) = member(json, "logicalType") {
            let pair = format!("{kind}-{logical}");
            if LOGICAL.contains(&pair.as_str()) {
                return Err(format!("logical type {logical:?} of {kind:?} (fastavro converts it) is not supported"));
            }
        }
        if let Some(node) = primitive(kind) {
            return Ok(self.push(node));
        }
        match kind {
            "record" => {
                let (name, inner) = self.define(json, ns, "a record")?;
                let id = self.push(Node::Record { name: name.clone(), fields: Vec::new() });
                self.register(&name, id)?;
                let mut fields = Vec::new();
                match member(json, "fields") {
                    None => {}
                    Some(Json::Array(items)) => {
                        for field in items {
                            let field_name = text_member(field, "name", "a field")?;
                            let ty = member(field, "type").ok_or_else(|| format!("field {field_name:?} has no type"))?;
                            let ty = self.node(ty, &inner)?;
                            fields.push((PyString::intern(self.py, field_name).unbind(), ty));
                        }
                    }
                    Some(_) => return Err(format!("record {name:?}'s fields are not a list")),
                }
                self.nodes[id] = Node::Record { name, fields };
                Ok(id)
            }
            "enum" => {
                let (name, _) = self.define(json, ns, "an enum")?;
                let Some(Json::Array(items)) = member(json, "symbols") else {
                    return Err(format!("enum {name:?} has no list of symbols"));
                };
                let mut symbols = Vec::with_capacity(items.len());
                for item in items {
                    let Json::Str(symbol) = item else { return Err(format!("enum {name:?} has a symbol not a string")) };
                    symbols.push(PyString::intern(self.py, symbol).unbind());
                }
                let id = self.push(Node::Enum(symbols));
                self.register(&name, id)?;
                Ok(id)
            }
            "fixed" => {
                let (name, _) = self.define(json, ns, "a fixed")?;
                let size = match member(json, "size") {
                    Some(Json::Number(n)) => n.parse::<usize>().map_err(|_| format!("fixed {name:?}'s size is not a count"))?,
                    _ => return Err(format!("fixed {name:?} has no numeric size")),
                };
                let id = self.push(Node::Fixed(size));
                self.register(&name, id)?;
                Ok(id)
            }
            "array" => {
                let items = member(json, "items").ok_or("an array without \"items\"")?;
                let items = self.node(items, ns)?;
                Ok(self.push(Node::Array(items)))
            }
            "map" => {
                let values = member(json, "values").ok_or("a map without \"values\"")?;
                let values = self.node(values, ns)?;
                Ok(self.push(Node::Map(values)))
            }
            "error" | "request" | "error_union" => Err(format!("type {kind:?} is not supported")),
            other => Err(format!("unknown type {other:?} in a type object")),
        }
    }

    /// References resolved, the least sizes computed.
    fn finish(mut self, top: Id) -> Result<AvroDecoder, String> {
        let mut target: Vec<Id> = (0..self.nodes.len()).collect();
        for (id, node) in self.nodes.iter().enumerate() {
            if let Node::Ref(name) = node {
                target[id] = *self.names.get(name).ok_or_else(|| format!("unknown type name {name:?}"))?;
            }
        }
        for node in &mut self.nodes {
            match node {
                Node::Record { fields, .. } => fields.iter_mut().for_each(|(_, id)| *id = target[*id]),
                Node::Array(id) | Node::Map(id) => *id = target[*id],
                Node::Union(branches) => branches.iter_mut().for_each(|(id, _)| *id = target[*id]),
                _ => {}
            }
        }
        let mut least = vec![None; self.nodes.len()];
        let mut visiting = vec![false; self.nodes.len()];
        for id in 0..self.nodes.len() {
            least_size(&self.nodes, id, &mut least, &mut visiting);
        }
        let least = least.into_iter().map(|l| l.unwrap_or(0)).collect();
        Ok(AvroDecoder { nodes: self.nodes, least, top: target[top] })
    }
}

fn primitive(name: &str) -> Option<Node> {
    Some(match name {
        "null" => Node::Null,
        "boolean" => Node::Boolean,
        "int" => Node::Int,
        "long" => Node::Long,
        "float" => Node::Float,
        "double" => Node::Double,
        "bytes" => Node::Bytes,
        "string" => Node::Str,
        _ => return None,
    })
}

/// The fewest bytes a datum of `id` takes (a lower bound: a record met again while its own size
/// is computed counts 0).
fn least_size(nodes: &[Node], id: Id, least: &mut [Option<usize>], visiting: &mut [bool]) -> usize {
    if let Some(known) = least[id] {
        return known;
    }
    if visiting[id] {
        return 0;
    }
    visiting[id] = true;
    let size = match &nodes[id] {
        Node::Null => 0,
        Node::Float => 4,
        Node::Double => 8,
        Node::Fixed(size) => *size,
        Node::Record { fields, .. } => {
            fields.iter().fold(0usize, |sum, (_, field)| sum.saturating_add(least_size(nodes, *field, least, visiting)))
        }
        Node::Ref(_) => 0,
        // A varint, a length, a block count, an index: one byte at least.
        _ => 1,
    };
    visiting[id] = false;
    least[id] = Some(size);
    size
}
