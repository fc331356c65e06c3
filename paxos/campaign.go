package paxos

import "context"

// Driver side of Campaign: requests go to the run loop, which owns the
// core; after every step it resolves the waiting requests (checkCampaigns).

type campaignReq struct {
	terms uint64     // Soft().Terms when the request reached the core
	start int64      // the core's tick then: CampaignFailed's window
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
	if op.cancel {
		if _, ok := n.campaigns[op.req]; ok {
			delete(n.campaigns, op.req)
			op.req.done <- context.Canceled
			if len(n.campaigns) == 0 {
				n.rn.StopCampaign()
			}
		}
		return
	}
	n.noteOdd()
	terms := n.rn.Soft().Terms
	leading, err := n.rn.Campaign()
	if leading || err != nil {
		op.req.done <- err
		return
	}
	op.req.terms, op.req.start = terms, n.rn.Now()
	n.campaigns[op.req] = struct{}{}
}

// checkCampaigns answers requests whose node has led since they arrived,
// and fails each once its campaign heard no majority in the 2E ticks
// since it began (rawNode.CampaignFailed says why that window).
func (n *Node) checkCampaigns() {
	if len(n.campaigns) == 0 {
		return
	}
	terms := n.rn.Soft().Terms
	for r := range n.campaigns {
		switch {
		case terms > r.terms:
			r.done <- nil
		case n.rn.CampaignFailed(r.start):
			r.done <- ErrNoQuorum
		default:
			continue
		}
		delete(n.campaigns, r)
	}
	if len(n.campaigns) == 0 {
		n.rn.StopCampaign()
	}
}
