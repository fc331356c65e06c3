package capture

import (
	"fmt"
	"log/slog"
	"time"

	"phxgo/binlogd/binlog"
)

// Config configures one capture. Zero fields are not defaults: start from
// DefaultConfig.
type Config struct {
	// Addr is the local MariaDB, "host:port" or a unix socket path.
	Addr, User, Password string
	// ServerID is capture's own replica server_id. It must be unique among
	// replicas of this master: a second registration with a live server_id
	// froze MariaDB 10.11 (DESIGN.md).
	ServerID uint32
	// After is the last GTID already durable in the Paxos log; the stream
	// resumes right after it. Never take it from the master's
	// @@gtid_binlog_pos: that may hold transactions that never became
	// durable. Zero means from the start of the binlog.
	After binlog.GTID
	// BatchMaxBytes bounds a batch's raw event bytes; a batch always holds
	// at least one transaction, so a bigger transaction travels alone.
	BatchMaxBytes int
	// FragmentBytes is the most of one transaction capture buffers: a
	// bigger transaction leaves in pieces of about this size (cut at
	// event boundaries) as its events arrive, and the sink makes each
	// piece durable before the transaction ends. It is never held whole.
	FragmentBytes int
	// BufferBytes bounds the event bytes read and not yet durable;
	// reading pauses beyond it. It bounds capture's memory with
	// FragmentBytes (plus one event: a single event is always read whole).
	BufferBytes int
	// MaxInFlight is how many batches may be proposed and not yet durable
	// at once. It bounds memory and the log's queue, not a batch's size:
	// a batch is whatever waits when the pipeline proposes. Beyond it,
	// arrivals join one pending batch, so it also sets how finely a
	// commit group is cut into batches (Paxos commands).
	MaxInFlight int
	// GroupHold bounds how long the first transaction of a MariaDB
	// group commit of two or more, arriving alone, waits for the next
	// before it is proposed, counted from its arrival (pipeline.holding);
	// zero proposes at once.
	GroupHold time.Duration
	// HeartbeatPeriod asks the master for a heartbeat when idle; it must be
	// below ReadTimeout, which bounds the wait for any packet.
	HeartbeatPeriod, ReadTimeout time.Duration
	// ConnectTimeout bounds dialing and the handshake queries.
	ConnectTimeout time.Duration
	// MonitorPeriod is how often the safety monitor polls SHOW GLOBAL STATUS.
	MonitorPeriod time.Duration
	// MaxBackoff caps the pause between reconnect attempts.
	MaxBackoff time.Duration
	Logger     *slog.Logger
}

// DefaultConfig returns the settings binlogd uses; set Addr, User,
// Password, ServerID and After.
func DefaultConfig() Config {
	return Config{
		BatchMaxBytes: 4 << 20,
		FragmentBytes: 2 << 20,
		BufferBytes:   16 << 20,
		// 2, not 16: one batch pipelined behind the one in flight. At 16
		// and 64 sysbench threads binlogd spent 3% and 8% less CPU per
		// transaction with p95 mostly lower (issue 19, capture/doc.go);
		// 1, or holding a batch below 8 txns while one is in flight,
		// raised p95 at 64 threads.
		MaxInFlight: 2,
		// 2 ms: the next transaction is already synced to the binlog, so
		// a hold is the dump thread's delay, 0.2-0.7 ms under load; the
		// bound is for the unexpected (Stats.HoldTimeouts).
		GroupHold:       2 * time.Millisecond,
		HeartbeatPeriod: time.Second,
		ReadTimeout:     5 * time.Second,
		ConnectTimeout:  5 * time.Second,
		MonitorPeriod:   200 * time.Millisecond,
		MaxBackoff:      2 * time.Second,
	}
}

// Validate checks each field and the fields against each other.
func (c Config) Validate() error {
	bad := func(key, why string, v any) error {
		return fmt.Errorf("%w: %s=%v: %s", ErrBadConfig, key, v, why)
	}
	switch {
	case c.Addr == "":
		return bad("Addr", "required", `""`)
	case c.User == "":
		return bad("User", "required", `""`)
	case c.ServerID == 0:
		return bad("ServerID", "must be non-zero and unique among the master's replicas", 0)
	case c.BatchMaxBytes <= 0:
		return bad("BatchMaxBytes", "must be > 0", c.BatchMaxBytes)
	case c.FragmentBytes <= 0:
		return bad("FragmentBytes", "must be > 0", c.FragmentBytes)
	case c.BufferBytes < max(c.BatchMaxBytes, c.FragmentBytes):
		return bad("BufferBytes", fmt.Sprintf("must be >= BatchMaxBytes (%d) and FragmentBytes (%d)", c.BatchMaxBytes, c.FragmentBytes), c.BufferBytes)
	case c.MaxInFlight <= 0:
		return bad("MaxInFlight", "must be > 0", c.MaxInFlight)
	case c.GroupHold < 0:
		return bad("GroupHold", "must be >= 0", c.GroupHold)
	case c.HeartbeatPeriod <= 0:
		return bad("HeartbeatPeriod", "must be > 0", c.HeartbeatPeriod)
	case c.ReadTimeout <= c.HeartbeatPeriod:
		return bad("ReadTimeout", fmt.Sprintf("must exceed HeartbeatPeriod (%v), or an idle master looks dead", c.HeartbeatPeriod), c.ReadTimeout)
	case c.ConnectTimeout <= 0:
		return bad("ConnectTimeout", "must be > 0", c.ConnectTimeout)
	case c.MonitorPeriod <= 0:
		return bad("MonitorPeriod", "must be > 0", c.MonitorPeriod)
	case c.MaxBackoff <= 0:
		return bad("MaxBackoff", "must be > 0", c.MaxBackoff)
	}
	return nil
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.Default()
	}
	return c.Logger
}
