package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"phxgo/binlogd/config"
	"phxgo/internal/cli"
	pb "phxgo/proto"
)

// cmdMembers: binlogd members list|add|remove|promote|demote, through any
// member's Admin service; every change goes through the log and returns
// once active. promote and demote take the id as -id or as the first
// argument (binlogd members promote 4).
func cmdMembers(args []string) error {
	const subs = "list, add, remove, promote or demote (binlogd members add -h for a subcommand's flags)"
	if len(args) > 0 && cli.IsHelp(args[0]) {
		fmt.Fprintln(os.Stderr, "usage: binlogd members list|add|remove|promote|demote -addr MEMBER [flags]\n\nsubcommands: "+subs)
		return flag.ErrHelp
	}
	if len(args) == 0 {
		return cli.Usagef("members: want %s", subs)
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "list", "add", "remove", "promote", "demote":
	default: // refused before any flag parsing or dialling
		return cli.Usagef("members: unknown subcommand %q: want %s", sub, subs)
	}
	var posID uint64
	if (sub == "promote" || sub == "demote" || sub == "remove") && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		v, err := strconv.ParseUint(args[0], 10, 32)
		if err != nil || v == 0 {
			return cli.Usagef("members %s: %q is not a node id", sub, args[0])
		}
		posID, args = v, args[1:]
	}
	fs := flag.NewFlagSet("members "+sub, flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:17011", "any member's binlogd gRPC address")
	id := fs.Uint("id", 0, "node id (add, remove, promote, demote)")
	grpcAddr := fs.String("grpc", "", "add: the new node's binlogd gRPC address")
	mysqlAddr := fs.String("mysql", "", "add: its MariaDB address")
	_ = fs.String("repl", "", "add: ignored (obsolete: a replication endpoint is the node's own repl_addr, no member needs it)")
	proxyAddr := fs.String("proxy", "", "add: its sqlproxy address (optional)")
	witness := fs.Bool("witness", false, "add: a witness (binlogd only: votes on the log, no MariaDB, never master; no -mysql or -proxy)")
	learner := fs.Bool("learner", false, "add: a learner (MariaDB and sqlproxy, serves reads; never votes, never master; binlogd members promote makes it a voter)")
	newCfg := fs.String("config", "", "add: take -id and the addresses from the new node's config file")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long (the outcome of a change is then unknown: list again)")
	tf := addTLSFileFlags(fs)
	cl, closeFn, err := parseConnect(fs, args, tf, addr)
	if err != nil {
		return err
	}
	defer closeFn()
	if posID != 0 {
		*id = uint(posID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var r *pb.MembersReply
	switch sub {
	case "list":
		r, err = cl.Members(ctx, &pb.MembersRequest{})
	case "add":
		if *newCfg != "" {
			c, err := config.Load(*newCfg)
			if err != nil {
				return err
			}
			self := c.Self()
			*id, *grpcAddr, *mysqlAddr, *proxyAddr, *witness = uint(self.ID), self.GRPCAddr, self.MySQLAddr, self.ProxyAddr, self.Witness
			*learner = *learner || self.Learner
		}
		if *learner && *witness {
			return cli.Usagef("members add: -learner and -witness exclude each other (a witness only votes, a learner never does)")
		}
		if *id == 0 || *grpcAddr == "" || *mysqlAddr == "" && !*witness {
			return cli.Usagef("members add: -id, -grpc and -mysql (or -witness) are required (or -config NEW.json)")
		}
		r, err = cl.AddMember(ctx, &pb.AddMemberRequest{Member: &pb.Member{
			Id: uint32(*id), GrpcAddr: *grpcAddr, MysqlAddr: *mysqlAddr, ProxyAddr: *proxyAddr, Witness: *witness, Learner: *learner}})
	case "remove":
		if *id == 0 {
			return cli.Usagef("members remove: -id is required")
		}
		r, err = cl.RemoveMember(ctx, &pb.RemoveMemberRequest{Id: uint32(*id)})
	case "promote":
		if *id == 0 {
			return cli.Usagef("members promote: a node id is required (binlogd members promote ID)")
		}
		r, err = cl.PromoteMember(ctx, &pb.PromoteMemberRequest{Id: uint32(*id)})
	case "demote":
		if *id == 0 {
			return cli.Usagef("members demote: a node id is required (binlogd members demote ID)")
		}
		r, err = cl.DemoteMember(ctx, &pb.DemoteMemberRequest{Id: uint32(*id)})
	default:
		return fmt.Errorf("members: unknown subcommand %q (list, add, remove, promote, demote)", sub)
	}
	if err != nil {
		return fmt.Errorf("members %s via %s: %w", sub, *addr, err)
	}
	state := "active"
	if r.Pending {
		state = "pending"
	}
	fmt.Printf("members (log index %d, %s from index %d):\n", r.Index, state, r.Active)
	for _, m := range r.Members {
		if m.Witness {
			fmt.Printf("  %-3d grpc=%s witness\n", m.Id, m.GrpcAddr)
			continue
		}
		role := "voter"
		if m.Learner {
			role = "learner"
		}
		fmt.Printf("  %-3d grpc=%s mysql=%s proxy=%s %s\n", m.Id, m.GrpcAddr, m.MysqlAddr, orNone(m.ProxyAddr), role)
	}
	return nil
}
