package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/config"
	"phxgo/internal/cli"
	pb "phxgo/proto"
)

// `binlogd cluster status`: the whole cluster in one table.
//
//	1. membership: Members from the first of -addr that answers (or, with
//	   none answering, the members of the -config file)
//	2. each member's Status, concurrently, each bounded by -timeout; a
//	   member that does not answer is a row with health "unreachable"
//	3. judge: per-row health and cluster problems (pure, table-tested)
//	4. print the table (or -json) and exit 0 healthy, 1 unhealthy, 2 usage
//
// It reads only: Members (node and admin certificates) and Status (any
// certificate of the cluster CA; with a proxy's, the membership comes
// from the first member's Status instead of Members).

// Exit codes of `binlogd cluster status` (README "Cluster status").
const (
	exitHealthy   = 0
	exitUnhealthy = 1 // or: no member could be asked for the membership
	exitUsage     = 2
)

// Health of one row, most severe first: a row's health is its first problem.
const (
	healthOK           = "ok"
	healthUnreachable  = "unreachable"   // its Status call failed or timed out
	healthUnsafe       = "unsafe"        // role UNSAFE: refuses to serve (unsafe_reason)
	healthReseedNeeded = "reseed_needed" // its MariaDB needs binlog the log no longer holds, or its datadir cannot be recovered
	healthMariaDBDown  = "mariadb_down"  // binlogd cannot reach its MariaDB
	healthLagging      = "lagging"       // over -max-lag-seconds or -max-lag-transactions
	// healthLogDiverged (logdigest.go), the most severe of all: the
	// node's log differs from another member's.
)

// clusterJSON is `binlogd cluster status -json` (README "Cluster status").
type clusterJSON struct {
	Healthy           bool         `json:"healthy"`
	MasterID          uint32       `json:"master_id"` // 0: no reachable member is master
	Problems          []string     `json:"problems"`  // empty when healthy
	MembershipFrom    string       `json:"membership_from"`
	MembershipPending bool         `json:"membership_pending"`
	Members           []clusterRow `json:"members"`
}

type clusterRow struct {
	ID       uint32 `json:"id"`
	GRPCAddr string `json:"grpc_addr"`
	// Role is the member's part in the cluster (clusterrole.go): master,
	// replica, learner, witness, candidate or unsafe from its status,
	// refined by the membership; "-" when unreachable and plain voter.
	Role     string      `json:"role"`
	Health   string      `json:"health"`
	Problems []string    `json:"problems"`
	Error    string      `json:"error"`  // why unreachable; "" otherwise
	Status   *statusJSON `json:"status"` // null when unreachable

	kind kind // from the membership (clusterrole.go)
}

// lagLimits are the thresholds of health "lagging"; 0 disables one.
type lagLimits struct {
	seconds      int64
	transactions uint64
}

// cmdCluster runs `binlogd cluster <sub>` and returns the exit code.
func cmdCluster(args []string, stdout, stderr io.Writer) int {
	const usage = "usage: binlogd cluster status -addr HOST:PORT[,HOST:PORT...] [-json] [-timeout D] [-max-lag-seconds N] [-max-lag-transactions N] [TLS flags as status]"
	if len(args) > 0 && cli.IsHelp(args[0]) {
		fmt.Fprintln(stderr, usage)
		args = []string{"status", "-h"} // and status's flags; exit 0
	}
	if len(args) == 0 || args[0] != "status" {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	fs := flag.NewFlagSet("cluster status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addrs := fs.String("addr", "127.0.0.1:17011", "any member's binlogd gRPC address (a comma-separated list: the first that answers gives the membership)")
	asJSON := fs.Bool("json", false, "print JSON (README \"Cluster status\" lists the keys)")
	timeout := fs.Duration("timeout", 3*time.Second, "give each member this long to answer")
	maxLagSecs := fs.Int64("max-lag-seconds", 30, "a replica further behind (Seconds_Behind_Master) is unhealthy; 0: no limit")
	maxLagTxns := fs.Int64("max-lag-transactions", 0, "a replica lacking more valid transactions is unhealthy; 0: no limit")
	tf := addTLSFlags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitHealthy
		}
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "binlogd cluster status: "+format+"\n", a...)
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		return usageErr("unexpected arguments %q", fs.Args())
	case *timeout <= 0:
		return usageErr("-timeout must be positive")
	case *maxLagSecs < 0 || *maxLagTxns < 0:
		return usageErr("-max-lag-seconds and -max-lag-transactions must be 0 (no limit) or positive")
	case strings.TrimSpace(*addrs) == "":
		return usageErr("-addr is required")
	}
	creds, err := tf.dialOption()
	if err != nil {
		return usageErr("%v", err)
	}
	ctx := context.Background()
	view, err := askMembership(ctx, strings.Split(*addrs, ","), *tf.config, creds, *timeout, tf.hint)
	if err != nil {
		fmt.Fprintln(stderr, "binlogd cluster status:", err)
		return exitUnhealthy
	}
	askStatuses(ctx, view.Members, creds, *timeout, tf.hint)
	judge(&view, lagLimits{seconds: *maxLagSecs, transactions: uint64(*maxLagTxns)})
	if *asJSON {
		err = writeJSON(stdout, view)
	} else {
		err = printCluster(stdout, view)
	}
	if err != nil {
		fmt.Fprintln(stderr, "binlogd cluster status:", err)
		return exitUnhealthy
	}
	if !view.Healthy {
		return exitUnhealthy
	}
	return exitHealthy
}

