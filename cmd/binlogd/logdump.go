package main

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"

	"phxgo/binlogd/binlog"
	"phxgo/masterlease"
	"phxgo/paxos"
	"phxgo/wal"
)

// cmdLog prints a stopped node's Paxos log with the verdict of every
// entry, replayed from the first index (the wal is locked while binlogd
// runs).
func cmdLog(args []string) error {
	fs := flag.NewFlagSet("log", flag.ContinueOnError)
	cfgPath := fs.String("config", "binlogd.json", "config file")
	from := fs.Uint64("from", 1, "first index to print (replay still starts at the log's first index)")
	onlyBad := fs.Bool("rejected", false, "print only rejected entries")
	cfg, err := parseConfig(fs, args, cfgPath)
	if err != nil {
		return err
	}
	lg, err := wal.OpenReadOnly(filepath.Join(cfg.Dir, "paxos"), wal.Options{}) // writes nothing
	if err != nil {
		return walDamaged(err, cfg.Dir, *cfgPath)
	}
	defer lg.Close()
	hs := lg.HardState()
	fmt.Printf("first=%d chosen=%d applied=%d\n", hs.FirstIndex, hs.Chosen, hs.Applied)
	var st masterlease.State
	if hs.FirstIndex > 1 {
		// Compacted: replay from the lease state stored with the cut.
		if hs.Base == nil {
			return errors.New("the log was truncated without a base snapshot; replay needs its start")
		}
		snap, err := paxos.StateMachineSnapshot(hs.Base)
		if err == nil {
			st, err = masterlease.DecodeState(snap)
		}
		if err != nil {
			return fmt.Errorf("log base at index %d: %w", hs.FirstIndex-1, err)
		}
		fmt.Printf("compacted: state after index %d: %s\n", hs.FirstIndex-1, st)
	}
	type key struct {
		node uint32
		seq  uint64
	}
	seen := map[key]uint64{}
	for idx := hs.FirstIndex; idx <= hs.Chosen; {
		as, err := lg.Range(idx, hs.Chosen, 4<<20)
		if err != nil {
			return walDamaged(err, cfg.Dir, *cfgPath)
		}
		if len(as) == 0 {
			break
		}
		for _, a := range as {
			cmds, err := paxos.DecodeLogged(a.Index, a.Value)
			if err != nil {
				return fmt.Errorf("index %d: %w", a.Index, err)
			}
			for _, c := range cmds {
				if c.Barrier {
					continue
				}
				if c.Membership {
					if a.Index >= *from && !*onlyBad {
						fmt.Printf("%8d node=%d seq=%d membership change to %v (active %d instances later if valid)\n", a.Index, c.Node, c.Seq, c.Members, paxos.Alpha)
					}
					continue
				}
				dup := ""
				if first, ok := seen[key{c.Node, c.Seq}]; ok {
					dup = fmt.Sprintf(" DUPLICATE of index %d", first)
				} else {
					seen[key{c.Node, c.Seq}] = a.Index
				}
				var v masterlease.Verdict
				st, v = masterlease.Step(st, a.Index, c.Data)
				if a.Index < *from || (*onlyBad && v.Valid) {
					continue
				}
				desc := v.Entry.Kind.String()
				switch v.Entry.Kind {
				case masterlease.KindLease:
					desc += fmt.Sprintf(" candidate=%d seen=%d renew=%v", v.Entry.Lease.Candidate, v.Entry.Lease.SeenVersion, v.Entry.Lease.Renew)
				case masterlease.KindFence:
					desc += fmt.Sprintf(" epoch=%d from=%d", v.Entry.Fence.Epoch, v.Entry.Fence.From)
				case masterlease.KindBatch:
					b := v.Entry.Batch
					desc += fmt.Sprintf(" epoch=%d %s..%s txns=%d bytes=%d more=%v cont=%v", b.Epoch,
						binlog.GTID(b.Prev), binlog.GTID(b.Last), b.TxnCount, len(b.Events), b.More, b.Continued)
				}
				verdict := "valid"
				if !v.Valid {
					verdict = "REJECTED: " + v.Detail
				}
				fmt.Printf("%8d node=%d seq=%d %s -> %s%s\n", a.Index, c.Node, c.Seq, desc, verdict, dup)
			}
			idx = a.Index + 1
		}
	}
	fmt.Printf("state: %s\n", st)
	return nil
}
