//! What the session waits for from its server, in order (see `Session::expected`).
use super::unnamed::UnnamedParse;
use crate::backend::prepared::Prepared;
use crate::net::Message;

/// A Parse of the client's cached unnamed statement (`cache_unnamed_statements`): the global
/// statement it set (by id) and the one it replaced, the client's again if the server skips
/// the Parse.
#[derive(Debug)]
pub(super) struct UnnamedSwap {
    pub set: u64,
    pub previous: Option<Prepared>,
}

/// A response the session waits for from the server, in order.
#[derive(Debug)]
pub(super) enum Expect {
    /// ParseComplete; `prepared`: the global statement and the client's name for it (forgotten
    /// on this server and by the client if the Parse fails, known valid once it succeeds);
    /// None for an unnamed statement not cached (or any Parse in session mode). `swap`: for
    /// the cached unnamed statement, the one this Parse replaced.
    Parse {
        prepared: Option<(Prepared, Box<str>)>,
        swap: Option<UnnamedSwap>,
    },
    /// ParseComplete of a Parse pgdog injected: not shown to the client (None: the client's
    /// unnamed statement parsed again).
    HiddenParse {
        prepared: Option<Prepared>,
    },
    /// ParseComplete pgdog answers itself (the server has the statement): the client's name
    /// is forgotten if an error makes the server skip the batch first.
    LocalParse {
        name: Box<str>,
        swap: Option<UnnamedSwap>,
    },
    /// ParseComplete of the client's Parse of the unnamed statement (see `unnamed`).
    ParseUnnamed(UnnamedParse),
    /// CloseComplete of a Close pgdog injected: not shown to the client.
    HiddenClose,
    /// CloseComplete of the client's Close of the unnamed statement.
    CloseUnnamed,
    /// An ErrorResponse pgdog provoked: the client gets this one instead.
    Replace(Message),
    /// BindComplete; the global statement bound, when it is one of pgdog's (see `replan`).
    Bind(Option<Prepared>),
    /// Describe: ends with RowDescription or NoData; the global statement described, when
    /// it is one of pgdog's (see `replan`).
    Describe(Option<Prepared>),
    /// Execute: ends with CommandComplete, EmptyQueryResponse or PortalSuspended.
    Execute,
    Close,
    /// Sync, Query or FunctionCall: ends with ReadyForQuery.
    Ready,
    /// ReadyForQuery of a batch pgdog runs again: not shown to the client.
    HiddenReady,
    /// A message pgdog answers itself, sent when everything before it has been answered.
    Synthetic(Message),
    /// Where the client's CopyDone or CopyFail reached the server: a COPY FROM STDIN starting
    /// before it ignores the Syncs up to here (see `copy_started`); otherwise nothing answers.
    CopyEnd,
}

impl Expect {
    /// The unnamed-statement swap of a Parse of "" (cached), if this is one.
    pub(super) fn unnamed_swap(&self) -> Option<&UnnamedSwap> {
        match self {
            Expect::Parse { swap, .. } | Expect::LocalParse { swap, .. } => swap.as_ref(),
            _ => None,
        }
    }
}
