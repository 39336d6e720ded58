//! The startup phase: the first packet a client sends (StartupMessage, SSLRequest,
//! GSSENCRequest or CancelRequest).
use super::error::ProtocolError;
use super::message::Reader;

pub const SSL_REQUEST: i32 = 80877103;
pub const GSSENC_REQUEST: i32 = 80877104;
pub const CANCEL_REQUEST: i32 = 80877102;

/// What the first packet asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Startup {
    Ssl,
    GssEnc,
    Cancel {
        pid: i32,
        secret: Vec<u8>,
    },
    /// A StartupMessage: protocol version and parameters in order.
    Login {
        major: u16,
        minor: u16,
        params: Vec<(String, String)>,
    },
}

impl Startup {
    /// Parses a startup packet payload (after its length word).
    pub fn parse(payload: &[u8]) -> Result<Startup, ProtocolError> {
        let mut r = Reader::new(payload, "startup packet");
        let code = r.i32()?;
        match code {
            SSL_REQUEST => return Ok(Startup::Ssl),
            GSSENC_REQUEST => return Ok(Startup::GssEnc),
            CANCEL_REQUEST => {
                let pid = r.i32()?;
                let secret = r.rest().to_vec();
                if secret.len() < 4 || secret.len() > 256 {
                    return Err(ProtocolError::BadStartup("cancel key length".into()));
                }
                return Ok(Startup::Cancel { pid, secret });
            }
            _ => {}
        }
        let (major, minor) = ((code >> 16) as u16, (code & 0xffff) as u16);
        if major != 3 {
            return Err(ProtocolError::UnsupportedProtocol(major, minor));
        }
        let mut params = Vec::new();
        loop {
            let key = r
                .cstr()
                .map_err(|_| ProtocolError::BadStartup("unterminated parameter".into()))?;
            if key.is_empty() {
                break;
            }
            let value = r
                .cstr()
                .map_err(|_| ProtocolError::BadStartup(format!("no value for {key}")))?;
            params.push((key.to_string(), value.to_string()));
        }
        Ok(Startup::Login {
            major,
            minor,
            params,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_kind() {
        let mut login = 196608i32.to_be_bytes().to_vec();
        login.extend_from_slice(b"user\0app\0database\0db\0\0");
        assert_eq!(
            Startup::parse(&login).unwrap(),
            Startup::Login {
                major: 3,
                minor: 0,
                params: vec![
                    ("user".into(), "app".into()),
                    ("database".into(), "db".into())
                ]
            }
        );
        assert_eq!(
            Startup::parse(&SSL_REQUEST.to_be_bytes()).unwrap(),
            Startup::Ssl
        );
        let mut cancel = CANCEL_REQUEST.to_be_bytes().to_vec();
        cancel.extend_from_slice(&7i32.to_be_bytes());
        cancel.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(
            Startup::parse(&cancel).unwrap(),
            Startup::Cancel {
                pid: 7,
                secret: vec![1, 2, 3, 4]
            }
        );
        assert!(matches!(
            Startup::parse(&(2i32 << 16).to_be_bytes()),
            Err(ProtocolError::UnsupportedProtocol(2, 0))
        ));
        let mut bad = 196608i32.to_be_bytes().to_vec();
        bad.extend_from_slice(b"user\0app");
        assert!(Startup::parse(&bad).is_err());
    }
}
