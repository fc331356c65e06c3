// Command sqlproxy is phxgo's MySQL-protocol proxy (see package sqlproxy).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"phxgo/binlogd/config"
	"phxgo/binlogd/httpguard"
	"phxgo/binlogd/liblog"
	"phxgo/binlogd/mtls"
	"phxgo/binlogd/sdnotify"
	"phxgo/binlogd/version"
	"phxgo/internal/cli"
	pb "phxgo/proto"
	"phxgo/sqlproxy"
	"phxgo/sqlproxy/auth"
	"phxgo/sqlproxy/topology"
)

// Exit status (internal/cli): 0 a clean stop (or -h), 2 a bad command
// line (a bad flag, checked before anything starts, names it), 1 a
// runtime error.
func main() {
	// A daemon must not die because whoever reads its log went away: a
	// write to a closed stdout/stderr would raise SIGPIPE and kill it
	// mid-session, without closing its clients' and backends'
	// connections. Ignored, the write fails with EPIPE and the proxy runs
	// on. Not signal.Notify: that would also catch sockets' SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(cli.Report(os.Stderr, "sqlproxy", run(os.Args[1:])))
}

func run(args []string) error {
	def := sqlproxy.DefaultConfig()
	fs := flag.NewFlagSet("sqlproxy", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:3307", "client port (mode -mode; linearizable by default)")
	rwListen := fs.String("rwsplit-listen", "", "optional second port with read/write split")
	binlogd := fs.String("binlogd", "127.0.0.1:7000", "local binlogd gRPC address")
	adminUser := fs.String("admin-user", "phxgo_proxy", "account that reads mysql.user and checks replicas")
	adminPwFile := fs.String("admin-password-file", "", "file holding the admin password (mode 0600; required)")
	modeS := fs.String("mode", "linearizable", "routing on -listen: linearizable, rwsplit or causal")
	hold := fs.Duration("hold", def.Hold, "keep a backend connection with its client this long after a statement")
	pct := fs.Int("read-master-percentage", 0, "share (0-100) of replica-eligible reads sent to the master")
	masterPref := fs.Bool("master-preferred", false, "send everything to the master unless a hint says otherwise")
	masterWait := fs.Duration("master-wait", def.MasterWait, "wait this long for a master with a valid lease before failing a statement")
	maxLag := fs.Duration("max-replica-lag", def.MaxReplicaLag, "replicas further behind get no reads")
	maxBehind := fs.Int64("max-replica-behind", def.MaxReplicaBehind, "replicas lacking more transactions than this (GTID position vs the master's) get no reads")
	causalWait := fs.Duration("causal-wait", def.CausalWait, "causal mode: how long a replica may take to apply a session's last write before the read goes to the master")
	peerTimeout := fs.Duration("peer-timeout", def.PeerTimeout, "fail a client or backend connection whose peer stops answering (partition, no RST) after about this long: TCP keepalive + TCP_USER_TIMEOUT (a client with data in flight, which may be reading slowly: at least 60 s, as MariaDB's net_write_timeout); 0: kernel defaults")
	idleTx := fs.Duration("idle-in-tx-timeout", def.IdleInTxTimeout, "roll back a forwarded session's transaction (from another node's proxy) idle this long, freeing its locks on the master; 0 disables")
	httpAddr := fs.String("http", "127.0.0.1:9307", "admin HTTP (/metrics, /backends); empty disables; an empty host (:9307) means loopback")
	allow := fs.String("allow", sqlproxy.DefaultAllow, "client networks that may connect (CIDRs or IPs, comma-separated; \"all\" for any); others get ERR 1130")
	tlsCert := fs.String("tls-cert", "", "this node's proxy certificate (PEM, phxgo://proxy/N): mutual TLS on the hop to the master's proxy and to -binlogd")
	tlsKey := fs.String("tls-key", "", "its private key (PEM)")
	tlsCA := fs.String("tls-ca", "", "the cluster CA (PEM); -tls-cert, -tls-key and -tls-ca go together")
	insecureTLS := fs.Bool("insecure", false, "run without TLS: the hop to the master's proxy in the clear, -binlogd plain (only for a cluster whose binlogd nodes set \"insecure_no_tls\")")
	binlogdPlain := fs.Bool("binlogd-plain", false, "dial -binlogd without TLS even with -tls-* set (a binlogd without tls_* keys)")
	sourceIP := fs.String("source-ip", "", "local address of every outgoing connection (MariaDBs, the master's proxy); default: the host of -listen when it is a specific IP")
	mysqlSocket := fs.String("mysql-socket", "", "unix socket of this node's MariaDB, used instead of TCP for connections to it (cheaper per packet); MariaDB then matches accounts as user@localhost")
	denyUsers := fs.String("deny-users", sqlproxy.DefaultDenyUsers, "users never logged in through the proxy (names, or prefixes ending in '*'); -admin-user is always denied; such a login gets ERR 1045")
	maxConns := fs.Int("max-connections", def.MaxConnections, "client connections at most (logged in or not); one more gets ERR 1040 Too many connections")
	connectTimeout := fs.Duration("connect-timeout", def.LoginTimeout, "a client must finish its handshake and login within this (MariaDB's connect_timeout)")
	failBurst := fs.Int("login-failure-burst", def.LoginFailureBurst, "failed logins a client address may make at once; after that one more per -login-failure-interval, the rest get ERR 1129 before the password is checked (IPv6 counts per /64); 0: no limit")
	refuseDynamic := fs.Bool("refuse-dynamic-sql", false, "refuse text that runs SQL built or named at run time (PREPARE, EXECUTE, EXECUTE IMMEDIATE), where a KILL cannot be seen: ERR 1235; prepared statements of the binary protocol are not affected")
	failEvery := fs.Duration("login-failure-interval", def.LoginFailureEvery, "how often a client address past -login-failure-burst may try again")
	maxPacket := fs.Int("max-allowed-packet", 0, "largest packet of a logged-in client in bytes (a longer one: ERR 1153, closed); 0: the master's @@max_allowed_packet (16 MiB until read)")
	poll := fs.Duration("poll", 50*time.Millisecond, "retry interval: reopening a broken status stream, asking again for a refused read window, and polling a binlogd too old to push its status")
	procs := fs.Int("procs", 0, "GOMAXPROCS; 0: Go's default (one per CPU, or $GOMAXPROCS)")
	verbose := fs.Bool("v", false, "debug logging (the settings file's log_level overrides it)")
	settingsFile := fs.String("settings", "", "JSON file of reloadable settings (routing: hold, master_wait, read_master_percentage, master_preferred, max_replica_lag, max_replica_behind, causal_wait; log_level) over the flags' values; SIGHUP re-reads it and the -tls-* files")
	showVersion := fs.Bool("version", false, "print the build and exit")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *showVersion {
		version.Print(os.Stdout, "sqlproxy")
		return nil
	}
	if err := (proxyFlags{listen: *listen, rwListen: *rwListen, binlogd: *binlogd, httpAddr: *httpAddr,
		adminPasswordFile: *adminPwFile, procs: *procs, poll: poll.Seconds()}).validate(); err != nil {
		return err
	}
	// SIGHUP reloads (below); caught from here on, so one sent while the
	// proxy starts waits for it instead of killing it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	setProcs(*procs)
	mode, err := sqlproxy.ParseMode(*modeS)
	if err != nil {
		return cli.Usagef("-mode: %w", err)
	}
	pw, err := readSecret(*adminPwFile)
	if err != nil {
		return cli.Usagef("-admin-password-file: %w", err)
	}
	level := new(slog.LevelVar) // the settings file and a reload may change it
	if *verbose {
		level.Set(slog.LevelDebug)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	liblog.Install(log)

	src := sqlproxy.ListenSourceIP(*listen)
	if *sourceIP != "" {
		if src = net.ParseIP(*sourceIP); src == nil {
			return cli.Usagef("-source-ip %q is not an IP address", *sourceIP)
		}
	}
	cfg := def
	cfg.Metrics = sqlproxy.NewMetrics(nil) // the HTTP port's counters join it
	cfg.SourceIP = src
	cfg.MySQLSocket = *mysqlSocket
	cfg.Hold, cfg.ReadMasterPercentage, cfg.MasterPreferred = *hold, *pct, *masterPref
	cfg.MasterWait, cfg.MaxReplicaLag = *masterWait, *maxLag
	cfg.MaxReplicaBehind, cfg.CausalWait = *maxBehind, *causalWait
	cfg.AdminUser, cfg.AdminPassword, cfg.Logger = *adminUser, pw, log
	cfg.SettingsFile, cfg.LogLevel = *settingsFile, level
	cfg.PeerTimeout, cfg.IdleInTxTimeout = *peerTimeout, *idleTx
	if cfg.DenyUsers, err = sqlproxy.ParseDenyUsers(*denyUsers); err != nil {
		return cli.Usagef("-deny-users: %w", err)
	}
	cfg.MaxConnections, cfg.LoginTimeout, cfg.MaxAllowedPacket = *maxConns, *connectTimeout, *maxPacket
	cfg.LoginFailureBurst, cfg.LoginFailureEvery = *failBurst, *failEvery
	cfg.RefuseDynamicSQL = *refuseDynamic
	if cfg.Allow, err = sqlproxy.ParseAllow(*allow); err != nil {
		return cli.Usagef("-allow: %w", err)
	}
	files := mtls.Files{Cert: *tlsCert, Key: *tlsKey, CA: *tlsCA}
	switch {
	case files.Enabled() && *insecureTLS:
		return cli.Usagef("-insecure with -tls-*: give one or the other")
	case !files.Enabled() && !*insecureTLS:
		return cli.Usagef("no TLS: pass -tls-cert, -tls-key and -tls-ca (this node's proxy certificate, e.g. proxyN.crt from binlogd init), or -insecure for a cluster running with \"insecure_no_tls\"")
	}
	if files.Enabled() {
		m, err := mtls.Load(files, time.Now())
		if err != nil {
			var fe *mtls.FileError
			if errors.As(err, &fe) {
				return fmt.Errorf("-tls-%s: %w", fe.Which, err)
			}
			return err
		}
		if id := m.Identity; id.Role != mtls.RoleProxy {
			return fmt.Errorf("-tls-cert: %s is the certificate of %s; sqlproxy needs a proxy certificate (phxgo://proxy/N): other proxies accept a hop only from one", files.Cert, id)
		}
		cfg.PeerTLS = sqlproxy.NewTLS(m)
		cfg.MySQLTLS = cfg.PeerTLS // MariaDB over TCP: TLS verified against the same CA
		log.Info("sqlproxy: hop to the master's proxy uses mutual TLS, MariaDB over TCP uses TLS", "cert", files.Cert, "identity", m.Identity.String(), "expires", m.Leaf.NotAfter)
	} else {
		log.Warn("sqlproxy: INSECURE (-insecure): the hop to the master's proxy, the link to binlogd and MariaDB over TCP run without TLS")
	}
	if err := cfg.Validate(); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var binlogdTLS *sqlproxy.TLS
	if !*binlogdPlain {
		binlogdTLS = cfg.PeerTLS
	}
	cc, err := grpc.NewClient(*binlogd, binlogdCreds(binlogdTLS))
	if err != nil {
		return fmt.Errorf("binlogd %s: %w", *binlogd, err)
	}
	defer cc.Close()
	topo := topology.NewAdmin(ctx, pb.NewAdminClient(cc), *poll, log)
	var storeTLS func(addr string) *tls.Config
	if t := cfg.MySQLTLS; t != nil {
		storeTLS = func(addr string) *tls.Config {
			return sqlproxy.MySQLClientTLS(t, addr, sqlproxy.MySQLNodeAt(topo, addr))
		}
	}
	store := auth.New(auth.Config{User: *adminUser, Password: pw, Dial: sqlproxy.DialFrom(src, 2*time.Second), TLS: storeTLS, Addrs: func() []string {
		v := topo.View()
		var out []string
		for _, a := range []string{v.MasterMySQLAddr, v.SelfMySQLAddr} {
			if a != "" && (len(out) == 0 || out[0] != a) {
				out = append(out, a)
			}
		}
		return out
	}})
	defer store.Close()
	srv, err := sqlproxy.New(cfg, topo, store)
	if err != nil {
		return err
	}
	errc := make(chan error, 3)
	serve := func(addr string, m sqlproxy.Mode) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		log.Info("sqlproxy listening", "addr", ln.Addr().String(), "mode", m.String(), "source_ip", src)
		go func() { errc <- srv.Serve(ln, m) }()
		return nil
	}
	if err := serve(*listen, mode); err != nil {
		srv.Close()
		return err
	}
	if *rwListen != "" {
		if err := serve(*rwListen, sqlproxy.RWSplit); err != nil {
			srv.Close()
			return err
		}
	}
	var hs *http.Server
	if *httpAddr != "" {
		ln, err := net.Listen("tcp", config.LoopbackIfNoHost(*httpAddr))
		if err != nil {
			srv.Close()
			return err
		}
		hs = httpguard.Server(srv.Handler())
		hl := httpguard.Listener(ln, log)
		cfg.Metrics.Registry.MustRegister(hl.Collectors("phxgo_sqlproxy")...)
		go func() { errc <- hs.Serve(hl) }()
	}
	// Every port is bound: a Type=notify unit is started now.
	sd := sdnotify.FromEnv()
	_ = sd.Ready("listening on " + *listen)
	go func() {
		for range hup {
			_, _ = srv.Reload() // logged and counted; a refused one changes nothing
		}
	}()
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errc:
	}
	_ = sd.Stopping("stopping")
	if hs != nil {
		_ = hs.Close()
	}
	srv.Close()
	return err
}

