package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	pb "phxgo/proto"
)

// cmdReload asks one node to re-read its TLS files (and optionally set its
// log level) without a restart: Admin/Reload, admin certificate only.
// SIGHUP to the binlogd process does the same without a level.
func cmdReload(args []string) error {
	fs := flag.NewFlagSet("reload", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:17011", "the node's binlogd gRPC address")
	level := fs.String("log-level", "", "set the log level: debug, info, warn or error (empty: keep)")
	tf := addTLSFlags(fs)
	cl, closeFn, err := parseConnect(fs, args, tf, addr)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := cl.Reload(ctx, &pb.ReloadRequest{LogLevel: *level})
	if err != nil {
		return tf.hint(err)
	}
	fmt.Printf("reloaded: certificate serial %s (expires %s), log level %s\n", r.CertSerial, r.CertExpires, r.LogLevel)
	return nil
}
