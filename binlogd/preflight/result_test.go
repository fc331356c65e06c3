package preflight

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestReportFormats(t *testing.T) {
	rs := []Result{
		ok("config", "loads"),
		warn("clocksource", "echo tsc > x", "jiffies"),
		fail("perms credentials_file", "chmod 600 /c", "/c has mode 0644"),
	}
	var b bytes.Buffer
	if err := WriteText(&b, rs); err != nil {
		t.Fatal(err)
	}
	const want = "ok config: loads\n" +
		"warn clocksource: jiffies\n  fix: echo tsc > x\n" +
		"FAIL perms credentials_file: /c has mode 0644\n  fix: chmod 600 /c\n" +
		"1 ok, 1 warn, 1 FAIL\n"
	if b.String() != want {
		t.Fatalf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteJSON(&b, rs); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Results        []struct{ Check, Status, Finding, Fix string }
		OK, Warn, Fail int
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Fail != 1 || got.Warn != 1 || got.OK != 1 || got.Results[2].Status != "FAIL" || got.Results[2].Fix != "chmod 600 /c" {
		t.Fatalf("json: %s", b.String())
	}
	for _, c := range []struct {
		rs   []Result
		code int
	}{{nil, 0}, {rs[:1], 0}, {rs[:2], 0}, {rs, 1}} {
		if got := ExitCode(c.rs); got != c.code {
			t.Errorf("ExitCode(%d results) = %d, want %d", len(c.rs), got, c.code)
		}
	}
}
