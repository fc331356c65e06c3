package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mysqld"
	"phxgo/binlogd/reseed"
	"phxgo/internal/cli"
	pb "phxgo/proto"
)

// cmdReseed gives a new or broken node's MariaDB a physical copy of a
// replica's (binlogd/reseed: mariadb-backup streamed over the source's
// Admin/Backup RPC), then records the copy's GTID position so the node
// replicates from its binlogd right after it:
//
//  1. refuse while this node's binlogd (wal lock, gRPC port) or MariaDB
//     (pid file) runs; hold the wal lock until done;
//  2. stream the backup into a new directory beside the datadir with
//     progress on stderr, prepare it, swap it in (the old datadir is kept
//     as <datadir>.old-<time> unless -discard-old);
//  3. start its MariaDB once (binlogd's my.cnf; this also chowns the copy
//     to the server's OS user), SET GLOBAL gtid_slave_pos to the copy's
//     position, stop it cleanly.
//
// The node's Paxos wal stays as it is: a broken node catches up from its
// peers, and one whose wal is behind the log's compaction installs a
// peer's snapshot (paxos). A new node has no wal yet and joins with
// "join": true.
func cmdReseed(args []string) error {
	fs := flag.NewFlagSet("reseed", flag.ContinueOnError)
	cfgPath := fs.String("config", "binlogd.json", "the config of the node to reseed (run on its host, its binlogd stopped)")
	from := fs.String("from", "", "source binlogd's gRPC address (a replica); default: -source-node's, else the most caught-up replica among the members")
	sourceNode := fs.Uint("source-node", 0, "source node id (its grpc_addr from the config's members)")
	force := fs.Bool("force", false, "let the source serve even if it is the master (its commits stall briefly under the backup's lock)")
	discardOld := fs.Bool("discard-old", false, "remove the old datadir after the swap instead of keeping it as <datadir>.old-<time>")
	every := fs.Duration("progress", time.Second, "interval of the progress lines on stderr")
	bounds := addStreamBoundFlags(fs)
	tf := addTLSFileFlags(fs)
	cfg, err := parseConfig(fs, args, cfgPath)
	if err != nil {
		return err
	}
	if err := bounds.check("reseed"); err != nil {
		return err
	}
	if *tf.dir == "" && *tf.cert == "" && !*tf.insecure {
		*tf.config = *cfgPath // the node's own certificate, as `binlogd recover`
	}
	creds, err := tf.dialOption()
	if err != nil {
		return err
	}
	inst, ctx, done, err := stoppedInstance(cfg)
	if err != nil {
		return err
	}
	defer done()
	addr, srcID, err := reseedSource(ctx, cfg, *from, uint32(*sourceNode), creds)
	if err != nil {
		return err
	}
	cl, closeFn, err := dial(addr, creds(srcID)) // its bytes become our datadir: only that binlogd

	if err != nil {
		return err
	}
	defer closeFn()
	stream, err := cl.Backup(ctx, &pb.BackupRequest{NodeId: cfg.ID, Force: *force})
	if err != nil {
		return fmt.Errorf("reseed from %s: %w", addr, tf.hint(err))
	}
	fmt.Fprintf(os.Stderr, "reseed: node %d from %s into %s\n", cfg.ID, addr, inst.DataDir())
	target := reseed.Target{DataDir: inst.DataDir(), DiscardOld: *discardOld, Progress: os.Stderr, Every: *every}
	bounds.apply(&target)
	res, err := reseed.Receive(ctx, stream.Recv, target)
	if err != nil {
		return fmt.Errorf("%w (the old datadir %s is unchanged)", tf.hint(err), inst.DataDir())
	}
	fmt.Fprintf(os.Stderr, "reseed: prepared in %s; position %s (from %s)\n", res.Prepare.Round(100*time.Millisecond), orNone(res.Position), res.PositionFrom)
	if err := setSlavePos(ctx, inst, res.Position); err != nil {
		return fmt.Errorf("%w (the copy is in %s; the old datadir %s)", err, inst.DataDir(), oldDirText(res.OldDir))
	}
	if err := target.DiscardOldDir(&res); err != nil {
		return err
	}
	old := "discarded"
	if res.OldDir != "" {
		old = "kept in " + res.OldDir
	}
	fmt.Printf("reseeded node %d from node %d: %d bytes in %s (%.1f MiB/s), prepare %s, GTID position %q; old datadir %s\n",
		cfg.ID, res.Info.SourceNode, res.Bytes, res.Copy.Round(100*time.Millisecond), float64(res.Bytes)/(1<<20)/res.Copy.Seconds(),
		res.Prepare.Round(100*time.Millisecond), res.Position, old)
	fmt.Printf("next: start the node (systemctl start binlogd, or binlogd run -config %s)", *cfgPath)
	if !isMemberOf(cfg) || cfg.Join {
		fmt.Printf("; a new node: then binlogd members add -addr MEMBER -config %s -tls-dir DIR", *cfgPath)
	}
	fmt.Println()
	return nil
}

