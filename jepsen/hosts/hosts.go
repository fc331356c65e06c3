package hosts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"phxgo/binlogd/config"
	"phxgo/jepsen/netns"
	"phxgo/jepsen/sdunit"
)

// ErrUnsupported: this machine cannot run the scenario (not root, no ip
// or nsenter, no cgroup v2, no unit user). Tests skip on it.
var ErrUnsupported = errors.New("hosts scenario unsupported here")

// Options configure a run.
type Options struct {
	BinDir  string        // bin/binlogd, bin/sqlproxy (make build)
	RepoDir string        // the checkout: scripts/systemd/*.service, scripts/seed-node.sh
	WorkDir string        // the run's files (hosts' /etc, /var/lib, logs); must exist
	Lease   time.Duration // binlogd init -lease (default 3s)
	Logf    func(format string, args ...any)
}

// Result is what the last line reports.
type Result struct {
	Nodes     int           // hosts that ran a node
	Failover  time.Duration // app's gap: last ack before the cut to first after
	Added     int           // hosts added with the add-node steps
	Removed   int           // members removed
	Unsafe    int           // nodes ever seen UNSAFE or needing a reseed
	Lost      int           // acknowledged rows missing on some node at the end
	Acked     int           // rows the app had acknowledged
	Seed      string        // how the added host was seeded (reseed, cold-copy)
	Took      time.Duration // the whole run
	Pass      bool
	Failure   error // why not Pass
	writesVia uint32
}

// Line is the run's last line: hosts_test=pass nodes=4 failover_s=... .
func (r Result) Line() string {
	v := "fail"
	if r.Pass {
		v = "pass"
	}
	return fmt.Sprintf("hosts_test=%s nodes=%d failover_s=%.1f added=%d removed=%d unsafe=%d lost=%d",
		v, r.Nodes, r.Failover.Seconds(), r.Added, r.Removed, r.Unsafe, r.Lost)
}

// Supported reports nil when the scenario can run here, else why not.
func Supported() error {
	if err := netns.Supported(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	if sdunit.CgroupV2() == "" {
		return fmt.Errorf("%w: no cgroup v2 mount (the units run in cgroups as under systemd)", ErrUnsupported)
	}
	for _, tool := range []string{"nsenter", "mariadbd", "mariadb-install-db"} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err2 := os.Stat("/usr/sbin/" + tool); err2 != nil {
				return fmt.Errorf("%w: %s not found", ErrUnsupported, tool)
			}
		}
	}
	return nil
}

