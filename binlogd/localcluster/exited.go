package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Exited lists the processes of this cluster that should run and do not:
// every node's binlogd, and its sqlproxy when the cluster has proxies.
// Each entry names the process and quotes the last line of its log, so a
// launcher waiting for the cluster can stop at once and say why (a
// binlogd that could not bind its port used to leave `phxcluster up`
// polling "connection refused" until -wait ran out).
func (c *Cluster) Exited() []string {
	var out []string
	for _, id := range c.IDs() {
		procs := []string{"binlogd"}
		if c.Spec.Proxy && !c.Spec.IsWitness(int(id)) {
			procs = append(procs, "sqlproxy")
		}
		for _, proc := range procs {
			if c.Pid(id, proc) != 0 {
				continue
			}
			log := filepath.Join(c.Spec.NodeDir(int(id)), proc+".log")
			out = append(out, fmt.Sprintf("node %d: %s is not running; its log %s ends: %s", id, proc, log, lastLine(log)))
		}
	}
	return out
}

// lastLine is the last non-empty line of the file at path, at most 400
// bytes of it, or why there is none.
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(empty)"
	}
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}
