package main

import (
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

// tlsFlags are the operator commands' certificate flags. A node with
// tls_* keys accepts only clients holding a certificate of the cluster
// CA, so the commands that dial it take the same files: from -config (the
// node's own config file) or from -tls-cert/-tls-key/-tls-ca, which win.
type tlsFlags struct {
	config, cert, key, ca *string
}

func addTLSFlags(fs *flag.FlagSet) tlsFlags {
	return tlsFlags{
		config: fs.String("config", "", "take tls_cert, tls_key and tls_ca from this binlogd config file"),
		cert:   fs.String("tls-cert", "", "client certificate (PEM) for a node with mutual TLS"),
		key:    fs.String("tls-key", "", "its private key (PEM)"),
		ca:     fs.String("tls-ca", "", "the cluster CA (PEM)"),
	}
}

// addTLSFileFlags is addTLSFlags without -config, for commands whose
// -config names another file (members add: the new node's config).
func addTLSFileFlags(fs *flag.FlagSet) tlsFlags {
	return tlsFlags{
		config: new(string),
		cert:   fs.String("tls-cert", "", "client certificate (PEM) for a node with mutual TLS"),
		key:    fs.String("tls-key", "", "its private key (PEM)"),
		ca:     fs.String("tls-ca", "", "the cluster CA (PEM)"),
	}
}

// dialOption is the transport credential the flags ask for (plain when
// none is set).
func (f tlsFlags) dialOption() (grpc.DialOption, error) {
	var files mtls.Files
	if *f.config != "" {
		cfg, err := config.Load(*f.config)
		if err != nil {
			return nil, err
		}
		files = cfg.TLSFiles()
	}
	for _, o := range []struct {
		flag string
		dst  *string
	}{{*f.cert, &files.Cert}, {*f.key, &files.Key}, {*f.ca, &files.CA}} {
		if o.flag != "" {
			*o.dst = o.flag
		}
	}
	return dialOptionFor(files)
}

func dialOptionFor(files mtls.Files) (grpc.DialOption, error) {
	if !files.Enabled() {
		return node.DialOption(nil), nil
	}
	m, err := mtls.Load(files, time.Now())
	if err != nil {
		return nil, fmt.Errorf("-tls-%s: %w", flagName(err), err)
	}
	return node.DialOption(m), nil
}

func flagName(err error) string {
	if fe, ok := err.(*mtls.FileError); ok {
		return fe.Which
	}
	return "cert"
}

// hint adds what to try to an Unavailable error of a call made without a
// certificate: a node with mutual TLS shows a plain client only a closed
// connection.
func (f tlsFlags) hint(err error) error {
	if err == nil || *f.config != "" || *f.cert != "" || status.Code(err) != codes.Unavailable {
		return err
	}
	return fmt.Errorf("%w (if the node has tls_* keys, pass -config FILE or -tls-cert/-tls-key/-tls-ca)", err)
}
