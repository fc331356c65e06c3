package sqlproxy

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"

	"google.golang.org/grpc/credentials"

	"phxgo/binlogd/mtls"
)

// Certificate reload (reload.go). The proxy meets TLS in three places:
// its MySQL port (clients that ask for TLS, and forwarding hops from
// other proxies), its own hop to the master's proxy, and its gRPC link to
// the local binlogd. Each looks the material up in a TLS at every
// handshake, so a reload swaps it for new handshakes (new connections,
// gRPC reconnects) while established connections keep the session they
// negotiated. This mirrors binlogd/node/tlsreload.go, whose gRPC
// credentials are private to that package.
//
// The proxy does not speak TLS to MariaDB backends (the SSL capability is
// cleared on every backend login, backend.go): there is nothing to swap there.

// TLS is this proxy's certificate material, swapped by Reload.
type TLS struct {
	cur atomic.Pointer[tlsNow]
}

// tlsNow is the material of the latest successful load with the
// configurations built from it once (a tls.Config per handshake would
// also cost its session-ticket keys).
type tlsNow struct {
	m      *mtls.Material
	server *tls.Config
	grpc   credentials.TransportCredentials
}

// NewTLS holds m until a reload replaces it.
func NewTLS(m *mtls.Material) *TLS {
	t := &TLS{}
	t.store(m)
	return t
}

func (t *TLS) store(m *mtls.Material) {
	t.cur.Store(&tlsNow{m: m, server: m.ServerOptionalClient(), grpc: credentials.NewTLS(m.Client(""))})
}

// Material is what new handshakes use now.
func (t *TLS) Material() *mtls.Material { return t.cur.Load().m }

// Client is the dialling side's configuration for serverName, from the
// current material (the hop to the master's proxy).
func (t *TLS) Client(serverName string) *tls.Config { return t.Material().Client(serverName) }

// ServerOptionalClient is the MySQL port's configuration: each handshake
// takes the current certificate and CA pool (mtls.Material.ServerOptionalClient).
func (t *TLS) ServerOptionalClient() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return t.cur.Load().server, nil
		},
	}
}

// GRPCCredentials dial binlogd with the current material at each
// handshake; gRPC keeps the credentials it was given for good.
func (t *TLS) GRPCCredentials() credentials.TransportCredentials { return reloadingCreds{t} }

type reloadingCreds struct{ t *TLS }

func (c reloadingCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c.t.cur.Load().grpc.ClientHandshake(ctx, authority, raw)
}

func (c reloadingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c.t.cur.Load().grpc.ServerHandshake(raw)
}

func (c reloadingCreds) Info() credentials.ProtocolInfo { return c.t.cur.Load().grpc.Info() }

// Clone shares t: a clone must follow reloads too.
func (c reloadingCreds) Clone() credentials.TransportCredentials { return c }

// OverrideServerName is deprecated in gRPC and unused: the server name
// comes from the dialled address.
func (c reloadingCreds) OverrideServerName(string) error { return nil }
