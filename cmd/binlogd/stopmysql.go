package main

import (
	"context"
	"database/sql/driver"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"phxgo/binlogd/mysqld"
	"phxgo/binlogd/role"
)

// cmdStopMySQL stops the node's MariaDB safely (systemd ExecStop, or by
// hand): a graceful shutdown of a master with commits waiting for their
// ACK would commit them in InnoDB, where no binlog cut can undo them. So:
// refuse new writes, give waiting commits a moment to be acknowledged by
// binlogd, then shut down gracefully only if nothing waits; otherwise
// SIGKILL, and recovery cuts what the log does not hold.
func cmdStopMySQL(args []string) error {
	fs := flag.NewFlagSet("stop-mysql", flag.ContinueOnError)
	cfgPath := fs.String("config", "binlogd.json", "config file")
	wait := fs.Duration("wait", 5*time.Second, "how long waiting commits may take to be acknowledged")
	cfg, err := parseConfig(fs, args, cfgPath)
	if err != nil {
		return err
	}
	host, port := cfg.MySQLBind()
	inst, err := mysqld.New(mysqld.Options{Dir: cfg.MySQLDir, Host: host, Port: port, ServerID: cfg.ID})
	if err != nil {
		return err
	}
	pid := readPid(inst.PidFile())
	if pid == 0 {
		fmt.Println("mariadbd is not running")
		return nil
	}
	db, err := inst.DB("")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *wait+30*time.Second)
	defer cancel()
	if err := role.SetReadOnly(ctx, db); err != nil {
		fmt.Fprintln(os.Stderr, "binlogd: read_only failed; killing mariadbd:", err)
		return kill(pid)
	}
	deadline := time.Now().Add(*wait)
	for {
		w, err := role.WaitingCommits(ctx, db)
		if err == nil && w == 0 {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "binlogd: %d commits still wait for an ACK (%v): SIGKILL, recovery will cut them\n", w, err)
			return kill(pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, _ = db.ExecContext(ctx, "STOP SLAVE")
	if _, err := db.ExecContext(ctx, "SHUTDOWN"); err != nil && !isConnGone(err) {
		return fmt.Errorf("SHUTDOWN: %w", err)
	}
	for mysqld.Alive(pid) {
		if ctx.Err() != nil {
			return kill(pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Println("mariadbd stopped gracefully (no commit was waiting)")
	return nil
}

func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || !mysqld.Alive(pid) {
		return 0
	}
	return pid
}

func kill(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	for mysqld.Alive(pid) {
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Println("mariadbd killed (SIGKILL)")
	return nil
}

// isConnGone: SHUTDOWN closes the connection before it can answer.
func isConnGone(err error) bool {
	return errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE)
}
