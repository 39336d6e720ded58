#include "pg_query.h"
#include "pg_query_internal.h"
#include "postgres_deparse.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "shim.h"

static PgQueryError *
pgqr_copy_error(MemoryContext ctx)
{
	ErrorData  *error_data;
	PgQueryError *error;

	MemoryContextSwitchTo(ctx);
	error_data = CopyErrorData();
	error = malloc(sizeof(PgQueryError));
	error->message = strdup(error_data->message ? error_data->message : "unknown error");
	error->filename = strdup(error_data->filename ? error_data->filename : "");
	error->funcname = strdup(error_data->funcname ? error_data->funcname : "");
	error->context = NULL;
	error->lineno = error_data->lineno;
	error->cursorpos = error_data->cursorpos;
	FlushErrorState();
	return error;
}

void
pgqr_deparse(List *stmts, char **out, PgQueryError **error)
{
	MemoryContext ctx = CurrentMemoryContext;

	*out = NULL;
	*error = NULL;
	PG_TRY();
	{
		StringInfoData str;
		ListCell   *lc;

		initStringInfo(&str);
		foreach(lc, stmts)
		{
			PostgresDeparseOpts opts;

			MemSet(&opts, 0, sizeof(PostgresDeparseOpts));
			deparseRawStmtOpts(&str, (RawStmt *) lfirst(lc), &opts);
			if (lnext(stmts, lc) != NULL)
				appendStringInfoString(&str, "; ");
		}
		*out = strdup(str.data);
	}
	PG_CATCH();
	{
		*error = pgqr_copy_error(ctx);
	}
	PG_END_TRY();
}
