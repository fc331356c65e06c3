package wire

// COM_STMT_EXECUTE layout (MariaDB and MySQL without query attributes):
//
//	0x17, stmt_id<4>, flags<1>, iteration_count<4>,
//	if params > 0: null_bitmap<(params+7)/8>, new_params_bound_flag<1>,
//	               if flag == 1: (type<1>, unsigned_flag<1>) × params,
//	               values…
//
// A client sends the parameter types once (flag 1) and then omits them
// (flag 0) while they do not change: the server remembers them per
// statement. A proxy that re-prepares the statement on another backend
// connection must put them back, or MariaDB answers 1210 "Incorrect
// arguments to mysqld_stmt_execute".

// execHead is the length of the fixed part before the null bitmap.
const execHead = 1 + 4 + 1 + 4

// ExecParams locates the parameter block of a COM_STMT_EXECUTE packet
// for a statement with params parameters. bound is the
// new_params_bound_flag; when it is set, types is the 2×params bytes of
// types (a sub-slice of pkt). ok is false when pkt is too short for what
// its fields announce. A statement without parameters has no flag
// (bound false, ok true).
func ExecParams(pkt []byte, params int) (bound bool, types []byte, ok bool) {
	if len(pkt) < execHead || pkt[0] != ComStmtExecute {
		return false, nil, false
	}
	if params == 0 {
		return false, nil, true
	}
	flagAt := execHead + (params+7)/8
	if len(pkt) <= flagAt {
		return false, nil, false
	}
	switch pkt[flagAt] {
	case 0:
		return false, nil, true
	case 1:
		end := flagAt + 1 + 2*params
		if len(pkt) < end {
			return false, nil, false
		}
		return true, pkt[flagAt+1 : end], true
	}
	return false, nil, false
}

// ExecWithTypes appends to dst a copy of the COM_STMT_EXECUTE packet pkt
// (whose new_params_bound_flag is 0) with the flag set and types (2×params
// bytes, as a client sent them earlier) inserted before the values, and
// returns it. ok is false, and dst is returned unchanged, when pkt is not
// such a packet or types has the wrong length.
func ExecWithTypes(dst, pkt []byte, params int, types []byte) ([]byte, bool) {
	bound, _, ok := ExecParams(pkt, params)
	if !ok || bound || params == 0 || len(types) != 2*params {
		return dst, false
	}
	flagAt := execHead + (params+7)/8
	dst = append(dst, pkt[:flagAt]...)
	dst = append(dst, 1)
	dst = append(dst, types...)
	return append(dst, pkt[flagAt+1:]...), true
}
