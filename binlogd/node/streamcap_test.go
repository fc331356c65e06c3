package node

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mtls/mtlstest"
	pb "phxgo/proto"
)

// One proxy certificate opened 20,000 WatchStatus streams and wedged a
// node (red-team test, session 39): an identity holds at most
// maxStreamsPerIdentity server streams; another identity is not held
// back, and a stream that ends gives its slot back.
func TestStreamsPerIdentityCapped(t *testing.T) {
	ca := mtlstest.MakeCA(t, 3)
	cfgs, _, _ := testNodes(t, []mtls.Files{mtlstest.Files(ca, 1), mtlstest.Files(ca, 2), mtlstest.Files(ca, 3)})
	addr1 := cfgs[0].Self().GRPCAddr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := func(id mtls.Identity) pb.AdminClient {
		c, _ := dialAdmin(t, addr1, DialOption(mtlstest.Load(t, mtls.DirFiles(ca, id))))
		return c
	}
	proxy1, proxy2 := cl(mtls.Identity{Role: mtls.RoleProxy, ID: 1}), cl(mtls.Identity{Role: mtls.RoleProxy, ID: 2})
	watch := func(c pb.AdminClient) (context.CancelFunc, error) {
		wctx, wcancel := context.WithCancel(ctx)
		st, err := c.WatchStatus(wctx, &pb.WatchStatusRequest{})
		if err == nil {
			_, err = st.Recv()
		}
		if err != nil {
			wcancel()
		}
		return wcancel, err
	}
	var first context.CancelFunc
	for i := 0; i < maxStreamsPerIdentity; i++ {
		for {
			c, err := watch(proxy1)
			if err == nil {
				if first == nil {
					first = c
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("watch %d: %v", i, err)
			}
			time.Sleep(100 * time.Millisecond) // the node may not serve yet
		}
	}
	if _, err := watch(proxy1); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("proxy 1's stream past %d: %v, want ResourceExhausted", maxStreamsPerIdentity, err)
	}
	if _, err := watch(proxy2); err != nil {
		t.Fatalf("proxy 2 held back by proxy 1's streams: %v", err)
	}
	first()
	for {
		_, err := watch(proxy1)
		if err == nil {
			break
		}
		if status.Code(err) != codes.ResourceExhausted || ctx.Err() != nil {
			t.Fatalf("proxy 1 after closing a stream: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
