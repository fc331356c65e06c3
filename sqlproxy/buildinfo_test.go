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
