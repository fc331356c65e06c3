package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/config"
	"phxgo/binlogd/mtls"
	"phxgo/binlogd/node"
)

// tlsFlags are the operator commands' certificate flags. Every binlogd
// runs mutual TLS unless its config says "insecure_no_tls", and authorises
// each call by the identity in the client's certificate
// (binlogd/node/authz.go): status works with any of the cluster's
// certificates, switchover and members add/remove need the admin one. The
// files come from -tls-dir (a directory `binlogd init` or
// scripts/make-test-ca.sh wrote: its admin.crt, admin.key, ca.crt), from
// -config (a node's own config: that node's certificate) or from
// -tls-cert/-tls-key/-tls-ca, which win. A plain connection must be asked
// for with -insecure.
type tlsFlags struct {
	config, dir, cert, key, ca *string
	insecure                   *bool
}

func addTLSFlags(fs *flag.FlagSet) tlsFlags {
	f := addTLSFileFlags(fs)
	f.config = fs.String("config", "", "take tls_cert, tls_key and tls_ca from this binlogd config file (the node's certificate: enough for status, not for switchover)")
	return f
}

// addTLSFileFlags is addTLSFlags without -config, for commands whose
// -config names another file (members add: the new node's config).
func addTLSFileFlags(fs *flag.FlagSet) tlsFlags {
	return tlsFlags{
		config:   new(string),
		dir:      fs.String("tls-dir", "", "certificate directory (binlogd init, scripts/make-test-ca.sh): use its admin.crt, admin.key and ca.crt"),
		cert:     fs.String("tls-cert", "", "client certificate (PEM)"),
		key:      fs.String("tls-key", "", "its private key (PEM)"),
		ca:       fs.String("tls-ca", "", "the cluster CA (PEM)"),
		insecure: fs.Bool("insecure", false, "connect without TLS (only for a cluster whose nodes set \"insecure_no_tls\": true)"),
	}
}

// credsFor is the transport credential of a dial to binlogd id (0: any
// binlogd). With TLS the server must present a node certificate, id's
// when the command knows it: the CA and the host name alone let a
// proxy's certificate for the same host pass for the binlogd, which was
// then sent switchovers and piped backups into a restore (red-team test,
// December 2026). A proxy or admin certificate is never a binlogd.
type credsFor func(id uint32) grpc.DialOption

// errNoCert: an operator command with neither certificate flags nor
// -insecure.
var errNoCert = errors.New("no client certificate: pass -tls-dir DIR (its admin certificate), -tls-cert/-tls-key/-tls-ca, " +
	"or -config FILE (a node's config: its certificate); -insecure only for a cluster running with \"insecure_no_tls\": true")

// dialOption is the transport credential the flags ask for.
func (f tlsFlags) dialOption() (credsFor, error) {
	var files mtls.Files
	insecureCfg := false
	if *f.config != "" {
		cfg, err := config.Load(*f.config)
		if err != nil {
			return nil, err
		}
		files, insecureCfg = cfg.TLSFiles(), cfg.InsecureNoTLS
	}
	if *f.dir != "" {
		files = mtls.DirFiles(*f.dir, mtls.Identity{Role: mtls.RoleAdmin})
	}
	for _, o := range []struct {
		flag string
		dst  *string
	}{{*f.cert, &files.Cert}, {*f.key, &files.Key}, {*f.ca, &files.CA}} {
		if o.flag != "" {
			*o.dst = o.flag
		}
	}
	switch {
	case *f.insecure && (*f.dir != "" || *f.cert != "" || *f.key != "" || *f.ca != ""):
		return nil, errors.New("-insecure with certificate flags: give one or the other")
	case *f.insecure || insecureCfg && !files.Enabled():
		return plainCreds, nil
	case !files.Enabled():
		return nil, errNoCert
	}
	return dialOptionFor(files)
}

// dialOptionFor: files' mTLS, or plain when files is empty (callers made
// sure that is what the config asks for).
func dialOptionFor(files mtls.Files) (credsFor, error) {
	if !files.Enabled() {
		return plainCreds, nil
	}
	m, err := mtls.Load(files, time.Now())
	if err != nil {
		return nil, fmt.Errorf("-tls-%s: %w", flagName(err), err)
	}
	return func(id uint32) grpc.DialOption { return node.DialOptionTo(m, id) }, nil
}

func plainCreds(uint32) grpc.DialOption { return node.DialOption(nil) }

// nodeAt is the id of the member whose grpc_addr is addr in the config
// of -config, or 0 (any binlogd) without -config or when no member has
// that address: the CLI is then told only an address.
func (f tlsFlags) nodeAt(addr string) uint32 {
	if *f.config == "" {
		return 0
	}
	cfg, err := config.Load(*f.config)
	if err != nil {
		return 0 // dialOption already reported it
	}
	return memberAt(cfg, addr)
}

// memberAt is the id of cfg's member at grpc address addr, or 0.
func memberAt(cfg *config.Config, addr string) uint32 {
	for _, m := range cfg.SortedMembers() {
		if m.GRPCAddr == addr {
			return m.ID
		}
	}
	return 0
}

func flagName(err error) string {
	if fe, ok := err.(*mtls.FileError); ok {
		return fe.Which
	}
	return "cert"
}

// hint adds what to try to an error of a call: a node with mutual TLS
// shows a client without a certificate only a closed connection, and a
// refusal by identity needs another certificate.
func (f tlsFlags) hint(err error) error {
	switch {
	case err == nil:
		return nil
	case status.Code(err) == codes.PermissionDenied:
		return fmt.Errorf("%w (pass the admin certificate: -tls-dir DIR or -tls-cert admin.crt -tls-key admin.key -tls-ca ca.crt)", err)
	case status.Code(err) == codes.Unavailable && *f.insecure:
		return fmt.Errorf("%w (-insecure: if the node has tls_* keys, pass -tls-dir DIR or -tls-cert/-tls-key/-tls-ca instead)", err)
	}
	return err
}
