package config

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// DefaultReplUser is the outside replicas' account name `binlogd init`
// and `make cluster` generate.
const DefaultReplUser = "phxgo_repl"

// validateRepl checks repl_user/repl_password: both or neither, and a
// name of its own. The endpoint tells its two accounts apart by name
// only: the capture account (the node's own MariaDB) may do what the
// outside one may not.
func (cr Credentials) validateRepl() error {
	switch {
	case cr.ReplUser == "" && cr.ReplPassword == "":
		return nil
	case cr.ReplUser == "":
		return fmt.Errorf("key \"repl_user\" is required with repl_password")
	case cr.ReplPassword == "":
		return fmt.Errorf("key \"repl_password\" is required with repl_user (an outside replica's account needs a password)")
	case cr.ReplUser == cr.CaptureUser:
		return fmt.Errorf("key \"repl_user\" %q is capture_user's name: the outside replicas need an account of their own", cr.ReplUser)
	}
	return nil
}

// AddReplAccount gives cr the outside replicas' account (DefaultReplUser
// with a random password) when it has none, and reports whether it did.
func (cr *Credentials) AddReplAccount() bool {
	if cr.ReplUser != "" || cr.ReplPassword != "" {
		return false
	}
	cr.ReplUser, cr.ReplPassword = DefaultReplUser, RandomSecret()
	return true
}

// RandomSecret is a random password: 18 bytes from crypto/rand as hex.
func RandomSecret() string {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
