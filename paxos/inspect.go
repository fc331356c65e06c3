package paxos

// LoggedCommand is one command as stored in a log value, for offline
// inspection (`binlogd log`): who proposed it and with which sequence
// number, so duplicates left by re-sends can be told apart.
type LoggedCommand struct {
	Index   uint64
	Node    uint32
	Seq     uint64
	Barrier bool
	// Membership marks a membership change (not a state machine command);
	// Members is the member set it proposes (valid or not: the log
	// decides, see Membership).
	Membership bool
	Members    []uint32
	Data       []byte
}

// DecodeLogged decodes the value stored at index.
func DecodeLogged(index uint64, value []byte) ([]LoggedCommand, error) {
	cmds, err := decodeValue(value)
	if err != nil {
		return nil, err
	}
	out := make([]LoggedCommand, len(cmds))
	for i, c := range cmds {
		out[i] = LoggedCommand{Index: index, Node: c.Node, Seq: c.Seq, Barrier: c.barrier(), Data: c.Data}
		if c.Flags&flagMembership != 0 {
			out[i].Membership = true
			if ch, err := decodeChange(c.Data); err == nil {
				for _, m := range ch.Members {
					out[i].Members = append(out[i].Members, m.ID)
				}
			}
		}
	}
	return out, nil
}
