package paxos

// An odd node (digest_odd.go: the majority of the nodes' digests of a
// range disagree with its own) holds a value in its chosen log that was
// never chosen. Detection alone left it free to spread that value: a
// peer or learner fetching what it missed could get it from the odd node,
// and as leader it would answer every lagging follower's fetch. So once
// odd, a node stands for no election (stepping down if it leads) and
// answers no Fetch; a fetcher's request times out and it asks another
// member, whose log the majority vouches for. It still votes: its
// acceptor state is not what diverged, and a 3-node cluster with one odd
// node still has a majority to choose with. The mark lasts until the
// node's directory is replaced (remove it, add it back empty).

// setOdd marks this node's log the odd one.
func (c *core) setOdd() {
	if c.odd {
		return
	}
	c.odd = true
	c.stopCampaign()
	switch c.role {
	case leader:
		c.leaveLead(StepDownOddLog, 0, Ballot{})
	case candidate:
		c.becomeFollower(0)
	}
	c.probing = false
}
