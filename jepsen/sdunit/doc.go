// Package sdunit stands in for systemd in tests: it runs a unit file's
// own command lines (ExecStartPre, ExecStart, ExecStop) as its User= (or
// behind a Prefix such as nsenter into a test host's namespace), waits for
// READY=1 from the main process for Type=notify (NotifyAccess=main is
// checked with the sender's credentials), expands Environment= and
// EnvironmentFile= into the command lines as systemd does ("${X}" one
// argument, a bare "$X" split at whitespace), and stops the unit the way its
// KillMode says, on a real cgroup v2 that holds every process the service
// started. Test machines run no systemd, and a test that only read a unit
// file could not show what its lines do to a node.
package sdunit