// askMembership returns rows (no status yet) for the members as the first
// answering address has them; with none answering, the -config file's
// members stand in (a cluster whose every member is down still gets rows).
func askMembership(ctx context.Context, addrs []string, cfgPath string, creds credsFor, timeout time.Duration, hint func(error) error) (clusterJSON, error) {
	var errs []error
	// Whoever answers must be a binlogd: the member at addr if -config
	// has one there, else any node.
	idAt := func(string) uint32 { return 0 }
	if cfgPath != "" {
		if cfg, err := config.Load(cfgPath); err == nil {
			idAt = func(addr string) uint32 { return memberAt(cfg, addr) }
		}
	}
	for _, addr := range addrs {
		addr = strings.TrimSpace(addr)
		if addr == "" {
			continue
		}
		r, err := call(ctx, addr, creds(idAt(addr)), timeout, func(ctx context.Context, cl pb.AdminClient) (*pb.MembersReply, error) {
			r, err := cl.Members(ctx, &pb.MembersRequest{})
			if status.Code(err) != codes.PermissionDenied {
				return r, err
			}
			// A proxy's certificate may read Status but not Members
			// (binlogd/node authz.go): Status carries the same list.
			st, err := cl.Status(ctx, &pb.StatusRequest{})
			if err != nil {
				return nil, err
			}
			return &pb.MembersReply{Members: st.Members}, nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("members from %s: %w", addr, hint(err)))
			continue
		}
		view := clusterJSON{MembershipFrom: addr, MembershipPending: r.Pending}
		for _, m := range r.Members {
			view.Members = append(view.Members, clusterRow{ID: m.Id, GRPCAddr: m.GrpcAddr, kind: memberKind(m)})
		}
		return view, nil
	}
	if cfgPath != "" {
		cfg, err := config.Load(cfgPath)
		if err == nil {
			view := clusterJSON{MembershipFrom: cfgPath}
			for _, m := range cfg.SortedMembers() {
				view.Members = append(view.Members, clusterRow{ID: m.ID, GRPCAddr: m.GRPCAddr, kind: configMemberKind(m)})
			}
			return view, nil
		}
		errs = append(errs, err)
	}
	return clusterJSON{}, fmt.Errorf("no member answered with the membership: %w", errors.Join(errs...))
}

// askStatuses fills in each row's Status (or Error), all members at once.
func askStatuses(ctx context.Context, rows []clusterRow, creds credsFor, timeout time.Duration, hint func(error) error) {
	var wg sync.WaitGroup
	for i := range rows {
		wg.Add(1)
		go func(r *clusterRow) {
			defer wg.Done()
			st, err := call(ctx, r.GRPCAddr, creds(r.ID), timeout, func(ctx context.Context, cl pb.AdminClient) (*pb.NodeStatus, error) {
				return cl.Status(ctx, &pb.StatusRequest{})
			})
			if err != nil {
				r.Error = hint(err).Error()
				return
			}
			s := newStatusJSON(st)
			r.Status = &s
		}(&rows[i])
	}
	wg.Wait()
}

