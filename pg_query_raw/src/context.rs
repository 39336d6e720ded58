//! libpg_query's per-thread memory context, entered for the duration of one call.
//!
//! All Postgres globals are thread-local in libpg_query, so calls from many threads run in
//! parallel safely. Within a thread, a context is entered, the tree built or read, converted
//! eagerly, and the context exited (freeing every palloc'd byte) before returning.
use crate::bindings as c;
use crate::error::Error;
use std::ffi::{c_char, CStr, CString};

pub(crate) struct Context(c::MemoryContext);

impl Context {
    pub(crate) fn enter() -> Context {
        // SAFETY: sets up this thread's Postgres globals; paired with the exit in Drop.
        Context(unsafe { c::pg_query_enter_memory_context() })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context was entered by `enter` on this thread and nothing references its
        // memory any more (conversions copy everything into Rust values).
        unsafe { c::pg_query_exit_memory_context(self.0) }
    }
}

/// A NUL-terminated copy of `sql`, or the position of its first NUL byte.
pub(crate) fn c_string(sql: &str) -> Result<CString, Error> {
    CString::new(sql).map_err(|e| Error::InteriorNul(e.nul_position()))
}

/// Reads and frees a `PgQueryError`.
///
/// # Safety
/// `err` must be a non-null error allocated by libpg_query.
pub(crate) unsafe fn take_error(err: *mut c::PgQueryError) -> Error {
    let message = cstr((*err).message);
    let cursorpos = (*err).cursorpos;
    c::pg_query_free_error(err);
    Error::Parse { message, cursorpos }
}

pub(crate) unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}
