package sqlproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"phxgo/binlogd/config"
)

// The settings file (Config.SettingsFile, flag -settings) holds what a
// reload may change besides certificates: the routing rules and the log
// level. Its keys are the flags' names with '_' for '-'; each is
// optional, and an absent key keeps the start value (the flag), so
// deleting a key and reloading goes back to the flag. Durations are
// strings ("250ms"). An unknown key is an error, so a typo cannot pass
// for a setting that silently does nothing:
//
//	{
//	  "read_master_percentage": 20,
//	  "master_preferred": false,
//	  "hold": "256ms",
//	  "master_wait": "2s",
//	  "max_replica_lag": "10s",
//	  "max_replica_behind": 10000,
//	  "causal_wait": "1s",
//	  "log_level": "info"
//	}
type settingsFile struct {
	Hold                 *config.Duration `json:"hold"`
	MasterWait           *config.Duration `json:"master_wait"`
	ReadMasterPercentage *int             `json:"read_master_percentage"`
	MasterPreferred      *bool            `json:"master_preferred"`
	MaxReplicaLag        *config.Duration `json:"max_replica_lag"`
	MaxReplicaBehind     *int64           `json:"max_replica_behind"`
	CausalWait           *config.Duration `json:"causal_wait"`
	LogLevel             *string          `json:"log_level"`
}

// settings are the rules and level in force: the start values with the
// settings file laid over them.
type settings struct {
	rules Rules
	level slog.Level
}

// loadSettings lays the file at path (none when "") over base and checks
// the result; the error names the file and the key.
func loadSettings(path string, base settings, levelSettable bool) (settings, error) {
	if path == "" {
		return base, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return base, fmt.Errorf("%w: settings file: %v", ErrConfig, err)
	}
	var f settingsFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return base, fmt.Errorf("%w: settings file %s: %v", ErrConfig, path, err)
	}
	if dec.More() {
		return base, fmt.Errorf("%w: settings file %s: more than one JSON object", ErrConfig, path)
	}
	out := base
	r := &out.rules
	for _, d := range []struct {
		from *config.Duration
		to   *time.Duration
	}{{f.Hold, &r.Hold}, {f.MasterWait, &r.MasterWait}, {f.MaxReplicaLag, &r.MaxReplicaLag}, {f.CausalWait, &r.CausalWait}} {
		if d.from != nil {
			*d.to = d.from.Duration
		}
	}
	if f.ReadMasterPercentage != nil {
		r.ReadMasterPercentage = *f.ReadMasterPercentage
	}
	if f.MasterPreferred != nil {
		r.MasterPreferred = *f.MasterPreferred
	}
	if f.MaxReplicaBehind != nil {
		r.MaxReplicaBehind = *f.MaxReplicaBehind
	}
	if f.LogLevel != nil {
		if !levelSettable {
			return base, fmt.Errorf("%w: settings file %s: log_level: this proxy's logger has no settable level", ErrConfig, path)
		}
		if err := out.level.UnmarshalText([]byte(*f.LogLevel)); err != nil {
			return base, fmt.Errorf("%w: settings file %s: log_level %q: want debug, info, warn or error", ErrConfig, path, *f.LogLevel)
		}
	}
	if err := out.rules.Validate(); err != nil {
		return base, fmt.Errorf("settings file %s: %w", path, err)
	}
	return out, nil
}
