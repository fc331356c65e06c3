package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Set at link time by release builds and `make build` (see doc.go); empty
// means "ask runtime/debug".
var (
	Version  string // e.g. v0.4.0
	Revision string // full commit hash
	Modified string // "true" when built from a tree with uncommitted changes
)

// Info is one binary's build.
type Info struct {
	Version   string // semantic version, v0.0.0 when unknown
	Revision  string // full commit hash, "" when unknown
	Modified  bool   // built from a tree with uncommitted changes
	GoVersion string // runtime.Version() of the toolchain, e.g. go1.26.8
}

var (
	once sync.Once
	info Info
)

// Get returns this binary's build (computed once).
func Get() Info {
	once.Do(func() {
		bi, _ := debug.ReadBuildInfo()
		info = resolve(Version, Revision, Modified, bi)
	})
	return info
}

// resolve merges the link-time values with the runtime's build info; the
// link-time values win.
func resolve(ver, rev, mod string, bi *debug.BuildInfo) Info {
	in := Info{Version: ver, Revision: rev, Modified: mod == "true", GoVersion: runtime.Version()}
	if bi != nil {
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && rev == "":
				in.Revision = s.Value
			case s.Key == "vcs.modified" && mod == "":
				in.Modified = s.Value == "true"
			}
		}
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
	}
	if in.Version == "" {
		in.Version = "v0.0.0"
	}
	return in
}

// Short is the version with the revision, e.g. "v0.4.0-993dfab1c2d3-dirty".
func (i Info) Short() string {
	s := i.Version
	if r := i.Revision; r != "" {
		if len(r) > 12 {
			r = r[:12]
		}
		if !strings.Contains(s, r[:min(7, len(r))]) { // git describe output already names it
			s += "-" + r
		}
	}
	if i.Modified && !strings.HasSuffix(s, "-dirty") && !strings.HasSuffix(s, "+dirty") {
		s += "-dirty"
	}
	return s
}

// Line is what -version prints: "<binary> <short> <go version>".
func (i Info) Line(binary string) string {
	return fmt.Sprintf("%s %s %s", binary, i.Short(), i.GoVersion)
}

// Print writes Get().Line(binary) and a newline to w.
func Print(w io.Writer, binary string) {
	fmt.Fprintln(w, Get().Line(binary))
}

// Collector is phxgo_build_info{version,revision,goversion} 1, the usual
// Prometheus build-info gauge: join on it to label other series with the
// build (e.g. during a rolling upgrade).
func Collector() prometheus.Collector {
	in := Get()
	rev := in.Revision
	if rev == "" {
		rev = "unknown"
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "phxgo_build_info",
		Help: "1, labelled with the running build: version (short form, with revision), revision (full commit hash), goversion"},
		[]string{"version", "revision", "goversion"})
	g.WithLabelValues(in.Short(), rev, in.GoVersion).Set(1)
	return g
}
