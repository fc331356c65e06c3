package node

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// HealthService is the name under which binlogd reports itself in the
// standard gRPC health service, next to the server-wide "" entry.
const HealthService = "phxgo.binlogd"

// registerHealth adds grpc.health.v1.Health to s: SERVING from the moment
// the node serves gRPC, NOT_SERVING once it starts stopping (load
// balancers and probes stop sending to it while it hands off safely) or
// once its Paxos storage failed (storage.go).
func registerHealth(s *grpc.Server) *health.Server {
	hs := health.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(HealthService, healthpb.HealthCheckResponse_SERVING)
	return hs
}
