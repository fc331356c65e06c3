package node

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"phxgo/binlogd/mtls"
	"phxgo/binlogd/mysqld"
	"phxgo/binlogd/reseed"
	pb "phxgo/proto"
)

// Backup serves a physical copy of this node's MariaDB for `binlogd
// reseed` (binlogd/reseed). It refuses:
//   - a node certificate asking for another node's id (authz.go lets node
//     and admin certificates call it; the request is only known here,
//     a stream's interceptor does not see it): PermissionDenied;
//   - on the master or a candidate, unless force: the backup's locks
//     (BACKUP STAGE BLOCK_COMMIT stalls commits for a moment) and its
//     read IO belong on a replica: FailedPrecondition;
//   - when this node is UNSAFE, its MariaDB is down or itself needs a
//     reseed (its data is behind the log's compaction point: the copy
//     could not catch up either): FailedPrecondition / Unavailable;
//   - a second backup while one runs: ResourceExhausted.
func (a *adminServer) Backup(req *pb.BackupRequest, ss pb.Admin_BackupServer) error {
	n := a.n
	ctx := ss.Context()
	if n.tls != nil {
		id, err := peerIdentity(ctx)
		if err != nil {
			return err
		}
		if id.Role == mtls.RoleNode && req.NodeId != id.ID {
			return status.Errorf(codes.PermissionDenied, "%s may ask for a backup only to reseed itself (node_id %d), not node %d; another node's needs the admin certificate", id, id.ID, req.NodeId)
		}
		if id.Role != mtls.RoleAdmin && req.Force {
			// Force takes the backup's locks and IO on the master: an
			// operator's call, not a node's (red-team test, session 38:
			// a node certificate forced BACKUP STAGE on the master).
			return status.Errorf(codes.PermissionDenied, "%s may not pass force (a backup on the master needs the admin certificate)", id)
		}
	}
	if req.NodeId == n.cfg.ID {
		return status.Errorf(codes.InvalidArgument, "node %d cannot reseed itself from itself: pick another replica", n.cfg.ID)
	}
	st := n.Status()
	switch {
	case st.Role == pb.Role_ROLE_UNSAFE:
		return status.Errorf(codes.FailedPrecondition, "node %d is UNSAFE (%s): its data is no source for a reseed", n.cfg.ID, st.UnsafeReason)
	case (st.Role == pb.Role_ROLE_MASTER || st.Role == pb.Role_ROLE_CANDIDATE) && !req.Force:
		return status.Errorf(codes.FailedPrecondition, "node %d is the master: a backup's locks and IO belong on a replica; reseed from a replica (or pass force)", n.cfg.ID)
	case st.ReseedNeeded:
		return status.Errorf(codes.FailedPrecondition, "node %d needs a reseed itself (its MariaDB is behind the log's first GTID %s)", n.cfg.ID, st.FirstGtid)
	case !n.mysqlUp.Load():
		return status.Errorf(codes.Unavailable, "node %d: MariaDB is down", n.cfg.ID)
	}
	bs := n.backupState()
	if !bs.busy.CompareAndSwap(false, true) {
		return status.Errorf(codes.ResourceExhausted, "node %d is already serving a backup; one at a time", n.cfg.ID)
	}
	defer bs.busy.Store(false)

	n.dbMu.Lock()
	db := n.db
	n.dbMu.Unlock()
	n.log.Info("serving a backup for a reseed", "for_node", req.NodeId, "force", req.Force, "role", st.Role.String())
	src := reseed.Source{
		NodeID: n.cfg.ID, ConfigFile: n.inst.ConfigFile(), Socket: n.inst.Socket(), User: mysqld.AdminUser(),
		DataDir: n.inst.DataDir(), TmpDir: n.inst.TmpDir(), DB: db, Logger: n.log,
	}
	err := src.Serve(ctx, func(c *pb.BackupChunk) error {
		bs.bytes.Add(float64(len(c.Data)))
		return ss.Send(c)
	})
	if err != nil {
		bs.total.WithLabelValues("failed").Inc()
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		return status.Error(codes.Internal, err.Error())
	}
	bs.total.WithLabelValues("ok").Inc()
	return nil
}

// backupState is a node's one-backup-at-a-time flag and its metrics. It
// lives beside Node (keyed by it) so that the Backup RPC stays in this
// file.
type backupState struct {
	busy  atomic.Bool
	total *prometheus.CounterVec // result
	bytes prometheus.Counter
}

var backupStates sync.Map // *Node -> *backupState

func (n *Node) backupState() *backupState {
	if v, ok := backupStates.Load(n); ok {
		return v.(*backupState)
	}
	s := &backupState{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "backups_total",
			Help: "backups served for `binlogd reseed` (Admin/Backup), by result"}, []string{"result"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "backup_bytes_total",
			Help: "bytes of mariadb-backup streams sent for reseeds"}),
	}
	v, loaded := backupStates.LoadOrStore(n, s)
	if !loaded && n.m != nil && n.m.reg != nil {
		if err := n.m.reg.Register(s.total); err != nil {
			n.log.Warn("backup metrics", "err", fmt.Sprint(err))
		}
		if err := n.m.reg.Register(s.bytes); err != nil {
			n.log.Warn("backup metrics", "err", fmt.Sprint(err))
		}
	}
	return v.(*backupState)
}
