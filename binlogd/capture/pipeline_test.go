package capture

import (
	"errors"
	"strings"
	"testing"

	"phxgo/binlogd/binlog"
)

func TestAcceptDedupesAndOrders(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr, cfg.User, cfg.ServerID = "x:1", "u", 9
	c, err := New(cfg, newRecSink())
	if err != nil {
		t.Fatal(err)
	}
	c.durable = binlog.GTID{Server: 1, Seq: 5}
	c.dispatched = c.durable
	p := &pipeline{c: c}
	u := func(seq uint64, domain uint32) *unit {
		return &unit{txn: binlog.Txn{GTID: binlog.GTID{Domain: domain, Server: 1, Seq: seq}, Events: make([]byte, 40)}}
	}
	for _, seq := range []uint64{4, 5} { // re-delivered after a reconnect
		if err := p.accept(u(seq, 0)); err != nil || p.pending != nil {
			t.Fatalf("duplicate %d: err=%v pending=%v", seq, err, p.pending)
		}
	}
	if c.Stats().Duplicates != 2 {
		t.Fatalf("duplicates: %+v", c.Stats())
	}
	if err := p.accept(u(6, 0)); err != nil || len(p.pending.txns) != 1 {
		t.Fatal(err)
	}
	if err := p.accept(u(6, 0)); !errors.Is(err, ErrProtocol) {
		t.Fatalf("repeated GTID inside a batch: %v", err)
	}
	if err := p.accept(u(7, 1)); !errors.Is(err, ErrBadSettings) {
		t.Fatalf("second domain: %v", err)
	}
	// A transaction that does not fit waits for the next batch.
	p.c.cfg.BatchMaxBytes = 60
	if err := p.accept(u(7, 0)); err != nil || p.held == nil || len(p.pending.txns) != 1 {
		t.Fatalf("held=%v err=%v", p.held, err)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Addr, ok.User, ok.ServerID = "127.0.0.1:3306", "u", 7
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"Addr":          func(c *Config) { c.Addr = "" },
		"ServerID":      func(c *Config) { c.ServerID = 0 },
		"ReadTimeout":   func(c *Config) { c.ReadTimeout = c.HeartbeatPeriod },
		"MaxInFlight":   func(c *Config) { c.MaxInFlight = 0 },
		"BatchMaxBytes": func(c *Config) { c.BatchMaxBytes = -1 },
	} {
		c := ok
		mut(&c)
		err := c.Validate()
		if !errors.Is(err, ErrBadConfig) || !contains(err.Error(), name+"=") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestParseDumpPacket(t *testing.T) {
	ev, ack, err := parseDumpPacket([]byte{0, 0xef, 1, 9, 9})
	if err != nil || !ack || len(ev) != 2 {
		t.Fatal(ev, ack, err)
	}
	if _, _, err := parseDumpPacket([]byte{0, 1, 2, 3}); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("no semi-sync header: %v", err)
	}
	if _, _, err := parseDumpPacket([]byte{0xff, 0xd4, 0x04, '#', 'H', 'Y', '0', '0', '0', 'x'}); err == nil || fatal(err) != true {
		t.Fatalf("ERR 1236: %v", err)
	}
}
