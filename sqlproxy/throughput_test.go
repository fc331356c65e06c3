package sqlproxy

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var throughput = flag.Bool("throughput", false, "measure point-select QPS through the proxy vs direct (a figure, not an assertion)")

// TestThroughput prints point-select QPS direct vs through the proxy, with
// go-sql-driver and with sysbench oltp_point_select. Run:
//
//	go test ./sqlproxy -run TestThroughput -throughput -v
func TestThroughput(t *testing.T) {
	if !*throughput {
		t.Skip("pass -throughput")
	}
	insts := startInstances(t, 1)
	m := insts[0]
	p := startProxy(t, 1, masterView(m), Linearizable, []string{m.Addr()}, nil)
	ctx := context.Background()
	setup := appDB(t, m.Addr(), "", false)
	if _, err := setup.ExecContext(ctx, "CREATE DATABASE sbtest"); err != nil {
		t.Fatal(err)
	}
	const threads, dur = 8, 10 * time.Second
	goQPS := func(addr string) float64 {
		db := appDB(t, addr, "sbtest", false)
		db.SetMaxOpenConns(threads)
		db.SetMaxIdleConns(threads)
		db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS pk (id INT PRIMARY KEY, v INT)")
		db.ExecContext(ctx, "INSERT IGNORE INTO pk SELECT seq, seq FROM seq_1_to_1000")
		var n atomic.Int64
		end := time.Now().Add(dur)
		var wg sync.WaitGroup
		for g := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, err := db.PrepareContext(ctx, "SELECT v FROM pk WHERE id = ?")
				if err != nil {
					t.Error(err)
					return
				}
				defer st.Close()
				for i := g; time.Now().Before(end); i++ {
					var v int
					if err := st.QueryRowContext(ctx, i%1000+1).Scan(&v); err != nil {
						t.Error(err)
						return
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		return float64(n.Load()) / dur.Seconds()
	}
	d, pr := goQPS(m.Addr()), goQPS(p.addr)
	t.Logf("go-sql-driver point select, %d clients: direct %.0f qps, proxy %.0f qps, ratio %.3f", threads, d, pr, pr/d)
	fmt.Printf("THROUGHPUT go-sql-driver direct=%.0f proxy=%.0f ratio=%.3f\n", d, pr, pr/d)

	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Log("sysbench not installed")
		return
	}
	sb := func(addr, cmd string) float64 {
		host, port, _ := net.SplitHostPort(addr)
		args := []string{"oltp_point_select", "--db-driver=mysql", "--mysql-host=" + host, "--mysql-port=" + port,
			"--mysql-user=app", "--mysql-password=app-secret", "--mysql-db=sbtest", "--tables=1", "--table-size=10000",
			fmt.Sprintf("--threads=%d", threads), fmt.Sprintf("--time=%d", int(dur.Seconds())), cmd}
		out, err := exec.Command("sysbench", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("sysbench %s: %v\n%s", cmd, err, out)
		}
		mm := regexp.MustCompile(`queries:\s+\d+\s+\(([\d.]+) per sec`).FindSubmatch(out)
		if mm == nil {
			return 0
		}
		var q float64
		fmt.Sscan(string(mm[1]), &q)
		return q
	}
	sb(m.Addr(), "prepare")
	sd, sp := sb(m.Addr(), "run"), sb(p.addr, "run")
	t.Logf("sysbench oltp_point_select, %d threads: direct %.0f qps, proxy %.0f qps, ratio %.3f", threads, sd, sp, sp/sd)
	fmt.Printf("THROUGHPUT sysbench direct=%.0f proxy=%.0f ratio=%.3f\n", sd, sp, sp/sd)
}
