package mtls

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"

	"google.golang.org/grpc/credentials"
)

// Reloadable is certificate material that a reload swaps for new
// handshakes. gRPC keeps the TransportCredentials it is given when a
// server is built or a connection dialled, and crypto/tls keeps its
// Config, so everything handed out here looks the material up at every
// handshake: new connections and reconnects present the new certificate
// and check peers against the new CA pool, while established connections
// keep the session they negotiated. binlogd (node/reload.go) and sqlproxy
// (reload.go) both reload through it.
type Reloadable struct {
	cur atomic.Pointer[loaded]
}

// loaded is one load's material with the configurations built from it
// once (a tls.Config per handshake would also cost its session-ticket
// keys).
type loaded struct {
	m         *Material
	server    credentials.TransportCredentials
	optClient *tls.Config
}

// NewReloadable holds m until Store replaces it.
func NewReloadable(m *Material) *Reloadable {
	r := &Reloadable{}
	r.Store(m)
	return r
}

// Store puts m in force for new handshakes.
func (r *Reloadable) Store(m *Material) {
	r.cur.Store(&loaded{m: m, server: credentials.NewTLS(m.Server()), optClient: m.ServerOptionalClient()})
}

// Material is what new handshakes use now.
func (r *Reloadable) Material() *Material { return r.cur.Load().m }

// ServerOptionalClient is Material.ServerOptionalClient taken from the
// current material at each handshake.
func (r *Reloadable) ServerOptionalClient() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.cur.Load().optClient, nil
		},
	}
}

// Credentials are gRPC credentials for both sides (the server side asks
// for a client certificate, as Material.Server) that follow Store. Their
// client side wants any binlogd (ExpectNode(0): every phxgo gRPC server
// is one); a dial that knows the member uses ClientCredentials.
func (r *Reloadable) Credentials() credentials.TransportCredentials { return reloadingCreds{r} }

type reloadingCreds struct{ r *Reloadable }

func (c reloadingCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c.r.ClientCredentials(ExpectNode(0)).ClientHandshake(ctx, authority, raw)
}

func (c reloadingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c.r.cur.Load().server.ServerHandshake(raw)
}

func (c reloadingCreds) Info() credentials.ProtocolInfo { return c.r.cur.Load().server.Info() }

// Clone shares the material: a clone must follow reloads too.
func (c reloadingCreds) Clone() credentials.TransportCredentials { return c }

// OverrideServerName is deprecated in gRPC and unused: the server name
// comes from the dialled address.
func (c reloadingCreds) OverrideServerName(string) error { return nil }
