package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// multiHost is a node of a three-host cluster in the new layout: members
// carry only advertised addresses, repl_addr is this node's own.
const multiHost = `{"id":2,"insecure_no_tls":true,"dir":"n2","mysql_dir":"n2/mysql","credentials_file":"cred.json",
 "members":[
  {"id":1,"grpc_addr":"10.0.0.1:17011","mysql_addr":"10.0.0.1:3306","proxy_addr":"10.0.0.1:3307"},
  {"id":2,"grpc_addr":"10.0.0.2:17011","mysql_addr":"10.0.0.2:3306","proxy_addr":"10.0.0.2:3307"},
  {"id":3,"grpc_addr":"10.0.0.3:17011","mysql_addr":"10.0.0.3:3306","proxy_addr":"10.0.0.3:3307"}]}`

func TestMultiHostDefaults(t *testing.T) {
	c, err := loadBody(t, multiHost)
	if err != nil {
		t.Fatal(err)
	}
	if c.ReplAddr != DefaultReplAddr || c.GRPCListenAddr() != "10.0.0.2:17011" || c.MySQLListenAddr() != "10.0.0.2:3306" ||
		c.MySQLLocalAddr() != "10.0.0.2:3306" || c.GRPCSourceIP().String() != "10.0.0.2" || len(c.Warnings()) != 0 {
		t.Fatalf("repl %s, grpc listen %s, mysql listen %s local %s, source %v, warnings %q",
			c.ReplAddr, c.GRPCListenAddr(), c.MySQLListenAddr(), c.MySQLLocalAddr(), c.GRPCSourceIP(), c.Warnings())
	}
	if h, p := c.MySQLBind(); h != "10.0.0.2" || p != 3306 {
		t.Fatalf("MySQLBind = %s, %d", h, p)
	}
	// Behind NAT: listen on every interface, advertise the public address.
	body := strings.Replace(multiHost, `"id":2,`, `"id":2,"grpc_listen":"0.0.0.0:17011","mysql_listen":"0.0.0.0:3306",`, 1)
	c, err = loadBody(t, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.GRPCListenAddr() != "0.0.0.0:17011" || c.GRPCSourceIP() != nil || c.MySQLLocalAddr() != "127.0.0.1:3306" {
		t.Fatalf("grpc listen %s source %v, mysql local %s", c.GRPCListenAddr(), c.GRPCSourceIP(), c.MySQLLocalAddr())
	}
}

// The case: an old file where every member had repl_addr
// 127.0.0.1:PORT (refused as duplicates before) or a non-loopback one
// (refused as remote) loads; this node's entry becomes repl_addr, with a
// warning, and Save writes the new layout.
func TestOldStyleReplAddrMigrates(t *testing.T) {
	for name, repl := range map[string][3]string{
		"identical loopback": {"127.0.0.1:17012", "127.0.0.1:17012", "127.0.0.1:17012"},
		"others remote":      {"10.0.0.1:17012", "127.0.0.1:17012", "10.0.0.3:17012"},
	} {
		body := strings.NewReplacer(`"proxy_addr":"10.0.0.1:3307"`, `"proxy_addr":"10.0.0.1:3307","repl_addr":"`+repl[0]+`"`,
			`"proxy_addr":"10.0.0.2:3307"`, `"proxy_addr":"10.0.0.2:3307","repl_addr":"`+repl[1]+`"`,
			`"proxy_addr":"10.0.0.3:3307"`, `"proxy_addr":"10.0.0.3:3307","repl_addr":"`+repl[2]+`"`).Replace(multiHost)
		dir := t.TempDir()
		c, err := Load(write(t, dir, "c.json", body, 0o644))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.ReplAddr != repl[1] || len(c.Warnings()) != 1 || !strings.Contains(c.Warnings()[0], "repl_addr") {
			t.Fatalf("%s: repl_addr %q, warnings %q", name, c.ReplAddr, c.Warnings())
		}
		for _, m := range c.Members {
			if m.LegacyReplAddr != "" {
				t.Fatalf("%s: member %d kept repl_addr %s", name, m.ID, m.LegacyReplAddr)
			}
		}
		out := filepath.Join(dir, "saved.json")
		if err := c.Save(out); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(out)
		if strings.Count(string(b), `"repl_addr"`) != 1 {
			t.Fatalf("%s: saved file has members[].repl_addr:\n%s", name, b)
		}
		if c2, err := Load(out); err != nil || len(c2.Warnings()) != 0 || c2.ReplAddr != repl[1] {
			t.Fatalf("%s: reload: %v %q", name, err, c2.Warnings())
		}
	}
	// The node's own old entry still has to be loopback.
	body := strings.Replace(multiHost, `"proxy_addr":"10.0.0.2:3307"`, `"proxy_addr":"10.0.0.2:3307","repl_addr":"10.0.0.2:17012"`, 1)
	if _, err := loadBody(t, body); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `key "repl_addr"`) {
		t.Fatalf("own remote repl_addr: %v", err)
	}
}

func TestAddrErrors(t *testing.T) {
	cases := []struct{ name, from, to, key string }{
		{"advertised twice", `"mysql_addr":"10.0.0.3:3306"`, `"mysql_addr":"10.0.0.1:3307"`, `members[2].mysql_addr`},
		{"wildcard advertised", `"grpc_addr":"10.0.0.1:17011"`, `"grpc_addr":"0.0.0.0:17011"`, `members[0].grpc_addr`},
		{"no port", `"proxy_addr":"10.0.0.3:3307"`, `"proxy_addr":"10.0.0.3"`, `members[2].proxy_addr`},
		{"listen clash", `"id":2,`, `"id":2,"grpc_listen":"0.0.0.0:17012",`, `repl_addr`},
		{"listen clash http", `"id":2,`, `"id":2,"http_addr":"10.0.0.2:3306",`, `http_addr`},
		{"bad listen", `"id":2,`, `"id":2,"mysql_listen":"3306",`, `mysql_listen`},
		{"remote repl", `"id":2,`, `"id":2,"repl_addr":"10.0.0.2:17012",`, `repl_addr`},
	}
	for _, tc := range cases {
		body := strings.Replace(multiHost, tc.from, tc.to, 1)
		_, err := loadBody(t, body)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `key "`+tc.key+`"`) {
			t.Errorf("%s: want an error naming key %s, got %v", tc.name, tc.key, err)
		}
	}
}

func TestSourceIP(t *testing.T) {
	for addr, want := range map[string]string{
		"10.0.0.2:3307": "10.0.0.2", "127.0.0.1:3307": "127.0.0.1",
		"0.0.0.0:3307": "<nil>", ":3307": "<nil>", "[::]:3307": "<nil>", "localhost:3307": "<nil>", "bad": "<nil>",
	} {
		if got := SourceIP(addr).String(); got != want {
			t.Errorf("%s: got %s, want %s", addr, got, want)
		}
	}
}
