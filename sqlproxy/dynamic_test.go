package sqlproxy

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestRefuseDynamicSQL: a KILL built at run time (EXECUTE IMMEDIATE
// CONCAT(...)) gets past the classifier and kills another client's
// query through a proxy with the defaults; with -refuse-dynamic-sql the
// proxy refuses it, PREPARE ... FROM an expression, and EXECUTE, with
// 1235, and the victim runs on, while the driver's prepared statements
// (the binary protocol) still work.
func TestRefuseDynamicSQL(t *testing.T) {
	m := startInstances(t, 1)[0]
	open := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, nil)
	strict := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, func(c *Config) { c.RefuseDynamicSQL = true })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root, err := m.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	// victim runs a long query through the open proxy and returns its
	// backend connection id and the query's outcome.
	victim := func(tag string) (int64, <-chan error) {
		t.Helper()
		db := appDB(t, open.addr, "", false)
		done := make(chan error, 1)
		stmt := fmt.Sprintf("SELECT SLEEP(30) AS %s", tag)
		go func() {
			_, err := db.ExecContext(ctx, stmt)
			done <- err
		}()
		var id int64
		for id == 0 {
			if err := root.QueryRowContext(ctx, "SELECT id FROM information_schema.processlist WHERE info = ?", stmt).Scan(&id); err != nil && ctx.Err() != nil {
				t.Fatalf("the victim's query never reached MariaDB: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return id, done
	}

	id, done := victim("strict_victim")
	attacker := appDB(t, strict.addr, "", false)
	for _, q := range []string{
		fmt.Sprintf("EXECUTE IMMEDIATE CONCAT('KI', 'LL QUERY ', %d)", id),
		fmt.Sprintf("PREPARE s FROM CONCAT('KI', 'LL QUERY ', %d)", id),
		"EXECUTE s",
	} {
		_, err := attacker.ExecContext(ctx, q)
		if me := mysqlErr(t, err); me.Number != 1235 {
			t.Fatalf("%s through -refuse-dynamic-sql: %v, want 1235", q, err)
		}
	}
	var n int
	if err := attacker.QueryRowContext(ctx, "SELECT ? + 1", 41).Scan(&n); err != nil || n != 42 {
		t.Fatalf("a driver's prepared statement through -refuse-dynamic-sql: %d, %v", n, err)
	}
	select {
	case err := <-done:
		t.Fatalf("the victim's query ended: %v", err)
	default:
	}
	if _, err := root.ExecContext(ctx, "KILL QUERY ?", id); err != nil { // end it; not the test
		t.Fatal(err)
	}
	<-done

	// The same KILL through the open proxy runs: what the switch is for.
	id, done = victim("open_victim")
	if _, err := appDB(t, open.addr, "", false).ExecContext(ctx, fmt.Sprintf("EXECUTE IMMEDIATE CONCAT('KI', 'LL QUERY ', %d)", id)); err != nil {
		t.Fatalf("dynamic KILL through the open proxy: %v", err)
	}
	select {
	case err := <-done:
		if me := mysqlErr(t, err); me.Number != 1317 {
			t.Fatalf("the victim's query: %v, want 1317 (interrupted)", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the dynamic KILL through the open proxy did not end the victim's query")
	}
}
