package mysqld

import (
	"context"
	"reflect"
	"testing"
	"time"
)

func TestQueryHelpers(t *testing.T) {
	inst := NewTestInstance(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := inst.TestDB(t)

	m, err := QueryRowMap(ctx, db, "SELECT 1 AS a, NULL AS b, ? AS c UNION ALL SELECT 2, 'y', 'z'", "x")
	if want := map[string]string{"a": "1", "b": "", "c": "x"}; err != nil || !reflect.DeepEqual(m, want) {
		t.Fatalf("QueryRowMap = %v, %v; want the first row %v", m, err, want)
	}
	if m, err := QueryRowMap(ctx, db, "SHOW SLAVE STATUS"); err != nil || len(m) != 0 {
		t.Fatalf("QueryRowMap of no rows = %v, %v; want an empty map", m, err)
	}
	if _, err := QueryRowMap(ctx, db, "SELECT nosuchcolumn"); err == nil {
		t.Fatal("QueryRowMap of a bad query: no error")
	}

	s, err := QueryStrings(ctx, db, "SELECT 'a' UNION ALL SELECT 'b'")
	if err != nil || !reflect.DeepEqual(s, []string{"a", "b"}) {
		t.Fatalf("QueryStrings = %q, %v", s, err)
	}
	if s, err := QueryStrings(ctx, db, "SELECT 'a' FROM DUAL WHERE 0"); err != nil || s != nil {
		t.Fatalf("QueryStrings of no rows = %q, %v; want nil", s, err)
	}
	if ids, err := QueryColumn[uint64](ctx, db, "SELECT CONNECTION_ID() UNION ALL SELECT 18446744073709551615"); err != nil || len(ids) != 2 || ids[0] == 0 || ids[1] != 1<<64-1 {
		t.Fatalf("QueryColumn[uint64] = %v, %v", ids, err)
	}
	if _, err := QueryColumn[uint64](ctx, db, "SELECT 'x'"); err == nil {
		t.Fatal("QueryColumn[uint64] of a string: no error")
	}
}
