package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mysqld"
	"phxgo/internal/cli"
)

// cmdSeed gives a new node's MariaDB the data of a running replica, so it
// joins without replaying the whole log (or when the log was compacted):
//
//  1. create the new node's datadir and start its mariadbd (binlogd's own
//     my.cnf for the node);
//  2. mariadb-dump --single-transaction --gtid --master-data=2 of the
//     replica's user databases, loaded with sql_log_bin=0 (the new server
//     writes no GTID of its own);
//  3. SET GLOBAL gtid_slave_pos to the dump's position, so the node's
//     replication from its own binlogd resumes right after it;
//  4. stop that mariadbd (cleanly: nothing waits for an ACK on it).
//
// Then `binlogd run` starts it again, recovers, and replicates from the
// log. scripts/seed-node.sh wraps it.
func cmdSeed(args []string) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	cfgPath := fs.String("config", "binlogd.json", "the NEW node's config")
	fromSocket := fs.String("from-socket", "", "source replica's MariaDB unix socket (as root)")
	from := fs.String("from", "", "source replica's MariaDB host:port (instead of -from-socket)")
	fromUser := fs.String("from-user", "root", "with -from: account (needs SELECT, SHOW VIEW, TRIGGER, EVENT, LOCK TABLES, RELOAD)")
	fromPassFile := fs.String("from-password-file", "", "with -from: file holding the password (mode 0600)")
	cfg, err := parseConfig(fs, args, cfgPath)
	if err != nil {
		return err
	}
	if (*fromSocket == "") == (*from == "") {
		return cli.Usagef("seed: give exactly one of -from-socket and -from")
	}
	if _, err := os.Stat(filepath.Join(cfg.MySQLDir, "data", "mysql")); err == nil {
		return fmt.Errorf("seed: %s already holds a MariaDB datadir; seeding needs an empty mysql_dir", filepath.Join(cfg.MySQLDir, "data"))
	}
	pass := ""
	if *fromPassFile != "" {
		st, err := os.Stat(*fromPassFile)
		if err != nil {
			return fmt.Errorf("seed: -from-password-file: %w", err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			return fmt.Errorf("seed: -from-password-file %s has mode %v, want 0600", *fromPassFile, st.Mode().Perm())
		}
		b, err := os.ReadFile(*fromPassFile)
		if err != nil {
			return err
		}
		pass = strings.TrimSpace(string(b))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	src := mysql.NewConfig()
	src.User, src.Passwd, src.Timeout = *fromUser, pass, 10*time.Second
	dumpArgs := []string{"--single-transaction", "--gtid", "--master-data=2", "--routines", "--triggers", "--events", "--hex-blob"}
	if *fromSocket != "" {
		// The admin account is socket-only, named after this OS user.
		src.User, src.Net, src.Addr = mysqld.AdminUser(), "unix", *fromSocket
		dumpArgs = append(dumpArgs, "--socket="+*fromSocket, "--user="+mysqld.AdminUser())
	} else {
		host, port, err := net.SplitHostPort(*from)
		if err != nil {
			return fmt.Errorf("seed: -from %q: %w", *from, err)
		}
		src.Net, src.Addr = "tcp", *from
		dumpArgs = append(dumpArgs, "--host="+host, "--port="+port, "--user="+*fromUser)
	}
	sdb, err := sql.Open("mysql", src.FormatDSN())
	if err != nil {
		return err
	}
	defer sdb.Close()
	dbs, err := userDatabases(ctx, sdb)
	if err != nil {
		return fmt.Errorf("seed: list databases on the source: %w", err)
	}

	host, port := cfg.MySQLBind()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	inst, err := mysqld.New(mysqld.Options{Dir: cfg.MySQLDir, Host: host, Port: port, ServerID: cfg.ID, Extra: cfg.MySQLExtra, Logger: logger})
	if err != nil {
		return err
	}
	if err := inst.Init(ctx); err != nil {
		return err
	}
	if err := inst.Start(ctx); err != nil {
		return err
	}
	defer func() {
		if err := inst.Shutdown(2 * time.Minute); err != nil {
			fmt.Fprintln(os.Stderr, "seed: stop mariadbd:", err)
		}
	}()
	var pos string
	if len(dbs) == 0 {
		// Nothing to copy: start from wherever the source is.
		if err := sdb.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_current_pos").Scan(&pos); err != nil {
			return err
		}
	} else {
		if pos, err = dumpInto(ctx, append(dumpArgs, append([]string{"--databases"}, dbs...)...), pass, inst.Socket()); err != nil {
			return err
		}
	}
	ndb, err := inst.DB("")
	if err != nil {
		return err
	}
	defer ndb.Close()
	if _, err := ndb.ExecContext(ctx, "SET GLOBAL gtid_slave_pos = "+mysqld.Quote(pos)); err != nil {
		return fmt.Errorf("seed: set gtid_slave_pos %q: %w", pos, err)
	}
	fmt.Printf("seeded node %d from %s%s: databases %v, position %q\n", cfg.ID, *fromSocket, *from, dbs, pos)
	return nil
}

func userDatabases(ctx context.Context, db *sql.DB) ([]string, error) {
	return mysqld.QueryStrings(ctx, db, "SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT IN ('mysql','information_schema','performance_schema','sys') ORDER BY 1")
}

var gtidLine = regexp.MustCompile(`gtid_slave_pos\s*=\s*'([0-9,\-]*)'`)

// dumpInto pipes mariadb-dump into the new server (binlog off for the
// load) and returns the dump's GTID position.
func dumpInto(ctx context.Context, dumpArgs []string, pass, socket string) (string, error) {
	dump := exec.CommandContext(ctx, "mariadb-dump", dumpArgs...)
	dump.Env = append(os.Environ(), "MYSQL_PWD="+pass)
	var dumpErr strings.Builder
	dump.Stderr = &dumpErr
	out, err := dump.StdoutPipe()
	if err != nil {
		return "", err
	}
	load := exec.CommandContext(ctx, "mariadb", "--socket="+socket, "--user="+mysqld.AdminUser(), "--binary-mode")
	var loadErr strings.Builder
	load.Stderr = &loadErr
	in, err := load.StdinPipe()
	if err != nil {
		return "", err
	}
	if err := load.Start(); err != nil {
		return "", fmt.Errorf("seed: start mariadb client: %w", err)
	}
	if err := dump.Start(); err != nil {
		in.Close()
		_ = load.Wait()
		return "", fmt.Errorf("seed: start mariadb-dump: %w", err)
	}
	pos := ""
	_, werr := io.WriteString(in, "SET SESSION sql_log_bin=0;\n")
	r := bufio.NewReaderSize(out, 1<<20)
	for werr == nil {
		line, err := r.ReadSlice('\n')
		if pos == "" && len(line) < 512 {
			if m := gtidLine.FindSubmatch(line); m != nil {
				pos = string(m[1])
			}
		}
		if len(line) > 0 {
			_, werr = in.Write(line)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			break
		}
	}
	in.Close()
	derr := dump.Wait()
	lerr := load.Wait()
	switch {
	case werr != nil || lerr != nil:
		return "", fmt.Errorf("seed: load into the new server: %v %v: %s", werr, lerr, loadErr.String())
	case derr != nil:
		return "", fmt.Errorf("seed: mariadb-dump: %w: %s", derr, dumpErr.String())
	case pos == "":
		return "", errors.New("seed: the dump carries no gtid_slave_pos line (mariadb-dump without --gtid support?)")
	}
	return pos, nil
}
