package node

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/mtls"
	pb "phxgo/proto"
)

// Reload (SIGHUP, Admin/Reload) applies changed files without a restart,
// so no lease lapses and no MariaDB stops: the TLS files named by tls_cert,
// tls_key and tls_ca (same paths; a new path needs a restart; MariaDB's
// copies of them too, then FLUSH SSL) and the log level; members' host
// names are looked up again for the gRPC port's exempt addresses. All or nothing: a file that does not load, or a level that does
// not parse, leaves every old setting in place and the error says why.

// ReloadResult is what a successful Reload now uses.
type ReloadResult struct {
	CertSerial string // hex; "" without TLS
	CertExpiry string // RFC 3339; "" without TLS
	LogLevel   string // "" when this node has no settable level
}

var reloadMu sync.Mutex // one reload at a time per process

// SetLogLevelVar lets Reload change the level of the logger the node was
// given (cmd/binlogd builds it on v).
func (n *Node) SetLogLevelVar(v *slog.LevelVar) { n.level = v }

// Reload re-reads the TLS files and sets level ("" keeps it).
func (n *Node) Reload(level string) (ReloadResult, error) {
	reloadMu.Lock()
	defer reloadMu.Unlock()
	res, err := n.reload(level)
	if err != nil {
		n.log.Error("reload refused; the old settings stay", "err", err)
		return res, err
	}
	n.kickPeerIPs() // members' host names may resolve elsewhere now (rpcrate.go)
	n.log.Info("reloaded", "cert_serial", res.CertSerial, "cert_expires", res.CertExpiry, "log_level", res.LogLevel)
	return res, nil
}

func (n *Node) reload(level string) (ReloadResult, error) {
	var res ReloadResult
	var lv slog.Level
	if level != "" {
		if n.level == nil {
			return res, fmt.Errorf("log level: this binlogd's logger has no settable level")
		}
		if err := lv.UnmarshalText([]byte(level)); err != nil {
			return res, fmt.Errorf("log level %q: %w (debug, info, warn or error)", level, err)
		}
	}
	var next *mtls.Material
	if n.tls != nil {
		m, err := n.cfg.TLS()
		if err != nil {
			return res, fmt.Errorf("TLS files: %w", err)
		}
		if m == nil {
			return res, fmt.Errorf("TLS files: tls_cert, tls_key and tls_ca are no longer set; turning TLS off needs a restart")
		}
		// Peers authorise by the identity in the certificate: another
		// node's (or the admin's) would silently change what this node may do.
		if old := n.currentTLS(); m.Identity != old.Identity {
			return res, fmt.Errorf("TLS files: %s holds identity %s, but this node runs as %s", m.Files.Cert, m.Identity, old.Identity)
		}
		next = m
	}
	if next != nil {
		n.tlsCur.CompareAndSwap(nil, mtls.NewReloadable(n.tls))
		n.tlsCur.Load().Store(next)
		res.CertSerial = strings.ToLower(next.Leaf.SerialNumber.Text(16))
		res.CertExpiry = next.Leaf.NotAfter.UTC().Format("2006-01-02T15:04:05Z07:00")
		// MariaDB's copies of the files, and FLUSH SSL. The gRPC links
		// already use the new material, so a failure here does not undo
		// the reload: MariaDB keeps its old certificate, logged.
		if n.inst != nil && n.cfg.SuperviseMySQL { // else binlogd wrote no my.cnf
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := n.inst.RefreshTLS(ctx); err != nil {
				n.log.Error("reload: MariaDB keeps its old TLS certificate", "err", err)
			}
			cancel()
		}
	}
	if n.level != nil {
		if level != "" {
			n.level.Set(lv)
		}
		res.LogLevel = strings.ToLower(n.level.Level().String())
	}
	return res, nil
}

// Reload is Admin/Reload (admin certificate only, authz.go).
func (a *adminServer) Reload(_ context.Context, req *pb.ReloadRequest) (*pb.ReloadReply, error) {
	res, err := a.n.Reload(req.LogLevel)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "reload refused, the old settings stay: %v", err)
	}
	return &pb.ReloadReply{CertSerial: res.CertSerial, CertExpires: res.CertExpiry, LogLevel: res.LogLevel}, nil
}
