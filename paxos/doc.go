// Package paxos is phxgo's hand-rolled Multi-Paxos replicated log.
//
// # Shape
//
// The protocol lives in a pure, deterministic step machine (core*.go): no
// goroutines, no clock, no I/O. Inputs are peer messages (step), ticks,
// local proposals and a batch-flush signal; the output is a Ready. A thin
// driver (node.go) owns the core on one goroutine and reaches it only
// through rawNode (rawnode.go), a RawNode-style API: Step, Tick, Propose,
// Campaign, ... in; Ready out; Advance back once entries are durable and
// applied; Soft for what the driver reports:
//
//	gRPC server ──msgs──▶ ┌──────────── run loop ─────────────┐
//	Propose ─────cmd────▶ │ 1. step/tick/propose the core,     │
//	ticker, linger ─────▶ │    draining all queued inputs      │
//	                      │ 2. rd := rawNode.Ready()           │
//	                      │ 3. Storage.Save(rd.Update)  (ONE   │
//	                      │    durable write: group commit)    │
//	                      │ 4. send rd.Messages   (after 3)    │──▶ gRPC streams
//	                      │ 5. apply rd.Committed (after 3)    │──▶ StateMachine.Apply,
//	                      └────────────────────────────────────┘    Propose results
//
// Steps 3-5 run on their own goroutines (persist.go): the persister
// merges waiting Readys into one save and submits it without waiting, so
// several saves can be syncing at once; a completer takes them in order
// and does 4 and 5 for each once it and every earlier one is durable.
// While a save syncs, the completer already applies what the saves queued
// behind it commit if no pending save holds its accept (applyAhead): a
// value chosen by a vote no longer waits for a later value's fsync.
// WithStageObserver times a leader's commits in three parts (queue,
// accept round, chosen to applied; stages.go).
// Both stages are plain functions over a small environment (pipeEnv), so
// the simulation runs this same persist-and-order code on its simulated
// disk and network. A
// merge too large for one wal transaction is saved in parts (wal's
// Split), all durable before 4. Messages stay under the peers' gRPC
// receive limit: Accepts and Forwards are cut at FetchMaxBytes, and the
// server a node registers on is made with GRPCServerOptions, which admits
// a Promise carrying the values of two windows (MaxMessageBytes).
// GRPCServerOptions also sets the keepalive that PeerDialOptions' pings
// need: a link whose data goes unacknowledged for 2 s (or four election
// timeouts) is closed and redialled at once, so a node is back within
// about a second of a partition healing rather than after TCP's and
// gRPC's backoffs (8-40 s before).
// Because step 4 follows step 3, an acceptor answers only after its
// promise or accept is durable, and a leader's own vote (counted at once)
// is durable before any peer can complete a quorum with it.
//
// # Protocol
//
// Ballots are (round, node). A follower that hears no leader message for
// a randomized [E, 2E) ticks first probes (a pre-vote that persists
// nothing): peers that heard a leader within E ticks, and a leader with
// a quorum, refuse. Only with a majority's consent does it run phase 1
// with a ballot above every round it has seen, once, for all instances
// above its chosen index; so a node cut off alone never raises its ballot
// and, when it returns, never makes a working leader step down. Campaign
// skips the probe (the owner wants this node to lead, e.g. binlogd's
// lease holder) and retries after a randomized backoff until it has led
// once (core_election.go). It is refused (ErrNoQuorum) before raising the
// ballot if the node heard neither its leader nor a majority lately, and
// fails 2E ticks after the call if its own Prepares brought back no
// majority: a follower hears only the leader, so in a cluster of 5 or
// more only the campaign's answers show a majority (rawnode.go). Each
// acceptor answers with its chosen index and every instance it accepted
// above it, except those the candidate holds under an equal or higher
// ballot (a Prepare lists the ballots it holds, without values: under
// large commands a full Promise outlasted the election timeout on a slow
// host); a candidate re-sends unanswered Prepares with a backoff, as a
// leader its Accepts and a lagging node its Fetches. The new leader takes
// max chosen index C among the promises; above C it re-proposes, per
// index, the highest-ballot accepted value, or a Noop (the empty value)
// for holes; it fetches (C_own, C] from the peer
// that reported C. It then runs phase 2 only: up to Window instances in
// flight, each value a batch of commands (BatchMaxBytes; an idle pipeline
// proposes at once, a busy one waits BatchLinger to fill a batch), one
// Accept message carrying many instances. The leader's chosen index rides
// on every Accept and heartbeat (an Accept without entries): a proposal's
// Accept to a voter leaves before the leader's save, so it carries the
// chosen index only as far as the leader's own accepts are durable
// (stable), and the spares' Accepts, held until their instances are
// chosen (or the pipeline empties) and sent after a save, carry all of
// it. A chosen index gets an Accept of its own only when the pipeline
// empties (nothing in flight whose vote brings the next proposal) and on
// every heartbeat, so under load a value costs no separate notice; a follower
// marks index i chosen if it accepted i under that same leader ballot
// (the only value that leader proposed there) and fetches anything else
// in FetchMaxBytes batches. Thrifty (Config.Thrifty, on by default), the
// leader asks only a majority to vote on a value, itself included: the
// followers whose latest vote came most recently. The others get the
// same entries with NoVote set, once they are chosen, in one Accept with
// the chosen index (flushSpares: no separate notice); they store them
// without a sync of their own (wal.Update.NoSync) and do not answer, so
// a commit costs a majority's syncs, not every member's. The voters stay the same (a
// switch would leave votes in flight from old and new voters alike, and
// the newest vote must not decide) until an instance reaches the usual
// retransmit: then every member without a vote is asked, spares
// included, and a voter that sent no vote at all since the instance was
// proposed (it died or is cut off) is replaced by the spare that voted
// most recently. A NoVote record is
// safe to lose (it was no vote) and safe to keep (its ballot is no lower
// than any vote cast there, its value the one that ballot's leader
// proposed, which phase 1 may take like any accepted value); every
// promise and vote is synced, which covers the NoVote records before it.
// A rejection naming a higher ballot, or a
// quorum silent for 2E ticks, makes the leader step down. Duels are broken
// by the randomized timeouts. An acceptor that knows an instance above its
// chosen index is chosen (it saw the quorum as the leader, then stepped
// down) votes again when the next leader re-proposes the same value: that
// leader learns it is chosen only from votes under its own ballot, and
// with two voters, or a third one down, it would otherwise wait forever.
//
// Followers forward commands to the leader, batched like the leader's
// values: an idle follower forwards at once, a busy one (a Forward sent
// within the linger) collects commands until BatchLinger ends. Forwards
// leave without waiting for the follower's own save. Commands keep their
// submission order through the leader's queue; ProposeAsync documents
// exactly when one node's commands are chosen in that order.
//
// Every command carries
// (node, seq, minPending); seq starts at the node's start time in
// nanoseconds, so it is unique across restarts. The proposer keeps its
// command pending and re-sends it when the leader changes or after 2E
// ticks without it being applied, so a command can be chosen twice; the
// applier (applier.go) applies each (node, seq) once, deterministically,
// and persists its dedup table inside the snapshot it passes to
// Storage.SaveApplied. The proposing node recognises its own command when
// applying it and hands Apply's result to the waiting Propose. The
// periodic save (every SnapshotEvery entries) runs beside the applier and
// becomes a compaction point once durable (snapsave.go). The applier also
// keeps the newest entries' decoded commands, up to ReadTailBytes, in an
// in-memory tail (readtail.go): Read and ReadNext serve a reader that
// follows the log closely from it, and one behind it from storage.
//
// # Membership
//
// Members change through the log itself, one node at a time
// (membership.go, core_membership.go). A change is a command with
// flagMembership carrying the whole new member set and the index of the
// configuration it replaces; the state machine never sees it. Every node
// validates a chosen change with the same pure rule when the entry is
// handed out: valid iff it replaces the latest configuration (a CAS, so
// a re-sent copy is void), that configuration is already active (one
// change at a time), and it adds or removes exactly one member. A
// valid change chosen at index i governs instances >= i+Alpha (Lamport's
// alpha, Alpha = 64). The history of configurations is persisted (a
// small file next to the wal, written before the entry that changed it
// is applied) and travels with a Learn when a joining node asks for it.
// A history the config cannot rebuild (anything but the genesis of the
// configured members) is also recorded in the wal (m/membership, riding
// the next save: membership_node.go's markedMeta), so a node that lost
// the file refuses to start rather than count its stale configured
// members.
//
// Why it is safe:
//
//   - Every quorum is counted among the members of the configuration that
//     governs the instance. For i <= applied+Alpha a node knows that
//     configuration exactly: only changes at indexes <= applied can be
//     active by then, and those are chosen and recorded in order (a
//     change is recorded when its entry is handed out, so one chosen in
//     the current step, above applied, is not known yet).
//   - The leader keeps at most min(Window, Alpha) instances in flight and
//     proposes none above its horizon applied+Alpha. Instances above the
//     horizon that phase 1 recovered (the new leader lags) are deferred
//     until it catches up.
//   - Phase 1 covers every instance above the candidate's chosen index,
//     a range that may span a change. The candidate wins only when its
//     promisers are a majority of EVERY configuration it knows that
//     governs an instance in the range (the current one and a pending
//     one, if any). For later configurations (a change chosen while it
//     leads, or one it learns only after catching up) it checks, before
//     proposing the first instance they govern, that its promisers are a
//     majority of them too; if not, it runs phase 1 again with a new
//     ballot, now including the new members. So for every instance the
//     promise quorum and every accept quorum are majorities of the same
//     configuration and intersect: no two values are chosen.
//   - One change at a time keeps any majority of the old set meeting any
//     majority of the new (old n, new n+1: majorities of floor(n/2)+1 and
//     of floor((n+1)/2)+1 members, at least floor((n+1)/2) of them old,
//     sum n+1 > n), which is what lets a node that lags by one change
//     still be counted correctly while it catches up.
//   - An acceptor refuses to accept an instance whose configuration (as
//     far as it knows) excludes it, and refuses to promise when no
//     configuration from the Prepare's index on includes it: a removed
//     node stops voting at once for everything the new members govern.
//     It also refuses Prepares and probes from non-members (with its
//     chosen index, so a lagging removed node fetches and learns of its
//     removal), a non-member never probes or campaigns, and a leader
//     steps down once its own removal is active. Until then its votes on
//     the instances the old members govern are still needed and counted.
//     A removed node that hears no leader fetches the log from the
//     members it knows, as a learner does: a later change may have added
//     it back under a leader it does not know yet. Fetching stores only
//     chosen entries, and it votes again only where the history it then
//     records makes it a voter.
//   - While a change waits for activation the leader fills the pipeline
//     with Noops, so an idle cluster activates it within one round trip.
//
// Learners. A member may be a learner (Member.Learner; initial ones in
// Config.Learners, later ones added with AddMember, and PromoteLearner /
// DemoteVoter flip the flag as one change). A learner follows the log but
// never votes: every quorum above (phase 1, phase 2, probes, a leader's
// liveness, the Alpha window's checks) counts the configuration's voters
// only, a majority being Voters()/2+1; the leader sends learners every
// entry as NoVote, once chosen (they store the entries without a sync and
// learn the chosen index with them and from heartbeats) and never asks them to vote or promise;
// a learner votes nowhere, so no promise binds it: it follows the leader
// of an Accept even below a promise it made as a voter before a demotion;
// a learner never probes or campaigns (Campaign: ErrNotVoter) and, when
// it hears no leader, fetches from a member in turn (a leader added by a
// change it missed is a stranger to it until it fetches that change). A
// Promise or vote from a node that votes in no configuration above the
// receiver's chosen index is dropped (DropLearnerVote). The change rule
// admits one add, remove, promotion or demotion at a time and keeps at
// least one voter, so the voter sets of consecutive configurations differ
// by at most one and the intersection argument above holds for them
// unchanged; a demoted leader steps down once its demotion is active. The
// flag is encoded in bit 32 of a member's id, so logs and histories from
// before learners decode unchanged (an older binary refuses a learner's
// id: upgrade every node before adding one).
//
// A new node starts with Config.Join: it knows only its seeds, asks them
// for the history (a Fetch with Probe set), adopts it, and fetches the log
// like any lagging learner; it votes once a chosen change includes it.
// metaSnapshot/restoreMeta carry the history inside a log snapshot for
// compacted logs.
//
// # Hostile input
//
// A peer message is input from the network, so it may come from a
// stranger or a broken peer. Authentication (mTLS, the sender named in
// the peer's certificate; on dials, the server's certificate naming the
// peer dialled: WithPeerDialOption) is the transport's job; the core's is that no
// message, however forged, panics a node, wraps an integer or gets
// persisted out of range: a Prepare at round MaxUint64, once promised
// and persisted, would wrap the next round to 0 and panic every node at
// every restart. The core checks each message before acting on
// it (validateMessage in message.go, admit in core_validate.go) and drops
// a failing one whole, counted by reason (Status.Dropped, logged at most
// every 10 s with the latest example, droplog.go):
//
//   - type: one of the eight; sender: nonzero, not this node, and a node
//     this core knows (an initial peer or a member of a configuration in
//     its history). A node added by a change it has not learned is
//     dropped too: it could not be answered anyway (the transport dials
//     known members only), and the receiver's election timer then makes
//     it probe the members it knows, whose replies carry their chosen
//     index, so it fetches the change. Registering strangers, as before,
//     let anyone fill the 64 peer positions;
//   - rounds: every ballot round at most MaxRound (1<<62), so max+1
//     never wraps; a Prepare or Accept (they make the receiver promise)
//     at most MaxRoundStep (1<<16) above the highest round the receiver
//     saw or promised. Beyond that it is dropped but raises the round
//     hint by at most one step: a node that really lags catches up within
//     a few messages, while a forger needs 2^46 messages to use up the
//     ballot space. A node whose next round would pass MaxRound never
//     campaigns again (Status.BallotExhausted) rather than wrap;
//   - indexes: at most MaxIndex (1<<62) everywhere; an Accept's entries
//     at most MaxIndexAhead (Config, 65536) above the receiver's chosen
//     index, a Promise's above the higher of both chosen indexes (the
//     candidate re-proposes or fills every index up to the highest one
//     reported). A leader keeps at most Window instances in flight, so
//     only a node lagging that far (it fetches first, then votes again)
//     or a forger gets there; loops over index ranges walk what is held
//     (promiseFor, retransmits up to the horizon), never the range;
//   - sizes: values and forwarded commands at most max(BatchMaxBytes,
//     MaxValueBytes)+64 bytes, at most max(MaxIndexAhead, 65536)
//     entries, indexes or commands per message (a catch-up answer stops
//     there);
//   - formats: every value decodes (one that did not would stop every
//     node applying it, at every restart), a snapshot's engine header
//     decodes, a membership history decodes, is one history.apply could
//     have built and names at most 64 node ids with what this node knows
//     (else it is ignored: known() would panic); Prepares and Accepts
//     carry the sender's own ballot, from round 1.
//     A StateMachine that implements SnapshotChecker also vets its part
//     of a peer's snapshot (snapshot_check.go): a snapshot is durable
//     before it is restored, so one that does not Restore would stop the
//     node at every restart.
//
// A wal written before these checks may already hold the forged promise.
// Lowering it is not safe: a node that saw a forged round R < MaxUint64
// could legitimately have run round R+1 and had values chosen under it,
// and an acceptor that forgot its promise to that ballot could accept a
// lower ballot's different value. So such a node keeps the promise
// (Status.StuckPromise, an error logged at start naming the round): it
// refuses every ballot below it (its replies leave the round out, which
// peers would drop), never campaigns, and still learns and applies the
// log through Fetch and Learn. The others go on if they are a majority;
// to make it a voter again, remove it and add it back with an empty
// directory. If a majority holds such a promise, nothing more can be
// chosen (safety holds, liveness does not); an offline tool that
// rewrites every node's ballots order-preservingly below MaxRound would
// be the way out, and does not exist yet. Accepted instances above
// MaxIndex in such a wal are forged (no leader gets there) and are not
// loaded; a chosen or applied index above MaxIndex (a forged snapshot) is
// refused at start as corruption, naming it.
//
// # Log digests
//
// Everything above protects a node from messages that are out of range;
// nothing in Paxos protects it from a well-formed lie. A holder of a
// node's key can answer another node's Fetch with a forged value, which
// that node stores as chosen (a bug or a disk could do the same), and the
// protocol never looks at a chosen value again. So the nodes compare
// their logs (digest.go, digestbook.go, digest_node.go):
//
//   - each node hashes its chosen log as the applier applies it, per
//     range [k*R+1, (k+1)*R] (Config.DigestRange, default 256): SHA-256
//     over index, length and value of every entry (the exact chosen
//     bytes: a Noop is the empty value, a membership change a value like
//     any other; no value is chunked), one hash update per entry (about
//     20 ns plus 0.6 ns per value byte with SHA-NI). Whether the entry
//     came in an Accept, a Learn or from storage at a restart, the bytes
//     and so the digests are the same on every node;
//   - finished range digests are appended to Dir/logdigests (no sync; the
//     newest 64 kept). At start the node re-hashes from its own log the
//     ranges finished since the file's last record (at most 4) and the
//     applied part of the current range, so a node restarting mid-range
//     finishes it with the same digest. What storage no longer holds (a
//     compacted range, one a peer's snapshot ends inside) is unknown,
//     never a mismatch; compaction needs nothing from the digests;
//   - the newest 4 ride on the next message to each peer whenever they
//     change, and at least once per election timeout (Message.Digests,
//     proto field 21; an older peer sends none and ignores them); a peer
//     that gets no other message meanwhile (a follower from a follower)
//     gets a MsgDigests, which the driver takes and an older node drops
//     unread. So every member compares with every member, each digest
//     coming over its sender's own authenticated link;
//   - a peer's digest of a range this node also holds that differs is a
//     Divergence: an ERROR log once per (peer, range), Status.Divergences
//     and DivergencesSeen, with how many of the digests this node knows
//     for the range hold each side (Divergence.Odd names the node that
//     more than half of the members disagree with: of the members, not
//     of the digests heard, or a forked node and a liar sending its
//     digest would outvote a healthy node that has not heard the rest);
//   - a node named odd records it, synced, in Dir/logdigests-odd and
//     reports it (Status.OddRanges) across restarts, until its directory
//     is replaced (digest_odd.go): the range soon leaves the digests the
//     nodes exchange, and the fork must not look healthy again;
//   - a node named odd stands for no election (a leader steps down,
//     StepDownOddLog; Campaign: ErrOddLog) and answers no Fetch, so its
//     value spreads no further (core_odd.go); it still votes.
//
// Otherwise Paxos goes on unchanged: a digest is a peer's word, and a
// stolen key must not be able to stop the majority (binlogd also keeps a
// node named odd from becoming master). What the digests cannot do: an
// attacker who forks a majority of the nodes (each that fetches from it)
// makes the majority's digest the forged one, and the healthy minority
// is then named odd; the divergence is still reported.
//
// # Invariants
//
//   - at most one value is chosen per index (checked by the simulation on
//     every node and run);
//   - applied <= chosen; every index <= chosen is stored with its chosen
//     value; entries are applied in index order, each command exactly once
//     across restarts (snapshot and applied index persist atomically; what
//     was applied after the last snapshot is re-applied to it at start);
//   - a promise never moves backwards (panics in the core);
//   - every node's membership history is a prefix of every longer one
//     (checked by the simulation), each step one add or one remove.
//   - the log is compacted only below a durable snapshot of this node's
//     applied state, stored with the new first index (compact.go); a peer
//     that fetches below it gets that snapshot and installs it durably
//     before anything that follows (snapshot_install.go).
//
// # Testing
//
// sim_test.go runs 3- and 5-node clusters of cores over a seeded network
// that drops, duplicates, delays and reorders messages, partitions nodes
// and crash-restarts them (some runs over the real Badger wal; the others
// over a storage that loses a random suffix of the unsynced saves in a
// crash, as the wal may; three seeds in four thrifty), then heals
// and requires every pending proposal to finish; TestSimMembership adds
// random one-at-a-time adds and removes (from 3 nodes and 2 spares);
// TestSimCompact also truncates logs at random snapshots so lagging nodes
// catch up through MsgSnapshot. The simulation drives each core through
// rawNode and persists, applies and sends through persist.go's pipeline,
// as Node does; persist_test.go pins that pipeline's order down (persist
// before send and apply) case by case. node_seeded_test.go runs whole
// Nodes (driver, pipeline, wal in a temporary directory) over an
// in-memory network whose loss, duplication and reordering, like each
// core's randomness, come from one seed (scheduling and the ticker do
// not: a seed replays the faults, not the interleaving). grpc_test.go runs real
// nodes over loopback gRPC. Values and snapshot tables are fuzzed, and
// FuzzCoreStep feeds three cores arbitrary scripts of ticks, proposals,
// lost or delivered messages, restarts and forged messages (hostile
// input above; hostile_test.go is its table of cases).
// digest_attack_test.go is the forged-Learn attack on real nodes over
// gRPC: the victim applies the forged value, and both it and the
// leader report the divergence within a few heartbeats.
package paxos
