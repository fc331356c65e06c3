package paxos

import "context"

// Driver side of Campaign: requests go to the run loop, which owns the
// core; after every step it resolves the waiting requests (checkCampaigns).

type campaignReq struct {
	terms uint64     // core.terms when the request reached the core
	done  chan error // buffered 1
}

type campaignOp struct {
	req    *campaignReq
	cancel bool
}

func (n *Node) campaign(ctx context.Context) error {
	r := &campaignReq{done: make(chan error, 1)}
	select {
	case n.campc <- campaignOp{req: r}:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.donec:
		return n.stoppedErr()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		select {
		case n.campc <- campaignOp{req: r, cancel: true}:
		case <-n.donec:
		}
		select {
		case err := <-r.done:
			if err == nil {
				return nil // it led before the cancel arrived
			}
		default:
		}
		return ctx.Err()
	case <-n.donec:
		return n.stoppedErr()
	}
}

// onCampaign runs in the run loop.
func (n *Node) onCampaign(op campaignOp) {
	c := n.core
	if op.cancel {
		if _, ok := n.campaigns[op.req]; ok {
			delete(n.campaigns, op.req)
			op.req.done <- context.Canceled
			if len(n.campaigns) == 0 {
				c.stopCampaign()
			}
		}
		return
	}
	if c.role == leader {
		op.req.done <- nil
		return
	}
	if !c.hasQuorum() {
		op.req.done <- ErrNoQuorum
		return
	}
	op.req.terms = c.terms
	n.campaigns[op.req] = struct{}{}
	c.campaign()
}

// checkCampaigns answers requests whose node has led since they arrived,
// and fails all of them once no quorum has been heard for 2E ticks.
func (n *Node) checkCampaigns() {
	if len(n.campaigns) == 0 {
		return
	}
	c := n.core
	quorum := c.hasQuorum()
	for r := range n.campaigns {
		switch {
		case c.terms > r.terms:
			r.done <- nil
		case !quorum:
			r.done <- ErrNoQuorum
		default:
			continue
		}
		delete(n.campaigns, r)
	}
	if len(n.campaigns) == 0 {
		c.stopCampaign()
	}
}
