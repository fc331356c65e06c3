package main

import (
	"flag"

	"google.golang.org/grpc"

	"phxgo/internal/cli"
	pb "phxgo/proto"
)

// dial opens an Admin client to one binlogd; the func closes it.
func dial(addr string, creds grpc.DialOption) (pb.AdminClient, func(), error) {
	cc, err := grpc.NewClient(addr, creds)
	if err != nil {
		return nil, nil, err
	}
	return pb.NewAdminClient(cc), func() { cc.Close() }, nil
}

// connect dials addr with the certificate the flags name; the server
// must be a binlogd (nodeAt's, when -config says which).
func (f tlsFlags) connect(addr string) (pb.AdminClient, func(), error) {
	creds, err := f.dialOption()
	if err != nil {
		return nil, nil, err
	}
	return dial(addr, creds(f.nodeAt(addr)))
}

// parseConnect is the preamble of the one-node operator commands: parse
// the flags, then connect to *addr with the certificate they name. A
// stray argument (an address without -addr) is a usage error, never
// silently ignored in favour of -addr's default.
func parseConnect(fs *flag.FlagSet, args []string, tf tlsFlags, addr *string) (pb.AdminClient, func(), error) {
	if err := cli.Parse(fs, args); err != nil {
		return nil, nil, err
	}
	return tf.connect(*addr)
}
