package hosts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"phxgo/jepsen/netns"
	"phxgo/jepsen/sdunit"
)

// Subnet is the hosts' /24 (first three octets). It exists only inside
// the run's namespaces (no route leads there or out), so it cannot clash
// with a real network.
const Subnet = "10.231.18"

// appHost is the last octet of the application's and operator's host.
const appHost = 200

// host is one machine: a network namespace on the bridge, its files
// (/etc/phxgo/node<id> and /var/lib/phxgo/node<id> stand-ins under the
// run's directory) and its two units while they run.
type host struct {
	id      uint32
	ns      *netns.NS
	addr    string // its address on the bridge
	binlogd *sdunit.Service
	proxy   *sdunit.Service
}

func (h *host) grpc() string  { return h.addr + ":17011" }
func (h *host) mysql() string { return h.addr + ":3306" }
func (h *host) proxyAddr() string {
	return h.addr + ":3307"
}
func (h *host) name() string { return fmt.Sprintf("node%d", h.id) }

// lab is the run's machines, its paths and the unit files.
type lab struct {
	o      Options
	prefix string // namespace names: prefix + "br", "h1", ..., "app"
	root   string // the run's directory
	initTo string // binlogd init's -out (the operator's copy: CA, admin cert)
	etc    string // /etc/phxgo stand-in: etc/node<id>/ per host
	vlib   string // /var/lib/phxgo stand-in: var/node<id>/ per host
	bin    string // /usr/local/bin stand-in: the installed binaries
	br     *netns.Bridge
	app    *netns.NS
	hosts  map[uint32]*host
	uid    int
	gid    int
	logf   func(string, ...any)
	mu     sync.Mutex
}

// NSPrefix starts every namespace name a run creates: NSPrefix<pid>-<name>.
const NSPrefix = "phxhosts-"

