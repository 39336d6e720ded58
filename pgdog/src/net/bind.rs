//! Bind messages read into their parts (parameter formats and values, result formats) and built
//! back, for routing by parameter values and for rewriting a Bind for one shard.
use super::message::{build, name_bytes, put_cstr, Message, Name, Reader};
use super::ProtocolError;
use bytes::BufMut;

/// A Bind's fields, borrowing from the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind<'a> {
    /// The names as keys (see [`Reader::name`]).
    pub portal: Name<'a>,
    pub statement: Name<'a>,
    pub param_formats: Vec<i16>,
    /// Each parameter's bytes (`None`: NULL).
    pub values: Vec<Option<&'a [u8]>>,
    pub result_formats: Vec<i16>,
}

/// Reads a Bind message.
pub fn read_bind(m: &Message) -> Result<Bind<'_>, ProtocolError> {
    let mut r = m.reader();
    let portal = r.name()?;
    let statement = r.name()?;
    let param_formats = r.list(Reader::i16)?;
    let values = r.list(Reader::nullable)?;
    let result_formats = r.list(Reader::i16)?;
    Ok(Bind {
        portal,
        statement,
        param_formats,
        values,
        result_formats,
    })
}

impl Bind<'_> {
    /// The format code of parameter `i` (0-based).
    pub fn param_format(&self, i: usize) -> i16 {
        match self.param_formats.len() {
            0 => 0,
            1 => self.param_formats[0],
            _ => self.param_formats.get(i).copied().unwrap_or(0),
        }
    }

    /// The message, with `statement` as the statement name.
    pub fn to_message(&self, statement: &str) -> Message {
        build(b'B', |b| {
            b.put_slice(&name_bytes(&self.portal));
            b.put_u8(0);
            put_cstr(b, statement);
            b.put_i16(self.param_formats.len() as i16);
            for f in &self.param_formats {
                b.put_i16(*f);
            }
            b.put_i16(self.values.len() as i16);
            for v in &self.values {
                match v {
                    None => b.put_i32(-1),
                    Some(v) => {
                        b.put_i32(v.len() as i32);
                        b.put_slice(v);
                    }
                }
            }
            b.put_i16(self.result_formats.len() as i16);
            for f in &self.result_formats {
                b.put_i16(*f);
            }
        })
    }

    /// A Bind taking only parameters `params` (1-based numbers of this Bind's), in that order.
    pub fn subset(&self, params: &[u32]) -> Bind<'_> {
        let pick = |n: &u32| (*n as usize).checked_sub(1);
        Bind {
            portal: self.portal.clone(),
            statement: self.statement.clone(),
            param_formats: if self.param_formats.len() > 1 {
                params
                    .iter()
                    .filter_map(pick)
                    .map(|i| self.param_format(i))
                    .collect()
            } else {
                self.param_formats.clone()
            },
            values: params
                .iter()
                .filter_map(pick)
                .map(|i| self.values.get(i).copied().flatten())
                .collect(),
            result_formats: self.result_formats.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_subset() {
        let b = Bind {
            portal: "".into(),
            statement: "s".into(),
            param_formats: vec![0, 1, 0],
            values: vec![Some(b"1"), None, Some(b"x")],
            result_formats: vec![1],
        };
        let m = b.to_message("s");
        let r = read_bind(&m).unwrap();
        assert_eq!(r, b);
        let s = r.subset(&[3, 1]);
        assert_eq!(s.values, vec![Some(&b"x"[..]), Some(&b"1"[..])]);
        assert_eq!(s.param_formats, vec![0, 0]);
        assert!(read_bind(&build(b'B', |b| b.put_u8(0))).is_err());
    }
}
