package localcluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"phxgo/binlogd/config"
)

// Spec describes a cluster to start.
type Spec struct {
	Dir   string // cluster root; kept across restarts
	Nodes int    // 3 or 5, witnesses included
	// Witnesses are the ids of the nodes that are witnesses: binlogd
	// only, voting on the log, no MariaDB or sqlproxy, never master
	// (config members[].witness). Nodes 3 with Witnesses [3] is two data
	// nodes and a witness (WitnessIDs builds it).
	Witnesses []int
	// Learners are the ids of the nodes that start as learners
	// (config members[].learner): MariaDB, binlogd and sqlproxy like any
	// data node, following the log and serving reads, but never voting
	// and never master. cluster.json marks them "voter": false.
	// RoleIDs numbers voters, witnesses and learners.
	Learners []int
	Hosts    []string // per node host (default 127.0.0.1 for all)
	BasePort int      // node N uses BasePort+10*N+{0..6}
	BinDir   string   // where binlogd and sqlproxy binaries are
	NetNS    string   // run processes inside this network namespace
	// LeaseDuration of the master lease (default 5s).
	LeaseDuration time.Duration
	// Proxy starts a sqlproxy per node (default true via DefaultSpec).
	Proxy bool
	// MySQLExtra are extra my.cnf lines for every node.
	MySQLExtra []string
	// TLSDir holds the cluster's certificates (tls.go); empty: <Dir>/tls.
	// What is missing there is issued at start (a make-test-ca.sh or
	// `binlogd init` directory works as it is).
	TLSDir string
	// InsecureNoTLS runs every link in the clear: binlogd's
	// "insecure_no_tls", sqlproxy -insecure, plain Admin clients.
	InsecureNoTLS bool
	// LogRetention and LogRetentionBytes set binlogd's log_retention and
	// log_retention_bytes (0: binlogd's defaults).
	LogRetention      time.Duration
	LogRetentionBytes int64
	// KeepMySQL runs binlogd with -keep-mysql: a graceful stop leaves
	// MariaDB running for the next binlogd to adopt, as under systemd.
	// Stop and RemoveNode stop it afterwards (binlogd stop-mysql).
	KeepMySQL bool
	// EventHook is binlogd's event_hook for every node: argv of a command
	// run with each event as JSON on stdin; "{node}" in an argument is
	// replaced by the node's id.
	EventHook []string
}

// Port offsets from a node's base port.
const (
	offMySQL = iota
	offGRPC
	offRepl
	offProxy
	offHTTP
	offProxyHTTP
	offProxyRW
)

func (s Spec) host(id int) string {
	if id-1 < len(s.Hosts) && s.Hosts[id-1] != "" {
		return s.Hosts[id-1]
	}
	return "127.0.0.1"
}

func (s Spec) addr(id, off int) string {
	return net.JoinHostPort(s.host(id), strconv.Itoa(s.BasePort+10*id+off))
}

// NodeDir is node id's directory.
func (s Spec) NodeDir(id int) string { return filepath.Join(s.Dir, fmt.Sprintf("node%d", id)) }

func (s Spec) members() []config.Member {
	var ms []config.Member
	for id := 1; id <= s.Nodes; id++ {
		ms = append(ms, s.member(id))
	}
	return ms
}

// IsWitness reports whether node id is a witness (Spec.Witnesses).
func (s Spec) IsWitness(id int) bool { return slices.Contains(s.Witnesses, id) }

// IsLearner reports whether node id is a learner (Spec.Learners).
func (s Spec) IsLearner(id int) bool { return slices.Contains(s.Learners, id) }

// WitnessIDs is the Witnesses of a cluster of data data nodes and
// witnesses witnesses: the witnesses take the ids after the data nodes.
func WitnessIDs(data, witnesses int) []int {
	var ids []int
	for i := 1; i <= witnesses; i++ {
		ids = append(ids, data+i)
	}
	return ids
}

// RoleIDs numbers a cluster of voters voting data nodes, witnesses
// witnesses and learners learners, in that order (make cluster NODES=2
// WITNESSES=1 LEARNERS=1: nodes 1-2 vote with MariaDB, 3 is the witness,
// 4 the learner): the Spec's Nodes, Witnesses and Learners.
func RoleIDs(voters, witnesses, learners int) (nodes int, witnessIDs, learnerIDs []int) {
	for i := 1; i <= learners; i++ {
		learnerIDs = append(learnerIDs, voters+witnesses+i)
	}
	return voters + witnesses + learners, WitnessIDs(voters, witnesses), learnerIDs
}

