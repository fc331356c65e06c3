package preflight

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"phxgo/binlogd/config"
)

// CheckConfig loads and validates env.ConfigPath and sets env.Config. A
// file that fails validation is still read without validation, so the
// checks after this one can look at its paths and addresses; one that is
// not even JSON leaves env.Config nil.
func CheckConfig(env *Env) []Result {
	const name = "config"
	path := env.ConfigPath
	cfg, err := config.Load(path)
	if err == nil {
		env.Config = cfg
		return []Result{ok(name, "%s loads and validates (node %d, %d members)", path, cfg.ID, len(cfg.Members))}
	}
	if errors.Is(err, os.ErrNotExist) {
		return []Result{fail(name, "pass the node's config: binlogd check -config /etc/phxgo/NODE/binlogd.json (binlogd init -out DIR writes them)",
			"%s does not exist", path)}
	}
	if !errors.Is(err, config.ErrInvalid) {
		return []Result{fail(name, fmt.Sprintf("make %s readable by %s: chmod u+r %s", path, env.Runner.Name, path), "%v", err)}
	}
	env.Config = readLenient(path)
	fix := fmt.Sprintf("edit %s: correct the key named above (README \"binlogd config (JSON)\" lists every key)", path)
	if env.Config == nil {
		fix = fmt.Sprintf("edit %s: it must be one JSON object (check it with: python3 -m json.tool %s)", path, path)
	}
	return []Result{fail(name, fix, "%v", err)}
}

// readLenient reads a config without validation: unknown keys ignored,
// defaults set, relative paths resolved against the file's directory (as
// config.Load does). nil when the file is not a JSON object.
func readLenient(path string) *config.Config {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var c config.Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil
	}
	for _, m := range c.Members { // config.Load's migration of the pre-split members[].repl_addr
		if m.ID == c.ID && c.ReplAddr == "" {
			c.ReplAddr = m.LegacyReplAddr
		}
	}
	c.SetDefaults()
	base := filepath.Dir(path)
	for _, p := range []*string{&c.Dir, &c.MySQLDir, &c.CredentialsFile, &c.TLSCert, &c.TLSKey, &c.TLSCA} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
	return &c
}
