package main

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	pb "phxgo/proto"
)

// A status with every field set, so a key that marshals from a zero value
// cannot hide a type.
func fullStatus() *pb.NodeStatus {
	return &pb.NodeStatus{
		NodeId: 2, Role: pb.Role_ROLE_REPLICA, MasterId: 1, LeaseVersion: 9, Epoch: 4,
		LeaseRemainingNs: int64(2345 * time.Millisecond), Ready: true, ChosenIndex: 1 << 40, AppliedIndex: 7,
		LastValidGtid: "0-1-45", MysqlGtidPos: "0-1-40", ReplicationState: "Slave_IO_Running=Yes Slave_SQL_Running=Yes",
		UnsafeReason: "x", PaxosLeader: 1, FirstIndex: 7, FirstGtid: "0-1-3", ReseedNeeded: true, LogBytes: 12345,
		Version: "v0.4.0-993dfab1c2d3", LagTransactions: 5, LagSeconds: 3, MysqlUp: true,
		Members: []*pb.Member{{Id: 1, GrpcAddr: "a:1", MysqlAddr: "a:2", ReplAddr: "a:3", ProxyAddr: "a:4"}},
	}
}

// The JSON types every key must have: "number", "string", "bool", "array",
// "object" or "object|null".
var statusKeys = map[string]string{
	"node_id": "number", "role": "string", "ready": "bool", "master_id": "number", "lease_version": "number",
	"epoch": "number", "lease_remaining_seconds": "number", "lease_valid": "bool", "chosen_index": "number",
	"applied_index": "number", "paxos_leader": "number", "last_valid_gtid": "string", "mysql_gtid_pos": "string",
	"mysql_up": "bool", "replication_state": "string", "lag_transactions": "number", "lag_seconds": "number",
	"unsafe_reason": "string", "first_index": "number", "first_gtid": "string", "reseed_needed": "bool",
	"log_bytes": "number", "version": "string", "members": "array",
	"log_digests": "array", "log_divergences": "array", "log_divergences_seen": "number", "log_odd_ranges": "array",
}

var memberKeys = map[string]string{"id": "number", "grpc_addr": "string", "mysql_addr": "string", "repl_addr": "string", "proxy_addr": "string"}

var clusterKeys = map[string]string{"healthy": "bool", "master_id": "number", "problems": "array",
	"membership_from": "string", "membership_pending": "bool", "members": "array"}

var rowKeys = map[string]string{"id": "number", "grpc_addr": "string", "role": "string", "health": "string", "problems": "array",
	"error": "string", "status": "object|null"}

func jsonType(v any) string {
	switch v.(type) {
	case float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	}
	return "?"
}

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// checkKeys asserts obj has exactly the keys of want, each snake_case and
// of its JSON type.
func checkKeys(t *testing.T, what string, obj map[string]any, want map[string]string) {
	t.Helper()
	for k, v := range obj {
		if !snake.MatchString(k) {
			t.Errorf("%s: key %q is not snake_case", what, k)
		}
		w, ok := want[k]
		if !ok {
			t.Errorf("%s: unexpected key %q (add it to the README table and this test)", what, k)
			continue
		}
		if typ := jsonType(v); !strings.Contains("|"+w+"|", "|"+typ+"|") {
			t.Errorf("%s: key %q is a JSON %s, want %s", what, k, typ, w)
		}
	}
	for k := range want {
		if _, ok := obj[k]; !ok {
			t.Errorf("%s: key %q missing", what, k)
		}
	}
}

func decode(t *testing.T, v any) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := writeJSON(&buf, v); err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(buf.Bytes(), &obj); err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	return obj
}

func TestStatusJSONShape(t *testing.T) {
	obj := decode(t, newStatusJSON(fullStatus()))
	checkKeys(t, "status", obj, statusKeys)
	checkKeys(t, "status.members[0]", obj["members"].([]any)[0].(map[string]any), memberKeys)
	// Values, not only types: numbers are numbers, the lease is seconds.
	for k, want := range map[string]any{"chosen_index": float64(1 << 40), "lease_remaining_seconds": 2.345, "lease_valid": true,
		"role": "replica", "first_index": float64(7), "reseed_needed": true, "lag_seconds": float64(3)} {
		if obj[k] != want {
			t.Errorf("%s = %#v, want %#v", k, obj[k], want)
		}
	}
	// A zero status still has every key (stable for scripts), members [] not null.
	zero := decode(t, newStatusJSON(&pb.NodeStatus{}))
	checkKeys(t, "zero status", zero, statusKeys)
}

func TestClusterJSONShape(t *testing.T) {
	st := newStatusJSON(fullStatus())
	v := clusterJSON{MembershipFrom: "127.0.0.1:17011", Members: []clusterRow{
		{ID: 2, GRPCAddr: "b:1", Status: &st},
		{ID: 3, GRPCAddr: "c:1", Error: "connection refused"},
	}}
	judge(&v, lagLimits{seconds: 30})
	obj := decode(t, v)
	checkKeys(t, "cluster", obj, clusterKeys)
	rows := obj["members"].([]any)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		checkKeys(t, "members[]", r.(map[string]any), rowKeys)
		if i == 0 {
			checkKeys(t, "members[0].status", r.(map[string]any)["status"].(map[string]any), statusKeys)
		}
	}
	if rows[1].(map[string]any)["status"] != nil || rows[1].(map[string]any)["health"] != "unreachable" {
		t.Errorf("unreachable row: %v", rows[1])
	}
}

// Every key of both JSON outputs is in the README's tables, spelled as
// the output spells it.
func TestREADMEDocumentsJSONKeys(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []map[string]string{statusKeys, memberKeys, clusterKeys, rowKeys} {
		for k := range set {
			if !bytes.Contains(b, []byte("| `"+k+"`")) {
				t.Errorf("README.md has no table row for key %q", k)
			}
		}
	}
}
