//! Row images of JSON values, and the column descriptors of inferred columns, as the
//! Maxwell, GoldenGate, CKafka and OceanBase OMS lanes build them.
//!
//! Maxwell, GoldenGate, CKafka's format one and OMS Default send no column
//! types: every column is inferred from its JSON value (`sqltypes.infer`,
//! `inferred_logical`, `RowTypes.columns_for`), which is done here. The OMS
//! lanes also put typed values (`oms_json.rs`) in the same image: every value's
//! Avro union bytes in one buffer, with each entry's inferred logical type and
//! its JSON view for the record key.

use crate::avro;
use crate::json::{json_string, Json};
use crate::values::{all_digits, KeyPart};

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

/// How a value renders in the record key (`records._key_value`: the JSON view).
#[derive(Clone, Copy)]
pub enum KeyView<'t> {
    Null,
    Bool(bool),
    Number(i64),
    /// A JSON string: text, BigInt digits, decimal text, nested JSON text; a range of the image buffer.
    Text(usize, usize),
    /// A JSON string that is the vendor's text itself (a typed value's `KeyPart::Text`).
    Borrowed(&'t str),
    /// Not renderable here (dates, floats, bytes...): a key column holding it declines.
    Other,
}

impl<'t> From<KeyPart<'t>> for KeyView<'t> {
    fn from(part: KeyPart<'t>) -> Self {
        match part {
            KeyPart::Null => KeyView::Null,
            KeyPart::Number(n) => KeyView::Number(n),
            KeyPart::Text(text) => KeyView::Borrowed(text),
            KeyPart::Other => KeyView::Other,
        }
    }
}

pub struct Entry<'t> {
    pub name: &'t str,
    start: usize,
    end: usize,
    /// The inferred logical type (unused for a typed column: its descriptor comes from the plan).
    logical: Logical,
    key: KeyView<'t>,
}

/// A converted image: every value's Avro union bytes in one buffer, and each entry's place.
pub struct Image<'t> {
    buf: Vec<u8>,
    pub entries: Vec<Entry<'t>>,
}

impl<'t> Image<'t> {
    pub fn with_capacity(bytes: usize, columns: usize) -> Self {
        Image { buf: Vec::with_capacity(bytes), entries: Vec::with_capacity(columns) }
    }

    /// Add one column: `write` appends its Avro union bytes to the buffer and says how it is
    /// typed and keyed (None: not read here, decline).
    pub fn push(
        &mut self,
        name: &'t str,
        write: impl FnOnce(&mut Vec<u8>) -> Option<(Logical, KeyView<'t>)>,
    ) -> Option<()> {
        let start = self.buf.len();
        let (logical, key) = write(&mut self.buf)?;
        self.entries.push(Entry { name, start, end: self.buf.len(), logical, key });
        Some(())
    }

    pub fn get(&self, name: &str) -> Option<&Entry<'t>> {
        self.entries.iter().find(|e| e.name == name)
    }

    pub fn bytes(&self, entry: &Entry<'t>) -> &[u8] {
        &self.buf[entry.start..entry.end]
    }

    /// Append the JSON view of column `name` (null when the image lacks it, as `image.get`);
    /// None: a value the key does not render here.
    pub fn write_key(&self, out: &mut Vec<u8>, name: &str) -> Option<()> {
        match self.get(name).map(|e| e.key) {
            None | Some(KeyView::Null) => out.extend_from_slice(b"null"),
            Some(KeyView::Bool(true)) => out.extend_from_slice(b"true"),
            Some(KeyView::Bool(false)) => out.extend_from_slice(b"false"),
            Some(KeyView::Number(n)) => out.extend_from_slice(n.to_string().as_bytes()),
            Some(KeyView::Text(start, end)) => {
                // The buffer holds only UTF-8 texts at these ranges (written from &str).
                json_string(out, std::str::from_utf8(&self.buf[start..end]).ok()?);
            }
            Some(KeyView::Borrowed(text)) => json_string(out, text),
            Some(KeyView::Other) => return None,
        }
        Some(())
    }
}

/// An Avro string branch holding `text`; the key view points at the text.
pub fn push_text<'t>(buf: &mut Vec<u8>, branch: u8, text: &str) -> KeyView<'t> {
    buf.push(branch);
    avro::long(buf, text.len() as i64);
    let start = buf.len();
    buf.extend_from_slice(text.as_bytes());
    KeyView::Text(start, buf.len())
}

/// A JSON integer's text (`-?digits`, no fraction or exponent), "-0" excepted (Python reads it as 0).
pub fn integer_text(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    all_digits(digits) && text != "-0"
}

/// `UNTYPED.convert` of a JSON object of column values (all inferred).
pub fn convert<'t>(value: &'t Json<'t>) -> Option<Image<'t>> {
    let Json::Object(members, raw) = value else { return None };
    let mut image = Image::with_capacity(raw.len() + 16, members.len());
    for (name, value) in members {
        image.push(name, |buf| inferred(value, buf))?;
    }
    Some(image)
}

