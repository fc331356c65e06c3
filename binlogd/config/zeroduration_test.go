package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExplicitZeroDuration: lease_duration, drift_margin and log_retention
// have defaults that fill an ABSENT key; an explicit "0s" used to be
// taken for the default too, silently. None has a meaning for 0 (no lease,
// no room for clock drift, entries kept no time at all), so "0s" is now a
// config error naming the key and the default.
func TestExplicitZeroDuration(t *testing.T) {
	for _, c := range []struct{ key, def string }{
		{"lease_duration", "5s"},
		{"drift_margin", "500ms"},
		{"log_retention", "24h"},
	} {
		_, err := loadBody(t, strings.Replace(good, `"dir":"n1",`, `"dir":"n1","`+c.key+`":"0s",`, 1))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `key "`+c.key+`"`) ||
			!strings.Contains(err.Error(), "omit the key for the default "+c.def) {
			t.Errorf(`%s "0s": %v, want an error naming the key and its default`, c.key, err)
		}
	}
	// Absent: the defaults.
	cfg, err := loadBody(t, good)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LeaseDuration.Duration != DefaultLeaseDuration || cfg.DriftMargin.Duration != DefaultDriftMargin || cfg.LogRetention.Duration != DefaultLogRetention {
		t.Fatalf("defaults: lease %v, drift %v, retention %v", cfg.LeaseDuration, cfg.DriftMargin, cfg.LogRetention)
	}
	// Given: kept.
	cfg, err = loadBody(t, strings.Replace(good, `"dir":"n1",`, `"dir":"n1","lease_duration":"2s","drift_margin":"100ms","log_retention":"1m",`, 1))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LeaseDuration.Duration != 2*time.Second || cfg.DriftMargin.Duration != 100*time.Millisecond || cfg.LogRetention.Duration != time.Minute {
		t.Fatalf("given: lease %v, drift %v, retention %v", cfg.LeaseDuration, cfg.DriftMargin, cfg.LogRetention)
	}
}

// TestSaveKeepsUnsetAndZeroApart: a config built in code with a zero
// duration (make cluster's, for the default) is saved without the key and
// loads with the default; one loaded with "0s" is saved with "0s".
func TestSaveKeepsUnsetAndZeroApart(t *testing.T) {
	dir := t.TempDir()
	built := &Config{ID: 1, Dir: "n1", MySQLDir: "n1/mysql", CredentialsFile: "cred.json", Security: Security{InsecureNoTLS: true},
		Members: []Member{{ID: 1, GRPCAddr: "127.0.0.1:1", MySQLAddr: "127.0.0.1:2"}, {ID: 2, GRPCAddr: "127.0.0.1:4", MySQLAddr: "127.0.0.1:5"},
			{ID: 3, GRPCAddr: "127.0.0.1:7", MySQLAddr: "127.0.0.1:8"}},
		LeaseDuration: Duration{Duration: 3 * time.Second}} // drift_margin, log_retention left for their defaults
	p := filepath.Join(dir, "built.json")
	if err := built.Save(p); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(p)
	if err != nil {
		t.Fatalf("a saved config with unset durations: %v", err)
	}
	if cfg.DriftMargin.Duration != DefaultDriftMargin || cfg.LogRetention.Duration != DefaultLogRetention || cfg.LeaseDuration.Duration != 3*time.Second {
		t.Fatalf("reloaded: lease %v, drift %v, retention %v", cfg.LeaseDuration, cfg.DriftMargin, cfg.LogRetention)
	}

	zero, err := loadBody(t, good)
	if err != nil {
		t.Fatal(err)
	}
	if err := zero.LogRetention.UnmarshalJSON([]byte(`"0s"`)); err != nil {
		t.Fatal(err)
	}
	p = filepath.Join(dir, "zero.json")
	if err := zero.Save(p); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "log_retention") {
		t.Fatalf(`an explicit "0s" saved and loaded again: %v, want it refused`, err)
	}
}
