package sdunit

import (
	"strings"
	"sync"
)

// stopPost runs the ExecStopPost lines with SERVICE_RESULT, as systemd
// does once the unit's main process is gone; their failures are the
// unit's log's business, not the stop's.
func (s *Service) stopPost(result string) {
	for _, argv := range s.u.ExecStopPost {
		cmd, err := s.command(argv, "SERVICE_RESULT="+result)
		if err != nil {
			continue
		}
		_ = s.run(cmd)
	}
}

// Cgroups a KillMode=process stop left processes in: systemd leaves them
// running (a mariadbd kept for the next binlogd to adopt); the test's
// cleanup removes them with RemoveLeftovers.
var (
	leftoverMu sync.Mutex
	leftovers  []string
)

func keepLeftover(cg string) {
	leftoverMu.Lock()
	defer leftoverMu.Unlock()
	leftovers = append(leftovers, cg)
}

// RemoveLeftovers SIGKILLs what stops with KillMode=process left running
// and removes their cgroups.
func RemoveLeftovers() {
	leftoverMu.Lock()
	cgs := leftovers
	leftovers = nil
	leftoverMu.Unlock()
	for _, cg := range cgs {
		removeCgroup(cg)
	}
}

// splitCommand splits a unit's command line into words as systemd does
// for the lines the units use: white space separates words, and single
// or double quotes keep a word together (sh -c '...').
func splitCommand(line string) []string {
	var (
		out   []string
		word  strings.Builder
		quote rune
		in    bool
	)
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, word.String())
				word.Reset()
				in = false
			}
		default:
			word.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, word.String())
	}
	return out
}
