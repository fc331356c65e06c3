package workload

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/go-sql-driver/mysql"

	"phxgo/jepsen/history"
)

func TestStmtOutcome(t *testing.T) {
	cases := []struct {
		err  error
		want history.Outcome
	}{
		{nil, history.OK},
		{&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, history.Fail},
		{fmt.Errorf("exec: %w", &mysql.MySQLError{Number: 1213}), history.Fail},
		{&mysql.MySQLError{Number: 2013, Message: "Lost connection to backend"}, history.Info},
		{&mysql.MySQLError{Number: 1927, Message: "phxgo: lost backend connection during statement; outcome unknown"}, history.Info},
		{driver.ErrBadConn, history.Fail},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, history.Fail},
		{&net.OpError{Op: "read", Err: errors.New("connection reset")}, history.Info},
		{mysql.ErrInvalidConn, history.Info},
		{context.DeadlineExceeded, history.Info},
	}
	for _, c := range cases {
		if got := stmtOutcome(c.err); got != c.want {
			t.Errorf("stmtOutcome(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

func TestParseList(t *testing.T) {
	l, err := parseList("3,1,2")
	if err != nil || len(l) != 3 || l[0] != 3 || l[2] != 2 {
		t.Fatalf("%v %v", l, err)
	}
	if l, err := parseList(""); err != nil || len(l) != 0 {
		t.Fatalf("empty: %v %v", l, err)
	}
	if _, err := parseList("1,x"); err == nil {
		t.Fatal("garbage parsed")
	}
}
