package paxos

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sampleHistory() []byte {
	h := &history{items: []Membership{{Index: 0, Active: 0, Members: []Member{
		{ID: 1, Addr: "127.0.0.1:36011"}, {ID: 2, Addr: "127.0.0.1:36021"}, {ID: 3, Addr: "127.0.0.1:36031"}}}}}
	return h.encode()
}

// The membership file names the voters whose majorities the node counts:
// a flipped byte that still decodes (another address) used to pass.
func TestMembershipFileChecksum(t *testing.T) {
	dir := t.TempDir()
	f := fileMeta{path: filepath.Join(dir, "paxos-membership")}
	want := sampleHistory()
	if err := f.SaveMeta(want); err != nil {
		t.Fatal(err)
	}
	got, err := f.LoadMeta()
	if err != nil || string(got) != string(want) {
		t.Fatalf("load after save: %q %v", got, err)
	}
	if err := CheckMembershipFile(dir); err != nil {
		t.Fatalf("a whole file: %v", err)
	}
	b, _ := os.ReadFile(f.path)
	i := strings.Index(string(b), "36021")
	b[i+4] = '9' // 127.0.0.1:36029: still a valid history
	if _, err := decodeHistory(b[:len(b)-len(metaSumMagic)-4]); err != nil {
		t.Fatalf("the flip should still decode (that is the danger): %v", err)
	}
	if err := os.WriteFile(f.path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.LoadMeta(); !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), f.path) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("a flipped address: %v, want a damage error naming the file", err)
	}
	if err := CheckMembershipFile(dir); err == nil {
		t.Fatal("CheckMembershipFile passed a damaged file")
	}
}

// A file an earlier version wrote (no checksum) is still read, and the
// next save adds the checksum.
func TestMembershipFileWithoutChecksum(t *testing.T) {
	dir := t.TempDir()
	f := fileMeta{path: filepath.Join(dir, "paxos-membership")}
	old := sampleHistory()
	if err := os.WriteFile(f.path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := f.LoadMeta()
	if err != nil || string(got) != string(old) {
		t.Fatalf("an old file: %q %v", got, err)
	}
	if err := f.SaveMeta(got); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f.path)
	if !strings.Contains(string(b), metaSumMagic) {
		t.Fatal("the save did not add the checksum")
	}
	// An old file with a flipped byte that breaks decoding still fails.
	bad := append([]byte(nil), old...)
	bad[0] = 'X'
	if err := os.WriteFile(f.path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.LoadMeta(); err == nil {
		t.Fatal("a damaged old-format file was accepted")
	}
}