// call dials addr through the commands' shared dial and makes one call
// bounded by timeout.
func call[T any](ctx context.Context, addr string, creds grpc.DialOption, timeout time.Duration, f func(context.Context, pb.AdminClient) (T, error)) (T, error) {
	var zero T
	cl, closeFn, err := dial(addr, creds)
	if err != nil {
		return zero, err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(ctx, cl)
}

// judge sets every row's health and problems and the cluster's verdict.
// Healthy means: exactly one member is master, every other reachable member
// sees it as master, and every row is ok.
func judge(v *clusterJSON, lim lagLimits) {
	sort.Slice(v.Members, func(i, j int) bool { return v.Members[i].ID < v.Members[j].ID })
	v.Problems, v.MasterID = []string{}, 0
	diverged, logProblems := judgeLogDigests(v.Members) // logdigest.go
	var masters []uint32
	for i := range v.Members {
		r := &v.Members[i]
		r.Role = rowRole(r)
		r.Problems = rowProblems(r, lim)
		if diverged[r.ID] {
			r.Problems = append([]string{healthLogDiverged}, r.Problems...)
		}
		r.Health = healthOK
		if len(r.Problems) > 0 {
			r.Health = r.Problems[0]
			v.Problems = append(v.Problems, fmt.Sprintf("node %d %s", r.ID, strings.Join(r.Problems, ", ")))
		}
		if r.Status != nil && r.Status.Role == "master" {
			masters = append(masters, r.ID)
		}
	}
	switch len(masters) {
	case 0:
		v.Problems = append(v.Problems, "no master")
	case 1:
		v.MasterID = masters[0]
		for _, r := range v.Members {
			if r.Status != nil && r.Status.MasterID != v.MasterID {
				v.Problems = append(v.Problems, fmt.Sprintf("node %d sees master %d, node %d is master", r.ID, r.Status.MasterID, v.MasterID))
			}
		}
	default:
		v.Problems = append(v.Problems, fmt.Sprintf("more than one member says master: %v", masters))
	}
	v.Problems = append(v.Problems, logProblems...)
	v.Healthy = len(v.Problems) == 0
}

// rowProblems lists a row's problems, most severe first.
func rowProblems(r *clusterRow, lim lagLimits) []string {
	st := r.Status
	if st == nil {
		return []string{healthUnreachable}
	}
	p := []string{}
	if st.Role == "unsafe" {
		p = append(p, healthUnsafe)
	}
	if st.ReseedNeeded {
		p = append(p, healthReseedNeeded)
	}
	// A binlogd older than the version field never set mysql_up: do not
	// read its zero value as "down".
	if !st.MySQLUp && st.Version != "" && r.Role != roleWitness { // a witness runs none
		p = append(p, healthMariaDBDown)
	}
	if (lim.seconds > 0 && st.LagSeconds > lim.seconds) || (lim.transactions > 0 && st.LagTransactions > lim.transactions) {
		p = append(p, healthLagging)
	}
	return p
}

// printCluster is the human table.
func printCluster(w io.Writer, v clusterJSON) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROLE\tLEASE\tEPOCH\tCHOSEN/APPLIED\tMARIADB GTID\tLAG TXNS\tLAG SECS\tHEALTH\tVERSION")
	for _, r := range v.Members {
		st := r.Status
		if st == nil {
			fmt.Fprintf(tw, "%d\t%s\t-\t-\t-\t-\t-\t-\t%s\t-\n", r.ID, r.Role, r.Health)
			continue
		}
		lease := "expired"
		if st.LeaseValid {
			lease = fmt.Sprintf("%.1fs valid", st.LeaseRemainingSeconds)
		}
		lagSecs := fmt.Sprint(st.LagSeconds)
		if st.LagSeconds < 0 {
			lagSecs = "?"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d/%d\t%s\t%d\t%s\t%s\t%s\n", r.ID, r.Role, lease, st.Epoch, st.ChosenIndex, st.AppliedIndex,
			orNone(st.MySQLGTIDPos), st.LagTransactions, lagSecs, r.Health, orDash(st.Version))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range v.Members {
		switch {
		case r.Error != "":
			fmt.Fprintf(w, "node %d (%s): %s\n", r.ID, r.GRPCAddr, r.Error)
		case r.Status != nil && r.Status.UnsafeReason != "":
			fmt.Fprintf(w, "node %d UNSAFE: %s\n", r.ID, r.Status.UnsafeReason)
		}
	}
	if v.MembershipPending {
		fmt.Fprintln(w, "a membership change is pending (binlogd members list)")
	}
	if v.Healthy {
		_, err := fmt.Fprintf(w, "cluster healthy: master %d, %d members\n", v.MasterID, len(v.Members))
		return err
	}
	_, err := fmt.Fprintf(w, "cluster UNHEALTHY: %s\n", strings.Join(v.Problems, "; "))
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
