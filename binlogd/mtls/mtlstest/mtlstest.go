// Package mtlstest makes certificates for tests with the project's own
// scripts/make-test-ca.sh, so the tests also exercise what operators run,
// and rotates them (Reissue, CopyOver) as operators do.
package mtlstest

import (
	"math/big"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"phxgo/binlogd/mtls"
	"phxgo/internal/testkit"
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

// Load loads f as of now, failing the test on any error.
func Load(t testing.TB, f mtls.Files) *mtls.Material {
	t.Helper()
	m, err := mtls.Load(f, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// OwnCopy copies f into a new directory the test may overwrite (the
// files keep their names).
func OwnCopy(t testing.TB, f mtls.Files) mtls.Files {
	t.Helper()
	dir := t.TempDir()
	out := mtls.Files{Cert: filepath.Join(dir, filepath.Base(f.Cert)), Key: filepath.Join(dir, filepath.Base(f.Key)), CA: filepath.Join(dir, filepath.Base(f.CA))}
	CopyOver(t, f, out)
	return out
}

// CopyOver copies from's certificate, key and CA over to's, as an
// operator moving a node to new material (another CA, say) would.
func CopyOver(t testing.TB, from, to mtls.Files) {
	t.Helper()
	testkit.CopyFile(t, from.Cert, to.Cert)
	testkit.CopyFile(t, from.Key, to.Key)
	testkit.CopyFile(t, from.CA, to.CA)
}

// Reissue issues a new certificate for id (hosts 127.0.0.1 and localhost)
// from the CA in caDir, writes it over files' certificate and key, as a
// rotation does, and returns its serial.
func Reissue(t testing.TB, caDir string, id mtls.Identity, files mtls.Files) *big.Int {
	t.Helper()
	issuer := t.TempDir() // WriteCert refuses to overwrite: issue elsewhere
	for _, f := range []string{mtls.CACertFile, mtls.CAKeyFile} {
		testkit.CopyFile(t, filepath.Join(caDir, f), filepath.Join(issuer, f))
	}
	crt, key, err := mtls.WriteCert(issuer, id, []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CopyFile(t, crt, files.Cert)
	testkit.CopyFile(t, key, files.Key)
	return Load(t, files).Leaf.SerialNumber
}
