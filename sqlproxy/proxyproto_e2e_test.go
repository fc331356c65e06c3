package sqlproxy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/localcluster"
)

// TestE2EProxyProtocol: a real three-node cluster, each node on its own
// loopback address (127.0.0.11-13). binlogd lists the three in every
// MariaDB's proxy_protocol_networks; hv@'%' may only SELECT and
// hv@'127.0.0.1_' (the nodes' addresses) may do anything. A client from
// 127.0.0.2 gets hv@'%' through every proxy: the master's (its unix
// socket) and the others' (one hop by TCP in TLS, with a PROXY header),
// so it cannot DELETE; an account for 127.0.0.3 only works from there.
// Skipped with -short.
func TestE2EProxyProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real cluster; skipped in -short")
	}
	bin := t.TempDir()
	if err := localcluster.BuildBinaries(bin); err != nil {
		t.Fatal(err)
	}
	hosts := []string{"127.0.0.11", "127.0.0.12", "127.0.0.13"}
	c, master := localcluster.StartSpecForTest(t, localcluster.Spec{BinDir: bin, Nodes: 3, LeaseDuration: e2eLease,
		Proxy: true, Hosts: hosts})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	for id := uint32(1); id <= 3; id++ {
		root, err := c.RootDB(id)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		var v string
		await(t, ctx, fmt.Sprintf("node %d's proxy_protocol_networks", id), func() bool {
			if root.QueryRowContext(ctx, "SELECT @@GLOBAL.proxy_protocol_networks").Scan(&v) != nil {
				return false
			}
			got := strings.Split(v, ",")
			slices.Sort(got)
			return slices.Equal(got, hosts)
		})
		if id == master {
			for _, q := range []string{
				"CREATE DATABASE ppdb", "CREATE TABLE ppdb.t (id INT PRIMARY KEY)", "INSERT INTO ppdb.t VALUES (1)",
				"CREATE USER hv@'%' IDENTIFIED BY 'hvpw'", "GRANT SELECT ON ppdb.* TO hv@'%'",
				"CREATE USER hv@'127.0.0.1_' IDENTIFIED BY 'hvpw'", "GRANT ALL ON ppdb.* TO hv@'127.0.0.1_'",
				"CREATE USER app3@'127.0.0.3' IDENTIFIED BY 'pw3'", "GRANT SELECT ON ppdb.* TO app3@'127.0.0.3'",
			} {
				if _, err := root.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		}
	}

	for id := uint32(1); id <= 3; id++ {
		db := fromDB(t, c.ProxyAddr(id), "hv", "hvpw", "127.0.0.2")
		var sid uint32
		var from string
		await(t, ctx, fmt.Sprintf("hv through proxy %d on the master, one hop unless it is the master's", id), func() bool {
			err := db.QueryRowContext(ctx, "SELECT @@server_id, SUBSTRING_INDEX(HOST, ':', 1) FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()").Scan(&sid, &from)
			return err == nil && sid == master && (id == master) == (from == "localhost")
		})
		cur, user, err := whoami(t, db)
		if err != nil || cur != "hv@%" {
			t.Fatalf("proxy %d (from %s): CURRENT_USER() %q USER() %q, %v; want hv@%%", id, from, cur, user, err)
		}
		_, err = db.ExecContext(ctx, "DELETE FROM ppdb.t")
		if err == nil {
			t.Fatalf("proxy %d: a client from 127.0.0.2 deleted with hv@'127.0.0.1_''s privileges", id)
		}
		if me := mysqlErr(t, err); me.Number != 1142 {
			t.Fatalf("proxy %d: DELETE: %v, want 1142", id, err)
		}
	}
	for id := uint32(1); id <= 3; id++ {
		app3 := fromDB(t, c.ProxyAddr(id), "app3", "pw3", "127.0.0.3")
		if cur, _, err := whoami(t, app3); err != nil || cur != "app3@127.0.0.3" {
			t.Fatalf("proxy %d: app3 from 127.0.0.3: %q, %v", id, cur, err)
		}
		if _, _, err := whoami(t, fromDB(t, c.ProxyAddr(id), "app3", "pw3", "127.0.0.2")); err == nil {
			t.Fatalf("proxy %d: app3 logged in from 127.0.0.2", id)
		}
	}
}
