// Package lazyfs is a FUSE filesystem for test nodes that loses, on
// command, everything not yet made durable, the way a host losing power
// does (in the spirit of Jepsen's LazyFS). A kill -9 keeps the page cache,
// so it cannot find a program that acknowledges before it fsyncs; a drop
// here can.
//
//	process ── write/rename/... ──▶ /dev/fuse ──▶ lazyfs-serve (helper process, ServeMain)
//	                                                │ 1. record what the change undoes (state)
//	                                                │ 2. apply it to the backing directory
//	                                                ▼
//	                                  backing dir (ext4)    trash dir (same fs)
//
//	harness (Mount, FS) ── control socket: status, drop, checkpoint, unmount ──▶ lazyfs-serve
//	                    ── stdin (lifeline: EOF = the harness is gone) ───────▶
//
// The filesystem is served by a helper process of its own (cmd/jepsen
// lazyfs-serve, or any binary calling ServeMain; Options.Server), never by
// a process that uses the mount or starts the processes that do: served in
// the harness, a stop-the-world GC waited for a thread blocked in a FUSE
// request that only the harness could answer, and the test hung. FS is
// the harness's handle: every method is one request on the server's unix
// socket. A server that dies or does not answer within Options.Timeout is
// killed, its FUSE connection aborted (fusectl) and the mount detached
// (umount2 MNT_DETACH, else fusermount3 -u -z); the call returns
// ErrServerLost instead of hanging. A server whose starter dies (stdin
// ends) unmounts and exits, so a killed test leaves no mount behind.
//
// It is a passthrough (go-fuse's loopback, mounted as root with mount(2),
// no fusermount needed) over a backing directory. Changes reach the
// backing directory at once, so reads are plain reads; what is kept in
// memory is the durable state they overwrote (an undo log, the mirror
// image of a page cache: same semantics, cheaper reads):
//
//   - per file (backing inode): its durable size and the durable content
//     of each 4 KiB page changed since its last fsync, saved before the
//     first change (write, truncate, hole punch);
//   - per directory: its durable listing (name -> inode), taken before its
//     first change since its last fsync; an inode a durable listing names
//     is hard-linked into the trash directory (a directory: moved there)
//     before its last current name goes, so a drop can bring it back.
//
// # Semantics (what is durable)
//
//   - fsync and fdatasync of a file: its data and size, nothing else.
//   - fsync of a directory: its listing (entries created, removed,
//     renamed in or out), not the files' data.
//   - A new file's or directory's entry is durable only after an fsync of
//     its directory (POSIX; Jepsen's LazyFS persists nothing without
//     fsync either). Options.FsyncPersistsName adds the ext4/XFS habit:
//     fsync of a file also makes its current name durable, and its
//     directories' names up to the root (ext4 commits them in the same
//     journal transaction); other names it had before a rename are not
//     dropped from their directories. MariaDB 10.11 needs it: it never
//     fsyncs a directory after creating a .ibd (phxcluster's default).
//   - rename: durable in each of the two directories when that directory
//     is fsynced; if only the target is, a file has both names after a
//     drop, a directory only the new one.
//   - unlink, rmdir: durable after an fsync of the directory.
//   - A fallocate that grows a file: the new size (reading as zeros) is
//     durable at the next fsync of any file or directory on the mount, as
//     ext4 and XFS commit their journal; the data written into it is
//     not. InnoDB creates a tablespace that way and never fsyncs it.
//   - O_DIRECT writes are durable at once (a disk without a volatile
//     cache); only the bytes written. The kernel follows every O_SYNC and
//     O_DSYNC write with an fsync of the file, so those make the whole
//     file durable, as on any filesystem. MariaDB 10.11 opens its data
//     files with O_DIRECT, so its page writes count as durable at once
//     (optimistic: ext4 makes an O_DIRECT write into fallocated space
//     readable after a crash only with its next journal commit). An
//     O_DIRECT set later with fcntl is not seen here: such writes are
//     buffered until fsync.
//   - Attributes other than size (mode, owner, times, xattrs) and data
//     written through a shared mmap before msync are not tracked: they
//     are durable at once (mmap writes reach lazyfs as writes and are
//     tracked like any other).
//   - Options.Unbuffered base names (diagnostic logs) are durable at once
//     and their names are never dropped.
//   - The backing files themselves are never fsynced: a crash of the
//     machine running the test is out of scope; a drop is simulated.
//
// # Power loss
//
// FS.DropUnsynced has the server take the mount down (aborting its FUSE connection via
// fusectl, so copies of the mount in other mount namespaces, which every
// `ip netns exec` makes, let go too), puts the backing directory back to
// exactly its durable state (revert.go: names, then data, then the trash
// is emptied) and mounts a fresh filesystem at the same place: empty
// kernel caches, as after a reboot. Every process using the mount must
// be dead first. FS.Checkpoint makes everything durable (sync(2)), e.g.
// once a cluster is installed.
//
// # Needs
//
// Root and /dev/fuse (Supported says why not). The mount is allow_other
// with default_permissions (MariaDB runs as its own user; the kernel
// checks modes). The kernel caches entries and attributes for an hour
// (coherent: every change goes through the mount, a drop remounts). FUSE
// passthrough is refused for tracked files so every write is seen. Unix sockets work on it (MariaDB's mysqld.sock).
package lazyfs
