package sdunit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Environment= and EnvironmentFile= as systemd reads them (systemd.exec(5)):
// the files are read when the unit starts, each KEY=VALUE line with
// surrounding quotes removed, '#' and ';' lines ignored, a "-" before the
// path making a missing file no error. In command lines "${KEY}" becomes
// one argument (or part of one), and a word that is exactly "$KEY" becomes
// the value split at whitespace (none for an empty value), which is how
// phxgo-sqlproxy@.service passes $EXTRA_FLAGS.

var (
	wholeVar  = regexp.MustCompile(`^\$([A-Za-z_][A-Za-z0-9_]*)$`)
	bracedVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// environment reads the unit's Environment= and EnvironmentFile= values,
// later assignments winning as in systemd.
func (u *Unit) environment() (map[string]string, error) {
	env := map[string]string{}
	for _, line := range u.Environment {
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = strings.Trim(v, `"`)
			}
		}
	}
	for _, path := range u.EnvironmentFiles {
		optional := strings.HasPrefix(path, "-")
		path = strings.TrimPrefix(path, "-")
		if err := readEnvFile(path, env); err != nil {
			if optional && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("%s: EnvironmentFile=%s: %w", u.Name, path, err)
		}
	}
	return env, nil
}

// ReadEnvFile reads one EnvironmentFile as systemd does (above): what a
// unit started with it gets in its environment.
func ReadEnvFile(path string) (map[string]string, error) {
	env := map[string]string{}
	if err := readEnvFile(path, env); err != nil {
		return nil, err
	}
	return env, nil
}

func readEnvFile(path string, env map[string]string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("bad line %q", line)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[strings.TrimSpace(k)] = v
	}
	return sc.Err()
}

// expand substitutes env into argv as systemd does for Exec lines.
func expand(argv []string, env map[string]string) []string {
	var out []string
	for _, a := range argv {
		if m := wholeVar.FindStringSubmatch(a); m != nil {
			out = append(out, strings.Fields(env[m[1]])...)
			continue
		}
		out = append(out, bracedVar.ReplaceAllStringFunc(a, func(s string) string {
			return env[bracedVar.FindStringSubmatch(s)[1]]
		}))
	}
	return out
}

// envList is env as KEY=VALUE for a process's environment.
func envList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}
