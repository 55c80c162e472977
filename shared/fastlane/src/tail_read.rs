//! A batch of changelog bodies read once, for the mirror's fold (`tail_fold.rs`), without Python objects.
//!
//! `image_events.py` builds every event as Python tuples and dicts (about 40 µs an event, more than
//! the fold itself). Here each body (a single-object message of the current schema) is checked the
//! way `avro_shape.rs` builds it (a body it would decline fails the whole batch, which Python then
//! reads) and only its envelope is kept: op, sequence, origin, time, the column descriptor (interned
//! by its encoded bytes, as `image_events.events` interns it) and where its two images lie. An
//! image's values are read again only by the fold, column by column as the routes ask.

use std::collections::HashMap;

use crate::avro_reader::Reader;
use crate::avro_shape::Shape;
use crate::tail_values::Raw;

/// What the batch reader does with a field of the event record (by its name in the schema).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Role {
    Op,
    OrderKey,
    Ts,
    PrimaryKey,
    Columns,
    Before,
    After,
    Ddl,
    Origin,
    Other,
}

impl Role {
    pub fn of(name: &str) -> Role {
        match name {
            "op" => Role::Op,
            "order_key" => Role::OrderKey,
            "ts_ms" => Role::Ts,
            "primary_key" => Role::PrimaryKey,
            "columns" => Role::Columns,
            "before" => Role::Before,
            "after" => Role::After,
            "ddl" => Role::Ddl,
            "origin" => Role::Origin,
            _ => Role::Other,
        }
    }
}

/// A branch of the image values' union.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Kind {
    Null,
    Boolean,
    Long,
    Double,
    Str,
    Bytes,
    Digits,
    Date,
    Time,
    Local,
    Instant,
    Unparsed,
}

impl Kind {
    /// The kind of a branch named `name` (`image_events.value_kinds`), checked against its shape.
    pub fn of(name: &str, shape: &Shape) -> Option<Kind> {
        let one = |inner: fn(&Shape) -> bool| match shape {
            Shape::Record(fields) => fields.len() == 1 && inner(&fields[0].0),
            _ => false,
        };
        match name {
            "null" => matches!(shape, Shape::Null).then_some(Kind::Null),
            "boolean" => matches!(shape, Shape::Boolean).then_some(Kind::Boolean),
            "long" => matches!(shape, Shape::Long).then_some(Kind::Long),
            "double" => matches!(shape, Shape::Double).then_some(Kind::Double),
            "string" => matches!(shape, Shape::Str).then_some(Kind::Str),
            "bytes" => matches!(shape, Shape::Bytes).then_some(Kind::Bytes),
            "BigInteger" | "Decimal" => one(|s| matches!(s, Shape::Str)).then_some(Kind::Digits),
            "Date" => one(|s| matches!(s, Shape::Int)).then_some(Kind::Date),
            "Time" => one(|s| matches!(s, Shape::Long)).then_some(Kind::Time),
            "LocalDateTime" => one(|s| matches!(s, Shape::Long)).then_some(Kind::Local),
            "Instant" => one(|s| matches!(s, Shape::Long)).then_some(Kind::Instant),
            "Unparsed" => one(|s| matches!(s, Shape::Str)).then_some(Kind::Unparsed),
            _ => None,
        }
    }

    /// Reads past a value of this kind (the batch's bodies were checked whole when read).
    pub fn skip(self, r: &mut Reader<'_>) -> Option<()> {
        match self {
            Kind::Null => {}
            Kind::Boolean => {
                r.raw_byte()?;
            }
            Kind::Double => {
                r.double()?;
            }
            Kind::Str | Kind::Bytes | Kind::Digits | Kind::Unparsed => {
                r.raw()?;
            }
            Kind::Long | Kind::Date | Kind::Time | Kind::Local | Kind::Instant => {
                r.long()?;
            }
        }
        Some(())
    }

    /// The value of this kind at the reader.
    pub fn read<'a>(self, r: &mut Reader<'a>) -> Option<Raw<'a>> {
        Some(match self {
            Kind::Null => Raw::Null,
            Kind::Boolean => match r.raw_byte()? {
                0 => Raw::Bool(false),
                1 => Raw::Bool(true),
                _ => return None,
            },
            Kind::Long => Raw::Long(r.long()?),
            Kind::Double => Raw::Double(r.double()?),
            Kind::Str => Raw::Str(r.str()?),
            Kind::Bytes => Raw::Bytes(r.raw()?),
            Kind::Digits => Raw::Digits(r.str()?),
            Kind::Date => Raw::Date(r.long()?),
            Kind::Time => Raw::Time(r.long()?),
            Kind::Local => Raw::Local(r.long()?),
            Kind::Instant => Raw::Instant(r.long()?),
            Kind::Unparsed => {
                r.str()?;
                Raw::Unparsed
            }
        })
    }
}

