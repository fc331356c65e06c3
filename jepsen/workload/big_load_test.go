package workload

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLoadFile: the generated LOAD DATA file holds each row once, in
// order, with the pad a txn row gets, whatever the reader's buffer size.
func TestLoadFile(t *testing.T) {
	var want strings.Builder
	for seq := int64(1); seq <= 50; seq++ {
		fmt.Fprintf(&want, "7,%d,%s\n", seq, strings.Repeat(string(rune(97+seq%26)), 30))
	}
	for _, r := range map[string]io.Reader{
		"whole":    newLoadFile(7, 50, 30),
		"one-byte": iotest.OneByteReader(newLoadFile(7, 50, 30)),
		"odd":      iotest.HalfReader(newLoadFile(7, 50, 30)),
	} {
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Fatalf("file differs:\n%q\nwant\n%q", got[:min(len(got), 200)], want.String()[:200])
		}
	}
	if err := iotest.TestReader(newLoadFile(3, 10, 5), func() []byte {
		b, _ := io.ReadAll(newLoadFile(3, 10, 5))
		return b
	}()); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(newLoadFile(1, 0, 10)); len(b) != 0 {
		t.Fatalf("0 rows: %q", b)
	}
	if n := bytes.Count(must(io.ReadAll(newLoadFile(1, 1000, loadRow))), []byte("\n")); n != 1000 {
		t.Fatalf("%d lines", n)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
