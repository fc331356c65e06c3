package replserver

import (
	"context"
	"errors"
	"fmt"

	"phxgo/binlogd/binlog"
)

// reseedHint ends the text of a refused position (error 1236): the
// Source's error names the position and the oldest one the log holds;
// this says what to do about it, for the node's own MariaDB and for an
// outside replica alike. A replica copies at most 512 bytes of the text
// into Last_IO_Error, so it is short.
const reseedHint = "; reseed it: an outside replica from a `binlogd backup` (README \"Outside replicas\"), a member's MariaDB with `binlogd reseed`"

// guidedSource adds reseedHint to the position errors of a Source.
type guidedSource struct{ Source }

func (g guidedSource) Open(ctx context.Context, pos binlog.GTIDList) (Cursor, error) {
	c, err := g.Source.Open(ctx, pos)
	if err != nil && (errors.Is(err, ErrPurged) || errors.Is(err, ErrUnknownPosition)) {
		return nil, fmt.Errorf("%w%s", err, reseedHint)
	}
	return c, err
}
