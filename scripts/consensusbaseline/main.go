// Command consensusbaseline is the other side of the side-by-side
// consensus comparison (scripts/bench-consensus.sh): -system raft runs three
// hashicorp/raft nodes in one process (TCP transports on loopback,
// raft-boltdb stores, fsync on) and Apply; -system etcd runs a 3-member
// embedded etcd (fsync on) and Put through clientv3. Both run a
// closed-loop load of -clients writers with -value byte commands and
// print the same last line as cmd/paxosbench:
//
//	commits_per_s=<n> p50_ms=<n> p99_ms=<n>
//
// It lives in its own module so phxgo itself imports no consensus library.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

type fsm struct{ n atomic.Uint64 }

func (f *fsm) Apply(*raft.Log) any                 { f.n.Add(1); return nil }
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) { return snap{}, nil }
func (f *fsm) Restore(rc io.ReadCloser) error      { return rc.Close() }

type snap struct{}

func (snap) Persist(s raft.SnapshotSink) error { return s.Close() }
func (snap) Release()                          {}

func main() {
	clients := flag.Int("clients", 64, "closed-loop writers")
	seconds := flag.Float64("seconds", 10, "measured duration")
	value := flag.Int("value", 256, "command size in bytes")
	nodes := flag.Int("nodes", 3, "cluster size")
	system := flag.String("system", "raft", "raft (hashicorp/raft + raft-boltdb) or etcd (embedded etcd)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("consensusbaseline: ")

	dir, err := os.MkdirTemp("", "consensusbaseline-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	var apply func(c int) error
	var stop func()
	switch *system {
	case "raft":
		leader, shutdown := startRaft(dir, *nodes)
		cmd := make([]byte, *value)
		apply = func(int) error { return leader.Apply(cmd, 5*time.Second).Error() }
		stop = shutdown
	case "etcd":
		put, shutdown := startEtcd(dir, *nodes)
		v := make([]byte, *value)
		apply = func(c int) error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return put(ctx, fmt.Sprintf("k%d", c), v)
		}
		stop = shutdown
	default:
		log.Fatalf("-system %q: want raft or etcd", *system)
	}
	run(apply, *clients, *seconds)
	stop()
}

func startRaft(dir string, nodes int) (*raft.Raft, func()) {

	var rafts []*raft.Raft
	var servers []raft.Server
	var transports []*raft.NetworkTransport
	for i := 1; i <= nodes; i++ {
		tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, 5*time.Second, io.Discard)
		if err != nil {
			log.Fatal(err)
		}
		transports = append(transports, tr)
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprint(i)), Address: tr.LocalAddr()})
	}
	for i := 1; i <= nodes; i++ {
		d := filepath.Join(dir, fmt.Sprint(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			log.Fatal(err)
		}
		store, err := raftboltdb.NewBoltStore(filepath.Join(d, "raft.db"))
		if err != nil {
			log.Fatal(err)
		}
		snaps, err := raft.NewFileSnapshotStore(d, 1, io.Discard)
		if err != nil {
			log.Fatal(err)
		}
		cfg := raft.DefaultConfig()
		cfg.LocalID = raft.ServerID(fmt.Sprint(i))
		cfg.Logger = hclog.NewNullLogger()
		r, err := raft.NewRaft(cfg, &fsm{}, store, store, snaps, transports[i-1])
		if err != nil {
			log.Fatal(err)
		}
		if i == 1 {
			if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
				log.Fatal(err)
			}
		}
		rafts = append(rafts, r)
	}
	var leader *raft.Raft
	for deadline := time.Now().Add(30 * time.Second); leader == nil; {
		for _, r := range rafts {
			if r.State() == raft.Leader {
				leader = r
			}
		}
		if time.Now().After(deadline) {
			log.Fatal("no leader after 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return leader, func() {
		for _, r := range rafts {
			_ = r.Shutdown().Error()
		}
	}
}

func run(apply func(c int) error, clients int, seconds float64) {
	var (
		mu    sync.Mutex
		lats  []time.Duration
		fails atomic.Int64
		wg    sync.WaitGroup
	)
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(end) {
				t := time.Now()
				if err := apply(c); err != nil {
					fails.Add(1)
					continue
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lats = append(lats, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if len(lats) == 0 {
		log.Fatalf("no commits (%d failures)", fails.Load())
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	q := func(p float64) float64 { return float64(lats[int(p*float64(len(lats)-1))].Microseconds()) / 1000 }
	fmt.Printf("commits_per_s=%.0f p50_ms=%.2f p99_ms=%.2f\n", float64(len(lats))/el.Seconds(), q(0.50), q(0.99))
}
