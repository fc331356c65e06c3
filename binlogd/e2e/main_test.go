package e2e

import (
	"fmt"
	"os"
	"testing"

	"phxgo/binlogd/localcluster"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "phxgo-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := localcluster.BuildBinaries(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
