package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/node"
	"phxgo/paxos"
)

// -tls: the links run as binlogd runs them by default: mutual TLS with
// certificates from a fresh CA (binlogd/mtls, in the bench's directory),
// and each incoming Paxos stream tied to the node id in the peer's
// certificate (paxos.PeerAuth: every message's From is checked).
type benchTLS struct {
	mats map[uint32]*mtls.Material
}

func newBenchTLS(base string, nodes int) (*benchTLS, error) {
	dir := filepath.Join(base, "tls")
	if err := mtls.WriteCA(dir, time.Hour); err != nil {
		return nil, err
	}
	b := &benchTLS{mats: map[uint32]*mtls.Material{}}
	for i := uint32(1); i <= uint32(nodes); i++ {
		id := mtls.Identity{Role: mtls.RoleNode, ID: i}
		if _, _, err := mtls.WriteCert(dir, id, []string{"127.0.0.1"}, time.Hour); err != nil {
			return nil, err
		}
		m, err := mtls.Load(mtls.DirFiles(dir, id), time.Now())
		if err != nil {
			return nil, err
		}
		b.mats[i] = m
	}
	return b, nil
}

func (b *benchTLS) serverOptions(id uint32) []grpc.ServerOption {
	if b == nil {
		return nil
	}
	return append(node.ServerOptions(b.mats[id]), grpc.ChainStreamInterceptor(peerAuth))
}

func (b *benchTLS) dialOptions(id uint32) []paxos.Option {
	if b == nil {
		return nil
	}
	// As binlogd: each peer link checks that the server is that node.
	m := b.mats[id]
	return []paxos.Option{paxos.WithPeerDialOption(func(peer uint32) grpc.DialOption { return node.DialOptionTo(m, peer) })}
}

// peerAuth is binlogd's Paxos stream authorisation, reduced to what costs
// anything: the identity from the verified chain, attached for the From
// check.
func peerAuth(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	p, _ := peer.FromContext(ss.Context())
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 {
		return fmt.Errorf("no verified client certificate")
	}
	id, err := mtls.IdentityOf(ti.State.VerifiedChains[0][0])
	if err != nil || id.Role != mtls.RoleNode {
		return fmt.Errorf("not a node certificate: %v", err)
	}
	return h(srv, &authStream{ss, paxos.WithPeerAuth(ss.Context(), paxos.PeerAuth{ID: id.ID})})
}

type authStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *authStream) Context() context.Context { return s.ctx }