/// One changelog row's envelope.
pub struct Event {
    pub table: u32,
    pub op: u8,
    /// `order_key#topic#partition#offset#row` (`spark_sink.events.order`).
    pub seq: String,
    /// Where the origin starts in `seq`.
    pub origin_at: usize,
    pub ts: Option<i64>,
    /// The interned column descriptor (`Batch::descriptors`); `u32::MAX` for a control event.
    pub desc: u32,
    /// The images' map values in the batch's data (start, end).
    pub before: Option<(usize, usize)>,
    pub after: Option<(usize, usize)>,
    /// A control event's DDL: (sql, kind).
    pub ddl: Option<(String, String)>,
    /// The body in the batch's data.
    pub body: (usize, usize),
}

/// A distinct column descriptor: its encoded `columns` field and its primary key.
pub struct Descriptor {
    pub columns: (usize, usize),
    pub key: Vec<String>,
}

/// The schema facts the batch reader needs, compiled once.
pub struct Layout {
    pub fields: Vec<(Shape, Role)>,
    /// The image values' union: each branch's kind.
    pub kinds: Vec<Kind>,
    /// The single-object header: `C3 01` and the schema's fingerprint (a body of another schema
    /// version is Python's to read).
    pub header: Vec<u8>,
    pub separator: String,
}

/// A batch's bodies and their envelopes.
pub struct Batch {
    pub data: Vec<u8>,
    pub events: Vec<Event>,
    pub tables: Vec<String>,
    pub descriptors: Vec<Descriptor>,
}

impl Batch {
    /// The batch, or None where a body is one `avro_shape.rs` would decline (Python reads the batch).
    pub fn read(layout: &Layout, row_ops: &[bool], tables: &[String], bodies: &[&[u8]]) -> Option<Batch> {
        let mut batch = Batch {
            data: Vec::with_capacity(bodies.iter().map(|b| b.len()).sum()),
            events: Vec::with_capacity(bodies.len()),
            tables: Vec::new(),
            descriptors: Vec::new(),
        };
        let mut table_ids: HashMap<&str, u32> = HashMap::new();
        let mut desc_ids: HashMap<Vec<u8>, u32> = HashMap::new();
        for (table, body) in tables.iter().zip(bodies) {
            let base = batch.data.len();
            batch.data.extend_from_slice(body);
            let next = batch.tables.len() as u32;
            let table_id = *table_ids.entry(table.as_str()).or_insert(next);
            if table_id == next {
                batch.tables.push(table.clone());
            }
            let event = batch.envelope(layout, row_ops, base, table_id, &mut desc_ids)?;
            batch.events.push(event);
        }
        Some(batch)
    }