// member is node id's entry, as every node's config lists it.
func (s Spec) member(id int) config.Member {
	if s.IsWitness(id) {
		return config.Member{ID: uint32(id), GRPCAddr: s.addr(id, offGRPC), Witness: true}
	}
	m := config.Member{ID: uint32(id), GRPCAddr: s.addr(id, offGRPC), MySQLAddr: s.addr(id, offMySQL), Learner: s.IsLearner(id)}
	if s.Proxy {
		m.ProxyAddr = s.addr(id, offProxy)
	}
	return m
}

func (s Spec) validate() error {
	if s.Dir == "" || s.BinDir == "" {
		return fmt.Errorf("localcluster: Dir and BinDir are required")
	}
	if s.Nodes < 1 || s.Nodes > 9 {
		return fmt.Errorf("localcluster: Nodes=%d, want 1..9", s.Nodes)
	}
	for _, id := range s.Learners {
		if s.IsWitness(id) {
			return fmt.Errorf("localcluster: node %d is both a witness and a learner: a learner runs MariaDB and never votes, a witness votes and runs none", id)
		}
	}
	data := 0
	for id := 1; id <= s.Nodes; id++ {
		if !s.IsWitness(id) {
			data++
		}
	}
	if data == 0 {
		return fmt.Errorf("localcluster: Witnesses=%v of Nodes=%d: at least one node must run MariaDB", s.Witnesses, s.Nodes)
	}
	if s.BasePort <= 0 || s.BasePort+10*s.Nodes+10 > 65535 {
		return fmt.Errorf("localcluster: BasePort=%d out of range", s.BasePort)
	}
	for _, b := range []string{"binlogd", "sqlproxy"} {
		if b == "sqlproxy" && !s.Proxy {
			continue
		}
		if _, err := os.Stat(filepath.Join(s.BinDir, b)); err != nil {
			return fmt.Errorf("localcluster: %s binary not found in %s (run make build): %w", b, s.BinDir, err)
		}
	}
	return nil
}

// writeConfigs creates node configs and the credentials file when missing;
// existing ones are kept so a restarted cluster keeps its secrets.
func (s Spec) writeConfigs() error {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	cred := filepath.Join(s.Dir, "credentials.json")
	if _, err := os.Stat(cred); os.IsNotExist(err) {
		if err := config.SaveCredentials(cred, config.Credentials{
			CaptureUser: "phxgo_capture", CapturePassword: secret(),
			AppUser: "app", AppPassword: secret(), // printed by `make cluster`, kept in cluster.json (0600)
			ProxyUser: "phxgo_proxy", ProxyPassword: secret(),
			ReplUser: config.DefaultReplUser, ReplPassword: secret(), // outside replicas; in cluster.json too
		}); err != nil {
			return err
		}
	}
	cr, err := config.LoadCredentials(cred)
	if err != nil {
		return err
	}
	// A cluster made before outside replicas gets their account at its
	// next start (the nodes read credentials when they start).
	if cr.AddReplAccount() {
		if err := config.SaveCredentials(cred, cr); err != nil {
			return err
		}
	}
	if err := writeSecret(filepath.Join(s.Dir, "proxy-password"), []byte(cr.ProxyPassword+"\n")); err != nil {
		return err
	}
	for id := 1; id <= s.Nodes; id++ {
		if err := s.writeNodeConfig(id, s.members(), false); err != nil {
			return err
		}
	}
	return nil
}

// writeNodeConfig writes node id's binlogd.json listing members (join:
// a node added to a running cluster).
func (s Spec) writeNodeConfig(id int, members []config.Member, join bool) error {
	lease := s.LeaseDuration
	if lease == 0 {
		lease = 5 * time.Second
	}
	dir := s.NodeDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := s.ensureTLS(id); err != nil {
		return err
	}
	c := config.Config{
		ID: uint32(id), Dir: dir, MySQLDir: filepath.Join(dir, "mysql"),
		Members: members, Join: join, SuperviseMySQL: !s.IsWitness(id),
		CredentialsFile:   filepath.Join(s.Dir, "credentials.json"),
		ReplAddr:          s.addr(id, offRepl), // node-local; distinct per node as they share a host
		LeaseDuration:     config.Duration{Duration: lease},
		DriftMargin:       config.Duration{Duration: lease / 10},
		HTTPAddr:          s.addr(id, offHTTP),
		Pprof:             true, // a local cluster is for development
		MySQLExtra:        s.MySQLExtra,
		Security:          s.security(id),
		LogRetention:      config.Duration{Duration: s.LogRetention},
		LogRetentionBytes: s.LogRetentionBytes,
	}
	for _, a := range s.EventHook {
		c.EventHook = append(c.EventHook, strings.ReplaceAll(a, "{node}", strconv.Itoa(id)))
	}
	return c.Save(filepath.Join(dir, "binlogd.json"))
}

func secret() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
