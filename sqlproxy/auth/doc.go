// Package auth lets the proxy authenticate clients as MariaDB does and
// log in to backends as the same user, without storing any password.
//
// mysql_native_password stores stored = SHA1(SHA1(pw)) in mysql.user. A
// client answers a 20-byte salt with token = SHA1(pw) XOR SHA1(salt+stored).
// Knowing stored (read through an admin account), the proxy computes
// SHA1(salt+stored) XOR token = SHA1(pw) and accepts iff SHA1 of that equals
// stored. SHA1(pw) is exactly what is needed to answer any other native
// challenge, so the proxy logs in to the backend (MariaDB or the master's
// proxy) as the client's own user: privileges stay MariaDB's to enforce,
// and MariaDB, not the proxy, is the last word on the login.
//
// SHA1(pw) lives only in the memory of the session that recovered it.
//
// Which account: a user may have several rows ('bob'@'10.0.%',
// 'bob'@'%'); the one whose Host matches the client's real address, most
// specific first, is the account, exactly as MariaDB picks it (host.go).
// A user without a row for the client is denied. The proxy resolves no
// names (phxgo's MariaDB runs skip-name-resolve); 'localhost' matches a
// loopback client. Account.SameLocally tells the proxy whether a login by
// MariaDB's unix socket (user@localhost) would be the same account, and
// Account.ByAddr whether the row matches the client's address itself (as
// MariaDB judges a TCP login; a loopback address does not match
// 'localhost' there), which decides what sqlproxy's PROXY header names.
//
// Refused: accounts with other plugins (ed25519, unix_socket, ...), an
// invalid hash ('invalid'), no password at all, and roles. The cache of
// looked-up users is bounded (Config.MaxEntries), so strangers trying
// names cannot grow it.
package auth
