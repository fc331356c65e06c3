package fakebackend

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"phxgo/sqlproxy/wire"
)

// The dialect (case-insensitive; [db.] may qualify a table):
//
//	BEGIN | START TRANSACTION [READ ONLY | READ WRITE | WITH CONSISTENT SNAPSHOT]
//	COMMIT | ROLLBACK [WORK] | ROLLBACK TO … | SAVEPOINT … | RELEASE SAVEPOINT …
//	SET autocommit = 0|1 | SET TRANSACTION … | SET [SESSION|GLOBAL] name = value | SET @@[session.]name = value | SET NAMES x
//	USE db | CREATE DATABASE [IF NOT EXISTS] db | DROP DATABASE [IF EXISTS] db
//	CREATE [TEMPORARY] TABLE [IF NOT EXISTS] t (col …, …) | DROP TABLE [IF EXISTS] t | TRUNCATE [TABLE] t
//	INSERT INTO t VALUES (v, …), … | UPDATE t SET col = v [WHERE col op v] | DELETE FROM t [WHERE col op v]
//	SELECT item, … [FROM t [WHERE col op v] [ORDER BY col] [LIMIT n] [FOR UPDATE | LOCK IN SHARE MODE]]
//	  item: a literal, @@var, CONNECTION_ID(), COUNT(*), *, a column
//	LOCK TABLES … | UNLOCK TABLES | KILL [CONNECTION] n | DO … | FLUSH …
//
// The first column of a table is its primary key. Writes are applied in
// place with an undo log and row locks held until the transaction ends
// (so another connection waits for the row, and reads are dirty: the
// tests never look into a transaction from outside).

// result is what a statement answers: an error, an OK, or rows.
type result struct {
	err      *wire.Error
	cols     []string
	rows     [][]*string
	affected uint64
}

func errf(code uint16, state, format string, args ...any) result {
	return result{err: &wire.Error{Code: code, SQLState: state, Message: fmt.Sprintf(format, args...)}}
}

var (
	errReadOnly = func() result {
		return errf(1290, "HY000", "The MariaDB server is running with the --read-only option so it cannot execute this statement")
	}
	errSyntax = func(sql string) result {
		return errf(1064, "42000", "fakebackend: unsupported statement near %.40q", sql)
	}
)

type table struct {
	cols []string
	rows map[string][]*string // primary key (first column) -> row
	temp bool
}

// undo puts a row back as it was (nil: it did not exist).
type undo struct {
	db, table, key string
	row            []*string
}

// exec runs one statement on c. It may block on a row lock.
func (c *conn) exec(sql string) result {
	toks := lex(sql)
	if len(toks) == 0 {
		return errf(1065, "42000", "Query was empty")
	}
	if n := len(toks); toks[n-1].up == ";" {
		toks = toks[:n-1]
	}
	for _, t := range toks {
		if t.up == ";" && !t.quoted {
			return errf(1064, "42000", "fakebackend: multi-statements are not supported")
		}
	}
	p := &parser{toks: toks}
	switch p.next().up {
	case "BEGIN":
		return c.begin(false)
	case "START":
		if !p.accept("TRANSACTION") {
			return errSyntax(sql)
		}
		return c.begin(p.accept("READ", "ONLY"))
	case "COMMIT":
		c.commit()
		return result{}
	case "ROLLBACK":
		p.accept("WORK")
		if p.accept("TO") {
			return result{} // savepoints are not modelled: the transaction goes on
		}
		c.rollback()
		return result{}
	case "SAVEPOINT", "RELEASE", "DO", "FLUSH", "ANALYZE", "OPTIMIZE":
		return result{}
	case "SET":
		return c.set(p, sql)
	case "USE":
		db := p.next().text
		if !c.srv.hasDB(db) {
			return errf(1049, "42000", "Unknown database '%s'", db)
		}
		c.db = db
		return result{}
	case "CREATE":
		return c.create(p, sql)
	case "DROP":
		return c.drop(p, sql)
	case "TRUNCATE":
		p.accept("TABLE")
		return c.write(func() result {
			db, name := p.name(c.db)
			t, r := c.table(db, name)
			if t == nil {
				return r
			}
			c.implicitCommit()
			c.srv.mu.Lock()
			clear(t.rows)
			c.srv.mu.Unlock()
			return result{}
		})
	case "INSERT", "REPLACE":
		return c.write(func() result { return c.insert(p, sql) })
	case "UPDATE":
		return c.write(func() result { return c.update(p, sql) })
	case "DELETE":
		return c.write(func() result { return c.delete(p, sql) })
	case "SELECT":
		return c.selectStmt(p, sql)
	case "LOCK":
		c.implicitCommit()
		c.locked = true
		return result{}
	case "UNLOCK":
		c.locked = false
		return result{}
	case "KILL":
		p.accept("CONNECTION")
		id, err := strconv.ParseUint(p.next().text, 10, 32)
		if err != nil {
			return errSyntax(sql)
		}
		if uint32(id) == c.id {
			c.kill()
			return errf(1927, "70100", "Connection was killed")
		}
		if !c.srv.Kill(uint32(id)) {
			return errf(1094, "HY000", "Unknown thread id: %d", id)
		}
		return result{}
	}
	return errSyntax(sql)
}

