//! The PostgreSQL protocol's message type bytes by name, and the transaction status of
//! ReadyForQuery. Client and server messages reuse some letters with other meanings (`D` is
//! Describe from a client and DataRow from a server), so each direction has its own module;
//! match on these constants, not on raw bytes.

// The two lists below have the same shape (a name and a letter per line), and so does any
// table of protocol letters: they stay as they are, one constant per message of the protocol
// documentation, which is what a reader checks them against.

/// Messages a client (frontend) sends.
pub mod frontend {
    pub const BIND: u8 = b'B';
    pub const CLOSE: u8 = b'C';
    pub const COPY_DATA: u8 = b'd';
    pub const COPY_DONE: u8 = b'c';
    pub const COPY_FAIL: u8 = b'f';
    pub const DESCRIBE: u8 = b'D';
    pub const EXECUTE: u8 = b'E';
    pub const FLUSH: u8 = b'H';
    pub const FUNCTION_CALL: u8 = b'F';
    pub const PARSE: u8 = b'P';
    /// PasswordMessage, SASLInitialResponse and SASLResponse.
    pub const PASSWORD: u8 = b'p';
    pub const QUERY: u8 = b'Q';
    pub const SYNC: u8 = b'S';
    pub const TERMINATE: u8 = b'X';
}

/// Messages a server (backend) sends.
pub mod backend {
    pub const AUTHENTICATION: u8 = b'R';
    pub const BACKEND_KEY_DATA: u8 = b'K';
    pub const BIND_COMPLETE: u8 = b'2';
    pub const CLOSE_COMPLETE: u8 = b'3';
    pub const COMMAND_COMPLETE: u8 = b'C';
    pub const COPY_BOTH_RESPONSE: u8 = b'W';
    pub const COPY_DATA: u8 = b'd';
    pub const COPY_DONE: u8 = b'c';
    pub const COPY_IN_RESPONSE: u8 = b'G';
    pub const COPY_OUT_RESPONSE: u8 = b'H';
    pub const DATA_ROW: u8 = b'D';
    pub const EMPTY_QUERY_RESPONSE: u8 = b'I';
    pub const ERROR_RESPONSE: u8 = b'E';
    pub const FUNCTION_CALL_RESPONSE: u8 = b'V';
    pub const NEGOTIATE_PROTOCOL_VERSION: u8 = b'v';
    pub const NO_DATA: u8 = b'n';
    pub const NOTICE_RESPONSE: u8 = b'N';
    pub const NOTIFICATION_RESPONSE: u8 = b'A';
    pub const PARAMETER_DESCRIPTION: u8 = b't';
    pub const PARAMETER_STATUS: u8 = b'S';
    pub const PARSE_COMPLETE: u8 = b'1';
    pub const PORTAL_SUSPENDED: u8 = b's';
    pub const READY_FOR_QUERY: u8 = b'Z';
    pub const ROW_DESCRIPTION: u8 = b'T';
}

/// Fields of ErrorResponse and NoticeResponse (the ones pgdog reads).
pub mod field {
    pub const SEVERITY: u8 = b'S';
    pub const CODE: u8 = b'C';
    pub const MESSAGE: u8 = b'M';
}

/// What a Describe or Close names.
pub mod target {
    pub const PORTAL: u8 = b'P';
    pub const STATEMENT: u8 = b'S';
}

/// The transaction status a ReadyForQuery carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TxStatus {
    /// `I`: not in a transaction block.
    #[default]
    Idle,
    /// `T`: in a transaction block.
    InTransaction,
    /// `E`: in a failed transaction block (queries rejected until it ends).
    Failed,
}

impl TxStatus {
    /// The status byte; an unknown one counts as idle.
    pub fn from_byte(b: u8) -> TxStatus {
        match b {
            b'T' => TxStatus::InTransaction,
            b'E' => TxStatus::Failed,
            _ => TxStatus::Idle,
        }
    }

    /// The status of a ReadyForQuery message (idle when it has none).
    pub fn of(ready_for_query: &super::Message) -> TxStatus {
        TxStatus::from_byte(ready_for_query.payload().first().copied().unwrap_or(b'I'))
    }

    pub fn byte(self) -> u8 {
        match self {
            TxStatus::Idle => b'I',
            TxStatus::InTransaction => b'T',
            TxStatus::Failed => b'E',
        }
    }

    pub fn is_idle(self) -> bool {
        self == TxStatus::Idle
    }
}

impl std::fmt::Display for TxStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.byte() as char)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_bytes_round_trip() {
        for s in [TxStatus::Idle, TxStatus::InTransaction, TxStatus::Failed] {
            assert_eq!(TxStatus::from_byte(s.byte()), s);
        }
        assert_eq!(TxStatus::from_byte(b'?'), TxStatus::Idle);
        let z = crate::net::message::ready_for_query(TxStatus::Failed);
        assert_eq!(TxStatus::of(&z), TxStatus::Failed);
        assert_eq!(TxStatus::InTransaction.to_string(), "T");
    }
}
