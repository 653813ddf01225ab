package localstore

import (
	"context"
	"database/sql"
	"fmt"
)

// IntegrityReport is what CheckIntegrity found. OK is true only when both checks are clean.
type IntegrityReport struct {
	OK bool `json:"ok"`
	// Problems are integrity_check's messages (empty when it says "ok").
	Problems []string `json:"problems"`
	// ForeignKeys are the rows whose foreign keys point nowhere.
	ForeignKeys []ForeignKeyProblem `json:"foreignKeys"`
}

// ForeignKeyProblem is one row of foreign_key_check.
type ForeignKeyProblem struct {
	Table  string `json:"table"`
	RowID  int64  `json:"rowid"`
	Parent string `json:"parent"`
}

// CheckIntegrity runs SQLite's integrity_check and foreign_key_check and reports what they
// found. It only reports: it never repairs, and it is never run automatically (on a large
// wallet it reads every page).
func (s *Store) CheckIntegrity(ctx context.Context) (IntegrityReport, error) {
	rep := IntegrityReport{Problems: []string{}, ForeignKeys: []ForeignKeyProblem{}}
	msgs, err := queryStrings(ctx, s.readDB, "PRAGMA integrity_check")
	if err != nil {
		return rep, fmt.Errorf("check integrity: %w", err)
	}
	for _, m := range msgs {
		if m != "ok" {
			rep.Problems = append(rep.Problems, m)
		}
	}
	if rep.ForeignKeys, err = foreignKeyProblems(ctx, s.readDB); err != nil {
		return rep, fmt.Errorf("check foreign keys: %w", err)
	}
	rep.OK = len(rep.Problems) == 0 && len(rep.ForeignKeys) == 0
	return rep, nil
}

// foreignKeyProblems runs foreign_key_check on q (a pool or a transaction): every row that
// refers to a missing parent.
func foreignKeyProblems(ctx context.Context, q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}) ([]ForeignKeyProblem, error) {
	rows, err := q.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	problems := []ForeignKeyProblem{}
	for rows.Next() {
		var p ForeignKeyProblem
		var rowid *int64
		var fkid int64
		if err := rows.Scan(&p.Table, &rowid, &p.Parent, &fkid); err != nil {
			return nil, classify(err)
		}
		if rowid != nil {
			p.RowID = *rowid
		}
		problems = append(problems, p)
	}
	return problems, classify(rows.Err())
}