func (c *conn) begin(readOnly bool) result {
	c.commit() // BEGIN commits an open transaction
	c.inTx, c.txReadOnly = true, readOnly
	c.nextTx = ""
	return result{}
}

// startImplicit opens a transaction for a statement on a table when
// autocommit is off (MariaDB's implicit start).
func (c *conn) startImplicit() {
	if c.autocommitOff && !c.inTx {
		c.inTx = true
		c.nextTx = ""
	}
}

// ddl starts a data definition statement: refused under read_only,
// else the open transaction commits first.
func (c *conn) ddl() (result, bool) {
	if c.srv.readOnly() {
		return errReadOnly(), false
	}
	c.implicitCommit()
	return result{}, true
}

// implicitCommit ends an open transaction before DDL or LOCK TABLES.
func (c *conn) implicitCommit() { c.commit() }

func (c *conn) commit() {
	c.inTx, c.txReadOnly = false, false
	c.undos = nil
	c.srv.unlockAll(c.id)
}

func (c *conn) rollback() {
	c.srv.mu.Lock()
	for i := len(c.undos) - 1; i >= 0; i-- {
		u := c.undos[i]
		if t := c.srv.dbs[u.db][u.table]; t != nil {
			if u.row == nil {
				delete(t.rows, u.key)
			} else {
				t.rows[u.key] = u.row
			}
		}
	}
	c.srv.mu.Unlock()
	c.inTx, c.txReadOnly = false, false
	c.undos = nil
	c.srv.unlockAll(c.id)
}

func (c *conn) set(p *parser, sql string) result {
	switch {
	case p.accept("TRANSACTION"):
		if c.inTx {
			return errf(1568, "25001", "Transaction characteristics can't be changed while a transaction is in progress")
		}
		c.nextTx = sql // the next transaction only
		return result{}
	case p.accept("NAMES"):
		c.vars["names"] = p.next().text
		return result{}
	}
	global := p.accept("GLOBAL")
	if !global {
		p.accept("SESSION")
	}
	g, name := varName(p.next().text)
	global = global || g
	if name == "" || p.peek() != "=" && p.peek() != ":" {
		return errSyntax(sql)
	}
	if p.next().up == ":" {
		p.next() // :=
	}
	v := p.next()
	val := v.text
	if !v.quoted {
		switch v.up {
		case "ON", "TRUE":
			val = "1"
		case "OFF", "FALSE":
			val = "0"
		}
	}
	if global {
		c.srv.SetGlobal(name, val)
		return result{}
	}
	if name == "autocommit" {
		on := val == "1"
		if on && c.inTx {
			c.commit() // SET autocommit=1 commits
		}
		c.autocommitOff = !on
		return result{}
	}
	c.vars[name] = val
	return result{}
}

