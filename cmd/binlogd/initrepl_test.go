package main

import (
	"path/filepath"
	"testing"

	"phxgo/binlogd/config"
)

// TestInitReplAccount: init generates the outside replicas' account with
// the others, adds one to an operator's credentials file that has none,
// and keeps one the file names.
func TestInitReplAccount(t *testing.T) {
	cr, err := initCredentials("")
	if err != nil || cr.ReplUser != config.DefaultReplUser || len(cr.ReplPassword) < 24 || cr.ReplPassword == cr.CapturePassword {
		t.Fatalf("generated: %+v %v", cr, err)
	}
	p := filepath.Join(t.TempDir(), "cred.json")
	mine := config.Credentials{CaptureUser: "cap", CapturePassword: "c-pw-long-enough", AppUser: "app", AppPassword: "a-pw-long-enough",
		ProxyUser: "phxgo_proxy", ProxyPassword: "p-pw-long-enough"}
	if err := config.SaveCredentials(p, mine); err != nil {
		t.Fatal(err)
	}
	if cr, err := initCredentials(p); err != nil || cr.ReplUser != config.DefaultReplUser || cr.ReplPassword == "" || cr.AppPassword != mine.AppPassword {
		t.Fatalf("operator's file without repl_user: %+v %v", cr, err)
	}
	mine.ReplUser, mine.ReplPassword = "dr_copy", "r-pw-long-enough"
	if err := config.SaveCredentials(p, mine); err != nil {
		t.Fatal(err)
	}
	if cr, err := initCredentials(p); err != nil || cr.ReplUser != "dr_copy" || cr.ReplPassword != "r-pw-long-enough" {
		t.Fatalf("operator's repl_user: %+v %v", cr, err)
	}
}
