// pgx through pgdog: every query exec mode of pgx v5 (cache_statement, cache_describe,
// describe_exec, exec, simple_protocol), each with several connections at once on a small
// transaction-mode pool, so that a client's statements (named and unnamed) meet server
// connections other clients used. Every answer is checked; any wrong or failed one is printed
// and the exit code is 1.
//
//	usage: go run . 'postgres://user:password@127.0.0.1:6432/db' [clients] [rounds]
//	       go run . prepared URL DIRECT_URL    (see prepared.go)
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
)

var modes = map[string]pgx.QueryExecMode{
	"cache_statement": pgx.QueryExecModeCacheStatement,
	"cache_describe":  pgx.QueryExecModeCacheDescribe,
	"describe_exec":   pgx.QueryExecModeDescribeExec,
	"exec":            pgx.QueryExecModeExec,
	"simple_protocol": pgx.QueryExecModeSimpleProtocol,
}

// One client: rounds of queries whose answers depend on the client and the round.
func client(ctx context.Context, url string, mode pgx.QueryExecMode, id, rounds int) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.DefaultQueryExecMode = mode
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	for r := 0; r < rounds; r++ {
		var sum int64
		if err := conn.QueryRow(ctx, "select $1::int8 + $2::int8", int64(id), int64(r)).Scan(&sum); err != nil {
			return fmt.Errorf("round %d, two parameters: %w", r, err)
		}
		if sum != int64(id+r) {
			return fmt.Errorf("round %d: %d + %d gave %d", r, id, r, sum)
		}
		var text string
		if err := conn.QueryRow(ctx, "select $1::text || '-' || $2::text || '-' || $3::text", "c", strconv.Itoa(id), strconv.Itoa(r)).Scan(&text); err != nil {
			return fmt.Errorf("round %d, three parameters: %w", r, err)
		}
		if want := fmt.Sprintf("c-%d-%d", id, r); text != want {
			return fmt.Errorf("round %d: got %q, want %q", r, text, want)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			return fmt.Errorf("round %d, begin: %w", r, err)
		}
		if _, err := tx.Exec(ctx, "insert into pgx_rows (client, round) values ($1, $2)", id, r); err != nil {
			return fmt.Errorf("round %d, insert: %w", r, err)
		}
		var n int64
		if err := tx.QueryRow(ctx, "select count(*) from pgx_rows where client = $1", id).Scan(&n); err != nil {
			return fmt.Errorf("round %d, count: %w", r, err)
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("round %d, commit: %w", r, err)
		}
		if n != int64(r+1) {
			return fmt.Errorf("round %d: client %d sees %d of its rows", r, id, n)
		}
	}
	return nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pgx-check URL [clients] [rounds] | pgx-check prepared URL DIRECT_URL")
		os.Exit(2)
	}
	if os.Args[1] == "prepared" && len(os.Args) == 4 {
		for _, name := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
			lines, err := prepared(context.Background(), os.Args[2], os.Args[3], name)
			if err != nil {
				fmt.Printf("%s: setup: %v\n", name, err)
				os.Exit(1)
			}
			for _, l := range lines {
				fmt.Println(l)
			}
		}
		return
	}
	url, clients, rounds := os.Args[1], 8, 50
	if len(os.Args) > 2 {
		clients, _ = strconv.Atoi(os.Args[2])
	}
	if len(os.Args) > 3 {
		rounds, _ = strconv.Atoi(os.Args[3])
	}
	ctx := context.Background()
	failed := false
	for _, name := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
		setup, err := pgx.Connect(ctx, url)
		if err == nil {
			_, err = setup.Exec(ctx, "drop table if exists pgx_rows; create table pgx_rows (client int, round int)")
			setup.Close(ctx)
		}
		if err != nil {
			fmt.Printf("%s: setup: %v\n", name, err)
			os.Exit(1)
		}
		var wg sync.WaitGroup
		errs := make([]error, clients)
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				errs[c] = client(ctx, url, modes[name], c, rounds)
			}(c)
		}
		wg.Wait()
		bad := 0
		for c, err := range errs {
			if err != nil {
				bad++
				fmt.Printf("%s: client %d: %v\n", name, c, err)
			}
		}
		if bad > 0 {
			failed = true
		}
		fmt.Printf("pgx %s: %d clients x %d rounds, %d failed\n", name, clients, rounds, bad)
	}
	if failed {
		os.Exit(1)
	}
}