func (c *conn) create(p *parser, sql string) result {
	temp := p.accept("TEMPORARY")
	switch {
	case p.accept("DATABASE") || p.accept("SCHEMA"):
		ifNot := p.accept("IF", "NOT", "EXISTS")
		if r, ok := c.ddl(); !ok {
			return r
		}
		name := p.next().text
		c.srv.mu.Lock()
		defer c.srv.mu.Unlock()
		if _, ok := c.srv.dbs[name]; ok {
			if ifNot {
				return result{}
			}
			return errf(1007, "HY000", "Can't create database '%s'; database exists", name)
		}
		c.srv.dbs[name] = map[string]*table{}
		return result{affected: 1}
	case p.accept("TABLE"):
		ifNot := p.accept("IF", "NOT", "EXISTS")
		db, name := p.name(c.db)
		if p.peek() != "(" {
			return errSyntax(sql)
		}
		if c.srv.readOnly() && !temp {
			return errReadOnly()
		}
		var cols []string
		p.next()
		for depth, first := 1, true; depth > 0 && !p.done(); {
			t := p.next()
			switch {
			case t.up == "(":
				depth++
			case t.up == ")":
				depth--
			case t.up == "," && depth == 1:
				first = true
			case first && depth == 1:
				first = false
				if k := t.up; k != "PRIMARY" && k != "KEY" && k != "UNIQUE" && k != "INDEX" && k != "CONSTRAINT" {
					cols = append(cols, t.text)
				}
			}
		}
		if len(cols) == 0 {
			return errSyntax(sql)
		}
		if !temp {
			c.implicitCommit()
		}
		c.srv.mu.Lock()
		defer c.srv.mu.Unlock()
		tables, ok := c.srv.dbs[db]
		if !ok {
			return errf(1049, "42000", "Unknown database '%s'", db)
		}
		if _, ok := tables[name]; ok {
			if ifNot {
				return result{}
			}
			return errf(1050, "42S01", "Table '%s' already exists", name)
		}
		tables[name] = &table{cols: cols, rows: map[string][]*string{}, temp: temp}
		return result{}
	}
	return errSyntax(sql)
}

func (c *conn) drop(p *parser, sql string) result {
	p.accept("TEMPORARY")
	switch {
	case p.accept("DATABASE") || p.accept("SCHEMA"):
		ifExists := p.accept("IF", "EXISTS")
		if r, ok := c.ddl(); !ok {
			return r
		}
		name := p.next().text
		c.srv.mu.Lock()
		defer c.srv.mu.Unlock()
		if _, ok := c.srv.dbs[name]; !ok && !ifExists {
			return errf(1008, "HY000", "Can't drop database '%s'; database doesn't exist", name)
		}
		delete(c.srv.dbs, name)
		return result{}
	case p.accept("TABLE"):
		ifExists := p.accept("IF", "EXISTS")
		db, name := p.name(c.db)
		if r, ok := c.ddl(); !ok {
			return r
		}
		c.srv.mu.Lock()
		defer c.srv.mu.Unlock()
		if _, ok := c.srv.dbs[db][name]; !ok && !ifExists {
			return errf(1051, "42S02", "Unknown table '%s.%s'", db, name)
		}
		delete(c.srv.dbs[db], name)
		return result{}
	}
	return errSyntax(sql)
}

// write runs a data change: refused under read_only, inside the open
// (or an implicitly started, or a one-statement) transaction.
func (c *conn) write(do func() result) result {
	if c.srv.readOnly() {
		return errReadOnly()
	}
	if c.inTx && c.txReadOnly {
		return errf(1792, "25006", "Cannot execute statement in a READ ONLY transaction")
	}
	c.startImplicit()
	r := do()
	if !c.inTx { // autocommit: the statement is its own transaction
		if r.err != nil {
			c.rollback()
		} else {
			c.commit()
		}
	}
	return r
}

