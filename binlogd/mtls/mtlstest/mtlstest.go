// Package mtlstest makes certificates for tests with the project's own
// scripts/make-test-ca.sh, so the tests also exercise what operators run.
package mtlstest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"phxgo/binlogd/mtls"
)

// Script is the path of scripts/make-test-ca.sh in this checkout.
func Script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "make-test-ca.sh")
}

// MakeCA runs the script into a new temp directory: a CA and nodes
// certificates. Each call makes an unrelated CA.
func MakeCA(t testing.TB, nodes int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("bash", Script(), dir, strconv.Itoa(nodes)).CombinedOutput()
	if err != nil {
		t.Fatalf("make-test-ca.sh: %v\n%s", err, out)
	}
	return dir
}

// Files are node id's files in a MakeCA directory.
func Files(dir string, id int) mtls.Files {
	n := "node" + strconv.Itoa(id)
	return mtls.Files{Cert: filepath.Join(dir, n+".crt"), Key: filepath.Join(dir, n+".key"), CA: filepath.Join(dir, "ca.crt")}
}
