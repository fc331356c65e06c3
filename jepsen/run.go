package jepsen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"phxgo/jepsen/checker"
	"phxgo/jepsen/history"
	"phxgo/jepsen/nemesis"
	"phxgo/jepsen/netns"
	"phxgo/jepsen/report"
	"phxgo/jepsen/workload"
)

// Run performs one test: namespace, cluster, workload under faults, heal,
// recovery, final reads, checks. It always cleans up the namespace, the
// cluster's processes and its scratch directory, and writes
// history.jsonl and results.json to cfg.OutDir when it got that far. The
// returned Results is non-nil once the run started; err reports setup
// failures (the Results is then Unknown).
func Run(ctx context.Context, cfg Config, launch Launcher) (res *Results, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if launch == nil {
		return nil, ErrNoLauncher
	}
	kinds, _ := nemesis.ParseKinds(cfg.Nemesis)
	w, err := workload.New(cfg.Workload, cfg.Workloads)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, err
	}
	if removed, err := netns.RemoveStale(ctx, NSPrefix); err != nil {
		slog.Warn("jepsen: removing stale namespaces", "err", err)
	} else if len(removed) > 0 {
		slog.Info("jepsen: removed stale namespaces", "names", removed)
	}
	if len(kinds) > 0 {
		if err := netns.EnsureIPTables(ctx); err != nil {
			return nil, err
		}
	}
	ns, err := netns.Create(ctx, fmt.Sprintf("%s%d", NSPrefix, os.Getpid()))
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := ns.Close(); cerr != nil {
			slog.Warn("jepsen: deleting namespace", "err", cerr)
		}
	}()
	registerDialer(ns)
	removeStaleScratch()
	scratch, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", NSPrefix, os.Getpid()))
	if err != nil {
		return nil, err
	}
	defer func() {
		if cfg.KeepData && (res == nil || res.Valid != checker.Valid) {
			slog.Info("jepsen: kept the cluster's data", "dir", scratch)
			_ = os.WriteFile(filepath.Join(scratch, keepMarker), nil, 0o644)
			return
		}
		os.RemoveAll(scratch)
	}()
	logDir := filepath.Join(cfg.OutDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}

	spec := LaunchSpec{
		Dir: scratch, LogDir: logDir, NetNS: ns.Name, Hosts: Hosts(cfg.Nodes), Nodes: cfg.Nodes,
		LeaseDuration: cfg.Lease, BinDir: cfg.BinDir, Command: ns.Command, Dial: ns.DialContext,
	}
	spec.Witnesses, spec.Learners = cfg.RoleIDs()
	slog.Info("jepsen: launching cluster", "nodes", cfg.Nodes, "witnesses", spec.Witnesses, "learners", spec.Learners, "netns", ns.Name, "dir", scratch)
	c, err := launch(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	defer func() {
		if serr := c.Stop(); serr != nil {
			slog.Warn("jepsen: stopping cluster", "err", serr)
		}
	}()
	if err := waitHealthy(ctx, c, 3*time.Minute); err != nil {
		return nil, err
	}
	if nodes := dataNodes(c); cfg.RWSplit && (len(nodes) == 0 || nodes[0].RWSplitAddr == "") {
		return nil, fmt.Errorf("%w: -rwsplit: the cluster has no read/write-split port", ErrConfig)
	}

	hf, err := os.Create(filepath.Join(cfg.OutDir, "history.jsonl"))
	if err != nil {
		return nil, err
	}
	defer hf.Close()
	rec := history.NewRecorder(hf)
	r := &run{cfg: cfg, c: c, w: w, rec: rec, ns: ns}
	if err := r.setup(ctx); err != nil {
		return nil, err
	}

	// Workload and nemesis for cfg.Time.
	var part nemesis.Partitioner
	if len(kinds) > 0 {
		part = ns
	}
	nem := nemesis.New(c, part, cfg.Seed, cfg.Lease)
	sched := nemesis.DefaultSchedule(kinds, cfg.Lease)
	if cfg.Schedule != nil {
		sched = *cfg.Schedule
		sched.Kinds = kinds
	}
	phase, cancel := context.WithTimeout(ctx, cfg.Time)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		nem.Run(phase, sched, rec)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		progress(phase, rec, cfg.Time)
	}()
	r.clients(phase)
	cancel()
	wg.Wait()

	res = &Results{OutDir: cfg.OutDir, Workload: cfg.Workload, Nemesis: cfg.Nemesis, Seed: cfg.Seed, Nodes: cfg.Nodes,
		Witnesses: spec.Witnesses, Learners: spec.Learners, latencyBound: cfg.LatencyBound}
	interrupted := ctx.Err() != nil
	if !interrupted {
		// Heal everything, measure recovery, take the final reads.
		healStart := time.Now()
		if err := nem.HealAll(ctx); err != nil {
			slog.Warn("jepsen: heal all", "err", err)
		}
		if err := waitHealthy(ctx, c, 3*time.Minute); err != nil {
			res.NotRecovered = err.Error()
		} else {
			res.RecoverySeconds = time.Since(healStart).Seconds()
		}
		r.finals(ctx, 2*time.Minute)
	}
	if rs, ok := c.(interface{ Reseeded() []string }); ok {
		res.Reseeded = rs.Reseeded()
	}
	res.fill(rec.Ops(), w, cfg.OutDir, interrupted)
	if err := res.write(filepath.Join(cfg.OutDir, "results.json")); err != nil {
		return res, err
	}
	// The pictures and page only inform; a failure to draw them is logged.
	if err := report.Write(cfg.OutDir, rec.Ops(), res.reportRun()); err != nil {
		slog.Warn("jepsen: report", "err", err)
	}
	if err := rec.Err(); err != nil {
		return res, fmt.Errorf("history.jsonl: %w", err)
	}
	return res, nil
}

