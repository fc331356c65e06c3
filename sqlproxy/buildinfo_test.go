package sqlproxy

import (
	"testing"

	"phxgo/binlogd/version"
)

// The proxy's /metrics registry carries phxgo_build_info (binlogd/version).
func TestMetricsBuildInfo(t *testing.T) {
	mfs, err := NewMetrics(nil).Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "phxgo_build_info" {
			continue
		}
		for _, l := range mf.Metric[0].Label {
			if l.GetName() == "version" && l.GetValue() == version.Get().Short() && mf.Metric[0].GetGauge().GetValue() == 1 {
				return
			}
		}
		t.Fatalf("phxgo_build_info: %v", mf)
	}
	t.Fatal("no phxgo_build_info in the proxy's registry")
}

// The proxy's own registry also serves the Go and process collectors, so
// the dashboard's CPU and memory panels cover proxies as well as binlogd.
func TestMetricsRuntimeCollectors(t *testing.T) {
	mfs, err := NewMetrics(nil).Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"go_goroutines": false, "process_cpu_seconds_total": false}
	for _, mf := range mfs {
		if _, ok := want[mf.GetName()]; ok {
			want[mf.GetName()] = true
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("no %s in the proxy's registry", name)
		}
	}
}
