package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"phxgo/binlogd/reseed"
	"phxgo/internal/cli"
	pb "phxgo/proto"
)

// cmdBackup takes a consistent physical backup of a node's MariaDB
// (mariadb-backup streamed over the node's Admin/Backup RPC, as reseed
// does) and keeps it as a prepared directory with a manifest of its GTID
// position and source (reseed.WriteBackup), restorable with no node
// running: `binlogd restore`. The source should be a replica: the RPC
// refuses the master unless -force. It needs no quorum: a lone survivor
// of a lost majority can still serve one (README "Disaster recovery").
func cmdBackup(args []string) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	from := fs.String("from", "", "the source binlogd's gRPC address (a replica)")
	out := fs.String("out", "", "new directory for the backup")
	force := fs.Bool("force", false, "back up even if the source is the master (its commits stall briefly under the backup's lock)")
	every := fs.Duration("progress", time.Second, "interval of the progress lines on stderr")
	bounds := addStreamBoundFlags(fs)
	tf := addTLSFileFlags(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *from == "" || *out == "" {
		return cli.Usagef("backup: -from GRPC_ADDR and -out DIR are required")
	}
	if err := bounds.check("backup"); err != nil {
		return err
	}
	dir, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cl, closeFn, err := tf.connect(*from)
	if err != nil {
		return err
	}
	defer closeFn()
	// node_id 0: no node is being reseeded (an admin certificate's request).
	stream, err := cl.Backup(ctx, &pb.BackupRequest{Force: *force})
	if err != nil {
		return fmt.Errorf("backup from %s: %w", *from, tf.hint(err))
	}
	target := reseed.Target{Progress: os.Stderr, Every: *every}
	bounds.apply(&target)
	m, res, err := reseed.WriteBackup(ctx, stream.Recv, dir, target)
	if err != nil {
		return tf.hint(err)
	}
	fmt.Printf("backup of node %d in %s: %d bytes in %s, prepare %s, GTID position %q\n",
		m.SourceNode, dir, res.Bytes, res.Copy.Round(100*time.Millisecond), res.Prepare.Round(100*time.Millisecond), m.Position)
	fmt.Printf("restore a node: binlogd restore -config NODE.json -from %s; a new cluster: add -new-cluster on every node\n", dir)
	return nil
}

// streamBoundFlags bound a received backup stream (reseed.Target.Stall
// and MinFree): a peer that stops sending or sends without end.
type streamBoundFlags struct {
	stall     *time.Duration
	minFreeMB *int64
}

func addStreamBoundFlags(fs *flag.FlagSet) streamBoundFlags {
	return streamBoundFlags{
		stall: fs.Duration("stall-timeout", 5*time.Minute,
			"fail when the source sends no bytes for this long (the old datadir stays, the partial copy is removed); 0: wait forever"),
		minFreeMB: fs.Int64("min-free-mb", 1024,
			"stop (and remove the partial copy) when less than this many MiB would be left free on the disk the copy is written to; 0: no reserve"),
	}
}

func (b streamBoundFlags) check(cmd string) error {
	switch {
	case *b.stall < 0:
		return cli.Usagef("%s: -stall-timeout %s is negative (0 waits forever)", cmd, *b.stall)
	case *b.minFreeMB < 0 || *b.minFreeMB > 1<<40:
		return cli.Usagef("%s: -min-free-mb %d is out of range (0 for no reserve)", cmd, *b.minFreeMB)
	}
	return nil
}

func (b streamBoundFlags) apply(t *reseed.Target) {
	t.Stall, t.MinFree = *b.stall, *b.minFreeMB<<20
}
