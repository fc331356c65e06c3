package main

import (
	"bytes"
	"strings"
	"testing"

	"phxgo/binlogd/localcluster"
)

// TestPrintUp: the printout names every node's role, the app login, the
// outside replicas' account with a CHANGE MASTER line for a data node's
// replication endpoint (over TLS when the cluster has it), and the status
// command; a witness gets no proxy or MariaDB address.
func TestPrintUp(t *testing.T) {
	info := localcluster.Info{AppUser: "app", AppPass: "apppw", ReplUser: "phxgo_repl", ReplPass: "replpw", Nodes: []localcluster.NodeInfo{
		{ID: 1, Voter: true, ProxyAddr: "127.0.0.1:17013", MySQLAddr: "127.0.0.1:17010", BinlogdAddr: "127.0.0.1:17011", ReplAddr: "127.0.0.1:17012"},
		{ID: 2, Voter: true, Witness: true, BinlogdAddr: "127.0.0.1:17021", ReplAddr: "127.0.0.1:17022"},
		{ID: 3, Voter: false, ProxyAddr: "127.0.0.1:17033", MySQLAddr: "127.0.0.1:17030", BinlogdAddr: "127.0.0.1:17031", ReplAddr: "127.0.0.1:17032"},
	}}
	var b bytes.Buffer
	printUp(&b, info, 1, 4.2, "/c/tls")
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"3 nodes, master is node 1",
		"node 1: voter   proxy 127.0.0.1:17013",
		"node 2: witness (binlogd only)",
		"node 3: learner proxy 127.0.0.1:17033",
		"mariadb -h127.0.0.1 -P17013 -uapp -papppw",
		"account phxgo_repl / replpw",
		"MASTER_HOST='127.0.0.1', MASTER_PORT=17012, MASTER_USER='phxgo_repl', MASTER_PASSWORD='replpw', MASTER_USE_GTID=slave_pos, MASTER_SSL=1, MASTER_SSL_CA='/c/tls/ca.crt', MASTER_SSL_VERIFY_SERVER_CERT=1",
		"cluster status -addr 127.0.0.1:17011 -tls-dir /c/tls",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("printout lacks %q", want)
		}
	}
	if strings.Contains(out, "17022") {
		t.Error("the witness's replication endpoint is offered (it serves none)")
	}
	b.Reset()
	info.ReplUser, info.ReplPass = "", ""
	printUp(&b, info, 1, 1, "")
	if strings.Contains(b.String(), "outside replicas") || strings.Contains(b.String(), "MASTER_SSL") || !strings.Contains(b.String(), "-insecure") {
		t.Errorf("without a repl account and TLS:\n%s", b.String())
	}
}
