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