// stoppedInstance is the node's MariaDB instance, checked stopped with
// stoppedNode, for an offline command (reseed, restore): ctx ends on
// SIGINT or SIGTERM; done releases the wal's lock.
func stoppedInstance(cfg *config.Config) (inst *mysqld.Instance, ctx context.Context, done func(), err error) {
	host, port := cfg.MySQLBind()
	inst, err = mysqld.New(mysqld.Options{Dir: cfg.MySQLDir, Host: host, Port: port, ServerID: cfg.ID, Extra: cfg.MySQLExtra,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return nil, nil, nil, err
	}
	unlock, err := stoppedNode(cfg, inst)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	return inst, ctx, func() { stop(); unlock() }, nil
}

// stoppedNode refuses while the node's binlogd or MariaDB runs, and holds
// the wal's lock (so a binlogd starting meanwhile fails) until unlock.
func stoppedNode(cfg *config.Config, inst *mysqld.Instance) (unlock func(), err error) {
	unlock = func() {}
	if pidB, err := os.ReadFile(inst.PidFile()); err == nil {
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(pidB))); pid > 0 && mysqld.Alive(pid) {
			return nil, fmt.Errorf("reseed: node %d's MariaDB runs (pid %d, %s): stop its binlogd first (and with a separate MariaDB unit: binlogd stop-mysql -config FILE)", cfg.ID, pid, inst.PidFile())
		}
	}
	if l, err := net.Listen("tcp", cfg.GRPCListenAddr()); err != nil {
		return nil, fmt.Errorf("reseed: node %d's gRPC address %s is in use: is its binlogd running? stop it first (%v)", cfg.ID, cfg.GRPCListenAddr(), err)
	} else {
		l.Close()
	}
	paxosDir := filepath.Join(cfg.Dir, "paxos")
	if _, err := os.Stat(paxosDir); err != nil {
		return unlock, nil // a new node: no wal yet
	}
	f, err := os.OpenFile(filepath.Join(paxosDir, "wal.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("reseed: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("reseed: node %d's Paxos log %s is locked: its binlogd runs; stop it first (%v)", cfg.ID, paxosDir, err)
	}
	return func() { f.Close() }, nil
}

// reseedSource picks the source's gRPC address and member id: -from
// (its id if a member has that address, else 0: any binlogd),
// -source-node's member address, or else the member replica with the
// least lag.
func reseedSource(ctx context.Context, cfg *config.Config, from string, id uint32, creds credsFor) (string, uint32, error) {
	if from != "" && id != 0 {
		return "", 0, cli.Usagef("reseed: give -from or -source-node, not both")
	}
	if from != "" {
		return from, memberAt(cfg, from), nil
	}
	if id != 0 {
		for _, m := range cfg.SortedMembers() {
			if m.ID == id {
				return m.GRPCAddr, m.ID, nil
			}
		}
		return "", 0, fmt.Errorf("reseed: node %d is not among the config's members", id)
	}
	type cand struct {
		addr string
		id   uint32
		lag  uint64
	}
	var cands []cand
	var seen []string
	for _, m := range cfg.SortedMembers() {
		if m.ID == cfg.ID {
			continue
		}
		cl, closeFn, err := dial(m.GRPCAddr, creds(m.ID))
		if err != nil {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		st, err := cl.Status(sctx, &pb.StatusRequest{})
		cancel()
		closeFn()
		if err != nil {
			seen = append(seen, fmt.Sprintf("node %d: %v", m.ID, err))
			continue
		}
		seen = append(seen, fmt.Sprintf("node %d: %s", m.ID, roleName(st.Role)))
		if st.Role == pb.Role_ROLE_REPLICA && st.MysqlUp && !st.ReseedNeeded {
			cands = append(cands, cand{m.GRPCAddr, m.ID, st.LagTransactions})
		}
	}
	if len(cands) == 0 {
		return "", 0, fmt.Errorf("reseed: no healthy replica among the members to copy from (%s); name one with -from or -source-node", strings.Join(seen, "; "))
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].lag < cands[j].lag })
	return cands[0].addr, cands[0].id, nil
}

// setSlavePos starts the copied MariaDB once and records where its
// replication resumes; seed.go does the same after a dump.
func setSlavePos(ctx context.Context, inst *mysqld.Instance, pos string) error {
	return setPosition(ctx, inst, pos, false)
}

// setPosition is setSlavePos that, with binlogState, also makes pos the
// server's binlog state (restore.go: a new cluster's master).
func setPosition(ctx context.Context, inst *mysqld.Instance, pos string, binlogState bool) error {
	if err := inst.Init(ctx); err != nil { // my.cnf, dirs, chown to the server's OS user
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Minute) // InnoDB may roll back the copy's open transactions
	defer cancel()
	if err := inst.Start(sctx); err != nil {
		return fmt.Errorf("reseed: start the copied MariaDB: %w", err)
	}
	db, err := inst.DB("")
	if err == nil {
		// The copy's mysql.gtid_slave_pos is the source's slave position;
		// the binlog info's position also covers what the source wrote as
		// master (reseed.Position), and nothing replicates yet
		// (skip-slave-start).
		if binlogState {
			err = setBinlogState(sctx, db, pos)
		}
		if err == nil {
			_, err = db.ExecContext(sctx, "SET GLOBAL gtid_slave_pos = "+mysqld.Quote(pos))
		}
		db.Close() // before the shutdown: a pooled connection would log a broken pipe
	}
	if serr := inst.Shutdown(2 * time.Minute); serr != nil && err == nil {
		err = fmt.Errorf("reseed: stop MariaDB: %w", serr)
	}
	if err != nil {
		return fmt.Errorf("reseed: set gtid_slave_pos %q: %w", pos, err)
	}
	return nil
}

// isMemberOf: the node is among its config's members (a node being added
// has itself there too, with "join": true).
func isMemberOf(cfg *config.Config) bool {
	for _, m := range cfg.SortedMembers() {
		if m.ID == cfg.ID {
			return true
		}
	}
	return false
}

// oldDirText says where a reseed or restore left the old datadir.
func oldDirText(dir string) string {
	if dir == "" {
		return "did not exist"
	}
	return "is kept in " + dir
}
