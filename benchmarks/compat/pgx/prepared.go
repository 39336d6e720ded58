package main

// Shared prepared statements seen from pgx: in each query exec mode, one connection's
// DEALLOCATE ALL and DISCARD ALL, DDL through the endpoint and DDL straight on the server,
// and what another connection's statements answer afterwards. Printed one line a step (rows,
// or the SQLSTATE of the error), so that a run straight on PostgreSQL and one through pgdog
// can be compared line by line (compat-pgx-run.sh).

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// step runs sql and describes its answer: the rows as text, or the error's SQLSTATE.
func step(ctx context.Context, conn *pgx.Conn, name, sql string, args ...any) string {
	rows, err := conn.Query(ctx, sql, args...)
	if err == nil {
		var out [][]any
		for rows.Next() {
			v, verr := rows.Values()
			if verr != nil {
				err = verr
				break
			}
			out = append(out, v)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err == nil {
			return fmt.Sprintf("%s: %v", name, out)
		}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return fmt.Sprintf("%s: error %s", name, pgErr.Code)
	}
	return fmt.Sprintf("%s: error %v", name, err)
}

func connect(ctx context.Context, url string, mode pgx.QueryExecMode) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.DefaultQueryExecMode = mode
	return pgx.ConnectConfig(ctx, cfg)
}

// prepared runs the steps in mode `name` against url (DDL outside it on direct).
func prepared(ctx context.Context, url, direct, name string) ([]string, error) {
	mode := modes[name]
	server, err := pgx.Connect(ctx, direct)
	if err != nil {
		return nil, err
	}
	defer server.Close(ctx)
	if _, err := server.Exec(ctx, "drop table if exists pgx_pp; create table pgx_pp (a int); insert into pgx_pp values (1)"); err != nil {
		return nil, err
	}
	one, err := connect(ctx, url, mode)
	if err != nil {
		return nil, err
	}
	defer one.Close(ctx)
	other, err := connect(ctx, url, mode)
	if err != nil {
		return nil, err
	}
	defer other.Close(ctx)
	sel := "select a from pgx_pp where a = $1"
	star := "select * from pgx_pp where a = $1"
	out := []string{
		step(ctx, other, "other prepares", sel, 1),
		step(ctx, one, "one DEALLOCATE ALL", "deallocate all"),
		step(ctx, other, "other again", sel, 1),
		step(ctx, one, "one DISCARD ALL", "discard all"),
		step(ctx, other, "other again", sel, 1),
		step(ctx, one, "one ALTER", "alter table pgx_pp add column b int default 7"),
		step(ctx, other, "other select * after ALTER", star, 1),
	}
	if _, err := server.Exec(ctx, "alter table pgx_pp add column c int default 8"); err != nil {
		return nil, err
	}
	third, err := connect(ctx, url, mode)
	if err != nil {
		return nil, err
	}
	defer third.Close(ctx)
	out = append(out, step(ctx, third, "third select * after outside ALTER", star, 1))
	for i := range out {
		out[i] = name + " " + out[i]
	}
	return out, nil
}
