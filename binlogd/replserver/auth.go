package replserver

import (
	"errors"
	"fmt"
	"net"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"
)

// account is who a connection authenticated as.
type account uint8

const (
	// accountNode is Config.User: the node's own MariaDB (and operators'
	// tools on the node). Unchanged by outside replicas: it may do all the
	// endpoint does, with or without TLS.
	accountNode account = iota + 1
	// accountOutside is Config.ReplUser: an outside replica. It may only
	// dump the log (outside.go), and must use TLS when the endpoint
	// offers it.
	accountOutside
)

func (a account) String() string {
	if a == accountOutside {
		return "outside"
	}
	return "node"
}

// erAccessDenied is ER_ACCESS_DENIED_ERROR, what MariaDB answers a login
// that fails for any reason (wrong name, password, or missing TLS).
const erAccessDenied = 1045

// accounts is the endpoint's authentication handler: the node's account,
// the outside replicas' account when configured, and nobody else. Every
// other name is checked against a random password no client can know, so
// a stranger gets 1045 Access denied whatever name it tries, and cannot
// learn which names exist.
type accounts struct {
	nodeUser, nodePassword string
	replUser, replPassword string
	tlsOffered             bool
	decoy                  string
	// failed is told the remote address of every wrong password
	// (loginbudget.go); nil: nobody is.
	failed func(net.Addr)
}

func newAccounts(cfg Config) *accounts {
	return &accounts{nodeUser: cfg.User, nodePassword: cfg.Password, replUser: cfg.ReplUser, replPassword: cfg.ReplPassword,
		tlsOffered: cfg.TLS != nil, decoy: string(mysql.RandomBuf(32))}
}

func (a *accounts) of(user string) account {
	if a.replUser != "" && user == a.replUser {
		return accountOutside
	}
	return accountNode
}

// GetCredential implements server.AuthenticationHandler.
func (a *accounts) GetCredential(user string) (server.Credential, bool, error) {
	pw := a.decoy
	switch {
	case user == a.nodeUser:
		pw = a.nodePassword
	case a.replUser != "" && user == a.replUser:
		pw = a.replPassword
	}
	return server.Credential{Passwords: []string{pw}, AuthPluginName: mysql.AUTH_NATIVE_PASSWORD}, true, nil
}

// OnAuthSuccess implements server.AuthenticationHandler: the outside
// account must have come over TLS when the endpoint offers it (the node
// runs with TLS). It is checked after the password, so the refusal tells
// only a holder of the password what to change.
func (a *accounts) OnAuthSuccess(c *server.Conn) error {
	if a.of(c.GetUser()) != accountOutside || !a.tlsOffered {
		return nil
	}
	if g, ok := c.Conn.Conn.(*preAuthGuard); ok && g.overTLS() { // the guard answers the SSLRequest (preauth.go)
		return nil
	}
	return mysql.NewError(erAccessDenied, fmt.Sprintf("Access denied for user '%s': binlogd's replication endpoint serves this account over TLS only (CHANGE MASTER TO MASTER_SSL=1, MASTER_SSL_CA='<the cluster's ca.pem>', MASTER_SSL_VERIFY_SERVER_CERT=1)", c.GetUser()))
}

// OnAuthFailure implements server.AuthenticationHandler (the caller
// logs): a wrong name or password spends one of the address's failures.
// go-mysql calls it for a malformed handshake response too, which is no
// guess and spends nothing.
func (a *accounts) OnAuthFailure(c *server.Conn, err error) {
	var me *mysql.MyError
	if a.failed != nil && errors.As(err, &me) && me.Code == erAccessDenied {
		a.failed(c.RemoteAddr())
	}
}