// newLab creates the bridge, the application's host and the root
// directories; hosts come with addHost.
func newLab(ctx context.Context, o Options) (*lab, error) {
	if removed, err := netns.RemoveStaleGroup(ctx, NSPrefix); err != nil {
		return nil, err
	} else if len(removed) > 0 {
		o.Logf("removed namespaces of a dead earlier run: %v", removed)
	}
	u, err := user.Lookup(unitUser)
	if err != nil {
		return nil, fmt.Errorf("%w: the units' User=%s does not exist here (installed with mariadb-server): %v", ErrUnsupported, unitUser, err)
	}
	l := &lab{o: o, prefix: fmt.Sprintf("%s%d-", NSPrefix, os.Getpid()), root: o.WorkDir, hosts: map[uint32]*host{}, logf: o.Logf}
	l.uid, _ = strconv.Atoi(u.Uid)
	l.gid, _ = strconv.Atoi(u.Gid)
	l.initTo = filepath.Join(l.root, "operator", "init")
	l.etc = filepath.Join(l.root, "etc", "phxgo")
	l.vlib = filepath.Join(l.root, "var", "lib", "phxgo")
	l.bin = filepath.Join(l.root, "usr", "local", "bin")
	for _, d := range []string{filepath.Dir(l.initTo), l.etc, l.vlib, l.bin, filepath.Join(l.root, "log")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// The run's directory may be a 0700 temp dir: the units' user must
	// traverse it (never read it) to reach its own files.
	if err := sdunit.Traversable(l.root); err != nil {
		return nil, err
	}
	if err := os.Chown(l.vlib, l.uid, l.gid); err != nil {
		return nil, err
	}
	for _, b := range []string{"binlogd", "sqlproxy"} {
		if err := copyFile(filepath.Join(o.BinDir, b), filepath.Join(l.bin, b), 0o755); err != nil {
			return nil, fmt.Errorf("install %s: %w (make build)", b, err)
		}
	}
	if l.br, err = netns.CreateBridge(ctx, l.prefix+"br"); err != nil {
		return nil, err
	}
	if l.app, err = netns.Create(ctx, l.prefix+"app"); err != nil {
		l.close()
		return nil, err
	}
	if err := l.br.Attach(ctx, l.app, "papp", fmt.Sprintf("%s.%d/24", Subnet, appHost)); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// addHost creates host id's namespace on the bridge.
func (l *lab) addHost(ctx context.Context, id uint32) (*host, error) {
	ns, err := netns.Create(ctx, fmt.Sprintf("%sh%d", l.prefix, id))
	if err != nil {
		return nil, err
	}
	h := &host{id: id, ns: ns, addr: fmt.Sprintf("%s.%d", Subnet, id)}
	if err := l.br.Attach(ctx, ns, fmt.Sprintf("p%d", id), h.addr+"/24"); err != nil {
		_ = ns.Close()
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(l.vlib, h.name()), 0o750); err != nil {
		return nil, err
	}
	if err := os.Chown(filepath.Join(l.vlib, h.name()), l.uid, l.gid); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.hosts[id] = h
	l.mu.Unlock()
	return h, nil
}

// install copies init's node directory to the host's /etc/phxgo/node<id>,
// modes kept, owned by the units' user (README "New cluster", step 1).
func (l *lab) install(h *host) error {
	dst := filepath.Join(l.etc, h.name())
	if out, err := exec.Command("cp", "-rp", filepath.Join(l.initTo, h.name()), dst).CombinedOutput(); err != nil {
		return fmt.Errorf("copy node%d's files: %v: %s", h.id, err, out)
	}
	if out, err := exec.Command("chown", "-R", unitUser+":", dst).CombinedOutput(); err != nil {
		return fmt.Errorf("chown: %v: %s", err, out)
	}
	return nil
}

// unitUser is the units' User= (checked against the unit files in unit()).
const unitUser = "mysql"

// unit parses a shipped unit for host h with paths moved to the run's
// directory; every command runs in the host's namespace as the unit's user.
func (l *lab) unit(h *host, file string) (*sdunit.Unit, error) {
	u, err := sdunit.Parse(filepath.Join(l.o.RepoDir, "scripts", "systemd", file), h.name(),
		map[string]string{"/usr/local/bin/": l.bin + "/", "/etc/phxgo/": l.etc + "/"})
	if err != nil {
		return nil, err
	}
	if u.User != unitUser {
		return nil, fmt.Errorf("%s: User=%s, the test installs files for %s", file, u.User, unitUser)
	}
	u.Prefix = []string{"nsenter", "--net=/run/netns/" + h.ns.Name, "-S", strconv.Itoa(l.uid), "-G", strconv.Itoa(l.gid), "--"}
	return u, nil
}

const (
	binlogdUnit = "phxgo-binlogd@.service"
	proxyUnit   = "phxgo-sqlproxy@.service"
)

// start runs `systemctl start phxgo-<unit>@node<id>`: ExecStartPre lines,
// ExecStart, and for Type=notify the wait for READY=1.
func (l *lab) start(ctx context.Context, h *host, file string) error {
	u, err := l.unit(h, file)
	if err != nil {
		return err
	}
	log := filepath.Join(l.root, "log", strings.TrimSuffix(strings.Replace(file, "@", "-"+h.name(), 1), ".service")+".log")
	s, err := sdunit.Start(ctx, u, log, l.logf)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, tail(log, 3000))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if file == binlogdUnit {
		h.binlogd = s
	} else {
		h.proxy = s
	}
	return nil
}

// stop runs `systemctl stop` of both units of h (proxy first).
func (l *lab) stop(ctx context.Context, h *host) error {
	var errs []error
	for _, s := range []**sdunit.Service{&h.proxy, &h.binlogd} {
		if *s == nil {
			continue
		}
		if _, err := (*s).Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		*s = nil
	}
	return errors.Join(errs...)
}

// operator runs a command on the operator's host (the app namespace):
// bin/binlogd with the admin certificate from init's output.
func (l *lab) operator(ctx context.Context, args ...string) ([]byte, error) {
	cmd := l.app.Command(ctx, filepath.Join(l.bin, "binlogd"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.Bytes(), fmt.Errorf("binlogd %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// clusterView is what the scenario reads of `binlogd cluster status -json`.
type clusterView struct {
	Healthy  bool     `json:"healthy"`
	MasterID uint32   `json:"master_id"`
	Problems []string `json:"problems"`
	Members  []struct {
		ID     uint32 `json:"id"`
		Health string `json:"health"`
		Status *struct {
			Role         string `json:"role"`
			UnsafeReason string `json:"unsafe_reason"`
			ReseedNeeded bool   `json:"reseed_needed"`
		} `json:"status"`
	} `json:"members"`
}

// status asks the cluster through the given members' gRPC addresses.
func (l *lab) status(ctx context.Context, via []*host) (*clusterView, error) {
	var addrs []string
	for _, h := range via {
		addrs = append(addrs, h.grpc())
	}
	out, err := l.operator(ctx, "cluster", "status", "-addr", strings.Join(addrs, ","), "-json", "-timeout", "2s", "-tls-dir", l.initTo)
	var v clusterView
	if jerr := json.Unmarshal(out, &v); jerr != nil {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("cluster status -json: %w: %s", jerr, out)
	}
	return &v, nil
}

// members returns the hosts that run units now, by id.
func (l *lab) running() []*host {
	l.mu.Lock()
	defer l.mu.Unlock()
	var hs []*host
	for id := uint32(1); id <= 9; id++ {
		if h := l.hosts[id]; h != nil && h.binlogd != nil {
			hs = append(hs, h)
		}
	}
	return hs
}

// close stops every unit and deletes the namespaces. The run's directory
// stays for the caller to keep or remove.
func (l *lab) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, h := range l.hosts {
		wg.Add(1)
		go func() { defer wg.Done(); _ = l.stop(ctx, h) }()
	}
	wg.Wait()
	sdunit.RemoveLeftovers() // the MariaDBs binlogd's KillMode=process stops kept running
	for _, h := range l.hosts {
		_ = h.ns.Close()
	}
	if l.app != nil {
		_ = l.app.Close()
	}
	if l.br != nil {
		_ = l.br.Close()
	}
}

func copyFile(from, to string, mode os.FileMode) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// tail is the end of a log file, for errors.
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
