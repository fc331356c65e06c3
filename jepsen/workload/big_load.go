package workload

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strconv"

	"github.com/go-sql-driver/mysql"
)

// loadLocal loads rows lines "batch,seq,pad" (pad: size bytes of one
// letter per row, as a txn row) into big_rows with one LOAD DATA LOCAL
// INFILE. The file is generated while the driver sends it: a multi-GiB
// load holds one 16 KiB packet on this side.
func loadLocal(ctx context.Context, db *sql.DB, batch, rows int64, size int) error {
	name := "jepsen-big-" + strconv.FormatInt(batch, 10)
	mysql.RegisterReaderHandler(name, func() io.Reader { return newLoadFile(batch, rows, size) })
	defer mysql.DeregisterReaderHandler(name)
	res, err := db.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::"+name+
		"' INTO TABLE big_rows FIELDS TERMINATED BY ',' LINES TERMINATED BY '\\n' (batch, seq, pad)")
	if err != nil {
		return err
	}
	// With LOCAL, a row MariaDB cannot take is a warning, not an error:
	// a short count is a failed load the checker must not count as whole.
	if n, err := res.RowsAffected(); err == nil && n != rows {
		return fmt.Errorf("LOAD DATA LOCAL of batch %d took %d of %d rows", batch, n, rows)
	}
	return nil
}

// loadFile is the generated file: one line at a time, never the whole.
type loadFile struct {
	batch, rows, next int64
	size              int
	buf, line         []byte // line: the rest of the current line, in buf
}

func newLoadFile(batch, rows int64, size int) *loadFile {
	return &loadFile{batch: batch, rows: rows, next: 1, size: size}
}

func (f *loadFile) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n := 0
	for n < len(b) {
		if len(f.line) == 0 {
			if f.next > f.rows {
				break
			}
			f.buf = f.makeLine(f.buf[:0], f.next)
			f.line = f.buf
			f.next++
		}
		c := copy(b[n:], f.line)
		f.line = f.line[c:]
		n += c
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// makeLine builds row seq's line in dst's storage: the same pad a txn
// row of that seq gets (big.go), so reads compare bytes alike.
func (f *loadFile) makeLine(dst []byte, seq int64) []byte {
	dst = strconv.AppendInt(dst, f.batch, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, ',')
	c := byte(97 + seq%26)
	for range f.size {
		dst = append(dst, c)
	}
	return append(dst, '\n')
}
