package preflight

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"phxgo/binlogd/config"
)

// defaultPasswords are the ones tests, docs and `make cluster` use
// (mysqld.DefaultAccounts) and the first guesses of anyone trying.
var defaultPasswords = map[string]bool{
	"app": true, "app-secret": true, "capture-secret": true, "proxy-secret": true,
	"secret": true, "password": true, "changeme": true, "root": true, "admin": true,
	"mysql": true, "mariadb": true, "phxgo": true, "123456": true,
}

// minPasswordLen: shorter is a warn (a guessable secret on a port
// strangers may reach).
const minPasswordLen = 12

// CheckCredentials parses the credentials file as binlogd does (every key
// known, the required ones set) and checks every *_password in it: none
// empty, none a default or the account's own name (FAIL), none short
// (warn). Its mode and owner are CheckSecretFiles' job; a missing file is
// reported there.
func CheckCredentials(env *Env) []Result {
	cfg := env.Config
	if cfg == nil || cfg.CredentialsFile == "" {
		return nil
	}
	const name = "credentials"
	path := cfg.CredentialsFile
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []Result{fail(name, fmt.Sprintf("sudo chown %s %s", env.Runner.Name, path), "%v", err)}
	}
	var cr config.Credentials
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cr); err != nil {
		return []Result{fail(name, fmt.Sprintf("edit %s: one JSON object with capture_user, capture_password, app_user, app_password (proxy_user, proxy_password optional)", path),
			"%s: %v", path, err)}
	}
	var fields map[string]any
	_ = json.Unmarshal(b, &fields) // decoded above, so it is an object
	var out []Result
	for _, k := range []string{"capture_user", "capture_password", "app_user", "app_password"} {
		if s, _ := fields[k].(string); s == "" {
			out = append(out, fail(name, fmt.Sprintf("set %q in %s", k, path), "%s: %q is missing or empty", path, k))
		}
	}
	var keys []string
	for k := range fields {
		if strings.HasSuffix(k, "_password") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		pw, _ := fields[k].(string)
		user, _ := fields[strings.TrimSuffix(k, "_password")+"_user"].(string)
		fix := fmt.Sprintf("set %q in %s to a random secret, e.g. the output of: openssl rand -base64 24", k, path)
		switch {
		case pw == "":
			continue // reported above when required; an optional account left unset is fine
		case defaultPasswords[strings.ToLower(pw)] || (user != "" && strings.EqualFold(pw, user)):
			out = append(out, fail(name, fix, "%s: %q is a default or guessable password", path, k))
		case len(pw) < minPasswordLen:
			out = append(out, warn(name, fix, "%s: %q is %d characters; use at least %d", path, k, len(pw), minPasswordLen))
		}
	}
	if len(out) == 0 {
		out = append(out, ok(name, "%s parses; %d passwords set, none default or short", path, len(keys)))
	}
	return out
}