/// `infer` of one JSON value: its Avro union bytes, inferred logical type and key view.
pub fn inferred<'t>(value: &Json, buf: &mut Vec<u8>) -> Option<(Logical, KeyView<'t>)> {
    Some(match value {
        Json::Null => {
            buf.push(0);
            (Logical::Unknown, KeyView::Null)
        }
        Json::Bool(b) => {
            buf.extend_from_slice(&[0x02, *b as u8]);
            (Logical::Boolean, KeyView::Bool(*b))
        }
        Json::Str(text) => (Logical::Str, push_text(buf, 0x08, text)),
        Json::Number(text) => number(text, buf)?,
        Json::Array(_) | Json::Object(..) => (Logical::Str, nested(value, buf)?),
        Json::Raw(_) => return None,
    })
}

/// A JSON column or a SET given as a nested value: its compact JSON text (`sqltypes._json_text`).
pub fn nested<'t>(value: &Json, buf: &mut Vec<u8>) -> Option<KeyView<'t>> {
    let mut rendered = Vec::with_capacity(64);
    compact(value, &mut rendered)?;
    let text = std::str::from_utf8(&rendered).ok()?;
    Some(push_text(buf, 0x08, text))
}

/// A top-level JSON number: int64, BigInt (wider integers) or Decimal.
pub fn number<'t>(text: &str, buf: &mut Vec<u8>) -> Option<(Logical, KeyView<'t>)> {
    if integer_text(text) {
        let digits = text.trim_start_matches('-');
        if digits.len() <= 19 {
            if let Ok(n) = text.parse::<i64>() {
                buf.push(0x04);
                avro::long(buf, n);
                return Some((Logical::Int64, KeyView::Number(n)));
            }
        }
        // BigInt: the source digits are int.__repr__'s (JSON has no leading zeros).
        return Some((Logical::Integer, push_text(buf, 0x0c, text)));
    }
    // A fraction or an exponent: Decimal(text) (the exact decode), written as decimal_text.
    let text = Dec::parse(text)?.text();
    Some((Logical::Decimal, push_text(buf, 0x0e, &text)))
}

/// A JSON number with a fraction or an exponent as Python's `Decimal(text)` holds it.
pub struct Dec {
    negative: bool,
    /// The coefficient's digits without leading zeros ("0" for zero).
    digits: String,
    exponent: i64,
}

impl Dec {
    /// `-?int(.frac)?([eE][+-]?exp)?`; exponents of more than 9 digits are declined.
    pub fn parse(text: &str) -> Option<Dec> {
        if !text.contains(['.', 'e', 'E']) {
            return None; // an integer ("-0" included): Python reads it as an int
        }
        let (negative, body) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exponent) = match body.find(['e', 'E']) {
            Some(at) => (&body[..at], Some(&body[at + 1..])),
            None => (body, None),
        };
        let (int_part, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if !all_digits(int_part) || (mantissa.contains('.') && !all_digits(frac)) {
            return None;
        }
        let exponent = match exponent {
            None => 0,
            Some(e) => {
                let unsigned = e.strip_prefix(['+', '-']).unwrap_or(e);
                if !all_digits(unsigned) || unsigned.len() > 9 {
                    return None;
                }
                e.parse::<i64>().ok()?
            }
        };
        let mut digits: String = int_part.trim_start_matches('0').to_string();
        if digits.is_empty() {
            digits.push_str(frac.trim_start_matches('0'));
        } else {
            digits.push_str(frac);
        }
        if digits.is_empty() {
            digits.push('0');
        }
        Some(Dec { negative, digits, exponent: exponent - frac.len() as i64 })
    }

    /// Any JSON number: an integer as `Decimal(int)`, else as `parse`.
    pub fn number(text: &str) -> Option<Dec> {
        if text.contains(['.', 'e', 'E']) {
            return Dec::parse(text);
        }
        let (negative, body) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if !all_digits(body) {
            return None;
        }
        let digits = body.trim_start_matches('0');
        let digits = if digits.is_empty() { "0" } else { digits };
        Some(Dec { negative, digits: digits.to_string(), exponent: 0 })
    }

    /// Python's `==` between two numbers (ints, Decimals): the same value, whatever the spelling
    /// (`1`, `1.0`, `1.00`, `1E+0`, and every zero are equal).
    pub fn equals(&self, other: &Dec) -> bool {
        self.normal() == other.normal()
    }

    /// (sign, digits without trailing zeros, exponent): one form per value.
    fn normal(&self) -> (bool, &str, i64) {
        if self.is_zero() {
            return (false, "0", 0);
        }
        let digits = self.digits.trim_end_matches('0');
        (self.negative, digits, self.exponent + (self.digits.len() - digits.len()) as i64)
    }

    fn is_zero(&self) -> bool {
        self.digits == "0"
    }

    fn adjusted(&self) -> i64 {
        self.exponent + self.digits.len() as i64 - 1
    }