    fn envelope(
        &mut self,
        layout: &Layout,
        row_ops: &[bool],
        base: usize,
        table: u32,
        desc_ids: &mut HashMap<Vec<u8>, u32>,
    ) -> Option<Event> {
        let data = &self.data[base..];
        let header = layout.header.len();
        if data.get(..header)? != layout.header.as_slice() {
            return None;
        }
        let mut r = Reader::new(&data[header..]);
        let at = |r: &Reader<'_>| base + header + r.at;
        let (mut op, mut order_key, mut ts, mut origin, mut ddl) = (None, None, None, None, None);
        let (mut key_bytes, mut columns, mut key) = (None, None, Vec::new());
        let (mut before, mut after) = (None, None);
        for (shape, role) in &layout.fields {
            let start = r.at;
            match role {
                Role::Op => {
                    let Shape::Enum(n) = shape else { return None };
                    op = Some(r.index(*n)? as u8);
                }
                Role::OrderKey => order_key = Some(r.str()?),
                Role::Ts => {
                    check(&mut r, shape)?;
                    ts = long_of(&data[header + start..header + r.at]);
                }
                Role::PrimaryKey => {
                    let Shape::Array(_) = shape else { return None };
                    crate::avro_shape::blocks(&mut r, |r| {
                        key.push(r.str()?.to_owned());
                        Some(())
                    })?;
                    key_bytes = Some(r.since(start));
                }
                Role::Columns => {
                    check(&mut r, shape)?;
                    columns = Some((base + header + start, at(&r)));
                }
                Role::Before | Role::After => {
                    let Shape::Union(branches) = shape else { return None };
                    let branch = r.index(branches.len())?;
                    let from = at(&r);
                    check(&mut r, &branches[branch])?;
                    let range = (!matches!(branches[branch], Shape::Null)).then_some((from, at(&r)));
                    if *role == Role::Before {
                        before = range;
                    } else {
                        after = range;
                    }
                }
                Role::Ddl => {
                    let Shape::Union(branches) = shape else { return None };
                    let branch = r.index(branches.len())?;
                    if matches!(branches[branch], Shape::Null) {
                        continue;
                    }
                    let sql = r.str()?.to_owned();
                    ddl = Some((sql, r.str()?.to_owned()));
                }
                Role::Origin => {
                    let topic = r.str()?;
                    let partition = r.long()?;
                    let offset = r.long()?;
                    let row = r.long()?;
                    origin = Some((topic, partition, offset, row));
                }
                Role::Other => check(&mut r, shape)?,
            }
        }
        if !r.done() {
            return None;
        }
        let (topic, partition, offset, row) = origin?;
        let order_key = order_key?;
        let sep = &layout.separator;
        let seq = format!("{order_key}{sep}{topic}{sep}{partition:010}{sep}{offset:020}{sep}{row:010}");
        let op = op?;
        // Only row events' descriptors are interned (as `image_events.events` does): the same ids.
        let desc = if row_ops.get(usize::from(op)).copied().unwrap_or(false) {
            let mut raw_key = Vec::new();
            let pk = key_bytes?;
            raw_key.extend_from_slice(&(pk.len() as u64).to_le_bytes());
            raw_key.extend_from_slice(pk);
            let columns = columns?;
            raw_key.extend_from_slice(&self.data[columns.0..columns.1]);
            let next = self.descriptors.len() as u32;
            let desc = *desc_ids.entry(raw_key).or_insert(next);
            if desc == next {
                self.descriptors.push(Descriptor { columns, key });
            }
            desc
        } else {
            u32::MAX
        };
        Some(Event {
            table,
            op,
            origin_at: order_key.len() + sep.len(),
            seq,
            ts,
            desc,
            before,
            after,
            ddl,
            body: (base, base + (data.len())),
        })
    }
}

/// `["null", "long"]` read back from its bytes (the union index, then the long).
fn long_of(bytes: &[u8]) -> Option<i64> {
    let mut r = Reader::new(bytes);
    match r.long()? {
        0 => None,
        _ => r.long(),
    }
}

/// Reads past one value of `shape`, declining what `avro_shape.rs`' `build` declines (a boolean
/// byte other than 0/1, a string that is not UTF-8, a map key that is not).
pub fn check(r: &mut Reader<'_>, shape: &Shape) -> Option<()> {
    match shape {
        Shape::Boolean => {
            if r.raw_byte()? > 1 {
                return None;
            }
        }
        Shape::Str => {
            r.str()?;
        }
        Shape::Array(item) => crate::avro_shape::blocks(r, |r| check(r, item))?,
        Shape::Map(values) => crate::avro_shape::blocks(r, |r| {
            r.str()?;
            check(r, values)
        })?,
        Shape::Union(branches) | Shape::Tagged(branches) => {
            let i = r.index(branches.len())?;
            check(r, &branches[i])?;
        }
        Shape::Record(fields) => {
            for (field, _) in fields {
                check(r, field)?;
            }
        }
        other => crate::avro_shape::skip(r, other)?,
    }
    Some(())
}

/// One entry of an image: the column's name (its UTF-8 bytes), the value's branch and where the
/// value starts.
pub struct Entry<'a> {
    pub name: &'a [u8],
    pub branch: u8,
    pub at: usize,
}

/// The entries of an image (`range`: its map in `data`), in their order, into `out` (cleared).
pub fn entries<'a>(layout: &Layout, data: &'a [u8], range: (usize, usize), out: &mut Vec<Entry<'a>>) -> Option<()> {
    let mut r = Reader::new(&data[..range.1]);
    r.at = range.0;
    out.clear();
    loop {
        let n = r.count()?;
        if n == 0 {
            break;
        }
        for _ in 0..n {
            let name = r.raw()?;
            let branch = r.index(layout.kinds.len())?;
            let at = r.at;
            layout.kinds[branch].skip(&mut r)?;
            out.push(Entry { name, branch: branch as u8, at });
        }
    }
    Some(())
}

/// The value of branch `branch` at `at` in `data`.
pub fn value_at<'a>(layout: &Layout, data: &'a [u8], branch: u8, at: usize) -> Option<Raw<'a>> {
    let mut r = Reader::new(data);
    r.at = at;
    layout.kinds.get(usize::from(branch))?.read(&mut r)
}
