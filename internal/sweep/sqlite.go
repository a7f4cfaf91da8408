package sweep

// The SQLite database of a merge: the CSV's rows in one table, written by a
// pure-Go driver (modernc.org/sqlite), so the binary stays static.

import (
	"database/sql"
	"fmt"
	"math"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/neuronsim/neuronsim/internal/output"
)

// SQLiteTable is the table the database holds: one row per point, the
// columns of Columns (numbers as INTEGER or REAL, an unset link parameter,
// the channels of a point they do not apply to and the results of a point
// not OK as NULL).
const SQLiteTable = "points"

// sqliteTypes are Columns' SQL types.
var sqliteTypes = map[string]string{
	"index": "INTEGER", "devices": "INTEGER", "nodes": "INTEGER", "ranks_per_device": "INTEGER", "ranks": "INTEGER",
	"link_bw_Bps": "INTEGER", "link_latency_ps": "INTEGER", "channels": "INTEGER", "size_B": "INTEGER", "seed": "INTEGER",
	"count_elems": "INTEGER", "time_ps": "INTEGER",
	"time_avg_us": "REAL", "algbw_GBps": "REAL", "busbw_GBps": "REAL",
}

// writeSQLite writes the folder's rows to a new database at path,
// atomically: the database is built in a temporary file beside path and
// renamed onto it when complete.
func writeSQLite(path string, f *Folder) (err error) {
	tmp, err := output.Create(path)
	if err != nil {
		return fmt.Errorf("sweep: --sqlite: %w", err)
	}
	defer tmp.Abort()
	db, err := sql.Open("sqlite", tmp.Temp())
	if err != nil {
		return fmt.Errorf("sweep: --sqlite %s: %w", path, err)
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("sweep: --sqlite %s: %w", path, cerr)
		}
		if err == nil {
			err = tmp.Commit()
		}
	}()
	db.SetMaxOpenConns(1)
	var cols, marks []string
	for _, c := range Columns {
		t := sqliteTypes[c]
		if t == "" {
			t = "TEXT"
		}
		cols = append(cols, fmt.Sprintf("%q %s", c, t))
		marks = append(marks, "?")
	}
	if _, err := db.Exec("PRAGMA journal_mode=MEMORY"); err != nil {
		return fmt.Errorf("sweep: --sqlite %s: %w", path, err)
	}
	if _, err := db.Exec(fmt.Sprintf("CREATE TABLE %s (%s)", SQLiteTable, strings.Join(cols, ", "))); err != nil {
		return fmt.Errorf("sweep: --sqlite %s: %w", path, err)
	}
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("sweep: --sqlite %s: %w", path, err)
	}
	defer tx.Rollback()
	stmt, err := tx.Prepare(fmt.Sprintf("INSERT INTO %s VALUES (%s)", SQLiteTable, strings.Join(marks, ", ")))
	if err != nil {
		return fmt.Errorf("sweep: --sqlite %s: %w", path, err)
	}
	defer stmt.Close()
	for _, r := range f.Results {
		vals, err := sqliteValues(&r)
		if err == nil {
			_, err = stmt.Exec(vals...)
		}
		if err != nil {
			return fmt.Errorf("sweep: --sqlite %s: point %d: %w", path, r.Index, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sweep: --sqlite %s: %w", path, err)
	}
	return nil
}

// sqliteValues are a point's values in Columns' order (rowValues), an
// unsigned number as SQLite's 64-bit INTEGER: one past 2^63 − 1 is
// refused naming its column, not wrapped.
func sqliteValues(r *PointResult) ([]any, error) {
	vals := rowValues(r)
	for i, v := range vals {
		if u, ok := v.(uint64); ok {
			if u > math.MaxInt64 {
				return nil, fmt.Errorf("column %s: %d exceeds SQLite's INTEGER (at most 2^63 − 1)", Columns[i], u)
			}
			vals[i] = int64(u)
		}
	}
	return vals, nil
}
