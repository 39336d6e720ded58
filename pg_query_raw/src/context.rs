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

/// Runs libpg_query's raw parser on `sql` in a fresh memory context and calls `read` with the
/// statement list (a `List *` of `RawStmt`) and the parser's stderr output (a C string, may be
/// null). Both are freed once `read` returns: it copies what it keeps.
pub(crate) fn with_raw_parse<T>(
    sql: &str,
    read: impl FnOnce(*const c::List, *const c_char) -> Result<T, Error>,
) -> Result<T, Error> {
    let input = c_string(sql)?;
    let _ctx = Context::enter();
    // SAFETY: pg_query_raw_parse catches Postgres errors itself; the tree lives in `_ctx`, which
    // outlives `read`; the stderr buffer and the error are malloc'd and freed here.
    unsafe {
        let raw = c::pg_query_raw_parse(input.as_ptr(), 0);
        let _stderr = Malloced(raw.stderr_buffer);
        if raw.error.is_null() {
            read(raw.tree, raw.stderr_buffer)
        } else {
            Err(take_error(raw.error))
        }
    }
}

/// A buffer libpg_query malloc'd, freed when dropped (after a panic in a reader too).
struct Malloced(*mut c_char);

impl Drop for Malloced {
    fn drop(&mut self) {
        // SAFETY: the pointer came from malloc (or is null) and is freed once, here.
        unsafe { libc::free(self.0 as *mut libc::c_void) }
    }
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
