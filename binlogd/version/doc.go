// Package version names the build every phxgo binary runs: its version,
// the commit it was built from, and the Go release that built it.
//
// Sources, first match wins for each part:
//
//	release build   go build -ldflags "-X phxgo/binlogd/version.Version=v0.4.0
//	                   -X phxgo/binlogd/version.Revision=<full hash> -X phxgo/binlogd/version.Modified=false"
//	                (`make build` passes these from git: the newest v* tag, HEAD, a dirty tree)
//	go build/install runtime/debug.ReadBuildInfo: the main module's version when
//	                it is a real one (go install phxgo/cmd/binlogd@v0.4.0) and the
//	                vcs.revision / vcs.modified settings Go stamps into a binary
//	                built inside a git checkout (unless -buildvcs=false)
//	otherwise       v0.0.0 and no revision ("unknown" in the metric)
//
// The short form is "<version>-<12 hex of revision>[-dirty]", e.g.
// "v0.4.0-993dfab1c2d3" (the revision is left off when the version string
// already carries it, as `git describe` output does). Every cmd/ binary
// prints it with -version as "<binary> <short> <go version>"; binlogd's
// Admin Status reports it (NodeStatus.version) so `binlogd cluster status`
// shows which build each member runs; binlogd and sqlproxy export
// phxgo_build_info{version,revision,goversion} 1 on /metrics.
//
// Nothing here is secret or decides anything: it only labels a build.
package version