// run holds one test's moving parts.
type run struct {
	cfg Config
	c   Cluster
	w   workload.Workload
	rec *history.Recorder
	ns  *netns.NS
}

func waitHealthy(ctx context.Context, c Cluster, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := c.WaitHealthy(wctx); err != nil {
		return fmt.Errorf("%w after %s: %w", ErrNotHealthy, d, err)
	}
	return nil
}

// dataNodes are the nodes with MariaDB and a proxy: the clients' entry
// points. A witness has neither. A learner's proxy is one like any:
// its linearizable port sends every statement to the master (so every
// workload may use it), and its read/write-split port may serve reads
// from the learner's MariaDB as from any replica's, which only the
// append workload's -rwsplit check accepts (Config.RWSplit).
func dataNodes(c Cluster) []Node {
	var out []Node
	for _, n := range c.Nodes() {
		if n.HasMariaDB() {
			out = append(out, n)
		}
	}
	return out
}

// setup creates the schema through node 1's proxy, retrying while the
// cluster settles.
func (r *run) setup(ctx context.Context) error {
	nodes := dataNodes(r.c)
	if len(nodes) == 0 {
		return fmt.Errorf("%w: cluster has no nodes", ErrConfig)
	}
	deadline := time.Now().Add(time.Minute)
	var last error
	for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		db, err := openDB(nodes[i%len(nodes)], r.cfg.OpTimeout)
		if err != nil {
			return err
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		last = r.w.Setup(sctx, db)
		cancel()
		db.Close()
		if last == nil {
			return nil
		}
		slog.Info("jepsen: setup retry", "err", last)
		time.Sleep(time.Second)
	}
	return fmt.Errorf("workload setup: %w", errors.Join(last, ctx.Err()))
}

