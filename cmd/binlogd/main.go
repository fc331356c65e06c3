// Command binlogd is phxgo's node daemon and its operator commands.
//
//	binlogd run -config FILE            run the node (supervises MariaDB)
//	binlogd status -addr HOST:PORT      print a node's view (-json)
//	binlogd cluster status -addr HOST:PORT  every member's view in one table (-json); exit 1 when unhealthy
//	binlogd -version                    print the build
//	binlogd recover -config FILE        cut the local binlog back to the log (before mysqld starts)
//	binlogd switchover -addr MASTER -to N
//	binlogd init -hosts H1,H2,H3 | -node ID=GRPC,MYSQL[,PROXY]... -out DIR
//	binlogd members list|add|remove -addr MEMBER ...
//	binlogd seed -config NEW.json -from-socket REPLICA_SOCK
//	binlogd reseed -config NODE.json [-from GRPC | -source-node N]  copy a replica (mariadb-backup) to a new or broken node
//	binlogd backup -from GRPC -out DIR  keep a replica's physical backup with its GTID
//	binlogd restore -config NODE.json -from DIR [-new-cluster]  a node, or a new cluster's member, from a backup
//	binlogd check -config FILE [-json]   preflight the host (exit 1 on any FAIL)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"phxgo/binlogd/config"
	"phxgo/binlogd/cpuprio"
	"phxgo/binlogd/liblog"
	"phxgo/binlogd/node"
	"phxgo/binlogd/recovery"
	"phxgo/binlogd/version"
	"phxgo/internal/cli"
	pb "phxgo/proto"
)

const usage = `usage: binlogd <command> [flags]

commands:
  run         run the node daemon (-config FILE [-keep-mysql: a stop leaves MariaDB running, read-only, for the next binlogd to adopt; the systemd unit sets it])
  status      print a node's status (-addr HOST:PORT [-json] [-config FILE | -tls-cert/-tls-key/-tls-ca])
  cluster     cluster status: one row per member (-addr ANY_MEMBER [-json] [TLS flags as status]); exit 0 healthy, 1 not, 2 usage
  recover     cut the local binlog back to what the cluster's log holds (-config FILE)
  switchover  hand the master lease to node N (-addr MASTER_GRPC -to N [TLS flags as status])
  events      print a node's events as JSON lines: recent, then live (-addr GRPC [-recent] [TLS flags as status])
  reload      re-read a node's TLS files, optionally set its log level, no restart (-addr GRPC [-log-level L] [TLS flags as status]; SIGHUP does the same)
  log         print a stopped node's Paxos log with every entry's verdict (-config FILE)
  stop-mysql  stop the node's MariaDB safely: never gracefully while commits wait (-config FILE)
  init        write a new cluster's node dirs: configs, certificates, credentials; dials nothing (-hosts H1,H2,H3 | -node ID=GRPC,MYSQL[,PROXY] ... [-out DIR])
  members     list, add or remove members through the log (members list|add|remove -addr MEMBER ...)
  seed        load a new node's MariaDB from a replica's dump before its first start (-config NEW.json -from-socket SOCK)
  reseed      copy a replica's MariaDB (mariadb-backup over gRPC) to this new or broken node, binlogd stopped (-config FILE [-from GRPC | -source-node N] [-force] [-discard-old])
  backup      keep a replica's consistent physical backup (mariadb-backup) in a new directory, with its GTID (-from GRPC -out DIR [-force] [TLS flags as status])
  restore     make this stopped node's MariaDB from a backup directory (-config FILE -from DIR [-new-cluster] [-discard-old])
  wal-repair  report damage in a stopped node's Paxos log; cut it only when told to (-config FILE [-truncate-at-offset N -yes])
  check       preflight a node's host against its config: MariaDB, ports, dirs, clock, disk, certificates (-config FILE [-json])

Run 'binlogd <command> -h' for a command's flags; 'binlogd -version' prints the build.
`

