package hosts

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The application: one writer inserting rows with increasing ids through
// one proxy, from the app's host. A row is acknowledged when its INSERT
// (autocommit) returned OK; an error or a timeout is an unknown outcome
// (the row may or may not exist) and is not counted. Every acknowledged
// row must be on every node at the end.

// writer inserts into app_hosts.rows through one proxy.
type writer struct {
	db      *sql.DB
	mu      sync.Mutex
	acked   []ack
	errors  int
	lastErr error
	stopc   chan struct{}
	done    chan struct{}
	logf    func(string, ...any)
	// failing: since when writes fail (zero while they succeed), and the
	// first error of that stretch, logged when writes succeed again.
	failing  time.Time
	firstErr error
	failures int
}

type ack struct {
	id int64
	at time.Time
}

// appDB opens addr (a proxy or a MariaDB) as the app user, dialing from
// the app's namespace.
func (l *lab) appDB(addr, user, pass string) (*sql.DB, error) {
	network := "phxhosts" + l.prefix
	mysql.RegisterDialContext(network, func(ctx context.Context, addr string) (net.Conn, error) {
		return l.app.DialContext(ctx, "tcp", addr)
	})
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr = user, pass, network, addr
	mc.Timeout, mc.ReadTimeout, mc.WriteTimeout = 3*time.Second, 8*time.Second, 8*time.Second
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(2)
	db.SetConnMaxLifetime(time.Minute)
	return db, nil
}

// startWriter begins inserting through db (the table exists).
func startWriter(db *sql.DB, logf func(string, ...any)) *writer {
	w := &writer{db: db, stopc: make(chan struct{}), done: make(chan struct{}), logf: logf}
	go w.loop()
	return w
}

func (w *writer) loop() {
	defer close(w.done)
	for id := int64(1); ; id++ {
		select {
		case <-w.stopc:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		_, err := w.db.ExecContext(ctx, "INSERT INTO app_hosts.rows (id, at) VALUES (?, ?)", id, time.Now().UnixNano())
		cancel()
		w.mu.Lock()
		if err == nil {
			w.acked = append(w.acked, ack{id: id, at: time.Now()})
			if !w.failing.IsZero() {
				w.logf("app: no write succeeded for %.1fs (%d errors, first: %v)", time.Since(w.failing).Seconds(), w.failures, w.firstErr)
				w.failing, w.failures = time.Time{}, 0
			}
		} else {
			w.errors++
			w.lastErr = err
			if w.failing.IsZero() {
				w.failing, w.firstErr = time.Now(), err
			}
			w.failures++
		}
		w.mu.Unlock()
		if err != nil {
			select {
			case <-w.stopc:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

func (w *writer) stop() { close(w.stopc); <-w.done }

// count is the number of acknowledged rows.
func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// awaitAcks waits for n more acknowledgements than there were at call time.
func (w *writer) awaitAcks(ctx context.Context, n int, within time.Duration) error {
	want := w.count() + n
	deadline := time.Now().Add(within)
	for w.count() < want {
		if time.Now().After(deadline) || ctx.Err() != nil {
			w.mu.Lock()
			defer w.mu.Unlock()
			return fmt.Errorf("the app got %d of %d acknowledgements within %v (%d errors, last: %v)", len(w.acked)-(want-n), n, within, w.errors, w.lastErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// outage is the longest time the application saw no write succeed
// between from and to: the largest gap between consecutive
// acknowledgements, counting from the last one before from. Acks that
// land between the cut's start and the moment it takes effect do not
// hide the outage that follows.
func (w *writer) outage(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var prev time.Time
	var longest time.Duration
	for _, a := range w.acked {
		if a.at.After(to) {
			break
		}
		if !prev.IsZero() && a.at.After(from) && a.at.Sub(prev) > longest {
			longest = a.at.Sub(prev)
		}
		prev = a.at
	}
	return longest
}

// ackedIDs is a copy of the acknowledged ids.
func (w *writer) ackedIDs() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]int64, len(w.acked))
	for i, a := range w.acked {
		ids[i] = a.id
	}
	return ids
}

func (w *writer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d acked, %d errors", len(w.acked), w.errors)
}

// missing returns the acknowledged ids absent from db's app_hosts.rows.
func missing(ctx context.Context, db *sql.DB, ids []int64) ([]int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT id FROM app_hosts.rows")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		have[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []int64
	for _, id := range ids {
		if !have[id] {
			out = append(out, id)
		}
	}
	return out, nil
}