// table finds db.name under the server lock.
func (c *conn) table(db, name string) (*table, result) {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if db == "" {
		return nil, errf(1046, "3D000", "No database selected")
	}
	t := c.srv.dbs[db][name]
	if t == nil {
		return nil, errf(1146, "42S02", "Table '%s.%s' doesn't exist", db, name)
	}
	return t, result{}
}

// change writes row under key (nil: delete), taking the row lock and
// recording the undo.
func (c *conn) change(db, name string, t *table, key string, row []*string) *wire.Error {
	if err := c.srv.lock(c, db+"."+name+"/"+key); err != nil {
		return err
	}
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	c.undos = append(c.undos, undo{db: db, table: name, key: key, row: t.rows[key]})
	if row == nil {
		delete(t.rows, key)
	} else {
		t.rows[key] = row
	}
	return nil
}

func (c *conn) insert(p *parser, sql string) result {
	p.accept("IGNORE")
	p.accept("INTO")
	db, name := p.name(c.db)
	t, r := c.table(db, name)
	if t == nil {
		return r
	}
	if p.peek() == "(" {
		p.skipParens() // a column list: values come in table order anyway
	}
	if !p.accept("VALUES") && !p.accept("VALUE") {
		return errSyntax(sql)
	}
	var n uint64
	for {
		if p.next().up != "(" {
			return errSyntax(sql)
		}
		var row []*string
		for {
			v, ok := p.value()
			if !ok {
				return errSyntax(sql)
			}
			row = append(row, v)
			if s := p.next().up; s == ")" {
				break
			} else if s != "," {
				return errSyntax(sql)
			}
		}
		if len(row) != len(t.cols) || row[0] == nil {
			return errf(1136, "21S01", "Column count doesn't match value count at row %d", n+1)
		}
		c.srv.mu.Lock()
		_, dup := t.rows[*row[0]]
		c.srv.mu.Unlock()
		if dup {
			return errf(1062, "23000", "Duplicate entry '%s' for key 'PRIMARY'", *row[0])
		}
		if err := c.change(db, name, t, *row[0], row); err != nil {
			return result{err: err}
		}
		n++
		if p.peek() != "," {
			break
		}
		p.next()
	}
	return result{affected: n}
}

// tableWhere reads "[db.]table [WHERE …]" and finds the table.
func (c *conn) tableWhere(p *parser) (db, name string, t *table, w cond, r result, ok bool) {
	db, name = p.name(c.db)
	if t, r = c.table(db, name); t == nil {
		return db, name, nil, w, r, false
	}
	w, r, ok = c.where(p, t)
	return db, name, t, w, r, ok
}

// varName splits a variable reference (@@global.x, session.x, x) into
// its scope and lower-case name.
func varName(ref string) (global bool, name string) {
	name = strings.TrimPrefix(strings.ToLower(ref), "@@")
	if strings.HasPrefix(name, "global.") {
		return true, strings.TrimPrefix(name, "global.")
	}
	return false, strings.TrimPrefix(strings.TrimPrefix(name, "session."), "local.")
}

// cond is a WHERE col op value (col -1: every row).
type cond struct {
	col int
	op  string // = < > <= >= !=
	val *string
}

func (w cond) match(row []*string) bool {
	if w.col < 0 {
		return true
	}
	v := row[w.col]
	if v == nil || w.val == nil {
		return false
	}
	c := compareValues(*v, *w.val)
	switch w.op {
	case "=":
		return c == 0
	case "<":
		return c < 0
	case ">":
		return c > 0
	case "<=":
		return c <= 0
	case ">=":
		return c >= 0
	}
	return c != 0
}

