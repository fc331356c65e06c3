package history

import "fmt"

// Outcome of an operation; see the package doc.
type Outcome string

// Outcomes.
const (
	OK   Outcome = "ok"
	Fail Outcome = "fail"
	Info Outcome = "info"
)

// NemesisProcess is the Process of fault-window records.
const NemesisProcess = -1

// Operation names (Op.F).
const (
	FRead     = "read"     // register read (Key), bank read, set read
	FWrite    = "write"    // register write Arg[0] to Key
	FCAS      = "cas"      // register compare-and-set Key from Arg[0] to Arg[1]
	FTransfer = "transfer" // bank: Arg = [from, to, amount]
	FAdd      = "add"      // set: add Arg[0]
	FTxn      = "txn"      // append: Txn micro-operations
	FNemesis  = "nemesis"  // a fault window, Note describes it
)

// Micro-operation kinds of an append transaction.
const (
	MAppend = "append"
	MRead   = "r"
)

// Micro is one step of an append transaction (Elle's list-append shape):
// ["append", k, v] or ["r", k, list].
type Micro struct {
	F     string  `json:"f"`
	Key   int64   `json:"key"`
	Value int64   `json:"value,omitempty"` // append: the appended element
	List  []int64 `json:"list,omitempty"`  // read: the list seen (ok txns only)
}

// Op is one client operation, or one nemesis fault window.
type Op struct {
	Index   int    `json:"index"`
	Process int    `json:"process"`
	F       string `json:"f"`
	Key     int64  `json:"key,omitempty"`
	// Arg holds the inputs: write [v], cas [old, new], transfer
	// [from, to, amount], add [v].
	Arg []int64 `json:"arg,omitempty"`
	// Result holds what an ok read returned: register [] (no row) or [v];
	// bank the balances by account; set the elements. A register CAS
	// that ran but matched no row is fail with Result [0] (matched rows).
	Result []int64 `json:"result,omitempty"`
	Txn    []Micro `json:"txn,omitempty"`
	// Final marks the reads taken after every fault was healed.
	Final    bool    `json:"final,omitempty"`
	Outcome  Outcome `json:"outcome"`
	Error    string  `json:"error,omitempty"`
	Note     string  `json:"note,omitempty"`
	Invoke   int64   `json:"invoke"`
	Complete int64   `json:"complete"`
}

// IsClient reports whether o is a client operation (not a fault window).
func (o Op) IsClient() bool { return o.Process != NemesisProcess }

func (o Op) String() string {
	s := fmt.Sprintf("#%d p%d %s", o.Index, o.Process, o.F)
	if o.F == FTxn {
		s += fmt.Sprintf(" %v", o.Txn)
	} else {
		if o.F != FTransfer && o.F != FAdd {
			s += fmt.Sprintf(" k=%d", o.Key)
		}
		if len(o.Arg) > 0 {
			s += fmt.Sprintf(" %v", o.Arg)
		}
		if o.Outcome == OK && len(o.Result) > 0 {
			s += fmt.Sprintf(" -> %v", o.Result)
		}
	}
	s += " " + string(o.Outcome)
	if o.Error != "" {
		s += " (" + o.Error + ")"
	}
	return s
}
