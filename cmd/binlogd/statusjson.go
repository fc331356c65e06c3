package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	pb "phxgo/proto"
)

// statusJSON is what `binlogd status -json` prints and what each row of
// `binlogd cluster status -json` carries as "status": snake_case keys (the
// proto's field names where one exists), numbers as JSON numbers, every key
// always present. README "Status JSON" documents the keys;
// TestStatusJSONShape pins them. Not protojson's output, whose
// lowerCamelCase keys and 64-bit numbers as strings scripts trip over.
type statusJSON struct {
	NodeID                uint32       `json:"node_id"`
	Role                  string       `json:"role"` // master, candidate, replica, unsafe, witness, unknown
	Ready                 bool         `json:"ready"`
	MasterID              uint32       `json:"master_id"`
	LeaseVersion          uint64       `json:"lease_version"`
	Epoch                 uint64       `json:"epoch"`
	LeaseRemainingSeconds float64      `json:"lease_remaining_seconds"`
	LeaseValid            bool         `json:"lease_valid"`
	ChosenIndex           uint64       `json:"chosen_index"`
	AppliedIndex          uint64       `json:"applied_index"`
	PaxosLeader           uint32       `json:"paxos_leader"`
	LastValidGTID         string       `json:"last_valid_gtid"`
	MySQLGTIDPos          string       `json:"mysql_gtid_pos"`
	MySQLUp               bool         `json:"mysql_up"`
	ReplicationState      string       `json:"replication_state"`
	LagTransactions       uint64       `json:"lag_transactions"`
	LagSeconds            int64        `json:"lag_seconds"`
	UnsafeReason          string       `json:"unsafe_reason"`
	FirstIndex            uint64       `json:"first_index"`
	FirstGTID             string       `json:"first_gtid"`
	ReseedNeeded          bool         `json:"reseed_needed"`
	LogBytes              uint64       `json:"log_bytes"`
	Version               string       `json:"version"`
	Members               []memberJSON `json:"members"`
	// Log digests and the divergences this node saw (logdigest.go).
	LogDigests         []logDigestJSON     `json:"log_digests"`
	LogDivergences     []logDivergenceJSON `json:"log_divergences"`
	LogDivergencesSeen uint64              `json:"log_divergences_seen"`
	LogOddRanges       []logOddJSON        `json:"log_odd_ranges"`
}

type memberJSON struct {
	ID        uint32 `json:"id"`
	GRPCAddr  string `json:"grpc_addr"`
	MySQLAddr string `json:"mysql_addr"`
	ReplAddr  string `json:"repl_addr"`
	ProxyAddr string `json:"proxy_addr"`
}

// roleName is the role as the commands print it: "master", "replica", ...
func roleName(r pb.Role) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "ROLE_"))
}

func newStatusJSON(st *pb.NodeStatus) statusJSON {
	remaining := time.Duration(st.LeaseRemainingNs)
	out := statusJSON{
		NodeID: st.NodeId, Role: roleName(st.Role), Ready: st.Ready, MasterID: st.MasterId,
		LeaseVersion: st.LeaseVersion, Epoch: st.Epoch,
		LeaseRemainingSeconds: math.Round(remaining.Seconds()*1000) / 1000, LeaseValid: remaining > 0,
		ChosenIndex: st.ChosenIndex, AppliedIndex: st.AppliedIndex, PaxosLeader: st.PaxosLeader,
		LastValidGTID: st.LastValidGtid, MySQLGTIDPos: st.MysqlGtidPos, MySQLUp: st.MysqlUp,
		ReplicationState: st.ReplicationState, LagTransactions: st.LagTransactions, LagSeconds: st.LagSeconds,
		UnsafeReason: st.UnsafeReason, FirstIndex: st.FirstIndex, FirstGTID: st.FirstGtid,
		ReseedNeeded: st.ReseedNeeded, LogBytes: st.LogBytes, Version: st.Version,
		Members: []memberJSON{},
	}
	out.LogDigests, out.LogDivergences = logDigestsJSON(st)
	out.LogDivergencesSeen = st.LogDivergencesSeen
	out.LogOddRanges = logOddJSONs(st)
	for _, m := range st.Members {
		out.Members = append(out.Members, memberJSON{ID: m.Id, GRPCAddr: m.GrpcAddr, MySQLAddr: m.MysqlAddr, ReplAddr: m.ReplAddr, ProxyAddr: m.ProxyAddr})
	}
	return out
}

// writeJSON prints v indented, with a trailing newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// lagSeconds is lag_seconds for people: -1 means not known.
func lagSeconds(s int64) string {
	if s < 0 {
		return "seconds unknown (not replicating)"
	}
	return fmt.Sprintf("%d s behind", s)
}
