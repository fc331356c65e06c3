package sqlproxy

import "phxgo/binlogd/mtls"

// Certificate reload (reload.go). The proxy meets TLS in three places:
// its MySQL port (clients that ask for TLS, and forwarding hops from
// other proxies), its own hop to the master's proxy, and its gRPC link to
// the local binlogd. Each takes the material from a TLS
// (mtls.Reloadable) at every handshake, so a reload swaps it for new
// handshakes while established connections keep the session they
// negotiated.
//
// The proxy does not speak TLS to MariaDB backends (the SSL capability is
// cleared on every backend login, backend.go): there is nothing to swap there.

// TLS is this proxy's certificate material, swapped by Reload.
type TLS = mtls.Reloadable

// NewTLS holds m until a reload replaces it.
func NewTLS(m *mtls.Material) *TLS { return mtls.NewReloadable(m) }
