package wire

import (
	"bytes"
	"testing"
)

// execPkt builds a COM_STMT_EXECUTE for stmt 7 with the given null
// bitmap, types (nil: flag 0) and values.
func execPkt(params int, types, values []byte) []byte {
	p := []byte{ComStmtExecute, 7, 0, 0, 0, 0, 1, 0, 0, 0}
	if params == 0 {
		return p
	}
	p = append(p, make([]byte, (params+7)/8)...)
	if types == nil {
		p = append(p, 0)
	} else {
		p = append(p, 1)
		p = append(p, types...)
	}
	return append(p, values...)
}

func TestExecWithTypes(t *testing.T) {
	types := []byte{0x08, 0x00, 0xfe, 0x00} // LONGLONG, STRING
	values := []byte{42, 0, 0, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c'}
	got, ok := ExecWithTypes(nil, execPkt(2, nil, values), 2, types)
	if !ok {
		t.Fatal("rewrite refused a flag-0 packet")
	}
	if want := execPkt(2, types, values); !bytes.Equal(got, want) {
		t.Fatalf("rewrite:\n got %x\nwant %x", got, want)
	}
	bound, tp, ok := ExecParams(got, 2)
	if !ok || !bound || !bytes.Equal(tp, types) {
		t.Fatalf("ExecParams(rewritten) = %v %x %v", bound, tp, ok)
	}
	if _, ok := ExecWithTypes(nil, got, 2, types); ok {
		t.Fatal("rewrite accepted a packet that already has types")
	}
	if _, ok := ExecWithTypes(nil, execPkt(2, nil, values), 2, types[:2]); ok {
		t.Fatal("rewrite accepted types of the wrong length")
	}
	if bound, _, ok := ExecParams(execPkt(0, nil, nil), 0); bound || !ok {
		t.Fatal("a statement without parameters has no flag")
	}
	if _, _, ok := ExecParams(execPkt(9, nil, nil)[:11], 9); ok {
		t.Fatal("truncated null bitmap accepted")
	}
}

// FuzzExecRewrite checks ExecParams and ExecWithTypes on arbitrary
// packets: no panic; a rewritten packet has the flag set, exactly the
// inserted types, and otherwise the original bytes (head, null bitmap,
// values) in order; and nothing is rewritten that ExecParams would not
// accept as a flag-0 packet.
func FuzzExecRewrite(f *testing.F) {
	f.Add(execPkt(2, nil, []byte{1, 2, 3}), uint8(2), []byte{8, 0, 0xfe, 0})
	f.Add(execPkt(1, []byte{3, 0}, []byte{1, 0, 0, 0}), uint8(1), []byte{3, 0})
	f.Add(execPkt(9, nil, nil), uint8(9), bytes.Repeat([]byte{0xfd, 0}, 9))
	f.Add(execPkt(0, nil, nil), uint8(0), []byte{})
	f.Add([]byte{ComStmtExecute, 1}, uint8(1), []byte{1, 0})
	f.Fuzz(func(t *testing.T, pkt []byte, n uint8, types []byte) {
		params := int(n)
		bound, tp, ok := ExecParams(pkt, params)
		if bound && len(tp) != 2*params {
			t.Fatalf("bound with %d type bytes for %d params", len(tp), params)
		}
		prefix := []byte("keep")
		out, rewritten := ExecWithTypes(append([]byte(nil), prefix...), pkt, params, types)
		if !bytes.HasPrefix(out, prefix) {
			t.Fatal("dst prefix lost")
		}
		if !rewritten {
			if len(out) != len(prefix) {
				t.Fatal("refused rewrite still appended")
			}
			return
		}
		if !ok || bound || params == 0 || len(types) != 2*params {
			t.Fatalf("rewrote a packet it should refuse (ok=%v bound=%v params=%d types=%d)", ok, bound, params, len(types))
		}
		out = out[len(prefix):]
		if len(out) != len(pkt)+2*params {
			t.Fatalf("length %d, want %d", len(out), len(pkt)+2*params)
		}
		b2, tp2, ok2 := ExecParams(out, params)
		if !ok2 || !b2 || !bytes.Equal(tp2, types) {
			t.Fatalf("rewritten packet does not carry the types: %v %v %x", ok2, b2, tp2)
		}
		flagAt := execHead + (params+7)/8
		if !bytes.Equal(out[:flagAt], pkt[:flagAt]) || !bytes.Equal(out[flagAt+1+2*params:], pkt[flagAt+1:]) {
			t.Fatal("head, null bitmap or values changed")
		}
	})
}