    /// `str(Decimal)`: the specification's to-scientific-string.
    fn scientific(&self) -> String {
        let n = self.digits.len() as i64;
        let left = self.exponent + n;
        let dot = if self.exponent <= 0 && left > -6 { left } else { 1 };
        let mut out = String::with_capacity(self.digits.len() + 16);
        if self.negative {
            out.push('-');
        }
        if dot <= 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-dot) as usize));
            out.push_str(&self.digits);
        } else if dot >= n {
            out.push_str(&self.digits);
            out.push_str(&"0".repeat((dot - n) as usize));
        } else {
            out.push_str(&self.digits[..dot as usize]);
            out.push('.');
            out.push_str(&self.digits[dot as usize..]);
        }
        if left != dot {
            out.push_str(&format!("E{:+}", left - dot));
        }
        out
    }

    /// `f"{value:f}"`: plain notation with the coefficient's digits (zero with a positive
    /// exponent is rescaled to plain zero first).
    fn plain(&self) -> String {
        let (digits, exponent) =
            if self.is_zero() && self.exponent > 0 { ("0", 0) } else { (self.digits.as_str(), self.exponent) };
        let n = digits.len() as i64;
        let dot = exponent + n;
        let mut out = String::with_capacity(digits.len() + 48);
        if self.negative {
            out.push('-');
        }
        if dot < 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-dot) as usize));
            out.push_str(digits);
        } else if dot > n {
            out.push_str(digits);
            out.push_str(&"0".repeat((dot - n) as usize));
        } else {
            let (int_part, frac) = digits.split_at(dot as usize);
            out.push_str(if int_part.is_empty() { "0" } else { int_part });
            if !frac.is_empty() {
                out.push('.');
                out.push_str(frac);
            }
        }
        out
    }

    /// `decimal_text`: str() unless it is scientific and the exponents are moderate.
    pub fn text(&self) -> String {
        let scientific = self.scientific();
        if !scientific.contains('E') {
            return scientific;
        }
        if (-40..=40).contains(&self.exponent) && (-40..=40).contains(&self.adjusted()) {
            return self.plain();
        }
        scientific
    }
}

/// orjson's compact rendering of a nested value (`sqltypes._json_text`).
fn compact(value: &Json, out: &mut Vec<u8>) -> Option<()> {
    match value {
        Json::Null => out.extend_from_slice(b"null"),
        Json::Bool(true) => out.extend_from_slice(b"true"),
        Json::Bool(false) => out.extend_from_slice(b"false"),
        Json::Number(text) if integer_text(text) => out.extend_from_slice(text.as_bytes()),
        // A fraction or exponent inside a nested value: str(Decimal) spliced in (sqltypes._exact_json).
        Json::Number(text) => out.extend_from_slice(Dec::parse(text)?.scientific().as_bytes()),
        Json::Str(text) => json_string(out, text),
        Json::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                compact(item, out)?;
            }
            out.push(b']');
        }
        Json::Object(members, _) => {
            out.push(b'{');
            for (i, (name, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_string(out, name);
                out.push(b':');
                compact(item, out)?;
            }
            out.push(b'}');
        }
        Json::Raw(_) => return None,
    }
    Some(())
}

/// `overlay(data, old)`: data's columns with old's values, then the columns only old has.
pub fn overlay<'t>(after: &Image<'t>, old: &Image<'t>) -> Image<'t> {
    let mut merged = Image::with_capacity(after.buf.len() + old.buf.len(), after.entries.len());
    let mut push = |source: &Image<'t>, entry: &Entry<'t>| {
        let start = merged.buf.len();
        merged.buf.extend_from_slice(source.bytes(entry));
        // Only the image's bytes, names and value kinds are read later (the key comes from `data`).
        merged.entries.push(Entry {
            name: entry.name,
            start,
            end: merged.buf.len(),
            logical: entry.logical,
            key: KeyView::Null,
        });
    };
    for entry in &after.entries {
        match old.get(entry.name) {
            Some(changed) => push(old, changed),
            None => push(after, entry),
        }
    }
    for entry in &old.entries {
        if after.get(entry.name).is_none() {
            push(old, entry);
        }
    }
    merged
}

pub fn write_image(out: &mut Vec<u8>, image: Option<&Image>) {
    match image {
        None => out.push(0),
        Some(image) => {
            out.push(2);
            if !image.entries.is_empty() {
                avro::long(out, image.entries.len() as i64);
                for entry in &image.entries {
                    avro::string(out, entry.name);
                    out.extend_from_slice(image.bytes(entry));
                }
            }
            out.push(0);
        }
    }
}

/// `UNTYPED.columns_for(after, before)` of converted images (`write_descriptors`).
pub fn write_columns(out: &mut Vec<u8>, images: [Option<&Image>; 2]) {
    let entries = images.into_iter().flatten().flat_map(|image| &image.entries);
    write_descriptors(out, entries.map(|e| (e.name, e.logical)));
}

/// `UNTYPED.columns_for(after, before)` in Avro, from the images' (name, logical type) entries in
/// order: every name once, in order of first appearance, typed by its first non-null value
/// (`unknown` when all are null).
pub fn write_descriptors<'n>(out: &mut Vec<u8>, entries: impl IntoIterator<Item = (&'n str, Logical)>) {
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
