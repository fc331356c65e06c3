package wire

// ReadRow reads a text-protocol answer to a COM_QUERY the caller sent on
// c and returns its first row (nil values are SQL NULL; later rows are
// read and dropped). caps are the capabilities negotiated on c. An ERR
// answer is returned as *Error with a nil error; error is a network or
// protocol failure, after which c must be closed.
func ReadRow(c *Conn, caps uint32) ([]*string, *Error, error) {
	p, err := c.ReadPacket()
	if err != nil {
		return nil, nil, err
	}
	if len(p) == 0 {
		return nil, nil, ErrProtocol
	}
	switch p[0] {
	case HeaderErr:
		return nil, ParseError(p), nil
	case HeaderOK:
		return nil, nil, nil // not a result set
	}
	ncol, _, ok := ReadLenEnc(p)
	if !ok || ncol == 0 || ncol > 4096 {
		return nil, nil, ErrProtocol
	}
	skip := int(ncol)
	if caps&ClientDeprecateEOF == 0 {
		skip++ // the EOF after the column definitions
	}
	for range skip {
		if _, err := c.ReadPacket(); err != nil {
			return nil, nil, err
		}
	}
	var row []*string
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return nil, nil, err
		}
		if len(p) == 0 {
			return nil, nil, ErrProtocol
		}
		if p[0] == HeaderErr {
			return nil, ParseError(p), nil
		}
		if p[0] == HeaderEOF && len(p) < MaxPayload && (caps&ClientDeprecateEOF != 0 || len(p) < 9) {
			return row, nil, nil
		}
		if row != nil {
			continue
		}
		row = make([]*string, 0, ncol)
		for rest := p; len(row) < int(ncol); {
			if len(rest) == 0 {
				return nil, nil, ErrProtocol
			}
			if rest[0] == 0xfb {
				row, rest = append(row, nil), rest[1:]
				continue
			}
			v, n, ok := ReadLenEncString(rest)
			if !ok {
				return nil, nil, ErrProtocol
			}
			s := string(v)
			row, rest = append(row, &s), rest[n:]
		}
	}
}
