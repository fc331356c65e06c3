package node

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/mtls"
)

// maxStreamsPerIdentity bounds the server streams (WatchStatus, Events,
// Backup, health Watch) one certificate identity may hold open at once;
// Paxos streams are not counted. A proxy holds one WatchStatus (two
// across a reconnect). Without it one proxy's certificate opened 20,000
// WatchStatus streams with a 100 ms keepalive on four connections: the
// node grew by 850 MB, spent its CPU building Status messages, answered
// no operator command and lost its Paxos leader to timeouts (red-team
// test, session 39). gRPC's MaxConcurrentStreams is per connection, and
// a caller may open as many connections as the port's cap.
const maxStreamsPerIdentity = 16

// takeStream counts a new server stream of id, or refuses it
// (ResourceExhausted) at the cap; a nil release means refused.
func (a *authorizer) takeStream(id mtls.Identity, method string) (release func(), err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.streams == nil {
		a.streams = map[mtls.Identity]int{}
	}
	if a.streams[id] >= maxStreamsPerIdentity {
		a.denied.WithLabelValues(method, string(id.Role)).Inc()
		return nil, status.Errorf(codes.ResourceExhausted, "%s already holds %d streams on this node, the most one identity may", id, maxStreamsPerIdentity)
	}
	a.streams[id]++
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.streams[id]--; a.streams[id] <= 0 {
			delete(a.streams, id)
		}
	}, nil
}
