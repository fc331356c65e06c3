package lazyfs

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// The control protocol: one JSON request line per connection on the
// server's unix socket, answered by one JSON response line.
const (
	opStatus     = "status"     // mounted, Stats
	opDrop       = "drop"       // power loss: Dropped
	opCheckpoint = "checkpoint" // everything is durable now
	opUnmount    = "unmount"    // unmount, answer, exit
)

type request struct {
	Op string `json:"op"`
}

type response struct {
	Error      string   `json:"error,omitempty"`
	NotMounted bool     `json:"not_mounted,omitempty"`
	Mounted    bool     `json:"mounted"`
	Stats      Stats    `json:"stats"`
	Dropped    *Dropped `json:"dropped,omitempty"`
}

// readyLine is what the server prints on stdout once it serves the mount
// and listens on its control socket.
const readyLine = "lazyfs ready"

// exitUnsupported is the server's exit code when FUSE is not usable.
const exitUnsupported = 3

// ServeMain is the helper process serving one mount (cmd/jepsen
// lazyfs-serve; Mount starts it): it mounts, prints readyLine, answers
// requests on -control until an unmount request, SIGTERM/SIGINT or (with
// -lifeline) the end of stdin, which is how it learns that the process
// that started it is gone; then it unmounts and exits. It never touches
// the mount itself, so nothing it waits for can wait for it.
func ServeMain(args []string) int {
	fl := flag.NewFlagSet("lazyfs-serve", flag.ContinueOnError)
	mnt := fl.String("mount", "", "mountpoint (an existing directory)")
	back := fl.String("backing", "", "backing directory (an existing directory)")
	control := fl.String("control", "", "unix socket to serve requests on")
	trash := fl.String("trash", "", "trash directory on the backing filesystem (default <backing>.lazyfs-trash)")
	unbuffered := fl.String("unbuffered", "", "comma list of base names durable at once (diagnostic logs)")
	persist := fl.Bool("fsync-persists-name", false, "fsync of a file also makes its name durable (ext4, XFS)")
	lifeline := fl.Bool("lifeline", false, "unmount and exit when stdin ends (the starting process is gone)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)).With("lazyfs", *mnt))
	if *mnt == "" || *back == "" || *control == "" || fl.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "lazyfs-serve: -mount, -backing and -control are required; no arguments")
		return 2
	}
	var err error
	if *mnt, err = filepath.Abs(*mnt); err == nil {
		*back, err = filepath.Abs(*back)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lazyfs-serve:", err)
		return 2
	}
	o := Options{FsyncPersistsName: *persist, TrashDir: *trash}
	if *unbuffered != "" {
		o.Unbuffered = strings.Split(*unbuffered, ",")
	}
	if o.TrashDir == "" {
		o.TrashDir = *back + ".lazyfs-trash"
	}
	if err := serve(*mnt, *back, *control, o, *lifeline); err != nil {
		fmt.Fprintln(os.Stderr, "lazyfs-serve:", err)
		if errors.Is(err, ErrUnsupported) {
			return exitUnsupported
		}
		return 1
	}
	return 0
}

func serve(mnt, back, control string, o Options, lifeline bool) error {
	l, err := mountLocal(mnt, back, o)
	if err != nil {
		return err
	}
	_ = os.Remove(control) // a socket left by a killed server
	ln, err := net.Listen("unix", control)
	if err != nil {
		return errors.Join(err, l.unmount())
	}
	defer os.Remove(control)
	if err := os.Chmod(control, 0o600); err != nil {
		ln.Close()
		return errors.Join(err, l.unmount())
	}
	quit := make(chan string, 4)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() { quit <- (<-sigs).String() }()
	if lifeline {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			quit <- "stdin closed (the process that started the server is gone)"
		}()
	}
	s := &server{l: l, quit: quit}
	go s.accept(ln)
	slog.Info("lazyfs: serving", "backing", back, "control", control, "pid", os.Getpid())
	fmt.Println(readyLine)
	why := <-quit
	ln.Close()
	s.mu.Lock() // a request in flight ends first
	defer s.mu.Unlock()
	err = l.unmount()
	slog.Info("lazyfs: stopped", "why", why, "err", err)
	return err
}

// server answers the control socket; mu serializes the requests.
type server struct {
	l    *local
	quit chan<- string
	mu   sync.Mutex
}

func (s *server) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed
		}
		go s.handle(c)
	}
}

func (s *server) handle(c net.Conn) {
	defer c.Close()
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return
	}
	var req request
	var resp response
	if err := json.Unmarshal(line, &req); err != nil {
		resp.Error = fmt.Sprintf("lazyfs: bad request: %v", err)
	} else {
		resp = s.do(req.Op)
	}
	b, _ := json.Marshal(resp)
	_, _ = c.Write(append(b, '\n'))
	if req.Op == opUnmount {
		s.quit <- "unmount requested"
	}
}

func (s *server) do(op string) response {
	s.mu.Lock()
	defer s.mu.Unlock()
	var resp response
	var err error
	switch op {
	case opStatus:
	case opDrop:
		var d Dropped
		d, err = s.l.drop()
		resp.Dropped = &d
	case opCheckpoint:
		err = s.l.checkpoint()
	case opUnmount:
		err = s.l.unmount()
	default:
		err = fmt.Errorf("lazyfs: unknown request %q", op)
	}
	if err != nil {
		resp.Error = err.Error()
		resp.NotMounted = errors.Is(err, ErrNotMounted)
	}
	resp.Mounted = s.l.mounted()
	if resp.Mounted {
		resp.Stats = s.l.stats()
	}
	return resp
}
