package wal

// Split divides u into updates that each fit one Badger transaction, so
// that each can be saved (Save is atomic, and refuses an update larger
// than one transaction with ErrInvalid). Saving the parts in order has
// the effect of saving u, except that it is not atomic: a crash may keep
// a prefix of the parts. Promised rides with the first part, Chosen and
// MarkMembership with the last. Only the last part keeps u.NoSync; the
// others are NoSync, since the last one's sync makes them durable too
// (see Save). An update that fits is returned alone, unchanged.
//
// Why the paxos engine needs it: it merges the updates of every Ready
// waiting to be persisted into one save, and under large commands that
// merge outgrew a transaction (64 KiB commands from 64 clients: 45
// accepts, 7 MiB, against 4.8 MiB with the default memtable), which
// stopped the node. An acceptor answers only once its whole update is
// durable, so losing atomicity across accepts is safe there.
func (l *Log) Split(u Update) []Update {
	var size, count int64
	var parts []Update
	cur := Update{Promised: u.Promised, NoSync: true}
	for _, a := range u.Accepted {
		s := l.entrySize(acceptedKeyLen, recordMin+16+len(a.Value))
		if len(cur.Accepted) > 0 && (size+s+metaReserveSize > l.maxTxnSize || count+1+metaReserveCount > l.maxTxnCount) {
			parts = append(parts, cur)
			cur, size, count = Update{NoSync: true}, 0, 0
		}
		cur.Accepted = append(cur.Accepted, a)
		size += s
		count++
	}
	if len(parts) == 0 {
		return []Update{u}
	}
	cur.Chosen, cur.NoSync, cur.MarkMembership = u.Chosen, u.NoSync, u.MarkMembership
	return append(parts, cur)
}
