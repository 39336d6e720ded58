/* Small C wrappers around libpg_query functions that can throw (longjmp) Postgres errors:
 * each catches with PG_TRY so no longjmp ever crosses a Rust frame. Compiled against the headers
 * of the pg_query crate's libpg_query and linked with its archive. */
#ifndef PG_QUERY_RAW_SHIM_H
#define PG_QUERY_RAW_SHIM_H

#include "pg_query.h"

struct List;

/* Deparses a List of RawStmt built in the current memory context. On success *out is a
 * malloc'd string (free with free()); on error *error is set (free with pg_query_free_error). */
void pgqr_deparse(struct List *stmts, char **out, PgQueryError **error);

#endif
