package ratelog

import (
	"sync"
	"time"
)

// Limiter lets a log line through at most once per Every. The zero
// Every lets every line through.
type Limiter struct {
	Every time.Duration

	mu   sync.Mutex
	last time.Time
	held int
}

// Allow reports whether to log now, and how many lines were held back
// since the last one let through (a line logged says how many it stands
// for).
func (l *Limiter) Allow(now time.Time) (ok bool, held int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < l.Every {
		l.held++
		return false, 0
	}
	held, l.held, l.last = l.held, 0, now
	return true, held
}

// Cut is s shortened to at most n bytes for a log line, "..." marking a
// cut: a stranger's user name or error text can be any length.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
