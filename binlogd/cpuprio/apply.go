package cpuprio

import (
	"errors"
	"log/slog"
)

// Apply sets this process to nice want (SetNice) and logs the outcome: a
// value it may not lower to is a warning with the fix, and the process
// keeps the value it has.
func Apply(want int, log *slog.Logger) {
	have, err := Nice()
	if err != nil {
		log.Warn("cpu priority unchanged", "err", err)
		return
	}
	if have == want {
		log.Info("cpu priority", "nice", have)
		return
	}
	if err := SetNice(want); err != nil {
		if errors.Is(err, ErrPermission) {
			// Some threads may have changed before the refusal: put
			// them back, which raising always allows.
			_ = SetNice(have)
		}
		log.Warn("binlogd keeps its CPU priority: under CPU overload its MariaDB's threads can starve it and move the Paxos leadership; "+
			"give it CAP_SYS_NICE, start it with this nice value (systemd: Nice=), or set cpu_nice to the value it has",
			"nice", have, "cpu_nice", want, "err", err)
		return
	}
	log.Info("cpu priority", "nice", want, "was", have)
}
