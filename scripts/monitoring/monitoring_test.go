// Package monitoring holds the Grafana dashboard and the Prometheus alert
// rules; this test checks their shape and, with promtool on PATH, the rules'
// syntax. That every metric they name is one binlogd serves is checked
// against a live cluster by binlogd/e2e (checkMonitoringNames).
package monitoring

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

var metricName = regexp.MustCompile(`\b(?:phxgo|process|go)_[a-z0-9_]+\b`)

// MetricNames are the metric families the dashboard and rules refer to
// (histogram _bucket/_sum/_count reduced to the family).
func metricNames(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, f := range []string{"grafana-dashboard.json", "prometheus-rules.yml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metricName.FindAllString(string(b), -1) {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				m = strings.TrimSuffix(m, s)
			}
			out[m] = true
		}
	}
	return out
}

func TestDashboardShape(t *testing.T) {
	b, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard without uid or panels")
	}
	for _, p := range d.Panels {
		if p.Title == "" || len(p.Targets) == 0 {
			t.Errorf("panel %q has no title or no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.Count(q.Expr, "(") != strings.Count(q.Expr, ")") {
				t.Errorf("panel %q: unbalanced parentheses in %q", p.Title, q.Expr)
			}
		}
	}
}

// TestRules: promtool's check when installed (apt-get install prometheus),
// else a structural one: every rule has an alert, an expr and a summary.
func TestRules(t *testing.T) {
	b, err := os.ReadFile("prometheus-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	alerts := strings.Count(string(b), "- alert: ")
	if alerts < 8 || strings.Count(string(b), "\n        expr: ") != alerts || strings.Count(string(b), "summary: ") != alerts {
		t.Errorf("%d alerts; each needs expr and summary", alerts)
	}
	for _, want := range []string{"PhxgoLeaseFlapping", "PhxgoNoMaster", "PhxgoReplicaLagHigh", "PhxgoWALFsyncSlow",
		"PhxgoRejectedBatches", "PhxgoNodeUnsafe", "PhxgoCertificateExpiresSoon"} {
		if !strings.Contains(string(b), "alert: "+want+"\n") {
			t.Errorf("no alert %s", want)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not installed: structural check only")
		return
	}
	if out, err := exec.Command(promtool, "check", "rules", "prometheus-rules.yml").CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// TestProxyNames: the sqlproxy metrics the files name are ones
// sqlproxy/metrics.go registers. Its vectors have no sample before
// traffic and a Registry does not list descriptions, so this reads the
// source.
func TestProxyNames(t *testing.T) {
	src, err := os.ReadFile("../../sqlproxy/metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name := range metricNames(t) {
		if !strings.HasPrefix(name, "phxgo_sqlproxy_") {
			continue
		}
		n++
		if !strings.Contains(string(src), `Name: "`+name+`"`) {
			t.Errorf("%s is not registered by sqlproxy/metrics.go", name)
		}
	}
	if n == 0 {
		t.Error("the files name no sqlproxy metric")
	}
}
