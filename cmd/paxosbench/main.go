// Command paxosbench measures the Multi-Paxos engine: it starts -nodes
// nodes in one process, each with a real gRPC server on loopback and its
// own Badger wal (synced), runs -clients closed-loop proposers of -value
// bytes for -seconds, and prints as its last line
//
//	commits_per_s=<n> p50_ms=<n> p99_ms=<n>
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"phxgo/binlogd/version"
	"phxgo/paxos"
	"phxgo/wal"
)

// counterSM counts applied commands; its snapshot is the count.
type counterSM struct{ n atomic.Uint64 }

func (s *counterSM) Apply(uint64, []byte) any { s.n.Add(1); return nil }
func (s *counterSM) Snapshot() ([]byte, error) {
	return binary.AppendUvarint(nil, s.n.Load()), nil
}
func (s *counterSM) Restore(_ uint64, b []byte) error {
	if len(b) > 0 {
		v, _ := binary.Uvarint(b)
		s.n.Store(v)
	}
	return nil
}

func main() {
	nodes := flag.Int("nodes", 3, "cluster size")
	clients := flag.Int("clients", 64, "closed-loop proposers")
	seconds := flag.Float64("seconds", 10, "measured duration")
	valueSize := flag.Int("value", 256, "command size in bytes")
	target := flag.String("target", "leader", "where clients propose: leader or all (round-robin over nodes)")
	dir := flag.String("dir", "", "parent directory for the wal dirs (default: a fresh temp dir, removed after)")
	window := flag.Int("window", 0, "Config.Window (0: default)")
	linger := flag.Duration("linger", -1, "Config.BatchLinger (-1: default)")
	mem := flag.Bool("mem", false, "use in-memory storage instead of the wal (isolates storage cost)")
	nosync := flag.Bool("nosync", false, "use the wal without fsync (isolates the sync's cost from Badger's)")
	syncs := flag.Int("syncs", 0, "wal.Options.MaxSyncsInFlight (0: the wal's default)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the measured phase")
	memtable := flag.Int("memtable", 0, "wal.Options.MemTableSize in MiB (0: the wal's default)")
	plainSync := flag.Bool("plainsync", false, "wal.Options.PlainSync: fdatasync by system call, not through io_uring")
	lazySync := flag.Int("lazysync", 0, "wal.Options.LazySyncBytes in KiB (0: the wal's default; -1: no bound)")
	thrifty := flag.Bool("thrifty", true, "Config.Thrifty: only a majority votes on each value")
	compactEvery := flag.Duration("compact", 0, "every this often, compact each node's log to its applied index less -keep (0: never), as binlogd's retention does")
	keep := flag.Uint64("keep", 2000, "indexes kept below the applied index by -compact")
	traceFile := flag.String("trace", "", "write an execution trace of the measured phase (go tool trace)")
	timeline := flag.Duration("timeline", 0, "print latency per slice of this length, with each node's memtable rotations, to stderr (0: off)")
	useTLS := flag.Bool("tls", false, "mutual TLS between the nodes with certificate identities, as binlogd runs by default (tls.go)")
	showVersion := flag.Bool("version", false, "print the build and exit")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "paxosbench: unexpected arguments %q (-h for the flags)\n", flag.Args())
		os.Exit(2)
	}
	if *showVersion {
		version.Print(os.Stdout, "paxosbench")
		return
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

	base := *dir
	if base == "" {
		d, err := os.MkdirTemp("", "paxosbench-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		base = d
	}
	peers := map[uint32]string{}
	lis := map[uint32]net.Listener{}
	for i := uint32(1); i <= uint32(*nodes); i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		lis[i], peers[i] = l, l.Addr().String()
	}
	ns := map[uint32]*paxos.Node{}
	wals := map[uint32]*wal.Log{}
	var srvs []*grpc.Server
	var btls *benchTLS
	if *useTLS {
		var err error
		if btls, err = newBenchTLS(base, *nodes); err != nil {
			log.Fatal(err)
		}
	}
	for id, l := range lis {
		cfg := paxos.DefaultConfig()
		cfg.ID, cfg.Peers, cfg.Dir = id, peers, fmt.Sprintf("%s/n%d", base, id)
		if *window > 0 {
			cfg.Window = *window
		}
		cfg.Thrifty = *thrifty
		if *linger >= 0 {
			cfg.BatchLinger = *linger
		}
		var opts []paxos.Option
		switch {
		case *mem:
			opts = append(opts, paxos.WithStorage(paxos.NewMemoryStorage()))
		default: // the wal paxos would open, kept for its counters
			w, err := wal.Open(cfg.Dir, wal.Options{NoSync: *nosync, MaxSyncsInFlight: *syncs, MemTableSize: int64(*memtable) << 20, LazySyncBytes: int64(*lazySync) << 10, PlainSync: *plainSync})
			if err != nil {
				log.Fatal(err)
			}
			opts = append(opts, paxos.WithStorage(w))
			wals[id] = w
		}
		opts = append(opts, btls.dialOptions(id)...)
		n, err := paxos.Start(cfg, &counterSM{}, opts...)
		if err != nil {
			log.Fatal(err)
		}
		s := grpc.NewServer(append(btls.serverOptions(id), paxos.GRPCServerOptions(cfg)...)...)
		n.RegisterGRPC(s)
		go s.Serve(l)
		ns[id], srvs = n, append(srvs, s)
	}
	defer func() {
		for _, s := range srvs {
			s.Stop()
		}
		for _, n := range ns {
			n.Stop()
		}
	}()

	// Wait for a leader and one command through the log.
	ctx := context.Background()
	var leader *paxos.Node
	deadline := time.Now().Add(30 * time.Second)
	for leader == nil {
		for _, n := range ns {
			if n.Status().Role == "leader" {
				leader = n
			}
		}
		if time.Now().After(deadline) {
			log.Fatal("no leader elected")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := leader.Barrier(ctx); err != nil {
		log.Fatal(err)
	}
	var targets []*paxos.Node
	if *target == "all" {
		for _, n := range ns {
			targets = append(targets, n)
		}
	} else {
		targets = []*paxos.Node{leader}
	}

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			log.Fatal(err)
		}
		if err := trace.Start(f); err != nil {
			log.Fatal(err)
		}
		defer trace.Stop()
	}
	var (
		mu    sync.Mutex
		lats  []time.Duration
		tl    []sample
		fails atomic.Int64
		wg    sync.WaitGroup
	)
	runCtx, cancel := context.WithTimeout(ctx, time.Duration(*seconds*float64(time.Second)))
	defer cancel()
	walStart := map[uint32]wal.Stats{}
	for id, w := range wals {
		walStart[id] = w.Stats()
	}
	start := time.Now()
	var rotations *rotationLog
	if *timeline > 0 {
		ids := make([]uint32, 0, *nodes)
		for id := uint32(1); id <= uint32(*nodes); id++ {
			ids = append(ids, id)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rotations = watchRotations(runCtx, wals, ids, *timeline)
		}()
	}
	var compactions compactStats
	if *compactEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			compactions = compactLoop(runCtx, ns, *compactEvery, *keep)
		}()
	}
	for c := 0; c < *clients; c++ {
		n := targets[c%len(targets)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			val := make([]byte, *valueSize)
			var mine []time.Duration
			var myTL []sample
			for runCtx.Err() == nil {
				t0 := time.Now()
				_, _, err := n.Propose(runCtx, val)
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						fails.Add(1)
					}
					continue
				}
				end := time.Now()
				mine = append(mine, end.Sub(t0))
				if *timeline > 0 {
					myTL = append(myTL, sample{end.Sub(start), end.Sub(t0)})
				}
			}
			mu.Lock()
			lats = append(lats, mine...)
			tl = append(tl, myTL...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	printTimeline(os.Stderr, tl, *timeline, rotations)
	slices.Sort(lats)
	pct := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		return float64(lats[int(p*float64(len(lats)-1))]) / 1e6
	}
	// Where the syncs go: per node, during the measured phase.
	for id := uint32(1); id <= uint32(*nodes); id++ {
		w := wals[id]
		if w == nil {
			continue
		}
		a, b := walStart[id], w.Stats()
		role := "follower"
		if ns[id] == leader {
			role = "leader"
		}
		fmt.Printf("wal node=%d role=%s saves=%d groups=%d syncs=%d syncs_per_commit=%.2f segments=%d rotations=%d drops=%d drop_ms=%.0f\n", id, role,
			b.Saves-a.Saves, b.Groups-a.Groups, b.Syncs-a.Syncs, float64(b.Syncs-a.Syncs)/float64(max(len(lats), 1)),
			b.Segments-a.Segments, b.Rotations-a.Rotations, b.Drops-a.Drops, (b.DropTime-a.DropTime).Seconds()*1000)
	}
	st := leader.Status()
	fmt.Printf("nodes=%d clients=%d value=%d target=%s commits=%d failed=%d elapsed=%.2fs chosen_index=%d\n",
		*nodes, *clients, *valueSize, *target, len(lats), fails.Load(), elapsed.Seconds(), st.Chosen)
	if *compactEvery > 0 {
		fmt.Println(compactions)
	}
	fmt.Printf("commits_per_s=%.0f p50_ms=%.2f p99_ms=%.2f\n",
		float64(len(lats))/elapsed.Seconds(), pct(0.50), pct(0.99))
}