// clients runs cfg.Concurrency clients, spread over the data nodes
// (learners included), until ctx ends.
func (r *run) clients(ctx context.Context) {
	nodes := dataNodes(r.c)
	var interval time.Duration
	if r.cfg.Rate > 0 {
		interval = time.Duration(float64(r.cfg.Concurrency) / r.cfg.Rate * float64(time.Second))
	}
	var wg sync.WaitGroup
	for i := 0; i < r.cfg.Concurrency; i++ {
		n := r.port(nodes[i%len(nodes)])
		db, err := openDB(n, r.cfg.OpTimeout)
		if err != nil {
			slog.Error("jepsen: client", "err", err)
			continue
		}
		cl := &client{
			id: i, stride: r.cfg.Concurrency, node: n, db: db, w: r.w, rec: r.rec,
			rng:      rand.New(rand.NewPCG(r.cfg.Seed, uint64(i)+1)),
			interval: interval, timeout: r.cfg.OpTimeout,
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.run(ctx)
			cl.db.Close()
		}()
	}
	wg.Wait()
}

// port returns n with ProxyAddr the port the clients use (-rwsplit: the
// read/write-split one; the final reads are transactions, served by the
// master there too).
func (r *run) port(n Node) Node {
	if r.cfg.RWSplit {
		n.ProxyAddr = n.RWSplitAddr
	}
	return n
}

// finalProcess numbers the processes of the final reads.
const finalProcess = 1_000_000

// finals runs the workload's final reads, each retried (rotating nodes)
// until ok or the deadline.
func (r *run) finals(ctx context.Context, d time.Duration) {
	nodes := dataNodes(r.c)
	deadline := time.Now().Add(d)
	for _, op := range r.w.Finals() {
		for i := 0; ctx.Err() == nil; i++ {
			n := r.port(nodes[i%len(nodes)])
			db, err := openDB(n, r.cfg.OpTimeout)
			if err != nil {
				return
			}
			cl := &client{id: finalProcess + i, stride: 1, node: n, db: db, w: r.w, rec: r.rec, timeout: r.cfg.OpTimeout}
			done := cl.do(ctx, op)
			db.Close()
			if done.Outcome == history.OK || time.Now().After(deadline) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// Results is results.json.
type Results struct {
	Valid           checker.Validity `json:"valid"`
	OutDir          string           `json:"out_dir"`
	Workload        string           `json:"workload"`
	Nemesis         string           `json:"nemesis"`
	Seed            uint64           `json:"seed"`
	Nodes           int              `json:"nodes"`
	Witnesses       []int            `json:"witnesses,omitempty"` // ids (Config.Witnesses)
	Learners        []int            `json:"learners,omitempty"`  // ids (Config.Learners)
	Ops             int              `json:"ops"`
	OK              int              `json:"ok"`
	Fail            int              `json:"fail"`
	Info            int              `json:"info"`
	Faults          int              `json:"faults"`
	RecoverySeconds float64          `json:"recovery_s"`
	NotRecovered    string           `json:"not_recovered,omitempty"`
	Interrupted     bool             `json:"interrupted,omitempty"`
	Checks          []checker.Result `json:"checks"`
	// Reseeded: nodes the harness reseeded, as an operator would, because
	// their MariaDB datadir could not be recovered (phxcluster reseed.go).
	Reseeded     []string      `json:"reseeded,omitempty"`
	latencyBound time.Duration // Config.LatencyBound
}

// removeStaleScratch deletes scratch directories (TMPDIR/phxjepsen-<pid>-*)
// left by runs whose process is gone (killed before its cleanup ran).
// Directories kept on purpose (-keep) carry a keep marker and stay.
func removeStaleScratch() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), NSPrefix+"*-*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), NSPrefix)
		pid, err := strconv.Atoi(rest[:strings.IndexByte(rest, '-')])
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, keepMarker)); err == nil {
			continue
		}
		slog.Info("jepsen: removing stale scratch directory", "dir", d)
		os.RemoveAll(d)
	}
}

// keepMarker marks a scratch directory kept by -keep.
const keepMarker = "KEPT-BY-JEPSEN"
