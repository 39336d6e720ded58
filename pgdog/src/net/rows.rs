//! Result rows on the wire: readers and builders for RowDescription (`T`) and DataRow (`D`).
//!
//! Readers borrow from the [`Message`]; column values come out as `&[u8]` slices or zero-copy
//! `Bytes` slices of the message. Nothing here knows about types beyond the raw fields.
use super::error::ProtocolError;
use super::message::{build, Message};
use crate::net::tag::backend;
use bytes::{BufMut, Bytes};

/// Format code 0: text.
pub const FORMAT_TEXT: i16 = 0;
/// Format code 1: binary.
pub const FORMAT_BINARY: i16 = 1;

/// One field of a RowDescription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// OID of the table the column comes from (0: none).
    pub table_oid: i32,
    /// Attribute number of the column in that table (0: none).
    pub column: i16,
    pub type_oid: i32,
    /// `pg_type.typlen` (negative: variable length).
    pub type_size: i16,
    pub type_modifier: i32,
    /// 0 text, 1 binary.
    pub format: i16,
}

impl Field {
    /// A text-format field with no table, for computed columns.
    pub fn computed(name: &str, type_oid: i32, type_size: i16) -> Field {
        Field {
            name: name.to_string(),
            table_oid: 0,
            column: 0,
            type_oid,
            type_size,
            type_modifier: -1,
            format: FORMAT_TEXT,
        }
    }

    pub fn is_binary(&self) -> bool {
        self.format == FORMAT_BINARY
    }
}

/// Reads the fields of a RowDescription.
pub fn read_row_description(m: &Message) -> Result<Vec<Field>, ProtocolError> {
    if m.tag() != backend::ROW_DESCRIPTION {
        return Err(ProtocolError::Malformed("RowDescription"));
    }
    let mut r = super::message::Reader::new(m.payload(), "RowDescription");
    r.list(|r| {
        Ok(Field {
            name: r.cstr()?.to_string(),
            table_oid: r.i32()?,
            column: r.i16()?,
            type_oid: r.i32()?,
            type_size: r.i16()?,
            type_modifier: r.i32()?,
            format: r.i16()?,
        })
    })
}

/// Builds a RowDescription.
pub fn row_description(fields: &[Field]) -> Message {
    build(b'T', |b| {
        b.put_i16(fields.len() as i16);
        for f in fields {
            b.put_slice(f.name.as_bytes());
            b.put_u8(0);
            b.put_i32(f.table_oid);
            b.put_i16(f.column);
            b.put_i32(f.type_oid);
            b.put_i16(f.type_size);
            b.put_i32(f.type_modifier);
            b.put_i16(f.format);
        }
    })
}

/// A DataRow, parsed once into column positions; values are slices of the message.
#[derive(Debug, Clone)]
pub struct DataRow {
    message: Message,
    /// Per column: (offset of the value in the message bytes, length or -1 for NULL).
    columns: Vec<(u32, i32)>,
}

impl DataRow {
    /// Parses a DataRow message (tag `D`).
    pub fn parse(message: Message) -> Result<DataRow, ProtocolError> {
        const BAD: ProtocolError = ProtocolError::Malformed("DataRow");
        if message.tag() != backend::DATA_ROW {
            return Err(BAD);
        }
        let bytes = message.bytes();
        let mut r = super::message::Reader::new(bytes.get(5..).ok_or(BAD)?, "DataRow");
        let columns = r.list(|r| {
            let len = r.i32()?;
            if len < -1 {
                return Err(BAD);
            }
            let at = (bytes.len() - r.remaining()) as u32;
            r.bytes(usize::try_from(len).unwrap_or(0))?;
            Ok((at, len))
        })?;
        if r.remaining() != 0 {
            return Err(BAD);
        }
        Ok(DataRow { message, columns })
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Column `i` (`None`: NULL or no such column).
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let &(off, len) = self.columns.get(i)?;
        if len < 0 {
            return None;
        }
        let off = off as usize;
        Some(&self.message.bytes()[off..off + len as usize])
    }

    /// Column `i` as a zero-copy `Bytes` slice (`None`: NULL or no such column).
    pub fn get_bytes(&self, i: usize) -> Option<Bytes> {
        let &(off, len) = self.columns.get(i)?;
        if len < 0 {
            return None;
        }
        let off = off as usize;
        Some(self.message.bytes().slice(off..off + len as usize))
    }

    pub fn message(&self) -> &Message {
        &self.message
    }

    pub fn into_message(self) -> Message {
        self.message
    }

    /// The message with only the first `n` columns (the same message when it has no more).
    pub fn truncated(&self, n: usize) -> Message {
        if n >= self.columns.len() {
            return self.message.clone();
        }
        let end = match self.columns.get(n) {
            // The value of column n starts 4 bytes (its length) after the previous end.
            Some(&(off, _)) => off as usize - 4,
            None => self.message.len(),
        };
        let body = &self.message.bytes()[7..end];
        build(b'D', |b| {
            b.put_i16(n as i16);
            b.put_slice(body);
        })
    }
}

/// Builds a DataRow from column values (`None`: NULL).
pub fn data_row<V: AsRef<[u8]>>(columns: &[Option<V>]) -> Message {
    build(b'D', |b| {
        b.put_i16(columns.len() as i16);
        for c in columns {
            match c {
                Some(v) => {
                    let v = v.as_ref();
                    b.put_i32(v.len() as i32);
                    b.put_slice(v);
                }
                None => b.put_i32(-1),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_description_round_trip() {
        let fields = vec![
            Field::computed("id", 23, 4),
            Field {
                name: "name".into(),
                table_oid: 16384,
                column: 2,
                type_oid: 25,
                type_size: -1,
                type_modifier: -1,
                format: FORMAT_BINARY,
            },
        ];
        let m = row_description(&fields);
        assert_eq!(m.tag(), b'T');
        assert_eq!(read_row_description(&m).unwrap(), fields);
        assert!(read_row_description(&build(b'T', |b| b.put_i16(1))).is_err());
    }

    #[test]
    fn data_row_values_and_truncation() {
        let m = data_row(&[Some("1"), None, Some(""), Some("abc")]);
        let row = DataRow::parse(m.clone()).unwrap();
        assert_eq!(row.len(), 4);
        assert_eq!(row.get(0), Some(&b"1"[..]));
        assert_eq!(row.get(1), None);
        assert_eq!(row.get(2), Some(&b""[..]));
        assert_eq!(row.get_bytes(3).unwrap(), Bytes::from_static(b"abc"));
        assert_eq!(row.get(9), None);
        let t = DataRow::parse(row.truncated(2)).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!((t.get(0), t.get(1)), (Some(&b"1"[..]), None));
        assert_eq!(row.truncated(4), m);
        assert_eq!(DataRow::parse(row.truncated(0)).unwrap().len(), 0);
    }

    #[test]
    fn malformed_data_rows_fail() {
        assert!(DataRow::parse(build(b'D', |b| b.put_i16(1))).is_err());
        assert!(DataRow::parse(build(b'D', |b| {
            b.put_i16(1);
            b.put_i32(5);
            b.put_slice(b"ab");
        }))
        .is_err());
        assert!(DataRow::parse(build(b'D', |b| {
            b.put_i16(0);
            b.put_u8(1);
        }))
        .is_err());
        assert!(DataRow::parse(build(b'C', |_| {})).is_err());
    }
}
