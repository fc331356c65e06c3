package sqlproxy

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"phxgo/binlogd/mtls"
)

// Reload (SIGHUP to cmd/sqlproxy) applies changed files without a
// restart, so no client connection drops and no transaction is cut:
//
//   - the TLS files of Config.PeerTLS (same paths as at start; a new path
//     needs a restart): certificate, key and CA pool, for new handshakes
//     on the MySQL port, on the hop to the master's proxy and to binlogd
//     (tlsreload.go); connections already open keep their session;
//   - the settings file (Config.SettingsFile, settings.go): routing
//     rules, for the next statement routed, and the log level.
//
// All or nothing: a file that does not load, a certificate of another
// identity, a rule out of range or a level that does not parse leaves
// every old setting in force; the error names the file (and key) and is
// logged, and phxgo_sqlproxy_reloads_total{result="error"} counts it.
//
// There is no admin endpoint for it: the HTTP listener (/metrics,
// /backends) authenticates nobody, so a signal from the process's owner
// (or root) is the only trigger.

// ReloadResult is what a successful Reload put in force.
type ReloadResult struct {
	CertSerial string // hex; "" without TLS
	CertExpiry string // RFC 3339; "" without TLS
	Rules      Rules
	LogLevel   string // "" when the level is not settable
}

// reloadState is the Server's part that Reload changes.
type reloadState struct {
	mu    sync.Mutex            // one reload at a time
	rules atomic.Pointer[Rules] // what routing reads now; never mutated once stored
	base  settings              // Config.Rules and the level at start: what the settings file overrides
}

// initReload reads the settings file once at start: a bad one refuses
// to start, as a bad flag does.
func (s *Server) initReload() error {
	s.reload.base = settings{rules: s.cfg.Rules, level: slog.LevelInfo}
	if s.cfg.LogLevel != nil {
		s.reload.base.level = s.cfg.LogLevel.Level()
	}
	cur, err := loadSettings(s.cfg.SettingsFile, s.reload.base, s.cfg.LogLevel != nil)
	if err != nil {
		return err
	}
	s.apply(cur)
	if t := s.cfg.PeerTLS; t != nil {
		// Shows that a reload took: the expiry moves. A second Server on
		// the same Metrics keeps the first one's gauge (tests only).
		_ = s.metrics.Registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "phxgo_sqlproxy_tls_cert_expiry_timestamp_seconds",
			Help: "NotAfter of the certificate new TLS handshakes present, unix seconds (follows reloads; no sample without TLS)",
		}, func() float64 { return float64(t.Material().Leaf.NotAfter.Unix()) }))
	}
	return nil
}

func (s *Server) apply(cur settings) {
	r := cur.rules
	s.reload.rules.Store(&r)
	if s.cfg.LogLevel != nil {
		s.cfg.LogLevel.Set(cur.level)
	}
}

// rules are the routing rules in force. Read them once per decision: a
// reload may replace them between two reads.
func (s *Server) rules() *Rules {
	if r := s.reload.rules.Load(); r != nil {
		return r
	}
	return &s.cfg.Rules // a Server not made by New (tests)
}

// Reload re-reads the TLS files and the settings file and puts them in
// force together, or, on any error, none of them (see above). It is safe
// to call at any time, also concurrently.
func (s *Server) Reload() (ReloadResult, error) {
	s.reload.mu.Lock()
	defer s.reload.mu.Unlock()
	res, err := s.reloadLocked(time.Now())
	if err != nil {
		s.metrics.reloads.WithLabelValues("error").Inc()
		s.log.Error("sqlproxy: reload refused; the old certificates, rules and log level stay", "err", err)
		return res, err
	}
	s.metrics.reloads.WithLabelValues("ok").Inc()
	r := res.Rules
	attrs := []any{"read_master_percentage", r.ReadMasterPercentage, "master_preferred", r.MasterPreferred, "hold", r.Hold,
		"master_wait", r.MasterWait, "max_replica_lag", r.MaxReplicaLag, "max_replica_behind", r.MaxReplicaBehind, "causal_wait", r.CausalWait}
	if res.CertSerial != "" {
		attrs = append(attrs, "cert_serial", res.CertSerial, "cert_expires", res.CertExpiry)
	}
	if res.LogLevel != "" {
		attrs = append(attrs, "log_level", res.LogLevel)
	}
	s.log.Info("sqlproxy: reloaded", attrs...)
	return res, nil
}

func (s *Server) reloadLocked(now time.Time) (ReloadResult, error) {
	var res ReloadResult
	var next *mtls.Material
	if t := s.cfg.PeerTLS; t != nil {
		old := t.Material()
		m, err := mtls.Load(old.Files, now)
		if err != nil {
			return res, fmt.Errorf("TLS files: %w", err)
		}
		// Other proxies accept a hop by the identity in the certificate,
		// and binlogd authorises by it: another one would silently change
		// what this proxy may do.
		if m.Identity != old.Identity {
			return res, fmt.Errorf("TLS files: %s holds the certificate of %s, but this proxy runs as %s (a new identity needs a restart)", m.Files.Cert, m.Identity, old.Identity)
		}
		next = m
	}
	cur, err := loadSettings(s.cfg.SettingsFile, s.reload.base, s.cfg.LogLevel != nil)
	if err != nil {
		return res, err
	}
	// Nothing can fail from here: swap everything.
	if next != nil {
		s.cfg.PeerTLS.Store(next)
		res.CertSerial = strings.ToLower(next.Leaf.SerialNumber.Text(16))
		res.CertExpiry = next.Leaf.NotAfter.UTC().Format(time.RFC3339)
	}
	s.apply(cur)
	res.Rules = cur.rules
	if s.cfg.LogLevel != nil {
		res.LogLevel = strings.ToLower(cur.level.String())
	}
	return res, nil
}
