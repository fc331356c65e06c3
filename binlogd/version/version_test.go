package version

import (
	"runtime/debug"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestResolveAndShort(t *testing.T) {
	const rev = "993dfab1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7"
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		name          string
		ver, rev, mod string
		bi            *debug.BuildInfo
		want          string
	}{
		{"nothing known", "", "", "", nil, "v0.0.0"},
		{"go build in a checkout", "", "", "", vcs, "v0.0.0-993dfab1c2d3-dirty"},
		{"make build: ldflags win", "v0.4.0", rev, "false", vcs, "v0.4.0-993dfab1c2d3"},
		{"git describe already names the commit", "v0.4.0-3-g993dfab-dirty", rev, "true", nil, "v0.4.0-3-g993dfab-dirty"},
		{"go install of a tagged module", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, "v0.4.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolve(tc.ver, tc.rev, tc.mod, tc.bi).Short()
			if got != tc.want {
				t.Fatalf("Short() = %q, want %q", got, tc.want)
			}
		})
	}
	in := resolve("v0.4.0", rev, "", vcs)
	if line := in.Line("binlogd"); line != "binlogd v0.4.0-993dfab1c2d3-dirty go1.26.8" {
		t.Fatalf("Line = %q", line)
	}
}

func TestCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "phxgo_build_info" || len(mfs[0].Metric) != 1 {
		t.Fatalf("gathered %v", mfs)
	}
	m := mfs[0].Metric[0]
	labels := map[string]string{}
	for _, l := range m.Label {
		labels[l.GetName()] = l.GetValue()
	}
	in := Get()
	rev := in.Revision
	if rev == "" {
		rev = "unknown"
	}
	want := map[string]string{"version": in.Short(), "revision": rev, "goversion": in.GoVersion}
	if m.GetGauge().GetValue() != 1 || len(labels) != 3 {
		t.Fatalf("phxgo_build_info = %v %v", m.GetGauge().GetValue(), labels)
	}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, labels[k], v)
		}
	}
}