// Run is the whole scenario (doc.go). The Result is filled as far as the
// run got; err says why it stopped early.
func Run(ctx context.Context, o Options) (res Result, err error) {
	began := time.Now()
	if o.Lease == 0 {
		o.Lease = 3 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	defer func() {
		res.Took = time.Since(began)
		res.Failure = err
		res.Pass = err == nil && res.Unsafe == 0 && res.Lost == 0 && res.Added == 1 && res.Removed == 1
	}()
	if err := Supported(); err != nil {
		return res, err
	}
	l, err := newLab(ctx, o)
	if err != nil {
		return res, err
	}
	defer l.close()
	s := &scenario{l: l, res: &res, unsafe: map[uint32]string{}}
	err = s.run(ctx)
	res.Unsafe = len(s.unsafe)
	for id, why := range s.unsafe {
		o.Logf("node %d was seen UNSAFE: %s", id, why)
	}
	return res, err
}

// scenario is one run's state.
type scenario struct {
	l      *lab
	res    *Result
	w      *writer
	mu     sync.Mutex
	unsafe map[uint32]string // nodes seen UNSAFE or RESEED, with why
}

func (s *scenario) run(ctx context.Context) error {
	l := s.l
	step := func(format string, args ...any) { l.logf("== "+format, args...) }

	step("three hosts from binlogd init, each in its own namespace")
	for id := uint32(1); id <= 3; id++ {
		if _, err := l.addHost(ctx, id); err != nil {
			return err
		}
	}
	hostsFlag := strings.Join([]string{l.hosts[1].addr, l.hosts[2].addr, l.hosts[3].addr}, ",")
	out, err := l.operator(ctx, append([]string{"init", "-hosts", hostsFlag, "-lease", s.l.o.Lease.String()}, l.initPaths()...)...)
	if err != nil {
		return err
	}
	l.logf("binlogd init:\n%s", out)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for id := uint32(1); id <= 3; id++ {
		if err := l.install(l.hosts[id]); err != nil {
			return err
		}
		// `systemctl start` on three hosts at once: READY needs a master.
		wg.Add(1)
		go func() { defer wg.Done(); errs[id] = l.start(ctx, l.hosts[id], binlogdUnit) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for id := uint32(1); id <= 3; id++ {
		if err := l.start(ctx, l.hosts[id], proxyUnit); err != nil {
			return err
		}
	}
	s.res.Nodes = 3
	master, err := s.awaitHealthy(ctx, 3, 2*time.Minute)
	if err != nil {
		return err
	}
	for id := uint32(1); id <= 3; id++ {
		if err := l.checkPriority(l.hosts[id]); err != nil {
			return err
		}
	}

	step("the app writes through the proxy of a host that is not the master (node %d)", master)
	via := l.hosts[master%3+1]
	s.res.writesVia = via.id
	cred, err := config.LoadCredentials(l.initTo + "/credentials.json")
	if err != nil {
		return err
	}
	db, err := l.appDB(via.proxyAddr(), cred.AppUser, cred.AppPassword)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := retry(ctx, 30*time.Second, func() error {
		_, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS app_hosts")
		return err
	}); err != nil {
		return fmt.Errorf("create the app's database through node %d's proxy: %w", via.id, err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS app_hosts.rows (id BIGINT PRIMARY KEY, at BIGINT) ENGINE=InnoDB"); err != nil {
		return err
	}
	s.w = startWriter(db, l.logf)
	defer func() {
		select {
		case <-s.w.done:
		default:
			s.w.stop()
		}
	}()
	if err := s.w.awaitAcks(ctx, 50, time.Minute); err != nil {
		return err
	}

	step("cut the master's host (node %d) off the network", master)
	old := l.hosts[master]
	cut := time.Now()
	if err := l.br.SetPort(ctx, old.ns, false); err != nil {
		return err
	}
	if err := s.w.awaitAcks(ctx, 20, time.Minute); err != nil {
		return fmt.Errorf("no new master served the app after the cut: %w", err)
	}
	gap := s.w.outage(cut, time.Now())
	s.res.Failover = gap
	others := without(l.running(), old)
	v, err := l.status(ctx, others)
	if err != nil {
		return err
	}
	if v.MasterID == 0 || v.MasterID == old.id {
		return fmt.Errorf("after the cut the cluster says master %d (old %d)", v.MasterID, old.id)
	}
	where := "a replica's host: it hops to the new master's proxy"
	if v.MasterID == via.id {
		where = "the new master's host"
	}
	l.logf("node %d is master; the app waited %.1fs; its proxy (node %d) is on %s; %s", v.MasterID, gap.Seconds(), via.id, where, s.w)
	step("reconnect node %d", old.id)
	if err := l.br.SetPort(ctx, old.ns, true); err != nil {
		return err
	}
	if master, err = s.awaitHealthy(ctx, 3, 2*time.Minute); err != nil {
		return err
	}

	step("add host 4 with the add-node steps")
	h4, err := l.addHost(ctx, 4)
	if err != nil {
		return err
	}
	src := s.replicaOtherThan(master, via.id)
	how, err := l.addNode(ctx, h4, src, l.hosts[master])
	s.res.Seed = how
	if err != nil {
		return err
	}
	s.res.Added, s.res.Nodes = 1, 4
	if master, err = s.awaitHealthy(ctx, 4, 3*time.Minute); err != nil {
		return err
	}
	if err := s.w.awaitAcks(ctx, 10, time.Minute); err != nil {
		return err
	}

	gone := s.replicaOtherThan(master, via.id, 4)
	step("remove member %d", gone.id)
	if _, err := l.operator(ctx, "members", "remove", "-addr", l.hosts[master].grpc(), "-id", fmt.Sprint(gone.id), "-tls-dir", l.initTo); err != nil {
		return err
	}
	if err := l.stop(ctx, gone); err != nil {
		return err
	}
	s.res.Removed = 1
	if master, err = s.awaitHealthy(ctx, 3, time.Minute); err != nil {
		return err
	}

	step("rolling restart of every host through its units")
	for _, h := range l.running() {
		if err := l.stop(ctx, h); err != nil {
			return fmt.Errorf("stop node %d: %w", h.id, err)
		}
		// The others serve meanwhile (not visible to the app while its
		// own proxy's host is the one down).
		if h.id != via.id {
			if err := s.w.awaitAcks(ctx, 5, 2*time.Minute); err != nil {
				return fmt.Errorf("with node %d stopped: %w", h.id, err)
			}
		}
		if err := l.start(ctx, h, binlogdUnit); err != nil {
			return err
		}
		if err := l.start(ctx, h, proxyUnit); err != nil {
			return err
		}
		if master, err = s.awaitHealthy(ctx, 3, 2*time.Minute); err != nil {
			return fmt.Errorf("after restarting node %d: %w", h.id, err)
		}
		if err := s.w.awaitAcks(ctx, 5, 2*time.Minute); err != nil {
			return fmt.Errorf("after restarting node %d: %w", h.id, err)
		}
		l.logf("node %d restarted; master %d; %s", h.id, master, s.w)
	}
	s.w.stop()
	s.res.Acked = s.w.count()

	step("every acknowledged row on every node")
	return s.checkRows(ctx, cred.AppUser, cred.AppPassword)
}

// awaitHealthy polls `binlogd cluster status` from the operator's host
// until it exits 0 with n members, noting any member seen UNSAFE.
func (s *scenario) awaitHealthy(ctx context.Context, n int, within time.Duration) (uint32, error) {
	deadline := time.Now().Add(within)
	var last string
	for {
		v, err := s.l.status(ctx, s.l.running())
		if v != nil {
			for _, m := range v.Members {
				if m.Health == "unsafe" || m.Health == "reseed_needed" || (m.Status != nil && (m.Status.UnsafeReason != "" || m.Status.ReseedNeeded)) {
					s.mu.Lock()
					s.unsafe[m.ID] = fmt.Sprintf("health %s", m.Health)
					s.mu.Unlock()
				}
			}
			if v.Healthy && len(v.Members) == n {
				return v.MasterID, nil
			}
			last = fmt.Sprintf("%d members, problems %v", len(v.Members), v.Problems)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("cluster not healthy with %d members within %v: %s", n, within, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// replicaOtherThan picks a running host that is none of ids.
func (s *scenario) replicaOtherThan(ids ...uint32) *host {
	for _, h := range s.l.running() {
		if !slices.Contains(ids, h.id) {
			return h
		}
	}
	return nil
}

// checkRows waits until every running node's MariaDB holds every
// acknowledged row (replicas may still be applying), and counts the rows
// still missing on some node when the wait ends.
func (s *scenario) checkRows(ctx context.Context, user, pass string) error {
	ids := s.w.ackedIDs()
	lost := map[int64]bool{}
	for _, h := range s.l.running() {
		db, err := s.l.appDB(h.mysql(), user, pass)
		if err != nil {
			return err
		}
		var miss []int64
		err = retry(ctx, time.Minute, func() error {
			var err error
			if miss, err = missing(ctx, db, ids); err != nil {
				return err
			}
			if len(miss) > 0 {
				return fmt.Errorf("node %d lacks %d acknowledged rows (first %d)", h.id, len(miss), miss[0])
			}
			return nil
		})
		db.Close()
		for _, id := range miss {
			lost[id] = true
		}
		if err != nil && miss == nil {
			return fmt.Errorf("read node %d's rows: %w", h.id, err)
		}
		s.l.logf("node %d: all %d acknowledged rows present: %v", h.id, len(ids), len(miss) == 0)
	}
	s.res.Lost = len(lost)
	if len(lost) > 0 {
		return fmt.Errorf("%d acknowledged rows lost", len(lost))
	}
	return nil
}

func without(hs []*host, h *host) []*host {
	var out []*host
	for _, x := range hs {
		if x != h {
			out = append(out, x)
		}
	}
	return out
}

// retry calls fn until it succeeds or within passes.
func retry(ctx context.Context, within time.Duration, fn func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