// where reads an optional WHERE col op v.
func (c *conn) where(p *parser, t *table) (cond, result, bool) {
	if !p.accept("WHERE") {
		return cond{col: -1}, result{}, true
	}
	name := p.next().text
	col := slices.IndexFunc(t.cols, func(s string) bool { return strings.EqualFold(s, name) })
	if col < 0 {
		return cond{}, errf(1054, "42S22", "Unknown column '%s' in 'where clause'", name), false
	}
	op := p.next().up
	if (op == "<" || op == ">" || op == "!") && p.peek() == "=" {
		op += p.next().up
	}
	if op == "<" && p.peek() == ">" {
		op = "!="
		p.next()
	}
	switch op {
	case "=", "<", ">", "<=", ">=", "!=":
	default:
		return cond{}, errf(1064, "42000", "fakebackend: WHERE supports col op value only"), false
	}
	v, okv := p.value()
	if !okv {
		return cond{}, errf(1064, "42000", "fakebackend: bad WHERE value"), false
	}
	return cond{col: col, op: op, val: v}, result{}, true
}

// matching returns the keys of t's rows that w selects, in key order.
func (c *conn) matching(t *table, w cond) []string {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	var keys []string
	for k, row := range t.rows {
		if w.match(row) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareValues)
	return keys
}

