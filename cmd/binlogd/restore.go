package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mysqld"
	"phxgo/binlogd/reseed"
	"phxgo/internal/cli"
)

// cmdRestore makes a stopped node's MariaDB datadir from a backup
// directory (`binlogd backup`), like reseed does from a live replica:
//
//  1. refuse while the node's binlogd or MariaDB runs (stoppedNode);
//  2. copy the backup beside the datadir and swap it in
//     (reseed.RestoreDir; the old datadir is kept unless -discard-old);
//  3. start MariaDB once, set gtid_slave_pos to the backup's position,
//     stop it: the node replicates from its binlogd right after it.
//
// With -new-cluster the node belongs to a cluster rebuilt from the backup
// (disaster recovery): its Paxos log must be empty, and the empty log's
// chain must start at the backup's GTID, not at "none", or the new
// master's first batch (prev = the backup's GTID) would be rejected and
// its replicas, asking for what follows that GTID, find it nowhere. So
// restore also
//
//  4. writes base_gtid = the backup's GTID into the node's config
//     (masterlease.Lease.SetBase: the state before the log's first entry
//     has that last GTID, as after a compaction; binlogd/node serves
//     replicas from there);
//  5. makes the GTID MariaDB's binlog state (RESET MASTER; SET GLOBAL
//     gtid_binlog_state): a backup carries no binlog, and MariaDB numbers
//     a master's next transaction from its binlog state, so without it the
//     node would write seq 1 again if it became master (gtid_strict_mode
//     then refuses its replicas); capture's dump request from the GTID
//     finds it in the new binlog's Gtid_list.
//
// Every node of the new cluster is restored from the same backup with
// -new-cluster, so any of them can be its first master.
func cmdRestore(args []string) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	cfgPath := fs.String("config", "binlogd.json", "the config of the node to restore (run on its host, its binlogd stopped)")
	from := fs.String("from", "", "the backup directory (binlogd backup -out)")
	newCluster := fs.Bool("new-cluster", false, "the node is a member of a new cluster rebuilt from this backup: its log starts at the backup's GTID (writes base_gtid to -config)")
	discardOld := fs.Bool("discard-old", false, "remove the old datadir after the swap instead of keeping it as <datadir>.old-<time>")
	every := fs.Duration("progress", time.Second, "interval of the progress lines on stderr")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *from == "" {
		return cli.Usagef("restore: -from BACKUP_DIR is required")
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	m, err := reseed.ReadManifest(*from)
	if err != nil {
		return err
	}
	base := ""
	if *newCluster {
		if base, err = newClusterBase(cfg, m.Position); err != nil {
			return err
		}
	}
	inst, ctx, done, err := stoppedInstance(cfg)
	if err != nil {
		return err
	}
	defer done()

	target := reseed.Target{DataDir: inst.DataDir(), DiscardOld: *discardOld, Progress: os.Stderr, Every: *every}
	_, res, err := reseed.RestoreDir(ctx, *from, target)
	if err != nil {
		return fmt.Errorf("%w (the old datadir %s is unchanged)", err, inst.DataDir())
	}
	if err := setPosition(ctx, inst, m.Position, *newCluster); err != nil {
		return fmt.Errorf("%w (the copy is in %s; the old datadir %s)", err, inst.DataDir(), oldDirText(res.OldDir))
	}
	if err := target.DiscardOldDir(&res); err != nil {
		return err
	}
	if *newCluster {
		if err := setConfigKey(*cfgPath, "base_gtid", base); err != nil {
			return err
		}
	}
	old := "discarded"
	if res.OldDir != "" {
		old = "kept in " + res.OldDir
	}
	fmt.Printf("restored node %d from %s (node %d's data, taken %s): GTID position %q; old datadir %s\n",
		cfg.ID, *from, m.SourceNode, m.TakenAt.Format(time.RFC3339), m.Position, old)
	if *newCluster {
		fmt.Printf("new cluster: %s has base_gtid %q; restore every member the same way, then start them\n", *cfgPath, base)
	} else {
		fmt.Printf("next: start the node (binlogd run -config %s); it replicates from the log after %s, if the log still holds it\n", *cfgPath, orNone(m.Position))
	}
	return nil
}

var oneGTID = regexp.MustCompile(`^\d+-\d+-\d+$`)

// newClusterBase checks that cfg's node can start a new cluster at pos
// and returns the base_gtid to record ("" for a backup of an empty
// server: its cluster starts like any new one).
func newClusterBase(cfg *config.Config, pos string) (string, error) {
	if cfg.Join {
		return "", errors.New("restore -new-cluster: the config has join: a new cluster's members are listed in every config from the start")
	}
	wal := filepath.Join(cfg.Dir, "paxos")
	if ents, err := os.ReadDir(wal); err == nil {
		for _, e := range ents {
			if e.Name() != "wal.lock" {
				return "", fmt.Errorf("restore -new-cluster: node %d has a Paxos log in %s; a new cluster starts with none (move it away, or restore the node into its own cluster without -new-cluster)", cfg.ID, wal)
			}
		}
	}
	if pos != "" && !oneGTID.MatchString(pos) {
		return "", fmt.Errorf("restore -new-cluster: the backup's position %q has several GTID domains; phxgo uses one", pos)
	}
	if cfg.BaseGTID != "" && cfg.BaseGTID != pos {
		return "", fmt.Errorf("restore -new-cluster: the config already has base_gtid %q, the backup is at %q: every member must be restored from the same backup", cfg.BaseGTID, pos)
	}
	return pos, nil
}

// setBinlogState makes pos the server's binlog state on a server whose
// binlog holds nothing of value (a restored copy: mariadb-backup copies
// no binlog), so its next transaction as master follows pos.
func setBinlogState(ctx context.Context, db *sql.DB, pos string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, q := range []string{"RESET MASTER", "SET GLOBAL gtid_binlog_state = " + mysqld.Quote(pos)} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// setConfigKey sets one top-level key of a JSON config file, keeping the
// others as they are, and writes it atomically with the file's mode.
//
// The file is rewritten where it lives (a symlinked config's target),
// with its mode and owner: restore runs as root, binlogd's unit as the
// user that owns its config. The temporary file is created new (O_EXCL),
// never through a name someone left there (red-team pass, session 37).
func setConfigKey(path, key string, value any) error {
	path, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	v, err := json.Marshal(value)
	if err != nil {
		return err
	}
	if s, ok := value.(string); ok && s == "" {
		delete(doc, key)
	} else {
		doc[key] = v
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return fmt.Errorf("restore: %w (a %s left by an earlier run? remove it)", err, tmp)
	}
	_, werr := f.Write(append(out, '\n'))
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && werr == nil {
		werr = f.Chown(int(sys.Uid), int(sys.Gid))
	}
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if _, err := config.Load(path); err != nil {
		return fmt.Errorf("restore: the config with %s no longer loads: %w", key, err)
	}
	return nil
}
