package topology

import (
	"testing"
	"time"

	pb "phxgo/proto"
)

var t0 = time.Unix(1000, 0)

// The window ends at t0 + granted - drift margin and is renewed halfway.
func TestWindowFromReply(t *testing.T) {
	rep := &pb.ReadWindowReply{MasterId: 1, Epoch: 4, MysqlAddr: "127.0.0.1:3306",
		RemainingNs: int64(1500 * time.Millisecond), DriftMarginNs: int64(500 * time.Millisecond)}
	w, ok := WindowFromReply(rep, t0)
	if !ok {
		t.Fatal("a 1.5s grant with a 0.5s margin gave no window")
	}
	if want := t0.Add(time.Second); !w.Until.Equal(want) {
		t.Fatalf("Until %v, want t0+1s", w.Until.Sub(t0))
	}
	if want := t0.Add(500 * time.Millisecond); !w.RenewAt.Equal(want) {
		t.Fatalf("RenewAt %v, want t0+500ms", w.RenewAt.Sub(t0))
	}
	for name, bad := range map[string]*pb.ReadWindowReply{
		"margin eats it": {MasterId: 1, MysqlAddr: "a:1", RemainingNs: 400, DriftMarginNs: 500},
		"no margin":      {MasterId: 1, MysqlAddr: "a:1", RemainingNs: int64(time.Second)},
		"no address":     {MasterId: 1, RemainingNs: int64(time.Second), DriftMarginNs: 1},
		"no master":      {MysqlAddr: "a:1", RemainingNs: int64(time.Second), DriftMarginNs: 1},
		"negative":       {MasterId: 1, MysqlAddr: "a:1", RemainingNs: -5, DriftMarginNs: 1},
	} {
		if _, ok := WindowFromReply(bad, t0); ok {
			t.Errorf("%s: got a window", name)
		}
	}
}

func TestWindowValid(t *testing.T) {
	v := View{MasterID: 1, MasterMySQLAddr: "m:1", Window: Window{MasterID: 1, MySQLAddr: "m:1", Until: t0.Add(time.Second)}}
	if !v.WindowValid(t0.Add(999 * time.Millisecond)) {
		t.Fatal("window not valid before Until")
	}
	if v.WindowValid(t0.Add(time.Second)) {
		t.Fatal("window valid at Until")
	}
	v.IsMaster = true
	if v.WindowValid(t0) {
		t.Fatal("the master itself used a window instead of its lease")
	}
}

func TestNeedWindow(t *testing.T) {
	base := View{MasterID: 1, MasterMySQLAddr: "m:1"}
	held := base
	held.Window = Window{MasterID: 1, MySQLAddr: "m:1", Until: t0.Add(time.Second), RenewAt: t0.Add(500 * time.Millisecond)}
	moved := held
	moved.MasterID = 3
	// On the master node the window is the proxy's own lease.
	master := View{MasterID: 1, MasterMySQLAddr: "m:1", IsMaster: true, Ready: true}
	masterHeld := master
	masterHeld.Window = held.Window
	masterOld := master
	masterOld.Window = Window{MasterID: 3, MySQLAddr: "o:1", Until: t0.Add(time.Second), RenewAt: t0.Add(500 * time.Millisecond)}
	for _, c := range []struct {
		name string
		v    View
		self uint32
		now  time.Time
		want bool
	}{
		{"none held", base, 2, t0, true},
		{"fresh", held, 2, t0, false},
		{"half used", held, 2, t0.Add(500 * time.Millisecond), true},
		{"master changed", moved, 2, t0, true},
		{"this node is master but not ready", base, 1, t0, false},
		{"master without its window", master, 1, t0, true},
		{"master with a fresh window", masterHeld, 1, t0, false},
		{"master, window half used", masterHeld, 1, t0.Add(500 * time.Millisecond), true},
		{"master holding the previous master's window", masterOld, 1, t0, true},
		{"no master", View{}, 2, t0, false},
	} {
		if got := needWindow(c.v, c.self, c.now); got != c.want {
			t.Errorf("%s: needWindow = %v, want %v", c.name, got, c.want)
		}
	}
}
