//! Avro binary pieces, as `shared/codec/avro_writer.py` writes them (and the tests compare).

/// An Avro long: zig-zag, then a little-endian base-128 varint.
pub fn long(out: &mut Vec<u8>, n: i64) {
    let mut z = ((n << 1) ^ (n >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8 & 0x7F) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

pub fn string(out: &mut Vec<u8>, text: &str) {
    bytes(out, text.as_bytes());
}

pub fn bytes(out: &mut Vec<u8>, data: &[u8]) {
    long(out, data.len() as i64);
    out.extend_from_slice(data);
}

/// `["null", "string"]`.
pub fn opt_string(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        None => out.push(0),
        Some(t) => {
            out.push(2);
            string(out, t);
        }
    }
}

/// `["null", "long"]`.
pub fn opt_long(out: &mut Vec<u8>, n: Option<i64>) {
    match n {
        None => out.push(0),
        Some(v) => {
            out.push(2);
            long(out, v);
        }
    }
}

/// An array of strings (one block, then the end marker; empty: just the end marker).
pub fn strings<S: AsRef<str>>(out: &mut Vec<u8>, items: &[S]) {
    if !items.is_empty() {
        long(out, items.len() as i64);
        for item in items {
            string(out, item.as_ref());
        }
    }
    out.push(0);
}

/// The event's `op` enum: its index in change_event.v1's symbols (the lanes' row ops).
pub fn op(out: &mut Vec<u8>, op: &str) {
    let index = match op {
        "INSERT" => 0,
        "UPDATE" => 1,
        "DELETE" => 2,
        "UPSERT" => 6,
        _ => 3, // SNAPSHOT
    };
    long(out, index);
}

/// The event's last fields, as every lane writes them: `changed_columns` (null, or the names),
/// `ddl` (null: lanes take row events only) and `origin` (topic, partition, offset, row).
pub fn row_tail<S: AsRef<str>>(
    out: &mut Vec<u8>,
    changed: Option<&[S]>,
    topic: &str,
    partition: i64,
    offset: i64,
    row: i64,
) {
    match changed {
        None => out.push(0),
        Some(names) => {
            out.push(2);
            strings(out, names);
        }
    }
    out.push(0); // ddl
    string(out, topic);
    long(out, partition);
    long(out, offset);
    long(out, row);
}
