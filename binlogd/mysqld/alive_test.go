package mysqld

import (
	"os/exec"
	"testing"
	"time"
)

func TestAlive(t *testing.T) {
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = live.Process.Kill(); _ = live.Wait() }()
	if !Alive(live.Process.Pid) {
		t.Fatal("a sleeping process is not alive")
	}
	// Not reaped: a zombie, whose pid still answers kill(0).
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for Alive(zombie.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("an exited (zombie) process still counts as alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = zombie.Wait()
	if Alive(zombie.Process.Pid) {
		t.Fatal("a reaped process counts as alive")
	}
}
