// Package mtls loads the certificate files of phxgo's mutually
// authenticated TLS links and builds their tls.Configs:
//
//	binlogd ──gRPC (Paxos, Admin)──▶ binlogd        both ends: node cert + CA
//	binlogd CLI ──gRPC (Admin)─────▶ binlogd
//	sqlproxy ──MySQL hop (SSL)─────▶ master's sqlproxy
//
// One node uses one certificate for both directions, so it carries
// serverAuth and clientAuth; each side accepts only a peer whose
// certificate chains to the cluster's CA (scripts/make-test-ca.sh makes a
// test one). Load checks what an operator gets wrong before any
// connection exists (unreadable file, expired certificate, a key that is
// not the certificate's, a certificate another CA signed) and its errors
// name the file; callers add the config key.
package mtls