// Exit status of every command (internal/cli): 0 done (or -h), 2 a bad
// command line (unknown command or flag, stray argument, missing required
// flag), 1 a runtime error; cluster status and check add their own 1
// (unhealthy, a failed check).
func main() {
	if len(os.Args) < 2 || cli.IsHelp(os.Args[1]) {
		fmt.Fprint(os.Stderr, usage)
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	var err error
	switch os.Args[1] {
	case "-version", "--version", "version":
		version.Print(os.Stdout, "binlogd")
		return
	case "cluster":
		os.Exit(cmdCluster(os.Args[2:], os.Stdout, os.Stderr))
	case "run":
		err = cmdRun(os.Args[2:])
	case "status":
		err = cmdStatus(os.Args[2:])
	case "recover":
		err = cmdRecover(os.Args[2:])
	case "switchover":
		err = cmdSwitchover(os.Args[2:])
	case "events":
		err = cmdEvents(os.Args[2:])
	case "reload":
		err = cmdReload(os.Args[2:])
	case "log":
		err = cmdLog(os.Args[2:])
	case "stop-mysql":
		err = cmdStopMySQL(os.Args[2:])
	case "init":
		err = cmdInit(os.Args[2:])
	case "members":
		err = cmdMembers(os.Args[2:])
	case "seed":
		err = cmdSeed(os.Args[2:])
	case "reseed":
		err = cmdReseed(os.Args[2:])
	case "backup":
		err = cmdBackup(os.Args[2:])
	case "restore":
		err = cmdRestore(os.Args[2:])
	case "wal-repair":
		err = cmdWALRepair(os.Args[2:])
	case "check":
		os.Exit(cmdCheck(os.Args[2:]))
	default:
		fmt.Fprintf(os.Stderr, "binlogd: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	os.Exit(cli.Report(os.Stderr, "binlogd", err))
}

func cmdRun(args []string) error {
	// A daemon must not die because whoever reads its log went away: a
	// write to a closed stdout/stderr would raise SIGPIPE and kill it,
	// skipping its shutdown (handing over the lease, stopping MariaDB).
	// Ignored, the write fails with EPIPE and the node runs on. Not
	// signal.Notify: that would also catch sockets' SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	cfgPath := fs.String("config", "binlogd.json", "config file")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	keepMySQL := fs.Bool("keep-mysql", false, "on SIGTERM/SIGINT leave MariaDB running, read-only, for the next binlogd to adopt (a restart keeps it up; the systemd unit sets it); a master hands over first either way")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return cli.Usagef("-log-level: %w", err)
	}
	levels := new(slog.LevelVar) // SIGHUP / Admin.Reload may change it
	levels.Set(lv)
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: levels}))
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	liblog.Install(logger.With("node", cfg.ID))
	// Before any mariadbd starts: the children of a thread inherit its
	// value, and MariaDB gets its own (mysql_nice) when binlogd starts it.
	cpuprio.Apply(cfg.CPUNiceOrDefault(), logger.With("node", cfg.ID))
	cpuprio.SetChildNice(cfg.MySQLNiceOrDefault()) // hooks, backups, install-db
	n, err := node.New(cfg, logger)
	if err != nil {
		return walDamaged(err, cfg.Dir, *cfgPath)
	}
	n.SetLogLevelVar(levels)
	n.KeepMySQLOnStop(*keepMySQL)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// SIGHUP re-reads the TLS files (node.Reload); a failure is logged and
	// the old certificate stays.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			_, _ = n.Reload("")
		}
	}()
	return walDamaged(n.Run(ctx), cfg.Dir, *cfgPath)
}

