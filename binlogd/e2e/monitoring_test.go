package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"phxgo/binlogd/localcluster"
)

var monitoredName = regexp.MustCompile(`\b(?:phxgo|process|go)_[a-z0-9_]+\b`)

// checkMonitoringNames: every binlogd metric that scripts/monitoring's
// dashboard and alert rules query is served by some node of c (a renamed
// metric would leave a panel empty and an alert silent). sqlproxy's names
// are checked by scripts/monitoring's own test.
func checkMonitoringNames(t *testing.T, c *localcluster.Cluster) {
	t.Helper()
	served := map[string]bool{}
	for _, id := range c.IDs() {
		for key := range scrape(t, c, id) {
			name, _, _ := strings.Cut(key, "{")
			served[name] = true
		}
	}
	for _, f := range []string{"../../scripts/monitoring/grafana-dashboard.json", "../../scripts/monitoring/prometheus-rules.yml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range monitoredName.FindAllString(string(b), -1) {
			if strings.HasPrefix(name, "phxgo_sqlproxy_") {
				continue
			}
			if !served[name] {
				t.Errorf("%s names %s, which no binlogd node serves", f, name)
			}
		}
	}
}
