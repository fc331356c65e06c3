package mysqld

import (
	"context"
	"database/sql"
)

// Querier is what runs a query: *sql.DB, *sql.Conn and *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// QueryStrings runs a query whose rows are one string column and returns
// them in order (nil for no rows). Errors are returned as the driver gives
// them; the caller says which query failed.
func QueryStrings(ctx context.Context, q Querier, query string, args ...any) ([]string, error) {
	return QueryColumn[string](ctx, q, query, args...)
}

// QueryColumn is QueryStrings for a column of any type database/sql
// scans into (uint64 for connection ids, say).
func QueryColumn[T any](ctx context.Context, q Querier, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// QueryRowMap runs a query and returns its first row as column name to
// value, NULL as "" (an empty map for no rows): for the wide, versioned
// rows of SHOW SLAVE STATUS and the like, read by column name.
func QueryRowMap(ctx context.Context, q Querier, query string, args ...any) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if !rows.Next() {
		return out, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	for i, c := range cols {
		out[c] = vals[i].String
	}
	return out, nil
}
