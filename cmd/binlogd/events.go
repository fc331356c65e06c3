package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	"phxgo/binlogd/node"
	pb "phxgo/proto"
)

// cmdEvents prints a node's events (Admin/Events) as JSON lines, the same
// objects an event hook reads on stdin: the recent ones, then live ones
// until interrupted (or only the recent ones with -recent).
func cmdEvents(args []string) error {
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:17011", "the node's binlogd gRPC address")
	recent := fs.Bool("recent", false, "print the recent events and exit")
	tf := addTLSFlags(fs)
	cl, closeFn, err := parseConnect(fs, args, tf, addr)
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := cl.Events(ctx, &pb.EventsRequest{RecentOnly: *recent})
	if err != nil {
		return tf.hint(err)
	}
	enc := json.NewEncoder(os.Stdout)
	for {
		ev, err := st.Recv()
		if errors.Is(err, io.EOF) || ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return tf.hint(err)
		}
		if err := enc.Encode(node.EventFromPB(ev)); err != nil {
			return err
		}
	}
}