func cmdStatus(args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:17011", "binlogd gRPC address")
	asJSON := fs.Bool("json", false, "print JSON")
	tf := addTLSFlags(fs)
	cl, closeFn, err := parseConnect(fs, args, tf, addr)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := cl.Status(ctx, &pb.StatusRequest{})
	if err != nil {
		return fmt.Errorf("status of %s: %w", *addr, tf.hint(err))
	}
	if *asJSON {
		return writeJSON(os.Stdout, newStatusJSON(st))
	}
	fmt.Printf("node            %d\nrole            %s\nmaster          %d (lease version %d, epoch %d)\n", st.NodeId, roleName(st.Role), st.MasterId, st.LeaseVersion, st.Epoch)
	fmt.Printf("lease remaining %v\nchosen/applied  %d / %d (paxos leader %d)\nlast valid GTID %s\nMariaDB GTID    %s\nreplication     %s\n",
		time.Duration(st.LeaseRemainingNs).Round(time.Millisecond), st.ChosenIndex, st.AppliedIndex, st.PaxosLeader, orNone(st.LastValidGtid), orNone(st.MysqlGtidPos), st.ReplicationState)
	var ids []uint32
	for _, m := range st.Members {
		ids = append(ids, m.Id)
	}
	fmt.Printf("members         %v\n", ids)
	fmt.Printf("replica lag     %d transactions, %s\nversion         %s\n", st.LagTransactions, lagSeconds(st.LagSeconds), orNone(st.Version))
	fmt.Printf("log             first index %d, first GTID %s, %d bytes\n", st.FirstIndex, orNone(st.FirstGtid), st.LogBytes)
	switch {
	case st.ReseedNeeded && strings.HasPrefix(st.UnsafeReason, node.DatadirLostReason):
		fmt.Printf("RESEED          reseed this node: its MariaDB datadir cannot be recovered (see UNSAFE)\n")
	case st.ReseedNeeded:
		fmt.Printf("RESEED          reseed this node: its MariaDB (at %s) needs binlog before %s, which the log no longer holds (see README \"Log retention\")\n",
			orNone(st.MysqlGtidPos), st.FirstGtid)
	}
	if st.UnsafeReason != "" {
		fmt.Printf("UNSAFE          %s\n", st.UnsafeReason)
	}
	for _, o := range logOddJSONs(st) {
		fmt.Printf("LOG ODD         %s\n", describeOdd(st.NodeId, o))
	}
	_, divs := logDigestsJSON(st)
	for _, d := range divs {
		fmt.Printf("LOG DIVERGED    %s\n", describeDivergence(st.NodeId, d))
	}
	if n := st.LogDivergencesSeen; n > uint64(len(divs)) {
		fmt.Printf("LOG DIVERGED    %d more ranges (see the node's log)\n", n-uint64(len(divs)))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// cmdRecover is the standalone recovery for a MariaDB that binlogd does not
// supervise (systemd ExecStartPre): it asks a member of the cluster which
// local GTIDs are valid and cuts the rest. With no member reachable it
// changes nothing and fails, unless -unsafe-skip.
func cmdRecover(args []string) error {
	fs := flag.NewFlagSet("recover", flag.ContinueOnError)
	cfgPath := fs.String("config", "binlogd.json", "config file")
	dryRun := fs.Bool("dry-run", false, "print the plan, change nothing")
	skip := fs.Bool("unsafe-skip", false, "with the cluster unreachable, start without cutting (may keep transactions the log does not hold)")
	cfg, err := parseConfig(fs, args, cfgPath)
	if err != nil {
		return err
	}
	index := filepath.Join(cfg.MySQLDir, "data", "binlog.index")
	groups, err := recovery.Scan(index)
	if err != nil {
		if os.IsNotExist(errors.Unwrap(err)) || strings.Contains(err.Error(), "no such file") {
			fmt.Println("no binlog yet: nothing to recover")
			return nil
		}
		return err
	}
	req := &pb.RecoverPointRequest{NodeId: cfg.ID}
	for _, g := range groups {
		req.Gtids = append(req.Gtids, g.GTID.String())
	}
	creds, err := dialOptionFor(cfg.TLSFiles())
	if err != nil {
		return err
	}
	var reply *pb.RecoverPointReply
	var errs []error
	for _, m := range cfg.SortedMembers() {
		cl, closeFn, err := dial(m.GRPCAddr, creds(m.ID))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		reply, err = cl.RecoverPoint(ctx, req)
		cancel()
		closeFn()
		if err == nil {
			break
		}
		errs = append(errs, fmt.Errorf("node %d: %w", m.ID, err))
	}
	if reply == nil {
		if *skip {
			fmt.Fprintln(os.Stderr, "binlogd: cluster unreachable; -unsafe-skip given, binlog left as is")
			return nil
		}
		return fmt.Errorf("%w: %v", recovery.ErrUnreachable, errors.Join(errs...))
	}
	plan, err := recovery.MakePlan(groups, reply.Valid)
	if err != nil {
		return err
	}
	clean, err := recovery.ClosedCleanly(index)
	if err != nil {
		return err
	}
	if err := recovery.CutAfterCleanShutdown(plan, clean); err != nil {
		return err
	}
	if !*dryRun {
		if plan, err = recovery.Apply(index, plan); err != nil {
			return err
		}
	}
	out, _ := json.Marshal(map[string]any{"kept": len(plan.Kept), "last_kept": plan.LastKept.String(), "cut": fmt.Sprint(plan.Cut), "file": plan.File, "offset": plan.Offset, "removed": plan.Removed, "dry_run": *dryRun})
	fmt.Println(plan.String())
	fmt.Println(string(out))
	return nil
}

func cmdSwitchover(args []string) error {
	fs := flag.NewFlagSet("switchover", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:17011", "the master's binlogd gRPC address")
	to := fs.Uint("to", 0, "node id to hand the lease to")
	tf := addTLSFlags(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *to == 0 {
		return cli.Usagef("switchover: -to is required")
	}
	cl, closeFn, err := tf.connect(*addr)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := cl.Switchover(ctx, &pb.SwitchoverRequest{To: uint32(*to)})
	if err != nil {
		return tf.hint(err)
	}
	fmt.Printf("lease handed to node %d (version %d)\n", r.MasterId, r.LeaseVersion)
	return nil
}
