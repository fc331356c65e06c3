package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/config"
	"phxgo/binlogd/localcluster"
)

// TestReplicaCatchUpBench measures how fast replicas apply a burst: a
// 10 s sysbench oltp_insert at 16 threads straight to the master's
// MariaDB, then the time until every replica has applied the master's
// last GTID. Only with PHXGO_CATCHUP_BENCH=1 (it is long, and a figure,
// not a check). PHXGO_CATCHUP_BINDIRS="old=/dir,new=/dir" runs the same
// measurement on several builds, one after the other, in one run (the
// working tree's build is "tree"); PHXGO_CATCHUP_SECONDS sets the burst.
func TestReplicaCatchUpBench(t *testing.T) {
	if os.Getenv("PHXGO_CATCHUP_BENCH") != "1" {
		t.Skip("set PHXGO_CATCHUP_BENCH=1")
	}
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench not installed")
	}
	secs := 10
	if s := os.Getenv("PHXGO_CATCHUP_SECONDS"); s != "" {
		secs, _ = strconv.Atoi(s)
	}
	builds := [][2]string{{"tree", binDir}}
	if s := os.Getenv("PHXGO_CATCHUP_BINDIRS"); s != "" {
		builds = nil
		for _, kv := range strings.Split(s, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if v == "tree" {
				v = binDir
			}
			builds = append(builds, [2]string{k, v})
		}
	}
	var lines []string
	for _, b := range builds {
		t.Run(b[0], func(t *testing.T) {
			l := catchUpOnce(t, b[0], b[1], secs)
			t.Log(l)
			lines = append(lines, l)
		})
	}
	for _, l := range lines {
		t.Log(l)
		fmt.Println(l)
	}
}

func catchUpOnce(t *testing.T, label, bin string, secs int) string {
	c, master := localcluster.StartSpecForTest(t, localcluster.Spec{BinDir: bin, Nodes: 3, LeaseDuration: 5 * time.Second})
	cr, err := config.LoadCredentials(filepath.Join(c.Spec.Dir, "credentials.json"))
	if err != nil {
		t.Fatal(err)
	}
	appDBWith(t, c, master, "CREATE DATABASE sbtest").Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	host, port, _ := strings.Cut(c.MySQLAddr(master), ":")
	args := []string{"oltp_insert", "--db-driver=mysql", "--mysql-host=" + host, "--mysql-port=" + port,
		"--mysql-user=" + cr.AppUser, "--mysql-password=" + cr.AppPassword, "--mysql-db=sbtest",
		"--tables=4", "--table-size=1000", "--threads=16", fmt.Sprintf("--time=%d", secs), "--report-interval=0"}
	if out, err := exec.Command("sysbench", append(args, "prepare")...).CombinedOutput(); err != nil {
		t.Fatalf("sysbench prepare: %v\n%s", err, out)
	}
	// The burst goes to whoever is master now (a loaded host may have
	// moved the lease during prepare).
	if master, err = c.WaitHealthy(ctx, nil); err != nil {
		t.Fatal(err)
	}
	host, port, _ = strings.Cut(c.MySQLAddr(master), ":")
	args[2], args[3] = "--mysql-host="+host, "--mysql-port="+port
	out, err := exec.Command("sysbench", append(args, "run")...).CombinedOutput()
	if err != nil {
		t.Fatalf("sysbench run: %v\n%s", err, out)
	}
	end := time.Now()
	mdb := rootDB(t, c, master)
	defer mdb.Close()
	target, err := gtidPos(ctx, mdb)
	if err != nil {
		t.Fatal(err)
	}
	var behind uint64
	for _, id := range c.IDs() {
		if id == master {
			continue
		}
		rdb := rootDB(t, c, id)
		g, _ := gtidPos(ctx, rdb)
		behind = max(behind, target.Seq-min(g.Seq, target.Seq))
		for !covered(g, target) {
			if ctx.Err() != nil {
				t.Fatalf("node %d at %v, master at %v", id, g, target)
			}
			time.Sleep(20 * time.Millisecond)
			g, _ = gtidPos(ctx, rdb)
		}
		rdb.Close()
	}
	catchup := time.Since(end).Seconds()
	tps := "?"
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "transactions:") {
			tps = strings.TrimSpace(l)
		}
	}
	return fmt.Sprintf("CATCHUP build=%s burst_s=%d master=%v %s replicas_behind_at_end=%d catchup_s=%.2f apply_tps=%.0f",
		label, secs, target, tps, behind, catchup, float64(behind)/max(catchup, 0.001))
}

func covered(g, target binlog.GTID) bool { return g.Domain == target.Domain && g.Seq >= target.Seq }
