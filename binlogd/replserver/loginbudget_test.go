package replserver

import (
	"errors"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
)

// TestLoginFailureBudget: an address that failed its budget of logins
// gets 1129 in place of the greeting, even with the right password, so a
// guesser gets one guess per LoginFailureEvery; loopback, where the
// node's own MariaDB comes from, is exempt in production.
func TestLoginFailureBudget(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr, cfg.User, cfg.Password, cfg.ServerID = "127.0.0.1:0", testUser, testPassword, endpointID
	cfg.LoginFailureBurst, cfg.LoginFailureEvery = 3, time.Hour
	s, err := New(cfg, NewMemorySource(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	ping := func(pw string) error {
		db := openAs(t, s.Addr(), testUser, pw, nil)
		defer db.Close()
		return db.Ping()
	}
	code := func(err error) uint16 {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			return me.Number
		}
		return 0
	}

	// Production: loopback is exempt, however often it fails.
	for range 5 {
		if err := ping("wrong"); err == nil {
			t.Fatal("a wrong password got in")
		}
	}
	if err := ping(testPassword); err != nil {
		t.Fatalf("loopback blocked: %v", err)
	}

	s.budgetLoopback.Store(true)
	for i := range 3 {
		if err := ping("wrong"); err == nil {
			t.Fatalf("failure %d: a wrong password got in", i+1)
		}
	}
	err = ping(testPassword)
	if err == nil {
		t.Fatal("the right password got in past the budget of failures")
	}
	if c := code(err); c != gomysql.ER_HOST_IS_BLOCKED {
		t.Fatalf("past the budget: %v (code %d), want %d", err, c, gomysql.ER_HOST_IS_BLOCKED)
	}
}