// compareValues orders numbers numerically, anything else as text.
func compareValues(a, b string) int {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 == nil && err2 == nil {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

func (c *conn) update(p *parser, sql string) result {
	db, name := p.name(c.db)
	t, r := c.table(db, name)
	if t == nil {
		return r
	}
	if !p.accept("SET") {
		return errSyntax(sql)
	}
	type assign struct {
		col int
		val *string
	}
	var as []assign
	for {
		cname := p.next().text
		col := slices.IndexFunc(t.cols, func(s string) bool { return strings.EqualFold(s, cname) })
		if col < 0 || p.next().up != "=" {
			return errf(1054, "42S22", "Unknown column '%s' in 'field list'", cname)
		}
		v, ok := p.value()
		if !ok {
			return errSyntax(sql)
		}
		as = append(as, assign{col, v})
		if p.peek() != "," {
			break
		}
		p.next()
	}
	w, r, ok := c.where(p, t)
	if !ok {
		return r
	}
	var n uint64
	for _, k := range c.matching(t, w) {
		c.srv.mu.Lock()
		row := slices.Clone(t.rows[k])
		c.srv.mu.Unlock()
		if row == nil {
			continue
		}
		for _, a := range as {
			row[a.col] = a.val
		}
		if err := c.change(db, name, t, k, row); err != nil {
			return result{err: err}
		}
		n++
	}
	return result{affected: n}
}

func (c *conn) delete(p *parser, sql string) result {
	if !p.accept("FROM") {
		return errSyntax(sql)
	}
	db, name, t, w, r, ok := c.tableWhere(p)
	if !ok {
		return r
	}
	var n uint64
	for _, k := range c.matching(t, w) {
		if err := c.change(db, name, t, k, nil); err != nil {
			return result{err: err}
		}
		n++
	}
	return result{affected: n}
}

// selectStmt answers SELECT: items before FROM, then the optional table.
func (c *conn) selectStmt(p *parser, sql string) result {
	var items [][]token
	var cur []token
	depth := 0
	for !p.done() && !(depth == 0 && (p.peek() == "FROM" || p.peek() == "FOR" || p.peek() == "LOCK")) {
		t := p.next()
		switch {
		case t.up == "(" && !t.quoted:
			depth++
		case t.up == ")" && !t.quoted:
			depth--
		case t.up == "," && !t.quoted && depth == 0:
			items, cur = append(items, cur), nil
			continue
		}
		cur = append(cur, t)
	}
	items = append(items, cur)
	if !p.accept("FROM") {
		if !p.accept("FOR", "UPDATE") && !p.accept("LOCK", "IN", "SHARE", "MODE") && !p.done() {
			return errSyntax(sql)
		}
		row := make([]*string, len(items))
		cols := make([]string, len(items))
		for i, it := range items {
			v, name, err := c.scalar(it)
			if err != nil {
				return result{err: err}
			}
			row[i], cols[i] = v, name
		}
		return result{cols: cols, rows: [][]*string{row}}
	}
	_, _, t, w, r, ok := c.tableWhere(p)
	if !ok {
		return r
	}
	limit := -1
	for !p.done() {
		switch {
		case p.accept("ORDER", "BY"):
			p.next()
			p.accept("ASC")
		case p.accept("LIMIT"):
			limit, _ = strconv.Atoi(p.next().text)
		case p.accept("FOR", "UPDATE"), p.accept("LOCK", "IN", "SHARE", "MODE"), p.accept("FOR", "SHARE"):
		default:
			return errSyntax(sql)
		}
	}
	c.startImplicit()
	keys := c.matching(t, w)
	if limit >= 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	if len(items) == 1 && len(items[0]) == 4 && items[0][0].up == "COUNT" {
		n := strconv.Itoa(len(keys))
		return result{cols: []string{"COUNT(*)"}, rows: [][]*string{{&n}}}
	}
	var idx []int
	var cols []string
	for _, it := range items {
		if len(it) == 1 && it[0].up == "*" {
			for i, cn := range t.cols {
				idx, cols = append(idx, i), append(cols, cn)
			}
			continue
		}
		if len(it) != 1 {
			return errf(1064, "42000", "fakebackend: unsupported select item")
		}
		i := slices.IndexFunc(t.cols, func(s string) bool { return strings.EqualFold(s, it[0].text) })
		if i < 0 {
			return errf(1054, "42S22", "Unknown column '%s' in 'field list'", it[0].text)
		}
		idx, cols = append(idx, i), append(cols, t.cols[i])
	}
	rows := make([][]*string, 0, len(keys))
	for _, k := range keys {
		row := t.rows[k]
		out := make([]*string, len(idx))
		for j, i := range idx {
			out[j] = row[i]
		}
		rows = append(rows, out)
	}
	return result{cols: cols, rows: rows}
}

// scalar evaluates a select item without a table.
func (c *conn) scalar(it []token) (*string, string, *wire.Error) {
	str := func(s string) *string { return &s }
	text := make([]string, len(it))
	for i, t := range it {
		text[i] = t.text
	}
	name := strings.Join(text, "")
	switch {
	case len(it) == 1 && it[0].quoted:
		return str(it[0].text), it[0].text, nil
	case len(it) == 1 && it[0].up != "" && it[0].up[0] >= '0' && it[0].up[0] <= '9':
		return str(it[0].text), name, nil
	case len(it) == 1 && it[0].up == "NULL":
		return nil, "NULL", nil
	case len(it) == 3 && it[0].up == "CONNECTION_ID" && it[1].up == "(" && it[2].up == ")":
		return str(strconv.FormatUint(uint64(c.id), 10)), name, nil
	case len(it) == 1 && strings.HasPrefix(it[0].text, "@@"):
		v, ok := c.variable(it[0].text)
		if !ok {
			return nil, "", &wire.Error{Code: 1193, SQLState: "HY000", Message: "Unknown system variable '" + it[0].text[2:] + "'"}
		}
		return v, name, nil
	}
	return nil, "", &wire.Error{Code: 1064, SQLState: "42000", Message: "fakebackend: unsupported select item " + name}
}

// variable reads @@ref (session first, then global).
func (c *conn) variable(ref string) (*string, bool) {
	global, name := varName(ref)
	str := func(s string) *string { return &s }
	if !global {
		switch name {
		case "autocommit":
			if c.autocommitOff {
				return str("0"), true
			}
			return str("1"), true
		case "in_transaction":
			if c.inTx {
				return str("1"), true
			}
			return str("0"), true
		}
		if v, ok := c.vars[name]; ok {
			return str(v), true
		}
	}
	return c.srv.global(name)
}

// lockWait is how long c waits for a row lock.
func (c *conn) lockWait() time.Duration {
	if v, ok := c.vars["innodb_lock_wait_timeout"]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return time.Duration(n) * time.Second
		}
	}
	return c.srv.LockWait
}
