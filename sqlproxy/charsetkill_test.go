package sqlproxy

import (
	"context"
	"crypto/sha1"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mysqld"
	"phxgo/sqlproxy/classify"
	"phxgo/sqlproxy/wire"
)

// TestKillUnderMultibyteCharsets (real MariaDB, red-team test of session
// 38): under big5, cp932, gbk and sjis a two-byte character may end in
// 0x5C or 0x60, a backslash or a backquote, which then escapes or closes
// nothing. A KILL hidden behind such a character is refused, whether the
// character set came by SET NAMES, by the handshake, or by text the
// proxy could not read; and once a session is back on utf8mb4 its data
// is data again.
func TestKillUnderMultibyteCharsets(t *testing.T) {
	a := startInstances(t, 1)[0]
	execRoot(t, a, "CREATE DATABASE IF NOT EXISTS test", "CREATE TABLE test.t (id INT PRIMARY KEY, s TEXT)")
	p := startProxy(t, 1, masterView(a), Linearizable, []string{a.Addr()}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hidden := []string{
		"BEGIN NOT ATOMIC DO '\xbf\x5c'; KILL QUERY 999999; DO '1'; END",
		"BEGIN NOT ATOMIC SELECT 1 AS \xbf`; KILL QUERY 999999; SELECT 1 AS `x`; END",
	}

	db := appDB(t, p.addr, "test", false)
	db.SetMaxOpenConns(1) // one session throughout
	for _, set := range []string{"SET NAMES gbk", "SET NAMES 'big5'", "SET CHARACTER SET sjis", "SET character_set_client = cp932",
		"EXECUTE IMMEDIATE CONCAT('SET NAMES ', 'gbk')"} {
		if _, err := db.ExecContext(ctx, set); err != nil {
			t.Fatalf("%s: %v", set, err)
		}
		for _, q := range hidden[:1] {
			wantKillRefused(t, set+"; "+q, execErr(ctx, db, q))
		}
	}
	if _, err := db.ExecContext(ctx, "SET NAMES gbk"); err != nil {
		t.Fatal(err)
	}
	wantKillRefused(t, "backquote under gbk", execErr(ctx, db, hidden[1]))

	// Back on utf8mb4, text with a three-byte character before an
	// escaped quote, and the word kill, is data (no byte pairs read).
	if _, err := db.ExecContext(ctx, "SET NAMES utf8mb4"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1, '価格€\\'s'), (2, 'kill')"); err != nil {
		t.Fatalf("utf8mb4 data: %v", err)
	}

	// Red-team test, session 38: a quoted variable name, and a SET NAMES
	// in an executable comment MariaDB skips, leave the session on gbk.
	for _, set := range []string{"SET `character_set_client` = 28", "SET @@session.`character_set_client` = 28"} {
		if _, err := db.ExecContext(ctx, "SET NAMES utf8mb4"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, set); err != nil {
			t.Fatalf("%s: %v", set, err)
		}
		wantKillRefused(t, set, execErr(ctx, db, hidden[0]))
	}
	if _, err := db.ExecContext(ctx, "SET NAMES gbk"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "SET @x = 1 /*M!999999 , NAMES utf8mb4 */"); err != nil {
		t.Fatal(err)
	}
	wantKillRefused(t, "after a skipped executable comment", execErr(ctx, db, hidden[0]))

	// The handshake's character set alone.
	acc := mysqld.DefaultAccounts()
	gbk := clientDB(t, p.addr, acc.AppUser, acc.AppPassword, "test", func(c *mysql.Config) { c.Collation = "gbk_chinese_ci" })
	gbk.SetMaxOpenConns(1)
	var cs string
	if err := gbk.QueryRowContext(ctx, "SELECT @@character_set_client").Scan(&cs); err != nil || cs != "gbk" {
		t.Fatalf("handshake in gbk: character_set_client %q, %v", cs, err)
	}
	wantKillRefused(t, "gbk from the handshake", execErr(ctx, gbk, hidden[0]))

	// Logged in as gbk, SET NAMES utf8mb4, then COM_RESET_CONNECTION:
	// MariaDB is back on the handshake's gbk.
	stage1 := sha1.Sum([]byte(acc.AppPassword))
	key := poolKey{addr: p.addr, user: acc.AppUser, stage1: string(stage1[:]), caps: rawCaps, charset: 28} // gbk_chinese_ci
	b, werr, err := dial(ctx, DialFrom(nil, 5*time.Second), key, routeMaster, "test", 5*time.Second, 5*time.Second, nil, nil, true)
	if err != nil || werr != nil {
		t.Fatalf("raw connect: %v %v", err, werr)
	}
	defer b.close()
	raw := &rawClient{t: t, b: b}
	if werr := raw.query("SET NAMES utf8mb4"); werr != nil {
		t.Fatal(werr)
	}
	if res, err := b.exec(wire.ComResetConnection, nil, rawCaps); err != nil || res.Err != nil {
		t.Fatalf("COM_RESET_CONNECTION: %v %v", err, res.Err)
	}
	if werr := raw.query(hidden[0]); werr == nil || werr.Code != 1235 {
		t.Fatalf("after a reset back to gbk: %+v, want 1235", werr)
	}
}

// TestPairCollations: classify.PairCollations are exactly the collation
// ids under 256 of big5, cp932, gbk and sjis, as this MariaDB numbers
// them.
func TestPairCollations(t *testing.T) {
	a := startInstances(t, 1)[0]
	db, err := a.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT id FROM information_schema.collations WHERE character_set_name IN ('big5','cp932','gbk','sjis') AND id < 256")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[uint8]bool{}
	for rows.Next() {
		var id uint8
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got[id] = true
	}
	if len(got) != len(classify.PairCollations) {
		t.Fatalf("MariaDB has %v, classify.PairCollations %v", got, classify.PairCollations)
	}
	for id := range got {
		if !classify.PairCollations[id] {
			t.Fatalf("collation %d of a pairing set is missing from classify.PairCollations", id)
		}
	}
}
