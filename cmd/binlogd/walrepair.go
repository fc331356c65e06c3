package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"phxgo/binlogd/config"
	"phxgo/paxos"
	"phxgo/wal"
)

// cmdWALRepair: binlogd wal-repair reports damage in a stopped node's
// Paxos log (a bad frame with valid frames after it, which makes the node
// refuse to start) and, only when the operator says so, cuts the log at
// the damage. See wal/scan.go for how damage is told from a torn tail.
func cmdWALRepair(args []string) error {
	fs := flag.NewFlagSet("wal-repair", flag.ContinueOnError)
	cfgPath := fs.String("config", "binlogd.json", "config file of the (stopped) node")
	seg := fs.Uint64("segment", 0, "segment to cut (default: the first damaged one)")
	at := fs.Int64("truncate-at-offset", -1, "cut the segment at this byte offset (the damage's offset, or an earlier frame boundary) and delete every later segment")
	yes := fs.Bool("yes", false, "really cut (without it, only say what would be dropped)")
	cfg, err := parseConfig(fs, args, cfgPath)
	if err != nil {
		return err
	}
	dir := filepath.Join(cfg.Dir, "paxos")
	opts := wal.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	r, err := wal.Inspect(dir, opts)
	if errors.Is(err, wal.ErrLocked) {
		return fmt.Errorf("%w: stop binlogd on this node first", err)
	}
	if errors.Is(err, wal.ErrCorrupt) {
		// Badger's own files: nothing to cut, the log must be reseeded.
		fmt.Printf("DAMAGE     %v\n", err)
		printReseed(cfg, dir)
		return errors.New("damage found in Badger's files; nothing changed: reseed the node")
	}
	if err != nil {
		return err
	}
	if err := paxos.CheckMembership(dir, r.MembershipSaved); err != nil {
		fmt.Printf("DAMAGE     %v\n", err)
		printReseed(cfg, dir)
		return errors.New("the membership file is damaged or missing; nothing changed: reseed the node (or put the file back)")
	}
	fmt.Printf("wal %s: %d segments, %d valid frames; Badger holds everything before segment %d offset %d\n",
		dir, len(r.Segments), r.Frames, r.ReplaySegment, r.ReplayOffset)
	var first *wal.Problem
	for i, p := range r.Problems {
		if !p.Damage() {
			fmt.Printf("torn tail  %s at byte offset %d: %s (%d bytes, nothing valid after them: never answered; binlogd cuts them off by itself)\n",
				p.Path, p.Offset, p.Reason, p.Bytes)
			continue
		}
		switch {
		case p.Next != 0:
			fmt.Printf("DAMAGE     %s at byte offset %d: %s; %d valid frames follow from offset %d (%d bytes to the end of the file)\n",
				p.Path, p.Offset, p.Reason, p.FramesAfter, p.Next, p.Bytes)
		case p.Bytes == 0:
			fmt.Printf("DAMAGE     %s at byte offset %d: %s\n", p.Path, p.Offset, p.Reason)
		default:
			fmt.Printf("DAMAGE     %s at byte offset %d: %s (%d bytes to the end of the file)\n", p.Path, p.Offset, p.Reason, p.Bytes)
		}
		switch {
		case p.Applied:
			// Missing or bad bytes under Badger's checkpoint were answered:
			// they are lost, not a torn write binlogd may cut off.
			fmt.Println("           Badger already holds what follows, and reads of the instances in the damaged bytes fail: cutting cannot repair this; reseed the node (below).")
		case p.Older:
			fmt.Println("           this segment is not the newest: it was synced before the next one began, so these bytes are corruption, not a torn write; binlogd refuses to start.")
		}
		if first == nil {
			first = &r.Problems[i]
		}
	}
	if first == nil && *at < 0 {
		fmt.Println("no damage: the node can start")
		return nil
	}
	if *at < 0 {
		printReseed(cfg, dir)
		if first.Applied {
			return errors.New("damage found under what Badger holds; nothing changed: reseed the node")
		}
		fmt.Printf("\nLast resort, only when reseeding is impossible (e.g. the other members cannot form a majority without this node):\n"+
			"  binlogd wal-repair -config %s -segment %d -truncate-at-offset %d -yes\n", *cfgPath, first.Segment, first.Offset)
		return errors.New("damage found; nothing changed")
	}
	if *seg == 0 {
		if first == nil {
			return errors.New("-truncate-at-offset without -segment and no damage found")
		}
		*seg = first.Segment
	}
	var later []uint64
	for _, id := range r.Segments {
		if id > *seg {
			later = append(later, id)
		}
	}
	fmt.Printf("\nThe cut drops segment %d from byte offset %d on and deletes the later segments %v.\n", *seg, *at, later)
	fmt.Print(`
WARNING: the dropped frames may hold promises and votes this node already
sent to its peers. A Paxos acceptor that forgets them can let two different
values be chosen for one log index (two masters' binlogs). After the cut,
this node must not vote on anything it may have voted on before: the safe
way back is still to reseed it (below). Restart it as it is only if the
cluster cannot make progress without it, and check it with 'binlogd log'.
`)
	if !*yes {
		return errors.New("not cut: re-run with -yes to cut")
	}
	res, err := wal.Repair(dir, *seg, uint64(*at), opts)
	if err != nil {
		return err
	}
	fmt.Printf("cut %d bytes from segment %d, deleted segments %v\n", res.Bytes, *seg, res.Removed)
	printReseed(cfg, dir)
	return nil
}

func printReseed(cfg *config.Config, dir string) {
	fmt.Printf(`
Recommended: reseed this node's Paxos log from its peers (its MariaDB data
stays; recovery checks its binlog against the log at start):
  1. on a healthy member:  binlogd members remove -addr HEALTHY_GRPC -id %d   (with the admin TLS flags)
  2. here:                 mv %s %s.damaged
  3. set "join": true in this node's config and start binlogd: it learns the
     members and the log (or a snapshot of it) from its peers and does not
     vote while it is not a member
  4. on a healthy member:  binlogd members add -addr HEALTHY_GRPC -config THIS_NODE.json
`, cfg.ID, dir, dir)
}

// walDamaged adds what to do to an error that says the node's Paxos log
// (its wal or Badger) is damaged: the error names the file, but only
// wal-repair tells a cut from a reseed, and prints the procedure.
func walDamaged(err error, dataDir, cfgPath string) error {
	if !errors.Is(err, wal.ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w\nthe Paxos log in %s is damaged: with binlogd stopped, run  binlogd wal-repair -config %s  to see where and what to do",
		err, filepath.Join(dataDir, "paxos"), cfgPath)
}
