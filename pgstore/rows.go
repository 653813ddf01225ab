package pgstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"walletsync/wallet"
)

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// selectColumns lists t's columns, in wallet's order, qualified by alias.
func selectColumns(t *wallet.Table, alias string) string {
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = alias + "." + quote(c.Name)
	}
	return strings.Join(cols, ", ")
}

// queryRows runs a query whose result columns are t's, in order, and returns the rows
// normalized (wallet.Row's Go types: pgx returns bigint as int64, bytea as []byte,
// timestamp as time.Time in UTC).
func queryRows(ctx context.Context, q querier, t *wallet.Table, sql string, args ...any) ([]wallet.Row, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []wallet.Row
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, classify(err)
		}
		r := wallet.Row(vals)
		if err := t.Normalize(r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, classify(rows.Err())
}

// arg is the value a row's cell is bound as: times in UTC (a timestamp column keeps the
// wall clock of the time it is given), a nil []byte as an empty bytea (a Row's NULL is an
// untyped nil, as wallet.SQLValue binds it for SQLite), everything else as it is.
func arg(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC()
	case []byte:
		if x == nil {
			return []byte{}
		}
	}
	return v
}

// placeholders returns "$from, $from+1, ..." for n parameters.
func placeholders(from, n int) string {
	p := make([]string, n)
	for i := range p {
		p[i] = fmt.Sprintf("$%d", from+i)
	}
	return strings.Join(p, ", ")
}

// insertRow writes r into t and returns its new id (0 for the tables without one); the
// database assigns the id.
func insertRow(ctx context.Context, tx pgx.Tx, t *wallet.Table, r wallet.Row) (int64, error) {
	var names []string
	var args []any
	for i, c := range t.Columns {
		if c.Name == t.ID {
			continue
		}
		names = append(names, quote(c.Name))
		args = append(args, arg(r[i]))
	}
	sql := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", quote(string(t.Name)), strings.Join(names, ", "), placeholders(1, len(args)))
	if t.ID == "" {
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			return 0, fmt.Errorf("insert into %s: %w", t.Name, classify(err))
		}
		return 0, nil
	}
	var id int64
	if err := tx.QueryRow(ctx, sql+" RETURNING "+quote(t.ID), args...).Scan(&id); err != nil {
		return 0, fmt.Errorf("insert into %s: %w", t.Name, classify(err))
	}
	return id, nil
}