// setProcs sets GOMAXPROCS when -procs asks; otherwise Go's default.
// Half the CPUs used to save the P hand-offs of the relay's syscalls;
// the relay's socket I/O now holds its P through a read or write
// (wire.NewConnRaw), so one P is one thread doing I/O, and with a single
// P a thread the host preempts mid-write stalls every session: under
// sysbench point selects (issue 19, 2 shared cores) raw I/O with one P
// per CPU reached the highest qps at HAProxy's CPU per query.
func setProcs(n int) {
	if n > 0 {
		runtime.GOMAXPROCS(n)
	}
}

// readSecret reads a password file that only its owner may read.
func readSecret(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat() // the open file: no race with a rename
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s has mode %v; want 0600 (no group/other access); fix: chmod 600 %s", path, st.Mode().Perm(), path)
	}
	// Its owner may rewrite it whatever its mode: the user the proxy
	// runs as, or root, as ssh demands of a key.
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		if uid, euid := int(sys.Uid), os.Geteuid(); uid != euid && uid != 0 {
			return "", fmt.Errorf("%s is owned by uid %d, but sqlproxy runs as uid %d: only that user or root may own it; fix: chown %d %s", path, uid, euid, euid, path)
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<16))
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// binlogdCreds is the credential of the link to -binlogd (t nil: plain).
// It follows reloads, and the server must be this node's binlogd: proxy
// N fronts node N (its certificate's id), whose Status stream tells the
// proxy who is master and where to forward. Another certificate of the
// CA valid for the host (a proxy's, another node's) is refused.
func binlogdCreds(t *sqlproxy.TLS) grpc.DialOption {
	if t == nil {
		return grpc.WithTransportCredentials(insecure.NewCredentials())
	}
	return grpc.WithTransportCredentials(t.ClientCredentials(mtls.ExpectNode(t.Material().Identity.ID)))
}
