package mtls

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// Role is what a certificate's holder is to the cluster. Each binlogd
// listener authorises by role (binlogd/node/authz.go): the CA says who
// someone is, the role says what they may do.
type Role string

// The roles phxgo issues certificates for.
const (
	RoleNode  Role = "node"  // a binlogd node: Paxos, and Admin calls nodes make to each other
	RoleProxy Role = "proxy" // a sqlproxy: the MySQL hop and the read-only Admin calls it needs
	RoleAdmin Role = "admin" // the operator's CLI: every Admin call
)

// URIScheme is the scheme of the SAN URI that carries an Identity.
const URIScheme = "phxgo"

// Identity is who a certificate belongs to, carried in exactly one SAN URI
// (phxgo://node/3, phxgo://proxy/3, phxgo://admin). The CommonName is not
// used: a URI SAN is typed, and x509 parses it for us.
type Identity struct {
	Role Role
	ID   uint32 // the node id for node/proxy, 0 for admin
}

// Sentinel errors of IdentityOf (and of Load, which calls it).
var (
	// ErrNoIdentity: the certificate has no phxgo:// URI SAN (e.g. one made
	// by make-test-ca.sh before identities existed). Re-issue it.
	ErrNoIdentity = errors.New("certificate carries no phxgo identity (no phxgo:// URI SAN); re-issue it with `binlogd init` or scripts/make-test-ca.sh")
	// ErrBadIdentity: a phxgo:// URI SAN that is not a known identity, or
	// more than one of them.
	ErrBadIdentity = errors.New("bad phxgo identity in certificate")
)

// String is the identity for people: "node 3", "proxy 3", "admin".
func (i Identity) String() string {
	if i.Role == RoleAdmin {
		return "admin"
	}
	return fmt.Sprintf("%s %d", i.Role, i.ID)
}

// URI is the SAN URI that carries i.
func (i Identity) URI() string {
	if i.Role == RoleAdmin {
		return URIScheme + "://admin"
	}
	return fmt.Sprintf("%s://%s/%d", URIScheme, i.Role, i.ID)
}

// FileBase is the file name stem of i's certificate and key in a
// certificate directory: "node3", "proxy3", "admin".
func (i Identity) FileBase() string {
	if i.Role == RoleAdmin {
		return "admin"
	}
	return fmt.Sprintf("%s%d", i.Role, i.ID)
}

// Validate reports whether i is one phxgo issues: node and proxy with an
// id > 0, admin with id 0.
func (i Identity) Validate() error {
	switch i.Role {
	case RoleNode, RoleProxy:
		if i.ID == 0 {
			return fmt.Errorf("%w: %s needs a node id > 0", ErrBadIdentity, i.Role)
		}
	case RoleAdmin:
		if i.ID != 0 {
			return fmt.Errorf("%w: admin has no id (got %d)", ErrBadIdentity, i.ID)
		}
	default:
		return fmt.Errorf("%w: unknown role %q (want node, proxy or admin)", ErrBadIdentity, i.Role)
	}
	return nil
}

// ParseIdentityURI parses a phxgo:// URI.
func ParseIdentityURI(u *url.URL) (Identity, error) {
	if u.Scheme != URIScheme || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Port() != "" {
		return Identity{}, fmt.Errorf("%w: %q", ErrBadIdentity, u.String())
	}
	id := Identity{Role: Role(u.Host)}
	switch id.Role {
	case RoleAdmin:
		if u.Path != "" && u.Path != "/" {
			return Identity{}, fmt.Errorf("%w: %q (admin has no id)", ErrBadIdentity, u.String())
		}
	case RoleNode, RoleProxy:
		if len(u.Path) < 2 || u.Path[0] != '/' {
			return Identity{}, fmt.Errorf("%w: %q (want %s://%s/<node id>)", ErrBadIdentity, u.String(), URIScheme, id.Role)
		}
		n, err := strconv.ParseUint(u.Path[1:], 10, 32)
		if err != nil || n == 0 {
			return Identity{}, fmt.Errorf("%w: %q (node id must be a number > 0)", ErrBadIdentity, u.String())
		}
		id.ID = uint32(n)
	default:
		return Identity{}, fmt.Errorf("%w: %q (unknown role; want node, proxy or admin)", ErrBadIdentity, u.String())
	}
	return id, nil
}

// IdentityOf reads the identity from cert's phxgo:// URI SAN. No such SAN
// is ErrNoIdentity; a malformed one or more than one is ErrBadIdentity.
func IdentityOf(cert *x509.Certificate) (Identity, error) {
	var found []*url.URL
	for _, u := range cert.URIs {
		if u.Scheme == URIScheme {
			found = append(found, u)
		}
	}
	switch len(found) {
	case 0:
		return Identity{}, ErrNoIdentity
	case 1:
		return ParseIdentityURI(found[0])
	default:
		return Identity{}, fmt.Errorf("%w: %d phxgo:// URI SANs, want exactly one", ErrBadIdentity, len(found))
	}
}
