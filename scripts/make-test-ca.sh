#!/usr/bin/env bash
# make-test-ca.sh DIR [NODES] [HOSTS...]
#
# Makes a throwaway certificate authority and one certificate per node for
# phxgo's mTLS links (binlogd <-> binlogd gRPC, sqlproxy -> master's
# sqlproxy). FOR TESTS AND TRIALS ONLY: the CA key sits next to the
# certificates, unencrypted.
#
#   DIR/ca.crt, DIR/ca.key          the CA (EC P-256, 10 years)
#   DIR/nodeN.crt, DIR/nodeN.key    node N (1..NODES, default 3), 1 year,
#                                   serverAuth + clientAuth (each link's two
#                                   ends use the same pair), SANs:
#                                   DNS:localhost, IP:127.0.0.1..127.0.0.9,
#                                   IP:::1, any HOSTS given (IP or name) and
#                                   URI:phxgo://node/N (the identity binlogd
#                                   authorises by)
#   DIR/proxyN.crt, .key            sqlproxy N, URI:phxgo://proxy/N
#   DIR/admin.crt, .key             the operator's CLI, URI:phxgo://admin
#
# `binlogd init` issues the same with Go's crypto (binlogd/mtls.WriteCert);
# this script stays for tests and trials that want openssl's view.
#
# Running it again on the same DIR keeps the CA and reissues the node
# certificates (e.g. with a larger NODES after adding a member).
#
# Every node of one cluster must use certificates from the same CA; a
# second run into another DIR makes an unrelated CA (what the tests use for
# "a certificate signed by another CA").
set -euo pipefail

dir=${1:?usage: make-test-ca.sh DIR [NODES] [HOSTS...]}
nodes=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
mkdir -p "$dir"
umask 077

san="DNS:localhost,IP:::1"
for i in 1 2 3 4 5 6 7 8 9; do san="$san,IP:127.0.0.$i"; done
for h in "$@"; do
	if [[ $h =~ ^[0-9.]+$ || $h == *:* ]]; then san="$san,IP:$h"; else san="$san,DNS:$h"; fi
done

if [[ ! -s $dir/ca.key ]]; then
	openssl ecparam -name prime256v1 -genkey -noout -out "$dir/ca.key"
	openssl req -x509 -new -key "$dir/ca.key" -sha256 -days 3650 \
		-subj "/O=phxgo test/CN=phxgo test CA $(date +%s)-$RANDOM" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out "$dir/ca.crt" 2>/dev/null
fi

# issue BASE URI: BASE.crt/.key with the shared SANs plus the identity URI
# that binlogd authorises by (phxgo://node/N, phxgo://proxy/N, phxgo://admin).
issue() {
	local base=$1 uri=$2
	openssl ecparam -name prime256v1 -genkey -noout -out "$dir/$base.key"
	openssl req -new -key "$dir/$base.key" -subj "/O=phxgo test/CN=$base" -out "$dir/$base.csr" 2>/dev/null
	cat >"$dir/$base.ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$san,URI:$uri
EXT
	openssl x509 -req -in "$dir/$base.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
		-days 365 -sha256 -extfile "$dir/$base.ext" -out "$dir/$base.crt" 2>/dev/null
	rm -f "$dir/$base.csr" "$dir/$base.ext"
}

for ((n = 1; n <= nodes; n++)); do
	issue "node$n" "phxgo://node/$n"
	issue "proxy$n" "phxgo://proxy/$n"
done
issue admin "phxgo://admin"
rm -f "$dir/ca.srl"
chmod 0644 "$dir"/*.crt
echo "test CA, $nodes node and proxy certificates and an admin certificate in $dir"
